"""Probe: the gda momentum restart where the noiseless share u is small.

The schedule's constants move continuously with ``u = max(0, 1 - z)``, but
the gradient restart (:func:`~skdp.solvers.saddle_point.plan.gda_schedule`,
db45124) switches on at any ``u > 0``: just below ``z = 1`` the run is still
noisy, and the restart test ``grad @ (w_t - w_{t-1}) > 0`` then reads a
gradient dominated by noise. ``noiseless_restart.py`` measured the band at
``u >= 0.18`` on the synthetic task (3 seeds); this probe measures the
smallest shares (``u`` about 0.01-0.2), reached at epsilon above ~100 at the
default ``max_iter`` or at moderate epsilon with a small ``max_iter``, paired
(same data, same seeds) restart on (the default, ``after``) against off
(``before``), on the synthetic task and on Adult (sex; sex x race), 20 seeds
each.
Metric: worst-group test log-loss; a ``u = 0`` cell checks bit-identity.

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.restart_band

Writes ``benchmarks/results/minimax_fair_restart_band.md`` (about 6
minutes on the shared machine).
"""

import argparse
import os
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS, head_commit
from benchmarks.minimax_fair.main import load_task
from benchmarks.minimax_fair.noiseless_restart import variant
from skdp import MinimaxFairClassifier
from skdp.fairness import worst_group_loss

CELLS = {
    "synthetic": [(100.0, 100), (120.0, 100), (150.0, 100), (40.0, 20),
                  (30.0, 10), (20.0, 5)],
    "adult-sex": [(100.0, 100), (130.0, 100), (160.0, 100), (40.0, 20),
                  (30.0, 10)],
    "adult-sexrace": [(130.0, 100), (160.0, 100), (30.0, 10)],
}  # fmt: skip


def _loss(task, eps, max_iter, seed, name):
    params = dict(
        epsilon=eps,
        delta=1e-10,
        random_state=seed,
        groups=task["groups"],
        group_priors=task["priors"],
        feature_norm=task["feature_norm"],
        classes=[0, 1],
        max_iter=max_iter,
    )
    with variant(name), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MinimaxFairClassifier(**params).fit(
            task["Xtr"], task["ytr"], sensitive_features=task["gtr"]
        )
    proba = clf.predict_proba(task["Xte"])[:, 1]
    wgl = worst_group_loss(task["yte"], proba, sensitive_features=task["gte"])
    return wgl, clf.constants_


def cell_row(task_name, task, eps, max_iter, seeds):
    before, after = [], []
    for seed in seeds:
        b, const = _loss(task, eps, max_iter, seed, "before")
        a, _ = _loss(task, eps, max_iter, seed, "after")
        before.append(b)
        after.append(a)
    before, after = np.array(before), np.array(after)
    diff = after - before
    se = diff.std(ddof=1) / np.sqrt(diff.size)
    return (
        f"| {task_name} | {eps:g} | {max_iter} | {const['noise_multiplier']:.3f} | "
        f"{const['noiseless_share']:.3f} | {np.median(before):.4f} | "
        f"{np.median(after):.4f} | {np.median(after) / np.median(before):.4f} | "
        f"{diff.mean():+.4f} ({se:.4f}) | {int(np.sum(diff < 0))}/{diff.size} |"
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=20)
    args = parser.parse_args()
    seeds = range(args.seeds)
    t0 = time.time()
    lines = []
    for task_name, cells in CELLS.items():
        task = load_task(task_name)
        for eps, max_iter in cells:
            line = cell_row(task_name, task, eps, max_iter, seeds)
            print(line, flush=True)
            lines.append(line)
    header = [
        "# gda momentum restart at small noiseless shares u (probe)",
        "",
        f"Command: `PYTHONPATH=$PWD nice -n 10 python -m "
        f"benchmarks.minimax_fair.restart_band --seeds {args.seeds}` at "
        f"{head_commit()}, shared machine, {time.time() - t0:.0f} s. delta = 1e-10; "
        "`before`: restart off (the rule before db45124), `after`: the default. "
        "Worst-group test log-loss; paired difference after - before, mean "
        "(s.e.), and how many seeds improve.",
        "",
        "| task | epsilon | max_iter | z | u | before (median) | after (median) "
        "| ratio of medians | paired diff (s.e.) | after better |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    text = "\n".join(header + lines) + "\n"
    with open(os.path.join(RESULTS, "minimax_fair_restart_band.md"), "w") as f:
        f.write(text)


if __name__ == "__main__":
    main()
