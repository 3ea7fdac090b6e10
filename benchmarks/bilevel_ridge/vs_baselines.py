"""Benchmark: BilevelRidge against the best private linear regressors a user could pick.

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.vs_baselines`` from the
repository root with ``PYTHONPATH=.`` (``--quick`` for a smoke run; ``--seeds``
and ``--other-seeds`` set the repetitions at epsilon = 1 and at the other
epsilons). Writes ``benchmarks/results/bilevel_ridge_vs_baselines.md`` and a
JSON file of the raw scores next to it.

Every private method spends the same ``(epsilon, delta)`` with
``delta = min(1e-6, 1 / n**2)``; all run in this process on the same data.
Methods (``benchmarks/_common/baselines.py`` pins the baselines):

- ``gd_risk``: ``BilevelRidge(inner_solver="gd", tuning="risk_estimate")``
  with the task's public bounds (they only clip, except where ``n`` is too
  small for private scales: then they set the units);
  ``gd_risk_nobounds``: the same without bounds;
- ``gd_path``: ``BilevelRidge(inner_solver="gd", tuning="path")`` with the
  bounds;
- ``ss_bilevel``, ``ss_risk``: ``BilevelRidge(inner_solver=
  "sufficient_statistics")`` (the paper's bilevel loop, the previous default)
  and the same with ``tuning="risk_estimate"``, with the task's public bounds;
- ``htlr``: ``HeavyTailedLinearRegression()`` (defaults);
- ``dpgd[C]``: full-batch DP-GD, 100 steps, fixed clip ``C`` in data units,
  step tuned on an independent replicate; ``dpgd_best`` is the clip with the
  best median, chosen in hindsight;
- ``tukey_em`` (simplified, pure DP, public coefficient box), ``adassp``,
  ``grid_split``, ``grid_stats`` (the last three with the public bounds);
- ``nonprivate``: scikit-learn ``LinearRegression`` (reference only).

Tasks: synthetic ``x ~ N(0, I_20)``, ``y = x theta + 1 + sigma z`` with
``||theta|| = 1`` and SNR ``1 / sigma**2`` in {1e-3, 0.1, 10} at
n in {1e3, 1e4, 1e5} (score: exact excess risk); heavy-tailed synthetic,
Student-t(3) features and noise, n = 2000, d = 10 and n = 1e5, d = 20 (exact
excess risk, feature covariance 3 I); skewed noise, ``x ~ N(0, I_20)``,
``y = x theta + 1 + sigma (e - 1)`` with ``e`` standard exponential and
SNR 0.1, at n in {1e3, 1e4} (exact excess risk: heavy clipping estimates a
median, not the mean, there); ``load_diabetes`` (test MSE over random
75/25 splits). Scores are medians over repetitions.
"""

import argparse
import json
import math
import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression, RidgeCV

from benchmarks._common import RESULTS
from benchmarks._common.baselines import (
    CLIPS,
    benchmark_delta,
    dp_gd_fixed_clip,
    tukey_em,
    tune_dp_gd_steps,
)
from benchmarks.bilevel_ridge.baselines import (
    adassp,
    grid_search_split,
    grid_search_statistics,
)
from skdp import BilevelRidge, HeavyTailedLinearRegression
from skdp._testing.internals import plan_ridge_gd, ridge_gd
from skdp.privacy import gdp_mu

EPSILONS = (0.5, 1.0, 2.0, 5.0)
SNRS = {"low": 1e-3, "medium": 0.1, "high": 10.0}
GRID_UNITS = np.logspace(-2, 6, 17)  # grid-search alphas, units of feature_norm**2
#: penalties (units of s**2) of the gd solver's hindsight curve
HINDSIGHT_PENALTIES = (0.0, 0.01, 0.03, 0.1, 0.3, 1.0, 3.0, 10.0)


