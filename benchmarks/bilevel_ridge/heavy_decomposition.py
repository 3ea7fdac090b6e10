"""BilevelRidge on the heavy-tailed n = 1e5 cell: what each part costs (issue 21).

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.bilevel_ridge.heavy_decomposition
[--seeds 20] [--n 100000] [--d 20] [--variants ...] [--tag T]``. Writes
``benchmarks/results/bilevel_ridge_heavy_decomposition[_T].md`` and the raw
scores as JSON.

The default fit (``BilevelRidge()`` with the task's public bounds, as
``gd_risk`` of ``benchmarks/bilevel_ridge/vs_baselines.py``; ``epsilon = 1``,
``delta = min(1e-6, 1/n**2)``) on its Student-t(3) task, and the same fit
with one part switched off, paired (same data and ``random_state``; a
zeroed noise group keeps the random stream, so everything else is the same
draw). A diagnostic, not a private run:

- ``no gradient noise`` / ``no count noise`` / ``no intercept noise`` /
  ``no noise``: the Gaussian noise of the gradient sums, of the scale and
  clip quantiles' counts, of the ridge solver's own releases (the intercept
  correction), or of all of them, multiplied by 0 (as
  ``benchmarks/heavy_tailed/noise_sources.py`` does for
  HeavyTailedLinearRegression);
- ``penalty 0``: the plug-in rule returns 0 (the second stage unpenalized):
  the bias of the tuned penalty; ``penalty 0, no noise``: both;
- ``no bounds``: without the public ``feature_norm`` / ``target_bound``
  (they clip rows and targets; HeavyTailedLinearRegression and DP-GD get
  none);
- variants of the module constants of :mod:`skdp.solvers.bilevel.ridge.gd`
  (``--variants``, see ``PATCHES``): ``htlr trunc``, ``htlr step+avg``
  (HeavyTailedLinearRegression's truncation, step floor and averaging
  start), ``no intercept release``; ``clip c``: the heavy-tail clip floor
  ``HEAVY_TAIL_CLIPPED = c`` (0.4 by default), ``heavier c``: the floor
  ``c`` only above the released tail ratio ``HEAVIER_TAIL_RATIO``
  (``HEAVIER_TAIL_CLIPPED``), ``pool``: the two stages' averages pooled
  (``POOL_STAGES = 0.01``), ``first 0.3``: the first stage on 30% of the
  steps (``LARGE_N_FIRST_STAGE``), ``..., no noise``: with every group zeroed;
- ``--df``: Student-t(``df``) features and noise instead (held-out tails;
  the bounds scaled by the variance), ``--eps``: another epsilon.

Baselines as in ``vs_baselines.py``: ``HeavyTailedLinearRegression()`` and
the best fixed-clip DP-GD in hindsight. Cells: median excess risk, its
ratio to ``dpgd_best`` and to ``htlr``, and the paired ratio to the default
fit (median and geometric mean over seeds, with the standard error of the
mean log-ratio).
"""

import argparse
import json
import math
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS, head_commit
from benchmarks._common.baselines import (
    CLIPS,
    benchmark_delta,
    dp_gd_fixed_clip,
    tune_dp_gd_steps,
)
from benchmarks.bilevel_ridge.vs_baselines import _excess, heavy_task
from skdp import BilevelRidge, HeavyTailedLinearRegression
from skdp._testing.internals import heavy_tailed_gd_module as hgd
from skdp._testing.internals import norm_bound_module as nb
from skdp._testing.internals import ridge_curvature_module as rc
from skdp._testing.internals import ridge_gd_module as G

