"""Step count, step size, clip and averaging of the small-n multinomial fit (issue 17).

Paired refits of the default multinomial ``HeavyTailedLogisticRegression``
with one or more rules changed (monkeypatched, diagnostic only), against
the default and the hindsight-best of 9 fixed-clip multinomial DP-GD
settings on the same splits and seeds:

- ``steps=N``: ``max_iter=N`` (exact GDP accounting for any ``N``);
- ``step xF``: the default step times ``F``;
- ``clip xF``: the fixed (no-search) clip level times ``F``;
- ``avg=F``: average the iterates from ``F`` of the steps on (default 0.5);
- ``eta=E``: ``max_iter="auto"`` takes ``T = E n mu / (2 d)`` steps (``d``
  with the intercept; at least ``lo=`` (10), at most ``hi=`` (300)): the
  accumulated noise of a class score over the run at the default step and
  fixed clip;
- ``thr=R``: ``max_iter="auto"`` takes 300 steps where ``n mu / (2 d) >= R``
  (and ``n d K 300 <= AUTO_WORK``), else the default rule; ``thr=R pmax``:
  only where the 30-step plan also clips the largest fraction (0.7);
- ``cap=E``: ``NOISE_CAP_SCORE = E`` (the no-search clip capped so the
  run's noise moves a class score by at most ``E`` standard deviations;
  ``inf``: off);
- ``score=S``: ``max_iter="auto"`` takes the most steps (30 to 300) whose
  no-search plan keeps the uncapped fixed clip's class-score noise (the
  quantity ``noise_capped_clip`` caps) at most ``S`` (:func:`score_steps`);
- ``zmax=Z``: ``max_iter="auto"`` takes the most steps (at least the default
  rule's, at most 300) whose per-step noise multiplier ``z_grad`` stays at
  most ``Z`` (:func:`z_steps`: ``T`` about ``30 (Z / z_30)**2``);
- ``fstep xF``: the default step times ``F`` only in the no-search run;
- ``pfix``: the clip rule (planned clipped fraction, the no-search switch)
  reads the noise of a 30-step plan, ``z_grad sqrt(30 / steps)``, instead of
  the per-step noise of the plan actually run.

Usage: ``python -m benchmarks.heavy_tailed.multiclass_travel [--splits 20]
[--seeds 2] [--eps 1,5] [--tasks iris,wine] [--variants 'a;b'] [--tag T]``
(variants separated by ``;``). Writes
``benchmarks/results/multiclass_travel{T}.md`` and ``..._raw.json``.
"""

import argparse
import contextlib
import json
import math
import re
import time

import numpy as np
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS, head_commit
from benchmarks.heavy_tailed.multiclass import (
    CLIPS,
    LRS,
    acc_of,
    dp_gd_multinomial,
    real_data,
    synthetic_k,
)
from benchmarks.heavy_tailed.multiclass_gap import fit_acc
from benchmarks.heavy_tailed.multiclass_gap import splits as gap_splits
from skdp._testing.internals import DEFAULT_TARGET
from skdp._testing.internals import heavy_tailed_estimator_module as htm
from skdp._testing.internals import heavy_tailed_gd_module as gdm
from skdp._testing.internals import heavy_tailed_multinomial_module as mn


def splits(name, rep):
    """Split ``rep`` of a task: those of ``multiclass_gap.py`` and small
    held-out ones (no constant was chosen on them): ``digits n=N`` (N training
    rows, the rest for test), ``small K=k d=p n=N`` (Student-t(3) features,
    noisy softmax labels as the held-out synthetic tasks of
    ``multiclass.py``, 20,000 test rows)."""
    m = re.fullmatch(r"digits n=(\d+)", name)
    if m and name != "digits n=500":
        X, y = real_data("digits")
        return train_test_split(
            X, y, stratify=y, train_size=int(m.group(1)), random_state=200 + rep
        )
    m = re.fullmatch(r"small K=(\d+) d=(\d+) n=(\d+)", name)
    if m:
        K, d, n = (int(g) for g in m.groups())
        Xtr, ytr = synthetic_k(K, d, n, np.random.default_rng(700 + rep))
        Xte, yte = synthetic_k(K, d, 20_000, np.random.default_rng(9))
        return Xtr, Xte, ytr, yte
    return gap_splits(name, rep)


