"""Frontier: certified duality gap at epsilon = inf against epsilon = 1 accuracy.

For variants of the ``solver="gda"`` schedule constants (dual step, averaging
window, dual warm-up, momentum), all at the default ``max_iter`` (100 steps),
this script measures on Adult (sex x race by default)

- the certified duality gap of the estimator's own objective at
  ``epsilon=np.inf`` (``certified_gap`` of ``benchmarks/minimax_fair/main.py``);
- the worst-group test log-loss at epsilon = 1 over ``--seeds`` paired seeds,
  and its median paired ratio to the current default on the same seeds.

Variants patch the module constants of ``skdp.solvers.saddle_point.plan`` for
the duration of one fit (a development harness, not an API). Usage
(PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.gap_frontier --seeds 4
    nice -n 10 python -m benchmarks.minimax_fair.gap_frontier --seeds 2 \
        --variants default momentum=0.8 momentum=0.95 \
        "momentum=0.95, average_from=0.95" --tag _momentum

Writes ``benchmarks/results/minimax_fair_gap_frontier.{json,md}``.
"""

import argparse
import json
import os
import time
import warnings
from contextlib import contextmanager

import numpy as np

from benchmarks.minimax_fair.main import RESULTS, certified_gap, evaluate, load_task
from skdp import MinimaxFairClassifier
from skdp._testing.internals import saddle_point_plan_module as mf

VARIANTS = {
    "default": {},
    "average_from=0.8": {"_GDA_AVERAGE_FROM": 0.8},
    "average_from=0.95": {"_GDA_AVERAGE_FROM": 0.95},
    "dual_step=1": {"_GDA_DUAL_STEP": 1.0},
    "dual_step=1, average_from=0.8": {"_GDA_DUAL_STEP": 1.0, "_GDA_AVERAGE_FROM": 0.8},
    "dual_step=1, average_from=0.95": {
        "_GDA_DUAL_STEP": 1.0,
        "_GDA_AVERAGE_FROM": 0.95,
    },
    "momentum=0.8": {"_GDA_MOMENTUM": 0.8},
    "momentum=0.95": {"_GDA_MOMENTUM": 0.95},
    "momentum=0.95, average_from=0.95": {
        "_GDA_MOMENTUM": 0.95,
        "_GDA_AVERAGE_FROM": 0.95,
    },
    "dual_warmup=0.1, dual_step=1, average_from=0.8": {
        "_GDA_DUAL_WARMUP": 0.1,
        "_GDA_DUAL_STEP": 1.0,
        "_GDA_AVERAGE_FROM": 0.8,
    },
    "restart": {"_GDA_RESTART": True},
    "restart, momentum=0.95": {"_GDA_RESTART": True, "_GDA_MOMENTUM": 0.95},
    "restart, dual_step=1": {"_GDA_RESTART": True, "_GDA_DUAL_STEP": 1.0},
    "primal last iterate": {"_GDA_PRIMAL_AVERAGE_FROM": 0.99},
    "primal average_from=0.8": {"_GDA_PRIMAL_AVERAGE_FROM": 0.8},
    "restart, primal last iterate": {
        "_GDA_RESTART": True,
        "_GDA_PRIMAL_AVERAGE_FROM": 0.99,
    },
    "primal step x3": {"_GDA_STEP_FACTOR": 3.0},
    "primal step x3, dual_step=1": {"_GDA_STEP_FACTOR": 3.0, "_GDA_DUAL_STEP": 1.0},
    "primal step x3, dual_step=1, primal last iterate": {
        "_GDA_STEP_FACTOR": 3.0,
        "_GDA_DUAL_STEP": 1.0,
        "_GDA_PRIMAL_AVERAGE_FROM": 0.99,
    },
    "restart, dual_step=1, primal last iterate": {
        "_GDA_RESTART": True,
        "_GDA_DUAL_STEP": 1.0,
        "_GDA_PRIMAL_AVERAGE_FROM": 0.99,
    },
    # Round 4: the noiseless end of the z-continuous schedule rule
    # (_GDA_NOISELESS, used at epsilon = inf); the variants above patch the
    # noisy end, which epsilon = inf no longer uses.
    "noisy schedule at eps=inf": {
        "_GDA_NOISELESS": {
            "step_factor": 1.0,
            "dual_step": 0.3,
            "primal_average_from": 0.5,
            "dual_warmup": 0.3,
        }
    },
    "noiseless: step x3, dual_step=1, last iterate, warm-up 0.3": {
        "_GDA_NOISELESS": {
            "step_factor": 3.0,
            "dual_step": 1.0,
            "primal_average_from": 0.99,
            "dual_warmup": 0.3,
        }
    },
    "noiseless: step x3, dual_step=2, last iterate, dual average_from=0.8": {
        "_GDA_NOISELESS": {
            "step_factor": 3.0,
            "dual_step": 2.0,
            "primal_average_from": 0.99,
            "dual_warmup": 0.3,
        },
        "_GDA_AVERAGE_FROM": 0.8,
    },
    "noiseless: step x4, dual_step=1, last iterate, warm-up 0.1": {
        "_GDA_NOISELESS": {
            "step_factor": 4.0,
            "dual_step": 1.0,
            "primal_average_from": 0.99,
            "dual_warmup": 0.1,
        }
    },
}


