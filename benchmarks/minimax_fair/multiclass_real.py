"""Benchmark: multiclass MinimaxFairClassifier against fixed-clip DP-GD (issue 17).

The real-data protocol of ``benchmarks/heavy_tailed/multiclass.py``: iris (cm
/ 8), wine (columns over public range constants), digits (/ 16), stratified
75/25 splits (``random_state`` = split index), ``--seeds-per-split`` seeds per
split; and issue 17's synthetic task (K = 5, d = 20, Student-t(3) features)
at ``--ns`` training rows (training replicate ``r`` from seed ``1000 + r``),
one 50,000-row test set. ``delta = n^-1.1`` everywhere.

``MinimaxFairClassifier(classes=range(K))`` runs at its defaults with **one
group** (no ``sensitive_features``): the group-DRO objective is then plain
multinomial ERM, the fair comparison with DP-GD, which ignores groups; the
feature-norm bound is estimated privately, as ``HeavyTailedLogisticRegression``
estimates its scales in that benchmark. Per run (split, seed), in one process:

- ``MinimaxFairClassifier`` (default schedule) with ``random_state = seed``;
- the same fit without round 6's averaging rule (``previous``: the
  no-momentum averaging start 0.5 at every number of coefficients, without
  :func:`~skdp.solvers.saddle_point.plan.multinomial_noisy_average_from`;
  every other rule as in the default), paired;
- multinomial full-batch DP-GD (``dp_gd_multinomial`` of the heavy-tailed
  benchmark: per-record Frobenius clip C in {0.1, 1, 10}, step in {0.3, 1,
  3}, 100 steps, exact GDP noise) with ``default_rng(seed)``: the same
  baselines, splits and seeds as ``benchmarks/results/multiclass_real.md``;
- non-private multinomial ``LogisticRegression``.

"Best DP-GD" is the (C, step) with the best mean test accuracy at that
epsilon, chosen in hindsight. Differences are paired per run; '±' is the
standard error of the paired differences (std / sqrt(runs)).

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.multiclass_real --part real \\
        --splits 20 --seeds-per-split 2
    nice -n 10 python -m benchmarks.minimax_fair.multiclass_real \\
        --part synthetic --ns 10000 --syn-reps 5 --seeds-per-split 2
    nice -n 10 python -m benchmarks.minimax_fair.multiclass_real \\
        --part synthetic --ns 100000 --syn-reps 4 --seeds-per-split 2 --eps 1

Writes ``benchmarks/results/minimax_fair_multiclass_<part>[_n<n>].{md,json}``
(``--quick``: 2 splits, 1 seed, nothing written).
"""

import argparse
import contextlib
import json
import math
import time
import warnings
from itertools import product

import numpy as np
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS, head_commit
from benchmarks.heavy_tailed.multiclass import (
    acc_of,
    dp_gd_multinomial,
    real_data,
    synthetic,
)
from skdp import MinimaxFairClassifier
from skdp._testing.internals import saddle_point_plan_module as plan_module

CLIPS = (0.1, 1.0, 10.0)
LRS = (0.3, 1.0, 3.0)


@contextlib.contextmanager
def previous_schedule():
    """The defaults without round 6's averaging rule (issue 17): the
    no-momentum averaging start 0.5 at every ``p K`` (before
    :func:`~skdp.solvers.saddle_point.plan.multinomial_noisy_average_from`);
    every other rule stays on."""
    saved = plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM
    plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = (0.5, 0.5)
    try:
        yield
    finally:
        plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = saved


def fit_minimax(Xtr, ytr, Xte, yte, K, eps, seed):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MinimaxFairClassifier(epsilon=eps, classes=range(K), random_state=seed)
        clf.fit(Xtr, ytr)
    assert clf.privacy_spent_[0] <= eps
    return float(clf.score(Xte, yte)), clf


def run(Xtr, ytr, Xte, yte, K, epsilons, seed, nonprivate):
    """Accuracies of every method on one split and seed."""
    delta = len(Xtr) ** -1.1
    out = {"nonprivate": nonprivate}
    for eps in epsilons:
        row = {}
        t0 = time.process_time()
        row["minimax"], clf = fit_minimax(Xtr, ytr, Xte, yte, K, eps, seed)
        row["minimax_cpu"] = time.process_time() - t0
        row["momentum"] = clf.constants_["momentum"]
        row["radius"] = clf.constants_["radius"]
        row["clip_factor"] = clf.constants_["clip"] / math.sqrt(
            clf.feature_norm_**2 + 1.0
        )
        row["feature_norm"] = clf.feature_norm_
        with previous_schedule():
            row["previous"], _ = fit_minimax(Xtr, ytr, Xte, yte, K, eps, seed)
        for C, lr in product(CLIPS, LRS):
            W = dp_gd_multinomial(
                Xtr, ytr, K, C, lr, eps, delta, np.random.default_rng(seed)
            )
            row[f"gd_C{C:g}_lr{lr:g}"] = acc_of(W, Xte, yte)
        out[str(eps)] = row
    return out


