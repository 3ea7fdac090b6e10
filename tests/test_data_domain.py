"""The data domain is part of the guarantee (issue 15, finding 6).

Inputs outside the domain (NaN/inf, labels outside the declared classes,
undeclared or missing groups) are refused before any noise is drawn and
before any privacy is charged; the threat-model page says which they are.
"""

import pathlib

import numpy as np
import pytest
from sklearn.base import clone, is_classifier

from skdp import (
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
    PrivacyAccountant,
)
from skdp._testing.estimator_checks import public_estimators

DOC = pathlib.Path(__file__).parents[1] / "doc" / "user_guide" / "threat_model.rst"
ESTIMATORS = public_estimators()
IDS = [type(e).__name__ for e in ESTIMATORS]


def _data(classifier, n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2))
    y = (X[:, 0] > 0).astype(int) if classifier else X[:, 0].copy()
    groups = np.where(X[:, 1] > 0, "a", "b").astype(object)
    return X, y, groups


def _refused(est, X, y, **fit_params):
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    est = clone(est).set_params(random_state=0, accountant=acc)
    with pytest.raises(ValueError):
        est.fit(X, y, **fit_params)
    assert acc.ledger == []  # nothing charged, hence no noise drawn


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize("where", ["X", "y"])
def test_non_finite_values_are_outside_the_domain(estimator, bad, where):
    X, y, _ = _data(is_classifier(estimator))
    if where == "X":
        X[5, 1] = bad
    elif is_classifier(estimator):
        y = y.astype(float)
        y[5] = bad
    else:
        y[5] = bad
    _refused(estimator, X, y)


@pytest.mark.parametrize(
    "estimator",
    [
        HeavyTailedLogisticRegression(classes=[0, 1]),
        MinimaxFairClassifier(classes=[0, 1]),
    ],
    ids=["HeavyTailedLogisticRegression", "MinimaxFairClassifier"],
)
def test_labels_outside_declared_classes_are_outside_the_domain(estimator):
    X, y, _ = _data(True)
    y[3] = 2
    _refused(estimator, X, y)


@pytest.mark.parametrize("missing", [None, np.nan, "c"], ids=["None", "nan", "c"])
def test_undeclared_or_missing_groups_are_outside_the_domain(missing):
    X, y, groups = _data(True)
    groups[7] = missing
    est = MinimaxFairClassifier(classes=[0, 1], groups=["a", "b"])
    _refused(est, X, y, sensitive_features=groups)


def test_threat_model_page_states_the_domain():
    text = DOC.read_text()
    assert "The data domain" in text
    body = text.split("The data domain\n", 1)[1].split("\n", 1)[1]  # skip underline
    section = body.split("\n---", 1)[0]
    section = " ".join(section.split())
    for phrase in (
        "outside the domain",
        "NaN",
        "infinite",
        "declared ``classes``",
        "declared ``groups``",
        "missing group values",
        "before any noise",
    ):
        assert phrase in section, phrase
