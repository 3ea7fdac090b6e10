"""Extreme private rows: no floating-point warning, finite output, for every mechanism.

A warning that appears for one record and not for its neighbour is a release
(under ``warnings.simplefilter("error")`` the fit even raises on one dataset
and not the other). Every estimator and transformer of skdp, listed by
:func:`skdp._testing.all_estimators.fast_estimators` (so that new ones are
covered without editing this file), is fitted on data where a few rows (and
targets) are replaced by values at the edges of float64: near the largest
float, norms above it, subnormals, negative zero and mixes of these. Every
configuration first fits warning-free on ordinary data of the same shape, so
any warning on the extreme data comes from the extreme records.
"""

import inspect
import warnings

import numpy as np
import pytest
from sklearn.base import clone, is_classifier, is_regressor

from skdp._testing.all_estimators import all_estimator_classes, fast_estimators
from skdp.exceptions import UnscaledDataWarning
from skdp.solvers.bilevel.hypergradient import clipped_sum
from skdp.utils import clip_factors, clip_rows, safe_row_norms

BIG = np.finfo(float).max
TINY = np.finfo(float).smallest_subnormal

# name -> (rows of X, targets for regressors)
CASES = {
    "huge": ([[1e308, 1e308, 0.0], [-1e308, -1e308, -1e308]], [1e308, -1e308]),
    "norm_above_max": ([[1.3e308, 1.3e308, 0.0], [BIG, -BIG, BIG]], [BIG, -BIG]),
    "subnormal": ([[1e-310, 0.0, 0.0], [TINY, -TINY, 0.0]], [1e-310, -TINY]),
    "negative_zero": ([[-0.0, -0.0, -0.0], [0.0, -0.0, 0.0]], [-0.0, 0.0]),
    "denormal_mix": (
        [[1e308, 1e-310, -TINY], [2.2e-308, -1e-320, 1e-300]],
        [1e-310, -1e308],
    ),
}
N, D = 400, 3

ESTIMATORS = fast_estimators()
IDS = [f"{type(e).__name__}-{i}" for i, e in enumerate(ESTIMATORS)]


def _data(estimator, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N, D))
    if is_classifier(estimator):
        y = (X[:, 0] + 0.5 * rng.normal(size=N) > 0).astype(int)
        if len(getattr(estimator, "classes", None) or []) == 3:
            y[X[:, 1] > 1.0] = 2
    else:
        y = X @ np.arange(1.0, D + 1) / D + 0.3 * rng.normal(size=N)
    groups = (X[:, 2] > 0).astype(int)
    return X, y, groups


def _fit(estimator, X, y, groups):
    kwargs = {}
    if "sensitive_features" in inspect.signature(estimator.fit).parameters:
        kwargs["sensitive_features"] = groups
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        # Post-processing of a noisy release (the private feature scale), so
        # not a per-record signal: a draw of the noise may trigger it.
        warnings.simplefilter("ignore", UnscaledDataWarning)
        if is_classifier(estimator) or is_regressor(estimator):
            return estimator.fit(X, y, **kwargs)
        return estimator.fit(X, **kwargs)


def _output(estimator, X):
    if hasattr(estimator, "predict"):
        out = estimator.decision_function(X) if is_classifier(estimator) else None
        return [estimator.predict(X), out] + [
            getattr(estimator, a)
            for a in ("coef_", "intercept_")
            if hasattr(estimator, a)
        ]
    return [estimator.transform(X)]


def _assert_finite(arrays):
    for a in arrays:
        if a is not None:
            assert np.all(np.isfinite(np.asarray(a, dtype=float)))


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_extreme_rows_fit_silently_to_finite_output(estimator, case):
    X, y, groups = _data(estimator)
    X_test = _data(estimator, seed=1)[0]
    # The configuration is warning-free on ordinary data ...
    try:
        baseline = _fit(clone(estimator), X, y, groups)
    except Exception as exc:  # a configuration problem, not an extreme-row one
        pytest.fail(
            f"{estimator!r} does not fit ordinary data ({type(exc).__name__}: "
            f"{exc}). Declare a small configuration for it in FAST_PARAMS "
            "(skdp/_testing/all_estimators.py)."
        )
    _assert_finite(_output(baseline, X_test))
    # ... and stays so when a few records are extreme.
    rows, targets = CASES[case]
    X[: len(rows)] = rows
    if not is_classifier(estimator):
        y[: len(targets)] = targets
    _assert_finite(_output(_fit(clone(estimator), X, y, groups), X_test))


def test_every_class_is_covered():
    classes = {type(e) for e in ESTIMATORS}
    assert classes == set(all_estimator_classes())
    assert {c.__name__ for c in classes} >= {
        "BilevelRidge",
        "HeavyTailedLinearRegression",
        "HeavyTailedLogisticRegression",
        "MinimaxFairClassifier",
    }


# The shared helpers, at depth: under errstate(all="raise") any overflow or
# underflow they let through raises, and the values they return are the
# exactly rounded ones (no value is computed and then thrown away).
EXTREME_ROWS = np.array(
    [
        [1.3e308, 1.3e308, 0.0],
        [BIG, -BIG, BIG],
        [1e308, -1e308, 1e308],
        [1e-310, 0.0, 0.0],
        [TINY, -TINY, 0.0],
        [-0.0, -0.0, -0.0],
        [1e308, 1e-310, -TINY],
        [3.0, 4.0, 0.0],
    ]
)


def test_safe_row_norms_is_silent_and_exact():
    with np.errstate(all="raise"):
        norms = safe_row_norms(EXTREME_ROWS)
    expected = [np.inf, np.inf, np.sqrt(3.0) * 1e308, 1e-310, np.sqrt(2) * TINY]
    np.testing.assert_allclose(norms[:3], expected[:3], rtol=1e-15)
    assert norms[3] == 1e-310
    assert norms[4] == TINY  # sqrt(2) * TINY rounds to TINY
    assert norms[5] == 0.0 and norms[6] == 1e308 and norms[7] == 5.0


@pytest.mark.parametrize("bound", [1.0, 1e-300, 1e300])
def test_clip_rows_is_silent_and_keeps_direction(bound):
    with np.errstate(all="raise"):
        clipped = clip_rows(EXTREME_ROWS, bound)
        norms = safe_row_norms(clipped)
    assert np.all(np.isfinite(clipped))
    assert np.all(norms <= bound * (1 + 1e-15))
    # every row above the bound ends on it, in its own direction (none is
    # zeroed because its norm overflowed)
    above = np.array([True, True, True, False, False, False, True, bound < 5.0])
    np.testing.assert_allclose(norms[above], bound, rtol=1e-15)
    np.testing.assert_allclose(clipped[0] / bound, [2**-0.5, 2**-0.5, 0.0])
    np.testing.assert_allclose(clipped[1] / bound, [3**-0.5, -(3**-0.5), 3**-0.5])
    np.testing.assert_array_equal(clipped[~above], EXTREME_ROWS[~above])
    assert np.signbit(clipped[5]).all()  # -0.0 stays -0.0


def test_clip_factors_and_bilevel_clipped_sum_are_silent():
    with np.errstate(all="raise"):
        f = clip_factors(np.array([0.0, TINY, 1.0, 4.0, np.inf]), 2.0)
        s = clipped_sum(EXTREME_ROWS[2:], 1.0)
    np.testing.assert_array_equal(f, [1.0, 1.0, 1.0, 0.5, 0.0])
    assert np.all(np.isfinite(s))
    assert np.linalg.norm(s) <= 6.0
