"""Effect of unifying the unit of ``estimation_share`` (issue 19, step 3).

Before: ``BilevelRidge(bounds_epsilon_share)`` split pure ``epsilon`` between
its private bounds, and ``MinimaxFairClassifier(estimation_share)`` with the
``nseg`` / ``nispp`` solvers calibrated each estimate at ``(share * epsilon,
delta)``. After: every estimator's ``estimation_share`` is a share of the GDP
budget ``mu**2`` (a pure-DP quantile with share ``s`` gets ``epsilon = mu
sqrt(s)``). ``HeavyTailed*`` (already ``mu**2``) and ``MinimaxFairClassifier``
with ``gda`` and a given feature norm do not move.

Only configurations whose numbers move are run, with the same seeds, before
and after the change::

    python -m benchmarks.privacy.estimation_share_units --label before   # at the parent commit
    python -m benchmarks.privacy.estimation_share_units --label after
    python -m benchmarks.privacy.estimation_share_units --report

and, for the merge of the private norm bounds (one set of constants)::

    python -m benchmarks.privacy.estimation_share_units --label norm_before   # parent commit
    python -m benchmarks.privacy.estimation_share_units --label norm_after
    python -m benchmarks.privacy.estimation_share_units --report --compare norm_before \
        norm_after --out norm_bound_merge.md --title "One private norm bound"

and, for the Gaussian bisection as that one bound (issue 19, D; run with
``--seeds 5 --reps 12``)::

    python -m benchmarks.privacy.estimation_share_units --label gauss_before --seeds 5  # parent
    python -m benchmarks.privacy.estimation_share_units --label gauss_after --seeds 5
    python -m benchmarks.privacy.estimation_share_units --report --compare gauss_before \
        gauss_after --out norm_bound_gaussian.md --title "One private norm bound: the \
        Gaussian bisection"

Size: Adult (sex x race groups), first 8,000 training rows, full test set,
10 seeds at epsilon 1 and 5, for ``nseg``, ``nispp`` and ``gda`` with the
feature norm and group priors estimated privately; ``load_diabetes``, 12
random 75/25 splits at epsilon 0.5, 1, 2, 5 for ``BilevelRidge`` with
``inner_solver="sufficient_statistics"`` and both bounds estimated.
"""

import argparse
import json
import os
import time
import warnings

import numpy as np
from sklearn.datasets import load_diabetes

from benchmarks._common import RESULTS, benchmark_delta
from benchmarks.minimax_fair.main import evaluate, load_task
from skdp import BilevelRidge, MinimaxFairClassifier

PATH = os.path.join(RESULTS, "estimation_share_units.json")


def run_minimax(seeds):
    task = load_task("adult-sexrace", quick=True)
    Xtr, ytr, gtr, Xte, yte, gte = (
        task[k] for k in ("Xtr", "ytr", "gtr", "Xte", "yte", "gte")
    )
    delta = benchmark_delta(Xtr.shape[0])
    rows = []
    for solver in ("nseg", "nispp", "gda"):
        for eps in (1.0, 5.0):
            for seed in range(seeds):
                clf = MinimaxFairClassifier(
                    epsilon=eps,
                    delta=delta,
                    groups=task["groups"],
                    classes=[0, 1],
                    solver=solver,
                    random_state=1000 + seed,
                )
                t0 = time.time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf.fit(Xtr, ytr, sensitive_features=gtr)
                metrics = evaluate(clf.predict_proba(Xte)[:, 1], yte, gte)
                rows.append(
                    dict(
                        method=f"MinimaxFairClassifier({solver}), estimated norm+priors",
                        epsilon=eps,
                        seed=seed,
                        seconds=time.time() - t0,
                        feature_norm=float(clf.feature_norm_),
                        **metrics,
                    )
                )
                print(rows[-1], flush=True)
    return rows


def run_bilevel(reps):
    X, y = load_diabetes(return_X_y=True)
    rows = []
    for rep in range(reps):
        rng = np.random.default_rng(500 + rep)
        perm = rng.permutation(len(y))
        cut = int(0.75 * len(y))
        tr, te = perm[:cut], perm[cut:]
        for eps in (0.5, 1.0, 2.0, 5.0):
            m = BilevelRidge(
                epsilon=eps, inner_solver="sufficient_statistics", random_state=rep
            )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                m.fit(X[tr], y[tr])
            mse = float(np.mean((m.predict(X[te]) - y[te]) ** 2))
            rows.append(
                dict(
                    method="BilevelRidge(sufficient_statistics), private bounds",
                    epsilon=eps,
                    seed=rep,
                    mse=mse,
                )
            )
    return rows


def report(first="before", second="after", out="estimation_share_units.md", title=None):
    with open(PATH) as fh:
        runs = json.load(fh)
    title = title or "`estimation_share`: one unit (share of `mu**2`)"
    lines = [
        f"# {title}",
        "",
        "Generated by `python -m benchmarks.privacy.estimation_share_units --report "
        f"--compare {first} {second} --out {out}`",
        f"(runs: `--label {first}` at the parent commit, `--label {second}` at the",
        "commit; size in the script's docstring). Medians over seeds; ratio =",
        f"{second} / {first}, per seed, median. Timing aside, nothing else moved",
        "(pinned outputs).",
        "",
        f"| method | epsilon | metric | {first} | {second} | ratio |",
        "|---|---|---|---|---|---|",
    ]
    before, after = runs[first], runs[second]
    keys = sorted({(r["method"], r["epsilon"]) for r in before})
    for method, eps in keys:
        b = [r for r in before if (r["method"], r["epsilon"]) == (method, eps)]
        a = [r for r in after if (r["method"], r["epsilon"]) == (method, eps)]
        metrics = ["mse"] if "mse" in b[0] else ["wg_logloss", "accuracy"]
        for metric in metrics:
            vb = np.array([r[metric] for r in b])
            va = np.array([r[metric] for r in a])
            lines.append(
                f"| {method} | {eps:g} | {metric} | {np.median(vb):.4g} | "
                f"{np.median(va):.4g} | {np.median(va / vb):.3f} |"
            )
    lines.append("")
    with open(os.path.join(RESULTS, out), "w") as fh:
        fh.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--label", help="name of this run (before, after, ...)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--reps", type=int, default=12)
    parser.add_argument("--report", action="store_true")
    parser.add_argument(
        "--compare",
        nargs=2,
        default=("before", "after"),
        metavar=("BEFORE", "AFTER"),
        help="the two runs the report compares",
    )
    parser.add_argument("--out", default="estimation_share_units.md")
    parser.add_argument("--title", default=None)
    args = parser.parse_args()
    if args.label:
        runs = {}
        if os.path.exists(PATH):
            with open(PATH) as fh:
                runs = json.load(fh)
        runs[args.label] = run_bilevel(args.reps) + run_minimax(args.seeds)
        with open(PATH, "w") as fh:
            json.dump(runs, fh, indent=1)
    if args.report:
        report(*args.compare, args.out, args.title)


if __name__ == "__main__":
    main()
