"""Probe: step count, step size and tail averaging of the multinomial ``"gda"`` fit.

Issue 17's two open cells at ``epsilon = 1`` (digits, synthetic K = 5 at
n = 1e4) on the protocol of ``benchmarks/minimax_fair/multiclass_real.py``
(same splits, seeds, scaling; one group, ``classes=range(K)``, defaults
otherwise). Each variant changes one public rule of the plan:

- ``default``: the current defaults (100 steps, primal averaging from
  :func:`~skdp.solvers.saddle_point.plan.multinomial_average_from`);
- ``previous``: the defaults before that rule (averaging of the second half,
  ``avg=0.5``);
- ``steps=T``: ``max_iter = T`` (the noise is recalibrated to ``T`` steps);
- ``ht_steps``: ``max_iter`` from the heavy-tailed softmax rule
  ``auto_multinomial_steps(n, p K, mu)`` (30 steps below a squared
  signal-to-noise ratio ``(n mu)**2 / (p K)`` of 1e4, else 300 or 100);
- ``avg=f``: primal averaging from the fraction ``f`` of the run;
- ``navg=A``: the averaging rule with its no-momentum end ``A`` at every
  number of coefficients (the default rule: 0.5 up to ``p K = 120``, 0.7 from
  240 on, :func:`~skdp.solvers.saddle_point.plan.multinomial_noisy_average_from`):
  ``A`` where momentum is off, moving to 0.3 with momentum and to 0.5
  without noise, as :func:`~skdp.solvers.saddle_point.plan.multinomial_average_from`;
- ``step=s``: ``step_scale = s``;
- ``share=s``: ``estimation_share = s`` (the feature-norm bound's share,
  with :func:`~skdp.solvers.saddle_point.plan.multinomial_bound_share`
  switched off so that ``s`` is the bound's share as before that rule);
- ``level=q``: the feature-norm bound's quantile level forced to ``q``
  (instead of :func:`~skdp.privacy._norm_bound.quantile_level`);
- ``clip=c``: the noisy multinomial clip factor ``c`` row bounds, without
  :func:`~skdp.solvers.saddle_point.plan.multinomial_clip_scale`;
- ``clipoff``: ``clip=0.7``, the defaults before that rule;
- ``cliprule=a``: public clip rule (adopted with ``a = 0.3`` as
  :func:`~skdp.solvers.saddle_point.plan.multinomial_clip_scale`), factor
  ``0.7 min(1, (R0 / r)**a)`` with ``r`` the plan's
  :func:`~skdp.solvers.saddle_point.plan.multinomial_noise_ratio` (after the
  variant's share) and ``R0`` = ``--clip-r0``;
- ``fnorm=b``: ``feature_norm = b`` given (no bound released; an oracle
  value is a ceiling on what a smaller bound share can give, not a rule);
- ``radius=R``: ``radius = R`` (default: the plan's rule);
- ``bshare=f``: candidate bound-share rule, ``estimation_share = 0.1 f``
  where the norm quantile stays reachable at that share
  (:func:`~skdp.solvers.saddle_point.plan.norm_quantile_reachable`), else
  the default 0.1 (so no cell switches between a released and the public
  default bound); ``multinomial_bound_share`` is switched off as for
  ``share=``. Adopted with ``f = 0.2`` as that rule, so ``default`` is now
  ``bshare=0.2``; ``share=0.1`` is the default before it.

DP-GD baselines are read from the committed per-run results of
``multiclass_real.py`` (DP-GD is deterministic given its seed), so
differences are paired on the same (split, seed) runs; "best DP-GD" is the
(C, step) best in hindsight on that full run set. Held-out tasks
(``--datasets`` names of ``benchmarks.heavy_tailed.multiclass.HELDOUT``, K > 2)
are compared with the default only.

Usage (PYTHONPATH at the repository root)::

    nice -n 10 python -m benchmarks.minimax_fair.multiclass_steps \\
        --datasets digits,synthetic --eps 1 --variants default,ht_steps,steps=50

Writes ``benchmarks/results/minimax_fair_multiclass_steps_<tag>.md`` with ``--tag``.
"""

import argparse
import contextlib
import json
import math
import time
import warnings

