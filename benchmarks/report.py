"""Suite reports: one markdown file and one PNG per skdp estimator.

Reads the fits CSV written by ``python -m benchmarks.run`` (one row per fit and
metric, schema in ``benchmarks/README.md``) and compares, per table, view and
epsilon, the estimator's median metric over seeds with each baseline's median.
The reports show the distribution of these ratios over tables, separately for
the development and confirmation halves and for each view.

Run ``python -m benchmarks.run --part report`` (reads
``benchmarks/results/fits.csv.gz``), or call ``main(csv_path, out_dir)``.
"""

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

#: Baselines that do not spend privacy budget: run once with ``epsilon=inf``
#: and compared with the estimator at every epsilon.
NON_PRIVATE = ("constant", "sklearn", "group_dro")
HALVES = ("dev", "confirm")
VIEWS = ("standardised", "raw", "pipeline")
#: A ratio above this is a loss the report lists (5% worse than the baseline).
LOSS_MARGIN = 1.05

BASELINE_LABELS = {
    "constant": "constant",
    "sklearn": "scikit-learn (non-private)",
    "dpgd": "hindsight DP-GD",
    "adassp": "AdaSSP",
    "group_dro": "group DRO (non-private)",
    "HeavyTailedLogisticRegression": "group-blind HeavyTailedLogisticRegression",
    "min_htlr_adassp": "min(HeavyTailedLinearRegression, AdaSSP)",
}

#: estimator -> (report file stem, metric compared, baselines in report order).
ESTIMATORS = {
    "BilevelRidge": (
        "bilevel_ridge",
        "mse",
        ["constant", "sklearn", "dpgd", "adassp", "min_htlr_adassp"],
    ),
    "HeavyTailedLinearRegression": (
        "heavy_tailed_linear_regression",
        "mse",
        ["constant", "sklearn", "dpgd", "adassp"],
    ),
    "HeavyTailedLogisticRegression": (
        "heavy_tailed_logistic_regression",
        "log_loss",
        ["constant", "sklearn", "dpgd"],
    ),
    "MinimaxFairClassifier": (
        "minimax_fair_classifier",
        "worst_group_log_loss",
        ["HeavyTailedLogisticRegression", "constant", "group_dro"],
    ),
}
KEY = ["table", "view", "epsilon"]
CLASSIFIERS = ("HeavyTailedLogisticRegression", "MinimaxFairClassifier")


def load_fits(csv_path):
    """The fits CSV with a failed or timed-out fit's value set to +inf (a loss)."""
    # Only a value may be missing; an empty config is the empty string.
    fits = pd.read_csv(
        csv_path,
        dtype={"config": str},
        keep_default_na=False,
        na_values={"value": [""]},
    )
    fits["epsilon"] = fits["epsilon"].astype(float)
    fits["value"] = pd.to_numeric(fits["value"], errors="coerce")
    fits.loc[fits["status"] != "ok", "value"] = np.inf
    return fits


def with_pipeline_baselines(fits):
    """Copy the standardised view's baseline rows into the pipeline view.

    The runner fits baselines only on the standardised and raw views; the
    private pipeline's test metric is in the standardised view's units (the
    same split, the target standardised with the training constants), so that
    is its comparison. A baseline with its own pipeline rows keeps them.
    """
    baseline = ~fits["method"].isin(list(ESTIMATORS))
    has_own = set(fits.loc[baseline & (fits["view"] == "pipeline"), "method"])
    copies = fits[
        baseline
        & (fits["view"] == "standardised")
        & ~fits["method"].isin(has_own)
        & fits["table"].isin(set(fits.loc[fits["view"] == "pipeline", "table"]))
    ]
    return pd.concat([fits, copies.assign(view="pipeline")], ignore_index=True)


def _seed_medians(rows, by=KEY):
    """Median over seeds; any failed seed makes the cell +inf.

    A median would hide a fit that failed on one seed of three; a default that
    fails on some split loses on that table.
    """
    grouped = rows.groupby(by, dropna=False)["value"]
    medians = grouped.median()
    medians[np.isinf(grouped.max())] = np.inf  # losses are never -inf
    return medians


