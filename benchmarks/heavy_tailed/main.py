"""Benchmark: private heavy-tailed linear and logistic regression (issue 3).

Runs skdp's ``HeavyTailedLinearRegression`` / ``HeavyTailedLogisticRegression``
and the baselines in one process on the same data and writes
``benchmarks/results/heavy_tailed.md`` plus PNG plots.

Data
----
- Synthetic linear model: ``d = 20`` i.i.d. Student-t(5) features scaled to
  unit variance (so the 2k-th moments the squared loss needs exist for
  k < 2.5), known ``w*`` (``N(0, 1/d)`` entries, fixed seed) and intercept 1;
  noise ``0.5 * [(exp(Z) - e^{1/2}) + T_{2.1}]``: a centred log-normal
  (skewed) plus a Student-t with 2.1 degrees of freedom (heavy-tailed).
  Excess risk in closed form: ``||w - w*||^2 + (b - b*)^2`` (the second
  moment matrix of ``(a, 1)`` is the identity).
- Synthetic logistic model: same features, ``P(y = 1 | a) = sigmoid(a.w* + b*)``
  with ``||w*|| ~ 2`` and ``b* = -0.5``. Excess logistic risk on a fresh
  sample of 200,000 feature vectors, using the exact conditional label
  probabilities (no label noise in the estimate).
- ``load_diabetes`` (regression) and Adult (``../shared/datasets/adult``,
  classification), preprocessed with public constants only.

Baselines (same process, same data, same delta = n^-1.1)
--------------------------------------------------------
- Full-batch DP-GD with per-sample clipping at fixed C in {0.1, 1, 10}, 100
  steps, noise calibrated by skdp's accountant (``calibrate_gaussian``); the
  step size of each C is tuned on an independent synthetic replicate from
  {0.1, 0.3, 1, 3, 10} (a public choice; n = 10^6 reuses n = 10^5's).
- Non-private scikit-learn ``LinearRegression`` / ``LogisticRegression``.

Usage: ``python -m benchmarks.heavy_tailed.main [--quick]`` from the repository root.
"""

import argparse
import json
import math
import time
from pathlib import Path

import numpy as np
from scipy.special import expit
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression, LogisticRegression

from benchmarks._common import RESULTS, adult_dir  # noqa: E402
from skdp import HeavyTailedLinearRegression, HeavyTailedLogisticRegression  # noqa: E402
from skdp._testing.internals import (  # noqa: E402
    STEP_DECAY,
    clipped_gradient_sum,
    make_onepass_plan,
    onepass_clipped_dp_sgd,
)
from skdp.losses import LogisticLoss, SquaredLoss  # noqa: E402
from skdp.privacy import calibrate_gaussian, gaussian_noise, gdp_mu  # noqa: E402
from skdp.utils import safe_row_norms  # noqa: E402

ADULT = Path(adult_dir())
D = 20
CLIPS = (0.1, 1.0, 10.0)
LRS = (0.1, 0.3, 1.0, 3.0, 10.0)
GD_STEPS = 100
SOLVERS = ("known_lipschitz", "onepass", "localized")
DEFAULT = "known_lipschitz"


# -- data -----------------------------------------------------------------------
def features(n, rng):
    return rng.standard_t(5, size=(n, D)) * math.sqrt(3 / 5)


W_LIN = np.random.default_rng(123).normal(size=D) / math.sqrt(D)
B_LIN = 1.0
W_LOG = np.random.default_rng(321).normal(size=D) / math.sqrt(D) * 2.0
B_LOG = -0.5


def linear_data(n, rng):
    X = features(n, rng)
    noise = (np.exp(rng.normal(size=n)) - math.exp(0.5)) + rng.standard_t(2.1, size=n)
    return X, X @ W_LIN + B_LIN + 0.5 * noise


def logistic_data(n, rng):
    X = features(n, rng)
    y = (rng.random(n) < expit(X @ W_LOG + B_LOG)).astype(int)
    return X, y


FRESH = features(200_000, np.random.default_rng(99))
P_FRESH = expit(FRESH @ W_LOG + B_LOG)


def _logistic_risk(coef, intercept):
    z = FRESH @ coef + intercept
    return float(
        np.mean(P_FRESH * np.logaddexp(0, -z) + (1 - P_FRESH) * np.logaddexp(0, z))
    )


RISK_STAR = _logistic_risk(W_LOG, B_LOG)
# true k = 4 moment of the logistic per-row Lipschitz constant ||(a, 1)||
G4_LOG = float(np.mean((np.sum(FRESH**2, axis=1) + 1.0) ** 2) ** 0.25)


def excess(model_kind, coef, intercept):
    coef = np.ravel(coef)
    intercept = float(np.ravel([intercept])[0])
    if model_kind == "linear":
        return float(np.sum((coef - W_LIN) ** 2) + (intercept - B_LIN) ** 2)
    return _logistic_risk(coef, intercept) - RISK_STAR


