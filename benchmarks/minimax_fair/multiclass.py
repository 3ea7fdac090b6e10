"""Benchmark: MinimaxFairClassifier with K = 5 classes (multinomial loss, solver="gda").

Two synthetic tasks (``--task``):

- ``groups`` (default): 3 groups with public priors (0.6, 0.3, 0.1), d = 10
  standard normal features, K = 5 classes drawn from a softmax model whose
  coefficient matrix differs by group (the minority group's disagrees with the
  majority's on half of the features); ``n`` training rows (default 2e4) and
  2e4 test rows. Public ``feature_norm`` 4 (rows are clipped to it; the median
  row norm is about sqrt(10)); delta = min(1e-6, 1/n^2).
- ``heavy_tailed``: issue 17's task of ``benchmarks/heavy_tailed/multiclass.py``
  (K = 5, d = 20, Student-t(3) features, one group), ``n`` training rows
  (training seed 0) and 50,000 test rows; every estimator at its defaults
  (``feature_norm`` estimated privately), delta = n^-1.1 as in that benchmark.

Methods, in one process on the same split:

- ``MinimaxFairClassifier(classes=range(5))`` at its defaults (``solver="gda"``,
  100 full-batch steps, multinomial loss, whole-record d x K clip), at each
  ``--epsilons`` (``--seeds`` seeds) and epsilon = inf (one run);
- ``HeavyTailedLogisticRegression(classes=range(5))`` (multinomial default,
  groups ignored), same epsilons and seeds;
- multinomial full-batch DP-GD with per-record (Frobenius) clipping at fixed
  C in {0.1, 1, 10} and step in {0.3, 1, 3}, 100 steps, noise from skdp's exact
  accountant (``dp_gd_multinomial`` of ``benchmarks/heavy_tailed/multiclass.py``,
  groups ignored, rows clipped to the task's public norm on the groups task);
  "best fixed clip" is the best (C, step) chosen in hindsight on the mean test
  accuracy (the anchor of issue 17);
- non-private multinomial group DRO (``groups`` task), solved accurately by
  SLSQP on the epigraph form ``min t s.t. R_g(W) <= t, ||W||_F^2 <= 20^2``
  (radius fixed here, independently of skdp's defaults; rows clipped to the
  same norm);
- non-private multinomial ``LogisticRegression`` (its fit time is the unit).

Metrics on the test set: worst-group log-loss
(``skdp.fairness.worst_group_loss``), worst-group accuracy, accuracy, fit
time (CPU seconds of the process). Ratios are medians over paired seeds.

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.multiclass --seeds 10
    nice -n 10 python -m benchmarks.minimax_fair.multiclass --task heavy_tailed \\
        --n 100000 --seeds 3

Writes ``benchmarks/results/minimax_fair_multiclass{,_heavy_tailed}{_n<n>}.{json,md}``
(``_n<n>`` unless n = 2e4 on the groups task); ``--quick`` is a smoke run
(n = 4000, 2 seeds, nothing written).
"""

import argparse
import json
import math
import os
import time
import warnings
from itertools import product

import numpy as np
from scipy.optimize import minimize
from scipy.special import log_softmax, softmax
from sklearn.linear_model import LogisticRegression

from benchmarks._common import RESULTS
from benchmarks.heavy_tailed.multiclass import dp_gd_multinomial
from benchmarks.heavy_tailed.multiclass import synthetic as heavy_tailed_synthetic
from skdp import HeavyTailedLogisticRegression, MinimaxFairClassifier
from skdp.fairness import worst_group_accuracy, worst_group_loss
from skdp.utils import clip_rows

PRIORS = (0.6, 0.3, 0.1)
D, K = 10, 5
FEATURE_NORM = 4.0
REF_RADIUS = 20.0
GD_CLIPS = (0.1, 1.0, 10.0)
GD_STEPS = (0.3, 1.0, 3.0)


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


