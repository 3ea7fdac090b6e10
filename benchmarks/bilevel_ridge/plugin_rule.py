"""Study: the plug-in penalty rule of ``BilevelRidge(tuning="risk_estimate")``.

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.plugin_rule`` from the
repository root with ``PYTHONPATH=.`` (``--seeds`` repetitions, default 5;
``--epsilon``, default 1). Writes
``benchmarks/results/bilevel_ridge_plugin_rule.md`` (``--heldout``: tasks the
rule was not chosen on, ``..._heldout.md``; another epsilon adds ``_eps<e>``).

The gd inner solver (:func:`skdp.solvers.bilevel.ridge.gd.ridge_gd`, no
public bounds, ``delta = min(1e-6, 1 / n**2)``) on the tasks of
``benchmarks/bilevel_ridge/vs_baselines.py``, with the options of
:func:`~skdp.solvers.bilevel.ridge.gd.plugin_penalty` switched one by one:

- ``round2``: the previous rule (no option);
- ``curv``: ``curvature_correction`` (penalty times ``1 - p``);
- ``curv+stat``: and ``statistical``;
- ``curv+stat+floor``: and ``signal_floor=SIGNAL_FLOOR`` (the default,
  :data:`~skdp.solvers.bilevel.ridge.gd.PLUGIN_RULE`).

Also the hindsight curve (the same solver at fixed penalties, units of
``s**2``), whose minimum is the "best penalty in hindsight". Every variant is
a post-processing rule of the same releases: same privacy, same seed. The
intercept release of round 3 (``intercept_share``) is off here, to isolate the
penalty rule.
"""

import argparse
import time

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.vs_baselines import gaussian_task, heavy_task, skewed_task
from skdp._testing.internals import ridge_gd_module as G
from skdp.privacy import gdp_mu

VARIANTS = {
    "round2": {},
    "curv": dict(curvature_correction=True),
    "curv+stat": dict(curvature_correction=True, statistical=True),
    "curv+stat+floor": dict(G.PLUGIN_RULE),
}
PENALTIES = (0.0, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0, 30.0)


def tasks():
    out = {}
    for n in (1000, 10_000, 100_000):
        for name, snr in (("low", 1e-3), ("medium", 0.1), ("high", 10.0)):
            out[f"{name} SNR, n={n:.0e}"] = gaussian_task(n, snr)
    for n in (1000, 10_000):
        out[f"skewed noise, medium SNR, n={n:.0e}"] = skewed_task(n)
    out["heavy-tailed, n=2000, d=10"] = heavy_task(2000, 10)
    out["heavy-tailed, n=1e+05, d=20"] = heavy_task(100_000, 20)
    return out


def heldout_tasks():
    """Tasks the rule was not chosen on: d = 10, other n and SNRs."""
    out = {}
    for n in (3000, 30_000):
        for snr in (0.01, 1.0):
            out[f"held-out d=10, SNR {snr:g}, n={n}"] = gaussian_task(n, snr, d=10)
    out["held-out skewed, d=10, SNR 1, n=3000"] = skewed_task(3000, snr=1.0, d=10)
    out["held-out heavy-tailed, n=20000, d=5"] = heavy_task(20_000, 5)
    return out


def run(draw, eps, seeds):
    scores = {k: [] for k in VARIANTS}
    curve = {p: [] for p in PENALTIES}
    orig = G.PLUGIN_RULE
    try:
        for seed in range(seeds):
            X, y, score = draw(seed)
            n, d = X.shape
            mu = gdp_mu(eps, benchmark_delta(n))
            plan = G.plan_ridge_gd(
                mu, n, d, tuning="risk_estimate", intercept_share=0.0
            )
            for name, opts in VARIANTS.items():
                G.PLUGIN_RULE = opts  # ridge_gd reads the module constant
                r = G.ridge_gd(X, y, plan, np.random.default_rng(seed))
                scores[name].append(score((r.coef, r.intercept)))
            G.PLUGIN_RULE = orig
            for pen in PENALTIES:
                plan = G.plan_ridge_gd(mu, n, d, penalties=(pen,), intercept_share=0.0)
                r = G.ridge_gd(X, y, plan, np.random.default_rng(seed))
                curve[pen].append(score((r.coef, r.intercept)))
    finally:
        G.PLUGIN_RULE = orig
    med = lambda v: float(np.median(v))  # noqa: E731
    return {k: med(v) for k, v in scores.items()}, {p: med(v) for p, v in curve.items()}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument(
        "--heldout", action="store_true", help="tasks the rule was not chosen on"
    )
    args = parser.parse_args()
    grid = heldout_tasks() if args.heldout else tasks()
    suffix = "_heldout" if args.heldout else ""
    if args.epsilon != 1.0:
        suffix += f"_eps{args.epsilon:g}"
    t0 = time.perf_counter()
    L = [
        "# Plug-in penalty rule of BilevelRidge (gd, risk_estimate)",
        "",
        "",
        "Median excess risk; in brackets the ratio to `round2`; `hindsight` is "
        "the best of the fixed-penalty runs (penalties "
        f"{', '.join(f'{p:g}' for p in PENALTIES)} in units of s^2) and `/ hs` "
        "the default's ratio to it.",
        "",
        "| task | " + " | ".join(VARIANTS) + " | hindsight (penalty) | / hs |",
        "|---" * (len(VARIANTS) + 3) + "|",
    ]
    for tname, (draw, _, _) in grid.items():
        scores, curve = run(draw, args.epsilon, args.seeds)
        base = scores["round2"]
        cells = [f"{v:.4g} ({v / base:.2f})" for v in scores.values()]
        best = min(curve, key=curve.get)
        last = scores["curv+stat+floor"]
        L.append(
            f"| {tname} | "
            + " | ".join(cells)
            + f" | {curve[best]:.4g} ({best:g}) | {last / curve[best]:.2f} |"
        )
        print(L[-1], flush=True)
    L[2] = (
        f"Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.plugin_rule "
        f"--seeds {args.seeds} --epsilon {args.epsilon:g}"
        f"{' --heldout' if args.heldout else ''}` in "
        f"{(time.perf_counter() - t0) / 60:.1f} min on the shared 2-core machine; "
        f"epsilon = {args.epsilon:g}, delta = min(1e-6, 1/n^2), no public bounds, "
        "the same seed for every variant (they are post-processing of the same "
        "releases)."
    )
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_plugin_rule{suffix}.md").write_text("\n".join(L) + "\n")


if __name__ == "__main__":
    main()
