"""Robustness matrix: every public estimator against bad and unusual input.

Each input either gets a clear error *before any privacy is spent* or a
documented, correct behaviour. "Before any privacy is spent" is checked with a
shared accountant: estimators call ``accountant.spend`` after validating input
and before drawing any noise, so an empty ledger after the error shows that no
noise was drawn.
"""

import pickle

import numpy as np
import pytest
from scipy import sparse
from sklearn.base import clone, is_classifier
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.utils._param_validation import InvalidParameterError

from skdp import BudgetExceededError, PrivacyAccountant
from skdp._testing.estimator_checks import public_estimators
from skdp.privacy import ComposedDpEvent, certify_epsilon

ESTIMATORS = public_estimators()
IDS = [type(e).__name__ for e in ESTIMATORS]

# Parameter sets whose public bounds contradict each other, per estimator.
INCONSISTENT_BOUNDS = {
    "BilevelRidge": [{"alpha_min": 10.0, "alpha_max": 1.0}],
}


def _data(estimator, n=80, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    if is_classifier(estimator):
        y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    else:
        y = X @ np.arange(1.0, d + 1) / d + 0.3 * rng.normal(size=n)
    return X, y


def _fresh(estimator, **params):
    est = clone(estimator).set_params(random_state=0, **params)
    return est


def _assert_refused_before_spending(estimator, X, y, exc=(ValueError, TypeError)):
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    est = _fresh(estimator, accountant=acc)
    with pytest.raises(exc) as info:
        est.fit(X, y)
    assert len(acc.ledger) == 0, "privacy was spent before the input error"
    assert str(info.value), "the error needs a message"
    return info.value


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_are_refused_before_noise(estimator, bad):
    X, y = _data(estimator)
    X[3, 1] = bad
    err = _assert_refused_before_spending(estimator, X, y, ValueError)
    assert "NaN" in str(err) or "infinity" in str(err) or "inf" in str(err)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_nan_target_is_refused(estimator):
    X, y = _data(estimator)
    y = y.astype(float)
    y[2] = np.nan
    _assert_refused_before_spending(estimator, X, y, ValueError)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_huge_values_are_clipped_not_refused(estimator):
    X, y = _data(estimator)
    X[0] = 1e300
    X[1, 0] = -1e300
    if not is_classifier(estimator):
        y[2] = 1e300
    est = _fresh(estimator).fit(X, y)
    assert np.all(np.isfinite(est.coef_))
    assert np.all(np.isfinite(est.predict(_data(estimator, seed=1)[0])))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_string_and_object_columns_are_refused(estimator):
    X, y = _data(estimator)
    X_obj = X.astype(object)
    X_obj[0, 0] = "a"
    _assert_refused_before_spending(estimator, X_obj, y, ValueError)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_empty_input_is_refused(estimator):
    _assert_refused_before_spending(
        estimator, np.empty((0, 3)), np.empty(0), ValueError
    )


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_single_row(estimator):
    X, y = _data(estimator)
    X1, y1 = X[:1], y[:1]
    # Either a clear error before any spending (one row has one class; a
    # train/validation split needs two rows) or a fit with finite predictions.
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    try:
        est = _fresh(estimator, accountant=acc).fit(X1, y1)
    except ValueError as exc:
        assert len(acc.ledger) == 0 and str(exc)
        return
    assert not is_classifier(estimator), "a single row has a single class"
    assert np.all(np.isfinite(est.predict(X)))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_constant_feature(estimator):
    X, y = _data(estimator)
    X[:, 1] = 3.0
    est = _fresh(estimator).fit(X, y)
    assert np.all(np.isfinite(est.coef_))


@pytest.mark.parametrize(
    "estimator",
    [e for e in ESTIMATORS if is_classifier(e)],
    ids=[type(e).__name__ for e in ESTIMATORS if is_classifier(e)],
)
def test_single_class_is_refused(estimator):
    X, y = _data(estimator)
    err = _assert_refused_before_spending(estimator, X, np.ones_like(y), ValueError)
    assert "class" in str(err)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_wrong_number_of_features_at_predict(estimator):
    X, y = _data(estimator)
    est = _fresh(estimator).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_sparse_input_supported_or_clear_error(estimator):
    X, y = _data(estimator)
    Xs = sparse.csr_matrix(X)
    try:
        est = _fresh(estimator).fit(Xs, y)
    except (TypeError, ValueError) as exc:
        assert "sparse" in str(exc).lower()
        return
    dense = _fresh(estimator).fit(X, y)
    np.testing.assert_allclose(est.predict(Xs), dense.predict(X))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_float32_and_lists(estimator):
    X, y = _data(estimator)
    ref = _fresh(estimator).fit(X, y)
    # float32 rows are other data: one stream for both via fresh ledgers
    # (a ledger-less seeded stream mixes in the data, issue 32)
    ref64, est32 = (
        _fresh(estimator)
        .set_params(accountant=PrivacyAccountant(np.inf, 0.5))
        .fit(rows, y)
        for rows in (X, X.astype(np.float32))
    )
    np.testing.assert_allclose(est32.coef_, ref64.coef_, rtol=1e-4, atol=1e-5)
    est_list = _fresh(estimator).fit(X.tolist(), y.tolist())
    np.testing.assert_allclose(est_list.predict(X.tolist()), ref.predict(X))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_pandas_dataframe_sets_feature_names(estimator):
    pd = pytest.importorskip("pandas")
    X, y = _data(estimator)
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    est = _fresh(estimator).fit(df, pd.Series(y))
    assert list(est.feature_names_in_) == ["age", "income", "score"]
    np.testing.assert_allclose(est.predict(df), _fresh(estimator).fit(X, y).predict(X))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize(
    "params",
    [
        {"epsilon": 0.0},
        {"epsilon": -1.0},
        {"epsilon": np.nan},
        {"delta": 1.0},
        {"delta": -1e-6},
        {"delta": 2.0},
    ],
    ids=["eps0", "eps-neg", "eps-nan", "delta1", "delta-neg", "delta2"],
)
def test_invalid_privacy_parameters(estimator, params):
    X, y = _data(estimator)
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    with pytest.raises(InvalidParameterError):
        _fresh(estimator, accountant=acc, **params).fit(X, y)
    assert len(acc.ledger) == 0


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_inconsistent_bounds_are_refused(estimator):
    cases = INCONSISTENT_BOUNDS.get(type(estimator).__name__)
    if not cases:
        pytest.skip("no pair of bounds that can contradict each other")
    X, y = _data(estimator)
    for params in cases:
        acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
        with pytest.raises(ValueError):
            _fresh(estimator, accountant=acc, **params).fit(X, y)
        assert len(acc.ledger) == 0


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
@pytest.mark.parametrize("public", [False, True], ids=["", "public-bounds"])
def test_non_private_fit_is_refused_by_a_finite_budget(estimator, public):
    # Review finding: BilevelRidge(epsilon=inf) with public bounds planned no
    # noise at all, a zero-cost event that the ledger accepted for free.
    X, y = _data(estimator)
    params = {"epsilon": np.inf}
    if public and "target_bound" in estimator.get_params():
        params.update(feature_norm=5.0, target_bound=5.0)
    variants = [params]
    if "tuning" in estimator.get_params():
        variants.append({**params, "tuning": "risk_estimate"})
    for p in variants:
        acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
        est = _fresh(estimator, accountant=acc, **p)
        with pytest.raises(BudgetExceededError, match="not private"):
            est.fit(X, y)
        assert len(acc.ledger) == 0
    # An infinite budget accepts it.
    _fresh(estimator, accountant=PrivacyAccountant(np.inf, 1e-5), **params).fit(X, y)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_refused_refit_leaves_the_estimator_unfitted(estimator):
    # Review finding: a refit refused by the budget kept the old coef_ next
    # to the new input's n_features_in_, and predict failed on both inputs.
    from sklearn.exceptions import NotFittedError

    X, y = _data(estimator)
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    est = _fresh(estimator, accountant=acc, epsilon=0.9, delta=1e-6).fit(X, y)
    X5, y5 = _data(estimator, d=5, seed=1)
    # A pickled copy of a fitted estimator cannot spend from its ledger copy.
    loaded = pickle.loads(pickle.dumps(est))
    with pytest.raises(RuntimeError, match="pickled copy"):
        loaded.fit(X5, y5)
    with pytest.raises(NotFittedError):
        loaded.predict(X5)
    with pytest.raises(BudgetExceededError):
        est.fit(X5, y5)
    with pytest.raises(NotFittedError):
        est.predict(X5)


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_sample_weight_is_rejected(estimator):
    X, y = _data(estimator)
    with pytest.raises(TypeError, match="sample_weight"):
        _fresh(estimator).fit(X, y, sample_weight=np.ones(len(y)))


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_pickle_round_trip_and_reproducibility(estimator):
    X, y = _data(estimator)
    est = _fresh(estimator).fit(X, y)
    again = _fresh(estimator).fit(X, y)
    np.testing.assert_array_equal(est.coef_, again.coef_)
    loaded = pickle.loads(pickle.dumps(est))
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    other_seed = clone(estimator).set_params(random_state=1).fit(X, y)
    assert not np.array_equal(other_seed.coef_, est.coef_)  # noise is real


@pytest.mark.parametrize("estimator", ESTIMATORS, ids=IDS)
def test_budget_exhaustion_in_cross_validation_grid_search_and_pipeline(estimator):
    X, y = _data(estimator, n=120)
    probe = PrivacyAccountant(epsilon=1e6, delta=0.5)
    _fresh(estimator, accountant=probe).fit(X, y)
    plan = probe.ledger[0][1]
    delta = 1e-3
    eps2 = certify_epsilon(ComposedDpEvent([plan] * 2), delta)
    eps3 = certify_epsilon(ComposedDpEvent([plan] * 3), delta)
    acc = PrivacyAccountant(epsilon=(eps2 + eps3) / 2, delta=delta)  # room for two fits
    est = _fresh(estimator, accountant=acc)
    with pytest.raises(BudgetExceededError):
        cross_val_score(est, X, y, cv=5, error_score="raise")
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon <= acc.epsilon
    # The exhausted budget also stops a grid search inside a pipeline.
    name = type(estimator).__name__.lower()
    pipe = make_pipeline(FunctionTransformer(), est)
    grid = GridSearchCV(
        pipe, {f"{name}__random_state": [0, 1]}, cv=2, error_score="raise"
    )
    with pytest.raises(BudgetExceededError):
        grid.fit(X, y)
    assert len(acc.ledger) == 2


def _one_hot(n, rng):
    """Three one-hot blocks: every row norm is exactly sqrt(3) (a tie)."""
    cats = rng.integers(0, 4, size=(n, 3))
    X = np.zeros((n, 12))
    for j in range(3):
        X[np.arange(n), 4 * j + cats[:, j]] = 1.0
    return X, cats


@pytest.mark.parametrize("name", ["BilevelRidge", "MinimaxFairClassifier"])
def test_private_feature_norm_of_tied_rows(name):
    # Equal row norms have no length between sorted values; the private
    # quantile must still find them (it was orders of magnitude off).
    estimator = next(e for e in ESTIMATORS if type(e).__name__ == name)
    rng = np.random.default_rng(0)
    X, cats = _one_hot(3000, rng)
    score = X @ rng.normal(size=12)
    y = score if name == "BilevelRidge" else (score > np.median(score)).astype(int)
    kwargs = {"sensitive_features": cats[:, 0]} if name.startswith("Minimax") else {}
    norms = []
    for seed in range(5):
        est = clone(estimator).set_params(epsilon=1.0, random_state=seed)
        if name == "BilevelRidge":
            est.set_params(feature_norm=None, target_bound=None)
            # the sufficient statistics estimate the feature norm privately
            est.set_params(inner_solver="sufficient_statistics")
        else:
            est.set_params(feature_norm=None)
        norms.append(est.fit(X, y, **kwargs).feature_norm_)
    np.testing.assert_allclose(norms, np.sqrt(3.0), rtol=0.02)


def test_too_small_n_epsilon_for_private_bounds_warns():
    from skdp import BilevelRidge

    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3))
    y = X @ np.ones(3)
    with pytest.warns(UserWarning, match="too few to estimate"):
        BilevelRidge(
            epsilon=1.0, inner_solver="sufficient_statistics", random_state=0
        ).fit(X, y)
