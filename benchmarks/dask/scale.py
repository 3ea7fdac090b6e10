"""Scale-out benchmark: BilevelRidge(inner_solver="sufficient_statistics") on dask.

Synthetic regression data (d = 20, Student-t features, public bounds) is
generated chunk by chunk *on the workers* (each chunk from its own seed), so
the dask path never holds the whole table in one process. For each n:

- numpy: the same rows built in one process (as far as they fit), fit timed;
- dask with 1 and 2 worker processes (1 thread each, a fresh LocalCluster per
  run on 127.0.0.1): the fit on the lazily generated data, timed; it reads the
  data once (the clipped sums and the finiteness check in the same pass),
  generating each chunk on a worker. A separate timed pass
  (``gen``: the sum of X) measures generation alone.

Peak memory is the peak resident set size of each process (Linux ``VmHWM``,
reset before the timed part on the workers and the driver): the numpy fit
runs in a fresh subprocess (its peak includes holding the data), the dask
workers are fresh per run (the driver's peak is reported separately; it hosts
the scheduler). skdp is imported on the
workers before the timed part (as on a long-lived cluster). Both fits use the same
``random_state``; the models agree (max |coef difference| is reported).

Usage (PYTHONPATH set to the repository)::

    nice -n 10 python -m benchmarks.dask.scale            # 1e6, 3e6, 1e7
    nice -n 10 python -m benchmarks.dask.scale --quick    # 1e5, 3e5
    nice -n 10 python -m benchmarks.dask.scale --sizes 1e6 1e8 --numpy-max 1e7

Writes ``benchmarks/results/dask_scale.md`` (``dask_scale_quick.md`` with
``--quick``).
"""

import argparse
import importlib
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np

from benchmarks._common import RESULTS

D = 20
FEATURE_NORM, TARGET_BOUND = 10.0, 20.0
PARAMS = dict(
    inner_solver="sufficient_statistics",
    feature_norm=FEATURE_NORM,
    target_bound=TARGET_BOUND,
    epsilon=1.0,
    delta=1e-8,
    random_state=0,
)
BETA = np.linspace(1.0, -1.0, D)


def _block(seed, start, stop):
    rng = np.random.default_rng([seed, start])
    X = rng.standard_t(5, size=(stop - start, D))
    y = X @ BETA + 0.3 + rng.standard_t(5, size=stop - start)
    return X, y


def _reset_peak():
    """Reset this process's peak RSS (Linux: VmHWM), so that the peak of a
    worker is its own (``ru_maxrss`` is inherited from the spawning process)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux: the peak then includes the process start
        pass


def _rss_gb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def numpy_fit(n, chunk, seed):
    """Run in a fresh process: build all rows, fit, report time and peak RSS."""
    from skdp import BilevelRidge

    parts = [_block(seed, s, min(s + chunk, n)) for s in range(0, n, chunk)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    del parts
    t0 = time.perf_counter()
    est = BilevelRidge(**PARAMS).fit(X, y)
    fit = time.perf_counter() - t0
    return {"fit": fit, "rss": _rss_gb(), "coef": est.coef_.tolist()}


def _dask_data(n, chunk, seed):
    import dask.array as da
    from dask import delayed

    starts = range(0, n, chunk)
    xs, ys = [], []
    for s in starts:
        e = min(s + chunk, n)
        blk = delayed(_block)(seed, s, e)
        xs.append(da.from_delayed(blk[0], shape=(e - s, D), dtype=float))
        ys.append(da.from_delayed(blk[1], shape=(e - s,), dtype=float))
    return da.concatenate(xs), da.concatenate(ys)


def dask_fit(n, chunk, seed, workers):
    from distributed import Client, LocalCluster

    from skdp import BilevelRidge

    cluster = LocalCluster(
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="6GB",
    )
    with Client(cluster) as client:
        # a long-lived cluster has skdp imported already: not part of the fit
        client.run(importlib.import_module, "skdp.solvers._distributed")
        X, y = _dask_data(n, chunk, seed)
        client.run(_reset_peak)
        _reset_peak()
        t0 = time.perf_counter()
        X.sum().compute()
        gen = time.perf_counter() - t0
        t0 = time.perf_counter()
        est = BilevelRidge(**PARAMS).fit(X, y)
        fit = time.perf_counter() - t0
        rss = client.run(_rss_gb)
    cluster.close()
    return {
        "fit": fit,
        "gen": gen,
        "rss": max(rss.values()),
        "driver_rss": _rss_gb(),
        "coef": est.coef_.tolist(),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", type=float, default=[1e6, 3e6, 1e7])
    ap.add_argument("--numpy-max", type=float, default=1e7)
    ap.add_argument("--chunk", type=int, default=250_000)
    ap.add_argument("--workers", nargs="+", type=int, default=[1, 2])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--out", default=None, help="results file name")
    ap.add_argument("--numpy-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.numpy_child is not None:
        print(json.dumps(numpy_fit(args.numpy_child, args.chunk, args.seed)))
        return
    if args.quick:
        args.sizes, args.chunk = [1e5, 3e5], 50_000
    rows = []
    for n in (int(s) for s in args.sizes):
        row = {"n": n}
        if n <= args.numpy_max:
            cmd = [sys.executable, "-m", __spec__.name, "--numpy-child", str(n)]
            cmd += ["--chunk", str(args.chunk), "--seed", str(args.seed)]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            row["numpy"] = json.loads(out.stdout.strip().splitlines()[-1])
        for w in args.workers:
            row[f"dask{w}"] = r = dask_fit(n, args.chunk, args.seed, w)
            print(n, w, {k: v for k, v in r.items() if k != "coef"}, flush=True)
        rows.append(row)
        _write(rows, args)  # after every n: a partial run keeps its rows


def _fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def _write(rows, args):
    lines = [
        "# Dask scale-out: BilevelRidge(inner_solver='sufficient_statistics')",
        "",
        f"d = {D}, chunk = {args.chunk} rows, epsilon = 1, public bounds; "
        f"machine: {os.cpu_count()} cores shared with other jobs (timings are "
        "noisy). Command: `nice -n 10 python -m benchmarks.dask.scale "
        + " ".join(sys.argv[1:])
        + "`.",
        "",
        "Times in seconds; `s/1e6` is the fit time per 10^6 rows; RSS is the "
        "peak resident memory of one process in GB (numpy: the fitting "
        "process; dask: the largest worker). `gen` is one pass that only "
        "generates the data on the workers; the dask fit makes one such pass "
        "(generation included in its time, not in numpy's). `ratio` = dask fit / numpy fit.",
        "",
        "| n | numpy fit | numpy RSS | workers | dask fit | gen | s/1e6 | ratio "
        "| worker RSS | driver RSS | max abs coef diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        npy = row.get("numpy")
        for w in args.workers:
            r = row[f"dask{w}"]
            diff = None
            if npy is not None:
                diff = float(np.max(np.abs(np.subtract(npy["coef"], r["coef"]))))
            lines.append(
                f"| {row['n']:.0e} | {_fmt(npy and npy['fit'])} "
                f"| {_fmt(npy and npy['rss'])} | {w} | {r['fit']:.2f} "
                f"| {r['gen']:.2f} | {r['fit'] / row['n'] * 1e6:.3f} "
                f"| {_fmt(npy and r['fit'] / npy['fit'])} | {r['rss']:.2f} "
                f"| {r['driver_rss']:.2f} | {_fmt(diff, '.1e')} |"
            )
    name = "dask_scale_quick.md" if args.quick else "dask_scale.md"
    name = args.out or name
    path = os.path.join(RESULTS, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
