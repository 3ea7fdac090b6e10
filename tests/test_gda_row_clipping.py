"""Descent-ascent is private for any finite rows, clipped or not.

Issue 32, finding 6: ``group_dro_gda`` said row clipping was "not needed for
privacy", but one finite huge row made the margin ``inf - inf`` and the whole
stacked release NaN. The solver is called directly here (no estimator
clipping its rows first).
"""

import warnings

import numpy as np
import pytest

from skdp.solvers.saddle_point.gda import (
    group_dro_gda,
    stacked_sensitivity,
    stacked_statistic,
    stacked_statistic_multinomial,
)
from skdp.utils._sparse import matvec

HUGE = 1e308


def _neighbours(n=60):
    # Separable rows along (1, -1): the coefficients grow to about
    # (+r, -r) / sqrt(2), so a row of +HUGE entries overflows to inf - inf.
    rng = np.random.default_rng(0)
    y = np.where(rng.random(n) < 0.5, -1.0, 1.0)
    X = np.column_stack([y, -y, np.ones(n)]) + 0.1 * rng.standard_normal((n, 3))
    groups = (np.arange(n) % 2).astype(np.intp)
    X_huge = X.copy()
    X_huge[0] = HUGE
    return X, X_huge, y, groups


def _solve(X, y, groups, rng, **kw):
    params = dict(
        radius=20.0,
        clip=1.0,
        loss_bound=5.0,
        loss_factor=1.0,
        n_steps=30,
        noise_multiplier=1.0,
        primal_step=50.0,
        dual_step=1.0,
    )
    params.update(kw)
    return group_dro_gda(X, y, groups, np.array([0.5, 0.5]), rng=rng, **params)


@pytest.mark.parametrize("n_classes", [None, 3])
def test_release_stays_finite_and_silent_with_one_huge_row(n_classes):
    X, X_huge, y, groups = _neighbours()
    if n_classes is not None:
        y = ((y > 0) + (np.arange(y.size) % 3 == 0)).astype(np.intp)
    results = []
    for rows in (X, X_huge):
        # Any floating-point warning would depend on the row: none may appear.
        with warnings.catch_warnings(), np.errstate(all="warn"):
            warnings.simplefilter("error")
            results.append(
                _solve(rows, y, groups, np.random.default_rng(1), n_classes=n_classes)
            )
    for result in results:
        assert np.all(np.isfinite(result.coef))
        assert np.all(np.isfinite(result.weights))
    # the plan does not depend on the rows
    np.testing.assert_array_equal(results[0].noise_stds, results[1].noise_stds)


def test_the_huge_row_does_overflow_the_margin():
    # The coupled check below is only meaningful where inf - inf happens.
    X, X_huge, y, groups = _neighbours()
    coef = np.array([14.0, -14.0, 0.0])
    with np.errstate(all="ignore"):
        assert np.isnan(matvec(X_huge[:1], coef)).all()  # the kernel's product


@pytest.mark.parametrize("kernel", ["binary", "multinomial"])
def test_coupled_statistic_moves_by_at_most_its_sensitivity(kernel):
    X, X_huge, y, groups = _neighbours()
    record_weights = np.array([1.3, 0.7])
    clip, loss_bound, lam = 1.0, 5.0, 2.0
    if kernel == "binary":
        labels, stat = y, stacked_statistic
        coefs = [np.zeros(3), np.array([14.0, -14.0, 0.0]), np.array([1, -1, 0.5])]
    else:
        labels = ((y > 0) + (np.arange(y.size) % 3 == 0)).astype(np.intp)
        stat = stacked_statistic_multinomial
        base = np.array([[14.0, -14.0, 1.0], [-14.0, 14.0, 0.0], [0.0, 0.0, 2.0]])
        coefs = [np.zeros((3, 3)), base, 0.1 * base]
    bound = stacked_sensitivity(record_weights, clip, lam * loss_bound)
    for coef in coefs:
        with warnings.catch_warnings(), np.errstate(all="warn"):
            warnings.simplefilter("error")
            a, b = (
                stat(
                    rows, labels, groups, 2, coef, record_weights, clip, loss_bound, lam
                )
                for rows in (X, X_huge)
            )
        assert np.all(np.isfinite(b))
        assert np.linalg.norm(a - b) <= bound * (1 + 1e-9)