def _hindsight_dpgd(fits, metric):
    """Per (table, view, epsilon): the dpgd configuration with the best median
    test loss, and its median ``metric``."""
    dpgd = fits[fits["method"] == "dpgd"]
    loss_metric = "mse" if metric == "mse" else "log_loss"
    loss = _seed_medians(dpgd[dpgd["metric"] == loss_metric], KEY + ["config"])
    if loss.empty:
        return pd.Series(dtype=float)
    best = loss.reset_index().sort_values("value").drop_duplicates(KEY)
    chosen = dpgd[dpgd["metric"] == metric].merge(
        best[KEY + ["config"]], on=KEY + ["config"]
    )
    return _seed_medians(chosen)


def baseline_medians(fits, estimator, metric, epsilons):
    """Each baseline's median ``metric`` per (table, view, epsilon)."""
    at_metric = fits[fits["metric"] == metric]
    out = {}
    for baseline in ESTIMATORS[estimator][2]:
        if baseline == "dpgd":
            out[baseline] = _hindsight_dpgd(fits, metric)
            continue
        if baseline == "min_htlr_adassp":
            pair = [
                _seed_medians(at_metric[at_metric["method"] == m])
                for m in ("HeavyTailedLinearRegression", "adassp")
            ]
            out[baseline] = pd.concat(pair, axis=1).min(axis=1, skipna=False).dropna()
            continue
        rows = at_metric[at_metric["method"] == baseline]
        if baseline in NON_PRIVATE:
            # The non-private run (epsilon = inf) compared at every epsilon.
            rows = pd.concat([rows.assign(epsilon=eps) for eps in epsilons])
        out[baseline] = _seed_medians(rows)
    return out


def ratio_frame(fits, estimator):
    """One row per (table, half, view, epsilon, baseline): the ratio of medians.

    A baseline whose every fit failed gives no ratio (nothing to beat); the
    estimator's failure gives +inf.
    """
    metric = ESTIMATORS[estimator][1]
    own = fits[(fits["method"] == estimator) & (fits["metric"] == metric)]
    if own.empty:
        return pd.DataFrame(columns=KEY + ["half", "baseline", "ratio", "value"])
    epsilons = sorted(own["epsilon"].unique())
    own_median = _seed_medians(own).rename("value")
    halves = own.drop_duplicates("table").set_index("table")["half"]
    frames = []
    for baseline, medians in baseline_medians(
        fits, estimator, metric, epsilons
    ).items():
        joined = pd.concat([own_median, medians.rename("base")], axis=1, join="inner")
        joined = joined[np.isfinite(joined["base"])]
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = joined["value"] / joined["base"]
        frames.append(joined.assign(ratio=ratio.fillna(np.inf), baseline=baseline))
    ratios = pd.concat(frames).reset_index()
    ratios["half"] = ratios["table"].map(halves)
    return ratios


def summarise(ratios):
    """Distribution over tables of each ratio: count, median, p10, p90, max and
    the share of tables at or below 1.00 and 1.05."""
    values = np.asarray(ratios, dtype=float)
    if values.size == 0:
        return None
    # inf sorts last; quantiles by order statistics keep +inf meaningful.
    p10, median, p90 = np.quantile(values, [0.1, 0.5, 0.9], method="inverted_cdf")
    return dict(
        n=values.size,
        median=median,
        p10=p10,
        p90=p90,
        max=values.max(),
        le1=np.mean(values <= 1.0),
        le105=np.mean(values <= LOSS_MARGIN),
    )


def _fmt(x, digits=2):
    return "fail" if math.isinf(x) else f"{x:.{digits}f}"


def _eps(eps):
    return "inf" if math.isinf(eps) else f"{eps:g}"