# -- tasks --------------------------------------------------------------------
def gaussian_task(n, snr, d=20):
    sigma = 1.0 / math.sqrt(snr)

    def draw(seed):
        rng = np.random.default_rng(seed)
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
        X = rng.normal(size=(n, d))
        y = X @ theta + 1.0 + sigma * rng.normal(size=n)
        return X, y, _excess(theta, 1.0)

    bounds = (1.5 * math.sqrt(d), 1.0 + 4.0 * math.sqrt(1.0 + sigma**2))
    return draw, bounds, 3.0 * (1.0 + sigma)


def skewed_task(n, snr=0.1, d=20):
    """Gaussian features, skewed noise: a centred exponential (mean 0)."""
    sigma = 1.0 / math.sqrt(snr)

    def draw(seed):
        rng = np.random.default_rng(seed)
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
        X = rng.normal(size=(n, d))
        y = X @ theta + 1.0 + sigma * (rng.exponential(size=n) - 1.0)
        return X, y, _excess(theta, 1.0)

    bounds = (1.5 * math.sqrt(d), 1.0 + 4.0 * math.sqrt(1.0 + sigma**2))
    return draw, bounds, 3.0 * (1.0 + sigma)


def heavy_task(n, d):
    def draw(seed):
        rng = np.random.default_rng(seed)
        theta = rng.normal(size=d)
        theta /= np.linalg.norm(theta)
        X = rng.standard_t(3, size=(n, d))
        y = X @ theta + 1.0 + rng.standard_t(3, size=n)
        return X, y, _excess(theta, 1.0, scale=3.0)

    # public bounds from the model: row norm ~ sqrt(3 d), |y| ~ 3 sqrt(6)
    bounds = (3.0 * math.sqrt(3.0 * d), 1.0 + 4.0 * math.sqrt(6.0))
    return draw, bounds, 10.0


def _excess(theta, intercept, scale=1.0):
    def score(model, X=None, y=None):
        coef, b = model
        return float(scale * np.sum((coef - theta) ** 2) + (b - intercept) ** 2)

    return score


def diabetes_task():
    Xall, yall = load_diabetes(return_X_y=True)

    def draw(seed):
        rng = np.random.default_rng(500 + seed)
        perm = rng.permutation(len(yall))
        cut = int(0.75 * len(yall))
        tr, te = perm[:cut], perm[cut:]

        def score(model):
            coef, b = model
            return float(np.mean((Xall[te] @ coef + b - yall[te]) ** 2))

        return Xall[tr], yall[tr], score

    # unit-norm columns (|x_ij| < 0.2); disease score in [25, 346]
    return draw, (0.35, 350.0), 2000.0


def tasks(quick):
    ns = (1000, 10_000) if quick else (1000, 10_000, 100_000)
    out = {}
    for n in ns:
        for name, snr in SNRS.items():
            out[f"{name} SNR, n={n:.0e}"] = gaussian_task(n, snr)
    for n in ns[:2]:
        out[f"skewed noise, medium SNR, n={n:.0e}"] = skewed_task(n)
    out["heavy-tailed, n=2000, d=10"] = heavy_task(2000, 10)
    if not quick:
        out["heavy-tailed, n=1e+05, d=20"] = heavy_task(100_000, 20)
    out["diabetes (test MSE)"] = diabetes_task()
    return out


# -- methods ------------------------------------------------------------------
def _coef(m):
    return np.asarray(m.coef_, dtype=float), float(m.intercept_)


#: methods of ``--large-only`` (the targets' comparators, CPU share)
LEAN_METHODS = ("gd_risk", "htlr", "dpgd")


