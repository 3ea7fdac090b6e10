"""Per-sample clipping must hold for rows whose norm is subnormal.

``1 / ||x||`` overflows to ``inf`` below ``2**-1024``; the derivative cap
``C / ||x||`` was then infinite, so a record with a tiny row and a huge
target moved the clipped-gradient sum by far more than its sensitivity 2C.
"""

import numpy as np
import pytest

from skdp.losses import SquaredLoss
from skdp.solvers.heavy_tailed.gd import clipped_dp_gd, make_full_batch_plan


@pytest.mark.parametrize("row", [[1e-309, 0.0], [3e-310, -4e-310]])
def test_subnormal_row_cannot_escape_the_clip(row):
    rng = np.random.default_rng(0)
    n, clip, step = 50, 1e-3, 1.0
    X = rng.normal(size=(n, 2))
    y = rng.normal(size=n)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = row, 1.7e308  # replace one record
    plan = make_full_batch_plan(np.inf, n, 2, 1, adaptive_clip=False)  # no noise
    runs = [
        clipped_dp_gd(
            A,
            b,
            SquaredLoss(),
            plan,
            np.random.default_rng(1),
            step_size=step,
            clip=clip,
        )
        for A, b in ((X, y), (X2, y2))
    ]
    # one step from 0 on the noise-free sum: w moves by step * sum / n, and
    # the sum by at most 2C between neighbours
    moved = np.linalg.norm(runs[0].coef - runs[1].coef)
    assert moved <= step * 2.0 * clip / n * (1 + 1e-9)
    # tight enough to fail: the replaced row of X was clipped (its gradient
    # norm exceeds C), so the difference is a sizeable part of the bound
    assert moved >= 0.2 * step * clip / n
