"""The benchmark runner of issue 31: every skdp default and its baselines on the suite.

Run from the repository root::

    python -m benchmarks.run --quick                 # about a minute, scratch output
    python -m benchmarks.run                         # the full suite -> benchmarks/results/
    python -m benchmarks.run --compare REF           # the same skdp fits at commit REF
    python -m benchmarks.run --part timing|audit|report

Every fit of a (table, seed) job sees the same split (``train_test_split(
test_size=0.3, random_state=seed)``, stratified for classification), and every
estimator gets ``random_state=seed`` and ``delta = min(1e-6, 1/n_train**2)``.
``--part fits`` writes ``fits.csv.gz`` (one row per fit and metric, schema in
``benchmarks/README.md``) and then the reports (``benchmarks/report.py``).
"""

import os

# One BLAS thread per worker: the jobs are the parallelism (set before numpy loads).
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_variable, "1")

import argparse  # noqa: E402
import importlib  # noqa: E402
import math  # noqa: E402
import shutil  # noqa: E402
import signal  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from concurrent.futures import ProcessPoolExecutor, as_completed  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import skdp  # noqa: E402
from benchmarks import baselines, methods, suite  # noqa: E402

RESULTS_DIR = Path(__file__).resolve().parent / "results"
QUICK_DIR = Path(tempfile.gettempdir()) / "skdp-benchmarks-quick"
DEFAULT_EPSILONS = (0.5, 1.0, 2.0, 5.0, math.inf)
COLUMNS = [
    "table", "task", "half", "view", "epsilon", "seed", "method", "config", "metric", "value",
    "status", "seconds", "n_train", "n_test", "d", "commit",
]  # fmt: skip
BASELINES = ("constant", "sklearn", "dpgd", "adassp", "group_dro")


class FitTimeout(Exception):
    """A fit ran longer than ``--timeout`` seconds."""


def _on_alarm(signum, frame):
    raise FitTimeout


def timed_fit(fit, timeout):
    """Run ``fit()`` under a wall-clock timeout, warnings silenced.

    Returns ``(result, status, cpu_seconds)`` with ``status`` one of ``ok``,
    ``failed`` (it raised) or ``timeout``; ``result`` is None unless ok.
    """
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(max(1, int(math.ceil(timeout))))
    start = time.process_time()
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            result, status = fit(), "ok"
    except FitTimeout:
        result, status = None, "timeout"
    except Exception:  # a failed fit is a result: it counts as a loss
        result, status = None, "failed"
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
    return result, status, time.process_time() - start


def run_job(name, seed, epsilons, views, only_skdp, timeout):
    """Every fit of one (table, seed): all views, epsilons, skdp methods and baselines.

    Returns a list of CSV rows (dicts without ``commit``).
    """
    split = suite.Split(name, seed)
    n_classes = len(split.classes) if split.classes else None
    grouped = split.groups_test is not None
    metric_names = methods.metric_names(split.task, grouped)
    d = split.view("standardised")[0].shape[1]
    base = {
        "table": name, "task": split.task, "half": suite.half_of(name), "seed": seed,
        "n_train": split.n_train, "n_test": split.n_test, "d": d,
    }  # fmt: skip
    rows = []

    def record(view, epsilon, method, fit, y_test):
        predictions, status, seconds = timed_fit(fit, timeout)
        if status == "ok":
            outputs = predictions
        else:
            outputs = [("", None)]
        for config, prediction in outputs:
            values = dict.fromkeys(metric_names, math.nan)
            fit_status = status
            if prediction is not None:
                values.update(
                    methods.metrics(split.task, prediction, y_test, split.groups_test)
                )
                if not all(
                    math.isfinite(values[m])
                    for m in metric_names
                    if m != "worst_group_log_loss"
                ):
                    fit_status, values = "failed", dict.fromkeys(metric_names, math.nan)
            for metric in metric_names:
                rows.append({
                    **base, "view": view, "epsilon": epsilon, "method": method, "config": config,
                    "metric": metric, "value": values[metric], "status": fit_status,
                    "seconds": seconds / max(1, len(outputs)),
                })  # fmt: skip

    for view in views:
        if view == "pipeline" and name not in suite.pipeline_tables():
            continue
        if view == "pipeline":
            y_test = (
                split.standardise_target()[1]
                if split.task == "regression"
                else split.y_test
            )
        else:
            X_train, X_test, y_train, y_test = split.view(view)
        for method in methods.methods_for(split):
            for epsilon in epsilons:
                if view == "pipeline":
                    fit = _bind(methods.fit_pipeline, method, split, epsilon, seed)
                else:
                    fit = _bind(methods.fit_skdp, method, split, view, epsilon, seed)
                record(view, epsilon, method, lambda fit=fit: [("", fit())], y_test)
        if only_skdp or view == "pipeline":
            continue  # baselines of the pipeline view: the standardised view's
        args = (X_train, y_train, X_test, split.task, n_classes)
        record(view, math.inf, "constant", _bind(baselines.constant, *args), y_test)
        record(view, math.inf, "sklearn", _bind(baselines.sklearn_model, *args), y_test)
        if grouped and split.task != "regression":
            fit = _bind(
                baselines.group_dro,
                X_train,
                y_train,
                split.groups_train,
                X_test,
                split.task,
                n_classes,
            )
            record(view, math.inf, "group_dro", fit, y_test)
        for epsilon in epsilons:
            rng = np.random.default_rng([seed, 31])
            record(
                view,
                epsilon,
                "dpgd",
                _bind(baselines.dpgd, *args, epsilon, split.delta, rng),
                y_test,
            )
            if split.task == "regression":
                rng = np.random.default_rng([seed, 32])
                fit = _bind(
                    baselines.adassp,
                    X_train,
                    y_train,
                    X_test,
                    epsilon,
                    split.delta,
                    rng,
                )
                record(view, epsilon, "adassp", fit, y_test)
    return rows


