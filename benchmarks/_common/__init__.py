"""Shared benchmark support: the results folder, the delta rule, the data paths.

Submodules: :mod:`benchmarks._common.baselines` (pinned private baselines),
:mod:`benchmarks._common.adult` (UCI Adult with its public schema) and
:mod:`benchmarks._common.fair_data` (group-fairness data and references).
"""

import os
import subprocess
from pathlib import Path

#: The repository root (the folder holding ``benchmarks/``).
ROOT = Path(__file__).resolve().parents[2]

#: Every benchmark writes its tables, JSON and plots here, and nowhere else.
RESULTS = ROOT / "benchmarks" / "results"


def benchmark_delta(n):
    """``min(1e-6, 1 / n**2)``, the delta of the issue's table."""
    return min(1e-6, 1.0 / float(n) ** 2)


def head_commit():
    """Short hash of the checked-out commit, for a result file's header
    (``"unknown"`` outside a git checkout)."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            cwd=ROOT,
        )
    except OSError:
        return "unknown"
    return out.stdout.strip() or "unknown"


def adult_dir():
    """``$SKDP_ADULT``, else ``shared/datasets/adult`` next to the checkout or
    two levels up (a worktree under ``wt/``)."""
    if os.environ.get("SKDP_ADULT"):
        return os.environ["SKDP_ADULT"]
    for up in (ROOT.parent, ROOT.parents[1]):
        path = up / "shared" / "datasets" / "adult"
        if path.is_dir():
            return os.path.normpath(path)
    return os.path.normpath(ROOT.parent / "shared" / "datasets" / "adult")
