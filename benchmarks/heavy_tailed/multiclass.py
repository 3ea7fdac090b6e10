"""Benchmark: multiclass HeavyTailedLogisticRegression and sparse input (issue 17).

Runs, in one process on the same splits and with the same ``delta = n^-1.1``:

- ``HeavyTailedLogisticRegression`` with ``multi_class="multinomial"`` (the
  default) and ``multi_class="ovr"`` (one-vs-rest, ``1/K`` of the budget per
  class), default hyperparameters, declared ``classes``;
- non-private ``sklearn.linear_model.LogisticRegression`` (multinomial);
- multinomial full-batch DP-GD with per-sample (per-record, Frobenius)
  clipping at fixed C in {0.1, 1, 10}, 100 steps, intercept column 1, noise
  from skdp's exact accountant (``calibrate_gaussian``), step size from
  {0.3, 1, 3}; the reported "best" is the best (C, step) chosen in
  hindsight on the mean test accuracy (the strongest version of the baseline);
- one-vs-rest DP-GD: K binary DP-GD fits, each at noise for ``K * 100``
  full-batch steps (the budget split K ways, exact in GDP), same grids.

Data (scaled with public constants only): iris (cm / 8), wine (each column
divided by a rounded upper end of its documented range), digits (/16),
stratified 75/25 splits (one per repetition); synthetic K = 5, d = 20,
Student-t(3) features (unit scale), ``y = argmax(x W* + b* + Gumbel)`` with
``W*`` fixed, n in {1e4, 1e5} training rows and 50,000 test rows.

Each split or training replicate is fitted with ``--seeds-per-split``
seeds (the same seeds for skdp and the baselines), so a cell averages
splits x seeds runs. The "no guard" column refits the default estimator
with the previous default, without the overshoot guard
(``CLIP_COLLAPSE_FRACTION = 0``), in the same process: a paired
comparison. Gaps are quoted with the standard error of the paired
per-run differences (the hindsight-best configuration fixed).

Also: a 200-seed study on digits at epsilon = 1 (every fit of the default
estimator against the worst fixed-clip multinomial DP-GD); held-out tasks on
which no constant was chosen (``--part heldout``: breast_cancer through the
multinomial solver with K = 2, digits at n = 500, two synthetic tasks); the
non-private limit against sklearn's unpenalised multinomial optimum and the
old-vs-new rules (``--part rules``); and a sparse row: a bag-of-words CSR
matrix (n = 1e5, d = 1e4, 0.1% non-zero, synthetic), wall time and
tracemalloc peak of each gradient-based estimator's fit.

Usage: ``python -m benchmarks.heavy_tailed.multiclass [--quick] [--part P]
[--splits R] [--seeds-per-split S] [--eps 1] [--ns 10000] [--datasets wine]
[--no-ovr-gd] [--no-ovr] [--tag T]``.
Writes ``benchmarks/results/multiclass[_quick][_part].md`` and ``..._raw.json``.
"""

import argparse
import contextlib
import json
import math
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.datasets import load_digits, load_iris, load_wine
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS
from skdp import (
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
)
from skdp._testing.internals import (
    clipped_gradient_sum,
    clipped_multinomial_gradient_sum,
)
from skdp.losses import LogisticLoss
from skdp.privacy import calibrate_gaussian, gaussian_noise
from skdp.utils import safe_row_norms

CLIPS = (0.1, 1.0, 10.0)
LRS = (0.3, 1.0, 3.0)
GD_STEPS = 100
EPSILONS = (0.5, 1.0, 2.0, 5.0)
#: Rounded upper ends of the documented ranges of the 13 wine attributes
#: (UCI wine.names / sklearn's description): public constants.
WINE_SCALE = np.array(
    [15.0, 6.0, 3.5, 30.0, 170.0, 4.0, 5.0, 0.7, 3.6, 13.0, 1.8, 4.0, 1700.0]
)


# -- the previous rules, for a paired comparison in the same process -----------------
@contextlib.contextmanager
def old_rules():
    """The multinomial default before this round: no overshoot guard
    (``CLIP_COLLAPSE_FRACTION = 0``: every checkpoint's clip release is
    used, however far it falls)."""
    from skdp._testing.internals import heavy_tailed_multinomial_module as mn

    fraction = mn.CLIP_COLLAPSE_FRACTION
    mn.CLIP_COLLAPSE_FRACTION = 0.0
    try:
        yield
    finally:
        mn.CLIP_COLLAPSE_FRACTION = fraction