def distribution_tables(ratios, baselines):
    """Markdown: one table per view, a row per baseline and epsilon, the two
    halves side by side."""
    half_cols = "n | median | p10 | p90 | max | <= 1.00 | <= 1.05"
    lines = []
    for view in VIEWS:
        in_view = ratios[ratios["view"] == view]
        if in_view.empty:
            continue
        lines += [
            f"### View: {view}",
            "",
            f"| baseline | epsilon | dev: {half_cols.replace(' | ', ' | dev: ')} | "
            f"confirm: {half_cols.replace(' | ', ' | confirm: ')} |",
            "|---|---|" + "---|" * 14,
        ]
        for baseline in baselines:
            for eps in sorted(in_view["epsilon"].unique()):
                cells = []
                for half in HALVES:
                    mask = (
                        (in_view["baseline"] == baseline)
                        & (in_view["epsilon"] == eps)
                        & (in_view["half"] == half)
                    )
                    s = summarise(in_view.loc[mask, "ratio"])
                    if s is None:
                        cells += ["0"] + ["-"] * 6
                        continue
                    cells += [str(s["n"])]
                    cells += [_fmt(s[k]) for k in ("median", "p10", "p90", "max")]
                    cells += [f"{s['le1']:.0%}", f"{s['le105']:.0%}"]
                label = BASELINE_LABELS[baseline]
                lines.append(f"| {label} | {_eps(eps)} | " + " | ".join(cells) + " |")
        lines.append("")
    return lines


