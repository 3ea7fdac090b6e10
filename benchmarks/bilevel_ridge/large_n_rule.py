"""Benchmark: HeavyTailedLinearRegression's large-n rule in BilevelRidge's gd solver (issue 21).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.large_n_rule`` from the
repository root with ``PYTHONPATH=.`` (``--seeds``; ``--only`` a substring of
the task names to run a subset). At epsilon = 1, on the cells of
``benchmarks/bilevel_ridge/vs_baselines.py`` with ``n >= 1e4`` (same data,
seeds, public bounds and baselines) and diabetes (``n < 1e4``: must not
move), it fits ``gd_risk`` (``BilevelRidge()`` with the task's public bounds)
under switches of the large-``n`` rule of
:mod:`skdp.solvers.bilevel.ridge.gd` (module constants, paired: same data
and ``random_state``):

- ``base``: none (the round 4 rule: clipped fraction
  ``min(0.7, 60 z sqrt(d) / n)``, first stage averaged over its second
  half, step ``practical_step_size``, 0.25 here);
- ``step``: step floor 0.4; ``avg``: first stage averaged from 0.25 of its
  steps; ``clip``: at least 40% of the gradients clipped;
- ``htlr_rule``: all three (HeavyTailedLinearRegression's rule);
- ``trunc``: Algorithm 4 drops at most 0.3% of the rows (1% otherwise),
  HeavyTailedLinearRegression's ``_LARGE_N_TRUNC``; ``trunc+clip``: with
  the clip floor; ``heavy``: the clip floor only where the released
  truncation level exceeds twice ``s sqrt(D)`` (``HEAVY_TAIL_CLIPPED``);
- ``heavy first0.3``: with the floor, the first stage of
  ``tuning="risk_estimate"`` on 30% of the steps (``LARGE_N_FIRST_STAGE``;
  half by default), the second, averaged whole, on the rest (round 9);
- ``step+avg``: the rule without the clip floor; ``p<=c``: the clipped
  fraction capped at ``c`` (less clipping; 0.5, 0.4, 0.3), alone and with
  ``step+avg``.

Baselines: ``HeavyTailedLinearRegression()`` (defaults) and the best
fixed-clip DP-GD in hindsight (``dpgd_best``), as in ``vs_baselines.py``.
Writes ``benchmarks/results/bilevel_ridge_large_n_rule.md`` and the raw
scores as JSON (``..._subset`` with ``--only`` or ``--variants``, ``..._s<seeds>`` with other
than 5 seeds, ``..._eps<e>`` with ``--eps`` other than 1, ``..._<tag>``
with ``--tag``).
"""

import argparse
import json
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import (
    CLIPS,
    benchmark_delta,
    dp_gd_fixed_clip,
    tune_dp_gd_steps,
)
from benchmarks.bilevel_ridge.vs_baselines import tasks
from skdp import BilevelRidge, HeavyTailedLinearRegression
from skdp._testing.internals import ridge_gd_module as G

EPS = 1.0
#: module switches of each variant (unlisted constants: None)
VARIANTS = {
    "base": {},
    "step": {"LARGE_N_STEP_FLOOR": 0.4},
    "avg": {"LARGE_N_AVERAGE_FROM": 0.25},
    "clip": {"LARGE_N_CLIPPED": 0.4},
    "htlr_rule": {
        "LARGE_N_STEP_FLOOR": 0.4,
        "LARGE_N_AVERAGE_FROM": 0.25,
        "LARGE_N_CLIPPED": 0.4,
    },
    "step+avg": {"LARGE_N_STEP_FLOOR": 0.4, "LARGE_N_AVERAGE_FROM": 0.25},
}
for _cap in (0.5, 0.4, 0.3):
    VARIANTS[f"p<={_cap:g}"] = {"LARGE_N_MAX_CLIPPED": _cap}
    VARIANTS[f"step+avg p<={_cap:g}"] = {
        "LARGE_N_STEP_FLOOR": 0.4,
        "LARGE_N_AVERAGE_FROM": 0.25,
        "LARGE_N_MAX_CLIPPED": _cap,
    }
VARIANTS["trunc"] = {"LARGE_N_TRUNC": 0.003}
VARIANTS["trunc+clip"] = {"LARGE_N_TRUNC": 0.003, "LARGE_N_CLIPPED": 0.4}
VARIANTS["heavy"] = {"HEAVY_TAIL_CLIPPED": 0.4}
for _f in (0.3,):
    VARIANTS[f"heavy first{_f:g}"] = {
        "HEAVY_TAIL_CLIPPED": 0.4,
        "LARGE_N_FIRST_STAGE": _f,
    }
SWITCHES = (
    "LARGE_N_FIRST_STAGE",
    "HEAVY_TAIL_CLIPPED",
    "LARGE_N_TRUNC",
    "LARGE_N_STEP_FLOOR",
    "LARGE_N_AVERAGE_FROM",
    "LARGE_N_CLIPPED",
    "LARGE_N_MAX_CLIPPED",
)


