"""Sets read from private data warn with skdp.PrivacyLeakWarning (issue 15, finding 2).

The warning depends only on the parameters (a set was not declared), never on
the data, so it is emitted the same way for every dataset, including one that
is then refused for having a single class.
"""

import warnings

import numpy as np
import pytest

from skdp import (
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
    PrivacyLeakWarning,
)


def _data(n=300, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int)
    return X, y, np.where(X[:, 1] > 0, "a", "b")


def _leaks(fit):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fit()
        except ValueError:
            pass
    return [str(w.message) for w in caught if w.category is PrivacyLeakWarning]


def test_logistic_inferred_classes_warn_and_name_the_argument():
    X, y, _ = _data()
    msgs = _leaks(lambda: HeavyTailedLogisticRegression(random_state=0).fit(X, y))
    assert len(msgs) == 1
    assert "classes=[" in msgs[0] and "HeavyTailedLogisticRegression" in msgs[0]
    declared = HeavyTailedLogisticRegression(random_state=0, classes=[0, 1])
    assert _leaks(lambda: declared.fit(X, y)) == []


def test_logistic_warning_does_not_depend_on_the_data():
    # A single-class y is refused (a data-dependent error, which is exactly
    # what the warning is about); the warning itself comes before and is the
    # same as on two-class data.
    X, y, _ = _data()
    est = HeavyTailedLogisticRegression(random_state=0)
    assert _leaks(lambda: est.fit(X, np.ones_like(y))) == _leaks(lambda: est.fit(X, y))
    with pytest.raises(ValueError, match="classes"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            est.fit(X, np.ones_like(y))


def test_minimax_inferred_groups_warn_and_name_the_argument():
    X, y, groups = _data()
    params = dict(random_state=0, classes=[0, 1], max_iter=2, epsilon=10.0)
    msgs = _leaks(
        lambda: MinimaxFairClassifier(**params).fit(X, y, sensitive_features=groups)
    )
    assert len(msgs) == 1
    assert "groups=[" in msgs[0] and "MinimaxFairClassifier" in msgs[0]
    for declared in ({"groups": ["a", "b"]}, {"group_priors": {"a": 0.5, "b": 0.5}}):
        est = MinimaxFairClassifier(**params, **declared)
        assert _leaks(lambda e=est: e.fit(X, y, sensitive_features=groups)) == []
    # without sensitive_features there is one public group: nothing inferred
    assert _leaks(lambda: MinimaxFairClassifier(**params).fit(X, y)) == []


def test_the_warning_can_refuse_the_fit():
    X, y, _ = _data()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        with pytest.raises(PrivacyLeakWarning):
            HeavyTailedLogisticRegression(random_state=0).fit(X, y)


def test_minimax_inferred_classes_warn_and_name_the_argument():
    # Classes read from y are a set read from private data (DESIGN: "Sets
    # inferred from data warn"); the warning is the same for a single-class y,
    # which is then refused.
    X, y, _ = _data()
    params = dict(random_state=0, max_iter=2, epsilon=10.0)
    msgs = _leaks(lambda: MinimaxFairClassifier(**params).fit(X, y))
    assert len(msgs) == 1
    assert "classes=[" in msgs[0] and "MinimaxFairClassifier" in msgs[0]
    assert (
        _leaks(lambda: MinimaxFairClassifier(**params).fit(X, np.ones_like(y))) == msgs
    )
    declared = MinimaxFairClassifier(**params, classes=[0, 1])
    assert _leaks(lambda: declared.fit(X, y)) == []
