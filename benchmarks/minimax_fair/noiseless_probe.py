"""Probe: MinimaxFairClassifier gda at epsilon = inf, noiseless-schedule variants.

One fit per variant and max_iter (100, 300) on ``--task`` (default synthetic,
the 3-group n = 1e5 task of ``main.py``): worst-group test log-loss and the
certified duality gap. Found when ``minimax_fair.md`` was regenerated: the
round-4 noiseless end (step x3, dual step 1, last iterate, warm-up 10%) is
worse at epsilon = inf than the noisy fits on the synthetic task.

    PYTHONPATH=$PWD python -m benchmarks.minimax_fair.noiseless_probe synthetic

Output is printed; the committed run is ``minimax_fair_noiseless_probe.md``.
"""

import sys
import time
import warnings

import numpy as np

from benchmarks.minimax_fair.main import certified_gap, load_task
from skdp import MinimaxFairClassifier
from skdp._testing.internals import saddle_point_plan_module as P
from skdp.fairness import worst_group_loss

NOISY = {"primal_average_from": 0.5, "dual_warmup": 0.3}
VARIANTS = {
    "default (noiseless)": {},
    "step x3 only": {"dual_step": 0.3, **NOISY},
    "dual 1 only": {"step_factor": 1.0, **NOISY},
    "last iterate only": {"step_factor": 1.0, "dual_step": 0.3, "dual_warmup": 0.3},
    "step3, dual 1, avg 50%": {"primal_average_from": 0.5},
    "step3, dual 0.3, last": {"dual_step": 0.3},
}


def main(task_name):
    task = load_task(task_name)
    Xtr, ytr, gtr, Xte, yte, gte = (
        task[k] for k in ("Xtr", "ytr", "gtr", "Xte", "yte", "gte")
    )
    common = dict(
        groups=task["groups"],
        group_priors=task["priors"],
        feature_norm=task["feature_norm"],
        classes=[0, 1],
    )
    base = dict(P._GDA_NOISELESS)
    for name, change in VARIANTS.items():
        P._GDA_NOISELESS = {**base, **change}
        try:
            for max_iter in (100, 300):
                t0 = time.time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    clf = MinimaxFairClassifier(
                        epsilon=np.inf, random_state=0, max_iter=max_iter, **common
                    ).fit(Xtr, ytr, sensitive_features=gtr)
                p = clf.predict_proba(Xte)[:, 1]
                loss = worst_group_loss(yte, p, sensitive_features=gte)
                gap = certified_gap(clf, task)
                print(
                    f"{name:28s} max_iter={max_iter}: wg test logloss {loss:.4f}"
                    f"  gap {gap:.2e}  ({time.time() - t0:.1f}s)",
                    flush=True,
                )
        finally:
            P._GDA_NOISELESS = base


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "synthetic")
