"""One private norm bound: noisy bisection (Gaussian) against the exponential mechanism.

Until issue 19's merge skdp had two private norm bounds:

- ``em``: the exponential-mechanism quantile on 2048 log-scale public cells
  of ``[1e-6, 1e6]`` at level 0.95 (lowered by
  ``skdp.privacy.reachable_quantile_level`` when ``n epsilon`` is small),
  pure ``epsilon``-DP (``MinimaxFairClassifier``'s and the
  sufficient-statistics ``BilevelRidge``'s private ``feature_norm`` /
  ``target_bound``); rebuilt here from ``skdp.privacy.private_quantile``,
  which stays (the private scalers' bound quantiles);
- ``bisect``: the heavy-tailed solvers' noisy bisection on counts, 10
  Gaussian counts over ``2**[-30, 30]``, exactly ``mu``-GDP, now
  ``skdp.privacy.private_norm_bound`` (level 0.95, lowered by the public
  rule ``1 - max(0.05, 4 z / n)``); ``bisect4`` multiplies a lowered
  level's bound by 4, as the heavy-tailed solvers' scales do (their scale
  sets later search ranges); ``bisect`` (``slack=1``, the default of
  ``private_norm_bound``) does not.

Both are run at the same zCDP cost (``epsilon = mu``: ``epsilon**2 / 2`` for
the pure step, ``mu**2 / 2`` for the Gaussian one) on the same values, in one
process, 200 draws each. Reported per value set and budget: the median and
90th percentile of ``|log2(bound / q95)|`` (``q95`` the exact 0.95 quantile)
and the median fraction of values above the bound (clipped).

The same zCDP cost is a different price in a plan: the pure step composes
with the plan's Gaussian steps through PLD, the Gaussian bound exactly in
GDP. The second table gives the GDP ``mu`` left for the rest of a plan
(larger: less noise) after each.

Usage::

    PYTHONPATH=. nice -n 10 python -m benchmarks.privacy.norm_bound \
        [--draws 200] [--audit-runs 2000]

Writes ``benchmarks/results/norm_bound_mechanisms.md``. The effect on fits
(before/after at the same seeds) is ``benchmarks/privacy/estimation_share_units.py``
(``--label gauss_before`` at the parent commit, ``--label gauss_after``).
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes

from benchmarks._common import RESULTS
from benchmarks._common.fair_data import adult
from skdp._testing.audit_configs import NORM_BOUND_AUDIT
from skdp._testing.internals import scaled_noise
from skdp.privacy import (
    Budget,
    ComposedDpEvent,
    PureDpEvent,
    certify_epsilon,
    gdp_budget,
    noisy_histogram_event,
    private_norm_bound,
    private_norm_bound_event,
    private_quantile,
    reachable_quantile_level,
)
from skdp.privacy.audit import epsilon_lower_bound

OUT = os.path.join(RESULTS, "norm_bound_mechanisms.md")
BUDGETS = (0.02, 0.05, 0.1, 0.3, 1.0)


def em_norm_bound(values, epsilon, rng):
    """The former exponential-mechanism norm bound (same constants)."""
    level = reachable_quantile_level(len(values), epsilon, 0.95)
    return private_quantile(
        values, level, epsilon, bounds=(1e-6, 1e6), rng=rng, log_scale=True
    )


def value_sets():
    rng = np.random.default_rng(0)
    Xa = adult()[0]
    Xd, yd = load_diabetes(return_X_y=True)
    sets = {
        "Adult row norms (n=32561, d=112)": np.linalg.norm(Xa, axis=1),
        "Adult row norms, first 2000": np.linalg.norm(Xa[:2000], axis=1),
        "diabetes row norms (n=442)": np.linalg.norm(Xd, axis=1),
        "diabetes |y| (n=442)": np.abs(yd),
    }
    for n in (1000, 10_000):
        sets[f"N(0, I_20) row norms (n={n})"] = np.linalg.norm(
            rng.normal(size=(n, 20)), axis=1
        )
        sets[f"|t_2| (n={n})"] = np.abs(rng.standard_t(2, size=n))
    return sets


def compare(values, budget, draws):
    q = np.quantile(values, 0.95)
    out = {}
    for name in ("em", "bisect4", "bisect"):
        err, clipped = [], []
        for s in range(draws):
            rng = np.random.default_rng(10_000 + s)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if name == "em":
                    b = em_norm_bound(values, budget, rng)
                elif name == "bisect4":
                    b = private_norm_bound(values, budget, rng=rng, slack=4.0)
                else:
                    b = private_norm_bound(values, budget, rng=rng)
            err.append(abs(np.log2(b / q)))
            clipped.append(np.mean(values > b))
        out[name] = (np.median(err), np.quantile(err, 0.9), np.median(clipped))
    return out


def rest_mu(eps, delta, share=0.1, n_estimates=2):
    """GDP ``mu`` left for a plan's Gaussian steps after its estimates.

    The estimates: the norm bound (pure or Gaussian, same zCDP cost) and a
    Gaussian noisy histogram, each ``share / n_estimates`` of ``mu**2`` (as
    ``MinimaxFairClassifier`` with the feature norm and the group priors
    estimated).
    """
    est = Budget.from_target(eps, delta, margin=False).share(share, n_estimates)
    hist = noisy_histogram_event(est.noise_multiplier())
    out = []
    for bound in (PureDpEvent(est.mu), private_norm_bound_event(est.mu)):
        out.append(gdp_budget(eps, delta, ComposedDpEvent([bound, hist])))
    return out


def audit(n_runs, factor):
    """Canary audit of private_norm_bound (``NORM_BOUND_AUDIT``): empirical
    epsilon lower bound with the threshold chosen on the first half."""
    cfg = NORM_BOUND_AUDIT
    out = np.full(cfg["n"], cfg["low"])
    out[cfg["n_low"] :] = cfg["high"]
    inn = out.copy()
    inn[0] = cfg["canary"]
    with scaled_noise(factor):
        s_out, s_in = (
            np.log2(
                [
                    private_norm_bound(v, cfg["mu"], rng=np.random.default_rng(s))
                    for s in range(n_runs)
                ]
            )
            for v in (out, inn)
        )
    half = n_runs // 2
    cuts = np.unique(np.concatenate([s_out[:half], s_in[:half]]))
    best = max(
        (epsilon_lower_bound(s_out[:half], s_in[:half], t, d, cfg["delta"]), t, d)
        for t in cuts
        for d in (1, -1)
    )
    return epsilon_lower_bound(
        s_out[half:], s_in[half:], best[1], best[2], cfg["delta"]
    )


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=200)
    parser.add_argument("--audit-runs", type=int, default=2000)
    args = parser.parse_args()
    t0 = time.time()
    lines = [
        "# One private norm bound: noisy bisection against the exponential mechanism",
        "",
        "Command: `python -m benchmarks.privacy.norm_bound --draws "
        f"{args.draws} --audit-runs {args.audit_runs}` "
        "(see the script's docstring). Budget = `epsilon` of `em` = `mu` of "
        "`bisect` (the same zCDP cost). `err`: `|log2(bound / q95)|` (median, "
        "90th percentile over draws); `clip`: median fraction of values above "
        "the bound (the exact 0.95 quantile clips 0.05).",
        "",
        "| values | budget | em err med | em err p90 | em clip | bisect4 err med "
        "| bisect4 err p90 | bisect4 clip | bisect err med | bisect err p90 "
        "| bisect clip |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for label, values in value_sets().items():
        for budget in BUDGETS:
            r = compare(values, budget, args.draws)
            cells = [f"{x:.3f}" for k in r for x in r[k]]
            lines.append(f"| {label} | {budget:g} | " + " | ".join(cells) + " |")
            print(lines[-1], flush=True)
    lines += [
        "",
        "## The plan's price of each event",
        "",
        "GDP `mu` left for a plan's Gaussian steps (`skdp.privacy.gdp_budget`) "
        "after its estimates: the norm bound, pure (`em`) or Gaussian "
        "(`bisect`), and a Gaussian noisy histogram, each half of "
        "`estimation_share=0.1` of `mu**2` (`MinimaxFairClassifier` with the "
        "feature norm and the group priors estimated), delta=1e-6. The "
        "steps' noise multipliers scale as `1 / mu`.",
        "",
        "| epsilon | em | bisect | bisect / em |",
        "|---|---|---|---|",
    ]
    for eps in (0.5, 1.0, 2.0, 5.0):
        old, new = rest_mu(eps, 1e-6)
        lines.append(f"| {eps:g} | {old:.5g} | {new:.5g} | {new / old:.4f} |")
        print(lines[-1], flush=True)
    cfg = NORM_BOUND_AUDIT
    claimed = certify_epsilon(private_norm_bound_event(cfg["mu"]), cfg["delta"])
    lines += [
        "",
        "## Canary audit",
        "",
        f"`private_norm_bound` at mu={cfg['mu']} (claimed epsilon {claimed:.3f} at "
        f"delta={cfg['delta']:g}) on the configuration "
        "`skdp._testing.audit_configs.NORM_BOUND_AUDIT` (the canary moves the "
        "first count from just above its target to just below it), "
        f"{2 * args.audit_runs} draws per dataset; empirical epsilon lower "
        "bound (95%), threshold chosen on the first half of the draws. A noise "
        "factor below 1 is the negative control.",
        "",
        "| noise factor | lower bound | claimed | flagged |",
        "|---|---|---|---|",
    ]
    for factor in (1.0, 0.25, 0.1):
        lb = audit(2 * args.audit_runs, factor)
        lines.append(f"| {factor:g} | {lb:.3f} | {claimed:.3f} | {lb > claimed} |")
        print(lines[-1], flush=True)
    lines += ["", f"Run time: {time.time() - t0:.0f} s.", ""]
    os.makedirs(RESULTS, exist_ok=True)
    with open(OUT, "w") as fh:
        fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
