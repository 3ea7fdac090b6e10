"""Fit time and peak memory of the skdp estimators against scikit-learn.

Gaussian data, d = 20, n in {1e4, 1e5, 1e6}: regression (BilevelRidge and
HeavyTailedLinearRegression against ``LinearRegression()``), binary and
multinomial K = 5 classification (HeavyTailedLogisticRegression and
MinimaxFairClassifier with two groups against ``LogisticRegression()``). The
skdp estimators run at their defaults with ``epsilon=1, random_state=0`` and
the declared ``classes`` (and ``groups``) the suite runner passes too.

Each (task, estimator, n) runs in a fresh subprocess with one thread
(threadpoolctl, and the usual thread variables for BLAS and numba):

- fit time is process CPU time (``time.process_time``), the median of the
  repeats (3 at n <= 1e5, 1 at n = 1e6), after a warm-up fit on 1,000 rows
  that compiles numba kernels outside the timed region;
- peak memory is the growth of the peak resident set size
  (``resource.getrusage(RUSAGE_SELF).ru_maxrss``) during the timed fits, over
  its value after imports, data generation and the warm-up. The data (n x 20
  float64, 160 MB at n = 1e6) is in the baseline, so the column is what the fit
  allocates on top of its input.

Run ``python -m benchmarks.run --part timing`` (about 7 minutes on 2 cores) or
call ``main(out_dir)``; writes ``timing.md``.
"""

import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

D = 20
N_CLASSES = 5
SIZES = (10_000, 100_000, 1_000_000)
CASES = (
    ("regression", "BilevelRidge"),
    ("regression", "HeavyTailedLinearRegression"),
    ("regression", "LinearRegression"),
    ("binary", "HeavyTailedLogisticRegression"),
    ("binary", "MinimaxFairClassifier"),
    ("binary", "LogisticRegression"),
    ("multiclass", "HeavyTailedLogisticRegression"),
    ("multiclass", "MinimaxFairClassifier"),
    ("multiclass", "LogisticRegression"),
)
SKLEARN = ("LinearRegression", "LogisticRegression")
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


def repository_commit():
    """``git rev-parse HEAD`` of the checkout, "+dirty" if ``skdp/`` or
    ``benchmarks/`` (results aside) differ from it."""
    root = Path(__file__).resolve().parent.parent

    def git(*args):
        return subprocess.run(
            ["git", *args], cwd=root, capture_output=True, text=True, check=False
        ).stdout

    commit = git("rev-parse", "HEAD").strip() or "unknown"
    status = git("status", "--porcelain", "--", "skdp", "benchmarks").splitlines()
    # The runner's own output does not make the measured code differ.
    dirty = [line for line in status if not line[3:].startswith("benchmarks/results/")]
    return commit + ("+dirty" if dirty else "")


