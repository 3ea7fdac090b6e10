"""The overshoot guard of the softmax solver (issue 17, ``CLIP_COLLAPSE_FRACTION``).

1. Checkpoint clip levels of the default multinomial fit (``_fit_multinomial``,
   also with K = 2) on breast_cancer (columns over public range constants),
   iris, wine and digits at epsilon in {1, 2, 5}, split 0, seed 0, with the
   guard and without it (``CLIP_COLLAPSE_FRACTION = 0``).
2. Accuracy on breast_cancer (K = 2) over ``--splits`` splits x 2 seeds at
   epsilon in {2, 5} for fractions {0, 1/32, 1/8, 1/4, 1/2}, paired (same
   splits and seeds).

Usage: ``python -m benchmarks.heavy_tailed.multiclass_overshoot [--splits 10]``.
Writes ``benchmarks/results/multiclass_overshoot.md``.
"""

import argparse
import time
import warnings
from pathlib import Path

import numpy as np
from sklearn.model_selection import train_test_split

from benchmarks.heavy_tailed.multiclass import acc_of, heldout_splits, real_data
from skdp._testing.internals import heavy_tailed_multinomial_module as mn
from skdp.linear_model import HeavyTailedLogisticRegression

RESULTS = Path(__file__).resolve().parents[1] / "results"
CANCER = "breast_cancer (K=2)"


def split(name, rep):
    if name == CANCER:
        return heldout_splits(name, rep)
    X, y = real_data(name)
    return train_test_split(X, y, stratify=y, test_size=0.25, random_state=rep)


def fit(name, rep, seed, eps, fraction):
    Xtr, Xte, ytr, yte = split(name, rep)
    K = int(max(ytr.max(), yte.max())) + 1
    saved, mn.CLIP_COLLAPSE_FRACTION = mn.CLIP_COLLAPSE_FRACTION, fraction
    try:
        clf = HeavyTailedLogisticRegression(
            epsilon=eps, classes=range(K), random_state=seed
        )
        clf.classes_, clf.n_features_in_ = np.arange(K), Xtr.shape[1]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = clf._fit_multinomial(Xtr, ytr.astype(np.int64), K)
    finally:
        mn.CLIP_COLLAPSE_FRACTION = saved
    return acc_of(res.coef, Xte, yte), res


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=10)
    args = parser.parse_args()
    t0 = time.perf_counter()
    guard = mn.CLIP_COLLAPSE_FRACTION
    out = [
        "# Overshoot guard of the softmax solver (issue 17)\n",
        "Command: `nice -n 10 python -m benchmarks.heavy_tailed.multiclass_overshoot "
        f"--splits {args.splits}`.\n",
        "## Checkpoint clip levels (split 0, seed 0)\n",
        f"'guard': `CLIP_COLLAPSE_FRACTION = {guard}` (a release below that fraction "
        "of the level in use is discarded); 'none': every release used. Levels at "
        "the checkpoints (the level in use at that step).\n",
        "| data | eps | checkpoints | guard: clips / acc | none: clips / acc |",
        "|---|---|---|---|---|",
    ]
    for name in (CANCER, "iris", "wine", "digits"):
        for eps in (1.0, 2.0, 5.0):
            cells = []
            for fr in (guard, 0.0):
                acc, res = fit(name, 0, 0, eps, fr)
                ch = res.plan.gd.checkpoints or (0,)
                clips = ", ".join(f"{res.clip_levels[t]:.3g}" for t in ch)
                cells.append(f"{clips} / {acc:.3f}")
            out.append(
                f"| {name} | {eps:g} | {res.plan.gd.checkpoints} | "
                + " | ".join(cells)
                + " |"
            )
    fractions = (0.0, 1 / 32, 1 / 8, 0.25, 0.5)
    out += [
        "",
        f"## breast_cancer (K = 2): accuracy by fraction ({args.splits} splits x 2 seeds)\n",
        "Mean test accuracy; paired difference against no guard (fraction 0) "
        "with its standard error.\n",
        "| eps | " + " | ".join(f"{f:.4g}" for f in fractions) + " |",
        "|---|" + "---|" * len(fractions),
    ]
    for eps in (2.0, 5.0):
        runs = np.array(
            [
                [fit(CANCER, rep, rep * 2 + j, eps, f)[0] for f in fractions]
                for rep in range(args.splits)
                for j in range(2)
            ]
        )
        cells = []
        for k in range(len(fractions)):
            diff = runs[:, k] - runs[:, 0]
            se = diff.std(ddof=1) / np.sqrt(len(diff))
            cells.append(f"{runs[:, k].mean():.3f} ({diff.mean():+.3f} ± {se:.3f})")
        out.append(f"| {eps:g} | " + " | ".join(cells) + " |")
    out.append(f"\n{time.perf_counter() - t0:.0f} s wall on a shared 2-core machine.")
    (RESULTS / "multiclass_overshoot.md").write_text("\n".join(out) + "\n")
    print("\n".join(out))


if __name__ == "__main__":
    main()
