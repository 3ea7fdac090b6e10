"""Probe: the plug-in rule's noise estimate with a released curvature (issue 21, round 4).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.noise_estimate`` from the
repository root with ``PYTHONPATH=.`` (``--seeds`` repetitions per cell,
``--epsilons``). Runs ``BilevelRidge(inner_solver="gd",
tuning="risk_estimate")`` with and without the task's public bounds on the
cells of ``benchmarks/bilevel_ridge/vs_baselines.py`` with n <= 2000
(same data, same seeds), for the variants in :data:`VARIANTS`: module
switches of ``skdp.solvers.bilevel.ridge.gd``, each an ablation of the
default (``planned``: round 3, the planned curvature ``(1 - p) s**2``, no
release). The release is planned only where ``gradient_noise_ratio >
CURVATURE_RATIO`` and, in ``BilevelRidge``, with a public ``feature_norm``:
the ``nobounds`` rows show the default estimator is unchanged there.

Writes ``benchmarks/results/bilevel_ridge_noise_estimate.md``.
"""

import argparse
import math
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.vs_baselines import tasks
from skdp import BilevelRidge
from skdp._testing.internals import ridge_gd_module as ridge_gd_module

CELLS = (
    "low SNR, n=1e+03",
    "medium SNR, n=1e+03",
    "high SNR, n=1e+03",
    "skewed noise, medium SNR, n=1e+03",
    "heavy-tailed, n=2000, d=10",
    "diabetes (test MSE)",
)


#: Module switches of each variant (``skdp.solvers.bilevel.ridge.gd``).
VARIANTS = {
    "planned": dict(CURVATURE_RATIO=math.inf),
    "default": {},
    "round4": dict(NO_SIGNAL_AS_CONSTANT=False),
    "evidence_0": dict(NO_SIGNAL_EVIDENCE=0.0),
    "evidence_1": dict(NO_SIGNAL_EVIDENCE=1.0),
    "evidence_2": dict(NO_SIGNAL_EVIDENCE=2.0),
    "evidence_3": dict(NO_SIGNAL_EVIDENCE=3.0),
    "no_shrink": dict(SHRINK_INTERCEPT=False, NO_SIGNAL_AS_CONSTANT=False),
    "own_curv": dict(OWN_INTERCEPT_CURVATURE=True, NO_SIGNAL_AS_CONSTANT=False),
    "own_curv+c": dict(OWN_INTERCEPT_CURVATURE=True),
    "shrink_always": dict(SHRINK_ONLY_WITHOUT_SIGNAL=False),
    "floor_0.1": dict(RELEASED_SIGNAL_FLOOR=None),
    "kappa_1": dict(SIGNAL_KAPPA=1.0),
    "stationary": dict(FINITE_RUN=False),
    "share_0.1": dict(CURVATURE_SHARE=0.1),
    "share_0.075": dict(CURVATURE_SHARE=0.075),
    # issue 21, round 6: the release's public switch (0.5 left n = 1e3,
    # d = 20 at epsilon = 1 without it: ratio 0.42; the default is now 0.4,
    # "ratio_0.5" is the former default)
    "ratio_0.5": dict(CURVATURE_RATIO=0.5),
    "ratio_0.4": dict(CURVATURE_RATIO=0.4),
    "ratio_0.3": dict(CURVATURE_RATIO=0.3),
    "ratio_0.2": dict(CURVATURE_RATIO=0.2),
    "ratio_0.1": dict(CURVATURE_RATIO=0.1),
    "ratio_0.4+kappa_1": dict(CURVATURE_RATIO=0.4, SIGNAL_KAPPA=1.0),
    "ratio_0.4+kappa_0.75": dict(CURVATURE_RATIO=0.4, SIGNAL_KAPPA=0.75),
    "ratio_0.4+share_0.025": dict(CURVATURE_RATIO=0.4, CURVATURE_SHARE=0.025),
    "kappa_1.1": dict(SIGNAL_KAPPA=1.1),
    "kappa_1.15": dict(SIGNAL_KAPPA=1.15),
    "kappa_1.5": dict(SIGNAL_KAPPA=1.5),
}


def variant(name):
    """Set the module switches of a variant; returns a restore callable."""
    saved = {k: getattr(ridge_gd_module, k) for k in VARIANTS[name]}
    for k, v in VARIANTS[name].items():
        setattr(ridge_gd_module, k, v)

    def restore():
        for k, v in saved.items():
            setattr(ridge_gd_module, k, v)

    return restore


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0, 2.0])
    parser.add_argument(
        "--variants",
        nargs="+",
        default=None,
        help="subset of VARIANTS ('planned' added)",
    )
    parser.add_argument(
        "--suffix", default="", help="appended to the result file's name"
    )
    args = parser.parse_args()
    names = list(VARIANTS)
    if args.variants:
        names = ["planned"] + [v for v in args.variants if v != "planned"]
    t0 = time.perf_counter()
    all_tasks = tasks(quick=True)
    rows = []
    for tname in CELLS:
        draw, bounds, _ = all_tasks[tname]
        for eps in args.epsilons:
            scores = {}
            for seed in range(args.seeds):
                X, y, score = draw(seed)
                delta = benchmark_delta(X.shape[0])
                for bname, fb in (
                    ("bounds", dict(feature_norm=bounds[0], target_bound=bounds[1])),
                    ("nobounds", {}),
                ):
                    for v in names:
                        restore = variant(v)
                        try:
                            with warnings.catch_warnings():
                                warnings.simplefilter("ignore")
                                m = BilevelRidge(
                                    epsilon=eps,
                                    delta=delta,
                                    random_state=seed,
                                    tuning="risk_estimate",
                                    **fb,
                                ).fit(X, y)
                        finally:
                            restore()
                        s = score((np.asarray(m.coef_), float(m.intercept_)))
                        scores.setdefault((bname, v), []).append(s)
            rows.append(
                (tname, eps, {k: float(np.median(v)) for k, v in scores.items()})
            )
            print(f"{tname} eps={eps} ({time.perf_counter() - t0:.0f} s)", flush=True)
    elapsed = (time.perf_counter() - t0) / 60
    lines = [
        "# BilevelRidge: the plug-in rule with a released curvature",
        "",
        f"Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.noise_estimate "
        f"--seeds {args.seeds} --epsilons {' '.join(f'{e:g}' for e in args.epsilons)}"
        + (f" --variants {' '.join(args.variants)}" if args.variants else "")
        + (f" --suffix {args.suffix}" if args.suffix else "")
        + "` "
        f"in {elapsed:.1f} min on the shared 2-core machine. Median excess risk "
        "(synthetic) or test MSE (diabetes) over the seeds of "
        "`benchmarks/bilevel_ridge/vs_baselines.py` (same data, same seeds); "
        "delta = min(1e-6, 1/n^2). In brackets: ratio to `planned` (round 3).",
        "",
        "| task | eps | bounds | " + " | ".join(names) + " |",
        "|---|---|---|" + "---|" * len(names),
    ]
    for tname, eps, med in rows:
        for bname in ("bounds", "nobounds"):
            base = med[(bname, "planned")]
            cells = [
                f"{med[(bname, v)]:.4g} ({med[(bname, v)] / base:.2f})" for v in names
            ]
            lines.append(f"| {tname} | {eps:g} | {bname} | " + " | ".join(cells) + " |")
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"bilevel_ridge_noise_estimate{args.suffix}.md").write_text(report)
    print(report)


if __name__ == "__main__":
    main()