def plot(ratios, baselines, title, path):
    """Box plots of log ratios over tables: a row per view, a panel per
    baseline, epsilon on the x axis, dev and confirm side by side. Whiskers at
    the 10th and 90th percentiles; failed fits drawn as crosses at the top."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    views = [v for v in VIEWS if (ratios["view"] == v).any()]
    epsilons = sorted(ratios["epsilon"].unique())
    finite = ratios.loc[np.isfinite(ratios["ratio"]) & (ratios["ratio"] > 0), "ratio"]
    top = max(2.0, float(finite.max()) * 1.5) if len(finite) else 2.0
    bottom = min(0.5, float(finite.min()) / 1.5) if len(finite) else 0.5
    steps = (0.1, 0.2, 0.3, 0.5, 0.7, 0.85, 1, 1.2, 1.5, 2, 3, 5, 10, 20, 50, 100)
    ticks = [t for t in steps if bottom <= t <= top]
    fig, axes = plt.subplots(
        len(views),
        len(baselines),
        figsize=(3.2 * len(baselines), 2.8 * len(views)),
        squeeze=False,
        sharey=True,
    )
    colours = {"dev": "tab:blue", "confirm": "tab:orange"}
    for row, view in enumerate(views):
        for col, baseline in enumerate(baselines):
            ax = axes[row][col]
            for offset, half in zip((-0.18, 0.18), HALVES):
                sel = ratios[
                    (ratios["view"] == view)
                    & (ratios["baseline"] == baseline)
                    & (ratios["half"] == half)
                ]
                data, positions, failed = [], [], []
                for i, eps in enumerate(epsilons):
                    values = sel.loc[sel["epsilon"] == eps, "ratio"].to_numpy()
                    if values.size == 0:
                        continue
                    failed += [i + offset] * int(np.isinf(values).sum())
                    data.append(np.minimum(values, top))
                    positions.append(i + offset)
                if data:
                    ax.boxplot(
                        data,
                        positions=positions,
                        widths=0.3,
                        whis=(10, 90),
                        showfliers=False,
                        patch_artist=True,
                        boxprops=dict(facecolor=colours[half], alpha=0.5),
                        medianprops=dict(color="black"),
                    )
                if failed:
                    ax.plot(failed, [top] * len(failed), "x", color="red")
            ax.axhline(1.0, color="grey", lw=0.8)
            ax.axhline(LOSS_MARGIN, color="grey", lw=0.8, ls=":")
            ax.set_yscale("log")
            ax.set_yticks(ticks, [f"{t:g}" for t in ticks])
            ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_ylim(bottom, top * 1.1)
            ax.set_xticks(range(len(epsilons)), [_eps(e) for e in epsilons])
            if row == 0:
                ax.set_title(BASELINE_LABELS[baseline], fontsize=8)
            if row == len(views) - 1:
                ax.set_xlabel("epsilon")
            if col == 0:
                ax.set_ylabel(f"{view}: ratio")
    handles = [
        plt.Rectangle((0, 0), 1, 1, color=c, alpha=0.5) for c in colours.values()
    ]
    fig.legend(handles, HALVES, loc="upper right")
    fig.suptitle(
        f"{title}\nboxes: quartiles over tables, whiskers: 10th-90th percentile, "
        "x: failed or timed out; lines at 1 and 1.05",
        fontsize=9,
    )
    fig.tight_layout(rect=(0, 0, 0.95, 0.95))
    fig.savefig(path, dpi=90)
    plt.close(fig)


def losses_paragraph(estimator, ratios, baselines):
    """Where the estimator loses (ratio > 1.05), per baseline and epsilon; the
    development half's losses are the next issue's targets."""
    lines = ["## Where it loses (ratio > 1.05)", ""]
    # Losing to a non-private baseline at finite epsilon is the price of
    # privacy, not a target; at epsilon = inf it is the 1% optimality rule.
    private_cost = ratios["baseline"].isin(NON_PRIVATE[1:]) & np.isfinite(
        ratios["epsilon"]
    )
    losing = ratios[(ratios["ratio"] > LOSS_MARGIN) & ~private_cost]
    if losing.empty:
        return lines + [
            f"{estimator} is within 5% of every baseline on every table.",
            "",
        ]
    lines.append(
        "Targets are chosen on the development half only; the confirmation half's "
        "losses are listed to check a change, not to tune one. Each entry: table "
        "(view) ratio. Against the non-private scikit-learn and group DRO only "
        "epsilon = inf is listed."
    )
    lines.append("")
    for half in HALVES:
        if not (ratios["half"] == half).any():
            continue
        lines += [f"**{half} half.**", ""]
        if not (losing["half"] == half).any():
            lines.append("Within 5% of every baseline on every table.")
        for baseline in baselines:
            for eps in sorted(ratios["epsilon"].unique()):
                sel = losing[
                    (losing["half"] == half)
                    & (losing["baseline"] == baseline)
                    & (losing["epsilon"] == eps)
                ].sort_values("ratio", ascending=False)
                total = ratios[
                    (ratios["half"] == half)
                    & (ratios["baseline"] == baseline)
                    & (ratios["epsilon"] == eps)
                ]
                if sel.empty:
                    continue
                entries = ", ".join(
                    f"{r.table} ({r.view}) {_fmt(r.ratio, 3)}" for r in sel.itertuples()
                )
                lines.append(
                    f"- vs {BASELINE_LABELS[baseline]}, epsilon = {_eps(eps)}: "
                    f"{len(sel)} of {len(total)} table-views: {entries}."
                )
        lines.append("")
    if "constant" in baselines and estimator in CLASSIFIERS:
        vs_constant = ratios[ratios["baseline"] == "constant"]
        lines += [
            "**Share of tables where it is worse than the constant (ratio > 1.00).**",
            "",
        ]
        for view in VIEWS:
            parts = []
            for eps in sorted(vs_constant["epsilon"].unique()):
                sel = vs_constant[
                    (vs_constant["view"] == view) & (vs_constant["epsilon"] == eps)
                ]
                if sel.empty:
                    continue
                by_half = [
                    f"{half} {np.mean(sel.loc[sel['half'] == half, 'ratio'] > 1.0):.0%}"
                    for half in HALVES
                    if (sel["half"] == half).any()
                ]
                parts.append(f"epsilon = {_eps(eps)}: " + ", ".join(by_half))
            if parts:
                lines.append(f"- {view}: " + "; ".join(parts) + ".")
        lines.append("")
    return lines


def header(estimator, fits, metric, baselines, command, settings):
    own = fits[fits["method"] == estimator]
    commits = sorted(fits["commit"].astype(str).unique())
    status = own.drop_duplicates(["table", "view", "epsilon", "seed"])["status"]
    lines = [
        f"# {estimator} on the benchmark suite",
        "",
        f"Generated by `benchmarks/report.py` from the fits of commit `{', '.join(commits)}`"
        + (" (MIXED COMMITS: do not quote)" if len(commits) > 1 else "")
        + f", produced by `{command}`.",
        "",
        "Settings: "
        + "; ".join(f"{k} = {v}" for k, v in settings.items())
        + f"; {estimator}: {len(status)} fits, {int((status == 'failed').sum())} failed, "
        f"{int((status == 'timeout').sum())} timed out.",
        "",
        f"Each number is a ratio `median over seeds of {estimator}'s {metric}` / the same "
        "median of a baseline, on one table, view and epsilon (below 1: the estimator "
        "is better). The non-private baselines are fitted once (epsilon = inf) and "
        "compared at every epsilon. Hindsight DP-GD is the grid configuration with "
        "the best median test loss for that table, view and epsilon (optimistic). "
        "The pipeline view (raw frame, skdp.preprocessing, estimator, one total "
        "budget) is compared with the standardised view's baselines. "
        "A cell where any of the estimator's fits failed or timed out has ratio "
        "`fail` (+inf, a loss). The tables give the distribution over tables: median, "
        "10th and 90th percentiles (order statistics), maximum and the share of "
        "tables at or below 1.00 and 1.05.",
        "",
        f"![ratio distributions]({ESTIMATORS[estimator][0]}.png)",
        "",
        "## Distribution of the ratio over tables",
        "",
    ]
    return lines


def run_settings(fits):
    """The run's settings as read back from the CSV."""
    tables = fits.drop_duplicates("table")
    skdp_fits = fits[fits["method"].isin(list(ESTIMATORS))]
    # One CPU time per fit (the CSV repeats it on each metric's row).
    per_fit = fits.drop_duplicates(
        ["table", "view", "epsilon", "seed", "method", "config"]
    )
    return {
        "tables": ", ".join(
            f"{half} {int((tables['half'] == half).sum())}" for half in HALVES
        ),
        "views": ", ".join(v for v in VIEWS if (fits["view"] == v).any()),
        "epsilons": ", ".join(_eps(e) for e in sorted(skdp_fits["epsilon"].unique())),
        "seeds": fits["seed"].nunique(),
        "fit CPU time": f"{per_fit['seconds'].sum() / 60:.1f} min",
    }