def _bind(function, *args):
    return lambda: function(*args)


def _worker_init():
    warnings.simplefilter("ignore")


def commit_label(root=suite.REPO_ROOT):
    """``git rev-parse HEAD``, with ``+dirty`` if ``skdp/`` or ``benchmarks/`` differ from it.

    Files under ``benchmarks/results/`` (the runner's output) do not count.
    """

    def git(*args):
        return subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=True
        ).stdout

    try:
        head = git("rev-parse", "HEAD").strip()
        status = git("status", "--porcelain", "--", "skdp", "benchmarks").splitlines()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    dirty = [line for line in status if not line[3:].startswith("benchmarks/results/")]
    return head + ("+dirty" if dirty else "")


def run_fits(tables, epsilons, seeds, views, only_skdp, timeout, jobs, commit):
    """Run every (table, seed) job in a process pool; a DataFrame of all rows."""
    order = sorted(
        tables, key=lambda name: -suite.manifest()[name]["n_rows"]
    )  # big jobs first
    work = [(name, seed) for name in order for seed in range(seeds)]
    rows, start = [], time.time()
    arguments = (epsilons, views, only_skdp, timeout)
    if jobs <= 1:
        _worker_init()
        outcomes = ((job, run_job(*job, *arguments)) for job in work)
        for done, (job, job_rows) in enumerate(outcomes, 1):
            rows.extend(job_rows)
            _progress(done, len(work), job, start)
    else:
        with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init) as pool:
            futures = {pool.submit(run_job, *job, *arguments): job for job in work}
            for done, future in enumerate(as_completed(futures), 1):
                rows.extend(future.result())
                _progress(done, len(work), futures[future], start)
    frame = pd.DataFrame(rows)
    frame["commit"] = commit
    return frame[COLUMNS]


def _progress(done, total, job, start):
    name, seed = job
    print(
        f"[{done}/{total}] {name} seed={seed} done at {time.time() - start:.0f}s",
        flush=True,
    )


def write_csv(frame, path):
    """Write the fits CSV (gzip), in a stable row order."""
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.to_csv(path, index=False, compression="gzip")
    print(f"wrote {path} ({len(frame)} rows)", flush=True)


def call_part(module_name, *args):
    """Call ``benchmarks.<module_name>.main(*args)``, or say that the module is missing."""
    try:
        module = importlib.import_module(f"benchmarks.{module_name}")
    except ModuleNotFoundError as error:
        if error.name != f"benchmarks.{module_name}":
            raise
        print(
            f"benchmarks/{module_name}.py is not there yet (issue 31); skipped.",
            flush=True,
        )
        return None
    return module.main(*args)


def quick_summary(frame):
    """Method x table table of the main metric (median over seeds; DP-GD: best configuration)."""
    main_metric = {"regression": "mse", "binary": "log_loss", "multiclass": "log_loss"}
    frame = frame[frame["metric"] == frame["task"].map(main_metric)]
    frame = frame.assign(value=frame["value"].where(frame["status"] == "ok", np.inf))
    medians = (
        frame.groupby(["view", "table", "method", "config"])["value"]
        .median()
        .reset_index()
    )
    best = medians.groupby(["view", "table", "method"])["value"].min().reset_index()
    best["column"] = best["view"].str[:4] + ":" + best["table"].str[:18]
    table = best.pivot(index="method", columns="column", values="value")
    with pd.option_context(
        "display.width", 250, "display.max_columns", 50, "display.precision", 3
    ):
        print(table.T.to_string(float_format=lambda v: f"{v:.3f}"))