# -- data ---------------------------------------------------------------------------
def real_data(name):
    if name == "iris":
        X, y = load_iris(return_X_y=True)
        return X / 8.0, y
    if name == "wine":
        X, y = load_wine(return_X_y=True)
        return X / WINE_SCALE, y
    X, y = load_digits(return_X_y=True)
    return X / 16.0, y


_W_SYN = np.random.default_rng(2024).normal(size=(20, 5)) * 0.6
_B_SYN = np.linspace(-0.5, 0.5, 5)


def synthetic(n, rng):
    X = rng.standard_t(3, size=(n, 20)) / math.sqrt(3.0)
    y = np.argmax(X @ _W_SYN + _B_SYN + rng.gumbel(size=(n, 5)), axis=1)
    return X, y


# -- baselines ---------------------------------------------------------------------
def dp_gd_multinomial(X, labels, K, clip, lr, epsilon, delta, rng):
    Xa = np.hstack([X, np.ones((len(X), 1))])
    n, d = Xa.shape
    z = calibrate_gaussian(epsilon, delta, GD_STEPS)
    norms = safe_row_norms(Xa)
    W = np.zeros((d, K))
    for _ in range(GD_STEPS):
        g, _ = clipped_multinomial_gradient_sum(Xa, labels, W, norms, clip)
        noise = gaussian_noise(rng, 2 * clip * z, d * K).reshape(d, K)
        W = W - lr * (g + noise) / n
    return W


def dp_gd_ovr(X, labels, K, clip, lr, epsilon, delta, rng):
    Xa = np.ascontiguousarray(np.hstack([X, np.ones((len(X), 1))]))
    n, d = Xa.shape
    # K fits of GD_STEPS full-batch steps on the same records: K * GD_STEPS
    z = calibrate_gaussian(epsilon, delta, GD_STEPS * K)
    inv = 1.0 / safe_row_norms(Xa)
    W = np.zeros((d, K))
    loss = LogisticLoss()
    for k in range(K):
        yk = np.where(labels == k, 1.0, -1.0)
        w = np.zeros(d)
        for _ in range(GD_STEPS):
            g = clipped_gradient_sum(Xa, yk, w, inv, clip, loss)
            w = w - lr * (g + gaussian_noise(rng, 2 * clip * z, d)) / n
        W[:, k] = w
    return W


def acc_of(W, X, y):
    return float(np.mean(np.argmax(X @ W[:-1] + W[-1], axis=1) == y))


def run_task(
    Xtr, ytr, Xte, yte, K, epsilons, seed, baselines=True, ovr_gd=True, ovr=True
):
    """Accuracies of every method on one split, one seed."""
    out = {}
    delta = len(Xtr) ** -1.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogisticRegression(max_iter=2000).fit(Xtr, ytr)
    out["nonprivate"] = float(ref.score(Xte, yte))
    for eps in epsilons:
        row = {}
        for mc in ("multinomial", "ovr") if ovr else ("multinomial",):
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = HeavyTailedLogisticRegression(
                    epsilon=eps, classes=range(K), multi_class=mc, random_state=seed
                ).fit(Xtr, ytr)
            row[f"skdp_{mc}"] = float(clf.score(Xte, yte))
            row[f"time_{mc}"] = time.perf_counter() - t0
        with warnings.catch_warnings(), old_rules():
            warnings.simplefilter("ignore")
            clf = HeavyTailedLogisticRegression(
                epsilon=eps, classes=range(K), random_state=seed
            ).fit(Xtr, ytr)
        row["skdp_old_rules"] = float(clf.score(Xte, yte))
        if baselines:
            for C in CLIPS:
                for lr in LRS:
                    rng = np.random.default_rng(seed)
                    W = dp_gd_multinomial(Xtr, ytr, K, C, lr, eps, delta, rng)
                    row[f"gd_multi_C{C}_lr{lr}"] = acc_of(W, Xte, yte)
                    if not ovr_gd:
                        continue
                    rng = np.random.default_rng(seed)
                    W = dp_gd_ovr(Xtr, ytr, K, C, lr, eps, delta, rng)
                    row[f"gd_ovr_C{C}_lr{lr}"] = acc_of(W, Xte, yte)
        out[eps] = row
    return out


def _paired_se(runs, eps, a, b):
    """Standard error of the mean paired difference ``a - b`` over runs."""
    diff = np.array([r[eps][a] - r[eps][b] for r in runs])
    return float(diff.std(ddof=1) / math.sqrt(len(diff))) if len(diff) > 1 else math.nan


