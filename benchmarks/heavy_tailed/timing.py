"""Fit time of the heavy-tailed estimators at n = 1e6, d = 20 vs scikit-learn.

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.heavy_tailed.timing
[--n 1000000] [--repeats 3]``. Writes
``benchmarks/results/heavy_tailed_timing.md``.

The data are those of ``benchmarks/heavy_tailed/main.py`` (``linear_data``,
``logistic_data``: d = 20 Student-t(5) features). Each model is fitted
``repeats`` times on the same data in the same process, alternating
scikit-learn and skdp so that both see the same machine load; numba is
warmed up outside the timed region. Reported: the median and best wall
time and the median CPU time (``time.process_time``: all threads of the
process) of each, and the ratios of the medians (target: skdp <= 3x
scikit-learn; the machine is shared, so the CPU-time ratio is the steadier
one). scikit-learn's ``LinearRegression`` / ``LogisticRegression`` use
multi-threaded BLAS; skdp's clipped-gradient kernel runs on one thread.
"""

import argparse
import os
import time
import warnings

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression

from benchmarks._common import RESULTS
from benchmarks.heavy_tailed.main import linear_data, logistic_data
from skdp import HeavyTailedLinearRegression, HeavyTailedLogisticRegression


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    rows = []
    for kind, data, Sk, Est in [
        ("linear", linear_data, LinearRegression, HeavyTailedLinearRegression),
        ("logistic", logistic_data, LogisticRegression, HeavyTailedLogisticRegression),
    ]:
        X, y = data(args.n, np.random.default_rng(7))
        Est(random_state=0).fit(X[:20_000], y[:20_000])  # numba warm-up
        times = {"sklearn": [], "skdp": []}
        cpu = {"sklearn": [], "skdp": []}
        for _ in range(args.repeats):
            for name, make in (
                ("sklearn", Sk),
                ("skdp", lambda E=Est: E(random_state=0)),
            ):
                t0, c0 = time.perf_counter(), time.process_time()
                make().fit(X, y)
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
        med = {k: float(np.median(v)) for k, v in times.items()}
        best = {k: float(np.min(v)) for k, v in times.items()}
        cmed = {k: float(np.median(v)) for k, v in cpu.items()}
        rows.append((kind, med, best, cmed))
        print(kind, times, cpu, flush=True)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    L = ["# Heavy-tailed estimators: fit time vs scikit-learn", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append(
        f"n = {args.n}, d = 20, {args.repeats} repeats; 1-minute load average at "
        f"the end of the run: {load:.1f} on 2 cores (shared machine)."
    )
    L.append("")
    L.append(
        "| model | sklearn median wall (s) | skdp median wall (s) | ratio of "
        "medians | sklearn best (s) | skdp best (s) | ratio of bests | sklearn "
        "median CPU (s) | skdp median CPU (s) | CPU ratio | met (<= 3x, CPU) |"
    )
    L.append("|---|---|---|---|---|---|---|---|---|---|---|")
    for kind, med, best, cmed in rows:
        r = med["skdp"] / med["sklearn"]
        rb = best["skdp"] / best["sklearn"]
        rc = cmed["skdp"] / cmed["sklearn"]
        L.append(
            f"| {kind} | {med['sklearn']:.2f} | {med['skdp']:.2f} | {r:.2f} | "
            f"{best['sklearn']:.2f} | {best['skdp']:.2f} | {rb:.2f} | "
            f"{cmed['sklearn']:.2f} | {cmed['skdp']:.2f} | {rc:.2f} | "
            f"{'yes' if rc <= 3 else '**no**'} |"
        )
    text = "\n".join(L) + "\n"
    (RESULTS / "heavy_tailed_timing.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
