"""Private shrinkage of the softmax fit toward private base rates
(skdp.solvers.calibration.private_softmax_shrinkage)."""

import math

import numpy as np
import pytest
from scipy.special import log_softmax
from sklearn.metrics import log_loss

from skdp import HeavyTailedLogisticRegression
from skdp.privacy import gdp_mu_of, verify
from skdp.solvers.calibration import (
    BRIER_BOUND,
    SHRINK_LEVELS,
    brier_sums,
    choose_shrinkage,
    private_softmax_shrinkage,
    shrinkage_event,
)

LEVELS = tuple(SHRINK_LEVELS) + (1.0,)


def _softmax_data(n, W, b, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, W.shape[0]))
    scores = X @ W + b
    p = np.exp(log_softmax(scores, axis=1))
    u = rng.random(n)[:, None]
    labels = (u > np.cumsum(p, axis=1)).sum(axis=1)
    return X, np.minimum(labels, W.shape[1] - 1)


def _proba(X, W, b, scale, shift):
    return np.exp(log_softmax(scale * (X @ W + b) + shift, axis=1))


def test_brier_sums_have_replace_one_sensitivity_2_sqrt_levels():
    """Coupled neighbours: replacing one record (extreme, non-finite or
    relabelled) moves the class counts by at most sqrt(2) and the Brier sums
    by at most 2 sqrt(len(levels))."""
    rng = np.random.default_rng(0)
    K = 4
    W, b = 3.0 * rng.normal(size=(3, K)), rng.normal(size=K)
    X = 2.0 * rng.normal(size=(200, 3))
    labels = rng.integers(0, K, 200)
    log_prior = np.log(np.full(K, 1.0 / K))
    cap = BRIER_BOUND
    base = brier_sums(X, labels, W, b, log_prior, LEVELS)
    counts = np.bincount(labels, minlength=K)
    worst_sums = worst_counts = 0.0
    rows = [np.array([1e300, -1e300, 0.0]), np.array([np.inf, 0, 0]), np.zeros(3)]
    for i in range(0, 200, 11):
        for row in rows + [10 * rng.normal(size=3)]:
            for label in range(K):
                X2, l2 = X.copy(), labels.copy()
                X2[i], l2[i] = row, label
                with np.errstate(all="ignore"):
                    sums = brier_sums(X2, l2, W, b, log_prior, LEVELS)
                worst_sums = max(worst_sums, float(np.linalg.norm(sums - base)))
                diff = np.bincount(l2, minlength=K) - counts
                worst_counts = max(worst_counts, float(np.linalg.norm(diff)))
    assert np.isfinite(base).all()
    assert worst_sums <= cap * math.sqrt(len(LEVELS)) + 1e-9
    assert worst_sums > 0.5 * cap * math.sqrt(len(LEVELS))  # the bound is nearly met
    assert worst_counts == pytest.approx(math.sqrt(2.0))


def test_pure_noise_scores_fall_back_to_the_constant_predictor():
    """Theory: scores unrelated to the labels; the shrinkage picks t = 0 and
    the model predicts the (private) base rates."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(20_000, 5))
    labels = rng.choice(3, size=20_000, p=[0.6, 0.3, 0.1])
    W = 4.0 * rng.normal(size=(5, 3))
    t, shift = private_softmax_shrinkage(X, labels, W, np.zeros(3), 3, 1.0, rng=rng)
    assert t == 0.0
    np.testing.assert_allclose(np.exp(shift), [0.6, 0.3, 0.1], atol=0.01)


def test_a_good_model_is_kept():
    """Theory: the true model at a large budget keeps t = 1 (median over draws),
    and never moves far in held-out log-loss."""
    rng = np.random.default_rng(2)
    W, b = rng.normal(size=(4, 3)), np.array([0.5, 0.0, -0.5])
    X, labels = _softmax_data(5_000, W, b, 3)
    Xt, lt = _softmax_data(50_000, W, b, 4)
    reference = log_loss(lt, _proba(Xt, W, b, 1.0, 0.0), labels=range(3))
    levels, ratios = [], []
    for seed in range(10):
        t, shift = private_softmax_shrinkage(
            X, labels, W, b, 3, 5.0, rng=np.random.default_rng(seed)
        )
        levels.append(t)
        p = _proba(Xt, W, b, t, shift)
        ratios.append(log_loss(lt, p, labels=range(3)) / reference)
    assert np.median(levels) == 1.0
    assert max(ratios) < 1.03


def test_release_noise_matches_its_event():
    """The two releases are in the ledger with the event's multipliers and
    sensitivities; the event's GDP budget is the one given."""
    from skdp.privacy import recording

    rng = np.random.default_rng(5)
    X, labels = _softmax_data(1_000, rng.normal(size=(2, 3)), np.zeros(3), 6)
    with recording() as ledger:
        private_softmax_shrinkage(
            X, labels, np.zeros((2, 3)), np.zeros(3), 3, 0.7, rng=rng
        )
    counts, sums = ledger.entries
    z_counts, z_sums = (e.noise_multiplier for e in shrinkage_event(0.7).events)
    assert counts.label == "class counts" and sums.label == "shrinkage losses"
    assert counts.sensitivity == pytest.approx(math.sqrt(2.0))
    assert counts.scale == pytest.approx(z_counts * math.sqrt(2.0))
    assert sums.sensitivity == pytest.approx(2.0 * math.sqrt(len(LEVELS)))
    assert sums.scale == pytest.approx(z_sums * sums.sensitivity)
    assert gdp_mu_of(shrinkage_event(0.7)) == pytest.approx(0.7)


