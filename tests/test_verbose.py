"""``verbose``: the fit reports its phases, and nothing that depends on the data."""

import numpy as np
import pytest

from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
)
from skdp.model_selection import PrivateSearchCV


def _neighbours(classification):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3))
    y = X @ np.array([1.0, -0.5, 0.2]) + rng.normal(size=300)
    g = rng.integers(0, 2, size=300)
    if classification:
        y = (y > 0).astype(int)
    X2, y2 = X.copy(), y.copy()
    X2[0] = [50.0, -40.0, 30.0]  # replace one record by an outlier
    y2[0] = 1 - y[0] if classification else 1e3
    return (X, y, g), (X2, y2, g)


ESTIMATORS = [
    (lambda v: HeavyTailedLinearRegression(max_iter=5, verbose=v), False, False),
    (
        lambda v: HeavyTailedLogisticRegression(classes=[0, 1], max_iter=5, verbose=v),
        True,
        False,
    ),
    (lambda v: BilevelRidge(verbose=v), False, False),
    (
        lambda v: BilevelRidge(inner_solver="sufficient_statistics", verbose=v),
        False,
        False,
    ),
    (
        lambda v: MinimaxFairClassifier(
            epsilon=5.0, classes=[0, 1], groups=[0, 1], max_iter=5, verbose=v
        ),
        True,
        True,
    ),
    (
        lambda v: PrivateSearchCV(
            HeavyTailedLinearRegression(max_iter=5),
            param_grid={"max_iter": [3, 5]},
            mean_trials=3.0,
            epsilon=5.0,
            loss_bound=4.0,
            verbose=v,
        ),
        False,
        False,
    ),
]


def _fit(make, verbose, data, groups, capsys):
    X, y, g = data
    est = make(verbose).set_params(random_state=0)
    if groups:
        est.fit(X, y, sensitive_features=g)
    else:
        est.fit(X, y)
    return capsys.readouterr().out, est


@pytest.mark.parametrize("make, classification, groups", ESTIMATORS)
def test_verbose_prints_phases_and_only_public_values(
    make, classification, groups, capsys
):
    a, b = _neighbours(classification)
    quiet, est0 = _fit(make, 0, a, groups, capsys)
    assert quiet == ""
    out_a, est_a = _fit(make, 2, a, groups, capsys)
    out_b, _ = _fit(make, 2, b, groups, capsys)
    name = type(est_a).__name__
    assert f"[{name}] fit on 300 records" in out_a
    assert "plan: " in out_a and "done: privacy_spent_=" in out_a
    # Neighbouring datasets print the same text: nothing data-dependent.
    assert out_a == out_b
    # verbose changes nothing else (same random stream, same model)
    for attr in ("coef_", "best_index_"):
        if hasattr(est0, attr):
            np.testing.assert_array_equal(getattr(est0, attr), getattr(est_a, attr))


def test_search_trials_print_nothing(capsys):
    # The number of trials K is secret (Papernot and Steinke's bound needs
    # it hidden): a searched estimator's own ``verbose`` must not print one
    # block per trial. Its probes (one per candidate, public) stop at the plan.
    X, y, _ = _neighbours(False)[0]
    search = PrivateSearchCV(
        HeavyTailedLinearRegression(max_iter=5, verbose=1),
        param_grid={"max_iter": [3, 5]},
        mean_trials=3.0,
        epsilon=5.0,
        loss_bound=4.0,
        random_state=0,
    )
    search.fit(X, y)
    out = capsys.readouterr().out
    assert "[HeavyTailedLinearRegression] done" not in out
