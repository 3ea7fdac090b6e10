"""Probe: the multinomial ``"gda"`` step count where the noise is small (issue 17).

MinimaxFairClassifier (one group: multinomial ERM) trails the hindsight-best
fixed-clip DP-GD on digits at epsilon = 5 (``minimax_fair_multiclass_real.md``).
This probe refits it with ``max_iter`` in {100 (the default), 150, 200, 300}
(the GDP noise recalibrated to each count: same budget) on the protocol of
``multiclass_real.py`` (stratified 75/25 splits, 2 seeds per split; the
synthetic K = 5, d = 20 task at n = 1e4) and reports, per cell, the mean
accuracy, the paired difference to the best of 9 fixed-clip DP-GD settings
chosen in hindsight and to the default, and the public noise ratio ``r`` of
the default plan (:func:`~skdp.solvers.saddle_point.plan.multinomial_noise_ratio`).
No estimator change: it asks whether a public step-count rule could close the
epsilon = 5 gap without losing other cells.

Usage::

    python -m benchmarks.minimax_fair.multiclass_step_count [--splits 10] [--syn-reps 3]
"""

import argparse
import time
import warnings

import numpy as np
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

STEP_COUNTS = (100, 150, 200, 300)
CELLS = (
    ("digits", 5.0),
    ("digits", 2.0),
    ("digits", 1.0),
    ("wine", 5.0),
    ("wine", 2.0),
    ("iris", 5.0),
    ("iris", 2.0),
    ("synthetic", 5.0),
    ("synthetic", 1.0),
)


def task_data(name, splits, syn_reps):
    if name == "synthetic":
        Xte, yte = synthetic(50_000, np.random.default_rng(99))
        out = []
        for rep in range(syn_reps):
            Xtr, ytr = synthetic(10_000, np.random.default_rng(1000 + rep))
            out.append((Xtr, Xte, ytr, yte))
        return out, 5
    X, y = real_data(name)
    splits_ = [
        train_test_split(X, y, stratify=y, test_size=0.25, random_state=rep)
        for rep in range(splits)
    ]
    return [(a, b, c, d) for a, b, c, d in splits_], int(y.max()) + 1


def noise_ratio(clf, n, d, K):
    plan = clf._plan(n, d, 1, K, clf.delta_, False)
    z = plan.gda.noise_multiplier
    return plan_module.multinomial_noise_ratio(z, n, d + 1, K)


def run_cell(name, eps, splits, syn_reps):
    data, K = task_data(name, splits, syn_reps)
    acc = {T: [] for T in STEP_COUNTS}
    gd, ratio = {}, None
    for rep, (Xtr, Xte, ytr, yte) in enumerate(data):
        for j in range(2):
            seed = rep * 2 + j
            for T in STEP_COUNTS:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = MinimaxFairClassifier(
                        epsilon=eps, classes=range(K), random_state=seed, max_iter=T
                    ).fit(Xtr, ytr)
                acc[T].append(clf.score(Xte, yte))
                if ratio is None and T == 100:
                    ratio = noise_ratio(clf, *Xtr.shape, K)
            delta = len(Xtr) ** -1.1
            for C in (0.1, 1.0, 10.0):
                for lr in (0.3, 1.0, 3.0):
                    W = dp_gd_multinomial(
                        Xtr, ytr, K, C, lr, eps, delta, np.random.default_rng(seed)
                    )
                    gd.setdefault((C, lr), []).append(acc_of(W, Xte, yte))
    best = max(gd, key=lambda k: np.mean(gd[k]))
    return {"acc": acc, "gd": np.array(gd[best]), "best": best, "ratio": ratio}


def paired(a, b):
    d = np.asarray(a) - np.asarray(b)
    return f"{d.mean():+.4f} ± {d.std(ddof=1) / np.sqrt(len(d)):.4f}"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=10)
    parser.add_argument("--syn-reps", type=int, default=3)
    args = parser.parse_args()
    t0 = time.perf_counter()
    rows = []
    for name, eps in CELLS:
        r = run_cell(name, eps, args.splits, args.syn_reps)
        base = r["acc"][100]
        for T in STEP_COUNTS:
            v = r["acc"][T]
            rows.append(
                f"| {name} | {eps:g} | {r['ratio']:.3f} | {T} | {np.mean(v):.4f} | "
                f"{paired(v, base)} | {paired(v, r['gd'])} | "
                f"C={r['best'][0]:g}, step={r['best'][1]:g} |"
            )
        print(name, eps, "done", round(time.perf_counter() - t0), "s", flush=True)
    cmd = (
        "nice -n 5 python -m benchmarks.minimax_fair.multiclass_step_count "
        f"--splits {args.splits} --syn-reps {args.syn_reps}"
    )
    lines = [
        "# MinimaxFairClassifier multinomial gda: step count where the noise is small (probe)",
        "",
        f"`{cmd}` (commit {head_commit()}; {args.splits} splits x 2 seeds, synthetic "
        f"{args.syn_reps} replicates x 2 seeds; "
        f"{(time.perf_counter() - t0) / 60:.1f} min on a shared 2-core machine). "
        "Mean test accuracy; '±' is the standard error of the paired differences; "
        "r: the default plan's public noise ratio (T = 100).",
        "",
        "**Finding.** More steps close digits at epsilon = 5 (T = 200: +0.007 against "
        "the default, level with the hindsight-best DP-GD) but lose wine at 5 and 2, "
        "iris at 5 and digits at 1 (r 0.21-0.63), and gain nothing beyond noise on the "
        "synthetic task (r 0.009-0.035): digits' r = 0.14 lies between them, so a rule "
        "of r alone would be a band fitted to one cell. Not adopted (as for "
        "HeavyTailedLogisticRegression's zmax probe, `multiclass_travel.md`).",
        "",
        "| task | epsilon | r (T=100) | T | accuracy | - default | - best DP-GD | best DP-GD |",
        "|---|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]
    path = RESULTS / "minimax_fair_multiclass_step_count.md"
    path.write_text("\n".join(lines))
    print(path)


if __name__ == "__main__":
    main()