# -- baseline: full-batch DP-GD at a fixed clip -----------------------------------
def dp_gd(X, y, loss, clip, lr, epsilon, delta, rng, steps=GD_STEPS, unit=1.0):
    """Full-batch DP-GD, per-sample clipping at ``clip``, intercept column ``unit``."""
    Xa = np.ascontiguousarray(np.hstack([X, np.full((len(X), 1), unit)]))
    n, d = Xa.shape
    z = calibrate_gaussian(epsilon, delta, steps)
    inv = 1.0 / safe_row_norms(Xa)
    w = np.zeros(d)
    for _ in range(steps):
        s = clipped_gradient_sum(Xa, y, w, inv, clip, loss)
        w = w - lr * (s + gaussian_noise(rng, 2 * clip * z, d)) / n
    return w[:-1], w[-1] * unit


def tune_lr(kind, n, epsilon, clip, seed):
    """Step size of DP-GD at ``clip`` chosen on an independent replicate."""
    rng = np.random.default_rng(10_000 + seed)
    X, y = (linear_data if kind == "linear" else logistic_data)(n, rng)
    loss, y = (
        (SquaredLoss(), y) if kind == "linear" else (LogisticLoss(), 2.0 * y - 1.0)
    )
    best = None
    for lr in LRS:
        risks = [
            excess(
                kind,
                *dp_gd(
                    X, y, loss, clip, lr, epsilon, n**-1.1, np.random.default_rng(s)
                ),
            )
            for s in range(2)
        ]
        r = float(np.mean(risks))
        if best is None or r < best[0]:
            best = (r, lr)
    return best[1]


# -- synthetic experiment -----------------------------------------------------------
def synthetic(kind, ns, epsilons, reps, log):
    Est = (
        HeavyTailedLinearRegression
        if kind == "linear"
        else HeavyTailedLogisticRegression
    )
    make = linear_data if kind == "linear" else logistic_data
    loss = SquaredLoss() if kind == "linear" else LogisticLoss()
    rows = []  # dicts: n, eps, method, risks
    lrs = {}
    for n in ns:
        tune_n = min(n, 100_000)
        for eps in epsilons:
            for C in CLIPS:
                key = (tune_n, eps, C)
                if key not in lrs:
                    lrs[key] = tune_lr(
                        kind, tune_n, eps, C, seed=int(math.log10(tune_n))
                    )
        for rep in range(reps[n]):
            rng = np.random.default_rng(1000 * rep + int(math.log10(n)))
            X, y = make(n, rng)
            ys = y if kind == "linear" else 2.0 * y - 1.0
            t0 = time.perf_counter()
            sk = (LinearRegression() if kind == "linear" else LogisticRegression()).fit(
                X, y
            )
            rows.append(
                dict(
                    n=n,
                    eps=np.inf,
                    method="sklearn (non-private)",
                    risk=excess(kind, sk.coef_, sk.intercept_),
                    time=time.perf_counter() - t0,
                )
            )
            for eps in epsilons:
                delta = n**-1.1
                solvers = SOLVERS if eps == 1.0 else (DEFAULT,)
                for solver in solvers:
                    t0 = time.perf_counter()
                    m = Est(solver=solver, epsilon=eps, random_state=rep).fit(X, y)
                    rows.append(
                        dict(
                            n=n,
                            eps=eps,
                            method=f"skdp {solver}",
                            risk=excess(kind, m.coef_, m.intercept_),
                            time=time.perf_counter() - t0,
                        )
                    )
                if eps == 1.0 and n <= 100_000:
                    # Algorithm 8 with the paper's schedule (step / 16 per
                    # phase, uniform averages), same private clip levels
                    Xa = np.hstack([X, np.ones((n, 1))])
                    plan = make_onepass_plan(
                        gdp_mu(eps, delta),
                        n,
                        D + 1,
                        n_scales=2 if kind == "linear" else 1,
                    )
                    curv = loss.curvature_bound
                    res = onepass_clipped_dp_sgd(
                        Xa,
                        ys,
                        loss,
                        plan,
                        np.random.default_rng(rep),
                        step_size=min(0.5, 0.06 / math.sqrt(n)) / curv * 16,
                        step_decay=STEP_DECAY,
                        tail_average=0.0,
                    )
                    rows.append(
                        dict(
                            n=n,
                            eps=eps,
                            method="onepass, paper schedule",
                            risk=excess(kind, res.coef[:-1], res.coef[-1]),
                            time=np.nan,
                        )
                    )
                    if kind == "linear":
                        m = HeavyTailedLinearRegression(
                            loss="huber", epsilon=eps, random_state=rep
                        ).fit(X, y)
                        rows.append(
                            dict(
                                n=n,
                                eps=eps,
                                method="skdp known_lipschitz, Huber",
                                risk=excess(kind, m.coef_, m.intercept_),
                                time=np.nan,
                            )
                        )
                    else:
                        # the paper's worst-case clip (Theorem 2) with the true G_4
                        m = Est(epsilon=eps, G_k=G4_LOG, k=4, random_state=rep).fit(
                            X, y
                        )
                        rows.append(
                            dict(
                                n=n,
                                eps=eps,
                                method="known_lipschitz, paper C (true G_4)",
                                risk=excess(kind, m.coef_, m.intercept_),
                                time=np.nan,
                                clip=m.truncation_threshold_,
                            )
                        )
                for C in CLIPS:
                    lr = lrs[(min(n, 100_000), eps, C)]
                    t0 = time.perf_counter()
                    coef, b = dp_gd(
                        X, ys, loss, C, lr, eps, delta, np.random.default_rng(50 + rep)
                    )
                    rows.append(
                        dict(
                            n=n,
                            eps=eps,
                            method=f"DP-GD C={C:g}",
                            risk=excess(kind, coef, b),
                            lr=lr,
                            time=time.perf_counter() - t0,
                        )
                    )
            log(f"{kind} n={n} rep={rep} done")
    return rows, lrs


