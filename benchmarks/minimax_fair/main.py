"""Benchmark: private minimax group-fair classification (MinimaxFairClassifier).

Runs, in one process and on the same split for every method,

- ``MinimaxFairClassifier`` with its default solver (full-batch noisy
  descent-ascent, ``solver="gda"``) at epsilon in {0.5, 1, 2, 5}, and the
  papers' solvers NISPP and NSEG at epsilon = 1 (fewer seeds);
- non-private group DRO solved accurately (SLSQP on the epigraph form) in a
  ball of radius ``REF_RADIUS = 20`` fixed here, independently of skdp's
  defaults (the unregularised logistic regression has norm 9.5 on Adult);
- non-private ``LogisticRegression`` (its fit time is the time unit);
- ``HeavyTailedLogisticRegression`` (skdp's group-blind private model);
- DP-GD ignoring groups (100 full-batch steps, GDP accountant).

Tasks (``--task``):

- ``adult-sexrace``: Adult (official train/test files) with sensitive
  features sex x race, race in {White, Black, Other}: 6 groups, the smallest
  574 training rows; ``adult-sex``: the two sex groups. Loader
  (``benchmarks/_common/fair_data.py``): the 5 numeric columns mapped to [0, 1] by
  public ranges (log scale for capital gain/loss), the 8 categorical columns
  one-hot encoded with the category lists of ``adult.names`` (plus "?"), d =
  112; every row has norm at most sqrt(13), the public ``feature_norm`` given
  to every private model. Group priors are estimated privately by
  MinimaxFairClassifier (noisy histogram).
- ``synthetic``: 3 groups with priors (0.6, 0.3, 0.1) and conflicting optimal
  classifiers, n = 1e5 train, 1e5 test; public priors, feature_norm 2.5.

delta = min(1e-6, 1/n^2) for every private model. Metrics on the test set:
worst-group log-loss, worst-group accuracy, accuracy, fit time. Ratios are
medians over paired seeds (seed s of ours against seed s of the baseline).

Usage (PYTHONPATH at the repository root)::

    python -m benchmarks.minimax_fair.main --task adult-sexrace --seeds 10
    python -m benchmarks.minimax_fair.main --task adult-sex --seeds 10
    python -m benchmarks.minimax_fair.main --task synthetic --seeds 10
    python -m benchmarks.minimax_fair.main --ablation       # where the accuracy goes
    python -m benchmarks.minimax_fair.main --report         # rebuild the markdown
    python -m benchmarks.minimax_fair.main --task synthetic --inf-only
        # refit only the epsilon = inf MinimaxFairClassifier rows (others kept)

Each run writes ``benchmarks/results/minimax_fair_<task>.json``; the report
collects them into ``benchmarks/results/minimax_fair.md``. ``--quick`` runs a
smoke test on a subsample (nothing written).
"""

import argparse
import json
import math
import os
import time
import warnings

import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression

from benchmarks._common import RESULTS
from benchmarks._common.fair_data import PRIORS, adult, group_dro_reference, synthetic
from skdp import HeavyTailedLogisticRegression, MinimaxFairClassifier
from skdp._testing.internals import GroupDROLogistic
from skdp.fairness import worst_group_accuracy, worst_group_loss
from skdp.privacy import calibrate_gaussian, certify_epsilon, gaussian_steps
from skdp.utils import clip_rows

EPSILONS = (0.5, 1.0, 2.0, 5.0)
REF_RADIUS = 20.0
TASKS = ("adult-sexrace", "adult-sex", "synthetic")


# --- data ---------------------------------------------------------------------------------
def _sex_race(sf):
    race = np.where(np.isin(sf[:, 1], ["White", "Black"]), sf[:, 1], "Other")
    out = np.empty(sf.shape[0], dtype=object)
    out[:] = [f"{s}|{r}" for s, r in zip(sf[:, 0], race)]
    return out


