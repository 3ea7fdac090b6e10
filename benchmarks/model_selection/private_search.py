"""Private hyperparameter search (PrivateSearchCV) against three baselines.

For each estimator and total budget epsilon, on the same data and split:

- **search**: ``PrivateSearchCV`` (private selection, Papernot-Steinke
  accounting) over the grid; the released trial's model is tested;
- **(a) defaults**: the estimator with its default hyperparameters and the
  whole budget, fitted on all training rows;
- **(b) hindsight**: every grid point with the whole budget on all training
  rows, the best test loss taken (an optimistic, non-private oracle);
- **(c) naive**: the budget split evenly over the grid: every grid point is
  fitted on the search's training part, scored on its validation part by the
  same clipped loss plus Gaussian noise, and the noisy minimum released
  (report-noisy-min). The per-point budget is the largest whose composition
  (fits composed on the training part, scores composed on the validation
  part, the two parts in parallel) certifies epsilon with skdp's exact
  accountant.

Estimators and data (test metric):

- ``HeavyTailedLogisticRegression`` on Adult (log-loss on adult.test); grid
  ``feature_norm`` x ``estimation_share`` (public bound and budget share), 12 points;
- ``MinimaxFairClassifier`` on Adult with sensitive feature ``sex``
  (log-loss); grid ``radius``, 10 points, other parameters public
  (``classes``, ``groups``, ``feature_norm=sqrt(13)``, the row-norm bound of
  the public encoding);
- ``BilevelRidge`` on synthetic linear data with t(3) noise (MSE); grid of
  10 fixed penalties (``alpha_min = alpha_max``) with a public
  ``feature_norm``; its default is its own built-in private tuning, so (a)
  is that tuning.

Usage::

    PYTHONPATH=. nice -n 10 python -m benchmarks.model_selection.private_search \
        --estimator heavy_tailed --seeds 3
    ... --estimator minimax --seeds 2
    ... --estimator bilevel --seeds 5
    ... --estimator heavy_tailed --seeds 3 --shapes 1 0 inf   # trial distribution
    ... --summarize    # merge all runs into private_search_summary.md

Each run writes ``benchmarks/results/private_search_<estimator><suffix>.md``
and ``.json``.
"""

import argparse
import json
import math
import time
import warnings

import numpy as np
from sklearn.base import clone
from sklearn.metrics import log_loss, mean_squared_error

import benchmarks._common.fair_data as fair_data
from benchmarks._common import RESULTS, adult_dir
from skdp import BilevelRidge, HeavyTailedLogisticRegression, MinimaxFairClassifier
from skdp._testing.internals import check_generator, noisy_validation_loss, probe_plan
from skdp.model_selection import PrivateSearchCV
from skdp.privacy import (
    ComposedDpEvent,
    GaussianDpEvent,
    ParallelDpEvent,
    certify_epsilon,
    gdp_mu,
)

EPSILONS = (1.0, 2.0, 5.0)
VALIDATION_FRACTION = 0.25


# -- cases ------------------------------------------------------------------------------
def case_heavy_tailed():
    fair_data.SHARED = adult_dir()
    Xtr, ytr, _, Xte, yte, _, _ = fair_data.adult()
    base = HeavyTailedLogisticRegression(classes=[0, 1])
    grid = {
        "feature_norm": [1.0, 2.0, math.sqrt(13.0), None],
        "estimation_share": [0.05, 0.1, 0.3],
    }
    return dict(
        name="HeavyTailedLogisticRegression on Adult",
        base=base,
        grid=grid,
        data=(Xtr, ytr, Xte, yte),
        fit_params={},
        metric="log-loss",
    )


def case_minimax():
    fair_data.SHARED = adult_dir()
    Xtr, ytr, sftr, Xte, yte, _, _ = fair_data.adult()
    base = MinimaxFairClassifier(
        classes=[0, 1], groups=["Female", "Male"], feature_norm=math.sqrt(13.0)
    )
    grid = {"radius": [float(r) for r in np.geomspace(0.5, 50.0, 10).round(3)]}
    return dict(
        name="MinimaxFairClassifier on Adult (groups: sex)",
        base=base,
        grid=grid,
        data=(Xtr, ytr, Xte, yte),
        fit_params={"sensitive_features": sftr[:, 0]},
        metric="log-loss",
    )


