"""Probe: rules for BilevelRidge at small n (issue 21, round 9).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.small_n_rules`` from the
repository root with ``PYTHONPATH=.`` (``--seeds``, ``--epsilon``,
``--cells`` substrings of the task names, ``--variants``). For ``gd_risk``
of ``benchmarks/bilevel_ridge/vs_baselines.py`` (same data, seeds, bounds and
delta) each variant patches one rule of the gd solver and is scored paired
(same data and seeds) against the default: median, mean and 90th percentile
of the excess risk (test MSE on diabetes), and the geometric mean of the
per-seed ratios with its standard error (log scale). Variants:

- ``default``: the current estimator (round 9's clip rule where the
  curvature release is planned: :func:`high_noise_clip_rule` of
  ``skdp.solvers.bilevel.ridge.gd``, clipped-fraction cap 0.75 and clip
  searches at 25 and 50 of the 100 steps).
- ``old``: the rule before round 9 (the default at 81b2a7b: cap 0.7,
  searches at steps 0, 1, 3, 7, 15, 31, 63); ``old+<variant>`` applies a
  variant to it. The variants below were measured on ``old``.
- ``avg25``: the first (unpenalized) stage averages its iterates from a
  quarter of its steps, not its second half (idea 3, tail averaging).
- ``first70``: 70 of the 100 steps in the first stage (averaging its second
  half), 30 in the penalized one.
- ``js``: no hard zero-model switch: the plug-in penalty's signal estimate
  is ``||w||**2 - d v`` floored at the positive-part James-Stein share
  ``max(0, 1 - SIGNAL_KAPPA / r)`` of ``||w||**2`` (idea 1; a continuous
  shrinkage driven by released quantities).
- ``smooth``: the shrinkage ``||theta||**2 / (||theta||**2 + d v)`` averaged
  over a log-normal error of the noise estimate (sd 0.48, the measured
  log-sd of the plug-in estimate; idea 1, posterior-mean style).
- ``est05``: ``estimation_share=0.05`` (half the clip-level budget: more
  for the gradients).
- ``clip90``: at most 90% of the per-sample gradients clipped in every
  plan, as the hindsight-best fixed-clip DP-GD clips; ``clip=<cap>`` any
  cap. At n = 1e3 a cap of 0.8 or more makes the clip search unreliable
  (:func:`~skdp.solvers.heavy_tailed.bounds.quantile_reliable`): no search,
  the fixed fallback level.
- ``key=value`` parts joined by ``+`` (see :func:`_variant`).

Writes ``benchmarks/results/bilevel_ridge_small_n_rules<suffix>.md``.
"""

import argparse
import math
import time
import warnings
from contextlib import contextmanager
from dataclasses import replace

import numpy as np
from scipy.stats import norm

from benchmarks._common import RESULTS, head_commit
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.vs_baselines import (
    diabetes_task,
    gaussian_task,
    skewed_task,
)
from benchmarks.bilevel_ridge.vs_baselines import tasks as benchmark_tasks
from skdp import BilevelRidge
from skdp._testing.internals import bilevel_ridge_gd_defaults_module as B
from skdp._testing.internals import heavy_tailed_gd_module as G
from skdp._testing.internals import ridge_gd_module as M

CELLS = ("low SNR, n=1e+03", "medium SNR, n=1e+03")
#: measured log-sd of the plug-in noise estimate (issue 21, round 8)
LOG_SD = 0.48


@contextmanager
def _patched(module, **values):
    old = {k: getattr(module, k) for k in values}
    for k, v in values.items():
        setattr(module, k, v)
    try:
        yield
    finally:
        for k, v in old.items():
            setattr(module, k, v)


def _plan_wrapper(edit):
    orig = B.plan_ridge_gd

    def plan(*a, **k):
        return edit(orig(*a, **k))

    return plan