def summarize(rows):
    out = {}
    for r in rows:
        out.setdefault((r["n"], r["eps"], r["method"]), []).append(r["risk"])
    return {k: float(np.mean(v)) for k, v in out.items()}


def timing(kind, n, log):
    """Fit time at n, d = 20: best of 2 runs each, same data, same process."""
    X, y = (linear_data if kind == "linear" else logistic_data)(
        n, np.random.default_rng(7)
    )
    Est = (
        HeavyTailedLinearRegression
        if kind == "linear"
        else HeavyTailedLogisticRegression
    )
    Sk = LinearRegression if kind == "linear" else LogisticRegression
    Est(random_state=0).fit(
        X[:1000], y[:1000]
    )  # warm up numba outside the timed region
    times = {}
    for name, make in [("sklearn", Sk), ("skdp default", lambda: Est(random_state=0))]:
        best = np.inf
        for _ in range(2):
            t0 = time.perf_counter()
            make().fit(X, y)
            best = min(best, time.perf_counter() - t0)
        times[name] = best
    log(f"timing {kind}: {times}")
    return times


# -- scale robustness ------------------------------------------------------------------
#: (feature scale a, target scale c): the fit sees (a X, c y). Linear: both;
#: logistic: labels have no scale. (4, 4) are the units of the gallery example.
SCALE_CASES = {
    "linear": [(1, 1), (0.01, 1), (4, 4), (100, 1), (1, 100), (0.01, 0.01), (100, 100)],
    "logistic": [(1, 1), (0.01, 1), (4, 1), (100, 1)],
}
SCALE_EPS = (0.5, 1.0, 5.0)
#: Units a single feature scale cannot fix: (name, column scales, offset,
#: center). ``center=True`` releases a private mean (5% of the budget) of
#: rows clipped to the public norm bound ``2 ||col|| sqrt(1 + offset**2)``
#: (twice the typical row norm under the generating model).
STRESS_CASES = [
    ("offset 3 sd", np.ones(D), 3.0, False),
    ("offset 3 sd, x100", np.full(D, 100.0), 3.0, False),
    ("offset 3 sd, center=True", np.ones(D), 3.0, True),
    ("offset 3 sd, x100, center=True", np.full(D, 100.0), 3.0, True),
    ("columns x 1..10", np.logspace(0, 1, D), 0.0, False),
    ("columns x 0.01..100", np.logspace(-2, 2, D), 0.0, False),
]


def _rescaled_excess(kind, coef, intercept, a, c):
    """Excess risk of a model fitted on (a X, c y), in standardized units.

    The model ``(coef, b)`` on ``(a X, c y)`` is ``(coef a / c, b / c)`` on
    ``(X, y)``; its excess risk there is the original one divided by ``c**2``
    (linear), unchanged (logistic).
    """
    coef = np.ravel(coef) * a / c
    intercept = float(np.ravel([intercept])[0]) / c
    return excess(kind, coef, intercept)


def scale_robustness(ns, reps, lrs, log):
    """Default estimator on the same data in other units (relative excess risk).

    Also full-batch DP-GD at fixed clips on the rescaled data, with the step
    tuned on standardized data divided by ``a**2`` and the intercept column
    ``a`` (an oracle that knows the scale, generous to the baseline: only
    the clip is left fixed), and stress cases that a single scale does not
    fix (features with a common offset, columns in very different units).
    """
    out = {}
    for kind in ("linear", "logistic"):
        Est = (
            HeavyTailedLinearRegression
            if kind == "linear"
            else HeavyTailedLogisticRegression
        )
        make = linear_data if kind == "linear" else logistic_data
        loss = SquaredLoss() if kind == "linear" else LogisticLoss()
        for n in ns:
            for rep in range(reps):
                rng = np.random.default_rng(777 + 1000 * rep + int(math.log10(n)))
                X, y = make(n, rng)
                ys = y if kind == "linear" else 2.0 * y - 1.0
                for eps in SCALE_EPS:
                    for a, c in SCALE_CASES[kind]:
                        yc = c * y if kind == "linear" else y
                        m = Est(epsilon=eps, random_state=rep).fit(a * X, yc)
                        r = _rescaled_excess(kind, m.coef_, m.intercept_, a, c)
                        out.setdefault((kind, n, eps, a, c, "skdp default"), []).append(
                            r
                        )
                        if n != 10_000 or eps != 1.0:
                            continue
                        for C in CLIPS:
                            coef, b = dp_gd(
                                a * X,
                                c * ys if kind == "linear" else ys,
                                loss,
                                C,
                                lrs[kind][(n, eps, C)] / a**2,
                                eps,
                                n**-1.1,
                                np.random.default_rng(50 + rep),
                                unit=a,
                            )
                            out.setdefault(
                                (kind, n, eps, a, c, f"DP-GD C={C:g}"), []
                            ).append(_rescaled_excess(kind, coef, b, a, c))
                    if eps != 1.0 or n != 10_000:
                        continue
                    # stress cases: the model on (X + off) * col maps back
                    # to (coef * col, b + coef @ (col * off)) on X
                    for name, col, off, center in STRESS_CASES:
                        kw = {}
                        if center:
                            norm = 2.0 * np.linalg.norm(col) * math.sqrt(1 + off**2)
                            kw = dict(center=True, feature_norm=float(norm))
                        m = Est(epsilon=1.0, random_state=rep, **kw).fit(
                            (X + off) * col, y
                        )
                        coef = np.ravel(m.coef_)
                        b = float(np.ravel([m.intercept_])[0]) + float(
                            coef @ (col * off)
                        )
                        out.setdefault((kind, n, 1.0, name, "stress"), []).append(
                            excess(kind, coef * col, b)
                        )
                log(f"scales {kind} n={n} rep={rep} done")
    return {k: float(np.mean(v)) for k, v in out.items()}