@contextlib.contextmanager
def clip_rule_at(steps):
    """The clip rule fed the noise of a 30-step plan (``pfix``)."""
    if steps is None:
        yield
        return
    f = math.sqrt(30.0 / steps)
    tail, factor = gdm.tail_fraction, gdm._NO_SEARCH_FACTOR
    gdm.tail_fraction = lambda z, n, d, target=None: tail(z * f, n, d, target)
    gdm._NO_SEARCH_FACTOR = factor / f
    try:
        yield
    finally:
        gdm.tail_fraction, gdm._NO_SEARCH_FACTOR = tail, factor


@contextlib.contextmanager
def eta_rule(eta, K, lo, hi, thr=None, pmax=False, score=None, zmax=None):
    """``max_iter="auto"`` replaced by the ``eta`` step-count rule."""
    if eta is None and thr is None and score is None and zmax is None:
        yield
        return
    from skdp.linear_model import _heavy_tailed as ht

    old = ht.auto_multinomial_steps

    def rule(n, dim, mu):
        if math.isinf(mu):
            return old(n, dim, mu)
        d = dim / K
        if score is not None:
            return score_steps(n, dim, K, mu, score, hi) or old(n, dim, mu)
        if zmax is not None:
            return max(old(n, dim, mu), z_steps(n, dim, mu, zmax, hi))
        if thr is not None:  # 300 steps from n mu / (2 d) >= thr on
            long = n * mu / (2.0 * d) >= thr and n * dim * 300 <= mn.AUTO_WORK
            if long and pmax:  # ... only where the 30-step plan clips the most
                plan = htm.make_known_lipschitz_plan(
                    mu, n, dim, 30, n_scales=1, feature_scale=True,
                    search_at_cap=False,
                )  # fmt: skip
                long = plan.gd.clip_fraction >= DEFAULT_TARGET.max_fraction
            return 300 if long else old(n, dim, mu)
        return int(min(hi, max(lo, round(eta * n * mu / (2.0 * d)))))

    ht.auto_multinomial_steps = rule
    try:
        yield
    finally:
        ht.auto_multinomial_steps = old


SCORE_GRID = (30, 40, 50, 60, 80, 100, 130, 160, 200, 250, 300)


def fixed_clip_score(plan, n, d):
    """Accumulated class-score noise of the no-search run at its fixed clip.

    The uncapped fixed level ``NO_SEARCH_OCTAVES`` below the ceiling with the
    public default scales (``s = 1``, truncation ``8 sqrt(d - 1)``, intercept
    column 1), the default step, the plan's ``z`` and ``T``: the quantity
    ``noise_capped_clip`` caps at ``NOISE_CAP_SCORE``. Public: ``n``, ``d``,
    the plan.
    """
    trunc = mn.default_scales(d - 1, mn.LogisticLoss())[0] * mn.UNRELIABLE_SLACK
    clip = math.sqrt(2.0) * math.hypot(trunc, 1.0) / 2.0**mn.NO_SEARCH_OCTAVES
    step = mn.multinomial_step_size(0.0)
    z, T = plan.gd.z_grad, plan.gd.n_steps
    return 2.0 * step * clip * z * math.sqrt(T * d) / n