def test_choice_is_the_lowest_sum():
    assert choose_shrinkage(np.array([3.0, 2.0, 1.0, 4.0, 5.0, 6.0])) == 0.25
    assert choose_shrinkage(np.array([3.0, 2.0, 1.0, 4.0, 5.0, 0.0])) == 1.0


def _three_classes(n, seed, noise_features=0):
    W = np.zeros((2 + noise_features, 3))
    W[0] = [1.5, 0.0, -1.5]
    return _softmax_data(n, W, np.array([1.0, 0.0, -1.0]), seed)


def test_estimator_spends_the_target_and_its_ledger_verifies():
    X, labels = _three_classes(3_000, 7)
    for share in (0.0, 0.1, 0.5):
        clf = HeavyTailedLogisticRegression(
            classes=[0, 1, 2], epsilon=1.0, delta=1e-6, calibration_share=share,
            random_state=0,
        ).fit(X, labels)  # fmt: skip
        eps, delta = clf.privacy_spent_
        assert eps <= 1.0 and eps == pytest.approx(1.0, rel=1e-4)
        assert verify(clf.privacy_ledger_, delta) == pytest.approx(eps, rel=1e-6)
        labels_drawn = {e.label for e in clf.privacy_ledger_.entries}
        assert ("shrinkage losses" in labels_drawn) == (share > 0)
        if share:
            scale, shift = clf.logit_calibration_
            assert scale in LEVELS and shift.shape == (3,)
        else:
            assert clf.logit_calibration_ is None


def test_nothing_is_spent_where_it_does_not_apply():
    X, labels = _three_classes(2_000, 8)
    for params in (
        {"epsilon": np.inf},
        {"fit_intercept": False},
        {"multi_class": "ovr"},
    ):
        clf = HeavyTailedLogisticRegression(
            classes=[0, 1, 2], random_state=0, **params
        ).fit(X, labels)
        assert clf.logit_calibration_ is None
        assert "shrinkage losses" not in {e.label for e in clf.privacy_ledger_.entries}


def test_the_shrunk_model_is_the_fit_scaled_and_shifted():
    """Post-processing of the released coefficients: scale * scores + shift,
    also with centring (the uncentred coefficients carry it)."""
    X, labels = _three_classes(3_000, 9)
    X = X + 2.0
    kw = dict(classes=[0, 1, 2], epsilon=0.5, random_state=0, feature_norm=8.0)
    fitted = HeavyTailedLogisticRegression(center=True, **kw).fit(X, labels)
    plain = HeavyTailedLogisticRegression(center=True, calibration_share=0.0, **kw).fit(
        X, labels
    )
    scale, shift = fitted.logit_calibration_
    assert np.isfinite(fitted.decision_function(X)).all()
    proba = fitted.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert plain.logit_calibration_ is None
    assert 0.0 <= scale <= 1.0


def test_a_share_that_leaves_nothing_for_the_fit_is_refused_before_spending():
    X, labels = _three_classes(500, 10)
    clf = HeavyTailedLogisticRegression(
        classes=[0, 1, 2], center=True, feature_norm=5.0, calibration_share=0.96
    )
    with pytest.raises(ValueError, match="calibration_share=0.96 leaves nothing"):
        clf.fit(X, labels)
    assert not hasattr(clf, "privacy_spent_")


def test_shrinkage_beats_the_constant_predictor_where_the_fit_loses_to_it():
    """Theory on synthetic data: three classes, 150 noise features, small n
    and epsilon: the noisy softmax fit loses to the constant predictor by 4-9
    times its log-loss; the shrunk one comes back to within 15% of it (the
    private prior is off by about 0.1 per class at n = 800 and epsilon = 0.5,
    and the Brier sums tell the levels t <= 1/8 apart only through noise)."""
    ratios = {0.0: [], 0.1: []}
    for seed in range(5):
        X, labels = _three_classes(800, 100 + seed, noise_features=150)
        Xt, lt = _three_classes(20_000, 200 + seed, noise_features=150)
        prior = np.bincount(labels, minlength=3) / len(labels)
        base = log_loss(lt, np.tile(prior, (len(lt), 1)), labels=range(3))
        for share in ratios:
            clf = HeavyTailedLogisticRegression(
                classes=[0, 1, 2], epsilon=0.5, calibration_share=share,
                random_state=seed,
            ).fit(X, labels)  # fmt: skip
            p = clf.predict_proba(Xt)
            ratios[share].append(log_loss(lt, p, labels=range(3)) / base)
    assert np.median(ratios[0.0]) > 3.0
    assert np.median(ratios[0.1]) < 1.05 and max(ratios[0.1]) < 1.15