def run_methods(X, y, eps, seed, bounds, box, steps, score, lean=False):
    """Score every method (``lean``: only :data:`LEAN_METHODS`) on one draw."""
    n = X.shape[0]
    delta = benchmark_delta(n)
    rng = np.random.default_rng(10_000 + seed)
    out = {}

    def timed(name, fn):
        if lean and name.split("[")[0] not in LEAN_METHODS:
            return
        t0 = time.perf_counter()
        model = fn()
        out[name] = (score(model), time.perf_counter() - t0)

    common = dict(epsilon=eps, delta=delta, random_state=seed)
    fb = dict(feature_norm=bounds[0], target_bound=bounds[1])
    for name, params in (
        ("gd_risk", dict(tuning="risk_estimate", **fb)),
        ("gd_risk_nobounds", dict(tuning="risk_estimate")),
        ("gd_path", dict(tuning="path", **fb)),
    ):
        timed(
            name,
            lambda params=params: _coef(
                BilevelRidge(inner_solver="gd", **params, **common).fit(X, y)
            ),
        )
    ss = dict(inner_solver="sufficient_statistics", **fb, **common)
    timed("ss_bilevel", lambda: _coef(BilevelRidge(**ss).fit(X, y)))
    timed(
        "ss_risk",
        lambda: _coef(BilevelRidge(tuning="risk_estimate", **ss).fit(X, y)),
    )
    timed("htlr", lambda: _coef(HeavyTailedLinearRegression(**common).fit(X, y)))
    for clip in CLIPS:
        timed(
            f"dpgd[{clip:g}]",
            lambda clip=clip: dp_gd_fixed_clip(
                X, y, eps, delta, clip, steps[clip], rng
            ),
        )
    timed("tukey_em", lambda: tukey_em(X, y, eps, rng, box))
    timed("adassp", lambda: adassp(X, y, eps, delta, rng, *bounds)[0])
    alphas = GRID_UNITS * bounds[0] ** 2
    n_val = int(round(0.2 * n))
    perm = rng.permutation(n)
    tr, va = perm[n_val:], perm[:n_val]
    for name, fn in (
        ("grid_split", grid_search_split),
        ("grid_stats", grid_search_statistics),
    ):
        timed(
            name,
            lambda fn=fn: fn(
                X[tr], y[tr], X[va], y[va], alphas, eps, delta, rng, bounds
            )[0],
        )
    timed("nonprivate", lambda: _coef(LinearRegression().fit(X, y)))
    return out


def hindsight_penalties(X, y, eps, seed, score):
    """The gd solver at each fixed penalty (same budget): the hindsight curve."""
    n, d = X.shape
    mu = gdp_mu(eps, benchmark_delta(n))
    out = {}
    for pen in HINDSIGHT_PENALTIES:
        plan = plan_ridge_gd(mu, n, d, penalties=(pen,))
        res = ridge_gd(X, y, plan, np.random.default_rng(seed))
        out[f"gd_fixed[{pen:g}]"] = (score((res.coef, res.intercept)), 0.0)
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--seeds", type=int, default=5, help="repetitions at epsilon=1")
    parser.add_argument("--other-seeds", type=int, default=2, help="at other epsilons")
    parser.add_argument(
        "--small-only",
        action="store_true",
        help="n <= 1e4 tasks only, no timing (written with the --suffix)",
    )
    parser.add_argument(
        "--large-only",
        action="store_true",
        help="n = 1e5 tasks at epsilon = 1 only, methods gd_risk, htlr, dpgd "
        "(written with the --suffix, default _large)",
    )
    parser.add_argument("--suffix", default=None, help="result file suffix")
    args = parser.parse_args()
    if args.large_only:
        return main_large(args)
    if args.quick:
        args.seeds, args.other_seeds = 2, 1
    t_start = time.perf_counter()
    raw = {}
    for tname, (draw, bounds, box) in tasks(args.quick or args.small_only).items():
        for eps in EPSILONS:
            reps = args.seeds if eps == 1.0 else args.other_seeds
            if eps != 1.0 and "1e+05" in tname:
                reps = 1  # CPU share: one repetition at n = 1e5 off epsilon = 1
            Xr, yr, score_r = draw(99_999)  # independent replicate for step tuning
            steps = tune_dp_gd_steps((Xr, yr), eps, score_r)
            for seed in range(reps):
                X, y, score = draw(seed)
                res = run_methods(X, y, eps, seed, bounds, box, steps, score)
                if eps == 1.0 and tname.startswith("low SNR"):
                    res.update(hindsight_penalties(X, y, eps, seed, score))
                for k, v in res.items():
                    raw.setdefault(tname, {}).setdefault(str(eps), {}).setdefault(
                        k, []
                    ).append(v)
            print(
                f"{tname} eps={eps} done ({time.perf_counter() - t_start:.0f} s)",
                flush=True,
            )
    timing = None if args.quick or args.small_only else timing_study()
    elapsed = time.perf_counter() - t_start
    suffix = "_quick" if args.quick else ""
    if args.suffix is not None:
        suffix = args.suffix
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_vs_baselines{suffix}.json").write_text(
        json.dumps({"raw": raw, "timing": timing}, indent=1)
    )
    report = write_report(raw, timing, args, elapsed)
    (RESULTS / f"bilevel_ridge_vs_baselines{suffix}.md").write_text(report)
    print(report)


