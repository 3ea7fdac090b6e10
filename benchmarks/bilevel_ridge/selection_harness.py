"""Harness: post-processing variants of BilevelRidge's selection on shared releases.

Used to choose the defaults (noise correlation, validation margin, final
penalty factor). For each repetition the two halves' statistics are released
once per noise correlation, and every selection rule (minimizer over a fine
log grid of the corrected two-fold objective plus ``m`` noise standard
deviations; ``rprop`` = the estimator's outer loop) and final-penalty factor
is scored on that same release, against the fixed-alpha oracle of
``main.py``. ``hindsight`` is the best penalty for the pooled
statistics in hindsight (the headroom of any selection). Run
``PYTHONPATH=. python -m benchmarks.bilevel_ridge.selection_harness A 24``
(seed sets A, B, C); results are pickled to
``benchmarks/results/bilevel_ridge_selection_harness_<set>.pkl``.
"""

import math
import sys
import time

import numpy as np

from benchmarks._common import RESULTS
from benchmarks.bilevel_ridge.baselines import ssp_ridge  # noqa: E402
from benchmarks.bilevel_ridge.main import GRID_UNITS, SNRS, excess, synthetic  # noqa: E402
from skdp._testing.internals import (  # noqa: E402
    BilevelRidgeSettings,
    ValidationNoise,
    ValidationObjective,
    bilevel_outer_loop,
    default_penalty,
    exact_statistics,
    gdp_budget,
    plan_bilevel_ridge,
    release_statistics,
    validation_objective,
)
from skdp.privacy import gdp_mu  # noqa: E402
from skdp.utils import clip_rows, clip_targets  # noqa: E402

EPS = 1.0
RHOS = (-0.5, -0.6, -0.7)
REF = np.logspace(-3, 7, 201)


def rprop(objective, s, margin):
    objective.margin = margin

    def penalty(omega):
        return default_penalty(s, omega)

    def solve(u, t):
        a = math.exp(u[0])
        return objective.models(a), objective.penalized_models(a, penalty)

    def hyper(u, low, pen):
        g = objective.hypergradient(math.exp(u[0]), penalty, low, pen)
        return np.array([g + objective.correction_gradient(u[0])])

    lo, hi = math.log(s.alpha_min), math.log(s.alpha_max)
    res = bilevel_outer_loop(
        np.array([math.log(s.start)]),
        solve,
        hyper,
        lambda u: np.clip(u, lo, hi),
        n_iter=s.n_iter,
        step_size=s.step_size,
        step_rule="rprop",
    )
    return float(np.exp(res.x[0]))


def one_rep(n, snr, data_seed, noise_seed):
    X, y, theta, bounds = synthetic(n, snr, np.random.default_rng(data_seed))
    fn, tb = bounds
    a2 = fn**2
    delta = n**-1.1
    out = {}
    # Oracle rows: each alpha its own full-budget SSP fit on all rows.
    rng_o = np.random.default_rng(noise_seed + 10**6)
    mu = gdp_mu(EPS, delta)
    out["fixed"] = np.array(
        [
            excess(ssp_ridge(X, y, [a * a2], mu, rng_o, fn, tb)[0], theta)
            for a in GRID_UNITS
        ]
    )
    Xn = clip_rows(X, fn) / fn
    yn = clip_targets(y, tb) / tb
    n_val = int(round(0.5 * n))
    n_tr = n - n_val
    perm = np.random.default_rng(noise_seed + 7).permutation(n)
    va, tr = perm[:n_val], perm[n_val:]
    ex_tr = exact_statistics(Xn[tr], yn[tr], 1.0)
    ex_va = exact_statistics(Xn[va], yn[va], 1.0)
    # Non-private target: minimiser of the two-fold objective on this split.
    clean = ValidationObjective(
        [ex_tr.centered(), ex_va.centered()],
        [(0, 1, n_val / n), (1, 0, n_tr / n)],
        ValidationNoise(),
    )
    target = REF[int(np.argmin([clean.value(a) for a in REF]))]
    out["target"] = target

    def score(stats, alpha):
        coef, icpt = stats.centered().solve(alpha)
        return excess((coef * tb / fn, icpt * tb), theta)

    mu_b = gdp_budget(EPS, delta)
    for rho in RHOS:
        s = BilevelRidgeSettings(alpha_min=1e-3, alpha_max=10.0 * n_tr, correlation=rho)
        plan = plan_bilevel_ridge(s, n_tr, n_val, X.shape[1], mu_b)
        rng = np.random.default_rng(noise_seed * 31 + int(-rho * 100))
        raw_tr, raw_va = release_statistics(
            [ex_tr, ex_va],
            gram_std=plan.stds["gram"],
            moment_std=plan.stds["moment"],
            correlation=rho,
            rng=rng,
        )
        obj = validation_objective(raw_tr, raw_va, plan)
        pooled = raw_tr + raw_va
        grid = np.logspace(math.log10(s.alpha_min), math.log10(s.alpha_max), 161)
        vals = np.array([obj.value(a) for a in grid])
        bs = np.array([obj.noise_bias_and_sd(a) for a in grid])
        corr = vals - bs[:, 0]
        # hindsight best alpha for the pooled statistics (headroom)
        pooled_scores = np.array([score(pooled, a) for a in grid])
        out[(rho, "hindsight")] = (pooled_scores.min(), grid[pooled_scores.argmin()])
        sel = {}
        for m in (1.0, 1.5, 2.0):
            sel[f"grid m{m:g}"] = grid[int(np.argmin(corr + m * bs[:, 1]))]
        for k, a in sel.items():
            for cname, c in (
                ("x1", 1.0),
                ("x1+rho", 1.0 + rho),
                ("x0.5", 0.5),
            ):
                out[(rho, k, cname)] = (score(pooled, a * c), a)
    return out


def main(seed_set, reps, ns=(10**4, 10**5)):
    results = {}
    t0 = time.time()
    for snr_name, snr in SNRS.items():
        for n in ns:
            rows = []
            for rep in range(reps):
                if seed_set == "A":
                    ds, ns_ = 1000 * rep + n % 997, rep
                elif seed_set == "B":
                    ds, ns_ = 424242 + 17 * rep, 5000 + rep
                else:
                    ds, ns_ = 99991 + 13 * rep, 80000 + rep
                rows.append(one_rep(n, snr, ds, ns_))
            results[(snr_name, n)] = rows
            print(f"{snr_name} {n} done {time.time() - t0:.0f}s", flush=True)
    return results


if __name__ == "__main__":
    import pickle

    seed_set, reps = sys.argv[1], int(sys.argv[2])
    res = main(seed_set, reps)
    with open(RESULTS / f"bilevel_ridge_selection_harness_{seed_set}.pkl", "wb") as f:
        pickle.dump(res, f)
