"""Probe: BilevelRidge's plug-in penalty against the best fixed penalty in hindsight (issue 21).

Run ``nice -n 10 python -m benchmarks.bilevel_ridge.penalty_hindsight`` from
the repository root with ``PYTHONPATH=.`` (``--cells`` substrings of the task
names of ``benchmarks/bilevel_ridge/vs_baselines.py``, ``--seeds``,
``--epsilon``, ``--omegas`` the fixed penalties in units of ``s**2``,
``--set NAME=VALUE`` module constants of ``skdp.solvers.bilevel.ridge.gd``
for a variant of the rule, ``--out``).

For each seed, on the task's data with its public bounds and
``delta = min(1e-6, n**-2)``:

- ``gd_risk``: the default ``BilevelRidge(inner_solver="gd",
  tuning="risk_estimate")`` fit (as in ``vs_baselines.py``);
- ``same[omega]``: the same fit (same plan, same random stream, hence the same
  first stage and the same noise draws) with the plug-in rule's penalty
  replaced by the fixed ``omega`` (units of ``s**2``): the hindsight
  comparator that isolates the penalty choice;
- ``full[omega]``: ``vs_baselines.py``'s comparator, the solver's path plan
  with the one penalty ``omega`` for all steps (``hindsight_penalties``).

The best fixed penalty is the ``omega`` of the smallest median over the seeds
(in hindsight). Reported: the ratio of medians ``median(gd_risk) / min_omega
median(fixed[omega])`` and the median of the paired ratios ``gd_risk_i /
fixed[omega*]_i``, each with a 90% bootstrap interval over seeds (2000
resamples; the best ``omega`` is chosen again in each resample). The rule's
inputs per seed: ``r = ||w||**2 / (d v)`` (``w`` the first stage's average,
``v`` the rule's noise estimate per coordinate) and ``actual/v = ||w -
theta||**2 / (d v)`` (``theta`` the true coefficients in the solver's units),
with the parts of ``d v``: the privacy part (the planned stationary one, or
the finite run's with a released curvature), the iterates' AR(1) estimate
(the rule takes the larger) and the statistical part.
"""

import argparse
import time
import warnings

import numpy as np

from benchmarks._common import RESULTS, head_commit
from benchmarks._common.baselines import benchmark_delta
from benchmarks.bilevel_ridge.low_snr_tail import _theta, solver_units
from benchmarks.bilevel_ridge.vs_baselines import (
    gaussian_task,
    hindsight_penalties,
    tasks,
)
from skdp import BilevelRidge
from skdp._testing.internals import ridge_gd_module as M

CELLS = ("low SNR, n=1e+05",)
#: held-out Gaussian tasks (``--extra``), not in vs_baselines.py's grid:
#: name -> (n, SNR, d)
EXTRA = {
    "SNR 0.01, n=1e+05": (100_000, 0.01, 20),
    "low SNR, n=1e+05, d=50": (100_000, 1e-3, 50),
    "low SNR, n=3e+05": (300_000, 1e-3, 20),
}
OMEGAS = (0.0, 0.03, 0.1, 0.2, 0.3, 0.5)


def _recording(log, fixed):
    """A factory for ``M.plugin_penalty`` that logs the rule's inputs.

    ``fixed`` is a one-item list: ``None`` runs the rule, a float replaces its
    output.
    """
    orig = M.plugin_penalty

    def factory(*a, **k):
        f = orig(*a, **k)
        z, n, m, fit_intercept, p = a[:5]

        def rule(coefs, clips, s, windows=None, curvature=None):
            out = f(coefs, clips, s, windows, curvature)
            w = np.asarray(coefs[-1], dtype=float)
            w = w[:-1] if fit_intercept else w
            d = w.size
            clips = np.asarray(clips, dtype=float)
            window = clips[-int(m) :]
            h = s * s * (1.0 - p) if curvature is None else float(curvature)
            finite = curvature is not None or k.get("planned_finite_run", False)
            if finite and k.get("step_size") is not None:
                eta = k["step_size"] / (s * s)
                sig = 2.0 * clips * z / n
                v_priv = M.averaged_iterate_noise(sig, eta * h, eta, int(m))
            else:
                v_priv = float(np.mean((2.0 * window * z / n) ** 2)) / (h * h * m)
            v_it = M.iterate_noise(windows[-1][:, :d]) if windows else 0.0
            D = d + int(fit_intercept)
            v_stat = M.statistical_noise(float(np.median(window)), s, D, p, n)
            log.append(
                dict(
                    w=w.copy(),
                    dv_priv=d * v_priv,
                    dv_it=d * v_it,
                    dv_stat=d * v_stat,
                    dv=d * (max(v_priv, v_it) + v_stat),
                    p=out,
                    h=h / (s * s),
                    released=curvature is not None,
                )
            )
            return out if fixed[0] is None else float(fixed[0])

        return rule

    return orig, factory