import numpy as np
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS, head_commit
from benchmarks.heavy_tailed.multiclass import (
    HELDOUT,
    heldout_splits,
    real_data,
    synthetic,
    synthetic_k,
)
from skdp import MinimaxFairClassifier
from skdp._testing.internals import heavy_tailed_multinomial_module as multinomial
from skdp._testing.internals import saddle_point_plan_module as plan_module
from skdp.privacy import _norm_bound as norm_bound_module


@contextlib.contextmanager
def primal_average(frac):
    """Primal averaging from ``frac`` of the run at every noise level (``None``:
    the default rule, :func:`multinomial_average_from`)."""
    saved = plan_module.multinomial_average_from
    if frac is not None:
        plan_module.multinomial_average_from = lambda r, u=0.0, n_coefficients=None: (
            float(frac)
        )
    try:
        yield
    finally:
        plan_module.multinomial_average_from = saved


@contextlib.contextmanager
def noisy_average_from(variant):
    """``navg=A``: the averaging rule's no-momentum end
    (``_GDA_MULTINOMIAL_NOISY_AVERAGE_FROM``) set to ``A``; the rule still
    moves it towards 0.3 with momentum and to 0.5 without noise."""
    parts = [p for p in variant.split("+") if p.startswith("navg=")]
    saved = plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM
    if parts:
        a = float(parts[0][5:])
        plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = (a, a)
    try:
        yield
    finally:
        plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = saved


@contextlib.contextmanager
def forced(level, clip):
    """Quantile level of the norm bound and noisy multinomial clip factor
    (``None``: the defaults)."""
    saved_level = norm_bound_module.quantile_level
    saved_clip = plan_module._GDA_MULTINOMIAL["clip_factor"]
    saved_ratio = plan_module._GDA_CLIP_RATIO
    if level is not None:
        norm_bound_module.quantile_level = lambda n, z, tail: float(level)
    if clip is not None:
        # a forced factor replaces multinomial_clip_scale too ("clipoff": 0.7)
        plan_module._GDA_MULTINOMIAL["clip_factor"] = float(clip)
        plan_module._GDA_CLIP_RATIO = math.inf
    try:
        yield
    finally:
        norm_bound_module.quantile_level = saved_level
        plan_module._GDA_MULTINOMIAL["clip_factor"] = saved_clip
        plan_module._GDA_CLIP_RATIO = saved_ratio


@contextlib.contextmanager
def literal_share(on):
    """``estimation_share`` taken literally by the bound (``on``): without
    :func:`~skdp.solvers.saddle_point.plan.multinomial_bound_share`, which
    would otherwise give the bound a fifth of a variant's share."""
    saved = plan_module._GDA_MULTINOMIAL_BOUND_SHARE
    if on:
        plan_module._GDA_MULTINOMIAL_BOUND_SHARE = 1.0
    try:
        yield
    finally:
        plan_module._GDA_MULTINOMIAL_BOUND_SHARE = saved


def sets_share(variant):
    """Whether a variant sets ``estimation_share`` itself."""
    return any(p.startswith(("share=", "bshare=")) for p in variant.split("+"))


CLIP_R0 = 0.4  # --clip-r0


def bound_share(f, n, d, K, eps):
    """``0.1 f`` if the norm quantile is reachable there, else 0.1 (public)."""
    mu = plan_module.Budget.from_target(eps, n**-1.1, margin=False).mu
    reachable = plan_module.norm_quantile_reachable
    if reachable(n, mu * math.sqrt(0.1 * f)) or not reachable(n, mu * math.sqrt(0.1)):
        return 0.1 * f
    return 0.1


def forced_parts(variant, n, d, K, eps):
    """Forced quantile level and noisy clip factor of a variant (``None``: default)."""
    level = clip = None
    share = 0.1
    for part in variant.split("+"):
        if part.startswith("share="):
            share = float(part[6:])
        elif part.startswith("bshare="):
            share = bound_share(float(part[7:]), n, d, K, eps)
    for part in variant.split("+"):
        if part.startswith("level="):
            level = float(part[6:])
        elif part.startswith("clip="):
            clip = float(part[5:])
        elif part == "clipoff":
            clip = 0.7
        elif part.startswith("cliprule="):
            with literal_share(sets_share(variant)):
                plan = plan_module.plan_minimax(
                    eps, n**-1.1, n, d, 1, K, estimation_share=share
                )
            r = plan_module.multinomial_noise_ratio(plan.noise_multiplier, n, d + 1, K)
            clip = 0.7 * min(1.0, (CLIP_R0 / r) ** float(part[9:]))
    return level, clip