def aggregate(runs, epsilons):
    """Mean accuracies; hindsight-best and worst (C, lr) of each baseline."""
    summary = {"nonprivate": float(np.mean([r["nonprivate"] for r in runs]))}
    for eps in epsilons:
        keys = runs[0][eps].keys()
        mean = {k: float(np.mean([r[eps][k] for r in runs])) for k in keys}
        res = {
            k: mean.get(k, math.nan)
            for k in (
                "skdp_multinomial",
                "skdp_ovr",
                "time_multinomial",
                "skdp_old_rules",
            )
        }
        res["n_runs"] = len(runs)
        res["old_diff_se"] = _paired_se(runs, eps, "skdp_multinomial", "skdp_old_rules")
        res["skdp_multinomial_min"] = float(
            np.min([r[eps]["skdp_multinomial"] for r in runs])
        )
        # standard error of the mean over runs (splits x seeds)
        res["skdp_multinomial_se"] = float(
            np.std([r[eps]["skdp_multinomial"] for r in runs]) / math.sqrt(len(runs))
        )
        for fam in ("multi", "ovr"):
            cands = {k: v for k, v in mean.items() if k.startswith(f"gd_{fam}_")}
            if not cands:
                continue
            best = max(cands, key=cands.get)
            res[f"gd_{fam}_best"] = cands[best]
            res[f"gd_{fam}_best_cfg"] = best
            res[f"gd_{fam}_diff_se"] = _paired_se(runs, eps, "skdp_multinomial", best)
            # per clip: best step size (the fixed-clip baseline at that C)
            for C in CLIPS:
                per = [v for k, v in cands.items() if k.startswith(f"gd_{fam}_C{C}_")]
                res[f"gd_{fam}_C{C}"] = max(per)
        summary[eps] = res
    return summary