def nonprivate_accuracy(Xtr, ytr, Xte, yte):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(LogisticRegression(max_iter=2000).fit(Xtr, ytr).score(Xte, yte))


def se(v):
    """Standard error of the mean of paired differences ``v``."""
    return float(np.std(v, ddof=1) / math.sqrt(len(v))) if len(v) > 1 else math.nan


def summarise(runs, epsilons):
    out = {}
    nonpriv = np.array([r["nonprivate"] for r in runs])
    for eps in map(str, epsilons):
        rows = [r[eps] for r in runs]
        gd_keys = [k for k in rows[0] if k.startswith("gd_")]
        gd_mean = {k: float(np.mean([r[k] for r in rows])) for k in gd_keys}
        best = max(gd_mean, key=gd_mean.get)
        worst_clip = min(
            max(v for k, v in gd_mean.items() if k.startswith(f"gd_C{C:g}_"))
            for C in CLIPS
        )
        mm = np.array([r["minimax"] for r in rows])
        prev = np.array([r["previous"] for r in rows])
        gd = np.array([r[best] for r in rows])
        m = len(rows)
        out[eps] = {
            "runs": m,
            "minimax": float(mm.mean()),
            "minimax_min": float(mm.min()),
            "previous": float(prev.mean()),
            "best_gd": gd_mean[best],
            "best_gd_cfg": best[3:],
            "worst_clip_gd": worst_clip,
            "nonprivate": float(nonpriv.mean()),
            "diff_gd": float((mm - gd).mean()),
            "diff_gd_se": se(mm - gd),
            "diff_prev": float((mm - prev).mean()),
            "diff_prev_se": se(mm - prev),
            "diff_nonprivate": float((mm - nonpriv).mean()),
            "diff_nonprivate_se": se(mm - nonpriv),
            "momentum": float(np.median([r["momentum"] for r in rows])),
            "radius": float(np.median([r["radius"] for r in rows])),
            "clip_factor": float(np.median([r["clip_factor"] for r in rows])),
            "feature_norm_median": float(np.median([r["feature_norm"] for r in rows])),
            "feature_norm_range": [
                float(np.min([r["feature_norm"] for r in rows])),
                float(np.max([r["feature_norm"] for r in rows])),
            ],
            "minimax_cpu": float(np.median([r["minimax_cpu"] for r in rows])),
        }
    return out