def run_compare(args, tables, epsilons, seeds, views, new_frame, out_dir):
    """Run the skdp fits at ``args.compare`` and write ``compare.md``."""
    root = suite.REPO_ROOT
    ref = subprocess.run(
        ["git", "-C", str(root), "rev-parse", "--verify", args.compare + "^{commit}"],
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    scratch = Path(tempfile.mkdtemp(prefix="skdp-compare-"))
    worktree, shim = scratch / "ref", scratch / "path"
    try:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "add", "--detach", str(worktree), ref],
            check=True,
        )
        # skdp from REF, the runner from this checkout: a path folder with both links.
        shim.mkdir()
        (shim / "skdp").symlink_to(worktree / "skdp")
        (shim / "benchmarks").symlink_to(root / "benchmarks")
        command = [
            sys.executable, "-m", "benchmarks.run", "--part", "fits", "--only-skdp", "--no-report",
            "--tables", *tables, "--epsilons", *map(str, epsilons), "--seeds", str(seeds),
            "--views", *views, "--jobs", str(args.jobs), "--timeout", str(args.timeout),
            "--out", str(scratch / "out"), "--commit", ref,
        ]  # fmt: skip
        environment = {**os.environ, "PYTHONPATH": str(shim)}
        subprocess.run(command, cwd=shim, env=environment, check=True)
        old_frame = pd.read_csv(scratch / "out" / "fits.csv.gz")
    finally:
        subprocess.run(
            ["git", "-C", str(root), "worktree", "remove", "--force", str(worktree)],
            check=False,
        )
        shutil.rmtree(scratch, ignore_errors=True)
    text = compare_markdown(new_frame, old_frame, new_frame["commit"].iloc[0], ref)
    (out_dir / "compare.md").write_text(text, encoding="utf-8")
    print(f"wrote {out_dir / 'compare.md'}", flush=True)


#: The metric a method is compared on.
COMPARE_METRIC = {
    "BilevelRidge": "mse",
    "HeavyTailedLinearRegression": "mse",
    "HeavyTailedLogisticRegression": "log_loss",
    "MinimaxFairClassifier": "worst_group_log_loss",
}


def cell_medians(frame):
    """Median over seeds per (view, table, epsilon, method) of each method's compare metric.

    A failed or timed-out seed counts as an infinite loss.
    """
    frame = frame[frame["method"].isin(list(COMPARE_METRIC))]
    frame = frame[frame["metric"] == frame["method"].map(COMPARE_METRIC)]
    frame = frame.assign(value=frame["value"].where(frame["status"] == "ok", np.inf))
    keys = ["view", "task", "half", "table", "epsilon", "method"]
    return frame.groupby(keys)["value"].median()


def compare_markdown(new_frame, old_frame, new_commit, old_commit):
    """``compare.md``: distribution over cells of the ratio new/old of the median metric."""
    new, old = cell_medians(new_frame), cell_medians(old_frame)
    joined = pd.concat({"new": new, "old": old}, axis=1, join="inner").reset_index()
    with np.errstate(all="ignore"):
        ratio = joined["new"] / joined["old"]
    both_failed = np.isinf(joined["new"]) & np.isinf(joined["old"])
    joined["ratio"] = ratio.where(~both_failed, 1.0).fillna(1.0)
    lines = [
        f"# --compare: skdp at {new_commit} against {old_commit}",
        "",
        "Ratio new/old of the median over seeds of each method's metric (mse; log_loss;",
        "MinimaxFairClassifier: worst_group_log_loss), one cell per (table, epsilon); a failed",
        "or timed-out seed counts as an infinite loss. The same splits, seeds and views; the",
        "runner is this checkout's in both runs. Issue 33's must-show: a ratio of at most 1.05",
        "on at least 90% of the cells of each kind, with a median of at most 1.01.",
        "",
    ]
    for view in [v for v in suite.VIEWS if v in set(joined["view"])]:
        by_view = joined[joined["view"] == view]
        lines += [
            f"## view: {view}",
            "",
            "| task | method | half | cells | median | p90 | share <= 1.05 | passes "
            "| cells above 1.05 |",
            "|---|---|---|---|---|---|---|---|---|",
        ]
        for (task, method), by_method in by_view.groupby(["task", "method"]):
            for half in ("dev", "confirm", "pooled"):
                part = (
                    by_method
                    if half == "pooled"
                    else by_method[by_method["half"] == half]
                )
                if part.empty:
                    continue
                r = part["ratio"].to_numpy()
                share = float(np.mean(r <= 1.05))
                median, p90 = float(np.median(r)), float(np.quantile(r, 0.9))
                verdict = "yes" if share >= 0.9 and median <= 1.01 else "**no**"
                above = part[part["ratio"] > 1.05]
                above_list = ", ".join(
                    f"{t}@{e:g} ({v:.2f})"
                    for t, e, v in zip(above["table"], above["epsilon"], above["ratio"])
                )
                lines.append(
                    f"| {task} | {method} | {half} | {len(r)} | {median:.3f} | {p90:.3f} "
                    f"| {share:.0%} | {verdict} | {above_list or '-'} |"
                )
        lines.append("")
    return "\n".join(lines)


