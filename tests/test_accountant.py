"""Shared PrivacyAccountant: ledger, budget errors, clone() and cross-validation."""

import copy
import pickle

import numpy as np
import pytest
from _toy_estimators import PrivateMean
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

from skdp.privacy import (
    BudgetExceededError,
    ComposedDpEvent,
    PrivacyAccountant,
    certify_epsilon,
    gaussian_steps,
)


def _data(n=200):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    return X, np.clip(X[:, 0] + rng.normal(size=n), -1, 1)


def test_ledger_composes_tightly_and_refuses_overspending():
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    ev = gaussian_steps(10.0, 4)
    acc.spend(ev, label="a")
    acc.spend(ev, label="b")
    assert acc.spent_epsilon == pytest.approx(
        certify_epsilon(gaussian_steps(10.0, 8), 1e-5)
    )
    assert acc.spent_epsilon < 2 * certify_epsilon(ev, 1e-5)  # tighter than basic
    assert acc.remaining_epsilon == pytest.approx(2.0 - acc.spent_epsilon)
    with pytest.raises(BudgetExceededError, match="No data was used"):
        acc.spend(gaussian_steps(0.5, 1))
    assert len(acc.ledger) == 2  # the refused fit is not recorded
    assert acc.can_spend(ev) and not acc.can_spend(gaussian_steps(0.5, 1))


def test_clone_returns_same_accountant():
    acc = PrivacyAccountant(1.0, 1e-5)
    est = PrivateMean(accountant=acc)
    assert clone(est).accountant is acc


def test_cross_val_score_spends_composition_of_folds():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-4)
    est = PrivateMean(epsilon=1.0, delta=1e-5, accountant=acc, random_state=0)
    cross_val_score(est, X, y, cv=5, error_score="raise")
    assert len(acc.ledger) == 5
    folds = ComposedDpEvent([e for _, e in acc.ledger])
    assert acc.spent_epsilon == pytest.approx(certify_epsilon(folds, 1e-4))
    # Each fold fit was calibrated alone to (1, 1e-5); five compose to more than 1.
    assert acc.spent_epsilon > 1.0


def test_grid_search_and_pipeline_share_the_ledger_and_stop_when_exhausted():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.5, delta=1e-4)
    pipe = make_pipeline(
        FunctionTransformer(), PrivateMean(delta=1e-5, accountant=acc, random_state=0)
    )
    grid = GridSearchCV(
        pipe, {"privatemean__epsilon": [0.5, 1.0]}, cv=3, error_score="raise"
    )
    with pytest.raises(BudgetExceededError):
        grid.fit(X, y)
    assert 0 < len(acc.ledger) < 7
    assert acc.spent_epsilon <= 1.5


def test_accountant_refuses_other_process():
    acc = PrivacyAccountant(1.0, 1e-5)
    copy = pickle.loads(pickle.dumps(acc))
    copy._pid = -1  # as if unpickled in a worker process
    with pytest.raises(RuntimeError, match="another process"):
        copy.spend(gaussian_steps(10.0))


def test_deepcopy_shares_the_ledger_and_a_pickled_copy_cannot_spend():
    # Review finding: deepcopy / pickle forked the ledger, so three deep
    # copies of a template could each spend the whole budget.
    X, y = _data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    template = PrivateMean(epsilon=0.9, delta=1e-6, accountant=acc, random_state=0)
    copy.deepcopy(template).fit(X, y)
    assert len(acc.ledger) == 1
    with pytest.raises(BudgetExceededError):
        copy.deepcopy(template).fit(X, y)
    for forked in (pickle.loads(pickle.dumps(acc)), copy.copy(acc)):
        assert forked.spent_epsilon == pytest.approx(acc.spent_epsilon)
        with pytest.raises(RuntimeError, match="pickled copy"):
            forked.spend(gaussian_steps(100.0))
    fitted = pickle.loads(pickle.dumps(template))
    with pytest.raises(RuntimeError, match="pickled copy"):
        fitted.fit(X, y)
    assert len(acc.ledger) == 1


def test_parallel_cross_val_raises_instead_of_losing_spending():
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-4)
    est = PrivateMean(delta=1e-5, accountant=acc, random_state=0)
    with pytest.raises(RuntimeError, match="another process"):
        cross_val_score(est, X, y, cv=2, n_jobs=2, error_score="raise")


def test_privacy_spent_is_certified_and_within_request():
    X, y = _data()
    est = PrivateMean(epsilon=0.7, random_state=0).fit(X, y)
    eps, delta = est.privacy_spent_
    assert delta == est.delta_ == pytest.approx(200**-1.1)
    assert 0.69 <= eps <= 0.7
    assert est.delta is None  # constructor argument untouched


def test_bad_budgets():
    with pytest.raises(ValueError):
        PrivacyAccountant(0.0, 1e-5)
    with pytest.raises(ValueError):
        PrivacyAccountant(1.0, 1.0)


def test_infinite_epsilon_is_accepted_and_adds_no_noise():
    X, y = _data()
    a = PrivateMean(epsilon=np.inf, random_state=0).fit(X, y)
    b = PrivateMean(epsilon=np.inf, random_state=1).fit(X, y)
    assert a.mean_ == b.mean_ == pytest.approx(np.clip(y, -1, 1).mean())
    assert a.privacy_spent_[0] == np.inf


def test_clones_on_one_ledger_draw_independent_noise():
    # clone() copies random_state; without a stream per fit, CV folds would
    # reuse the same noise and subtracting two releases would cancel it.
    X, y = _data()
    for seed in (3, np.random.RandomState(3), np.random.default_rng(3)):
        acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
        est = PrivateMean(epsilon=1.0, delta=1e-6, accountant=acc, random_state=seed)
        a, b = clone(est).fit(X, y), clone(est).fit(X, y)
        assert not np.allclose(a.mean_, b.mean_)
    # Reproducible: the same sequence of fits on a fresh ledger.
    runs = []
    for _ in range(2):
        acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
        est = PrivateMean(epsilon=1.0, delta=1e-6, accountant=acc, random_state=3)
        runs.append([clone(est).fit(X, y).mean_ for _ in range(2)])
    np.testing.assert_array_equal(runs[0], runs[1])


def test_cross_validation_folds_do_not_share_noise():
    # Fold releases minus the exact fold statistics: identical noise would
    # make the differences equal across folds.
    X, y = _data(300)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    est = PrivateMean(epsilon=1.0, delta=1e-6, accountant=acc, random_state=0)
    folds = [np.arange(300) % 3 != k for k in range(3)]
    noise = [clone(est).fit(X[m], y[m]).mean_ - y[m].mean() for m in folds]
    assert not np.allclose(noise[0], noise[1])
