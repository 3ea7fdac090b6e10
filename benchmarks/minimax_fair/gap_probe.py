"""Certified duality gap at epsilon = inf for patched gda schedule constants.

A lighter companion of ``minimax_fair_gap_frontier.py --gap-only``: one fit
at ``epsilon=np.inf`` (seed 0, default ``max_iter``) per JSON dictionary of
module constants of ``skdp.solvers.saddle_point.plan`` (patched for that fit
only), and its certified gap. Usage (PYTHONPATH at the repository root, run
from ``benchmarks/``)::

    nice -n 10 python -m benchmarks.minimax_fair.gap_probe adult-sexrace '{}' \
        '{"_GDA_NOISELESS": {"step_factor": 4.0, "dual_step": 1.0,
          "primal_average_from": 0.99, "dual_warmup": 0.1}}'

Prints one line per dictionary: gap, seconds, constants.
"""

import json
import sys
import time

import numpy as np

from benchmarks.minimax_fair.gap_frontier import fit, patched
from benchmarks.minimax_fair.main import certified_gap, load_task


def main():
    task = load_task(sys.argv[1])
    n = task["Xtr"].shape[0]
    delta = min(1e-6, 1.0 / n**2)
    for spec in sys.argv[2:]:
        consts = json.loads(spec)
        start = time.time()
        with patched(consts):
            clf = fit(task, np.inf, 0, delta)
            gap = certified_gap(clf, task)
        print(f"{gap:.2e} {time.time() - start:.1f}s {spec}", flush=True)


if __name__ == "__main__":
    main()
