"""BilevelRidge's two upper levels: bilevel (held-out loss) vs risk estimate.

``tuning="bilevel"`` (the default) follows the paper: a train/validation
split, two released halves, a penalty chosen on the corrected validation
loss, a final model on the pooled halves. ``bilevel_ridge_frontier.md``
shows that this design, not the outer loop, limits it: the halves' release
is noisier than one release of all rows, and the validation loss of half the
rows is a noisy guide. ``tuning="risk_estimate"`` needs neither: all rows
release their statistics once (the oracle's own mechanism, with 1% of the
budget for ``y^T y``), so the best penalty for its release is about the
oracle's, and the penalty minimizes Mallows' Cp of the released ridge path,
corrected for the privacy noise (:mod:`skdp.solvers.bilevel.ridge.risk`). It
is not the paper's algorithm, and it relies on a linear model with
homoscedastic noise, which a held-out loss does not; ``load_diabetes`` (real
data, 248 training rows) is the check on that.

Rows: the default; ``risk estimate`` (its signal test and margin as in the
default); ``risk estimate, no margin`` (``validation_margin=0``: Cp alone).
All on the same data, paired.

Run ``PYTHONPATH=. python -m benchmarks.bilevel_ridge.risk_estimate``
(about 5 min); writes ``results/bilevel_ridge_risk_estimate.md``.
"""

import time

import numpy as np
from sklearn.datasets import load_diabetes

from benchmarks._common import RESULTS
from benchmarks.bilevel_ridge.baselines import ssp_ridge  # noqa: E402
from benchmarks.bilevel_ridge.main import (  # noqa: E402
    GRID_UNITS,
    RISK_ESTIMATE,
    SNRS,
    excess,
    fit_bilevel,
    synthetic,
)
from skdp.privacy import gdp_mu  # noqa: E402

REPS = 40
DIABETES_REPS = 20
CELLS = [(snr, n) for snr in (*SNRS, "null") for n in (10**4, 10**5)]
VARIANTS = {
    "BilevelRidge (default)": {},
    "risk estimate": RISK_ESTIMATE,
    "risk estimate, no margin": {**RISK_ESTIMATE, "validation_margin": 0.0},
}
METHODS = tuple(VARIANTS)


def fit_variants(X, y, epsilon, delta, bounds, seed, score):
    """Every variant on the same data: ``{name: score}`` and the test's verdict."""
    out = {}
    for name, params in VARIANTS.items():
        model = fit_bilevel(X, y, epsilon, delta, bounds, seed, **params)
        out[name] = score((model.coef_, model.intercept_))
        if name == "risk estimate":
            out["found"] = model.signal_pvalue_ < model.signal_test_level
    return out


def oracle_rows(X, y, mu, rng, bounds, score):
    """The fixed-alpha rows of ``main.py`` (full-budget private fits)."""
    alphas = GRID_UNITS * bounds[0] ** 2
    return [score(ssp_ridge(X, y, [a], mu, rng, *bounds)[0]) for a in alphas]


def one_repetition(snr_name, n, seed, epsilon=1.0):
    snr = SNRS.get(snr_name, SNRS["low"])
    X, y, theta, bounds = synthetic(n, snr, np.random.default_rng(seed))
    if snr_name == "null":
        y, theta = y - X @ theta, np.zeros_like(theta)
    delta = n**-1.1

    def score(model):
        return excess(model, theta)

    rng = np.random.default_rng(seed + 10**6)
    out = {"oracle": oracle_rows(X, y, gdp_mu(epsilon, delta), rng, bounds, score)}
    # The fits' noise seed must differ from the data's (same stream otherwise).
    out.update(fit_variants(X, y, epsilon, delta, bounds, seed + 10**7, score))
    return out


def diabetes_repetition(rep, epsilon):
    X, y = load_diabetes(return_X_y=True)
    bounds = (0.35, 350.0)  # as in main.py
    rng = np.random.default_rng(500 + rep)
    perm = rng.permutation(len(y))
    cut = int(0.75 * len(y))
    tr, te = perm[:cut], perm[cut:]
    delta = cut**-1.1

    def mse(model):
        coef, intercept = model
        return float(np.mean((X[te] @ coef + intercept - y[te]) ** 2))

    mu = gdp_mu(epsilon, delta)
    out = {"oracle": oracle_rows(X[tr], y[tr], mu, rng, bounds, mse)}
    out.update(fit_variants(X[tr], y[tr], epsilon, delta, bounds, rep, mse))
    return out