def main_large(args):
    """The n = 1e5 cells at epsilon = 1 over ``--seeds`` seeds, lean methods."""
    t_start = time.perf_counter()
    raw = {}
    for tname, (draw, bounds, box) in tasks(False).items():
        if "1e+05" not in tname:
            continue
        Xr, yr, score_r = draw(99_999)  # independent replicate for step tuning
        steps = tune_dp_gd_steps((Xr, yr), 1.0, score_r)
        for seed in range(args.seeds):
            X, y, score = draw(seed)
            res = run_methods(X, y, 1.0, seed, bounds, box, steps, score, lean=True)
            for k, v in res.items():
                raw.setdefault(tname, {}).setdefault("1.0", {}).setdefault(
                    k, []
                ).append(v)
        print(f"{tname} done ({time.perf_counter() - t_start:.0f} s)", flush=True)
    elapsed = time.perf_counter() - t_start
    suffix = "_large" if args.suffix is None else args.suffix
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_vs_baselines{suffix}.json").write_text(
        json.dumps({"raw": raw}, indent=1)
    )
    L = ["# BilevelRidge at n = 1e5, epsilon = 1: many seeds", ""]
    L.append(
        "Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.vs_baselines"
        f" --large-only --seeds {args.seeds}"
        f"{f' --suffix {args.suffix}' if args.suffix is not None else ''}` in "
        f"{elapsed / 60:.1f} min on the shared 2-core machine. Seeds 0 to "
        f"{args.seeds - 1} (the 5-seed run's seeds are 0-4); methods and tasks "
        "as in `bilevel_ridge_vs_baselines.md`. Ratio of medians, the median "
        "of the paired (per-seed) ratios and its 90% bootstrap interval "
        "(2000 resamples of seeds), and the same ratio of medians on seeds 0-4."
    )
    L.append("")
    L.append(
        "| task | gd_risk | htlr | dpgd_best | best clip | gd/htlr | gd/dpgd_best "
        "| paired gd/dpgd_best [90%] | paired gd/htlr [90%] | gd/dpgd_best seeds 0-4 |"
    )
    L.append("|---" * 10 + "|")
    boot = np.random.default_rng(0)
    for task in raw:
        r = raw[task]["1.0"]
        g = np.array([v for v, _ in r["gd_risk"]])
        h = np.array([v for v, _ in r["htlr"]])
        best, clip = _best_dpgd(raw, task, 1.0)
        b = np.array([v for v, _ in r[f"dpgd[{clip:g}]"]])

        def paired(a, c):
            q = a / c
            idx = boot.integers(0, q.size, size=(2000, q.size))
            lo, hi = np.quantile(np.median(q[idx], axis=1), [0.05, 0.95])
            return f"{np.median(q):.2f} [{lo:.2f}, {hi:.2f}]"

        L.append(
            f"| {task} | {np.median(g):.4g} | {np.median(h):.4g} | {best:.4g} "
            f"| {clip:g} | {np.median(g) / np.median(h):.2f} "
            f"| {np.median(g) / best:.2f} | {paired(g, b)} | {paired(g, h)} "
            f"| {np.median(g[:5]) / np.median(b[:5]):.2f} |"
        )
    L.append("")
    report = "\n".join(L) + "\n"
    (RESULTS / f"bilevel_ridge_vs_baselines{suffix}.md").write_text(report)
    print(report)