def fit_variant(name, X, y, seed, bounds, eps=EPS):
    saved = {k: getattr(G, k) for k in SWITCHES}
    try:
        for k in SWITCHES:
            setattr(G, k, VARIANTS[name].get(k))
        m = BilevelRidge(
            epsilon=eps,
            delta=benchmark_delta(X.shape[0]),
            random_state=seed,
            feature_norm=bounds[0],
            target_bound=bounds[1],
        ).fit(X, y)
    finally:
        for k, v in saved.items():
            setattr(G, k, v)
    return np.asarray(m.coef_, dtype=float), float(m.intercept_)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument(
        "--only", nargs="+", default=None, help="substrings of the task names"
    )
    parser.add_argument(
        "--variants", nargs="+", default=None, help="names of VARIANTS to run"
    )
    parser.add_argument("--tag", default="", help="suffix of the output files")
    parser.add_argument("--eps", type=float, default=EPS)
    args = parser.parse_args()
    names = list(VARIANTS) if args.variants is None else args.variants
    if "base" not in names:
        names.insert(0, "base")
    t0 = time.perf_counter()
    cells = {
        k: v
        for k, v in tasks(False).items()
        if ("1e+04" in k or "1e+05" in k or "diabetes" in k)
        and (args.only is None or any(s in k for s in args.only))
    }
    raw = {}
    for tname, (draw, bounds, _) in cells.items():
        n = draw(0)[0].shape[0]
        delta = benchmark_delta(n)
        Xr, yr, score_r = draw(99_999)
        steps = tune_dp_gd_steps((Xr, yr), args.eps, score_r)
        scores = {}
        for seed in range(args.seeds):
            X, y, score = draw(seed)
            out = {}
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for name in names:
                    out[name] = score(fit_variant(name, X, y, seed, bounds, args.eps))
                h = HeavyTailedLinearRegression(
                    epsilon=args.eps, delta=delta, random_state=seed
                ).fit(X, y)
                out["htlr"] = score((h.coef_, h.intercept_))
            rng = np.random.default_rng(10_000 + seed)
            for clip in CLIPS:
                out[f"dpgd[{clip:g}]"] = score(
                    dp_gd_fixed_clip(X, y, args.eps, delta, clip, steps[clip], rng)
                )
            for k, v in out.items():
                scores.setdefault(k, []).append(v)
        raw[tname] = scores
        print(f"{tname} done ({time.perf_counter() - t0:.0f} s)", flush=True)
    elapsed = (time.perf_counter() - t0) / 60
    RESULTS.mkdir(exist_ok=True)
    name = "bilevel_ridge_large_n_rule"
    name += "" if args.only is None and args.variants is None else "_subset"
    name += "" if args.seeds == 5 else f"_s{args.seeds}"
    name += "" if args.eps == EPS else f"_eps{args.eps:g}"
    name += f"_{args.tag}" if args.tag else ""
    (RESULTS / f"{name}_raw.json").write_text(json.dumps(raw, indent=1))
    report = write_report(raw, args, elapsed, names)
    (RESULTS / f"{name}.md").write_text(report)
    print(report)


def write_report(raw, args, elapsed, names):
    only = (
        "" if args.only is None else " --only " + " ".join(repr(s) for s in args.only)
    )
    if args.variants is not None:
        only += " --variants " + " ".join(repr(s) for s in args.variants)
    only += f" --tag {args.tag}" if args.tag else ""
    only += "" if args.eps == EPS else f" --eps {args.eps:g}"
    L = [
        "# BilevelRidge gd: HeavyTailedLinearRegression's large-n rule",
        "",
        "Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.large_n_rule "
        f"--seeds {args.seeds}{only}` in {elapsed:.1f} min on the shared 2-core "
        f"machine. epsilon = {args.eps:g} (`--eps`), delta = min(1e-6, 1/n^2); the tasks, seeds, "
        "public bounds and baselines of `vs_baselines.py`; median excess risk "
        "(synthetic) or test MSE (diabetes) over the seeds. Variants: see the "
        "module docstring. Columns `/htlr` and `/dpgd` are the median of the "
        "variant over the median of HeavyTailedLinearRegression and of the "
        "hindsight-best fixed-clip DP-GD; `paired` is the median over seeds of "
        "the per-seed ratio variant / base (same data and random_state).",
        "",
    ]
    L.append(
        "| task | htlr | dpgd_best | "
        + " | ".join(f"{v} /htlr | {v} /dpgd" for v in names)
        + " |"
    )
    L.append("|---|---|---|" + "---|---|" * len(names))
    for task, sc in raw.items():
        med = {k: float(np.median(v)) for k, v in sc.items()}
        best = min(med[f"dpgd[{c:g}]"] for c in CLIPS)
        cells = [task, f"{med['htlr']:.4g}", f"{best:.4g}"]
        for v in names:
            cells += [f"{med[v] / med['htlr']:.2f}", f"{med[v] / best:.2f}"]
        L.append("| " + " | ".join(cells) + " |")
    L += [
        "",
        "Paired ratios to `base`: median / geometric mean over seeds of the "
        "per-seed ratio (seeds where the variant is better / seeds):",
        "",
    ]
    L.append("| task | " + " | ".join(names[1:]) + " |")
    L.append("|---|" + "---|" * (len(names) - 1))
    for task, sc in raw.items():
        base = np.asarray(sc["base"])
        cells = [task]
        for v in names[1:]:
            r = np.asarray(sc[v]) / base
            gm = float(np.exp(np.mean(np.log(r))))
            cells.append(
                f"{float(np.median(r)):.3f} / {gm:.3f} ({int(np.sum(r < 1))}/{r.size})"
            )
        L.append("| " + " | ".join(cells) + " |")
    return "\n".join(L) + "\n"


if __name__ == "__main__":
    main()