def _fit(X, y, bounds, eps, seed, score):
    """Excess risk of the default fit (the rule as patched by the caller)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = BilevelRidge(
            inner_solver="gd",
            tuning="risk_estimate",
            epsilon=eps,
            delta=benchmark_delta(X.shape[0]),
            random_state=seed,
            feature_norm=bounds[0],
            target_bound=bounds[1],
        ).fit(X, y)
    return score((np.asarray(m.coef_), float(m.intercept_)))


def run_cell(name, task, seeds, eps, omegas, full):
    draw, bounds, _ = task
    log, fixed = [], [None]
    orig, factory = _recording(log, fixed)
    M.plugin_penalty = factory
    rows = []
    try:
        for seed in range(seeds):
            X, y, score = draw(seed)
            n, d = X.shape
            theta = _theta(seed, d) * solver_units(
                bounds, n, d, eps, benchmark_delta(n)
            )

            def fit(omega, X=X, y=y, seed=seed, score=score):
                fixed[0] = omega
                return _fit(X, y, bounds, eps, seed, score)

            row = dict(seed=seed, gd_risk=fit(None))
            e = log[-1]
            actual = float((e["w"] - theta) @ (e["w"] - theta))
            row.update(
                {k: e[k] for k in ("dv", "dv_priv", "dv_it", "dv_stat", "p", "h")}
            )
            row.update(
                r=float(e["w"] @ e["w"]) / e["dv"],
                actual=actual,
                signal=float(e["w"] @ theta),
            )
            for om in omegas:
                row[f"same[{om:g}]"] = fit(om)
            fixed[0] = None
            if full:
                M.plugin_penalty = orig
                import benchmarks.bilevel_ridge.vs_baselines as V

                keep = V.HINDSIGHT_PENALTIES
                V.HINDSIGHT_PENALTIES = tuple(omegas)
                try:
                    out = hindsight_penalties(X, y, eps, seed, score)
                finally:
                    V.HINDSIGHT_PENALTIES = keep
                    M.plugin_penalty = factory
                for om in omegas:
                    row[f"full[{om:g}]"] = out[f"gd_fixed[{om:g}]"][0]
            rows.append(row)
            print(name, eps, seed, f"{row['gd_risk']:.4g}", flush=True)
    finally:
        M.plugin_penalty = orig
    return rows


def hindsight_summary(rows, kind, omegas, boot):
    """Ratio of medians and median paired ratio to the best fixed penalty."""
    g = np.array([r["gd_risk"] for r in rows])
    F = np.array([[r[f"{kind}[{om:g}]"] for om in omegas] for r in rows])

    def stats(idx):
        meds = np.median(F[idx], axis=0)
        j = int(np.argmin(meds))
        return np.median(g[idx]) / meds[j], np.median(g[idx] / F[idx, j]), j

    rom, pr, j = stats(np.arange(g.size))
    samples = np.array(
        [stats(boot.integers(0, g.size, g.size))[:2] for _ in range(2000)]
    )
    lo, hi = np.quantile(samples, [0.05, 0.95], axis=0)
    meds = np.median(F, axis=0)
    return dict(
        meds=meds,
        best=omegas[j],
        rom=(rom, lo[0], hi[0]),
        paired=(pr, lo[1], hi[1]),
        gd=float(np.median(g)),
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", nargs="*", default=list(CELLS))
    parser.add_argument(
        "--extra", nargs="*", default=[], choices=list(EXTRA), help="held-out tasks"
    )
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0])
    parser.add_argument("--omegas", type=float, nargs="+", default=list(OMEGAS))
    parser.add_argument("--no-full", action="store_true", help="skip full[omega]")
    parser.add_argument("--per-seed", action="store_true", help="per-seed table")
    parser.add_argument(
        "--set", nargs="*", default=[], help="probe: NAME=VALUE module constants"
    )
    parser.add_argument("--out", default="bilevel_ridge_penalty_hindsight.md")
    args = parser.parse_args()
    for item in args.set:
        key, value = item.split("=")
        try:
            value = None if value == "None" else float(value)
        except ValueError:
            pass  # a string switch, e.g. PLANNED_FINITE_RUN=short
        setattr(M, key, value)
    t0 = time.perf_counter()
    all_tasks = tasks(False)
    for name in args.extra:
        all_tasks[name] = gaussian_task(*EXTRA[name][:2], d=EXTRA[name][2])
    cells = list(args.cells) + list(args.extra)
    boot = np.random.default_rng(0)
    omegas = tuple(args.omegas)
    kinds = ("same",) if args.no_full else ("same", "full")
    summary, per_seed = [], []
    for eps in args.epsilon:
        for cell in cells:
            name = next(t for t in all_tasks if cell in t)
            rows = run_cell(
                name, all_tasks[name], args.seeds, eps, omegas, not args.no_full
            )
            ratio = np.array([r["actual"] / r["dv"] for r in rows])
            for kind in kinds:
                s = hindsight_summary(rows, kind, omegas, boot)
                summary.append(
                    f"| {name} | {eps:g} | {kind} | "
                    + " | ".join(f"{m:.4g}" for m in s["meds"])
                    + f" | {s['gd']:.4g} | {s['best']:g} "
                    f"| {s['rom'][0]:.3f} [{s['rom'][1]:.2f}, {s['rom'][2]:.2f}] "
                    f"| {s['paired'][0]:.3f} [{s['paired'][1]:.2f}, "
                    f"{s['paired'][2]:.2f}] "
                    f"| {np.median(ratio):.2f} | "
                    f"{np.median([r['p'] for r in rows]):.3g} |"
                )
            for r in rows:
                per_seed.append(
                    f"| {name} | {eps:g} | {r['seed']} | {r['r']:.3f} "
                    f"| {r['actual'] / r['dv']:.3f} | {r['dv']:.4g} "
                    f"| {r['dv_priv']:.4g} | {r['dv_it']:.4g} | {r['dv_stat']:.4g} "
                    f"| {r['signal']:.3g} | {r['h']:.3f} | {r['p']:.3g} "
                    f"| {r['gd_risk']:.4g} |"
                )
    minutes = (time.perf_counter() - t0) / 60
    head = [
        "# BilevelRidge: the plug-in penalty against the best fixed penalty in hindsight",
        "",
        "Generated by `nice -n 10 python -m benchmarks.bilevel_ridge.penalty_hindsight "
        f"--cells {' '.join(repr(c) for c in args.cells)}"
        f"{' --extra ' + ' '.join(repr(c) for c in args.extra) if args.extra else ''}"
        f" --seeds {args.seeds} "
        f"--epsilon {' '.join(f'{e:g}' for e in args.epsilon)} "
        f"--omegas {' '.join(f'{o:g}' for o in omegas)}"
        f"{' --no-full' if args.no_full else ''}"
        f"{' --per-seed' if args.per_seed else ''}"
        f"{' --set ' + ' '.join(args.set) if args.set else ''}` at commit "
        f"{head_commit()} in {minutes:.1f} min. See the module docstring: "
        "`same[omega]` is the default fit with the rule's penalty replaced by "
        "omega (units of s^2; same first stage, same noise), `full[omega]` "
        "vs_baselines.py's comparator (omega for all steps). Columns: median "
        "excess risk at each omega, median of gd_risk, the best omega (smallest "
        "median), the ratio of medians and the median of the paired ratios to "
        "it with 90% bootstrap intervals over seeds, the median of actual/v "
        "(`||w - theta||^2 / (d v)`) and of the chosen penalty.",
        "",
        "| task | epsilon | comparator | "
        + " | ".join(f"{o:g}" for o in omegas)
        + " | gd_risk | best omega | ratio of medians [90%] | median paired "
        "ratio [90%] | actual/v | penalty |",
        "|---" * (len(omegas) + 10) + "|",
    ]
    lines = head + summary
    if args.per_seed:
        lines += [
            "",
            "Per seed: `r = ||w||^2 / (d v)`, `actual/v`, `d v` and its parts "
            "(privacy, iterates' AR(1): the rule takes the larger of the two; "
            "statistical: added), `w . theta` (signal kept by the first stage, "
            "||theta||^2 in the same units), curvature / s^2, chosen penalty, "
            "excess risk.",
            "",
            "| task | epsilon | seed | r | actual/v | d v | d v_priv | d v_it "
            "| d v_stat | w.theta | h | penalty | gd_risk |",
            "|---" * 13 + "|",
            *per_seed,
        ]
    report = "\n".join(lines) + "\n"
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / args.out).write_text(report)
    print(report)


if __name__ == "__main__":
    main()
