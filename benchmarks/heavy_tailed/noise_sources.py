"""HeavyTailedLinearRegression at large n: what each noise source costs.

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.heavy_tailed.noise_sources
[--seeds 8] [--n 100000] [--d 20]``. Writes
``benchmarks/results/heavy_tailed_noise_sources.md``.

The default fit (``epsilon = 1``, ``delta = min(1e-6, 1/n**2)``) on the
Student-t(3) task of ``benchmarks/bilevel_ridge/vs_baselines.py``, and the
same fit with the Gaussian noise of one group of releases multiplied by 0
(the random stream is unchanged, so everything else is the same draw): the
gradient sums (``gd``), the counts of the clip and scale quantiles
(``bounds``), the intercept correction's sum (``intercept``), or all of
them. A diagnostic, not a private run: it shows where the gap to the
noiseless fit comes from. Cells: median excess risk and the median over
seeds of the paired ratio to the default fit.
"""

import argparse
import time

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.vs_baselines import heavy_task
from skdp import HeavyTailedLinearRegression
from skdp._testing.internals import heavy_tailed_gd_module as gd
from skdp._testing.internals import heavy_tailed_intercept_module as intercept
from skdp._testing.internals import norm_bound_module as bounds  # count noise

MODULES = {"gd": gd, "bounds": bounds, "intercept": intercept}
VARIANTS = {
    "default": (),
    "no gradient noise": ("gd",),
    "no count noise": ("bounds",),
    "no intercept-sum noise": ("intercept",),
    "no noise at all": ("gd", "bounds", "intercept"),
}


def fit(X, y, seed, zero):
    saved = {}
    for key in zero:
        mod = MODULES[key]
        saved[key] = mod.gaussian_noise

        def silent(rng, std, *args, _orig=saved[key], **kwargs):
            return 0.0 * _orig(rng, std, *args, **kwargs)

        mod.gaussian_noise = silent
    try:
        delta = benchmark_delta(X.shape[0])
        return HeavyTailedLinearRegression(
            epsilon=1.0, delta=delta, random_state=seed
        ).fit(X, y)
    finally:
        for key, orig in saved.items():
            MODULES[key].gaussian_noise = orig


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=8)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=20)
    args = parser.parse_args()
    t0 = time.perf_counter()
    draw = heavy_task(args.n, args.d)[0]
    scores = {}
    for seed in range(args.seeds):
        X, y, score = draw(seed)
        for name, zero in VARIANTS.items():
            m = fit(X, y, seed, zero)
            scores.setdefault(name, []).append(score((m.coef_, m.intercept_)))
    base = np.array(scores["default"])
    L = ["# HeavyTailedLinearRegression: what each noise source costs", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append(
        f"Student-t(3), n = {args.n}, d = {args.d}, {args.seeds} seeds, "
        f"{(time.perf_counter() - t0) / 60:.1f} min."
    )
    L.append("")
    L.append("| variant | median excess risk | paired / default |")
    L.append("|---|---|---|")
    for name, v in scores.items():
        v = np.array(v)
        L.append(f"| {name} | {np.median(v):.4g} | {np.median(v / base):.3f} |")
    text = "\n".join(L) + "\n"
    (RESULTS / "heavy_tailed_noise_sources.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
