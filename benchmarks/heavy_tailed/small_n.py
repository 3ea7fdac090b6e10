"""HeavyTailedLinearRegression at n = 1e3: where the gap to DP-GD comes from.

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.heavy_tailed.small_n
[--seeds 20] [--epsilon 1]``. Writes
``benchmarks/results/heavy_tailed_small_n.md`` (``..._small_n_eps{E}.md``
for another epsilon).

The Gaussian n = 1e3 tasks of ``benchmarks/bilevel_ridge/vs_baselines.py``
(d = 20, medium and high SNR), where ``HeavyTailedLinearRegression()`` was
1.6x and 2.1x the hindsight-best fixed-clip DP-GD, and the small-n wins it
must keep (Student-t(3), n = 2000, d = 10; diabetes), and held-out tasks
not used to choose the rule. ``epsilon = 1`` (``--epsilon``), ``delta = min(1e-6,
1/n**2)``. Each variant changes one thing of the default fit (below n =
1e4: 30 steps, clipped fraction ``p = min(0.7, 6 z sqrt(d) / n)``, the
second half of the iterates averaged, and from ``p >= 0.5`` on a step that
may grow up to ``1 / (1 - p)`` times while the released gradients are above
their noise):

- ``no step growth (before)``: the constant step (the rule before the
  growth);
- ``no gradient noise`` / ``no count noise``: the Gaussian noise of the
  gradient sums, or of every count (feature scale, truncation level, target
  scale and median, clip levels), multiplied by 0 with the random stream
  unchanged (a diagnostic, not a private run: the same clipping and the same
  draw otherwise);
- ``T=10`` / ``T=100``: the steps of ``max_iter="auto"`` below n = 1e4
  (noise recalibrated by the plan);
- ``step x3``: the default step times 3;
- ``clip scale 20, cap .9``: the clipped-fraction rule ``min(0.9, 20 z
  sqrt(d) / n)`` (more clipping, less noise).

The hindsight-best fixed-clip DP-GD of ``benchmarks/_common/baselines.py``
runs in the same process on the same draws. Cells: median excess risk (test
MSE for diabetes), ratio of medians to the best fixed-clip DP-GD, and the
median over seeds of the paired ratio.
"""

import argparse
import time

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import (
    CLIPS,
    benchmark_delta,
    dp_gd_fixed_clip,
    tune_dp_gd_steps,
)
from benchmarks.bilevel_ridge.vs_baselines import (
    diabetes_task,
    gaussian_task,
    heavy_task,
)
from benchmarks.heavy_tailed.rule import skewed_task
from skdp import HeavyTailedLinearRegression
from skdp._testing.internals import QuantileTarget
from skdp._testing.internals import heavy_tailed_bounds_module as bounds
from skdp._testing.internals import heavy_tailed_estimator_module as ht
from skdp._testing.internals import heavy_tailed_gd_module as gd

#: name -> patches (zeroed noise modules, steps, step factor, clip target)
VARIANTS = {
    "default": {},
    "no step growth (before)": {"growth": False},
    "no gradient noise": {"zero": (gd,)},
    "no count noise": {"zero": (bounds,)},
    "T=10": {"steps": 10},
    "T=100": {"steps": 100},
    "step x3": {"stepf": 3.0},
    "clip scale 20, cap .9": {"target": QuantileTarget(scale=20.0, max_fraction=0.9)},
}

TASKS = {
    "Gaussian, medium SNR, n=1e3": lambda: gaussian_task(1000, 0.1),
    "Gaussian, high SNR, n=1e3": lambda: gaussian_task(1000, 10.0),
    "heavy-tailed t(3), n=2000, d=10": lambda: heavy_task(2000, 10),
    "diabetes (test MSE)": diabetes_task,
    "held out: Gaussian, low SNR, n=1e3": lambda: gaussian_task(1000, 1e-3),
    "held out: Gaussian, high SNR, n=3e3": lambda: gaussian_task(3000, 10.0),
    "held out: heavy-tailed t(3), n=1e3, d=20": lambda: heavy_task(1000, 20),
    "held out: skewed noise, n=1e3, d=8": lambda: skewed_task(1000),
}


def fit(
    X, y, delta, seed, zero=(), steps=None, stepf=1.0, target=None, growth=True, eps=1.0
):
    m = HeavyTailedLinearRegression(epsilon=eps, delta=delta, random_state=seed)
    if not growth:
        m._step_growth = lambda n, p: 1.0
    if stepf != 1.0:
        orig = type(m)._step
        m._step = lambda loss, p: orig(m, loss, p) * stepf
    saved = {mod: mod.gaussian_noise for mod in zero}
    for mod in zero:

        def silent(rng, std, *args, _orig=saved[mod], **kwargs):
            return 0.0 * _orig(rng, std, *args, **kwargs)

        mod.gaussian_noise = silent
    old = ht._DEFAULT_STEPS, ht.DEFAULT_TARGET
    ht._DEFAULT_STEPS = old[0] if steps is None else steps
    ht.DEFAULT_TARGET = old[1] if target is None else target
    try:
        return m.fit(X, y)
    finally:
        ht._DEFAULT_STEPS, ht.DEFAULT_TARGET = old
        for mod, orig in saved.items():
            mod.gaussian_noise = orig


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, default=1.0)
    args = parser.parse_args()
    eps = args.epsilon
    t0 = time.perf_counter()
    L = ["# HeavyTailedLinearRegression at n = 1e3: the gap to DP-GD", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    body = []
    for name, make in TASKS.items():
        draw = make()[0]
        Xr, yr, score_r = draw(99_999)
        steps = tune_dp_gd_steps((Xr, yr), eps, score_r)
        scores = {}
        for seed in range(args.seeds):
            X, y, score = draw(seed)
            delta = benchmark_delta(X.shape[0])
            for key, patch in VARIANTS.items():
                m = fit(X, y, delta, seed, eps=eps, **patch)
                scores.setdefault(key, []).append(score((m.coef_, m.intercept_)))
            rng = np.random.default_rng(10_000 + seed)
            for c in CLIPS:
                scores.setdefault(f"dpgd[{c:g}]", []).append(
                    score(dp_gd_fixed_clip(X, y, eps, delta, c, steps[c], rng))
                )
        med = {k: float(np.median(v)) for k, v in scores.items()}
        bc = min(CLIPS, key=lambda c: med[f"dpgd[{c:g}]"])
        base = np.array(scores[f"dpgd[{bc:g}]"])
        best = med[f"dpgd[{bc:g}]"]
        body += [f"## {name}", "", f"Best fixed clip: C = {bc:g}.", ""]
        body += ["| variant | median | / best DP-GD | paired / best DP-GD |"]
        body += ["|---|---|---|---|"]
        for k, v in scores.items():
            ratio = float(np.median(np.array(v) / base))
            body.append(f"| {k} | {med[k]:.4g} | {med[k] / best:.3f} | {ratio:.3f} |")
        body.append("")
        print("\n".join(body[-len(scores) - 6 :]), flush=True)
    L.append(
        f"{args.seeds} seeds per task, epsilon = {eps:g}, "
        f"{(time.perf_counter() - t0) / 60:.1f} min on the shared machine."
    )
    L.append("")
    text = "\n".join(L + body)
    suffix = "" if eps == 1.0 else f"_eps{eps:g}"
    (RESULTS / f"heavy_tailed_small_n{suffix}.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
