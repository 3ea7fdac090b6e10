"""Provenance of every committed result file, from git log.

For each file in ``benchmarks/results/``: the commit that wrote its current
content (the oldest commit with the same bytes: hash and date), the command
recorded in the file (older files name the flat ``benchmarks/<name>.py``
layout that preceded the folders), the script that
now produces it, whether the file records numba, and how many commits have
changed the skdp sources it measures since then (behaviour-preserving
restructurings included: a count above zero means "check", not "wrong").
Run from the repository root::

    python -m benchmarks.provenance            # prints the Markdown table

``benchmarks/README.md`` holds its output at the commit named there.
"""

import re
import subprocess
from pathlib import Path

from benchmarks._common import RESULTS

ROOT = Path(RESULTS).resolve().parent.parent

#: (file-name prefix, current script, skdp sources it measures); first match wins.
SOURCES = [
    (
        "bilevel_ridge",
        "bilevel_ridge/*",
        ["skdp/solvers/bilevel", "skdp/linear_model/_bilevel_ridge.py"],
    ),
    (
        "heavy_tailed",
        "heavy_tailed/{main,rule,steps,timing}",
        [
            "skdp/solvers/heavy_tailed",
            "skdp/linear_model/_heavy_tailed.py",
            "skdp/losses.py",
        ],
    ),
    (
        "multiclass",
        "heavy_tailed/multiclass",
        [
            "skdp/solvers/heavy_tailed",
            "skdp/linear_model/_heavy_tailed.py",
            "skdp/losses.py",
        ],
    ),
    (
        "minimax_fair_audit",
        "minimax_fair/audit",
        ["skdp/solvers/saddle_point", "skdp/fairness", "skdp/privacy/audit.py"],
    ),
    (
        "minimax_fair_multiclass",
        "minimax_fair/multiclass",
        ["skdp/solvers/saddle_point", "skdp/fairness"],
    ),
    (
        "minimax_fair_gap",
        "minimax_fair/gap_frontier",
        ["skdp/solvers/saddle_point", "skdp/fairness"],
    ),
    (
        "minimax_fair",
        "minimax_fair/main",
        ["skdp/solvers/saddle_point", "skdp/fairness"],
    ),
    (
        "dask_scale",
        "dask/scale",
        [
            "skdp/solvers/_distributed.py",
            "skdp/linear_model",
            "skdp/solvers/bilevel",
            "skdp/solvers/heavy_tailed",
        ],
    ),
    (
        "estimation_share_units",
        "privacy/estimation_share_units",
        ["skdp/linear_model/_bilevel_ridge.py", "skdp/fairness", "skdp/privacy"],
    ),
    (
        "norm_bound_merge",
        "privacy/estimation_share_units",
        ["skdp/linear_model/_bilevel_ridge.py", "skdp/fairness", "skdp/privacy"],
    ),
    (
        "norm_bound_gaussian",
        "privacy/estimation_share_units",
        ["skdp/linear_model/_bilevel_ridge.py", "skdp/fairness", "skdp/privacy"],
    ),
    ("norm_bound_mechanisms", "privacy/norm_bound", ["skdp/privacy"]),
    ("privacy_audit", "privacy/audit", ["skdp"]),
    ("privacy_hardening", "privacy/hardening_invariance", ["skdp"]),
    (
        "private_pipeline",
        "pipeline/main",
        [
            "skdp/preprocessing",
            "skdp/linear_model/_heavy_tailed.py",
            "skdp/solvers/heavy_tailed",
            "skdp/fairness",
            "skdp/solvers/saddle_point",
        ],
    ),
    (
        "private_search",
        "model_selection/private_search",
        [
            "skdp/model_selection",
            "skdp/privacy/_selection.py",
            "skdp/linear_model",
            "skdp/fairness",
        ],
    ),
    (
        "sparse",
        "sparse/main",
        ["skdp/linear_model", "skdp/fairness", "skdp/solvers", "skdp/utils/_sparse.py"],
    ),
]


def git(*args):
    return subprocess.run(
        ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.strip()


def sources_of(name):
    for prefix, script, paths in SOURCES:
        if name.startswith(prefix):
            return script, paths
    return "?", ["skdp"]


def recorded(path):
    """The command and the numba statement recorded in a text result, if any."""
    if path.suffix not in (".md", ".log", ".csv"):
        return "", ""
    text = path.read_text(errors="replace")[:20_000]
    cmd = re.search(r"`((?:PYTHONPATH=\S+ )?(?:nice -n \d+ )?python [^`]+)`", text)
    numba = re.search(r"numba[^.\n|`]{0,60}", text, flags=re.IGNORECASE)
    return (cmd.group(1) if cmd else ""), (numba.group(0).strip() if numba else "")


def written(rel):
    """``(hash, date, subject)`` of the oldest commit with the file's current content.

    A commit that only restored or re-saved the same bytes does not count as
    a new generation.
    """
    log = git("log", "--format=%h %ad %s", "--date=short", "--", rel)
    if not log:
        return None
    blob = git("hash-object", rel)
    found = None
    for line in log.splitlines():
        commit = line.split(" ", 1)[0]
        try:
            same = git("rev-parse", f"{commit}:{rel}") == blob
        except subprocess.CalledProcessError:  # deleted at that commit
            same = False
        if same:
            found = line.split(" ", 2)
    return found


def rows():
    out = []
    for path in sorted(Path(RESULTS).iterdir()):
        if path.is_dir():
            continue
        rel = path.relative_to(ROOT).as_posix()
        last = written(rel)
        if last is None:
            continue  # not committed
        commit, date, subject = last
        script, paths = sources_of(path.name)
        since = git("rev-list", "--count", f"{commit}..HEAD", "--", *paths)
        cmd, numba = recorded(path)
        if not numba and "numba" in subject.lower():
            numba = "commit: " + re.search(r"[^,;(]*numba[^,;)]*", subject, re.I).group(
                0
            )
        out.append((path.name, commit, date, script, cmd, numba.strip(), int(since)))
    return out


HEADER = (
    "| file | last written | date | script now | command recorded in the file "
    "| numba | source commits since |"
)


def main():
    print(HEADER)
    print("|---|---|---|---|---|---|---|")
    for name, commit, date, script, cmd, numba, since in rows():
        cmd = f"`{cmd}`".replace("|", "\\|") if cmd else "not recorded"
        numba = numba or "not recorded"
        print(f"| {name} | {commit} | {date} | {script} | {cmd} | {numba} | {since} |")


if __name__ == "__main__":
    main()
