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

task = load_task(sys.argv[1] if len(sys.argv) > 1 else "synthetic")
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
variants = {
    "default (noiseless)": {},
    "step x3 only": dict(
        _GDA_NOISELESS={
            **base,
            "dual_step": 0.3,
            "primal_average_from": 0.5,
            "dual_warmup": 0.3,
        }
    ),
    "dual 1 only": dict(
        _GDA_NOISELESS={
            **base,
            "step_factor": 1.0,
            "primal_average_from": 0.5,
            "dual_warmup": 0.3,
        }
    ),
    "last iterate only": dict(
        _GDA_NOISELESS={
            **base,
            "step_factor": 1.0,
            "dual_step": 0.3,
            "dual_warmup": 0.3,
        }
    ),
    "step3, dual 1, avg 50%": dict(_GDA_NOISELESS={**base, "primal_average_from": 0.5}),
    "step3, dual 0.3, last": dict(_GDA_NOISELESS={**base, "dual_step": 0.3}),
}
for name, patch in variants.items():
    saved = {k: getattr(P, k) for k in patch}
    for k, v in patch.items():
        setattr(P, k, v)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for mi in (100, 300):
                t0 = time.time()
                clf = MinimaxFairClassifier(
                    epsilon=np.inf, random_state=0, max_iter=mi, **common
                ).fit(Xtr, ytr, sensitive_features=gtr)
                p = clf.predict_proba(Xte)[:, 1]
                wl = worst_group_loss(yte, p, sensitive_features=gte) if True else None
                print(
                    f"{name:28s} max_iter={mi}: wg test logloss {wl:.4f}  gap {certified_gap(clf, task):.2e}  ({time.time() - t0:.1f}s)",
                    flush=True,
                )
    finally:
        for k, v in saved.items():
            setattr(P, k, v)