def case_bilevel():
    rng = np.random.default_rng(12345)
    n, d = 20_000, 30
    X = rng.normal(size=(2 * n, d))
    beta = rng.normal(size=d) / math.sqrt(d)
    y = X @ beta + 0.7 * rng.standard_t(3, size=2 * n)
    y = y / 1.2  # a public scale: |y| is mostly below 3
    grid = [
        {"alpha_min": [a], "alpha_max": [a]}
        for a in np.geomspace(1.0, 1e5, 10).round(3).tolist()
    ]
    return dict(
        name="BilevelRidge on synthetic data (n=20,000, d=30, t(3) noise)",
        # Public feature bound (rows are N(0, I_d): norms near sqrt(d)).
        base=BilevelRidge(feature_norm=2.0 * math.sqrt(d)),
        grid=grid,
        data=(X[:n], y[:n], X[n:], y[n:]),
        fit_params={},
        metric="MSE",
    )


CASES = {
    "heavy_tailed": case_heavy_tailed,
    "minimax": case_minimax,
    "bilevel": case_bilevel,
}


# -- helpers ----------------------------------------------------------------------------
def _grid_points(grid):
    from sklearn.model_selection import ParameterGrid

    return list(ParameterGrid(grid))


def _test_loss(model, X, y, metric):
    with np.errstate(all="ignore"):
        if metric == "log-loss":
            return float(log_loss(y, model.predict_proba(X), labels=[0, 1]))
        return float(mean_squared_error(y, model.predict(X)))


def _index(a, idx):
    return a[idx] if a is not None else None


def _naive_plan(epsilon, delta, probe, n_points):
    """Per-point budget of the even split, certified by skdp's accountant."""

    def total(e, events):
        z = 1.0 / gdp_mu(e, delta)
        fits = ComposedDpEvent(list(events))
        scores = ComposedDpEvent([GaussianDpEvent(z)] * n_points)
        return certify_epsilon(ParallelDpEvent([fits, scores]), delta)

    first = [probe(c, epsilon / n_points)[0] for c in range(n_points)]
    reps = {}
    for c, ev in enumerate(first):
        reps.setdefault(repr(ev), []).append(c)

    def at(e):
        events = []
        for members in reps.values():
            events.extend([probe(members[0], e)[0]] * len(members))
        return total(e, events)

    lo, hi = epsilon / n_points / 4, epsilon  # total(lo) <= epsilon < total(hi)
    while at(lo) > epsilon:
        lo /= 2
    for _ in range(14):
        mid = math.sqrt(lo * hi)
        lo, hi = (mid, hi) if at(mid) <= epsilon else (lo, mid)
    final = [probe(c, lo)[0] for c in range(n_points)]
    assert total(lo, final) <= epsilon * (1 + 1e-9)
    return lo, 1.0 / gdp_mu(lo, delta)