def main(csv_path, out_dir, command=None):
    """Write ``<estimator>.md`` and ``<estimator>.png`` for every skdp estimator
    with rows in ``csv_path`` into ``out_dir``; return the paths written.

    ``command`` is the command line that produced the CSV; without it, the
    ``command`` entry of ``run.json`` next to the CSV is used when present.
    """
    csv_path, out_dir = Path(csv_path), Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    fits = load_fits(csv_path)
    meta_path = csv_path.parent / "run.json"
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    command = (
        command
        or meta.get("command")
        or "python -m benchmarks.run (options not recorded: see the settings)"
    )
    settings = run_settings(fits)
    fits = with_pipeline_baselines(fits)
    written = []
    for estimator, (stem, metric, baselines) in ESTIMATORS.items():
        ratios = ratio_frame(fits, estimator)
        if ratios.empty:
            continue
        present = [b for b in baselines if (ratios["baseline"] == b).any()]
        lines = header(estimator, fits, metric, present, command, settings)
        lines += distribution_tables(ratios, present)
        lines += losses_paragraph(estimator, ratios, present)
        (out_dir / f"{stem}.md").write_text("\n".join(lines).rstrip() + "\n")
        plot(
            ratios,
            present,
            f"{estimator}: {metric} ratio to each baseline",
            out_dir / f"{stem}.png",
        )
        written += [out_dir / f"{stem}.md", out_dir / f"{stem}.png"]
    return written


if __name__ == "__main__":
    import sys

    main(sys.argv[1], sys.argv[2])
