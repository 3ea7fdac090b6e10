"""Cross-validation folds without an accountant draw independent noise (issue 15, finding 4).

``clone`` copies ``random_state``, so with an integer seed and no accountant
every fold of ``cross_val_score`` used to draw the same noise: differences of
fold models were exact differences of clipped statistics. Every seeded fit
without an accountant now derives its stream from the seed, its class, its
parameters and a digest of its data (issue 32: computed inside the fit and
never stored): folds and candidates draw independent noise, and the same
fit repeated (a clone refitted like its parent) gives the same model
(scikit-learn's checks).
"""

import numpy as np
import pytest
from _toy_estimators import PrivateMean
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, KFold, cross_val_score, cross_validate

from skdp import HeavyTailedLinearRegression
from skdp.utils import clip_rows

N = 300


def _data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(N, 3)) + 2.0
    return X, X @ [1.0, -1.0, 0.5] + rng.normal(size=N)


def _folds():
    return KFold(3)  # no shuffle: the training sets are known


def _center_noise(model):
    """Noise of each fold's private centre: release minus the clipped mean."""
    X, y = _data()
    res = cross_validate(model, X, y, cv=_folds(), return_estimator=True)
    out = []
    for est, (train, _) in zip(res["estimator"], _folds().split(X)):
        exact = clip_rows(X[train], est.feature_norm).mean(axis=0)
        out.append(est.center_ - exact)
    return out


@pytest.mark.parametrize(
    "seed", [0, np.random.RandomState(0), np.random.default_rng(0)], ids=str
)
def test_cross_validation_folds_do_not_share_noise(seed):
    model = HeavyTailedLinearRegression(
        center=True, feature_norm=6.0, max_iter=3, random_state=seed
    )
    noise = _center_noise(model)
    for i in range(3):
        for j in range(i):
            assert not np.allclose(noise[i], noise[j], rtol=0, atol=1e-12)


def test_cross_validation_stays_reproducible():
    def run():
        model = HeavyTailedLinearRegression(
            center=True, feature_norm=6.0, max_iter=3, random_state=7
        )
        return np.array(_center_noise(model))

    np.testing.assert_array_equal(run(), run())


def test_candidates_differ_and_identical_fits_agree():
    # All folds see the same data here (a "CV" whose splits repeat the whole
    # set). Identical fits (same data, same parameters) agree: the second
    # release repeats the first and tells nothing more.
    X, y = _data()
    y = np.clip(y / 10, -1, 1)
    splits = [(np.arange(N), np.arange(N))] * 4
    model = PrivateMean(epsilon=1.0, delta=1e-6, random_state=0)
    scores = cross_val_score(model, X, y, cv=splits)
    assert len(set(scores.tolist())) == 1
    # different candidates (parameters) on the same data draw other noise ...
    search = GridSearchCV(model, {"delta": [1e-6, 2e-6, 3e-6]}, cv=splits)
    search.fit(X, y)
    assert len(set(search.cv_results_["split0_test_score"].tolist())) == 3
    # ... and so do different folds of the same candidate
    scores = cross_val_score(model, X, y, cv=KFold(4))
    assert len(set(scores.tolist())) == 4


def test_the_same_fit_gives_the_same_model_and_another_fit_other_noise():
    # The stream is a function of (seed, class, parameters, data): a clone,
    # its parent and a fresh object with the same seed fitted on the same
    # data agree (a repeated release tells nothing new); one record more or
    # less gives other noise.
    X, y = _data()
    y = np.clip(y / 10, -1, 1)
    model = PrivateMean(epsilon=1.0, delta=1e-6, random_state=0)
    first, second = clone(model).fit(X, y).mean_, clone(model).fit(X, y).mean_
    assert first == second == model.fit(X, y).mean_
    assert clone(model).set_params(random_state=0).fit(X, y).mean_ == first
    assert clone(model).fit(X[:-1], y[:-1]).mean_ != first
    # refitting one object repeats its own stream
    c = clone(model)
    assert c.fit(X, y).mean_ == c.fit(X, y).mean_


def test_a_clone_refitted_like_its_fitted_parent_repeats_it():
    # scikit-learn's checks compare clone(fitted).fit(X) with fitted.fit(X).
    X, y = _data()
    y = np.clip(y / 10, -1, 1)
    model = PrivateMean(epsilon=1.0, delta=1e-6, random_state=0).fit(X, y)
    assert clone(model).fit(X, y).mean_ == model.mean_
    assert clone(model).fit(X[1:], y[1:]).mean_ == model.fit(X[1:], y[1:]).mean_
    assert model.mean_ != clone(model).fit(X, y).mean_


def test_another_seed_gives_other_noise():
    X, y = _data()
    y = np.clip(y / 10, -1, 1)
    means = {
        PrivateMean(epsilon=1.0, delta=1e-6, random_state=s).fit(X, y).mean_
        for s in range(5)
    }
    assert len(means) == 5