NOISE = {"gd": hgd, "bounds": nb, "ridge": G, "curvature": rc}
#: variant -> (noise groups zeroed, module constants of ridge gd patched,
#: fit without the public bounds)
PATCHES = {
    "default": ((), {}, False),
    "no gradient noise": (("gd",), {}, False),
    "no count noise": (("bounds",), {}, False),
    "no intercept noise": (("ridge", "curvature"), {}, False),
    "no noise": (("gd", "bounds", "ridge", "curvature"), {}, False),
    "penalty 0": ((), {"plugin_penalty": "zero"}, False),
    "penalty 0, no noise": (
        ("gd", "bounds", "ridge", "curvature"),
        {"plugin_penalty": "zero"},
        False,
    ),
    "no bounds": ((), {}, True),
    "htlr trunc": ((), {"LARGE_N_TRUNC": 0.003}, False),
    "htlr step+avg": (
        (),
        {"LARGE_N_STEP_FLOOR": 0.4, "LARGE_N_AVERAGE_FROM": 0.25},
        False,
    ),
    "no intercept release": ((), {"INTERCEPT_SHARE": 0.0}, False),
}
DEFAULT_VARIANTS = list(PATCHES)
ALL_NOISE = ("gd", "bounds", "ridge", "curvature")
PATCHES["first 0.3"] = ((), {"LARGE_N_FIRST_STAGE": 0.3}, False)
for _c in (0.5, 0.6):
    PATCHES[f"heavier {_c:g}"] = ((), {"HEAVIER_TAIL_CLIPPED": _c}, False)
PATCHES["pool"] = ((), {"POOL_STAGES": 0.01}, False)
for _c in (0.2, 0.25, 0.3, 0.5, 0.6, 0.7):
    PATCHES[f"clip {_c:g}"] = ((), {"HEAVY_TAIL_CLIPPED": _c}, False)
    PATCHES[f"clip {_c:g}, no noise"] = (ALL_NOISE, {"HEAVY_TAIL_CLIPPED": _c}, False)
    PATCHES[f"pool, clip {_c:g}"] = (
        (),
        {"HEAVY_TAIL_CLIPPED": _c, "POOL_STAGES": 0.01},
        False,
    )


def t_task(n, d, df):
    """``heavy_task`` of ``vs_baselines.py`` with Student-t(``df``) features and
    noise (``df = 3``: that task); bounds scaled by the variance."""
    if df == 3:
        return heavy_task(n, d)
    var = df / (df - 2.0)

    def draw(seed):
        rng = np.random.default_rng(seed)
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
        X = rng.standard_t(df, size=(n, d))
        y = X @ theta + 1.0 + rng.standard_t(df, size=n)
        coef_score = _excess(theta, 1.0, scale=var)
        return X, y, coef_score

    bounds = (3.0 * math.sqrt(var * d), 1.0 + 4.0 * math.sqrt(2.0 * var))
    return draw, bounds, 10.0


def _zero_rule(*args, **kwargs):
    def penalty(*a, **k):
        return 0.0

    return penalty


