"""The default delta at tiny n, and the accepted range of delta (issue 15, finding 5).

``delta=None`` resolves to ``n ** -1.1``: 0.5 at n = 1, 0.47 at n = 2, which
is no guarantee. A fit whose resolved default exceeds
:data:`~skdp.utils._validation.DEFAULT_DELTA_CAP` (``n < 10``) is refused
before any noise, naming the ``delta`` to pass; ``n`` is public, so the
refusal reveals nothing. The parameter constraint says exactly what is
accepted: ``delta`` in (0, 1) or ``None``.
"""

import numpy as np
import pytest
from sklearn.base import clone, is_classifier
from sklearn.utils._param_validation import InvalidParameterError

from skdp import PrivacyAccountant
from skdp._testing.estimator_checks import public_estimators
from skdp.utils._validation import (
    DEFAULT_DELTA_CAP,
    DEFAULT_DELTA_MIN_SAMPLES,
    resolve_delta,
)

ESTIMATORS = public_estimators()
IDS = [type(e).__name__ for e in ESTIMATORS]


def _data(estimator, n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = np.arange(n) % 2 if is_classifier(estimator) else X[:, 0]
    return X, y


def test_cap_is_the_default_at_the_minimum_sample_size():
    assert DEFAULT_DELTA_MIN_SAMPLES == 10
    assert resolve_delta(None, 10, epsilon=1.0) == pytest.approx(DEFAULT_DELTA_CAP)
    for n in (1, 2, 9):
        with pytest.raises(ValueError, match=f"n_samples = {n}"):
            resolve_delta(None, n, epsilon=1.0)
    # no guarantee is claimed at epsilon=inf: nothing to refuse
    assert resolve_delta(None, 1) == 0.5


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("n", [2, 9])
def test_default_delta_above_the_cap_is_refused_before_noise(estimator, n):
    X, y = _data(estimator, n)
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    est = clone(estimator).set_params(random_state=0, accountant=acc)
    with pytest.raises(ValueError, match="delta=None") as info:
        est.fit(X, y)
    assert "delta=1e-6" in str(info.value)  # says which delta to pass
    assert len(acc.ledger) == 0  # before any spending, hence any noise


def test_single_row_regression_with_default_delta_is_refused():
    # The review's example: one row, delta_ = 0.5 and only a scale warning.
    from skdp import HeavyTailedLinearRegression

    with pytest.raises(ValueError, match="delta"):
        HeavyTailedLinearRegression(random_state=0).fit([[1.0, 2.0]], [0.5])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_delta_zero_is_refused_by_the_parameter_constraint(estimator):
    X, y = _data(estimator, 50)
    for delta in (0.0, 1.0):
        est = clone(estimator).set_params(random_state=0, delta=delta)
        with pytest.raises(InvalidParameterError, match=r"range \(0.0, 1.0\)"):
            est.fit(X, y)
