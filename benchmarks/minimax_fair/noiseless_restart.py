"""Probe: gradient-restarted momentum at the noiseless end of the gda schedule.

Why the round-4 noiseless schedule (primal step x3, dual step 1, last primal
iterate, warm-up 10%, Nesterov momentum 0.9) diverges on the synthetic 3-group
task of ``main.py``, and what the rule of round 5 (gradient restart wherever
the noiseless share ``u > 0``, :func:`~skdp.solvers.saddle_point.plan.gda_schedule`)
does on every task it touches. ``before`` patches the rule's ``restart`` to
``False`` (the previous default); the other variants keep it off and change one
constant. Every fit is deterministic at epsilon = inf (one run each).

- Binary tasks (``synthetic``, ``adult-sex``, ``adult-sexrace`` of ``main.py``,
  same loader, priors and feature norm), ``max_iter`` 100 (default) and 300:
  worst-group test log-loss, worst-group training risk and the duality gap of
  the estimator's own objective at its output, ``max_g R_g(w) - min_{||v|| <=
  radius} sum_g q_g R_g(v)`` (the minimum by L-BFGS, and SLSQP on the ball
  when it binds; ``main.certified_gap`` uses 2000
  accelerated steps instead, an over-estimate by its error).
- The band ``0 < z < 1`` (epsilon above about 50 at 100 steps) on the
  synthetic task, seeds 0-2.
- Multinomial (K = 5 ``groups`` task of ``multiclass.py`` at n = 2e4; iris,
  wine, digits of ``heavy_tailed/multiclass.py``, one group, split 0 of a
  stratified 75/25 split): gap of the estimator's objective, test log-loss and
  accuracy; scikit-learn's ``LogisticRegression(C=1e4)`` for reference (its
  norm is far above the ball's radius 5, so the two solve different problems).

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.noiseless_restart

Writes ``benchmarks/results/minimax_fair_noiseless_restart.md`` (about 5
minutes on the shared machine; ``--quick``: synthetic only, nothing written).
"""

import argparse
import contextlib
import math
import os
import time
import warnings

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS, head_commit
from benchmarks.heavy_tailed.multiclass import real_data
from benchmarks.minimax_fair.main import load_task
from benchmarks.minimax_fair.multiclass import load as load_multiclass
from skdp import MinimaxFairClassifier
from skdp._testing.internals import saddle_point_plan_module as P
from skdp.fairness import worst_group_loss
from skdp.utils import clip_rows


# --- the exact objective at the output --------------------------------------------
def _ball_minimum(value_grad, w0, radius):
    """``min_{||v|| <= radius} f(v)``: L-BFGS inside, SLSQP on the ball if it binds."""
    if np.linalg.norm(w0) < radius * (1.0 - 1e-6):  # an interior output
        opts = {"maxiter": 2000, "gtol": 1e-11, "ftol": 1e-15}
        res = minimize(value_grad, w0, jac=True, method="L-BFGS-B", options=opts)
        if np.linalg.norm(res.x) <= radius:
            return res.fun
    ball = {"type": "ineq", "fun": lambda v: radius**2 - v @ v, "jac": lambda v: -2 * v}
    start = w0 * min(1.0, radius / max(np.linalg.norm(w0), 1e-12))
    res = minimize(
        value_grad, start, jac=True, method="SLSQP", constraints=[ball],
        options={"maxiter": 1000, "ftol": 1e-14},
    )  # fmt: skip
    return res.fun


