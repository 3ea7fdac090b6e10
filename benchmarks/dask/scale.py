"""Scale-out benchmark: private fits on dask vs numpy (BilevelRidge, HeavyTailedLinearRegression).

``--estimator bilevel`` (default): BilevelRidge(inner_solver="sufficient_statistics"),
one pass over the data. ``--estimator htlr``: HeavyTailedLinearRegression
(default full-batch solver, private scales): the clipped design is persisted on
the workers, then every count and gradient sum is one round trip.

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

Usage (PYTHONPATH set to the repository, from its root)::

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
#: estimator -> (class name in skdp, parameters)
ESTIMATORS = {
    "bilevel": ("BilevelRidge", PARAMS),
    "htlr": (
        "HeavyTailedLinearRegression",
        dict(epsilon=1.0, delta=1e-8, random_state=0),  # private scales, 100 steps
    ),
}


def _make(name):
    import skdp

    cls, params = ESTIMATORS[name]
    return getattr(skdp, cls)(**params)


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


def _cpu_seconds():
    """User + system CPU time of this process so far (all its threads)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def _rss_gb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20


def numpy_fit(n, chunk, seed, name="bilevel"):
    """Run in a fresh process: build all rows, fit, report time and peak RSS."""
    parts = [_block(seed, s, min(s + chunk, n)) for s in range(0, n, chunk)]
    X = np.concatenate([p[0] for p in parts])
    y = np.concatenate([p[1] for p in parts])
    del parts
    _warm_up()  # numba kernels loaded before the timed part (as on the workers)
    t0, c0 = time.perf_counter(), _cpu_seconds()
    est = _make(name).fit(X, y)
    fit, cpu = time.perf_counter() - t0, _cpu_seconds() - c0
    return {"fit": fit, "cpu": cpu, "rss": _rss_gb(), "coef": est.coef_.tolist()}


def _warm_up():
    from skdp._testing.internals import clipped_gradient_sum
    from skdp.losses import SquaredLoss

    X = np.ones((4, 3))
    clipped_gradient_sum(X, np.ones(4), np.zeros(3), np.ones(4), 1.0, SquaredLoss())


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