def score_steps(n, dim, K, mu, score, hi=300):
    """``score=S``: the most steps (grid up to ``hi``) whose no-search plan
    keeps :func:`fixed_clip_score` (at the public default scales, also where
    the plan releases them) at most ``S``; ``None`` (default rule) where no
    count qualifies."""
    d = dim // K
    best = None
    for T in SCORE_GRID:
        if T > hi or n * dim * T > mn.AUTO_WORK:
            break
        plan = htm.make_known_lipschitz_plan(
            mu, n, dim, T, n_scales=1, feature_scale=True, search_at_cap=False
        )
        if plan.gd.checkpoints:  # searched clip: more steps may leave it
            continue
        if fixed_clip_score(plan, n, d) > score:
            break
        best = T
    return best


def z_steps(n, dim, mu, zmax, hi=300):
    """``zmax=Z``: the most steps (grid up to ``hi``, work within
    ``AUTO_WORK``) whose plan's per-step noise multiplier ``z_grad`` stays at
    most ``Z`` (30 if none): ``T`` grows like ``(Z / z_30)**2``, the per-step
    signal-to-noise of the released gradient held fixed. Public: ``n``,
    ``d K``, the budget."""
    best = 30
    for T in SCORE_GRID:
        if T > hi or n * dim * T > mn.AUTO_WORK:
            break
        plan = htm.make_known_lipschitz_plan(
            mu, n, dim, T, n_scales=1, feature_scale=True, search_at_cap=False
        )
        if plan.gd.z_grad > zmax:
            break
        best = T
    return best


@contextlib.contextmanager
def fixed_step(factor):
    """``fstep xF``: the default step times ``F`` only in the no-search run
    (fixed clip level, no checkpoint in the plan)."""
    if factor is None:
        yield
        return
    from skdp.linear_model import _heavy_tailed as ht

    old = ht.multiclass_step

    def rule(plan, step_size=None, *, shared_ovr=False, public_clip=False):
        step = old(plan, step_size, shared_ovr=shared_ovr, public_clip=public_clip)
        fixed = not (shared_ovr or public_clip or plan.gd.checkpoints)
        return step * factor if fixed and step_size is None else step

    ht.multiclass_step = rule
    try:
        yield
    finally:
        ht.multiclass_step = old


@contextlib.contextmanager
def averaging(avg_from, cap=None):
    """Patch the averaging start and the no-search clip cap."""
    old = mn.AVERAGE_FROM, mn.NOISE_CAP_SCORE
    mn.AVERAGE_FROM = avg_from
    if cap is not None:
        mn.NOISE_CAP_SCORE = cap
    try:
        yield
    finally:
        mn.AVERAGE_FROM, mn.NOISE_CAP_SCORE = old


def parse(name):
    kw, avg = {}, 0.5
    eta = {"lo": 10, "hi": 300}
    for m in re.finditer(r"(eta|lo|hi|cap|thr|score|zmax)=([0-9.]+|inf)", name):
        eta[m.group(1)] = float(m.group(2))
    for m in re.finditer(r"fstep x([0-9.]+)", name):
        eta["fstep"] = float(m.group(1))
    for m in re.finditer(
        r"\b(steps|avg)=([0-9.]+|auto)|\b(step|clip) x([0-9.]+)", name
    ):
        if m.group(1) == "steps":
            kw["steps"] = "auto" if m.group(2) == "auto" else int(m.group(2))
        elif m.group(1) == "avg":
            avg = float(m.group(2))
        elif m.group(3) == "step":
            kw["step_mult"] = float(m.group(4))
        else:
            kw["clip_factor"] = float(m.group(4))
    kw.setdefault("steps", "auto")
    pfix = kw["steps"] if "pfix" in name and kw["steps"] != "auto" else None
    return kw, avg, pfix, eta


