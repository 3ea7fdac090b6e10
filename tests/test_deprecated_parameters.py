"""Renamed parameters keep working for one release, with a FutureWarning."""

import warnings

import numpy as np
import pytest
from sklearn.base import clone

from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
)
from skdp.preprocessing import StandardScaler


def _data(classification):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + rng.normal(size=300)
    return X, (y > 0).astype(int) if classification else y


CASES = [
    (HeavyTailedLinearRegression, "bound_share", {"max_iter": 5}, False),
    (
        HeavyTailedLogisticRegression,
        "bound_share",
        {"max_iter": 5, "classes": [0, 1]},
        True,
    ),
    (
        BilevelRidge,
        "bounds_epsilon_share",
        {"inner_solver": "sufficient_statistics", "max_iter": 5},
        False,
    ),
    (BilevelRidge, "bounds_epsilon_share", {}, False),
]


@pytest.mark.parametrize("cls, old, params, classification", CASES)
def test_old_share_name_warns_and_means_estimation_share(
    cls, old, params, classification
):
    X, y = _data(classification)
    # n = 300 and a small share: the share is not floored by small-n rules
    est_old = cls(**params, **{old: 0.3}, epsilon=2.0, random_state=0)
    assert clone(est_old).get_params()[old] == 0.3
    with pytest.warns(FutureWarning, match=f"`{old}` was renamed `estimation_share`"):
        est_old.fit(X, y)
    est_new = cls(**params, estimation_share=0.3, epsilon=2.0, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        est_new.fit(X, y)
    np.testing.assert_array_equal(est_old.coef_, est_new.coef_)
    # the share is used: another value gives another model
    other = cls(**params, estimation_share=0.05, epsilon=2.0, random_state=0)
    assert not np.array_equal(other.fit(X, y).coef_, est_new.coef_)


@pytest.mark.parametrize("cls, old, params, classification", CASES[:3])
def test_old_share_name_is_validated(cls, old, params, classification):
    X, y = _data(classification)
    with pytest.raises(ValueError, match=old):
        cls(**params, **{old: 1.5}).fit(X, y)


@pytest.mark.parametrize("cls, old, params, classification", CASES[:3])
def test_old_and_new_share_names_together_are_refused(cls, old, params, classification):
    """Both names set to different shares: a clear error before any spending,
    not the old name silently winning; the old name alone still works."""
    from skdp import PrivacyAccountant

    X, y = _data(classification)
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    both = cls(**params, **{old: 0.3}, estimation_share=0.2, accountant=accountant)
    with pytest.raises(ValueError, match=f"Both `{old}`.*pass only `estimation_share`"):
        both.fit(X, y)
    assert accountant.spent_epsilon == 0.0
    with pytest.warns(FutureWarning):
        cls(**params, **{old: 0.3}, epsilon=2.0, random_state=0).fit(X, y)


def test_standard_scaler_old_and_new_share_names_together_are_refused():
    X = np.random.default_rng(0).normal(size=(500, 3))
    with pytest.raises(ValueError, match="Both `bounds_share`"):
        StandardScaler(bounds_share=0.2, estimation_share=0.15).fit(X)


def test_standard_scaler_bounds_share_warns_and_means_estimation_share():
    # enough rows that the private bound quantiles reach their target level
    X = np.random.default_rng(0).normal(size=(5000, 3))
    old = StandardScaler(bounds_share=0.2, epsilon=5.0, delta=1e-5, random_state=0)
    assert clone(old).get_params()["bounds_share"] == 0.2
    with pytest.warns(FutureWarning, match="`bounds_share` was renamed"):
        old.fit(X)
    new = StandardScaler(estimation_share=0.2, epsilon=5.0, delta=1e-5, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("error", FutureWarning)
        new.fit(X)
    assert old.privacy_plan_ == new.privacy_plan_
    np.testing.assert_array_equal(old.mean_, new.mean_)
    np.testing.assert_array_equal(old.var_, new.var_)
    other = StandardScaler(
        estimation_share=0.05, epsilon=5.0, delta=1e-5, random_state=0
    ).fit(X)
    assert not np.array_equal(other.mean_, new.mean_)
    with pytest.raises(ValueError, match="bounds_share"):
        StandardScaler(bounds_share=1.5).fit(X)
