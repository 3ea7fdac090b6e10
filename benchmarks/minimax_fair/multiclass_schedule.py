"""Benchmark: the multinomial ``solver="gda"`` schedule at epsilon = inf (issue 17).

Does ``MinimaxFairClassifier`` reach the non-private optimum at the default
``max_iter = 100`` for K = 5 classes? On the two tasks of
``benchmarks/minimax_fair/multiclass.py`` (``heavy_tailed``: one group, compared
with non-private multinomial ``LogisticRegression``; ``groups``: 3 groups,
compared with non-private multinomial group DRO solved by SLSQP), at epsilon =
inf (no noise, deterministic), three multinomial schedules are run by patching
``skdp.solvers.saddle_point.plan.gda_schedule`` for the fit:

- ``previous (noisy)``: the multinomial schedule at every epsilon before
  issue 17's change (primal step ``1 / (K_curv bound^2)``, clip ``sqrt(2)``
  row bounds, dual step 0.3, warm-up 0.3, averages from the middle);
- ``default``: the current rule (at z = 0: step ``3 / (K_curv bound^2)``,
  clip ``sqrt(2)`` row bounds, the same dual constants);
- ``binary noiseless``: the binary noiseless constants (step factor 3, dual
  step 1, warm-up 0.1, last primal iterate).

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.multiclass_schedule --n 100000

Writes ``benchmarks/results/minimax_fair_multiclass_schedule.md``
(``--quick``: n = 4000, nothing written).
"""

import argparse
import math
import os
import time
import warnings
from contextlib import contextmanager

import numpy as np
from scipy.special import softmax
from sklearn.linear_model import LogisticRegression

from benchmarks._common import RESULTS
from benchmarks.minimax_fair.multiclass import (
    FEATURE_NORM,
    REF_RADIUS,
    K,
    evaluate,
    load,
    multinomial_dro_reference,
)
from skdp import MinimaxFairClassifier
from skdp._testing.internals import saddle_point_plan_module as plan_module
from skdp.utils import clip_rows

# the multinomial schedule before issue 17's change, at every epsilon
PREVIOUS = {
    "step_factor": 1.0,
    "clip_factor": math.sqrt(2.0),
    "dual_step": plan_module._GDA_DUAL_STEP,
    "primal_average_from": None,
    "dual_warmup": plan_module._GDA_DUAL_WARMUP,
    "restart": False,
    "noiseless_share": 0.0,
}
SCHEDULES = {
    "previous (noisy)": lambda rule, z: PREVIOUS,
    "default": lambda rule, z: rule(z, True),
    "binary noiseless": lambda rule, z: dict(rule(z, False), clip_factor=2**0.5),
}


@contextmanager
def schedule(name):
    """Patch the multinomial schedule rule for one fit."""
    original = plan_module.gda_schedule
    variant = SCHEDULES[name]

    def patched(z, multinomial=False):
        return variant(original, z) if multinomial else original(z, multinomial)

    plan_module.gda_schedule = patched
    try:
        yield
    finally:
        plan_module.gda_schedule = original


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 4000 if args.quick else args.n
    lines = [
        "# Multinomial gda schedule at epsilon = inf (K = 5, default max_iter = 100)",
        "",
        f"`python -m benchmarks.minimax_fair.multiclass_schedule --n {n}`: the two "
        "tasks of `benchmarks/minimax_fair/multiclass.py` at n_train = "
        f"{n}, epsilon = inf (deterministic, one run each). Reference: non-private "
        "multinomial LogisticRegression (heavy_tailed) or group DRO (groups).",
        "",
        "| task | method | worst-group log-loss | worst-group accuracy | accuracy "
        "| fit CPU (s) |",
        "|---|---|---|---|---|---|",
    ]
    for task in ("heavy_tailed", "groups"):
        Xtr, ytr, gtr, Xte, yte, gte, delta, common = load(task, n)
        grouped = task == "groups"
        t0 = time.process_time()
        if grouped:
            W, b = multinomial_dro_reference(
                clip_rows(Xtr, FEATURE_NORM), ytr, gtr, 3, REF_RADIUS
            )
            ref = evaluate(softmax(Xte @ W + b, axis=1), yte, gte)
            ref_name = f"group DRO (non-private, radius {REF_RADIUS:g})"
        else:
            lr = LogisticRegression(C=1e4, max_iter=2000).fit(Xtr, ytr)
            ref = evaluate(lr.predict_proba(Xte), yte, gte)
            ref_name = "LogisticRegression (non-private)"
        rows = [(ref_name, ref, time.process_time() - t0)]
        for name in SCHEDULES:
            clf = MinimaxFairClassifier(epsilon=np.inf, random_state=0, **common)
            t0 = time.process_time()
            with schedule(name), warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf.fit(Xtr, ytr, sensitive_features=gtr if grouped else None)
            secs = time.process_time() - t0
            rows.append(
                (f"MinimaxFairClassifier, {name} schedule", evaluate(
                    clf.predict_proba(Xte), yte, gte), secs)
            )  # fmt: skip
        for method, m, secs in rows:
            line = (
                f"| {task} | {method} | {m['wg_logloss']:.4f} | "
                f"{m['wg_accuracy']:.4f} | {m['accuracy']:.4f} | {secs:.1f} |"
            )
            print(line, flush=True)
            lines.append(line)
    lines += ["", f"K = {K}; delta as in the multiclass benchmark.", ""]
    if not args.quick:
        with open(
            os.path.join(RESULTS, "minimax_fair_multiclass_schedule.md"), "w"
        ) as fh:
            fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