def null_excess(kind):
    """Excess risk of the best constant model (no features)."""
    if kind == "linear":
        return float(np.sum(W_LIN**2))  # intercept exact, Sigma = I
    p = float(np.mean(P_FRESH))
    return _logistic_risk(np.zeros(D), math.log(p / (1 - p)))


# -- real data ----------------------------------------------------------------------
def diabetes(epsilons, reps):
    # load_diabetes(scaled=True) columns have norm 1 (scaling by the data
    # provider); times sqrt(442) gives unit variance. Target / 100 (a public
    # constant; the target ranges over 25-346), MSE reported in original units.
    data = load_diabetes()
    X = data.data * math.sqrt(len(data.data))
    y = data.target / 100.0
    out = {}
    for rep in range(reps):
        rng = np.random.default_rng(rep)
        perm = rng.permutation(len(y))
        tr, te = perm[:354], perm[354:]
        n = len(tr)

        def mse(coef, b, te=te):
            return float(np.mean((X[te] @ np.ravel(coef) + b - y[te]) ** 2) * 1e4)

        sk = LinearRegression().fit(X[tr], y[tr])
        out.setdefault((np.inf, "sklearn (non-private)"), []).append(
            mse(sk.coef_, sk.intercept_)
        )
        out.setdefault((np.inf, "predict mean (non-private)"), []).append(
            float(np.mean((y[te] - y[tr].mean()) ** 2) * 1e4)
        )
        for eps in epsilons:
            m = HeavyTailedLinearRegression(epsilon=eps, random_state=rep).fit(
                X[tr], y[tr]
            )
            out.setdefault((eps, "skdp default"), []).append(mse(m.coef_, m.intercept_))
            for C in CLIPS:
                coef, b = dp_gd(
                    X[tr],
                    y[tr],
                    SquaredLoss(),
                    C,
                    0.3,
                    eps,
                    n**-1.1,
                    np.random.default_rng(rep),
                )
                out.setdefault((eps, f"DP-GD C={C:g}"), []).append(mse(coef, b))
    return {k: float(np.mean(v)) for k, v in out.items()}


ADULT_NUMERIC = {  # public constant scalings
    "age": lambda v: v / 50.0,
    "fnlwgt": lambda v: np.log(v) / 12.0,
    "education-num": lambda v: v / 10.0,
    "capital-gain": lambda v: np.log1p(v) / 5.0,
    "capital-loss": lambda v: np.log1p(v) / 5.0,
    "hours-per-week": lambda v: v / 40.0,
}


def _adult_schema():
    cats = {}
    for line in (ADULT / "adult.names").read_text().splitlines():
        if ":" in line and not line.startswith("|"):
            name, values = line.split(":", 1)
            values = values.strip().rstrip(".")
            if values != "continuous":
                cats[name.strip()] = [v.strip() for v in values.split(",")]
    return cats


COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
]


def _adult_load(path, cats):
    X, y = [], []
    for line in path.read_text().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) != 15:
            continue
        row = []
        for name, value in zip(COLUMNS, parts[:14]):
            if name in ADULT_NUMERIC:
                row.append(float(ADULT_NUMERIC[name](float(value))))
            else:  # one-hot over the public category list ("?" -> all zeros)
                row.extend(float(value == c) for c in cats[name])
        X.append(row)
        y.append(int(parts[14].rstrip(".") == ">50K"))
    return np.array(X), np.array(y)


def adult(epsilons, reps):
    if not ADULT.exists():
        return None
    cats = _adult_schema()
    Xtr, ytr = _adult_load(ADULT / "adult.data", cats)
    Xte, yte = _adult_load(ADULT / "adult.test", cats)
    n = len(ytr)
    out = {}

    def metrics(coef, b):
        z = Xte @ np.ravel(coef) + float(np.ravel([b])[0])
        acc = float(np.mean((z > 0) == (yte == 1)))
        ll = float(np.mean(np.logaddexp(0, -(2 * yte - 1) * z)))
        return acc, ll

    sk = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
    out[(np.inf, "sklearn (non-private)")] = [metrics(sk.coef_, sk.intercept_)]
    out[(np.inf, "predict majority")] = [(float(np.mean(yte == 0)), math.log(2))]
    for rep in range(reps):
        for eps in epsilons:
            m = HeavyTailedLogisticRegression(
                classes=[0, 1], epsilon=eps, random_state=rep
            ).fit(Xtr, ytr)
            out.setdefault((eps, "skdp default"), []).append(
                metrics(m.coef_, m.intercept_)
            )
            for C in CLIPS:
                coef, b = dp_gd(
                    Xtr,
                    2.0 * ytr - 1.0,
                    LogisticLoss(),
                    C,
                    1.0,
                    eps,
                    n**-1.1,
                    np.random.default_rng(rep),
                )
                out.setdefault((eps, f"DP-GD C={C:g}"), []).append(metrics(coef, b))
    return {k: tuple(np.mean(v, axis=0)) for k, v in out.items()}, Xtr.shape