def _avg25(plan):
    if plan.tuning != "risk_estimate":
        return plan
    (m1, _), second = plan.stages
    return replace(plan, stages=((m1, m1 - m1 // 4), second))


def _first70(plan):
    if plan.tuning != "risk_estimate":
        return plan
    T = sum(m for m, _ in plan.stages)
    m1 = int(round(0.7 * T))
    return replace(plan, stages=((m1, m1 - m1 // 2), (T - m1, T - m1)))


def _clip_cap(cap):
    def plan(*a, **k):
        k["clip_target"] = replace(M.CLIP_TARGET, max_fraction=cap)
        return _ORIG_PLAN(*a, **k)

    return plan


_ORIG_PLAN = B.plan_ridge_gd


def _shrink_rule(kind):
    """A plugin_penalty whose signal estimate is a continuous function of r."""
    orig = M.plugin_penalty

    def factory(*a, **k):
        # r from the rule itself at kappa 0 and 1 (no floor, no cap)
        probes = [
            orig(
                *a,
                **dict(k, released_kappa=kap, released_floor=0.0, max_penalty=math.inf),
            )
            for kap in (0.0, 1.0)
        ]
        base = orig(*a, **k)

        def rule(coefs, clips, s, windows=None, curvature=None):
            if curvature is None:
                return base(coefs, clips, s, windows, curvature)
            p0, p1 = (g(coefs, clips, s, windows, curvature) for g in probes)
            # p0 = g / r with g = curvature factor (h / s**2)
            g = (curvature / (s * s)) if k.get("curvature_correction") else 1.0
            if not (np.isfinite(p0) and p0 > 0):
                return 0.0
            r = g / p0
            if kind == "js":
                f = max(0.0, 1.0 - M.SIGNAL_KAPPA / r)
            else:  # smooth: E over a log-normal error of the noise estimate
                e = np.exp(LOG_SD * norm.ppf((np.arange(64) + 0.5) / 64))
                sig = np.maximum(r - e, 0.0)
                f = float(np.mean(sig / (sig + e)))
            if not f > 0:
                return float(M.MAX_PENALTY)
            # shrinkage f = 1 / (1 + pen / g): pen = g (1 / f - 1)
            return float(min(M.MAX_PENALTY, g * (1.0 / f - 1.0)))

        return rule

    return factory


VARIANTS = {
    "default": (dict(), dict(), dict()),
    "avg25": (dict(), dict(plan_ridge_gd=_plan_wrapper(_avg25)), dict()),
    "first70": (dict(), dict(plan_ridge_gd=_plan_wrapper(_first70)), dict()),
    "js": (dict(plugin_penalty=_shrink_rule("js")), dict(), dict()),
    "smooth": (dict(plugin_penalty=_shrink_rule("smooth")), dict(), dict()),
    "est05": (dict(), dict(), dict(estimation_share=0.05)),
    "clip90": (dict(), dict(plan_ridge_gd=_clip_cap(0.9)), dict()),
    "old": (dict(HIGH_NOISE_MAX_CLIPPED=None, HIGH_NOISE_CHECKPOINTS=None), {}, {}),
}


def _variant(name):
    """A named variant, or ``key=value`` parts joined by ``+``.

    ``clip=<cap>`` (every plan), ``cap=<HIGH_NOISE_MAX_CLIPPED>|none``,
    ``hnckpt=0.25/0.5|none`` (``HIGH_NOISE_CHECKPOINTS``),
    ``kappa=<SIGNAL_KAPPA>``, ``rule=js|smooth``, ``ckpt=0/31`` (the
    clip-search checkpoints of every plan, ``/``-separated).
    """
    if name in VARIANTS:
        return VARIANTS[name]
    m_patch, b_patch, g_patch, params = {}, {}, {}, {}
    for part in name.split("+"):
        if part in VARIANTS:  # a named variant's patches
            m, b, p = VARIANTS[part]
            m_patch.update(m)
            b_patch.update(b)
            params.update(p)
            continue
        key, value = part.split("=")
        if key == "clip":
            b_patch["plan_ridge_gd"] = _clip_cap(float(value))
        elif key == "cap":
            cap = None if value == "none" else float(value)
            m_patch["HIGH_NOISE_MAX_CLIPPED"] = cap
        elif key == "hnckpt":
            fr = None if value == "none" else tuple(float(f) for f in value.split("/"))
            m_patch["HIGH_NOISE_CHECKPOINTS"] = fr
        elif key == "ckpt":
            steps = tuple(int(t) for t in value.split("/"))
            g_patch["checkpoint_schedule"] = lambda n_steps, steps=steps: steps
        elif key == "kappa":
            m_patch["SIGNAL_KAPPA"] = float(value)
        elif key == "rule":
            m_patch["plugin_penalty"] = _shrink_rule(value)
        else:
            raise ValueError(part)
    return m_patch, b_patch, params, g_patch


def _diabetes_other_split():
    draw, bounds, box = diabetes_task()
    return (lambda seed: draw(1000 + seed)), bounds, box


def heldout_tasks():
    """Tasks not in the benchmark's tables (held out from the rule's choice)."""
    return {
        "held-out SNR 0.01, n=1e+03": gaussian_task(1000, 0.01),
        "held-out SNR 0.03, n=1e+03": gaussian_task(1000, 0.03),
        "held-out medium SNR, n=1e+03, d=10": gaussian_task(1000, 0.1, d=10),
        "held-out medium SNR, n=2e+03": gaussian_task(2000, 0.1),
        "held-out low SNR, n=3e+03": gaussian_task(3000, 1e-3),
        "held-out skewed, n=3e+03": skewed_task(3000),
        "held-out diabetes, other split": _diabetes_other_split(),
    }


def tasks(quick):
    return {**benchmark_tasks(quick), **heldout_tasks()}


def run(cell, variant, seeds, eps, offset=0):
    draw, bounds, _ = tasks(True)[cell]
    m_patch, b_patch, params, *g = _variant(variant)
    g_patch = g[0] if g else {}
    out = []
    with _patched(M, **m_patch), _patched(B, **b_patch), _patched(G, **g_patch):
        for seed in range(offset, offset + seeds):
            X, y, score = draw(seed)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = BilevelRidge(
                    epsilon=eps,
                    delta=benchmark_delta(X.shape[0]),
                    random_state=seed,
                    feature_norm=bounds[0],
                    target_bound=bounds[1],
                    tuning="risk_estimate",
                    **params,
                ).fit(X, y)
            out.append(score((np.asarray(m.coef_), float(m.intercept_))))
    return np.array(out)


def summary(base, new):
    lr = np.log(new / base)
    se = lr.std(ddof=1) / math.sqrt(lr.size) if lr.size > 1 else math.nan
    diff = new - base
    return (
        f"{np.median(new):.4g} | {np.mean(new):.4g} | {np.quantile(new, 0.9):.4g} "
        f"| {np.median(new) / np.median(base):.3f} | {math.exp(lr.mean()):.3f} "
        f"(se {se:.3f}) | {diff.mean():+.3g} ({diff.std(ddof=1) / math.sqrt(diff.size):.2g})"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    parser.add_argument("--cells", nargs="+", default=list(CELLS))
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS))
    parser.add_argument("--suffix", default="")
    parser.add_argument("--base", default="default", help="paired reference")
    parser.add_argument("--seed-offset", type=int, default=0, help="first seed")
    args = parser.parse_args()
    t0 = time.perf_counter()
    names = list(tasks(True))
    lines = []
    for eps in args.epsilon:
        for cell in [t for t in names if any(c in t for c in args.cells)]:
            base = run(cell, args.base, args.seeds, eps, args.seed_offset)
            for v in args.variants:
                new = (
                    base
                    if v == args.base
                    else run(cell, v, args.seeds, eps, args.seed_offset)
                )
                lines.append(f"| {cell} | {eps:g} | {v} | {summary(base, new)} |")
                print(lines[-1], flush=True)
    commit = head_commit()
    cmd = (
        "nice -n 10 python -m benchmarks.bilevel_ridge.small_n_rules --seeds "
        f"{args.seeds} --epsilon {' '.join(f'{e:g}' for e in args.epsilon)} "
        f"--cells {' '.join(repr(c) for c in args.cells)} --variants "
        f"{' '.join(args.variants)} --base {args.base} --seed-offset {args.seed_offset}"
        + (f" --suffix {args.suffix}" if args.suffix else "")
    )
    head = [
        "# BilevelRidge at small n: rule variants, paired",
        "",
        f"Generated by `{cmd}` at commit {commit} in "
        f"{(time.perf_counter() - t0) / 60:.1f} min. gd_risk of vs_baselines.py "
        "(public bounds, delta = min(1e-6, n^-2), random_state = seed); score: "
        "excess risk (test MSE on diabetes). Columns: median, mean, 90th "
        "percentile over the seeds; ratio of medians to the --base variant; geometric "
        "mean of the per-seed ratios (se on the log scale); mean paired "
        "difference (se). See the module docstring for the variants.",
        "",
        "| task | epsilon | variant | median | mean | p90 | median ratio | "
        "geo. mean ratio | mean diff |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    report = "\n".join(head + lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_small_n_rules{args.suffix}.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
