"""PrivateSearchCV: the noisy validation score, the search, the shared budget."""

import math
import warnings

import numpy as np
import pytest
from _toy_estimators import PrivateMean
from sklearn.base import clone
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV, PredefinedSplit
from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import (
    BilevelRidge,
    BudgetExceededError,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
    PrivacyAccountant,
    PrivacyLeakWarning,
)
from skdp._testing.estimator_checks import expected_failed_checks
from skdp.base import _fit_digest, _seeded_stream
from skdp.model_selection import PrivateSearchCV
from skdp.model_selection._scoring import clipped_losses, noisy_validation_loss
from skdp.utils._validation import check_generator


def _regression(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = np.clip(X @ np.array([0.5, -0.3, 0.2]) + 0.3 * rng.normal(size=n), -3, 3)
    return X, y


def _classification(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


# -- coupled runs: the clipped validation score ------------------------------------
@pytest.mark.parametrize("kind", ["regressor", "classifier"])
def test_coupled_validation_score_moves_by_its_sensitivity(kind):
    bound, n_val = 2.0, 50
    if kind == "regressor":
        X, y = _regression(200)
        model = LinearRegression().fit(X[:100], y[:100])
        Xv, yv = X[100:150].copy(), y[100:150].copy()
        Xv2, yv2 = Xv.copy(), yv.copy()
        yv[0] = model.predict(Xv[:1])[0]  # loss 0
        Xv2[0], yv2[0] = 1e6, -1e6  # loss clipped at the bound
    else:
        X, y = _classification(200)
        model = LogisticRegression().fit(X[:100], y[:100])
        Xv, yv = X[100:150].copy(), y[100:150].copy()
        Xv2, yv2 = Xv.copy(), yv.copy()
        Xv[0], yv[0] = [1e6, 0, 0], 1  # p(y) = 1: loss 0
        Xv2[0], yv2[0] = [1e6, 0, 0], 0  # p(y) = 0: loss clipped at the bound
    z = 3.0
    a = noisy_validation_loss(model, Xv, yv, bound, z, np.random.default_rng(7))
    b = noisy_validation_loss(model, Xv2, yv2, bound, z, np.random.default_rng(7))
    # Same random stream: the difference is the pre-noise statistic's.
    assert abs(a - b) <= bound / n_val * (1 + 1e-12)
    assert abs(a - b) >= 0.999 * bound / n_val
    # Every record's loss is in [0, bound], whatever the model outputs.
    assert np.all(clipped_losses(model, Xv2, yv2, bound) >= 0)
    assert np.all(clipped_losses(model, Xv2, yv2, bound) <= bound)


def test_non_finite_predictions_cost_the_bound_silently():
    X, y = _regression(100)
    model = LinearRegression().fit(X, y)
    model.coef_ = np.array([np.inf, 0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        losses = clipped_losses(model, X, y, 4.0)
    assert np.all(losses == 4.0)


# -- the search ------------------------------------------------------------------------
def test_search_is_one_accounted_release_with_private_results_only():
    X, y = _regression()
    search = PrivateSearchCV(
        HeavyTailedLinearRegression(feature_norm=3.0),
        param_grid={"max_iter": [5, 20], "step_size": [0.1, 0.5]},
        epsilon=1.0,
        delta=1e-5,
        random_state=0,
    ).fit(X, y)
    eps, delta = search.privacy_spent_
    assert eps <= 1.0 and eps >= 0.99 and delta == 1e-5
    assert search.trial_epsilon_ < 1.0
    # Only the released trial appears in cv_results_.
    res = search.cv_results_
    assert set(res) == {"params", "selected", "noisy_validation_loss"}
    assert res["selected"].sum() == 1
    assert np.isnan(res["noisy_validation_loss"][~res["selected"]]).all()
    assert res["params"][search.best_index_] == search.best_params_
    assert search.best_score_ == -res["noisy_validation_loss"][search.best_index_]
    assert search.best_estimator_.get_params()["epsilon"] == search.trial_epsilon_
    assert search.best_estimator_.accountant is None
    assert search.predict(X).shape == (len(X),)
    # Reproducible from random_state alone.
    again = clone(search).fit(X, y)
    assert again.best_score_ == search.best_score_
    np.testing.assert_array_equal(again.predict(X), search.predict(X))


def test_released_model_does_not_publish_the_search_seed():
    # The trial's generator (spawned from the search's) carries the root
    # entropy in its SeedSequence: publishing it lets anyone replay the whole
    # search, noise included, even with random_state=None.
    X, y = _regression(n=400)
    search = PrivateSearchCV(
        HeavyTailedLinearRegression(feature_norm=3.0),
        param_grid={"max_iter": [5, 20]},
        epsilon=1.0,
        mean_trials=3.0,
        trials_shape=1.0,
    ).fit(X, y)
    model = search.best_estimator_
    seeded = (np.random.Generator, np.random.BitGenerator, np.random.SeedSequence)
    held = list(model.get_params(deep=True).values()) + list(vars(model).values())
    assert not any(isinstance(v, seeded) for v in held)


@pytest.mark.parametrize("seed", range(3))
def test_bad_validation_rows_fail_before_any_charge(seed):
    # A NaN that lands in the validation part must fail like one in the
    # training part: before the plan is charged and before any trial (not
    # inside a trial, and not only when K >= 1).
    X, y = _regression(n=400)
    # The search's first draw is the split; its first 100 rows validate.
    val_row = check_generator(seed, stream=0).permutation(len(X))[0]
    X[val_row, 0] = np.nan
    acc = PrivacyAccountant(2.0, 1e-5)
    search = PrivateSearchCV(
        HeavyTailedLinearRegression(feature_norm=3.0),
        param_grid={"max_iter": [5, 20]},
        epsilon=1.0,
        mean_trials=1.0,
        accountant=acc,
        random_state=seed,
    )
    with pytest.raises(ValueError, match="NaN"):
        search.fit(X, y)
    assert acc.ledger == []


def test_epsilon_inf_selects_like_gridsearchcv_on_the_same_split():
    X, y = _regression()
    # at epsilon = inf every fit ends at its objective's minimum, so the grid
    # is over a parameter of the objective (the Huber threshold)
    base = HeavyTailedLinearRegression(loss="huber", feature_norm=3.0, max_iter=20)
    grid = {"tau": [0.05, 0.3, 1.0, 5.0]}
    search = PrivateSearchCV(
        base,
        param_grid=grid,
        epsilon=np.inf,
        mean_trials=60.0,
        trials_shape=np.inf,  # Poisson: about 60 trials, so every candidate runs
        loss_bound=4.0,
        random_state=3,
    ).fit(X, y)
    assert search.privacy_spent_[0] == np.inf
    # The same split, redrawn from the same generator: the search's seeded
    # stream (seed, class, parameters, data; issue 32).
    n_val = math.ceil(0.25 * len(X))
    stream = _seeded_stream(_fit_digest(search, [X, y]))
    perm = check_generator(3, stream=stream).permutation(len(X))
    fold = np.zeros(len(X), dtype=int)
    fold[np.sort(perm[n_val:])] = -1  # training rows
    gs = GridSearchCV(
        clone(base).set_params(epsilon=np.inf, random_state=0),
        grid,
        cv=PredefinedSplit(fold),
        scoring=lambda m, Xv, yv: -clipped_losses(m, Xv, yv, 4.0).mean(),
        refit=False,
    ).fit(X, y)
    assert search.best_params_ == gs.best_params_
    assert search.best_score_ == pytest.approx(gs.best_score_, rel=1e-9)


def test_shared_accountant_one_entry_and_refusal_before_any_trial():
    X, y = _regression()
    acc = PrivacyAccountant(epsilon=1.5, delta=1e-5)
    search = PrivateSearchCV(
        PrivateMean(),
        param_grid=[{}],
        epsilon=1.0,
        accountant=acc,
        random_state=0,
    ).fit(X, y)
    assert [label for label, _ in acc.ledger] == ["PrivateSearchCV"]
    assert search.delta_ <= acc.delta / 2
    assert acc.spent_epsilon <= 1.0 + 1e-9

    completed = []

    class CountingMean(PrivateMean):
        def fit(self, X, y):
            super().fit(X, y)
            completed.append(1)  # reached only after the plan was charged
            return self

    with pytest.raises(BudgetExceededError):
        PrivateSearchCV(
            CountingMean(), param_grid=[{}], epsilon=1.0, accountant=acc
        ).fit(X, y)
    assert completed == []
    assert len(acc.ledger) == 1


def test_reserved_and_invalid_candidates_fail_before_any_noise():
    X, y = _regression(100)
    with pytest.raises(ValueError, match="sets .*epsilon"):
        PrivateSearchCV(PrivateMean(), param_grid={"epsilon": [1.0, 2.0]}).fit(X, y)
    with pytest.raises(ValueError, match="exactly one"):
        PrivateSearchCV(PrivateMean()).fit(X, y)
    with pytest.raises(TypeError, match="needs an skdp private estimator"):
        PrivateSearchCV(LinearRegression(), param_grid=[{}]).fit(X, y)


def test_warnings_do_not_count_trials():
    X, y = _classification()
    caught = {}
    for mean in (5.0, 30.0):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            PrivateSearchCV(
                # n too small to estimate the scales: one warning per fit
                HeavyTailedLogisticRegression(feature_norm=3.0, max_iter=5),
                param_grid={"step_size": [0.1, 1.0]},
                mean_trials=mean,
                random_state=0,
            ).fit(X, y)
        caught[mean] = [str(x.message) for x in w]
    # The rule is public (n and the budget): emitted once, not once per trial.
    for mean in (5.0, 30.0):
        assert sum("too small" in m for m in caught[mean]) == 1
        assert len(caught[mean]) == len(set(caught[mean]))


def test_param_distributions_and_classifier_delegation():
    X, y = _classification()
    search = PrivateSearchCV(
        HeavyTailedLogisticRegression(feature_norm=3.0, classes=[0, 1]),
        param_distributions={"step_size": [0.05, 0.1, 0.5, 1.0], "max_iter": [5, 10]},
        n_candidates=3,
        epsilon=2.0,
        random_state=0,
    ).fit(X, y)
    assert len(search.cv_results_["params"]) == 3
    np.testing.assert_array_equal(search.classes_, [0, 1])
    assert search.predict_proba(X).shape == (len(X), 2)
    assert 0.0 <= search.score(X, y) <= 1.0


def test_sensitive_features_are_routed_to_the_trials():
    rng = np.random.default_rng(0)
    X, y = _classification(400)
    groups = rng.choice(["a", "b"], size=len(y))
    search = PrivateSearchCV(
        MinimaxFairClassifier(
            classes=[0, 1],
            groups=["a", "b"],
            feature_norm=3.0,
            sampling="disjoint",
        ),
        param_grid={"radius": [1.0, 5.0]},
        epsilon=2.0,
        mean_trials=2.0,
        trials_shape=1.0,
        random_state=0,
    ).fit(X, y, sensitive_features=groups)
    assert search.best_params_["radius"] in (1.0, 5.0)
    assert list(search.best_estimator_.groups_) == ["a", "b"]


def test_bilevel_ridge_grid_over_its_penalty():
    X, y = _regression(800)
    search = PrivateSearchCV(
        BilevelRidge(
            feature_norm=4.0, target_bound=3.0, inner_solver="sufficient_statistics"
        ),
        param_grid=[{"alpha_min": [a], "alpha_max": [a]} for a in (1.0, 10.0, 100.0)],
        epsilon=2.0,
        mean_trials=3.0,
        trials_shape=1.0,
        random_state=0,
    ).fit(X, y)
    assert search.privacy_spent_[0] <= 2.0
    assert search.best_estimator_.alpha_ == pytest.approx(
        search.best_params_["alpha_min"]
    )


def test_poisson_trials_may_release_nothing():
    X, y = _regression(100)
    search = PrivateSearchCV(
        PrivateMean(), param_grid=[{}], mean_trials=1.0, trials_shape=np.inf
    )
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        for seed in range(20):  # P(K = 0) = exp(-1) per fit
            search.set_params(random_state=seed).fit(X, y)
            if search.best_index_ is None:
                break
    assert search.best_index_ is None
    with pytest.raises(AttributeError, match="No model"):
        search.predict(X)


@parametrize_with_checks(
    [
        PrivateSearchCV(
            HeavyTailedLinearRegression(max_iter=5),
            param_grid={"step_size": [0.1, 0.5]},
            mean_trials=2.0,
            trials_shape=1.0,  # geometric: K >= 1, so a model is always released
        ),
        PrivateSearchCV(
            HeavyTailedLogisticRegression(max_iter=5),
            param_grid={"step_size": [0.1, 0.5]},
            mean_trials=2.0,
            trials_shape=1.0,  # geometric: K >= 1, so a model is always released
        ),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        check(estimator)