def summarize(results, n_boot=2000, seed=0):
    """Mean score over the oracle's, and a 90% paired bootstrap interval of
    risk estimate / BilevelRidge (repetitions resampled as units)."""
    oracle = np.array([r["oracle"] for r in results])
    row = {
        m: np.mean([r[m] for r in results]) / oracle.mean(axis=0).min()
        for m in METHODS
        if m in results[0]
    }
    a = np.array([r["risk estimate"] for r in results])
    b = np.array([r["BilevelRidge (default)"] for r in results])
    rng = np.random.default_rng(seed)
    boots = []
    for _ in range(n_boot):
        idx = rng.integers(0, a.size, a.size)
        boots.append(a[idx].mean() / b[idx].mean())
    row["ratio"] = (a.mean() / b.mean(), *np.percentile(boots, (5, 95)))
    return row


def _fmt_ratio(r):
    return f"{r[0]:.2f} [{r[1]:.2f}, {r[2]:.2f}]"


def main():
    t0 = time.time()
    lines = []
    synth = {}
    for snr, n in CELLS:
        results = [one_repetition(snr, n, 7000 + rep) for rep in range(REPS)]
        synth[snr, n] = (summarize(results), np.mean([r["found"] for r in results]))
        print(snr, n, f"{time.time() - t0:.0f}s", flush=True)
    diab = {}
    for eps in (1.0, 5.0):
        results = [diabetes_repetition(rep, eps) for rep in range(DIABETES_REPS)]
        diab[eps] = summarize(results)
    minutes = (time.time() - t0) / 60
    header = ["cell", *METHODS, "risk estimate / BilevelRidge", "signal found"]
    lines += [
        "# BilevelRidge: bilevel tuning against the risk estimate (no split)",
        "",
        f"Generated by `python -m benchmarks.bilevel_ridge.risk_estimate` in {minutes:.1f} min.",
        f"Synthetic data of `bilevel_ridge.md` (d = 20), epsilon = 1, {REPS} repetitions per",
        "cell; each entry is a mean excess risk over the oracle's (the best",
        "fixed-alpha row of full-budget private fits, in hindsight).",
        "`risk estimate / BilevelRidge`: ratio of mean excess risks, paired,",
        "with a 90% bootstrap interval. `risk estimate` is",
        '`BilevelRidge(tuning="risk_estimate")`: noise-corrected Mallows\' Cp',
        "on one release of all rows, with the default's signal test and",
        "margin; `no margin` sets `validation_margin=0`. Not the paper's",
        "algorithm (see the script's docstring). `null`: no signal (the",
        "oracle is the constant model's neighbourhood).",
        "",
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
    ]
    for (snr, n), (row, found) in synth.items():
        cells = [f"{row[m]:.2f}" for m in METHODS]
        lines.append(
            f"| {snr} {n:.0e} | "
            + " | ".join(cells)
            + f" | {_fmt_ratio(row['ratio'])} | {found:.2f} |"
        )
    signal = [synth[c][0] for c in CELLS if c[0] != "null"]
    for name, agg in (("mean", np.mean), ("max", np.max)):
        cells = [f"{agg([r[m] for r in signal]):.2f}" for m in METHODS]
        lines.append(f"| {name} (cells with signal) | " + " | ".join(cells) + " | | |")
    lines += [
        "",
        f"## load_diabetes (test MSE over the oracle's, {DIABETES_REPS} random 75/25 splits)",
        "",
        "| epsilon | " + " | ".join(METHODS) + " | risk estimate / BilevelRidge |",
        "|---|---|---|---|---|",
    ]
    for eps, row in diab.items():
        cells = [f"{row[m]:.2f}" for m in METHODS]
        lines.append(
            f"| {eps:g} | " + " | ".join(cells) + f" | {_fmt_ratio(row['ratio'])} |"
        )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "bilevel_ridge_risk_estimate.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