def run_one(case, epsilon, seed, shapes, mean_trials):
    Xtr, ytr, Xte, yte = case["data"]
    fp = case["fit_params"]
    metric = case["metric"]
    points = _grid_points(case["grid"])
    n = len(ytr)
    delta = n**-1.1
    out = {}
    timings = {}

    # search (one per trial distribution)
    for shape in shapes:
        t = time.perf_counter()
        search = PrivateSearchCV(
            case["base"],
            param_grid=case["grid"],
            epsilon=epsilon,
            delta=delta,
            mean_trials=mean_trials,
            trials_shape=shape,
            validation_fraction=VALIDATION_FRACTION,
            random_state=seed,
        ).fit(Xtr, ytr, **fp)
        assert search.privacy_spent_[0] <= epsilon
        key = f"search (shape={shape:g})"
        out[key] = _test_loss(search.best_estimator_, Xte, yte, metric)
        out[key + " choice"] = search.best_index_
        out[key + " trial epsilon"] = search.trial_epsilon_
        timings[key] = time.perf_counter() - t

    # (a) defaults, whole budget
    t = time.perf_counter()
    model = clone(case["base"]).set_params(
        epsilon=epsilon, delta=delta, random_state=seed
    )
    out["(a) defaults"] = _test_loss(model.fit(Xtr, ytr, **fp), Xte, yte, metric)
    timings["(a) defaults"] = time.perf_counter() - t

    # (b) hindsight: every point with the whole budget on all rows
    t = time.perf_counter()
    losses = []
    for params in points:
        model = clone(case["base"]).set_params(
            **params, epsilon=epsilon, delta=delta, random_state=seed
        )
        losses.append(_test_loss(model.fit(Xtr, ytr, **fp), Xte, yte, metric))
    out["(b) hindsight"] = float(np.min(losses))
    out["(b) hindsight choice"] = int(np.argmin(losses))
    timings["(b) hindsight"] = time.perf_counter() - t

    # (c) naive: even split over the grid, Gaussian report-noisy-min
    t = time.perf_counter()
    rng = check_generator(seed + 10_000)
    n_val = min(max(1, math.ceil(VALIDATION_FRACTION * n)), n - 1)
    perm = rng.permutation(n)
    val, tr = np.sort(perm[:n_val]), np.sort(perm[n_val:])
    fp_tr = {k: v[tr] for k, v in fp.items()}

    def probe(c, e):
        return probe_plan(case["base"], points[c], e, delta, Xtr[tr], ytr[tr], fp_tr)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        e_c, z_c = _naive_plan(epsilon, delta, probe, len(points))
    bound = math.log(10.0) if metric == "log-loss" else 4.0
    best = (np.inf, None)
    for params in points:
        model = clone(case["base"]).set_params(
            **params, epsilon=e_c, delta=delta, random_state=rng.spawn(1)[0]
        )
        model.fit(Xtr[tr], ytr[tr], **fp_tr)
        noisy = noisy_validation_loss(model, Xtr[val], ytr[val], bound, z_c, rng)
        if noisy < best[0]:
            best = (noisy, model)
    out["(c) naive"] = _test_loss(best[1], Xte, yte, metric)
    out["(c) per-point epsilon"] = e_c
    timings["(c) naive"] = time.perf_counter() - t
    return out, timings


def report(case, shapes, rows, args, elapsed, path):
    cols = [f"search (shape={s:g})" for s in shapes] + [
        "(a) defaults",
        "(b) hindsight",
        "(c) naive",
    ]
    main = f"search (shape={shapes[0]:g})"
    lines = [
        f"# Private search: {case['name']}",
        "",
        f"Command: `PYTHONPATH=. nice -n 10 python -m benchmarks.model_selection.private_search "
        f"--estimator {args.estimator} --seeds {args.seeds} --first-seed "
        f"{args.first_seed} --mean-trials "
        f"{args.mean_trials:g} --shapes {' '.join(f'{s:g}' for s in shapes)}`; "
        f"seeds {args.first_seed}..{args.first_seed + args.seeds - 1}; "
        f"wall time {elapsed / 60:.1f} min on a shared "
        "2-core machine.",
        "",
        f"Test {case['metric']} (mean over seeds; lower is better). delta = n^-1.1; "
        f"grid of {len(_grid_points(case['grid']))} points; search: E[K] = "
        f"{args.mean_trials:g} trials, validation fraction {VALIDATION_FRACTION}; "
        "(b) is a non-private oracle.",
        "",
        "| epsilon | " + " | ".join(cols) + " | search / (c) | search / (b) |",
        "|---|" + "---|" * (len(cols) + 2),
    ]
    for eps in EPSILONS:
        rs = [r for r in rows if r["epsilon"] == eps]
        means = {c: float(np.mean([r["out"][c] for r in rs])) for c in cols}
        lines.append(
            f"| {eps:g} | "
            + " | ".join(f"{means[c]:.4f}" for c in cols)
            + f" | {means[main] / means['(c) naive']:.3f}"
            + f" | {means[main] / means['(b) hindsight']:.3f} |"
        )
    lines += ["", "Per seed (search with the first shape):", ""]
    lines.append("| epsilon | seed | search | (c) naive | search < (c) |")
    lines.append("|---|---|---|---|---|")
    for r in rows:
        o = r["out"]
        lines.append(
            f"| {r['epsilon']:g} | {r['seed']} | {o[main]:.4f} | {o['(c) naive']:.4f} "
            f"| {'yes' if o[main] < o['(c) naive'] else 'no'} |"
        )
    lines += [
        "",
        "Per-trial epsilon of the search vs per-point epsilon of the naive split "
        f"(seed {args.first_seed}): "
        + ", ".join(
            f"eps={r['epsilon']:g}: {r['out'][main + ' trial epsilon']:.3f} vs "
            f"{r['out']['(c) per-point epsilon']:.3f}"
            for r in rows
            if r["seed"] == args.first_seed
        ),
        "",
    ]
    path.write_text("\n".join(lines))
    print("\n".join(lines))