def load_task(name, quick=False):
    if name == "synthetic":
        n = 10_000 if quick else 100_000
        Xtr, ytr, gtr = synthetic(n, 1)
        Xte, yte, gte = synthetic(20_000 if quick else 100_000, 999)
        return dict(
            Xtr=Xtr, ytr=ytr, gtr=gtr, Xte=Xte, yte=yte, gte=gte,
            groups=[0, 1, 2], priors=list(PRIORS), feature_norm=2.5,
        )  # fmt: skip
    Xtr, ytr, sftr, Xte, yte, sfte, _ = adult()
    if name == "adult-sexrace":
        gtr, gte = _sex_race(sftr), _sex_race(sfte)
    else:
        gtr, gte = sftr[:, 0].copy(), sfte[:, 0].copy()
    if quick:
        Xtr, ytr, gtr = Xtr[:8000], ytr[:8000], gtr[:8000]
    groups = sorted(set(gtr.tolist()))  # public: the declared group list
    return dict(
        Xtr=Xtr, ytr=ytr, gtr=gtr, Xte=Xte, yte=yte, gte=gte,
        groups=groups, priors=None, feature_norm=math.sqrt(13.0),
    )  # fmt: skip


# --- baselines ------------------------------------------------------------------------------
def dp_logistic_regression(X, y, epsilon, delta, *, feature_norm, radius, steps, rng):
    """Full-batch DP-GD for logistic regression ignoring groups.

    Rows (with a constant intercept column) are clipped to ``R``, so every
    per-sample gradient has norm at most ``R``; the mean gradient has
    replace-one sensitivity ``2R/n`` and ``steps`` Gaussian steps are
    calibrated exactly with the GDP accountant. Step ``4 / R^2``, projection on
    the ball of ``radius``, averaged iterates.
    """
    n = X.shape[0]
    R = math.hypot(feature_norm, 1.0)
    Xa = clip_rows(np.hstack([X, np.ones((n, 1))]), R)
    ypm = np.where(y == 1, 1.0, -1.0)
    z = calibrate_gaussian(epsilon, delta, steps) if np.isfinite(epsilon) else 0.0
    sigma = z * 2.0 * R / n
    lr = 4.0 / R**2
    w = np.zeros(Xa.shape[1])
    avg = np.zeros_like(w)
    for _ in range(steps):
        s = -expit(-ypm * (Xa @ w)) * ypm
        grad = Xa.T @ s / n + rng.normal(0.0, sigma, size=w.size)
        w = w - lr * grad
        norm = np.linalg.norm(w)
        if norm > radius:
            w *= radius / norm
        avg += w
    w = avg / steps
    spent = certify_epsilon(gaussian_steps(z, steps), delta) if z else np.inf
    return w[:-1], w[-1], spent


def evaluate(proba, y, g):
    pred = (proba > 0.5).astype(int)
    return {
        "wg_logloss": float(worst_group_loss(y, proba, sensitive_features=g)),
        "wg_accuracy": float(worst_group_accuracy(y, pred, sensitive_features=g)),
        "accuracy": float(np.mean(pred == y)),
    }


def dro_reference(task, name, quick):
    """Non-private group DRO in the REF_RADIUS ball (cached: SLSQP is slow)."""
    path = os.path.join(RESULTS, f"minimax_fair_dro_{name}.json")
    if not quick and os.path.exists(path):
        with open(path) as fh:
            ref = json.load(fh)
        if ref["radius"] == REF_RADIUS:
            return np.array(ref["coef"]), ref["intercept"], ref["seconds"]
    codes = np.array([task["groups"].index(v) for v in task["gtr"].tolist()])
    Xc = clip_rows(task["Xtr"], task["feature_norm"])
    t0 = time.time()
    w, b = group_dro_reference(Xc, task["ytr"], codes, len(task["groups"]), REF_RADIUS)
    secs = time.time() - t0
    if not quick:
        with open(path, "w") as fh:
            json.dump(
                {"radius": REF_RADIUS, "coef": w.tolist(), "intercept": float(b),
                 "seconds": secs}, fh,
            )  # fmt: skip
    return w, b, secs


