"""Benchmark: sparse (CSR) input for every gradient-based estimator (issue 17).

Two parts, one process, one shared 2-core machine:

1. **Bag-of-words row** (the sparse row of ``benchmarks/heavy_tailed/multiclass.py``, same
   recipe: ``n`` rows, ``d`` columns, ``density`` non-zero, Pareto column
   popularity, ``log1p`` counts): wall time of ``fit`` (after a warm-up fit on
   2,000 rows) and the tracemalloc peak during ``fit``, default parameters,
   for HeavyTailedLinearRegression, HeavyTailedLogisticRegression (binary and
   K = 5), BilevelRidge (``inner_solver="gd"``, both tunings) and
   MinimaxFairClassifier (``solver="gda"``, two public random groups).
   Targets: < 5 s and < 1 GB. Held-out quality next to the non-private
   scikit-learn model fitted on the same sparse matrix (``Ridge(alpha=1)``,
   ``LogisticRegression``), on a 20% public random split.
2. **Sparse against dense** at a size where the dense matrix fits in memory
   (``n_dense`` rows, ``d_dense`` columns): the same estimator and
   ``random_state`` on the CSR matrix and on its dense copy; fit time and
   peak ratios, and the largest coefficient difference (the models agree to
   float tolerance, ``tests/test_sparse_everywhere.py``).

Usage: ``python -m benchmarks.sparse.main [--n N] [--d D] [--density P]
[--n-dense N] [--d-dense D]``; defaults: the issue's row (1e5, 1e4, 0.1%) and
2e4 x 2e3 (305 MB dense). Writes ``benchmarks/results/sparse.md``.
"""

import argparse
import contextlib
import os
import time
import tracemalloc
import warnings

import numpy as np
import scipy.sparse as sp
from sklearn.linear_model import LogisticRegression, Ridge
from threadpoolctl import threadpool_limits

from benchmarks._common import RESULTS, head_commit
from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
)


def bag_of_words(n, d, density, seed=0):
    rng = np.random.default_rng(seed)
    nnz = int(n * d * density)
    rows = rng.integers(0, n, size=nnz)
    cols = np.minimum((rng.pareto(1.2, size=nnz) * 50).astype(int), d - 1)
    vals = rng.poisson(1.0, size=nnz) + 1.0
    X = sp.csr_matrix((vals, (rows, cols)), shape=(n, d))
    X.sum_duplicates()
    X.data = np.log1p(X.data)  # a public per-entry map
    w = rng.normal(size=d) * (rng.random(d) < 0.05)
    score = np.asarray(X @ w).ravel()
    groups = rng.integers(0, 2, size=n)  # public random groups
    targets = {
        "reg": score + rng.standard_t(3, size=n),
        "bin": (score + 0.3 * groups + rng.logistic(size=n) > 0).astype(int),
        "k5": np.digitize(
            score + rng.logistic(size=n), np.quantile(score, [0.2, 0.4, 0.6, 0.8])
        ),
    }
    test = rng.random(n) < 0.2  # public random split
    return X, targets, groups, test


CASES = [
    ("HeavyTailedLinearRegression", HeavyTailedLinearRegression, "reg", {}),
    (
        "HeavyTailedLogisticRegression (binary)",
        HeavyTailedLogisticRegression,
        "bin",
        {"classes": [0, 1]},
    ),
    (
        "HeavyTailedLogisticRegression (K=5)",
        HeavyTailedLogisticRegression,
        "k5",
        {"classes": range(5)},
    ),
    ("BilevelRidge (gd, risk_estimate)", BilevelRidge, "reg", {}),
    ("BilevelRidge (gd, path)", BilevelRidge, "reg", {"tuning": "path"}),
    (
        "MinimaxFairClassifier (gda)",
        MinimaxFairClassifier,
        "bin",
        {"classes": [0, 1], "groups": [0, 1]},
    ),
]


def timed_fit(est, X, y, groups):
    kw = (
        {"sensitive_features": groups} if isinstance(est, MinimaxFairClassifier) else {}
    )
    tracemalloc.start()
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y, **kw)
    elapsed = time.perf_counter() - t0
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return elapsed, peak / 2**20


def quality(est, X, y, kind):
    if kind == "reg":
        return est.score(X, y)  # R^2
    return float(np.mean(est.predict(X) == y))  # accuracy


def baseline(X, y, kind, Xte, yte):
    t0 = time.perf_counter()
    model = Ridge(alpha=1.0) if kind == "reg" else LogisticRegression(max_iter=200)
    model.fit(X, y)
    return time.perf_counter() - t0, quality(model, Xte, yte, kind)


