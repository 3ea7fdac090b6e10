"""Benchmark: MinimaxFairClassifier with K = 5 classes (multinomial loss, solver="gda").

Synthetic task: 3 groups with public priors (0.6, 0.3, 0.1), d = 10 standard
normal features, K = 5 classes drawn from a softmax model whose coefficient
matrix differs by group (the minority group's disagrees with the majority's
on half of the features);
``n`` training rows (default 2e4) and 2e4 test rows. Public ``feature_norm``
4 (rows are clipped to it; the median row norm is about sqrt(10)).

Methods, in one process on the same split:

- ``MinimaxFairClassifier(classes=range(5))`` at its defaults (``solver="gda"``,
  100 full-batch steps, multinomial loss), at epsilon = 1 (``--seeds`` seeds)
  and epsilon = inf (one run);
- ``HeavyTailedLogisticRegression(classes=range(5))`` (multinomial default,
  groups ignored) at epsilon = 1, same seeds;
- non-private multinomial group DRO, solved accurately by SLSQP on the
  epigraph form ``min t s.t. R_g(W) <= t, ||W||_F^2 <= 20^2`` (radius fixed
  here, independently of skdp's defaults; rows clipped to the same norm);
- non-private multinomial ``LogisticRegression`` (its fit time is the unit).

delta = min(1e-6, 1/n^2). Metrics on the test set: worst-group log-loss
(``skdp.fairness.worst_group_loss``), worst-group accuracy, accuracy, fit
time. Ratios are medians over paired seeds.

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.multiclass --seeds 10

Writes ``benchmarks/results/minimax_fair_multiclass.{json,md}`` (``_n<n>``
appended for another ``--n``); ``--quick``
is a smoke run (n = 4000, 2 seeds, nothing written).
"""

import argparse
import json
import math
import os
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from sklearn.linear_model import LogisticRegression

from benchmarks._common import RESULTS
from skdp import HeavyTailedLogisticRegression, MinimaxFairClassifier
from skdp.fairness import worst_group_accuracy, worst_group_loss
from skdp.utils import clip_rows

PRIORS = (0.6, 0.3, 0.1)
D, K = 10, 5
FEATURE_NORM = 4.0
REF_RADIUS = 20.0