def timing_study(n=1_000_000, d=20):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = X @ (np.ones(d) / math.sqrt(d)) + 1.0 + rng.normal(size=n)
    small = (X[:2000], y[:2000])
    BilevelRidge(inner_solver="gd", tuning="risk_estimate", random_state=0).fit(*small)
    RidgeCV().fit(*small)  # warm up (numba compile, imports)
    out = {}
    for name, fit in (
        (
            "gd_risk",
            lambda: BilevelRidge(
                inner_solver="gd", tuning="risk_estimate", random_state=0
            ).fit(X, y),
        ),
        ("ridgecv", lambda: RidgeCV().fit(X, y)),
        ("htlr", lambda: HeavyTailedLinearRegression(random_state=0).fit(X, y)),
    ):
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            fit()
            times.append(time.perf_counter() - t0)
        out[name] = min(times)
    return out


def _med(raw, task, eps, method):
    vals = raw[task][str(eps)].get(method)
    return None if vals is None else float(np.median([s for s, _ in vals]))


def _best_dpgd(raw, task, eps):
    meds = {c: _med(raw, task, eps, f"dpgd[{c:g}]") for c in CLIPS}
    c = min(meds, key=meds.get)
    return meds[c], c


METHODS = (
    "gd_risk",
    "gd_risk_nobounds",
    "gd_path",
    "ss_bilevel",
    "ss_risk",
    "htlr",
    "dpgd_best",
    "tukey_em",
    "adassp",
    "grid_split",
    "grid_stats",
    "nonprivate",
)


