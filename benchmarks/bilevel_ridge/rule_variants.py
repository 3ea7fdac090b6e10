"""Paired probe: module switches of the gd solver on the whole benchmark grid (issue 21, round 6).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.rule_variants`` from the
repository root with ``PYTHONPATH=.`` (``--seeds`` repetitions per cell,
``--epsilons``, ``--variants``, ``--cells`` substrings, ``--suffix``). Fits
``BilevelRidge(inner_solver="gd", tuning="risk_estimate")`` with the task's
public bounds (``gd_risk`` of ``benchmarks/bilevel_ridge/vs_baselines.py``:
same data, same seeds, same delta) for each variant in :data:`VARIANTS`
(module switches of ``skdp.solvers.bilevel.ridge.gd``) or
:data:`PARAMS` (estimator parameters), paired with the default. Writes
``benchmarks/results/bilevel_ridge_rule_variants{suffix}.md``:
median excess risk (synthetic) or test MSE (diabetes), in brackets the ratio
of medians to ``default`` and the geometric mean of the per-seed ratios.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.vs_baselines import tasks
from skdp import BilevelRidge
from skdp._testing.internals import ridge_gd_module

#: Module switches of each variant (``skdp.solvers.bilevel.ridge.gd``).
VARIANTS = {
    "default": {},
    "garrote": dict(DEBIAS_RULE="garrote"),
    "garrote+clip6": dict(DEBIAS_RULE="garrote", RESIDUAL_CLIP=6.0),
    "clip6": dict(RESIDUAL_CLIP=6.0),
    "soft0.5": dict(DEBIAS_THRESHOLD=0.5),
    "garrote1.5+clip6": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=1.5, RESIDUAL_CLIP=6.0
    ),
    "garrote2+clip6": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=2.0, RESIDUAL_CLIP=6.0
    ),
    "garrote2+clip8": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=2.0, RESIDUAL_CLIP=8.0
    ),
    "soft+clip6": dict(RESIDUAL_CLIP=6.0),
    "g1.5+sclip6": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=1.5, SIGNAL_RESIDUAL_CLIP=6.0
    ),
    "g2+sclip6": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=2.0, SIGNAL_RESIDUAL_CLIP=6.0
    ),
    "g1.5+sclip5": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=1.5, SIGNAL_RESIDUAL_CLIP=5.0
    ),
    "sandwich": dict(STAT_SANDWICH="planned"),
    "sandwich_h": dict(STAT_SANDWICH="released"),
    "g1+sclip6": dict(
        DEBIAS_RULE="garrote", DEBIAS_THRESHOLD=1.0, SIGNAL_RESIDUAL_CLIP=6.0
    ),
}


#: Estimator parameters of each variant (the rest: defaults).
PARAMS = {
    "share0.05": dict(estimation_share=0.05),
    "share0.2": dict(estimation_share=0.2),
}


def _fit(v, X, y, eps, seed, bounds):
    switches = VARIANTS.get(v, {})
    saved = {k: getattr(ridge_gd_module, k) for k in switches}
    for k, val in switches.items():
        setattr(ridge_gd_module, k, val)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return BilevelRidge(
                inner_solver="gd",
                tuning="risk_estimate",
                epsilon=eps,
                delta=benchmark_delta(X.shape[0]),
                random_state=seed,
                feature_norm=bounds[0],
                target_bound=bounds[1],
                **PARAMS.get(v, {}),
            ).fit(X, y)
    finally:
        for k, val in saved.items():
            setattr(ridge_gd_module, k, val)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--variants", nargs="+", default=None)
    parser.add_argument("--cells", nargs="+", default=None)
    parser.add_argument("--quick", action="store_true", help="n <= 1e4 only")
    parser.add_argument("--suffix", default="")
    args = parser.parse_args()
    names = ["default"] + [
        v for v in (args.variants or list(VARIANTS) + list(PARAMS)) if v != "default"
    ]
    t0 = time.perf_counter()
    all_tasks = tasks(quick=args.quick)
    rows = []
    for tname, (draw, bounds, _) in all_tasks.items():
        if args.cells and not any(c in tname for c in args.cells):
            continue
        for eps in args.epsilons:
            scores = {v: [] for v in names}
            for seed in range(args.seeds):
                X, y, score = draw(seed)
                for v in names:
                    m = _fit(v, X, y, eps, seed, bounds)
                    scores[v].append(score((np.asarray(m.coef_), float(m.intercept_))))
            rows.append((tname, eps, {v: np.array(s) for v, s in scores.items()}))
            print(f"{tname} eps={eps} ({time.perf_counter() - t0:.0f} s)", flush=True)
    elapsed = (time.perf_counter() - t0) / 60
    cmd = (
        "nice -n 10 python -m benchmarks.bilevel_ridge.rule_variants "
        f"--seeds {args.seeds} --epsilons {' '.join(f'{e:g}' for e in args.epsilons)}"
        + (f" --variants {' '.join(args.variants)}" if args.variants else "")
        + (f" --cells {' '.join(repr(c) for c in args.cells)}" if args.cells else "")
        + (" --quick" if args.quick else "")
        + (f" --suffix {args.suffix}" if args.suffix else "")
    )
    lines = [
        "# BilevelRidge gd solver: rule variants, paired on the benchmark grid",
        "",
        f"Generated by `{cmd}` in {elapsed:.1f} min on the shared 2-core machine. "
        "Median excess risk (synthetic) or test MSE (diabetes) of `gd_risk` over "
        "the seeds of `benchmarks/bilevel_ridge/vs_baselines.py` (same data, same "
        "seeds); delta = min(1e-6, 1/n^2). In brackets: ratio of medians to "
        "`default` / geometric mean of the per-seed ratios.",
        "",
        "| task | eps | " + " | ".join(names) + " |",
        "|---|---|" + "---|" * len(names),
    ]
    for tname, eps, sc in rows:
        base = sc["default"]
        cells = []
        for v in names:
            med = float(np.median(sc[v]))
            gm = float(np.exp(np.mean(np.log(sc[v] / base))))
            cells.append(f"{med:.4g} ({med / np.median(base):.2f} / {gm:.2f})")
        lines.append(f"| {tname} | {eps:g} | " + " | ".join(cells) + " |")
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_rule_variants{args.suffix}.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