def duality_gap(clf, X, y, codes):
    """Gap of the estimator's objective (its priors, ball, clipped rows)."""
    bound = math.hypot(clf.feature_norm_, 1.0)
    Xa = clip_rows(np.hstack([X, np.ones((X.shape[0], 1))]), bound)
    n, p = Xa.shape
    weights = (clf.group_weights_ / clf.group_priors_)[codes] / n
    if clf.classes_.size == 2:
        ypm = np.where(y == clf.classes_[1], 1.0, -1.0)
        w = np.r_[clf.coef_[0], clf.intercept_[0]]

        def losses(v):
            return np.logaddexp(0.0, -ypm * (Xa @ v))

        def value_grad(v):
            m = ypm * (Xa @ v)
            d = -expit(-m) * ypm
            return float(weights @ np.logaddexp(0.0, -m)), Xa.T @ (weights * d)

    else:
        K = clf.classes_.size
        Y = np.eye(K)[np.searchsorted(clf.classes_, y)]
        w = np.vstack([clf.coef_.T, clf.intercept_[None, :]]).ravel()

        def losses(v):
            return -np.sum(Y * log_softmax(Xa @ v.reshape(p, K), axis=1), axis=1)

        def value_grad(v):
            lp = log_softmax(Xa @ v.reshape(p, K), axis=1)
            grad = Xa.T @ ((np.exp(lp) - Y) * weights[:, None])
            return -float(weights @ np.sum(Y * lp, axis=1)), grad.ravel()

    m = clf.group_priors_.size
    risks = np.bincount(codes, weights=losses(w), minlength=m)
    worst = float(np.max(risks / (n * clf.group_priors_)))
    return worst, worst - _ball_minimum(value_grad, w, clf.radius_)


# --- schedule variants -------------------------------------------------------------
@contextlib.contextmanager
def variant(name):
    """``after`` is the default; the others switch the restart off."""
    saved = (P.gda_schedule, P._GDA_MOMENTUM, dict(P._GDA_NOISELESS))
    rule = P.gda_schedule
    try:
        if name != "after":
            P.gda_schedule = lambda z, multinomial=False: {
                **rule(z, multinomial),
                "restart": False,
            }
        if name == "momentum 0.7":
            P._GDA_MOMENTUM = 0.7
        if name.startswith("dual step"):
            P._GDA_NOISELESS = {**P._GDA_NOISELESS, "dual_step": float(name[10:])}
        yield
    finally:
        P.gda_schedule, P._GDA_MOMENTUM, P._GDA_NOISELESS = saved


BINARY_VARIANTS = ("before", "after", "momentum 0.7", "dual step 0.3", "dual step 0.5")


def fit(params, X, y, g, name):
    with variant(name), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.process_time()
        clf = MinimaxFairClassifier(**params).fit(X, y, sensitive_features=g)
        return clf, time.process_time() - t0


def binary_rows(task_name, out):
    task = load_task(task_name)
    codes = np.array([task["groups"].index(v) for v in task["gtr"].tolist()])
    params = dict(
        epsilon=np.inf,
        delta=min(1e-6, 1.0 / task["Xtr"].shape[0] ** 2),
        random_state=0,
        groups=task["groups"],
        group_priors=task["priors"],
        feature_norm=task["feature_norm"],
        classes=[0, 1],
    )
    for max_iter in (100, 300):
        for name in BINARY_VARIANTS:
            clf, secs = fit(
                {**params, "max_iter": max_iter}, task["Xtr"], task["ytr"],
                task["gtr"], name,
            )  # fmt: skip
            proba = clf.predict_proba(task["Xte"])[:, 1]
            wgl = worst_group_loss(task["yte"], proba, sensitive_features=task["gte"])
            worst, gap = duality_gap(clf, task["Xtr"], task["ytr"], codes)
            line = (
                f"| {task_name} | {max_iter} | {name} | {wgl:.4f} | {worst:.4f} | "
                f"{gap:.1e} | {' '.join(f'{v:.3f}' for v in clf.group_weights_)} "
                f"| {secs:.1f} |"
            )
            print(line, flush=True)
            out.append(line)


def band_rows(out):
    task = load_task("synthetic")
    codes = np.asarray(task["gtr"])
    for eps in (60.0, 150.0, 400.0, 2000.0):
        for name in ("before", "after"):
            vals, u = [], None
            for seed in range(3):
                clf, _ = fit(
                    dict(epsilon=eps, delta=1e-10, random_state=seed, groups=[0, 1, 2],
                         group_priors=task["priors"], feature_norm=2.5, classes=[0, 1]),
                    task["Xtr"], task["ytr"], task["gtr"], name,
                )  # fmt: skip
                u = clf.constants_["noiseless_share"]
                proba = clf.predict_proba(task["Xte"])[:, 1]
                wgl = worst_group_loss(
                    task["yte"], proba, sensitive_features=task["gte"]
                )
                vals.append((wgl, duality_gap(clf, task["Xtr"], task["ytr"], codes)[1]))
            v = np.array(vals)
            line = (
                f"| {eps:g} | {clf.constants_['noise_multiplier']:.3f} | {u:.2f} | "
                f"{name} | {np.median(v[:, 0]):.4f} | {np.median(v[:, 1]):.1e} "
                f"[{v[:, 1].min():.1e}, {v[:, 1].max():.1e}] |"
            )
            print(line, flush=True)
            out.append(line)