# -- report -------------------------------------------------------------------------
def fmt(x):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3g}" if abs(x) >= 1e-3 else f"{x:.2e}"


def scales_report(scales, reps):
    """Markdown section: the same data in other units."""
    lines = [
        "## Scale robustness: the same data in other units",
        "",
        "The default fit on `(a X, c y)` for feature scale `a` and target scale `c` "
        "(linear) or `(a X, y)` (logistic); excess risk mapped back to standardized "
        "units (linear: divided by `c**2`), so a scale-invariant method gives the same "
        "number in every column. "
        + "Step sizes, the localized regularisation and the intercept column adapt "
        "to a private feature scale `s` (median over rows of the RMS of the "
        "non-zero entries, over that of a standard Gaussian vector: one more "
        "10-count scale quantile, 1% of the budget); clip and truncation levels "
        "are private quantiles and scale by themselves. "
        + "Same data generator as above (d = 20), "
        f"mean of {reps} repetitions, a fresh data set per repetition.",
        "",
    ]
    for kind in ("linear", "logistic"):
        cases = SCALE_CASES[kind]
        ns = sorted({k[1] for k in scales if k[0] == kind and k[-1] == "skdp default"})
        head = [
            f"a={a:g}" + (f", c={c:g}" if kind == "linear" else "") for a, c in cases
        ]
        lines += [
            f"### {kind.capitalize()} model, skdp default",
            "",
            "| n | eps | " + " | ".join(head) + " | max / min |",
            "|---|---|" + "---|" * (len(head) + 1),
        ]
        for n in ns:
            for eps in SCALE_EPS:
                vals = [scales[(kind, n, eps, a, c, "skdp default")] for a, c in cases]
                lines.append(
                    f"| {n:.0e} | {eps:g} | "
                    + " | ".join(fmt(v) for v in vals)
                    + f" | {max(vals) / min(vals):.2f} |"
                )
        lines.append("")
        gd_keys = [k for k in scales if k[0] == kind and k[-1].startswith("DP-GD")]
        if gd_keys:
            n, eps = gd_keys[0][1], gd_keys[0][2]
            lines += [
                f"Fixed clips on the same rescaled data (n = {n:.0e}, eps = {eps:g}), "
                "DP-GD with the step tuned on standardized data divided by `a**2` and "
                "intercept column `a` (an oracle that knows the scale: only the clip "
                "is fixed). A clip that suits one unit is far off in another:",
                "",
                "| method | " + " | ".join(head) + " |",
                "|---|" + "---|" * len(head),
            ]
            for method in ["skdp default"] + [f"DP-GD C={C:g}" for C in CLIPS]:
                lines.append(
                    f"| {method} | "
                    + " | ".join(
                        fmt(scales.get((kind, n, eps, a, c, method))) for a, c in cases
                    )
                    + " |"
                )
            lines.append("")
        stress = {
            k[3]: v for k, v in scales.items() if k[0] == kind and k[-1] == "stress"
        }
        if stress:
            n = next(k[1] for k in scales if k[0] == kind and k[-1] == "stress")
            lines += [
                f"Units a single scale does not fix (n = {n:.0e}, eps = 1; standardized: "
                f"{fmt(scales.get((kind, n, 1.0, 1, 1, 'skdp default')))}, best constant "
                f"model: {fmt(null_excess(kind))}):",
                "",
                "| " + " | ".join(stress) + " |",
                "|" + "---|" * len(stress),
                "| " + " | ".join(fmt(v) for v in stress.values()) + " |",
                "",
            ]
    worst = {}
    for (kind, n, eps, *_rest), _ in scales.items():
        if _rest[-1] != "skdp default":
            continue
        vals = [
            scales[(kind, n, eps, a, c, "skdp default")] for a, c in SCALE_CASES[kind]
        ]
        worst[kind] = max(worst.get(kind, 0.0), max(vals) / min(vals))
    stress_ok = all(
        v < null_excess(k[0]) for k, v in scales.items() if k[-1] == "stress"
    )
    lines += [
        "Reading: the largest max / min ratio over the rows (the spread of the "
        "default's excess risk across units, repetition noise included) is "
        + ", ".join(f"{k} {v:.3g}" for k, v in worst.items())
        + ". A common offset (uncentred features) or columns in very different "
        "units are not fixed by one scale: the curvature is then concentrated on a "
        "few directions, so 30 gradient steps at a step safe for the largest one "
        "barely move along the others. In these stress cases the default is "
        + ("below" if stress_ok else "**not always below**")
        + " the best constant model. `center=True` (a private mean from 5% of the "
        "budget, with a public row-norm bound) removes the offset; columns in very "
        "different units need public per-column scales from the user.",
        "",
    ]
    if (RESULTS / "heavy_tailed_scales_before.md").exists():
        lines += [
            "The same grid on the version before the feature-scale rule (defaults "
            "tuned for unit variance): `heavy_tailed_scales_before.md`.",
            "",
        ]
    return lines