def load(task, n):
    """Training and test data, estimator settings and delta of a task."""
    if task == "groups":
        Xtr, ytr, gtr = synthetic(n, 1)
        Xte, yte, gte = synthetic(20_000, 999)
        delta = min(1e-6, 1.0 / n**2)
        common = dict(
            groups=[0, 1, 2],
            group_priors=list(PRIORS),
            feature_norm=FEATURE_NORM,
            classes=list(range(K)),
            delta=delta,
        )
        return Xtr, ytr, gtr, Xte, yte, gte, delta, common
    Xtr, ytr = heavy_tailed_synthetic(n, np.random.default_rng(0))
    Xte, yte = heavy_tailed_synthetic(50_000, np.random.default_rng(10**6))
    delta = n**-1.1
    gtr, gte = np.zeros(n, dtype=int), np.zeros(Xte.shape[0], dtype=int)
    return Xtr, ytr, gtr, Xte, yte, gte, delta, dict(classes=list(range(K)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", choices=("groups", "heavy_tailed"), default="groups")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--epsilons", default="1")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    n = 4000 if args.quick else args.n
    seeds = 2 if args.quick else args.seeds
    epsilons = [float(e) for e in args.epsilons.split(",")]
    grouped = args.task == "groups"
    Xtr, ytr, gtr, Xte, yte, gte, delta, common = load(args.task, n)
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

    t0 = time.process_time()
    lr = LogisticRegression(C=1e4, max_iter=2000).fit(Xtr, ytr)
    add("LogisticRegression (non-private)", "inf", 0, time.process_time() - t0,
        evaluate(lr.predict_proba(Xte), yte, gte))  # fmt: skip
    if grouped:
        t0 = time.process_time()
        W, b = multinomial_dro_reference(
            clip_rows(Xtr, FEATURE_NORM), ytr, gtr, 3, REF_RADIUS
        )
        add(f"multinomial group DRO (non-private, radius {REF_RADIUS:g})", "inf",
            0, time.process_time() - t0,
            evaluate(softmax(Xte @ W + b, axis=1), yte, gte))  # fmt: skip
    # the DP-GD baselines clip the rows to the public norm where there is one
    Xgd = clip_rows(Xtr, FEATURE_NORM) if grouped else Xtr
    Xgd_te = np.hstack([Xte, np.ones((Xte.shape[0], 1))])

    for eps, n_seeds in [(np.inf, 1)] + [(e, seeds) for e in epsilons]:
        for seed in range(n_seeds):
            clf = MinimaxFairClassifier(epsilon=eps, random_state=1000 + seed, **common)
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                clf.fit(Xtr, ytr, sensitive_features=gtr if grouped else None)
            secs = time.process_time() - t0
            assert clf.privacy_spent_[0] <= eps
            add("MinimaxFairClassifier (gda, multinomial)", str(eps), seed, secs,
                evaluate(clf.predict_proba(Xte), yte, gte))  # fmt: skip
            ht = HeavyTailedLogisticRegression(
                epsilon=eps,
                delta=delta,
                classes=list(range(K)),
                feature_norm=FEATURE_NORM if grouped else None,
                random_state=3000 + seed,
            )
            t0 = time.process_time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                ht.fit(Xtr, ytr)
            add("HeavyTailedLogisticRegression (multinomial, groups ignored)",
                str(eps), seed, time.process_time() - t0,
                evaluate(ht.predict_proba(Xte), yte, gte))  # fmt: skip
            if np.isinf(eps):
                continue
            for clip, step in product(GD_CLIPS, GD_STEPS):
                t0 = time.process_time()
                W = dp_gd_multinomial(
                    Xgd, ytr, K, clip, step, eps, delta,
                    np.random.default_rng(5000 + seed),
                )  # fmt: skip
                add(f"DP-GD multinomial C={clip:g} step={step:g}", str(eps), seed,
                    time.process_time() - t0,
                    evaluate(softmax(Xgd_te @ W, axis=1), yte, gte))  # fmt: skip

    def sel(method, eps):
        return [
            r for r in rows if r["method"].startswith(method) and r["epsilon"] == eps
        ]

    def mean(method, eps, key):
        return float(np.mean([r[key] for r in sel(method, eps)]))

    lr_row = sel("LogisticRegression", "inf")[0]
    summary = []
    for eps in [str(e) for e in epsilons]:
        ours = sel("MinimaxFairClassifier", eps)
        ht = {r["seed"]: r for r in sel("HeavyTailedLogisticRegression", eps)}
        gd = {
            m: mean(m, eps, "accuracy")
            for m in dict.fromkeys(
                r["method"] for r in rows if r["method"].startswith("DP-GD")
            )
        }
        best_gd = max(gd, key=gd.get)
        acc = mean("MinimaxFairClassifier", eps, "accuracy")
        acc_ht = mean("HeavyTailedLogisticRegression", eps, "accuracy")
        line = (
            f"epsilon = {eps}: mean accuracy of MinimaxFairClassifier {acc:.4f} "
            f"(min over seeds {min(r['accuracy'] for r in ours):.4f}), "
            f"HeavyTailedLogisticRegression {acc_ht:.4f}, best fixed-clip DP-GD "
            f"in hindsight {gd[best_gd]:.4f} ({best_gd[len('DP-GD multinomial ') :]})"
            f", non-private LogisticRegression {lr_row['accuracy']:.4f}. "
            f"MinimaxFairClassifier - best DP-GD: {acc - gd[best_gd]:+.4f}; "
            f"- non-private: {acc - lr_row['accuracy']:+.4f}. "
            f"HeavyTailedLogisticRegression - best DP-GD: {acc_ht - gd[best_gd]:+.4f}"
            f"; - non-private: {acc_ht - lr_row['accuracy']:+.4f}."
        )
        if grouped:
            ref = sel("multinomial group DRO", "inf")[0]
            ratio_ht = float(
                np.median([r["wg_logloss"] / ht[r["seed"]]["wg_logloss"] for r in ours])
            )
            ratio_dro = float(
                np.median([r["wg_logloss"] / ref["wg_logloss"] for r in ours])
            )
            wg = mean("MinimaxFairClassifier", eps, "wg_accuracy")
            gd_wg = mean(best_gd, eps, "wg_accuracy")
            line += (
                f" Worst-group log-loss: {ratio_ht:.3f} times the group-blind "
                f"HeavyTailedLogisticRegression (median of paired ratios), "
                f"{ratio_dro:.3f} times non-private multinomial group DRO. "
                f"Worst-group accuracy {wg:.4f} (non-private DRO "
                f"{ref['wg_accuracy']:.4f}, LogisticRegression "
                f"{lr_row['wg_accuracy']:.4f}, best DP-GD {gd_wg:.4f})."
            )
        t_ratio = float(np.median([r["seconds"] for r in ours])) / lr_row["seconds"]
        line += f" Fit CPU time {t_ratio:.2f} times scikit-learn's LogisticRegression."
        summary.append(line)
    title = "3 groups, d = 10" if grouped else "heavy-tailed task of issue 17, d = 20"
    eps_list = ", ".join(f"{e:g}" for e in epsilons)
    lines = [
        f"# MinimaxFairClassifier, K = {K} classes (synthetic, {title})",
        "",
        f"`python -m benchmarks.minimax_fair.multiclass --task {args.task} "
        f"--seeds {seeds} --n {n} --epsilons {args.epsilons}`: n_train = {n}, "
        f"n_test = {Xte.shape[0]}, d = {Xtr.shape[1]}, delta = {delta:.3g}, "
        f"{seeds} paired seeds at epsilon in {{{eps_list}}}, one run at inf. "
        "Medians, [min, max] in brackets; fit time in CPU seconds.",
        "",
        "| method | epsilon | runs | worst-group log-loss | worst-group accuracy "
        "| accuracy | mean accuracy | fit time (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    methods = list(dict.fromkeys(r["method"] for r in rows))
    for eps in ["inf"] + [str(e) for e in epsilons]:
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
            cells.append(f"{np.mean([r['accuracy'] for r in s]):.4f}")
            secs = np.median([r["seconds"] for r in s])
            out_eps = eps if eps == "inf" else f"{float(eps):g}"
            lines.append(f"| {m} | {out_eps} | {len(s)} | " + " | ".join(cells)
                         + f" | {secs:.2f} |")  # fmt: skip
    lines += [""] + summary + [""]
    print("\n".join(lines))
    if not args.quick:
        suffix = "" if (n == 20_000 and grouped) else f"_n{n}"
        task = "" if grouped else "_heavy_tailed"
        stem = os.path.join(RESULTS, f"minimax_fair_multiclass{task}{suffix}")
        with open(stem + ".json", "w") as fh:
            json.dump(
                {
                    "task": args.task,
                    "n": n,
                    "seeds": seeds,
                    "epsilons": epsilons,
                    "delta": delta,
                    "rows": rows,
                },
                fh,
                indent=1,
            )
        with open(stem + ".md", "w") as fh:
            fh.write("\n".join(lines))


if __name__ == "__main__":
    main()