def make_data(task, n, seed=0):
    """Gaussian features and a linear target; labels and two groups for the
    classification tasks."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, D))
    if task == "regression":
        y = X @ (rng.standard_normal(D) / np.sqrt(D)) + rng.standard_normal(n)
        return X, y, None
    k = 2 if task == "binary" else N_CLASSES
    scores = X @ rng.standard_normal((D, k)) + rng.gumbel(size=(n, k))
    return X, scores.argmax(axis=1), rng.integers(2, size=n)


def make_estimator(task, name):
    from sklearn.linear_model import LinearRegression, LogisticRegression

    from skdp.fairness import MinimaxFairClassifier
    from skdp.linear_model import (
        BilevelRidge,
        HeavyTailedLinearRegression,
        HeavyTailedLogisticRegression,
    )

    if name == "LinearRegression":
        return LinearRegression()
    if name == "LogisticRegression":
        return LogisticRegression()
    private = dict(epsilon=1.0, random_state=0)
    if task != "regression":
        private["classes"] = list(range(2 if task == "binary" else N_CLASSES))
    if name == "MinimaxFairClassifier":
        return MinimaxFairClassifier(groups=[0, 1], **private)
    kinds = {
        "BilevelRidge": BilevelRidge,
        "HeavyTailedLinearRegression": HeavyTailedLinearRegression,
        "HeavyTailedLogisticRegression": HeavyTailedLogisticRegression,
    }
    return kinds[name](**private)


def _fit(estimator, X, y, groups):
    if type(estimator).__name__ != "MinimaxFairClassifier":
        return estimator.fit(X, y)
    return estimator.fit(X, y, sensitive_features=groups)


def measure(task, name, n, repeats):
    """In this process: CPU seconds of each of ``repeats`` fits and the peak
    RSS growth (MB) over the state after imports, data and warm-up."""
    from sklearn.base import clone
    from threadpoolctl import threadpool_limits

    X, y, groups = make_data(task, n)
    estimator = make_estimator(task, name)
    with threadpool_limits(limits=1):
        small = slice(0, 1000)
        _fit(
            clone(estimator),
            X[small],
            y[small],
            None if groups is None else groups[small],
        )
        baseline_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        seconds = []
        for _ in range(repeats):
            start = time.process_time()
            _fit(clone(estimator), X, y, groups)
            seconds.append(time.process_time() - start)
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return dict(seconds=seconds, peak_mb=(peak_kb - baseline_kb) / 1024)


def run_case(task, name, n, repeats, timeout):
    """One case in a fresh single-threaded subprocess; None on failure."""
    env = dict(os.environ, **{var: "1" for var in THREAD_VARIABLES})
    command = [
        sys.executable,
        "-m",
        "benchmarks.timing",
        task,
        name,
        str(n),
        str(repeats),
    ]
    root = Path(__file__).resolve().parent.parent
    try:
        done = subprocess.run(
            command, cwd=root, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return dict(status=f"timeout ({timeout:g} s)")
    if done.returncode != 0:
        return dict(status="failed: " + (done.stderr.strip().splitlines() or ["?"])[-1])
    return dict(status="ok", **json.loads(done.stdout.strip().splitlines()[-1]))


def write_report(results, out_dir, minutes):
    lines = [
        "# Fit time and peak memory against scikit-learn",
        "",
        f"Generated by `benchmarks/timing.py` at commit `{repository_commit()}` "
        f"(`python -m benchmarks.run --part timing`) in {minutes:.1f} min.",
        "",
        "Gaussian data, d = 20; binary and multinomial (K = 5) labels from a linear "
        "model with Gumbel noise; MinimaxFairClassifier with two random groups. skdp "
        "estimators at their defaults with epsilon = 1, random_state = 0 and declared "
        "classes and groups; scikit-learn's `LinearRegression()` and "
        "`LogisticRegression()`. One thread. Time: process CPU seconds of the fit, "
        "median of 3 fits (1 at n = 1e6), after a warm-up fit that compiles numba "
        "kernels. Memory: growth of the peak resident set size "
        "(`resource.getrusage`) during the fit over the state after imports, data "
        "and warm-up, in a fresh process per row (the input data is not counted). "
        "The last columns divide by scikit-learn's value on the same task and n.",
        "",
        "| task | estimator | n | CPU s | peak MB | time / sklearn | memory / sklearn |",
        "|---|---|---|---|---|---|---|",
    ]
    for (task, name, n), res in results.items():
        reference = next(
            (results[(task, s, n)] for s in SKLEARN if (task, s, n) in results), None
        )
        if res["status"] != "ok":
            lines.append(
                f"| {task} | {name} | 1e{round(np.log10(n))} | {res['status']} | | | |"
            )
            continue
        cpu = float(np.median(res["seconds"]))
        cells = [f"{cpu:.2f}", f"{res['peak_mb']:.0f}"]
        if name in SKLEARN or reference is None or reference["status"] != "ok":
            cells += ["", ""]
        else:
            ref_cpu = float(np.median(reference["seconds"]))
            cells.append(f"{cpu / ref_cpu:.1f}x" if ref_cpu > 0 else "")
            # Below a few MB the RSS growth is page-granular noise.
            ref_mb = max(reference["peak_mb"], 1.0)
            cells.append(f"{max(res['peak_mb'], 0.0) / ref_mb:.1f}x")
        lines.append(
            f"| {task} | {name} | 1e{round(np.log10(n))} | " + " | ".join(cells) + " |"
        )
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "timing.md").write_text("\n".join(lines) + "\n")


def main(out_dir, sizes=SIZES, timeout=300.0):
    """Time every case at every n, one fresh process each; write ``timing.md``."""
    start = time.perf_counter()
    results = {}
    for n in sizes:
        for task, name in CASES:
            res = run_case(task, name, n, 1 if n >= 1_000_000 else 3, timeout)
            results[(task, name, n)] = res
            print(
                f"timing {task} {name} n={n}: {res.get('seconds', res['status'])}",
                flush=True,
            )
    write_report(results, Path(out_dir), (time.perf_counter() - start) / 60)
    return Path(out_dir) / "timing.md"


if __name__ == "__main__":
    if len(sys.argv) == 5:  # the worker: one case, result as JSON on stdout
        task, name, n, repeats = (
            sys.argv[1],
            sys.argv[2],
            int(sys.argv[3]),
            int(sys.argv[4]),
        )
        print(json.dumps(measure(task, name, n, repeats)))
    else:
        main(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results")