def report(args, res, times, diab, adult_res, reps, elapsed, scales=None, scale_reps=0):
    lines = ["# Heavy-tailed private linear models: benchmark", ""]
    lines += [
        "Generated by `python -m benchmarks.heavy_tailed.main"
        + (" --quick" if args.quick else "")
        + f"` in {elapsed / 60:.1f} min.",
        "",
        "Setup: see the script's docstring. d = 20 Student-t(5) features (unit variance), "
        "noise 0.5 [centred log-normal + t(2.1)] (linear), logistic labels with ||w*|| ~ 2. "
        "delta = n^-1.1 everywhere. DP-GD baselines: full batch, 100 steps, per-sample "
        "clipping at fixed C, noise from skdp's accountant, step size per C tuned on an "
        "independent replicate (n = 10^6 reuses n = 10^5's). Excess risk: closed form "
        "(linear), 200k fresh feature vectors with exact label probabilities (logistic). "
        "Every number is a mean over repetitions: "
        + ", ".join(f"n={n:.0e}: {r}" for n, r in reps.items())
        + " (fewer at large n to "
        "keep the run short on a shared 2-core machine).",
        "",
    ]
    targets = []
    for kind in res:
        s = res[kind]["summary"]
        ns = sorted({k[0] for k in s})
        eps_list = sorted({k[1] for k in s if np.isfinite(k[1])})
        lines += [f"## {kind.capitalize()} model", ""]
        # main table at every epsilon
        methods = [f"skdp {DEFAULT}"] + [f"DP-GD C={C:g}" for C in CLIPS]
        lines += ["### Excess risk of the default solver vs fixed-clip DP-GD", ""]
        lines += [
            "| n | eps | skdp default | DP-GD C=0.1 | DP-GD C=1 | DP-GD C=10 | "
            "sklearn (non-private) | default / best DP-GD | default / median DP-GD |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for n in ns:
            for eps in eps_list:
                vals = [s.get((n, eps, m)) for m in methods]
                if vals[0] is None:
                    continue
                gd_vals = [v for v in vals[1:] if v is not None]
                best, med = min(gd_vals), float(np.median(gd_vals))
                sk = s.get((n, np.inf, "sklearn (non-private)"))
                lines.append(
                    f"| {n:.0e} | {eps:g} | "
                    + " | ".join(fmt(v) for v in vals)
                    + f" | {fmt(sk)} | {vals[0] / best:.2f} | {vals[0] / med:.2f} |"
                )
                if eps == 1.0:
                    targets.append((kind, n, vals[0] / best, vals[0] / med))
        lines.append("")
        # solver comparison at eps = 1
        lines += ["### All solvers at eps = 1 (how the default was chosen)", ""]
        extra = sorted({k[2] for k in s if k[1] == 1.0 and k[2] not in methods[1:]})
        lines += ["| n | " + " | ".join(extra) + " |", "|---|" + "---|" * len(extra)]
        for n in ns:
            lines.append(
                f"| {n:.0e} | "
                + " | ".join(fmt(s.get((n, 1.0, m))) for m in extra)
                + " |"
            )
        lines.append("")
        # rate
        dflt = [
            (n, s[(n, 1.0, f"skdp {DEFAULT}")])
            for n in ns
            if (n, 1.0, f"skdp {DEFAULT}") in s
        ]
        if len(dflt) >= 2:
            slope = np.polyfit(
                np.log10([n for n, _ in dflt]), np.log10([r for _, r in dflt]), 1
            )[0]
            res[kind]["slope"] = slope
            lines += [
                f"Rate: log-log slope of the default's excess risk in n at eps = 1: "
                f"**{slope:.2f}**. The paper's bound falls like n^-1/2 (statistical term) "
                f"plus n^-(1-1/k) (privacy term, -0.75 for k = 4); for these strongly "
                f"convex problems the expected rate is n^-1 (statistical) to n^-2 (privacy).",
                "",
            ]
        lrs = res[kind]["lr"]
        lines += [
            "DP-GD step sizes (tuned per C on an independent replicate):",
            "",
            "| n | eps | C=0.1 | C=1 | C=10 |",
            "|---|---|---|---|---|",
        ]
        for n_, eps_ in sorted({(k[0], k[1]) for k in lrs}):
            lines.append(
                f"| {n_:.0e} | {eps_:g} | "
                + " | ".join(f"{lrs[(n_, eps_, C)]:g}" for C in CLIPS)
                + " |"
            )
        lines.append("")
    lines += findings(res)
    if scales:
        lines += scales_report(scales, scale_reps)
    # targets
    lines += ["## Targets", ""]
    lines += [
        "| model | n | default / best fixed-clip DP-GD (target <= 1.25) | "
        "default / median DP-GD (target <= 0.5) | met |",
        "|---|---|---|---|---|",
    ]
    for kind, n, rb, rm in targets:
        ok = "yes" if (rb <= 1.25 and rm <= 0.5) else "**no**"
        lines.append(f"| {kind} | {n:.0e} | {rb:.2f} | {rm:.2f} | {ok} |")
    lines.append("")
    if times:
        lines += [
            "Fit time at n = 10^6, d = 20 (best of 2, same data and process; numba "
            "warmed up outside the timed region; target: skdp <= 3x scikit-learn). "
            "The machine is shared with other jobs, so ratios vary between runs "
            "(logistic 1.6x-2.4x over our runs; scikit-learn uses multi-threaded "
            "BLAS, skdp's kernel one thread):",
            "",
            "| model | sklearn (s) | skdp default (s) | ratio | met |",
            "|---|---|---|---|---|",
        ]
        for kind, t in times.items():
            r = t["skdp default"] / t["sklearn"]
            lines.append(
                f"| {kind} | {t['sklearn']:.2f} | {t['skdp default']:.2f} | {r:.2f} | "
                f"{'yes' if r <= 3 else '**no**'} |"
            )
        lines.append("")
    if diab:
        lines += [
            "## load_diabetes (n_train = 354, d = 10)",
            "",
            "Test MSE (original units), mean over random 80/20 splits. Columns "
            "standardized by public constants (the provider's scaling times "
            "sqrt(442)), target / 100. DP-GD step 0.3.",
            "",
            "| eps | method | test MSE |",
            "|---|---|---|",
        ]
        for (eps, m), v in sorted(diab.items(), key=lambda kv: (kv[0][0], kv[0][1])):
            lines.append(f"| {eps:g} | {m} | {v:.0f} |")
        lines.append("")
    if adult_res:
        table, shape = adult_res
        lines += [
            f"## Adult (n_train = {shape[0]}, d = {shape[1]} after one-hot)",
            "",
            "Test accuracy and log-loss on adult.test. Numeric columns scaled by public "
            "constants (age/50, log(fnlwgt)/12, education-num/10, log1p(capital)/5, "
            "hours/40), categoricals one-hot over the public schema in adult.names; "
            "classes=[0, 1] declared. DP-GD step 1.0.",
            "",
            "| eps | method | accuracy | log-loss |",
            "|---|---|---|---|",
        ]
        for (eps, m), (acc, ll) in sorted(
            table.items(), key=lambda kv: (kv[0][0], kv[0][1])
        ):
            lines.append(f"| {eps:g} | {m} | {acc:.3f} | {ll:.3f} |")
        lines.append("")
    return lines


def findings(res):
    """Short, number-backed reading of the tables (generated)."""
    out = ["## Findings", ""]
    for kind, r in res.items():
        s = r["summary"]
        ns = sorted({k[0] for k in s})
        d = {n: s.get((n, 1.0, f"skdp {DEFAULT}")) for n in ns}
        others = []
        for solver in SOLVERS:
            if solver == DEFAULT:
                continue
            ratios = [
                s[(n, 1.0, f"skdp {solver}")] / d[n]
                for n in ns
                if (n, 1.0, f"skdp {solver}") in s and d[n]
            ]
            if ratios:
                others.append(f"`{solver}` {min(ratios):.1f}-{max(ratios):.1f}x")
        out.append(
            f"- {kind}: at eps = 1 the other solvers' excess risk is "
            + ", ".join(others)
            + f" that of `{DEFAULT}` over n = 1e3..1e6, "
            f"so `{DEFAULT}` is the default for both estimators."
        )
        paper = [(n, m) for (n, e, m) in s if e == 1.0 and "paper C" in m]
        if paper:
            ratios = [s[(n, 1.0, m)] / d[n] for n, m in paper]
            out.append(
                f"- {kind}: the paper's worst-case clip (Theorem 2, true G_4) is "
                f"{min(ratios):.0f}-{max(ratios):.0f}x worse than the private adaptive "
                "clip (notes section 9 measured a ~50x too large clip level)."
            )
        sched = [
            s[(n, 1.0, "onepass, paper schedule")] / s[(n, 1.0, "skdp onepass")]
            for n in ns
            if (n, 1.0, "onepass, paper schedule") in s
        ]
        if sched:
            out.append(
                f"- {kind}: Algorithm 8 with the paper's schedule (step / 16 per phase, "
                f"uniform phase averages) is {min(sched):.0f}-{max(sched):.0f}x worse than "
                "the practical schedule (step / 2, last-half averages) at n <= 1e5."
            )
    small = []
    for kind, r in res.items():
        s = r["summary"]
        n0 = min(k[0] for k in s)
        gd = sorted(s[(n0, 1.0, f"DP-GD C={C:g}")] for C in CLIPS)
        small.append(
            f"{kind}: best/median row {gd[0]:.3g}/{gd[1]:.3g}, default "
            f"{s[(n0, 1.0, f'skdp {DEFAULT}')]:.3g}"
        )
    out += [
        f"- n = {n0:.0e}, eps = 1 ({'; '.join(small)}): the median fixed clip is within "
        "a few % of the best one, so 'at most half of the median row' would mean beating "
        "the hindsight-best clip by 2x there.",
        "- scikit-learn's LogisticRegression is run with its defaults (C = 1, an L2 "
        "penalty), which is why at n = 1e6 the private model can match or beat it.",
        "- The DP-GD rows with C = 0.1 and C = 1 stop improving beyond n = 1e4: the "
        "clip is far below the typical gradient norm, and clipping a skewed noise "
        "distribution biases the intercept (linear) or the scale (logistic).",
        "",
    ]
    return out


def plot(res, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(res), figsize=(6 * len(res), 4.5))
    for ax, (kind, r) in zip(np.atleast_1d(axes), res.items()):
        s = r["summary"]
        ns = sorted({k[0] for k in s})
        methods = sorted({k[2] for k in s if k[1] == 1.0})
        for m in methods + ["sklearn (non-private)"]:
            eps = np.inf if m.startswith("sklearn") else 1.0
            pts = [(n, s[(n, eps, m)]) for n in ns if (n, eps, m) in s]
            if pts:
                style = (
                    "-o" if m.startswith("skdp") else ("--" if "DP-GD" in m else ":")
                )
                ax.loglog(*zip(*pts), style, label=m)
        ax.set_xlabel("n")
        ax.set_ylabel("excess risk")
        ax.set_title(f"{kind}, eps = 1")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    # excess risk against epsilon at the largest n <= 1e5
    fig, axes = plt.subplots(1, len(res), figsize=(6 * len(res), 4.5))
    for ax, (kind, r) in zip(np.atleast_1d(axes), res.items()):
        s = r["summary"]
        n = max(k[0] for k in s if k[0] <= 100_000)
        for m in [f"skdp {DEFAULT}"] + [f"DP-GD C={C:g}" for C in CLIPS]:
            pts = sorted((e, v) for (nn, e, mm), v in s.items() if nn == n and mm == m)
            if pts:
                ax.loglog(*zip(*pts), "-o" if m.startswith("skdp") else "--", label=m)
        sk = s.get((n, np.inf, "sklearn (non-private)"))
        if sk is not None:
            ax.axhline(sk, ls=":", color="k", label="sklearn (non-private)")
        ax.set_xlabel("epsilon")
        ax.set_ylabel("excess risk")
        ax.set_title(f"{kind}, n = {n:.0e}")
        ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(str(path).replace("excess_risk", "epsilon"), dpi=110)
    plt.close(fig)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--quick", action="store_true", help="smoke run (small n, eps = 1)"
    )
    parser.add_argument(
        "--scales-only",
        action="store_true",
        help="only the scale-robustness section, into heavy_tailed_scales.md "
        "(e.g. to measure an older version of skdp on the same grid)",
    )
    args = parser.parse_args()
    start = time.perf_counter()

    def log(msg):
        print(f"[{(time.perf_counter() - start) / 60:5.1f} min] {msg}", flush=True)

    if args.scales_only:
        n = 10_000
        lrs = {
            kind: {(n, 1.0, C): tune_lr(kind, n, 1.0, C, seed=4) for C in CLIPS}
            for kind in ("linear", "logistic")
        }
        scales = scale_robustness([1_000, 10_000, 100_000], 2, lrs, log)
        RESULTS.mkdir(parents=True, exist_ok=True)
        lines = [
            "# Heavy-tailed private linear models: scale robustness only",
            "",
            "Generated by `python -m benchmarks.heavy_tailed.main --scales-only` in "
            f"{(time.perf_counter() - start) / 60:.1f} min.",
            "",
        ]
        lines += scales_report(scales, 2)
        (RESULTS / "heavy_tailed_scales.md").write_text("\n".join(lines) + "\n")
        log("written " + str(RESULTS / "heavy_tailed_scales.md"))
        return

    if args.quick:
        ns, epsilons = [1_000, 10_000], [1.0]
        reps = {1_000: 2, 10_000: 2}
    else:
        ns, epsilons = [1_000, 10_000, 100_000, 1_000_000], [0.5, 1.0, 2.0, 5.0]
        # the private fits' noise varies a lot between runs at small n:
        # many repetitions there (cheap), fewer at large n (slow)
        reps = {1_000: 40, 10_000: 20, 100_000: 6, 1_000_000: 3}
    res = {}
    for kind in ("linear", "logistic"):
        rows, lrs = synthetic(kind, ns, epsilons, reps, log)
        res[kind] = {"rows": rows, "summary": summarize(rows), "lr": lrs}
    times = (
        {}
        if args.quick
        else {k: timing(k, 1_000_000, log) for k in ("linear", "logistic")}
    )
    scale_reps = 1 if args.quick else 3
    scales = scale_robustness(
        [n for n in ns if n <= 100_000],
        scale_reps,
        {k: r["lr"] for k, r in res.items()},
        log,
    )
    diab = diabetes(epsilons, 3 if args.quick else 10)
    log("diabetes done")
    adult_res = None if args.quick else adult(epsilons, 3)
    log("adult done")
    suffix = "_quick" if args.quick else ""
    RESULTS.mkdir(parents=True, exist_ok=True)
    lines = report(
        args,
        res,
        times,
        diab,
        adult_res,
        reps,
        time.perf_counter() - start,
        scales,
        scale_reps,
    )
    (RESULTS / f"heavy_tailed{suffix}.md").write_text("\n".join(lines) + "\n")
    raw = {
        k: [
            {
                kk: (None if isinstance(vv, float) and not np.isfinite(vv) else vv)
                for kk, vv in row.items()
            }
            for row in r["rows"]
        ]
        for k, r in res.items()
    }
    (RESULTS / f"heavy_tailed{suffix}_raw.json").write_text(json.dumps(raw, indent=0))
    plot(res, RESULTS / f"heavy_tailed{suffix}_excess_risk.png")
    log("written " + str(RESULTS / f"heavy_tailed{suffix}.md"))


if __name__ == "__main__":
    main()