def parse_args(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.run", description=__doc__.splitlines()[0]
    )
    parser.add_argument(
        "--quick",
        action="store_true",
        help="two smallest dev tables per task, eps=1, 2 seeds",
    )
    parser.add_argument(
        "--compare",
        metavar="REF",
        help="also run the skdp fits at commit REF; write compare.md",
    )
    parser.add_argument("--half", choices=["dev", "confirm", "both"], default="both")
    parser.add_argument(
        "--tasks", nargs="+", choices=suite.TASKS, default=list(suite.TASKS)
    )
    parser.add_argument("--tables", nargs="+", metavar="NAME", help="only these tables")
    parser.add_argument(
        "--epsilons", nargs="+", type=float, help="default: 0.5 1 2 5 inf"
    )
    parser.add_argument("--seeds", type=int, help="number of seeds (default 5)")
    parser.add_argument(
        "--views", nargs="+", choices=suite.VIEWS, help="default: all three"
    )
    parser.add_argument(
        "--jobs", type=int, default=2, help="worker processes (default 2)"
    )
    parser.add_argument(
        "--timeout", type=float, default=600.0, help="seconds per fit (default 600)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        help="output folder (default benchmarks/results; --quick: a temp dir)",
    )
    parser.add_argument(
        "--part", choices=["fits", "timing", "audit", "report", "all"], default="fits"
    )
    parser.add_argument(
        "--only-skdp",
        action="store_true",
        help="skip the baselines (used by --compare)",
    )
    parser.add_argument("--no-report", action="store_true", help="write the CSV only")
    parser.add_argument(
        "--commit", help=argparse.SUPPRESS
    )  # label of the skdp under test (--compare)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    suite.check_halves()
    out_dir = args.out or (QUICK_DIR if args.quick else RESULTS_DIR)
    out_dir.mkdir(parents=True, exist_ok=True)
    csv_path = out_dir / "fits.csv.gz"
    if args.part == "timing":
        return call_part("timing", out_dir)
    if args.part == "audit":
        return call_part("audit", out_dir)
    if args.part == "report":
        return call_part("report", csv_path, out_dir)

    halves = ("dev", "confirm") if args.half == "both" else (args.half,)
    if args.quick:
        tables = suite.smallest_tables(2, "dev")
        tables = [t for t in tables if suite.manifest()[t]["task"] in args.tasks]
        epsilons, seeds = args.epsilons or [1.0], args.seeds or 2
    else:
        tables = suite.select_tables(halves, args.tasks, args.tables)
        epsilons, seeds = args.epsilons or list(DEFAULT_EPSILONS), args.seeds or 5
    if args.quick and args.tables:
        tables = [t for t in tables if t in args.tables]
    views = args.views or list(suite.VIEWS)
    commit = args.commit or commit_label()
    print(f"skdp from {Path(skdp.__file__).resolve().parent} ({commit})", flush=True)
    start = time.time()
    frame = run_fits(
        tables, epsilons, seeds, views, args.only_skdp, args.timeout, args.jobs, commit
    )
    write_csv(frame, csv_path)
    print(
        f"fits: {len(tables)} tables x {seeds} seeds in {time.time() - start:.0f}s wall",
        flush=True,
    )
    if args.quick:
        quick_summary(frame)
    if args.compare:
        run_compare(args, tables, epsilons, seeds, views, frame, out_dir)
    if not (args.no_report or args.only_skdp):
        call_part("report", csv_path, out_dir)
    if args.part == "all":
        call_part("timing", out_dir)
        call_part("audit", out_dir)
    return None


if __name__ == "__main__":
    main()