def dask_fit(n, chunk, seed, workers, name="bilevel"):
    import distributed
    from distributed import Client, LocalCluster

    cluster = LocalCluster(
        n_workers=workers,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
        memory_limit="6GB",
    )
    with Client(cluster) as client:
        # a long-lived cluster has skdp imported already (with its dask
        # helpers): not part of the fit
        client.run(importlib.import_module, "skdp")
        client.run(_warm_up)  # numba kernels compiled/loaded (cache=True)
        X, y = _dask_data(n, chunk, seed)
        if name != "bilevel":
            # iterative fit: the rows are loaded into the workers' memory first
            # (as a user would persist them); the fit persists its clipped design
            X, y = client.persist([X, y])
            distributed.wait([X, y])
        client.run(_reset_peak)
        _reset_peak()

        def cpu_now():  # (driver + scheduler, sum over the worker processes)
            return _cpu_seconds(), sum(client.run(_cpu_seconds).values())

        c0 = cpu_now()
        t0 = time.perf_counter()
        X.sum().compute()
        gen = time.perf_counter() - t0
        c1 = cpu_now()
        t0 = time.perf_counter()
        est = _make(name).fit(X, y)
        fit = time.perf_counter() - t0
        c2 = cpu_now()
        rss = client.run(_rss_gb)
    cluster.close()
    return {
        "fit": fit,
        "gen": gen,
        "gen_cpu": (c1[0] - c0[0]) + (c1[1] - c0[1]),
        "cpu_driver": c2[0] - c1[0],
        "cpu_workers": c2[1] - c1[1],
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
    ap.add_argument("--estimator", choices=sorted(ESTIMATORS), default="bilevel")
    ap.add_argument("--numpy-child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.numpy_child is not None:
        print(
            json.dumps(
                numpy_fit(args.numpy_child, args.chunk, args.seed, args.estimator)
            )
        )
        return
    if args.quick:
        args.sizes, args.chunk = [1e5, 3e5], 50_000
    rows = []
    for n in (int(s) for s in args.sizes):
        row = {"n": n}
        if n <= args.numpy_max:
            cmd = [sys.executable, "-m", __spec__.name, "--numpy-child", str(n)]
            cmd += ["--chunk", str(args.chunk), "--seed", str(args.seed)]
            cmd += ["--estimator", args.estimator]
            out = subprocess.run(cmd, capture_output=True, text=True, check=True)
            row["numpy"] = json.loads(out.stdout.strip().splitlines()[-1])
        for w in args.workers:
            row[f"dask{w}"] = r = dask_fit(n, args.chunk, args.seed, w, args.estimator)
            print(n, w, {k: v for k, v in r.items() if k != "coef"}, flush=True)
        rows.append(row)
        _write(rows, args)  # after every n: a partial run keeps its rows


def _fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def _write(rows, args):
    cls, params = ESTIMATORS[args.estimator]
    lines = [
        f"# Dask scale-out: {cls}({', '.join(f'{k}={v!r}' for k, v in params.items())})",
        "",
        f"d = {D}, chunk = {args.chunk} rows, epsilon = 1, "
        + ("public bounds; " if args.estimator == "bilevel" else "private scales; ")
        + f"machine: {os.cpu_count()} cores shared with other jobs (timings are "
        "noisy). Command: `nice -n 10 python -m benchmarks.dask.scale "
        + " ".join(sys.argv[1:])
        + "`.",
        "",
        "Times in seconds; `s/1e6` is the fit time per 10^6 rows; RSS is the "
        "peak resident memory of one process in GB (numpy: the fitting "
        "process; dask: the largest worker). `gen` is one pass that only "
        + (
            "generates the data on the workers; the dask fit makes one such pass "
            "(generation included in its time, not in numpy's). "
            if args.estimator == "bilevel"
            else "reads the rows persisted on the workers before the timed fit "
            "(generation not timed, as for numpy). "
        )
        + "`ratio` = dask fit / numpy fit. CPU columns are user + system CPU "
        "seconds (`resource.getrusage`): numpy's of its process during the fit; "
        "dask's of the driver (which hosts the scheduler) plus all worker "
        "processes during the fit (`cpu/1e6`: per 10^6 rows), and `gen cpu` of "
        "the generation-only pass. On a shared machine CPU time, unlike wall "
        "time, does not grow with other jobs' load.",
        "",
        "| n | numpy fit | numpy cpu | numpy RSS | workers | dask fit | gen "
        "| s/1e6 | ratio | dask cpu (driver + workers) | cpu/1e6 | gen cpu "
        "| worker RSS | driver RSS | max abs coef diff |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        npy = row.get("numpy")
        for w in args.workers:
            r = row[f"dask{w}"]
            diff = None
            if npy is not None:
                diff = float(np.max(np.abs(np.subtract(npy["coef"], r["coef"]))))
            cpu = r.get("cpu_driver", np.nan) + r.get("cpu_workers", np.nan)
            lines.append(
                f"| {row['n']:.0e} | {_fmt(npy and npy['fit'])} "
                f"| {_fmt(npy and npy.get('cpu'))} "
                f"| {_fmt(npy and npy['rss'])} | {w} | {r['fit']:.2f} "
                f"| {r['gen']:.2f} | {r['fit'] / row['n'] * 1e6:.3f} "
                f"| {_fmt(npy and r['fit'] / npy['fit'])} "
                f"| {cpu:.1f} ({r.get('cpu_driver', np.nan):.1f} + "
                f"{r.get('cpu_workers', np.nan):.1f}) "
                f"| {cpu / row['n'] * 1e6:.3f} | {_fmt(r.get('gen_cpu'), '.1f')} "
                f"| {r['rss']:.2f} | {r['driver_rss']:.2f} | {_fmt(diff, '.1e')} |"
            )
    suffix = "" if args.estimator == "bilevel" else f"_{args.estimator}"
    name = f"dask_scale{suffix}_quick.md" if args.quick else f"dask_scale{suffix}.md"
    name = args.out or name
    path = os.path.join(RESULTS, name)
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