def summarize():
    """Merge every ``private_search_<estimator>*.json`` into one summary file."""
    text = "# Private search: summary over all committed runs\n\n"
    text += "\n".join(_summary_table(shape) for shape in (0.0, math.inf))
    (RESULTS / "private_search_summary.md").write_text(text)
    print(text)


def _summary_table(shape):
    key = f"search (shape={shape:g})"
    lines = [
        f"## trials_shape={shape:g}",
        "",
        f"Search with trials_shape={shape:g}, E[K] = 10. Mean test "
        "loss over seeds (log-loss for the classifiers, MSE for BilevelRidge); "
        "`wins` counts the (epsilon, seed) runs where the search beat (c).",
        "",
        "| estimator | epsilon | seeds | search | (a) defaults | (b) hindsight "
        "| (c) naive | search / (c) | search / (b) | wins vs (c) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name in sorted(CASES):
        rows = {}
        for path in sorted(RESULTS.glob(f"private_search_{name}*.json")):
            for r in json.loads(path.read_text()):
                if key in r["out"]:
                    rows[(r["epsilon"], r["seed"])] = r["out"]
        for eps in EPSILONS:
            rs = [o for (e, _), o in sorted(rows.items()) if e == eps]
            if not rs:
                continue
            m = {c: float(np.mean([o[c] for o in rs])) for c in (key, *BASELINES)}
            wins = sum(o[key] < o["(c) naive"] for o in rs)
            lines.append(
                f"| {name} | {eps:g} | {len(rs)} | {m[key]:.4f} | "
                + " | ".join(f"{m[c]:.4f}" for c in BASELINES)
                + f" | {m[key] / m['(c) naive']:.3f} | {m[key] / m['(b) hindsight']:.3f}"
                + f" | {wins}/{len(rs)} |"
            )
    return "\n".join(lines) + "\n"


BASELINES = ("(a) defaults", "(b) hindsight", "(c) naive")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--estimator", choices=sorted(CASES))
    parser.add_argument(
        "--summarize", action="store_true", help="merge the committed runs"
    )
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--mean-trials", type=float, default=10.0)
    parser.add_argument("--shapes", type=float, nargs="+", default=[math.inf])
    parser.add_argument("--quick", action="store_true", help="eps = 1 only, 1 seed")
    parser.add_argument("--suffix", default="")
    args = parser.parse_args()
    if args.summarize:
        return summarize()
    global EPSILONS
    if args.quick:
        EPSILONS, args.seeds = (1.0,), 1
    case = CASES[args.estimator]()
    rows = []
    start = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for eps in EPSILONS:
                out, timings = run_one(case, eps, seed, args.shapes, args.mean_trials)
                rows.append(dict(epsilon=eps, seed=seed, out=out, timings=timings))
                print(eps, seed, {k: round(v, 4) for k, v in out.items()}, flush=True)
    elapsed = time.perf_counter() - start
    RESULTS.mkdir(exist_ok=True)
    stem = f"private_search_{args.estimator}{args.suffix}"
    (RESULTS / f"{stem}.json").write_text(json.dumps(rows, indent=1))
    report(case, args.shapes, rows, args, elapsed, RESULTS / f"{stem}.md")


if __name__ == "__main__":
    main()