def run_cell(name, eps, variants, n_splits, n_seeds):
    runs = []
    for rep in range(n_splits):
        Xtr, Xte, ytr, yte = splits(name, rep)
        K = int(max(ytr.max(), yte.max())) + 1
        delta = len(Xtr) ** -1.1
        for j in range(n_seeds):
            seed = rep * n_seeds + j
            row = {}
            for v in variants:
                kw, avg, pfix, eta = parse(v)
                rule = eta_rule(
                    eta.get("eta"), K, eta["lo"], eta["hi"], eta.get("thr"),
                    "pmax" in v, eta.get("score"), eta.get("zmax"),
                )  # fmt: skip
                with (
                    averaging(avg, eta.get("cap")),
                    clip_rule_at(pfix),
                    rule,
                    fixed_step(eta.get("fstep")),
                ):
                    row[v] = fit_acc(Xtr, ytr, Xte, yte, K, eps, seed, **kw)[0]
            for C in CLIPS:
                for lr in LRS:
                    W = dp_gd_multinomial(
                        Xtr, ytr, K, C, lr, eps, delta, np.random.default_rng(seed)
                    )
                    row[f"gd_C{C}_lr{lr}"] = acc_of(W, Xte, yte)
            runs.append(row)
    return runs


def summarize(runs, variants):
    keys = runs[0].keys()
    mean = {k: float(np.mean([r[k] for r in runs])) for k in keys}
    gd = {k: v for k, v in mean.items() if k.startswith("gd_")}
    best = max(gd, key=gd.get)

    def diff(a, b):
        x = np.array([r[a] - r[b] for r in runs])
        return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))

    out = {"best": best, "best_acc": gd[best], "n_runs": len(runs)}
    for v in variants:
        out[v] = {
            "acc": mean[v],
            "vs_default": diff(v, variants[0]),
            "vs_best": diff(v, best),
        }
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--eps", type=str, default="1,5")
    parser.add_argument("--tasks", type=str, default="iris,wine")
    parser.add_argument("--variants", type=str, default="default;steps=100;steps=300")
    parser.add_argument("--tag", type=str, default="")
    args = parser.parse_args()
    variants = args.variants.split(";")
    t0 = time.perf_counter()
    results, lines = {}, []
    for name in args.tasks.split(","):
        for eps in (float(e) for e in args.eps.split(",")):
            runs = run_cell(name, eps, variants, args.splits, args.seeds)
            s = summarize(runs, variants)
            results[f"{name}|{eps}"] = {"summary": s, "runs": runs}
            lines.append(
                f"| {name} | {eps:g} | {s['n_runs']} | {s['best_acc']:.3f} "
                f"({s['best'][3:]}) | "
                + " | ".join(
                    f"{s[v]['acc']:.3f} ({s[v]['vs_best'][0]:+.3f} ± "
                    f"{s[v]['vs_best'][1]:.3f}; {s[v]['vs_default'][0]:+.3f} ± "
                    f"{s[v]['vs_default'][1]:.3f})"
                    for v in variants
                )
                + " |"
            )
            print(lines[-1], flush=True)
    commit = head_commit()
    head = [
        "# Multinomial step count / step / clip / averaging probe (issue 17)",
        "",
        f"Command: `nice -n 10 python -m benchmarks.heavy_tailed.multiclass_travel "
        f"--splits {args.splits} --seeds {args.seeds} --eps {args.eps} --tasks "
        f"'{args.tasks}' --variants '{args.variants}'"
        + (f" --tag {args.tag}" if args.tag else "")
        + f"` at commit {commit} ({(time.perf_counter() - t0) / 60:.1f} min). "
        "Each cell: mean test accuracy, then (variant - best fixed-clip DP-GD; "
        "variant - first variant), each ± its paired standard error.",
        "",
        "| task | eps | runs | best DP-GD (cfg) | " + " | ".join(variants) + " |",
        "|---|---|---|---|" + "---|" * len(variants),
    ]
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"multiclass_travel{args.tag}.md").write_text(
        "\n".join(head + lines) + "\n"
    )
    (RESULTS / f"multiclass_travel{args.tag}_raw.json").write_text(
        json.dumps(results, indent=1)
    )


if __name__ == "__main__":
    main()