@contextmanager
def patched(consts):
    old = {k: getattr(mf, k) for k in consts}
    try:
        for k, v in consts.items():
            setattr(mf, k, v)
        yield
    finally:
        for k, v in old.items():
            setattr(mf, k, v)


def fit(task, eps, seed, delta):
    clf = MinimaxFairClassifier(
        epsilon=eps,
        delta=delta,
        random_state=seed,
        groups=task["groups"],
        group_priors=task["priors"],
        feature_norm=task["feature_norm"],
        classes=[0, 1],
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        clf.fit(task["Xtr"], task["ytr"], sensitive_features=task["gtr"])
    if np.isfinite(eps):
        assert clf.privacy_spent_[0] <= eps
    return clf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", default="adult-sexrace")
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS)[:7])
    parser.add_argument("--tag", default="", help="suffix of the output files")
    parser.add_argument(
        "--gap-only", action="store_true", help="epsilon = inf gaps only (no seeds)"
    )
    parser.add_argument(
        "--schedule-table",
        action="store_true",
        help="also the schedule rule's z and noiseless share at each epsilon",
    )
    args = parser.parse_args()
    task = load_task(args.task)
    n = task["Xtr"].shape[0]
    delta = min(1e-6, 1.0 / n**2)
    start = time.time()
    schedule_rows = []
    for eps in [0.5, 1.0, 2.0, 5.0, np.inf] if args.schedule_table else []:
        c = fit(task, eps, 0, delta).constants_
        schedule_rows.append(
            f"| {eps} | {c['noise_multiplier']:.2f} | {c['noiseless_share']:.2f} | "
            f"{c['step_size']:.4g} | {c['dual_step']:.2f} |"
        )
    out = []
    for name in args.variants:
        with patched(VARIANTS[name]):
            clf = fit(task, np.inf, 0, delta)
            gap = certified_gap(clf, task)
            inf_loss = evaluate(
                clf.predict_proba(task["Xte"])[:, 1], task["yte"], task["gte"]
            )["wg_logloss"]
            losses = []
            for seed in range(0 if args.gap_only else args.seeds):
                c = fit(task, 1.0, seed, delta)
                losses.append(
                    evaluate(
                        c.predict_proba(task["Xte"])[:, 1], task["yte"], task["gte"]
                    )["wg_logloss"]
                )
        out.append(
            {"variant": name, "gap": gap, "inf_wg_logloss": inf_loss, "eps1": losses}
        )
        print(
            f"{time.time() - start:7.1f}s {name}: gap {gap:.2e}, inf {inf_loss:.4f}, "
            f"eps=1 median {np.median(losses):.4f}",
            flush=True,
        )
    base = np.array(out[0]["eps1"]) if out[0]["variant"] == "default" else None
    lines = [
        f"# gda schedule frontier ({args.task}, max_iter 100, "
        + (
            "gap only)"
            if args.gap_only
            else f"{args.seeds} paired seeds at epsilon = 1)"
        ),
        "",
        "Generated by `benchmarks/minimax_fair/gap_frontier.py "
        f"--task {args.task} --seeds {args.seeds}"
        + (" --gap-only" if args.gap_only else "")
        + (" --schedule-table" if args.schedule_table else "")
        + (
            f" --variants {' '.join(repr(v) for v in args.variants)}"
            if args.tag
            else ""
        )
        + (f" --tag {args.tag}" if args.tag else "")
        + "`.",
        "",
        "| variant | certified gap, eps = inf | wg log-loss, eps = inf | "
        "wg log-loss, eps = 1 (median) | paired ratio to default, eps = 1 |",
        "|---|---|---|---|---|",
    ]
    for r in out:
        ratio = (
            f"{np.median(np.array(r['eps1']) / base):.3f}" if base is not None else "-"
        )
        lines.append(
            f"| {r['variant']} | {r['gap']:.1e} | {r['inf_wg_logloss']:.4f} | "
            f"{np.median(r['eps1']):.4f} | {ratio} |"
        )
    if schedule_rows:
        lines += [
            "",
            "Schedule rule at the default max_iter (seed 0): noise multiplier z, "
            "noiseless share u = max(0, 1 - z / _GDA_NOISELESS_Z), primal step, "
            "dual step.",
            "",
            "| epsilon | z | u | primal step | dual step |",
            "|---|---|---|---|---|",
            *schedule_rows,
        ]
    stem = os.path.join(RESULTS, f"minimax_fair_gap_frontier_{args.task}{args.tag}")
    with open(stem + ".json", "w") as fh:
        json.dump(
            {"seeds": args.seeds, "rows": out, "seconds": time.time() - start},
            fh,
            indent=1,
        )
    with open(stem + ".md", "w") as fh:
        fh.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