def multinomial_rows(out):
    tasks = []
    Xtr, ytr, gtr, Xte, yte, gte, delta, common = load_multiclass("groups", 20_000)
    tasks.append(("groups K=5, n=2e4", Xtr, ytr, gtr, Xte, yte, gte, common, None))
    for name in ("iris", "wine", "digits"):
        X, y = real_data(name)
        Xtr, Xte, ytr, yte = train_test_split(
            X, y, test_size=0.25, random_state=0, stratify=y
        )
        K = int(np.max(y)) + 1
        lr = LogisticRegression(C=1e4, max_iter=5000).fit(Xtr, ytr)
        zero_tr, zero_te = np.zeros(len(ytr), int), np.zeros(len(yte), int)
        common = dict(classes=list(range(K)))
        ref = (
            worst_group_loss(yte, lr.predict_proba(Xte), sensitive_features=zero_te),
            float(np.mean(lr.predict(Xte) == yte)),
        )
        tasks.append((name, Xtr, ytr, zero_tr, Xte, yte, zero_te, common, ref))
    for label, Xtr, ytr, gtr, Xte, yte, gte, common, ref in tasks:
        grouped = ref is None
        if not grouped:
            out.append(
                f"| {label} | | LogisticRegression(C=1e4) | {ref[0]:.4f} | "
                f"{ref[1]:.4f} | | |"
            )
        for max_iter in (100, 300):
            for name in ("before", "after"):
                params = dict(
                    epsilon=np.inf, random_state=0, max_iter=max_iter, **common
                )
                clf, secs = fit(params, Xtr, ytr, gtr if grouped else None, name)
                proba = clf.predict_proba(Xte)
                wgl = worst_group_loss(yte, proba, sensitive_features=gte)
                codes = np.searchsorted(np.unique(gtr), gtr) if grouped else gtr
                _, gap = duality_gap(clf, Xtr, ytr, codes)
                acc = float(np.mean(clf.predict(Xte) == yte))
                line = (
                    f"| {label} | {max_iter} | {name} | {wgl:.4f} | {acc:.4f} | "
                    f"{gap:.1e} | {secs:.1f} |"
                )
                print(line, flush=True)
                out.append(line)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args()
    binary = [
        "| task | max_iter | schedule | wg test log-loss | wg train risk | gap "
        "| group weights | fit CPU (s) |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for task_name in ("synthetic",) if args.quick else TASKS:
        binary_rows(task_name, binary)
    if args.quick:
        return
    band = [
        "| epsilon | z | u | schedule | wg test log-loss (median) "
        "| gap, median [min, max] |",
        "|---|---|---|---|---|---|",
    ]
    band_rows(band)
    multi = [
        "| task | max_iter | schedule | wg test log-loss | accuracy | gap "
        "| fit CPU (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    multinomial_rows(multi)
    header = [
        "# Gradient-restarted momentum at the noiseless end of the gda schedule",
        "",
        "Command: `PYTHONPATH=$PWD nice -n 10 python -m "
        f"benchmarks.minimax_fair.noiseless_restart` at {head_commit()}, numba on, shared "
        "machine. Deterministic at epsilon = inf: one fit per cell. `before`: "
        "the rule with the restart off (the previous default); `after`: the "
        "default (restart wherever u > 0).",
        "",
        "## Binary tasks of `main.py`, epsilon = inf",
        "",
    ]
    lines = header + binary + ["", "## The band 0 < z < 1 (synthetic, seeds 0-2)", ""]
    lines += band + ["", "## Multinomial, epsilon = inf", ""] + multi + [""]
    with open(os.path.join(RESULTS, "minimax_fair_noiseless_restart.md"), "w") as fh:
        fh.write("\n".join(lines))


TASKS = ("synthetic", "adult-sex", "adult-sexrace")

if __name__ == "__main__":
    main()
