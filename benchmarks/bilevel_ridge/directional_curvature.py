"""Probe: the clipped loss's curvature along the first stage's error (issue 21).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.directional_curvature``
from the repository root with ``PYTHONPATH=.`` (``--cells`` substrings of the
task names of ``benchmarks/bilevel_ridge/vs_baselines.py``, ``--seeds``,
``--epsilon``). A diagnostic that reads the private data and the true
coefficients (not a private method): for each seed it fits the default
``BilevelRidge(tuning="risk_estimate")`` with the task's public bounds and
``delta = min(1e-6, n**-2)``, takes the first stage's average ``w`` and the
last released clip level ``C`` at the rule, and computes on the solver's
rows (clipped to the public bound, in the solver's units,
:func:`~benchmarks.bilevel_ridge.low_snr_tail.solver_units`) the curvature
of the clipped squared loss at ``w``: over the rows whose per-sample gradient
``|r_i| ||(x_i, s)||`` is at most ``C``, ``h_avg = mean ||x_i||**2 / d``
(the per-column average, what the curvature release estimates) and
``h(u) = mean (x_i . u)**2`` along the unit error direction ``u = (w -
theta) / ||w - theta||`` and along a random unit direction. Where the first
stage's error is as large as the residuals, the rows that align with it have
the largest residuals and are clipped: the loss is flatter along the error
than on average, the noise along it is damped less, and the plug-in rule's
isotropic noise estimate (from the per-column curvature) understates it.
"""

import argparse
import math
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS, head_commit
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.low_snr_tail import _theta, solver_units
from benchmarks.bilevel_ridge.vs_baselines import tasks
from skdp import BilevelRidge
from skdp._testing.internals import ridge_gd_module as M


def _clip_rows(X, bound):
    """Rows scaled to norm at most ``bound`` (the estimator's per-record map)."""
    norms = np.linalg.norm(X, axis=1)
    return X * np.minimum(1.0, bound / np.maximum(norms, 1e-300))[:, None]


def _recording(log):
    orig = M.plugin_penalty

    def factory(*a, **k):
        f = orig(*a, **k)

        def rule(coefs, clips, s, windows=None, curvature=None):
            out = f(coefs, clips, s, windows, curvature)
            w = np.asarray(coefs[-1], dtype=float).copy()
            log.append((w, float(np.asarray(clips)[-1]), s, curvature, out))
            return out

        return rule

    return orig, factory


def directional(X, y, w, C, s, theta, seed):
    """``h_avg``, ``h(error) / h_avg``, ``h(random) / h_avg``, kept fraction."""
    d = X.shape[1]
    coef, b = w[:-1], w[-1]
    r = y - X @ coef - b
    keep = np.abs(r) * np.sqrt(np.sum(X**2, axis=1) + s * s) <= C
    e = coef - theta
    u = e / np.linalg.norm(e)
    q = np.random.default_rng(seed).normal(size=d)
    q /= np.linalg.norm(q)
    h_avg = float(np.mean(keep * np.sum(X**2, axis=1))) / d
    h_u = float(np.mean(keep * (X @ u) ** 2))
    h_q = float(np.mean(keep * (X @ q) ** 2))
    return h_avg, h_u / h_avg, h_q / h_avg, float(keep.mean())


def run(cell, seeds, eps, lines):
    log = []
    orig, factory = _recording(log)
    M.plugin_penalty = factory
    all_tasks = tasks(False)
    name = next(t for t in all_tasks if cell in t)
    draw, bounds, _ = all_tasks[name]
    try:
        for seed in range(seeds):
            X, y, score = draw(seed)
            n, d = X.shape
            delta = benchmark_delta(n)
            units = solver_units(bounds, n, d, eps, delta)
            a = 1.0 if units == 1.0 else math.sqrt(d) / bounds[0]
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m = BilevelRidge(
                    epsilon=eps,
                    delta=delta,
                    random_state=seed,
                    feature_norm=bounds[0],
                    target_bound=bounds[1],
                ).fit(X, y)
            w, C, s, h_rel, pen = log[-1]
            Xs = _clip_rows(X, bounds[0]) * a
            ys = np.clip(y, -bounds[1], bounds[1]) * units * a
            theta = _theta(seed, d) * units
            h_avg, ratio_u, ratio_q, kept = directional(Xs, ys, w, C, s, theta, seed)
            e = w[:-1] - theta
            h_rel = math.nan if h_rel is None else h_rel / (s * s)
            risk = score((np.asarray(m.coef_), float(m.intercept_)))
            lines.append(
                f"| {name} | {eps:g} | {seed} | {float(e @ e):.3g} | {kept:.3f} "
                f"| {h_avg / (s * s):.3f} | {h_rel:.3f} | {ratio_u:.3f} "
                f"| {ratio_q:.3f} | {pen:.3g} | {risk:.4g} |".replace("nan", "")
            )
            print(lines[-1], flush=True)
    finally:
        M.plugin_penalty = orig


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", nargs="+", default=["low SNR, n=1e+03"])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--out", default="bilevel_ridge_directional_curvature.md")
    args = parser.parse_args()
    t0 = time.perf_counter()
    lines = []
    for eps in args.epsilon:
        for cell in args.cells:
            run(cell, args.seeds, eps, lines)
    head = [
        "# BilevelRidge: the clipped loss's curvature along the first stage's error",
        "",
        "Generated by `nice -n 10 python -m "
        "benchmarks.bilevel_ridge.directional_curvature --cells "
        + " ".join(repr(c) for c in args.cells)
        + f" --seeds {args.seeds} --epsilon "
        + " ".join(f"{e:g}" for e in args.epsilon)
        + f"` at commit {head_commit()} in {(time.perf_counter() - t0) / 60:.1f} "
        "min. A diagnostic on the private data (see the module docstring). "
        "`error`: ||w - theta||^2 of the first stage (solver's units); `kept`: "
        "unclipped fraction at w and the last clip level; `h_avg`: the clipped "
        "loss's per-column curvature at w / s^2; `h_rel`: the released one / s^2 "
        "(blank: not released); `h(err)`, `h(rand)`: curvature along the error "
        "direction and along a random direction, over h_avg; chosen penalty "
        "(units of s^2; 1000: no signal); excess risk (zero model: 2).",
        "",
        "| task | epsilon | seed | error | kept | h_avg | h_rel | h(err) | h(rand) "
        "| penalty | excess risk |",
        "|---" * 11 + "|",
    ]
    report = "\n".join(head + lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