def variant_kwargs(variant, n, d, K, eps):
    """Estimator arguments and averaging fraction of a variant (public only)."""
    kw, avg = {}, None
    for part in variant.split("+"):
        if part == "default":
            continue
        if part == "previous":
            avg = 0.5
        elif part == "ht_steps":
            mu = plan_module.Budget.from_target(eps, n**-1.1, margin=False).mu
            kw["max_iter"] = multinomial.auto_multinomial_steps(n, (d + 1) * K, mu)
        elif part.startswith("steps="):
            kw["max_iter"] = int(part[6:])
        elif part.startswith("avg="):
            avg = float(part[4:])
        elif part.startswith("navg="):
            continue  # the rule's no-momentum end, set in fit()
        elif part.startswith("step="):
            kw["step_scale"] = float(part[5:])
        elif part.startswith("share="):
            kw["estimation_share"] = float(part[6:])
        elif part.startswith("fnorm="):
            kw["feature_norm"] = float(part[6:])
        elif part.startswith("radius="):
            kw["radius"] = float(part[7:])
        elif part.startswith("bshare="):
            kw["estimation_share"] = bound_share(float(part[7:]), n, d, K, eps)
        elif part.startswith(("level=", "clip=", "cliprule=")) or part == "clipoff":
            continue
        else:
            raise ValueError(part)
    return kw, avg


def fit(Xtr, ytr, Xte, yte, K, eps, seed, variant):
    kw, avg = variant_kwargs(variant, Xtr.shape[0], Xtr.shape[1], K, eps)
    n, d = Xtr.shape
    level_clip = forced_parts(variant, n, d, K, eps)
    with (
        warnings.catch_warnings(),
        primal_average(avg),
        forced(*level_clip),
        literal_share(sets_share(variant)),
        noisy_average_from(variant),
    ):
        warnings.simplefilter("ignore")
        clf = MinimaxFairClassifier(
            epsilon=eps, classes=range(K), random_state=seed, **kw
        )
        clf.fit(Xtr, ytr)
    assert clf.privacy_spent_[0] <= eps
    BOUNDS.append(clf.feature_norm_)
    return float(clf.score(Xte, yte))


SYN_N = 10_000  # --syn-n
BASELINE_SUFFIX = ""  # --baselines: which multiclass_real.py run to pair with
BOUNDS = []  # released feature-norm bounds of the current variant


def load_baseline(name):
    if name == "synthetic" and SYN_N != 10_000:
        return None
    if name == "synthetic":
        path = RESULTS / "minimax_fair_multiclass_synthetic_n10000.json"
        return json.load(open(path))["runs"]["synthetic n=10000"]
    if name in ("iris", "wine", "digits"):
        path = RESULTS / f"minimax_fair_multiclass_real{BASELINE_SUFFIX}.json"
        return json.load(open(path))["runs"][name]
    return None


def task_data(name, splits, syn_reps):
    if name == "synthetic":
        Xte, yte = synthetic(50_000, np.random.default_rng(99))
        return 5, [
            (*synthetic(SYN_N, np.random.default_rng(1000 + r)), Xte, yte)
            for r in range(syn_reps)
        ]
    if name in ("iris", "wine", "digits"):
        X, y = real_data(name)
        out = []
        for rep in range(splits):
            Xtr, Xte, ytr, yte = train_test_split(
                X, y, stratify=y, test_size=0.25, random_state=rep
            )
            out.append((Xtr, ytr, Xte, yte))
        return int(y.max()) + 1, out
    if name.startswith("synthetic K=") and name not in HELDOUT:
        # other sizes of the held-out synthetic_k tasks: "synthetic K=7 d=15 n=600"
        K, d, n = (int(t.split("=")[1]) for t in name.split()[1:])
        Xte, yte = synthetic_k(K, d, 20_000, np.random.default_rng(9))
        return K, [
            (*synthetic_k(K, d, n, np.random.default_rng(500 + r)), Xte, yte)
            for r in range(splits)
        ]
    out = []
    for rep in range(splits):
        Xtr, Xte, ytr, yte = heldout_splits(name, rep)
        out.append((Xtr, ytr, Xte, yte))
    return int(max(o[1].max() for o in out)) + 1, out