def fit(name, X, y, seed, bounds, eps=1.0):
    zero, consts, no_bounds = PATCHES[name]
    saved_noise = {k: NOISE[k].gaussian_noise for k in zero}
    saved = {k: getattr(G, k) for k in consts}
    saved_defaults = None
    try:
        for key in zero:

            def silent(rng, std, *args, _orig=saved_noise[key], **kwargs):
                return 0.0 * _orig(rng, std, *args, **kwargs)

            NOISE[key].gaussian_noise = silent
        for k, v in consts.items():
            setattr(G, k, _zero_rule if v == "zero" else v)
        if "INTERCEPT_SHARE" in consts:  # read as a default argument
            saved_defaults = G.plan_ridge_gd.__kwdefaults__.copy()
            G.plan_ridge_gd.__kwdefaults__["intercept_share"] = consts[
                "INTERCEPT_SHARE"
            ]
        kw = {} if no_bounds else dict(feature_norm=bounds[0], target_bound=bounds[1])
        m = BilevelRidge(
            epsilon=eps, delta=benchmark_delta(X.shape[0]), random_state=seed, **kw
        ).fit(X, y)
    finally:
        for key, orig in saved_noise.items():
            NOISE[key].gaussian_noise = orig
        for k, v in saved.items():
            setattr(G, k, v)
        if saved_defaults is not None:
            G.plan_ridge_gd.__kwdefaults__.update(saved_defaults)
    return (np.asarray(m.coef_, dtype=float), float(m.intercept_)), float(m.alpha_)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=20)
    parser.add_argument("--df", type=float, default=3.0)
    parser.add_argument("--eps", type=float, default=1.0)
    parser.add_argument("--variants", nargs="+", default=DEFAULT_VARIANTS)
    parser.add_argument("--tag", default="")
    args = parser.parse_args()
    names = ["default"] + [v for v in args.variants if v != "default"]
    t0 = time.perf_counter()
    draw, bounds, _ = t_task(args.n, args.d, args.df)
    delta = benchmark_delta(args.n)
    Xr, yr, score_r = draw(99_999)
    steps = tune_dp_gd_steps((Xr, yr), args.eps, score_r)
    scores, alphas = {}, {}
    for seed in range(args.seeds):
        X, y, score = draw(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for name in names:
                model, alpha = fit(name, X, y, seed, bounds, args.eps)
                scores.setdefault(name, []).append(score(model))
                alphas.setdefault(name, []).append(alpha)
            h = HeavyTailedLinearRegression(
                epsilon=args.eps, delta=delta, random_state=seed
            ).fit(X, y)
        scores.setdefault("htlr", []).append(score((h.coef_, h.intercept_)))
        rng = np.random.default_rng(10_000 + seed)
        for clip in CLIPS:
            scores.setdefault(f"dpgd[{clip:g}]", []).append(
                score(dp_gd_fixed_clip(X, y, args.eps, delta, clip, steps[clip], rng))
            )
        print(f"seed {seed} ({time.perf_counter() - t0:.0f} s)", flush=True)
    elapsed = (time.perf_counter() - t0) / 60
    out = f"bilevel_ridge_heavy_decomposition{'_' + args.tag if args.tag else ''}"
    (RESULTS / f"{out}_raw.json").write_text(
        json.dumps({"scores": scores, "alphas": alphas}, indent=1)
    )
    text = report(scores, alphas, names, args, elapsed)
    (RESULTS / f"{out}.md").write_text(text)
    print(text)


def report(scores, alphas, names, args, elapsed):
    med = {k: float(np.median(v)) for k, v in scores.items()}
    best_clip = min(CLIPS, key=lambda c: med[f"dpgd[{c:g}]"])
    best = med[f"dpgd[{best_clip:g}]"]
    base = np.asarray(scores["default"])
    cmd = (
        "PYTHONPATH=. nice -n 10 python -m benchmarks.bilevel_ridge."
        f"heavy_decomposition --seeds {args.seeds} --n {args.n} --d {args.d}"
    )
    cmd += "" if args.df == 3 else f" --df {args.df:g}"
    cmd += "" if args.eps == 1 else f" --eps {args.eps:g}"
    if args.variants != DEFAULT_VARIANTS:
        cmd += " --variants " + " ".join(repr(v) for v in args.variants)
    cmd += f" --tag {args.tag}" if args.tag else ""
    L = ["# BilevelRidge on the heavy-tailed cell: what each part costs", ""]
    L.append(
        f"Generated by `{cmd}` at commit {head_commit()} in {elapsed:.1f} min on "
        f"the shared 2-core machine. Student-t({args.df:g}), n = {args.n}, "
        f"d = {args.d}, epsilon = {args.eps:g}, delta = {benchmark_delta(args.n):.3g}, "
        f"seeds 0-{args.seeds - 1}; htlr {med['htlr']:.4g}, dpgd_best "
        f"{best:.4g} (clip {best_clip:g})."
    )
    L.append("")
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append(
        "| variant | median | /dpgd_best | /htlr | paired / default: median, "
        "geo. mean (s.e. of mean log) | median alpha_ |"
    )
    L.append("|---|---|---|---|---|---|")
    for name in names:
        v = np.asarray(scores[name])
        lr = np.log(v / base)
        se = float(np.std(lr, ddof=1) / math.sqrt(lr.size)) if lr.size > 1 else 0.0
        L.append(
            f"| {name} | {med[name]:.4g} | {med[name] / best:.3f} | "
            f"{med[name] / med['htlr']:.3f} | {float(np.median(v / base)):.3f}, "
            f"{math.exp(float(np.mean(lr))):.3f} ({se:.3f}) | "
            f"{float(np.median(alphas[name])):.3g} |"
        )
    h = np.asarray(scores["htlr"])
    lr = np.log(h / base)
    se = float(np.std(lr, ddof=1) / math.sqrt(lr.size))
    L.append(
        f"| htlr | {med['htlr']:.4g} | {med['htlr'] / best:.3f} | 1.000 | "
        f"{float(np.median(h / base)):.3f}, {math.exp(float(np.mean(lr))):.3f} "
        f"({se:.3f}) | |"
    )
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