def _coefficients():
    rng = np.random.default_rng(12345)  # the task, fixed across seeds
    base = rng.normal(size=(D, K))
    W = [base, base + 0.5 * rng.normal(size=(D, K)), base.copy()]
    W[2][: D // 2] = rng.normal(size=(D // 2, K))  # half the features disagree
    return W


def synthetic(n, seed):
    rng = np.random.default_rng(seed)
    g = rng.choice(3, size=n, p=PRIORS)
    X = rng.normal(size=(n, D))
    W = _coefficients()
    scores = np.empty((n, K))
    for k in range(3):
        scores[g == k] = X[g == k] @ W[k] / math.sqrt(D) * 2.0
    cum = np.cumsum(softmax(scores, axis=1), axis=1)
    y = np.minimum((rng.random((n, 1)) > cum).sum(axis=1), K - 1)
    return X, y, g


def multinomial_dro_reference(X, y, groups, m, radius):
    """min_{||W||_F <= radius} max_g mean cross-entropy of group g (SLSQP, epigraph)."""
    n = X.shape[0]
    Xa = np.hstack([X, np.ones((n, 1))])
    p = Xa.shape[1]
    Y = np.eye(K)[y]
    idx = [np.flatnonzero(groups == k) for k in range(m)]

    def risk(v, i):
        S = Xa[i] @ v[:-1].reshape(p, K)
        lp = log_softmax(S, axis=1)
        loss = -np.mean(np.sum(Y[i] * lp, axis=1))
        grad = Xa[i].T @ (np.exp(lp) - Y[i]) / i.size
        return loss, grad.ravel()

    cons = []
    for i in idx:
        cons.append(
            {
                "type": "ineq",
                "fun": lambda v, i=i: v[-1] - risk(v, i)[0],
                "jac": lambda v, i=i: np.r_[-risk(v, i)[1], 1.0],
            }
        )
    cons.append(
        {
            "type": "ineq",
            "fun": lambda v: radius**2 - v[:-1] @ v[:-1],
            "jac": lambda v: np.r_[-2.0 * v[:-1], 0.0],
        }
    )
    v0 = np.zeros(p * K + 1)
    v0[-1] = math.log(K) + 1.0
    res = minimize(
        lambda v: v[-1],
        v0,
        jac=lambda v: np.r_[np.zeros(p * K), 1.0],
        constraints=cons,
        method="SLSQP",
        options={"maxiter": 1000, "ftol": 1e-12},
    )
    W = res.x[:-1].reshape(p, K)
    return W[:-1], W[-1]


def evaluate(proba, y, g):
    pred = np.argmax(proba, axis=1)
    return {
        "wg_logloss": float(
            worst_group_loss(y, proba, sensitive_features=g, labels=np.arange(K))
        ),
        "wg_accuracy": float(worst_group_accuracy(y, pred, sensitive_features=g)),
        "accuracy": float(np.mean(pred == y)),
    }


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 4000 if args.quick else args.n
    seeds = 2 if args.quick else args.seeds
    Xtr, ytr, gtr = synthetic(n, 1)
    Xte, yte, gte = synthetic(20_000, 999)
    delta = min(1e-6, 1.0 / n**2)
    rows = []
    start = time.time()

    def add(method, eps, seed, secs, metrics):
        rows.append(
            dict(method=method, epsilon=eps, seed=seed, seconds=secs, **metrics)
        )
        print(
            f"{time.time() - start:7.1f}s {method} eps={eps} seed={seed} "
            + ", ".join(f"{k}={v:.4f}" for k, v in metrics.items()),
            flush=True,
        )

    t0 = time.time()
    lr = LogisticRegression(C=1e4, max_iter=2000).fit(Xtr, ytr)
    add("LogisticRegression (non-private)", "inf", 0, time.time() - t0,
        evaluate(lr.predict_proba(Xte), yte, gte))  # fmt: skip
    t0 = time.time()
    W, b = multinomial_dro_reference(
        clip_rows(Xtr, FEATURE_NORM), ytr, gtr, 3, REF_RADIUS
    )
    add(f"multinomial group DRO (non-private, radius {REF_RADIUS:g})", "inf", 0,
        time.time() - t0, evaluate(softmax(Xte @ W + b, axis=1), yte, gte))  # fmt: skip

    common = dict(
        groups=[0, 1, 2],
        group_priors=list(PRIORS),
        feature_norm=FEATURE_NORM,
        classes=list(range(K)),
        delta=delta,
    )
    for eps, n_seeds in ((np.inf, 1), (1.0, seeds)):
        for seed in range(n_seeds):
            clf = MinimaxFairClassifier(epsilon=eps, random_state=1000 + seed, **common)
            t0 = time.time()
            clf.fit(Xtr, ytr, sensitive_features=gtr)
            secs = time.time() - t0
            assert clf.privacy_spent_[0] <= eps
            add("MinimaxFairClassifier (gda, multinomial)", str(eps), seed, secs,
                evaluate(clf.predict_proba(Xte), yte, gte))  # fmt: skip
            ht = HeavyTailedLogisticRegression(
                epsilon=eps,
                delta=delta,
                classes=list(range(K)),
                feature_norm=FEATURE_NORM,
                random_state=3000 + seed,
            )
            t0 = time.time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                ht.fit(Xtr, ytr)
            add("HeavyTailedLogisticRegression (multinomial, groups ignored)",
                str(eps), seed, time.time() - t0,
                evaluate(ht.predict_proba(Xte), yte, gte))  # fmt: skip

    def sel(method, eps):
        return [
            r for r in rows if r["method"].startswith(method) and r["epsilon"] == eps
        ]

    ref = sel("multinomial group DRO", "inf")[0]
    lr_row = sel("LogisticRegression", "inf")[0]
    ours = sel("MinimaxFairClassifier", "1.0")
    ht = {r["seed"]: r for r in sel("HeavyTailedLogisticRegression", "1.0")}
    ratio_ht = float(
        np.median([r["wg_logloss"] / ht[r["seed"]]["wg_logloss"] for r in ours])
    )
    ratio_dro = float(np.median([r["wg_logloss"] / ref["wg_logloss"] for r in ours]))
    t_ratio = float(np.median([r["seconds"] for r in ours])) / lr_row["seconds"]
    lines = [
        f"# MinimaxFairClassifier, K = {K} classes (synthetic, 3 groups)",
        "",
        f"`benchmarks/minimax_fair/multiclass.py --seeds {seeds} --n {n}`: n_train = "
        f"{n}, n_test = 20000, d = {D}, delta = {delta:.3g}, {seeds} paired seeds at "
        "epsilon = 1, one run at inf. Medians, [min, max] in brackets.",
        "",
        "| method | epsilon | runs | worst-group log-loss | worst-group accuracy "
        "| accuracy | fit time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for eps in ("inf", "1.0"):
        for m in methods:
            s = [r for r in rows if r["method"] == m and r["epsilon"] == eps]
            if not s:
                continue
            cells = []
            for key in ("wg_logloss", "wg_accuracy", "accuracy"):
                v = np.array([r[key] for r in s])
                cells.append(
                    f"{np.median(v):.4f}"
                    + (f" [{v.min():.4f}, {v.max():.4f}]" if v.size > 1 else "")
                )
            secs = np.median([r["seconds"] for r in s])
            out_eps = "inf" if eps == "inf" else "1"
            lines.append(f"| {m} | {out_eps} | {len(s)} | " + " | ".join(cells)
                         + f" | {secs:.2f} |")  # fmt: skip
    lines += [
        "",
        "At epsilon = 1, worst-group log-loss of MinimaxFairClassifier: "
        f"{ratio_ht:.3f} times the group-blind multinomial "
        f"HeavyTailedLogisticRegression (median of paired ratios), "
        f"{ratio_dro:.3f} times non-private multinomial group DRO; fit time "
        f"{t_ratio:.2f} times scikit-learn's LogisticRegression.",
        "",
    ]
    print("\n".join(lines))
    if not args.quick:
        suffix = "" if n == 20_000 else f"_n{n}"
        stem = os.path.join(RESULTS, f"minimax_fair_multiclass{suffix}")
        with open(stem + ".json", "w") as fh:
            json.dump(
                {"n": n, "seeds": seeds, "delta": delta, "rows": rows}, fh, indent=1
            )
        with open(stem + ".md", "w") as fh:
            fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