def sem(v):
    return float(np.std(v, ddof=1) / math.sqrt(len(v)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--datasets", default="digits,synthetic")
    parser.add_argument("--splits", type=int, default=20)
    parser.add_argument("--seeds-per-split", type=int, default=2)
    parser.add_argument("--syn-reps", type=int, default=5)
    parser.add_argument("--eps", default="1")
    parser.add_argument("--variants", default="default,ht_steps")
    parser.add_argument("--syn-n", type=int, default=10_000)
    parser.add_argument("--tag", default=None)
    parser.add_argument("--clip-r0", type=float, default=0.4)
    parser.add_argument(
        "--baselines",
        default="",
        help="suffix of the multiclass_real.py run whose DP-GD runs are paired "
        "(its --suffix; its splits and seeds must cover this run's)",
    )
    args = parser.parse_args()
    global SYN_N, CLIP_R0, BASELINE_SUFFIX
    SYN_N = args.syn_n
    BASELINE_SUFFIX = args.baselines
    CLIP_R0 = args.clip_r0
    epsilons = [float(e) for e in args.eps.split(",")]
    variants = args.variants.split(",")
    if variants[0] != "default":
        variants = ["default"] + variants
    per = args.seeds_per_split
    t0 = time.perf_counter()
    lines = []
    for name in args.datasets.split(","):
        base = load_baseline(name)
        K, data = task_data(name, args.splits, args.syn_reps)
        lines += [f"### {name}", ""]
        lines.append(
            "| eps | variant | max_iter | runs | median bound | accuracy | - default | "
            "- best DP-GD (C, step) |"
        )
        lines.append("|---|---|---|---|---|---|---|---|")
        for eps in epsilons:
            key = str(eps)
            best = None
            covered = base is not None and key in base[0]
            covered = covered and len(base) >= len(data) * per
            if covered:
                gd_keys = [k for k in base[0][key] if k.startswith("gd_")]
                gd_mean = {k: np.mean([r[key][k] for r in base]) for k in gd_keys}
                best = max(gd_mean, key=gd_mean.get)
            accs = {}
            for variant in variants:
                acc, gd = [], []
                BOUNDS.clear()
                for rep, (Xtr, ytr, Xte, yte) in enumerate(data):
                    for j in range(per):
                        seed = rep * per + j
                        acc.append(fit(Xtr, ytr, Xte, yte, K, eps, seed, variant))
                        if best is not None:
                            gd.append(base[seed][key][best])
                accs[variant] = a = np.array(acc)
                d0 = a - accs["default"]
                n_tr, d_tr = data[0][0].shape
                kw, _ = variant_kwargs(variant, n_tr, d_tr, K, eps)
                gd_col = "-"
                if best is not None:
                    g = a - np.array(gd)
                    gd_col = f"{g.mean():+.4f} ± {sem(g):.4f} ({best[3:]})"
                lines.append(
                    f"| {eps:g} | {variant} | {kw.get('max_iter', 100)} | {len(a)} | "
                    f"{np.median(BOUNDS):.3f} | "
                    f"{a.mean():.4f} | {d0.mean():+.4f} ± {sem(d0):.4f} | {gd_col} |"
                )
                print(name, lines[-1], round(time.perf_counter() - t0), "s", flush=True)
        lines.append("")
    minutes = (time.perf_counter() - t0) / 60
    head = [
        "# MinimaxFairClassifier multiclass: steps, step size, tail averaging",
        "",
        "`nice -n 10 python -m benchmarks.minimax_fair.multiclass_steps "
        f"--datasets {args.datasets} --clip-r0 {args.clip_r0:g} --splits {args.splits} --syn-reps "
        f"{args.syn_reps} --syn-n {args.syn_n} --seeds-per-split {per} --eps "
        f"{args.eps} --variants "
        f"{args.variants}"
        + (f" --baselines {args.baselines}" if args.baselines else "")
        + f"` (commit {head_commit()}; {minutes:.1f} min, shared 2-core "
        "machine). "
        "'±': standard error of paired differences (same split, seed).",
        "",
    ]
    out = "\n".join(head + lines)
    print(out)
    if args.tag:
        (RESULTS / f"minimax_fair_multiclass_steps_{args.tag}.md").write_text(
            out + "\n"
        )


if __name__ == "__main__":
    main()