def table(name, summary):
    lines = [
        f"### {name}",
        "",
        "| eps | runs | MinimaxFair | previous | MF - previous | best DP-GD "
        "(C, step) | MF - best DP-GD | worst fixed-clip DP-GD | MF min | "
        "non-private | MF - non-private | momentum | radius | clip | "
        "feature_norm_ median [min, max] |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for eps, r in summary.items():
        lo, hi = r["feature_norm_range"]
        lines.append(
            f"| {float(eps):g} | {r['runs']} | {r['minimax']:.4f} | {r['previous']:.4f}"
            f" | {r['diff_prev']:+.4f} ± {r['diff_prev_se']:.4f} | {r['best_gd']:.4f}"
            f" ({r['best_gd_cfg']}) | {r['diff_gd']:+.4f} ± {r['diff_gd_se']:.4f} | "
            f"{r['worst_clip_gd']:.4f} | {r['minimax_min']:.4f} | "
            f"{r['nonprivate']:.4f} | {r['diff_nonprivate']:+.4f} ± "
            f"{r['diff_nonprivate_se']:.4f} | {r['momentum']:.2f} | {r['radius']:.3g} | "
            f"{r['clip_factor']:.3g} | "
            f"{r['feature_norm_median']:.3g} [{lo:.3g}, {hi:.3g}] |"
        )
    return lines + [""]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--part", choices=("real", "synthetic"), default="real")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--seeds-per-split", type=int, default=2)
    parser.add_argument("--syn-reps", type=int, default=5)
    parser.add_argument("--ns", default="10000")
    parser.add_argument("--eps", default="0.5,1,2,5")
    parser.add_argument("--datasets", default="iris,wine,digits")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--suffix", default="", help="result file name suffix")
    args = parser.parse_args()
    epsilons = [float(e) for e in args.eps.split(",")]
    per = 1 if args.quick else args.seeds_per_split
    t_start = time.perf_counter()
    summaries, raw = {}, {}
    if args.part == "real":
        splits = 2 if args.quick else args.splits
        for name in args.datasets.split(","):
            X, y = real_data(name)
            K = int(y.max()) + 1
            runs = []
            for rep in range(splits):
                Xtr, Xte, ytr, yte = train_test_split(
                    X, y, stratify=y, test_size=0.25, random_state=rep
                )
                nonpriv = nonprivate_accuracy(Xtr, ytr, Xte, yte)
                for j in range(per):
                    seed = rep * per + j
                    runs.append(run(Xtr, ytr, Xte, yte, K, epsilons, seed, nonpriv))
            summaries[name] = summarise(runs, epsilons)
            raw[name] = runs
            print(name, "done", round(time.perf_counter() - t_start), "s", flush=True)
        size = f"{splits} stratified splits x {per} seeds"
    else:
        reps = 1 if args.quick else args.syn_reps
        Xte, yte = synthetic(50_000, np.random.default_rng(99))
        for n in (int(v) for v in args.ns.split(",")):
            runs = []
            for rep in range(reps):
                Xtr, ytr = synthetic(n, np.random.default_rng(1000 + rep))
                nonpriv = nonprivate_accuracy(Xtr, ytr, Xte, yte)
                for j in range(per):
                    seed = rep * per + j
                    runs.append(run(Xtr, ytr, Xte, yte, 5, epsilons, seed, nonpriv))
            key = f"synthetic n={n}"
            summaries[key] = summarise(runs, epsilons)
            raw[key] = runs
            print(key, "done", round(time.perf_counter() - t_start), "s", flush=True)
        size = f"{reps} training replicates x {per} seeds"
    minutes = (time.perf_counter() - t_start) / 60
    cmd = (
        "nice -n 10 python -m benchmarks.minimax_fair.multiclass_real "
        f"--part {args.part} --eps {args.eps}"
        + (
            f" --datasets {args.datasets} --splits {args.splits}"
            if args.part == "real"
            else f" --ns {args.ns} --syn-reps {args.syn_reps}"
        )
        + f" --seeds-per-split {args.seeds_per_split}"
        + (" --quick" if args.quick else "")
        + (f" --suffix {args.suffix}" if args.suffix else "")
    )
    lines = [
        "# MinimaxFairClassifier, multiclass, against fixed-clip multinomial DP-GD",
        "",
        f"`{cmd}` (commit {head_commit()}; {size}; {minutes:.1f} min on a shared "
        "2-core machine). "
        "One group (no `sensitive_features`: plain multinomial ERM, the fair "
        "comparison with DP-GD), `classes=range(K)`, defaults otherwise "
        "(`feature_norm=None`: estimated privately, or the public default "
        "sqrt(d) below the quantile's reach). DP-GD: 100 full-batch steps, "
        "exact GDP noise, C in {0.1, 1, 10} x step in {0.3, 1, 3}, the same "
        "splits and seeds; best (C, step) chosen in hindsight on the mean. "
        "'previous': the defaults without round 6's averaging rule "
        "(multinomial_noisy_average_from: the no-momentum averaging start 0.5 "
        "at every p K; every other rule on in both columns), same seeds. "
        "'clip': the clip factor used. "
        "Mean test accuracy; '±' is "
        "the standard error of the paired differences. 'momentum': median of "
        "the rule's value; radius: the default radius used; `feature_norm_`: the "
        "released (or public default) bound.",
        "",
    ]
    for name, summary in summaries.items():
        lines += table(name, summary)
    print("\n".join(lines))
    if args.quick:
        return
    tag = args.part
    if args.part == "synthetic":
        tag += "_n" + "_".join(args.ns.split(","))
    stem = RESULTS / f"minimax_fair_multiclass_{tag}{args.suffix}"
    (stem.parent / (stem.name + ".md")).write_text("\n".join(lines) + "\n")
    (stem.parent / (stem.name + ".json")).write_text(
        json.dumps({"summaries": summaries, "runs": raw}, indent=1)
    )


if __name__ == "__main__":
    main()