def bag_of_words_part(n, d, density):
    X, targets, groups, test = bag_of_words(n, d, density)
    Xtr, Xte = X[~test], X[test]
    # warm-up (imports, numba) outside the timed region
    for _, Est, kind, kw in CASES:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit_kw = (
                {"sensitive_features": groups[:2000]}
                if Est is MinimaxFairClassifier
                else {}
            )
            Est(random_state=0, **kw).fit(X[:2000], targets[kind][:2000], **fit_kw)
    rows = []
    for name, Est, kind, kw in CASES:
        y = targets[kind]
        est = Est(random_state=0, **kw)
        seconds, peak = timed_fit(est, Xtr, y[~test], groups[~test])
        score = quality(est, Xte, y[test], kind)
        base_s, base_q = baseline(Xtr, y[~test], kind, Xte, y[test])
        rows.append((name, seconds, peak, score, base_q, base_s))
    return X.nnz, rows


def dense_part(n, d, density):
    X, targets, groups, _ = bag_of_words(n, d, density, seed=1)
    Xd = X.toarray()
    rows = []
    for name, Est, kind, kw in CASES:
        y = targets[kind]
        fits = []
        for data in (X, Xd):
            est = Est(random_state=0, **kw)
            seconds, peak = timed_fit(est, data, y, groups)
            fits.append((seconds, peak, np.ravel(est.coef_)))
        (ts, ps, cs), (td, pd, cd) = fits
        diff = float(np.max(np.abs(cs - cd)) / max(np.max(np.abs(cd)), 1e-300))
        rows.append((name, ts, td, ps, pd, diff))
    return Xd.nbytes, rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--d", type=int, default=10_000)
    parser.add_argument("--density", type=float, default=0.001)
    parser.add_argument("--n-dense", type=int, default=20_000)
    parser.add_argument("--d-dense", type=int, default=2_000)
    parser.add_argument("--out", default="sparse.md")
    parser.add_argument(
        "--blas-threads",
        type=int,
        default=None,
        help="limit BLAS threads (threadpoolctl); default: the library's",
    )
    parser.add_argument("--skip-dense", action="store_true")
    args = parser.parse_args()
    t_start = time.perf_counter()
    limit = (
        threadpool_limits(args.blas_threads, user_api="blas")
        if args.blas_threads
        else contextlib.nullcontext()
    )
    with limit:
        nnz, rows = bag_of_words_part(args.n, args.d, args.density)
        dense_bytes, dense_rows = (
            (0, []) if args.skip_dense else dense_part(args.n_dense, args.d_dense, 0.01)
        )
    minutes = (time.perf_counter() - t_start) / 60
    cmd = (
        f"nice -n 10 python -m benchmarks.sparse.main --n {args.n} --d {args.d} "
        f"--density {args.density} --n-dense {args.n_dense} --d-dense {args.d_dense}"
        + (f" --blas-threads {args.blas_threads}" if args.blas_threads else "")
        + (" --skip-dense" if args.skip_dense else "")
        + (f" --out {args.out}" if args.out != "sparse.md" else "")
    )
    out = [
        "# Sparse input benchmark (issue 17)",
        "",
        f"Command: `{cmd}` at commit {head_commit()} ({minutes:.1f} min on a "
        f"shared 2-core machine, load average {os.getloadavg()[0]:.1f} at the "
        "end). Default parameters, `random_state=0`, epsilon = 1.",
        "",
        f"## Bag-of-words CSR (n = {args.n:,}, d = {args.d:,}, "
        f"{100 * args.density:g}% non-zero)",
        "",
        f"nnz = {nnz:,}; the dense matrix would take "
        f"{args.n * args.d * 8 / 2**30:.1f} GiB. Fit on a public random 80%, "
        "score on the other 20%. Wall time of fit (after a warm-up fit) and "
        "tracemalloc peak during fit; targets < 5 s and < 1 GB. Baseline: "
        "non-private scikit-learn on the same sparse matrix (`Ridge(alpha=1)`, "
        "`LogisticRegression()`), R^2 for regression, accuracy for classifiers.",
        "",
        "| estimator | fit s | peak MB | held-out score | sklearn score | "
        "sklearn fit s |",
        "|---|---|---|---|---|---|",
    ]
    for name, s, p, q, bq, bs in rows:
        out.append(f"| {name} | {s:.2f} | {p:.0f} | {q:.3f} | {bq:.3f} | {bs:.2f} |")
    if args.skip_dense:
        dense_rows = None
    out += (
        []
        if dense_rows is None
        else [
            "",
            f"## Sparse against dense input (n = {args.n_dense:,}, d = {args.d_dense:,}, "
            f"1% non-zero; dense copy {dense_bytes / 2**20:.0f} MB)",
            "",
            "Same estimator and `random_state`; ratios are dense / sparse. "
            "`max rel. coef diff` is max |coef_sparse - coef_dense| / max |coef_dense|.",
            "",
            "| estimator | sparse s | dense s | time ratio | sparse peak MB | "
            "dense peak MB | max rel. coef diff |",
            "|---|---|---|---|---|---|---|",
        ]
    )
    for name, ts, td, ps, pd, diff in dense_rows or []:
        out.append(
            f"| {name} | {ts:.2f} | {td:.2f} | {td / ts:.1f} | {ps:.0f} | {pd:.0f} "
            f"| {diff:.1e} |"
        )
    text = "\n".join(out) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(text)
    print(text)


if __name__ == "__main__":
    main()