def certified_gap(clf, task):
    """Duality gap of the estimator's own objective at its output (epsilon=inf).

    ``max_g R_g(w) - min_{||v|| <= radius} sum_g q_g R_g(v)`` with the
    estimator's priors, ball and clipped rows; the inner minimum by 2000
    accelerated gradient steps (an over-estimate of the gap by its error).
    """
    n = task["Xtr"].shape[0]
    c0 = 1.0
    R = math.hypot(clf.feature_norm_, c0)
    Xa = clip_rows(np.hstack([task["Xtr"], np.full((n, 1), c0)]), R)
    codes = np.array([task["groups"].index(v) for v in task["gtr"].tolist()])
    op = GroupDROLogistic(
        Xa, np.where(task["ytr"] == 1, 1.0, -1.0), codes, clf.group_priors_,
        radius=clf.radius_, feature_bound=R,
    )  # fmt: skip
    w = np.r_[clf.coef_[0], clf.intercept_[0] / c0]
    worst = float(op.group_risks(w).max())
    best, _ = op.best_response_value(clf.group_weights_, n_iter=2000)
    return worst - best


# --- one task -----------------------------------------------------------------------------
def run_task(name, seeds, epsilons, quick, log):
    task = load_task(name, quick)
    Xtr, ytr, gtr, Xte, yte, gte = (
        task[k] for k in ("Xtr", "ytr", "gtr", "Xte", "yte", "gte")
    )
    n = Xtr.shape[0]
    delta = min(1e-6, 1.0 / n**2)
    rows = []

    def add(method, eps, seed, secs, metrics, **extra):
        row = dict(
            method=method, epsilon=eps, seed=seed, seconds=secs, **metrics, **extra
        )
        rows.append(row)
        log(
            f"[{name}] {method} eps={eps} seed={seed} "
            + ", ".join(f"{k}={v:.4f}" for k, v in row.items() if isinstance(v, float))
        )

    # Time unit: scikit-learn's LogisticRegression on the same data.
    lr_times = []
    for _ in range(3):
        t0 = time.time()
        erm = LogisticRegression(C=1e4, max_iter=2000).fit(Xtr, ytr)
        lr_times.append(time.time() - t0)
    add(
        "LogisticRegression (non-private)",
        "inf",
        0,
        float(np.median(lr_times)),
        evaluate(erm.predict_proba(Xte)[:, 1], yte, gte),
    )
    w, b, secs = dro_reference(task, name, quick)
    add(
        f"group DRO (non-private, radius {REF_RADIUS:g})",
        "inf",
        0,
        secs,
        evaluate(expit(Xte @ w + b), yte, gte),
    )

    common = dict(
        groups=task["groups"],
        group_priors=task["priors"],
        feature_norm=task["feature_norm"],
        classes=[0, 1],
    )

    def ours(eps, seed, **params):
        clf = MinimaxFairClassifier(
            epsilon=np.inf if eps == "inf" else eps,
            delta=delta,
            random_state=seed,
            **common,
            **params,
        )
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            clf.fit(Xtr, ytr, sensitive_features=gtr)
        secs = time.time() - t0
        if eps != "inf":
            assert clf.privacy_spent_[0] <= eps
        return clf, secs

    # epsilon = inf: the same code paths without noise.
    for solver in ("gda", "nispp", "nseg"):
        clf, secs = ours("inf", 0, solver=solver)
        extra = {}
        if solver == "gda":
            extra["gap"] = certified_gap(clf, task)
        add(
            f"MinimaxFairClassifier ({solver})",
            "inf",
            0,
            secs,
            evaluate(clf.predict_proba(Xte)[:, 1], yte, gte),
            **extra,
        )
    coef, icpt, _ = dp_logistic_regression(
        Xtr,
        ytr,
        np.inf,
        delta,
        feature_norm=task["feature_norm"],
        radius=REF_RADIUS,
        steps=100,
        rng=np.random.default_rng(0),
    )
    add(
        "DP-GD, groups ignored",
        "inf",
        0,
        0.0,
        evaluate(expit(Xte @ coef + icpt), yte, gte),
    )

    for eps in epsilons:
        n_seeds = seeds if eps == 1.0 else max(2, seeds // 2)
        for seed in range(n_seeds):
            clf, secs = ours(eps, 1000 + seed)
            add(
                "MinimaxFairClassifier (gda)",
                eps,
                seed,
                secs,
                evaluate(clf.predict_proba(Xte)[:, 1], yte, gte),
            )
            ht = HeavyTailedLogisticRegression(
                epsilon=eps,
                delta=delta,
                classes=[0, 1],
                feature_norm=task["feature_norm"],
                random_state=3000 + seed,
            )
            t0 = time.time()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)
                ht.fit(Xtr, ytr)
            add(
                "HeavyTailedLogisticRegression (groups ignored)",
                eps,
                seed,
                time.time() - t0,
                evaluate(ht.predict_proba(Xte)[:, 1], yte, gte),
            )
            t0 = time.time()
            coef, icpt, spent = dp_logistic_regression(
                Xtr,
                ytr,
                eps,
                delta,
                feature_norm=task["feature_norm"],
                radius=REF_RADIUS,
                steps=100,
                rng=np.random.default_rng(2000 + seed),
            )
            assert spent <= eps * (1 + 1e-9)
            add(
                "DP-GD, groups ignored",
                eps,
                seed,
                time.time() - t0,
                evaluate(expit(Xte @ coef + icpt), yte, gte),
            )
            if eps == 1.0 and seed < max(2, seeds // 3):
                for solver in ("nispp", "nseg"):
                    clf, secs = ours(eps, 1000 + seed, solver=solver)
                    add(
                        f"MinimaxFairClassifier ({solver})",
                        eps,
                        seed,
                        secs,
                        evaluate(clf.predict_proba(Xte)[:, 1], yte, gte),
                    )
    return {
        "task": name,
        "n": n,
        "d": Xtr.shape[1],
        "delta": delta,
        "groups": [str(g) for g in task["groups"]],
        "seeds": seeds,
        "rows": rows,
    }


def rerun_inf_rows(name, log):
    """Refit only the epsilon = inf MinimaxFairClassifier rows of a task.

    The other rows of ``minimax_fair_<task>.json`` (baselines, the time unit,
    every finite epsilon) are kept as they are: a change of the noiseless end
    of the schedule moves only these fits (finite-epsilon fits at z >= 1 are
    bit-identical).
    """
    path = os.path.join(RESULTS, f"minimax_fair_{name}.json")
    with open(path) as fh:
        res = json.load(fh)
    task = load_task(name)
    n = task["Xtr"].shape[0]
    delta = min(1e-6, 1.0 / n**2)
    rows = []
    for solver in ("gda", "nispp", "nseg"):
        clf = MinimaxFairClassifier(
            epsilon=np.inf,
            delta=delta,
            random_state=0,
            groups=task["groups"],
            group_priors=task["priors"],
            feature_norm=task["feature_norm"],
            classes=[0, 1],
            solver=solver,
        )
        t0 = time.time()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            clf.fit(task["Xtr"], task["ytr"], sensitive_features=task["gtr"])
        row = dict(
            method=f"MinimaxFairClassifier ({solver})",
            epsilon="inf",
            seed=0,
            seconds=time.time() - t0,
            **evaluate(clf.predict_proba(task["Xte"])[:, 1], task["yte"], task["gte"]),
        )
        if solver == "gda":
            row["gap"] = certified_gap(clf, task)
        log(f"[{name}] {row}")
        rows.append(row)
    new = {r["method"]: r for r in rows}
    res["rows"] = [
        new.pop(r["method"]) if r["epsilon"] == "inf" and r["method"] in new else r
        for r in res["rows"]
    ]
    with open(path, "w") as fh:
        json.dump(res, fh, indent=1)


# --- ablation: where the accuracy goes ----------------------------------------------------------
ABLATIONS = [
    ("nispp (old default)", dict(solver="nispp")),
    ("nseg", dict(solver="nseg")),
    ("nispp, radius=20", dict(solver="nispp", radius=20.0)),
    ("nispp, min_group_prior=0.2", dict(solver="nispp", min_group_prior=0.2)),
    ("gda, dual_step=0 (private ERM only)", dict(solver="gda", dual_step=0.0)),
    ("gda (default)", dict(solver="gda")),
    ("gda, dual_step=1", dict(solver="gda", dual_step=1.0)),
    ("gda, max_iter=200", dict(solver="gda", max_iter=200)),
    ("gda, radius=20", dict(solver="gda", radius=20.0)),
]


def run_ablation(seeds, log):
    task = load_task("adult-sexrace")
    Xtr, ytr, gtr, Xte, yte, gte = (
        task[k] for k in ("Xtr", "ytr", "gtr", "Xte", "yte", "gte")
    )
    delta = min(1e-6, 1.0 / Xtr.shape[0] ** 2)
    rows = []
    for label, params in ABLATIONS:
        for eps in ("inf", 5.0, 1.0):
            for seed in range(1 if eps == "inf" else seeds):
                clf = MinimaxFairClassifier(
                    epsilon=np.inf if eps == "inf" else eps,
                    delta=delta,
                    groups=task["groups"],
                    feature_norm=task["feature_norm"],
                    classes=[0, 1],
                    random_state=1000 + seed,
                    **params,
                )
                t0 = time.time()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", UserWarning)
                    clf.fit(Xtr, ytr, sensitive_features=gtr)
                row = dict(
                    method=label,
                    epsilon=eps,
                    seed=seed,
                    seconds=time.time() - t0,
                    **evaluate(clf.predict_proba(Xte)[:, 1], yte, gte),
                )
                rows.append(row)
                log(
                    f"[ablation] {label} eps={eps} seed={seed} wgl={row['wg_logloss']:.4f}"
                )
    return {"task": "ablation", "seeds": seeds, "rows": rows}


# --- report ----------------------------------------------------------------------------------
def _select(rows, method, eps):
    return [r for r in rows if r["method"] == method and r["epsilon"] == eps]


def _med(rows, key):
    return float(np.median([r[key] for r in rows])) if rows else float("nan")


def _paired_ratio(a, b, key="wg_logloss"):
    by_seed = {r["seed"]: r[key] for r in b}
    ratios = [r[key] / by_seed[r["seed"]] for r in a if r["seed"] in by_seed]
    return float(np.median(ratios)) if ratios else float("nan"), len(ratios)


def task_section(res):
    rows = res["rows"]
    methods = []
    for r in rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    eps_order = ["inf"] + list(EPSILONS)
    out = [
        f"### {res['task']} (n_train = {res['n']}, d = {res['d']}, "
        f"delta = {res['delta']:.3g})",
        "",
        "| method | epsilon | seeds | worst-group log-loss | worst-group accuracy "
        "| accuracy | fit time (s) |",
        "|---|---|---|---|---|---|---|",
    ]
    for eps in eps_order:
        for m in methods:
            sel = _select(rows, m, eps)
            if not sel:
                continue
            cells = []
            for key in ("wg_logloss", "wg_accuracy", "accuracy"):
                vals = np.array([r[key] for r in sel])
                cells.append(
                    f"{np.median(vals):.4f}"
                    + (
                        f" [{vals.min():.4f}, {vals.max():.4f}]"
                        if vals.size > 1
                        else ""
                    )
                )
            extra = f" (gap {sel[0]['gap']:.1e})" if "gap" in sel[0] else ""
            out.append(
                f"| {m}{extra} | {eps} | {len(sel)} | "
                + " | ".join(cells)
                + f" | {_med(sel, 'seconds'):.2f} |"
            )
    out.append("")
    out.append("Medians over seeds, [min, max] in brackets.")
    out.append("")
    return out


def targets_section(results):
    out = [
        "## Targets (medians of paired ratios; worst-group test log-loss)",
        "",
        "| task | epsilon | ours | / HeavyTailedLR (paired) | / DP-GD (paired) "
        "| / non-private DRO | fit time / sklearn LR |",
        "|---|---|---|---|---|---|---|",
    ]
    for res in results:
        rows = res["rows"]
        ref = [r for r in rows if r["method"].startswith("group DRO")][0]
        lr_time = _select(rows, "LogisticRegression (non-private)", "inf")[0]["seconds"]
        for eps in EPSILONS:
            ours = _select(rows, "MinimaxFairClassifier (gda)", eps)
            if not ours:
                continue
            ht, k = _paired_ratio(
                ours,
                _select(rows, "HeavyTailedLogisticRegression (groups ignored)", eps),
            )
            dp, _ = _paired_ratio(ours, _select(rows, "DP-GD, groups ignored", eps))
            dro = float(np.median([r["wg_logloss"] / ref["wg_logloss"] for r in ours]))
            t = _med(ours, "seconds") / lr_time
            out.append(
                f"| {res['task']} | {eps:g} | {_med(ours, 'wg_logloss'):.4f} "
                f"(n={k}) | {ht:.3f} | {dp:.3f} | {dro:.3f} | {t:.2f} |"
            )
        inf = _select(rows, "MinimaxFairClassifier (gda)", "inf")
        if inf and "gap" in inf[0]:
            out.append(
                f"| {res['task']} | inf | {inf[0]['wg_logloss']:.4f} | | | "
                f"{inf[0]['wg_logloss'] / ref['wg_logloss']:.3f} "
                f"(certified gap {inf[0]['gap']:.1e}) | "
                f"{inf[0]['seconds'] / lr_time:.2f} |"
            )
    out.append("")
    return out


def ablation_section(res):
    rows = res["rows"]
    methods = []
    for r in rows:
        if r["method"] not in methods:
            methods.append(r["method"])
    out = [
        "## Where the accuracy goes (Adult, sex x race, worst-group test log-loss)",
        "",
        f"Medians over {res['seeds']} seeds at epsilon = 5 and 1 (one run at inf), "
        "same loader and delta as below, everything else at the defaults.",
        "",
        "| configuration | inf | 5 | 1 | fit time at 1 (s) |",
        "|---|---|---|---|---|",
    ]
    for m in methods:
        cells = [
            f"{_med(_select(rows, m, e), 'wg_logloss'):.4f}" for e in ("inf", 5.0, 1.0)
        ]
        out.append(
            f"| {m} | "
            + " | ".join(cells)
            + f" | {_med(_select(rows, m, 1.0), 'seconds'):.2f} |"
        )
    out.append("")
    return out


def write_report():
    results, ablation = [], None
    for name in TASKS:
        path = os.path.join(RESULTS, f"minimax_fair_{name}.json")
        if os.path.exists(path):
            with open(path) as fh:
                results.append(json.load(fh))
    path = os.path.join(RESULTS, "minimax_fair_ablation.json")
    if os.path.exists(path):
        with open(path) as fh:
            ablation = json.load(fh)
    notes_path = os.path.join(RESULTS, "minimax_fair_notes.md")
    lines = [
        "# MinimaxFairClassifier benchmark",
        "",
        "Generated by `benchmarks/minimax_fair/main.py` (see its docstring for the "
        "loader, the baselines and the commands); run sizes are in each "
        "section. Shared 2-core machine: absolute times are noisy, the ratios "
        "to scikit-learn's LogisticRegression are measured in the same process.",
        "",
    ]
    if os.path.exists(notes_path):
        with open(notes_path) as fh:
            lines += [fh.read(), ""]
    lines += targets_section(results)
    if ablation:
        lines += ablation_section(ablation)
    lines += ["## Results", ""]
    for res in results:
        lines += task_section(res)
    with open(os.path.join(RESULTS, "minimax_fair.md"), "w") as fh:
        fh.write("\n".join(lines))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--task", choices=TASKS)
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--epsilons", type=float, nargs="*", default=list(EPSILONS))
    parser.add_argument("--ablation", action="store_true")
    parser.add_argument("--report", action="store_true")
    parser.add_argument(
        "--inf-only",
        action="store_true",
        help="with --task: refit only the epsilon = inf MinimaxFairClassifier "
        "rows into the task's existing JSON (other rows kept)",
    )
    parser.add_argument(
        "--quick", action="store_true", help="smoke run, nothing written"
    )
    args = parser.parse_args()
    os.makedirs(RESULTS, exist_ok=True)
    start = time.time()

    def log(msg):
        print(f"{time.time() - start:7.1f}s {msg}", flush=True)

    if args.ablation:
        res = run_ablation(args.seeds, log)
        res["seconds"] = time.time() - start
        with open(os.path.join(RESULTS, "minimax_fair_ablation.json"), "w") as fh:
            json.dump(res, fh, indent=1)
    elif args.task and args.inf_only:
        rerun_inf_rows(args.task, log)
    elif args.task:
        res = run_task(args.task, args.seeds, tuple(args.epsilons), args.quick, log)
        res["seconds"] = time.time() - start
        if args.quick:
            return
        with open(os.path.join(RESULTS, f"minimax_fair_{args.task}.json"), "w") as fh:
            json.dump(res, fh, indent=1)
    write_report()
    log("done")


if __name__ == "__main__":
    main()