# -- 200-seed digits study ----------------------------------------------------------
def digits_seeds(n_seeds, base_reps):
    X, y = real_data("digits")
    Xtr, Xte, ytr, yte = train_test_split(
        X, y, stratify=y, test_size=0.25, random_state=0
    )
    delta = len(Xtr) ** -1.1
    gd = {}
    for C in CLIPS:
        accs = {}
        for lr in LRS:
            accs[lr] = float(
                np.mean(
                    [
                        acc_of(
                            dp_gd_multinomial(
                                Xtr,
                                ytr,
                                10,
                                C,
                                lr,
                                1.0,
                                delta,
                                np.random.default_rng(s),
                            ),
                            Xte,
                            yte,
                        )
                        for s in range(base_reps)
                    ]
                )
            )
        gd[C] = max(accs.values())
    res = {}
    for mc in ("multinomial", "ovr"):
        accs, scales = [], []
        # one-vs-rest is K times slower: at most 50 seeds (the defect shows)
        for seed in range(n_seeds if mc == "multinomial" else min(n_seeds, 50)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                clf = HeavyTailedLogisticRegression(
                    classes=range(10), multi_class=mc, random_state=seed
                ).fit(Xtr, ytr)
            accs.append(float(clf.score(Xte, yte)))
            scales.append(np.min(np.ravel(clf.feature_scale_)))
        res[mc] = {
            "n_seeds": len(accs),
            "min": float(np.min(accs)),
            "mean": float(np.mean(accs)),
            "p1": float(np.percentile(accs, 1)),
            "argmin_seed": int(np.argmin(accs)),
            "min_scale": float(np.min(scales)),
            "n_below_worst_gd": int(np.sum(np.array(accs) < min(gd.values()))),
        }
    # MinimaxFairClassifier with one group is multinomial ERM: the same check
    accs = []
    for seed in range(n_seeds):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = MinimaxFairClassifier(classes=range(10), random_state=seed)
            clf.fit(Xtr, ytr)
        accs.append(float(clf.score(Xte, yte)))
    res["MinimaxFairClassifier"] = {
        "n_seeds": len(accs),
        "min": float(np.min(accs)),
        "mean": float(np.mean(accs)),
        "p1": float(np.percentile(accs, 1)),
        "argmin_seed": int(np.argmin(accs)),
        "min_scale": float("nan"),  # no per-class feature scale
        "n_below_worst_gd": int(np.sum(np.array(accs) < min(gd.values()))),
    }
    seed_1014 = {}
    for mc in ("multinomial", "ovr"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf = HeavyTailedLogisticRegression(
                classes=range(10), multi_class=mc, random_state=1014
            ).fit(Xtr, ytr)
        seed_1014[mc] = float(clf.score(Xte, yte))
    return {"gd_by_clip": gd, "skdp": res, "seed_1014": seed_1014}


# -- held-out tasks (not used to choose any constant) --------------------------------
#: Public per-column scale of breast_cancer: rounded upper ends of each
#: column's documented range (sklearn's description), as for wine.
CANCER_SCALE = np.array(
    [30, 40, 200, 2500, 0.2, 0.4, 0.5, 0.25, 0.35, 0.1, 3, 5, 25, 550, 0.035]
    + [0.15, 0.4, 0.06, 0.08, 0.03, 40, 50, 260, 4300, 0.25, 1.1, 1.3, 0.3, 0.7, 0.21],
    dtype=float,
)


def synthetic_k(K, d, n, rng):
    """Held-out synthetic task: Student-t(3) features, ``K`` classes."""
    W = np.random.default_rng(77 + K + d).normal(size=(d, K)) * 0.8 * math.sqrt(10 / d)
    X = rng.standard_t(3, size=(n, d)) / math.sqrt(3.0)
    return X, np.argmax(X @ W + rng.gumbel(size=(n, K)), axis=1)


def heldout_splits(name, rep):
    """Train/test split ``rep`` of a held-out task."""
    if name == "breast_cancer (K=2)":
        from sklearn.datasets import load_breast_cancer

        X, y = load_breast_cancer(return_X_y=True)
        return train_test_split(
            X / CANCER_SCALE, y, stratify=y, test_size=0.25, random_state=rep
        )
    if name == "digits n=500":
        X, y = real_data("digits")
        return train_test_split(
            X, y, stratify=y, train_size=500, random_state=100 + rep
        )
    K, d, n = (7, 15, 5000) if name == "synthetic K=7 d=15 n=5000" else (3, 25, 1500)
    Xtr, ytr = synthetic_k(K, d, n, np.random.default_rng(500 + rep))
    Xte, yte = synthetic_k(K, d, 20_000, np.random.default_rng(9))
    return Xtr, Xte, ytr, yte


HELDOUT = (
    "breast_cancer (K=2)",
    "digits n=500",
    "synthetic K=7 d=15 n=5000",
    "synthetic K=3 d=25 n=1500",
)


def multinomial_accuracy(Xtr, ytr, Xte, yte, K, eps, seed):
    """HeavyTailedLogisticRegression's multinomial solver, also for K = 2.

    With two classes the estimator fits the binary model; the held-out
    ``breast_cancer`` row runs the softmax path through the estimator's own
    plan (``_fit_multinomial``) to test it on a task it was not tuned on.
    """
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = HeavyTailedLogisticRegression(
            epsilon=eps, classes=range(K), random_state=seed
        )
        if K > 2:
            return float(clf.fit(Xtr, ytr).score(Xte, yte))
        clf.classes_, clf.n_features_in_ = np.arange(2), Xtr.shape[1]
        w = clf._fit_multinomial(Xtr, ytr.astype(np.int64), 2).coef
    return acc_of(w, Xte, yte)


def heldout(reps, seeds_per_split, eps=1.0):
    out = {}
    for name in HELDOUT:
        name_eps = name if eps == 1.0 else f"{name}, eps={eps:g}"
        runs = []
        for rep in range(reps):
            Xtr, Xte, ytr, yte = heldout_splits(name, rep)
            K = int(max(ytr.max(), yte.max())) + 1
            delta = len(Xtr) ** -1.1
            for j in range(seeds_per_split):
                seed = rep * seeds_per_split + j
                row = {"skdp": multinomial_accuracy(Xtr, ytr, Xte, yte, K, eps, seed)}
                with old_rules():
                    row["old"] = multinomial_accuracy(Xtr, ytr, Xte, yte, K, eps, seed)
                for C in CLIPS:
                    for lr in LRS:
                        W = dp_gd_multinomial(
                            Xtr, ytr, K, C, lr, eps, delta, np.random.default_rng(seed)
                        )
                        row[f"gd_C{C}_lr{lr}"] = acc_of(W, Xte, yte)
                runs.append(row)
        mean = {k: float(np.mean([r[k] for r in runs])) for k in runs[0]}
        gd = {k: v for k, v in mean.items() if k.startswith("gd_")}
        best = max(gd, key=gd.get)
        diff = np.array([r["skdp"] - r[best] for r in runs])
        diff_old = np.array([r["skdp"] - r["old"] for r in runs])
        out[name_eps] = {
            "diff_se": float(diff.std(ddof=1) / math.sqrt(len(diff))),
            "old_diff_se": float(diff_old.std(ddof=1) / math.sqrt(len(diff))),
            "n_runs": len(runs),
            "skdp": mean["skdp"],
            "old": mean["old"],
            "skdp_se": float(np.std([r["skdp"] for r in runs]) / math.sqrt(len(runs))),
            "gd_best": gd[best],
            "gd_best_cfg": best[3:],
            "gd_worst_clip": min(
                max(v for k, v in gd.items() if k.startswith(f"gd_C{C}_"))
                for C in CLIPS
            ),
        }
        print(name, "done", flush=True)
    return out


# -- the non-private limit and the rules of this round -------------------------------
def _train_logloss(P, y):
    return float(-np.mean(np.log(np.maximum(P[np.arange(len(y)), y], 1e-300))))


def inf_gap(seeds):
    """epsilon = inf against sklearn's multinomial optimum; old vs new rules."""
    tasks = []
    for name in ("iris", "wine", "digits"):
        X, y = real_data(name)
        Xtr, Xte, ytr, yte = train_test_split(
            X, y, stratify=y, test_size=0.25, random_state=0
        )
        tasks.append((name, Xtr, Xte, ytr, yte))
    Xte_s, yte_s = synthetic(50_000, np.random.default_rng(99))
    for n in (10_000, 100_000):
        Xtr, ytr = synthetic(n, np.random.default_rng(1000))
        tasks.append((f"synthetic n={n}", Xtr, Xte_s, ytr, yte_s))
    out = {}
    for name, Xtr, Xte, ytr, yte in tasks:
        K = int(ytr.max()) + 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref = LogisticRegression(C=1e8, max_iter=5000).fit(Xtr, ytr)
        row = {
            "sklearn_acc": float(ref.score(Xte, yte)),
            "sklearn_ll": _train_logloss(ref.predict_proba(Xtr), ytr),
        }
        for tag, rules in (("new", contextlib.nullcontext), ("old", old_rules)):
            for eps in (np.inf, 1.0):
                accs, lls, scales = [], [], []
                for seed in range(1 if eps == np.inf else seeds):
                    with warnings.catch_warnings(), rules():
                        warnings.simplefilter("ignore")
                        clf = HeavyTailedLogisticRegression(
                            epsilon=eps, classes=range(K), random_state=seed
                        ).fit(Xtr, ytr)
                    accs.append(float(clf.score(Xte, yte)))
                    lls.append(_train_logloss(clf.predict_proba(Xtr), ytr))
                    scales.append(float(np.ravel(clf.feature_scale_)[0]))
                key = f"{tag}_{'inf' if eps == np.inf else 'eps1'}"
                row[key + "_acc"] = float(np.mean(accs))
                row[key + "_ll"] = float(np.mean(lls))
                row[key + "_scale"] = float(np.mean(scales))
        out[name] = row
        print(name, "done", flush=True)
    return out


# -- sparse row ---------------------------------------------------------------------
def sparse_row(n, d, density, seed=0):
    rng = np.random.default_rng(seed)
    nnz = int(n * d * density)
    rows = rng.integers(0, n, size=nnz)
    cols = np.minimum((rng.pareto(1.2, size=nnz) * 50).astype(int), d - 1)
    vals = rng.poisson(1.0, size=nnz) + 1.0
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    # tf scaling with a public rule: log1p of counts
    X.data = np.log1p(X.data)
    w = rng.normal(size=d) * (rng.random(d) < 0.05)
    score = np.asarray(X @ w).ravel()
    y_reg = score + rng.standard_t(3, size=n)
    y_bin = (score + rng.logistic(size=n) > 0).astype(int)
    y_5 = np.digitize(
        score + rng.logistic(size=n), np.quantile(score, [0.2, 0.4, 0.6, 0.8])
    )
    out = {"nnz": int(X.nnz), "dense_bytes": n * d * 8}
    cases = [
        ("HeavyTailedLinearRegression", HeavyTailedLinearRegression, y_reg, {}),
        (
            "HeavyTailedLogisticRegression (binary)",
            HeavyTailedLogisticRegression,
            y_bin,
            {"classes": [0, 1]},
        ),
        (
            "HeavyTailedLogisticRegression (K=5, multinomial)",
            HeavyTailedLogisticRegression,
            y_5,
            {"classes": range(5)},
        ),
    ]
    # warm-up (imports, numba) outside the timed region
    HeavyTailedLinearRegression(random_state=0).fit(X[:2000], y_reg[:2000])
    for name, Est, y, kw in cases:
        est = Est(random_state=0, **kw)
        tracemalloc.start()
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.fit(X, y)
        elapsed = time.perf_counter() - t0
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        out[name] = {"seconds": elapsed, "peak_mb": peak / 2**20}
    return out


# -- report -------------------------------------------------------------------------
def fmt(x):
    return f"{x:.3f}"


def table(name, summary, epsilons):
    lines = [
        f"### {name} (non-private LogisticRegression: {fmt(summary['nonprivate'])})",
        "",
        "| eps | skdp multinomial | no guard (paired diff) | skdp ovr "
        "| GD multi best (cfg) | GD multi C=0.1 | C=1 | C=10 "
        "| GD ovr best | skdp multi - best GD multi (± paired s.e.) "
        "| skdp multi min over runs |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for eps in epsilons:
        r = summary[eps]
        lines.append(
            f"| {eps} | {fmt(r['skdp_multinomial'])} ± {fmt(r['skdp_multinomial_se'])} "
            f"| {fmt(r['skdp_old_rules'])} "
            f"({r['skdp_multinomial'] - r['skdp_old_rules']:+.3f} ± {fmt(r['old_diff_se'])}) "
            f"| {fmt(r['skdp_ovr'])} | "
            f"{fmt(r['gd_multi_best'])} ({r['gd_multi_best_cfg'][9:]}) | "
            f"{fmt(r['gd_multi_C0.1'])} | {fmt(r['gd_multi_C1.0'])} | "
            f"{fmt(r['gd_multi_C10.0'])} | {fmt(r.get('gd_ovr_best', math.nan))} | "
            f"{r['skdp_multinomial'] - r['gd_multi_best']:+.3f} ± "
            f"{fmt(r['gd_multi_diff_se'])} | "
            f"{fmt(r['skdp_multinomial_min'])} |"
        )
    return "\n".join(lines) + "\n"


def seeds_report(seeds):
    n = seeds["skdp"]["multinomial"]["n_seeds"]
    out = [f"## Digits at epsilon = 1 over {n} seeds (one split)\n"]
    gd = seeds["gd_by_clip"]
    out.append(
        "Fixed-clip multinomial DP-GD (best step per C, mean of 5 seeds): "
        + ", ".join(f"C={C}: {fmt(v)}" for C, v in gd.items())
        + f"; worst: {fmt(min(gd.values()))}.\n"
    )
    out.append(
        "| estimator / multi_class | seeds | min | 1st percentile | mean | seed of min | "
        "smallest feature scale | fits below worst GD |"
    )
    out.append("|---|---|---|---|---|---|---|---|")
    for mc, r in seeds["skdp"].items():
        out.append(
            f"| {mc} | {r['n_seeds']} | {fmt(r['min'])} | {fmt(r['p1'])} | {fmt(r['mean'])} | "
            f"{r['argmin_seed']} | {r['min_scale']:.3g} | {r['n_below_worst_gd']} |"
        )
    out.append(
        f"\nrandom_state=1014 (the reported defect): multinomial "
        f"{fmt(seeds['seed_1014']['multinomial'])}, ovr {fmt(seeds['seed_1014']['ovr'])}.\n"
    )
    return out


def heldout_report(held):
    out = [
        "## Held-out tasks (no constant was chosen on them; epsilon = 1 unless named)\n",
        "breast_cancer runs the multinomial solver with K = 2 (the estimator's "
        "own plan, `_fit_multinomial`); columns scaled by public range constants. "
        "digits: 500 training rows, the rest for test. Synthetic: Student-t(3) "
        "features, 20,000 test rows. Best multinomial DP-GD over C in "
        f"{CLIPS} and steps {LRS}, chosen in hindsight.\n",
        "| task | runs | skdp multinomial | no guard (paired diff) | best GD multi (cfg) | "
        "skdp - best (± paired s.e.) | worst fixed-clip GD |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, r in held.items():
        out.append(
            f"| {name} | {r['n_runs']} | {fmt(r['skdp'])} ± {fmt(r['skdp_se'])} | "
            f"{fmt(r['old'])} ({r['skdp'] - r['old']:+.3f} ± {fmt(r['old_diff_se'])}) | "
            f"{fmt(r['gd_best'])} ({r['gd_best_cfg']}) | "
            f"{r['skdp'] - r['gd_best']:+.3f} ± {fmt(r['diff_se'])} | "
            f"{fmt(r['gd_worst_clip'])} |"
        )
    return out + [""]


def gap_report(gap):
    out = [
        "## The non-private limit and the rules of this round\n",
        "Default estimator at epsilon = inf against sklearn's "
        "unpenalised multinomial `LogisticRegression(C=1e8)`: test accuracy and "
        "train log-loss; then epsilon = 1 (mean over seeds). 'new': "
        '`max_iter="auto"` (`auto_multinomial_steps`: without noise 300 steps '
        "while n d K T <= 3e9, else 100 or 30); 'old': without the overshoot guard, "
        "run in the same "
        "process on the same data. `s` is the released feature scale.\n",
        "| task | sklearn acc / train ll | inf new: acc / ll / s | inf old: acc / ll / s "
        "| eps=1 new: acc / s | eps=1 old: acc / s |",
        "|---|---|---|---|---|---|",
    ]
    for name, r in gap.items():
        out.append(
            f"| {name} | {fmt(r['sklearn_acc'])} / {fmt(r['sklearn_ll'])} | "
            f"{fmt(r['new_inf_acc'])} / {fmt(r['new_inf_ll'])} / {r['new_inf_scale']:.3g} | "
            f"{fmt(r['old_inf_acc'])} / {fmt(r['old_inf_ll'])} / {r['old_inf_scale']:.3g} | "
            f"{fmt(r['new_eps1_acc'])} / {r['new_eps1_scale']:.3g} | "
            f"{fmt(r['old_eps1_acc'])} / {r['old_eps1_scale']:.3g} |"
        )
    return out + [""]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument(
        "--reps",
        "--splits",
        dest="reps",
        type=int,
        default=None,
        help="stratified splits of each real set (and held-out task)",
    )
    parser.add_argument(
        "--datasets", type=str, default="iris,wine,digits", help="real sets to run"
    )
    parser.add_argument(
        "--no-ovr", action="store_true", help="skip skdp's one-vs-rest fits"
    )
    parser.add_argument("--tag", type=str, default="", help="results file suffix")
    parser.add_argument("--seeds", type=int, default=None)
    parser.add_argument("--ns", type=str, default=None, help="e.g. 10000,100000")
    parser.add_argument("--syn-reps", type=int, default=None)
    parser.add_argument(
        "--lrs", type=str, default=None, help="DP-GD step grid, e.g. 1,3"
    )
    parser.add_argument(
        "--part",
        choices=("all", "real", "synthetic", "seeds", "sparse", "heldout", "rules"),
        default="all",
        help="run one part (each writes its own results file)",
    )
    parser.add_argument(
        "--seeds-per-split",
        type=int,
        default=None,
        help="seeds per split / replicate (every cell averages reps x seeds runs)",
    )
    parser.add_argument("--eps", type=str, default=None, help="e.g. 1 or 0.5,1,2,5")
    parser.add_argument(
        "--no-ovr-gd", action="store_true", help="skip the one-vs-rest DP-GD baseline"
    )
    args = parser.parse_args()
    parts = (
        ("real", "synthetic", "seeds", "sparse", "heldout", "rules")
        if args.part == "all"
        else (args.part,)
    )
    global EPSILONS
    if args.eps:
        EPSILONS = tuple(float(v) for v in args.eps.split(","))
    per_split = args.seeds_per_split or (1 if args.quick else 2)
    reps = args.reps or (2 if args.quick else 5)
    syn_reps = args.syn_reps or (1 if args.quick else 2)
    if args.lrs:
        global LRS
        LRS = tuple(float(v) for v in args.lrs.split(","))
    n_seeds = args.seeds or (20 if args.quick else 200)
    ns = (10_000,) if args.quick else (10_000, 100_000)
    if args.ns:
        ns = tuple(int(v) for v in args.ns.split(","))
    t_start = time.perf_counter()
    summaries, raw = {}, {}
    for name in args.datasets.split(",") if "real" in parts else ():
        X, y = real_data(name)
        K = int(y.max()) + 1
        runs = []
        for rep in range(reps):
            Xtr, Xte, ytr, yte = train_test_split(
                X, y, stratify=y, test_size=0.25, random_state=rep
            )
            for j in range(per_split):
                seed = rep * per_split + j
                runs.append(
                    run_task(
                        Xtr,
                        ytr,
                        Xte,
                        yte,
                        K,
                        EPSILONS,
                        seed,
                        ovr_gd=not args.no_ovr_gd,
                        ovr=not args.no_ovr,
                    )
                )
        summaries[name] = aggregate(runs, EPSILONS)
        raw[name] = runs
        print(name, "done", round(time.perf_counter() - t_start), "s", flush=True)
    test_rng = np.random.default_rng(99)
    Xte, yte = synthetic(50_000, test_rng)
    for n in ns if "synthetic" in parts else ():
        runs = []
        for rep in range(syn_reps):
            Xtr, ytr = synthetic(n, np.random.default_rng(1000 + rep))
            for j in range(per_split):
                seed = rep * per_split + j
                runs.append(
                    run_task(
                        Xtr,
                        ytr,
                        Xte,
                        yte,
                        5,
                        EPSILONS,
                        seed,
                        ovr_gd=not args.no_ovr_gd,
                        ovr=not args.no_ovr,
                    )
                )
        key = f"synthetic n={n}"
        summaries[key] = aggregate(runs, EPSILONS)
        raw[key] = runs
        print(key, "done", round(time.perf_counter() - t_start), "s", flush=True)
    seeds = sparse = held = gap = None
    if "heldout" in parts:
        held = {}
        for eps in EPSILONS:
            held.update(heldout(reps, per_split, eps))
    if "rules" in parts:
        gap = inf_gap(per_split * (2 if args.quick else 5))
    if "seeds" in parts:
        seeds = digits_seeds(n_seeds, base_reps=5)
        print("seeds done", round(time.perf_counter() - t_start), "s", flush=True)
    if "sparse" in parts:
        sparse = sparse_row(100_000, 10_000, 0.001)
    elapsed = time.perf_counter() - t_start
    tag = ("_quick" if args.quick else "") + (
        "" if args.part == "all" else f"_{args.part}"
    )
    if args.ns:
        tag += "_n" + "_".join(str(n) for n in ns)
    tag += args.tag
    RESULTS.mkdir(exist_ok=True)
    out = [
        "# Multiclass and sparse benchmark (issue 17)",
        "",
        "Command: `nice -n 10 python -m benchmarks.heavy_tailed.multiclass"
        f"{' --quick' if args.quick else ''}"
        f"{' --splits ' + str(args.reps) if args.reps else ''}"
        f"{' --datasets ' + args.datasets if args.datasets != 'iris,wine,digits' else ''}"
        f"{' --no-ovr' if args.no_ovr else ''}"
        f"{' --tag ' + args.tag if args.tag else ''}"
        f"{' --seeds ' + str(args.seeds) if args.seeds else ''}"
        f"{' --part ' + args.part if args.part != 'all' else ''}"
        f"{' --ns ' + args.ns if args.ns else ''}"
        f"{' --syn-reps ' + str(args.syn_reps) if args.syn_reps else ''}"
        f"{' --lrs ' + args.lrs if args.lrs else ''}"
        f"{' --seeds-per-split ' + str(args.seeds_per_split) if args.seeds_per_split else ''}"
        f"{' --eps ' + args.eps if args.eps else ''}"
        f"{' --no-ovr-gd' if args.no_ovr_gd else ''}` "
        f"({elapsed / 60:.1f} min on a shared 2-core machine). "
        f"Real data: {reps} stratified 75/25 splits; synthetic: "
        f"{syn_reps} training replicates, one 50,000-row test set; "
        f"{per_split} seeds per split or replicate (the same seeds for skdp and "
        "the DP-GD baselines), so each cell averages "
        f"{reps * per_split} (real) / {syn_reps * per_split} (synthetic) runs; "
        "'±' is the standard error over runs. "
        "Mean test accuracy. DP-GD baselines: 100 full-batch steps, exact GDP "
        f"noise, step grid {LRS}; 'best' = best (C, step) in hindsight on the mean test accuracy; "
        "the per-C columns use the best step for that C.",
        "",
    ]
    for name, summary in summaries.items():
        out.append(table(name, summary, EPSILONS))
    if seeds:
        out.extend(seeds_report(seeds))
    if held:
        out.extend(heldout_report(held))
    if gap:
        out.extend(gap_report(gap))
    if sparse:
        out.append("## Sparse bag-of-words CSR (n = 1e5, d = 1e4, 0.1% non-zero)\n")
        out.append(
            f"nnz = {sparse['nnz']:,}; the dense matrix would take "
            f"{sparse['dense_bytes'] / 2**30:.1f} GiB. Wall time of fit (after a "
            "warm-up fit) and tracemalloc peak during fit, default parameters.\n"
        )
        out.append("| estimator | fit seconds | peak MB |")
        out.append("|---|---|---|")
        for k, v in sparse.items():
            if isinstance(v, dict):
                out.append(f"| {k} | {v['seconds']:.2f} | {v['peak_mb']:.0f} |")
    (RESULTS / f"multiclass{tag}.md").write_text("\n".join(out) + "\n")
    (RESULTS / f"multiclass{tag}_raw.json").write_text(
        json.dumps(
            {
                "summaries": summaries,
                "seeds": seeds,
                "sparse": sparse,
                "heldout": held,
                "inf_gap": gap,
            },
            default=str,
            indent=1,
        )
    )
    print("\n".join(out))


if __name__ == "__main__":
    main()