def write_report(raw, timing, args, elapsed):
    L = ["# BilevelRidge against private linear-regression baselines", ""]
    L.append(
        f"Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.vs_baselines"
        f"{' --quick' if args.quick else ''}"
        f" --seeds {args.seeds} --other-seeds {args.other_seeds}"
        f"{' --small-only' if args.small_only else ''}"
        f"{f' --suffix {args.suffix}' if args.suffix is not None else ''}` in "
        f"{elapsed / 60:.1f} min on the shared "
        f"2-core machine: {args.seeds} repetitions at epsilon = 1, "
        f"{args.other_seeds} at the other epsilons (1 at n = 1e5; fewer, for the "
        "CPU share). "
        "delta = min(1e-6, 1/n^2). Scores: median excess risk (synthetic) or "
        "test MSE (diabetes); `dpgd_best` is the best of the clips "
        f"{', '.join(f'{c:g}' for c in CLIPS)} (data units) chosen in hindsight, "
        "each with its step tuned on an independent replicate. See the module "
        "docstrings of `benchmarks/bilevel_ridge/vs_baselines.py` and "
        "`benchmarks/_common/baselines.py` for the methods."
    )
    L.append("")
    for eps in EPSILONS:
        L.append(f"## epsilon = {eps:g}")
        L.append("")
        L.append("| task | " + " | ".join(METHODS) + " | best clip |")
        L.append("|---" * (len(METHODS) + 2) + "|")
        for task in raw:
            row = []
            best, clip = _best_dpgd(raw, task, eps)
            for m in METHODS:
                v = best if m == "dpgd_best" else _med(raw, task, eps, m)
                row.append("" if v is None else f"{v:.4g}")
            L.append(f"| {task} | " + " | ".join(row) + f" | {clip:g} |")
        L.append("")
    L.append("## Targets at epsilon = 1 (ratios of medians, gd_risk / baseline)")
    L.append("")
    L.append(
        "| task | / htlr (<= 1.10; <= 0.75 low SNR n <= 1e4) | / dpgd_best (<= 1.10) | "
        "/ adassp (< 1) | / grid_split (< 1) | / grid_stats (< 1) | gd_path / htlr | "
        "ss_bilevel / htlr |"
    )
    L.append("|---" * 8 + "|")
    for task in raw:
        g = _med(raw, task, 1.0, "gd_risk")
        h = _med(raw, task, 1.0, "htlr")
        best, _ = _best_dpgd(raw, task, 1.0)
        r = [g / h, g / best] + [
            g / _med(raw, task, 1.0, m) for m in ("adassp", "grid_split", "grid_stats")
        ]
        r += [
            _med(raw, task, 1.0, "gd_path") / h,
            _med(raw, task, 1.0, "ss_bilevel") / h,
        ]
        L.append(f"| {task} | " + " | ".join(f"{x:.2f}" for x in r) + " |")
    L.append("")
    L.append("## Other epsilons: gd_risk / htlr and gd_risk / dpgd_best")
    L.append("")
    L.append("| task | " + " | ".join(f"eps={e:g}" for e in EPSILONS) + " |")
    L.append("|---" * (len(EPSILONS) + 1) + "|")
    for task in raw:
        cells = []
        for e in EPSILONS:
            g = _med(raw, task, e, "gd_risk")
            cells.append(
                f"{g / _med(raw, task, e, 'htlr'):.2f} / {g / _best_dpgd(raw, task, e)[0]:.2f}"
            )
        L.append(f"| {task} | " + " | ".join(cells) + " |")
    L.append("")
    L.append(
        "## Penalty against the best fixed penalty in hindsight (low SNR, epsilon = 1)"
    )
    L.append("")
    L.append(
        "The gd solver at fixed penalties omega (units of s^2, one run each, "
        "same budget, same seed as `gd_risk`); target: risk at `alpha_` "
        "<= 1.1x the best."
    )
    L.append("")
    L.append(
        "| task | "
        + " | ".join(f"{p:g}" for p in HINDSIGHT_PENALTIES)
        + " | gd_risk | ratio |"
    )
    L.append("|---" * (len(HINDSIGHT_PENALTIES) + 3) + "|")
    for task in raw:
        if not task.startswith("low SNR"):
            continue
        meds = [_med(raw, task, 1.0, f"gd_fixed[{p:g}]") for p in HINDSIGHT_PENALTIES]
        g = _med(raw, task, 1.0, "gd_risk")
        L.append(
            f"| {task} | "
            + " | ".join(f"{m:.4g}" for m in meds)
            + f" | {g:.4g} | {g / min(meds):.2f} |"
        )
    L.append("")
    L.append("## Large-n heavy-tailed task: HeavyTailedLinearRegression / dpgd_best")
    L.append("")
    for task in raw:
        if task.startswith("heavy"):
            h = _med(raw, task, 1.0, "htlr")
            best, clip = _best_dpgd(raw, task, 1.0)
            L.append(
                f"- {task}: htlr / dpgd_best = {h / best:.2f}, gd_risk / dpgd_best = "
                f"{_med(raw, task, 1.0, 'gd_risk') / best:.2f} (best clip {clip:g})"
            )
    L.append("")
    if timing:
        L.append("## Fit time, n = 1e6, d = 20 (best of 2)")
        L.append("")
        for k, v in timing.items():
            L.append(f"- {k}: {v:.2f} s")
        L.append(f"- gd_risk / ridgecv: {timing['gd_risk'] / timing['ridgecv']:.1f}x")
        L.append("")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
