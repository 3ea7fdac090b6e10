"""Private Platt scaling of the binary logistic fit (skdp.solvers.calibration)."""

import math

import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.special import expit, logit
from sklearn.metrics import log_loss

from skdp import HeavyTailedLogisticRegression
from skdp.privacy import gdp_mu_of
from skdp.solvers.calibration import (
    LOGIT_EDGES,
    calibrate_from_counts,
    calibration_event,
    logit_cell_counts,
    private_logit_calibration,
)


def _logistic_data(n, coef, intercept, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, len(coef)))
    y = (X @ coef + intercept + rng.logistic(size=n) > 0).astype(int)
    return X, y


def test_exact_counts_recover_a_platt_scaling():
    """Theory: logits 3x too large and shifted are mapped back to the truth."""
    coef, b = np.array([1.0, -0.5]), -1.0
    X, y = _logistic_data(200_000, coef, b, 0)
    counts = logit_cell_counts(X, y, 3.0 * coef, 3.0 * b + 1.0)
    scale, shift = calibrate_from_counts(counts, 0.0)
    # the calibrated logit is scale * (3 z + 1) + shift with z the true logit
    assert scale * 3.0 == pytest.approx(1.0, abs=0.03)
    assert scale * 1.0 + shift == pytest.approx(0.0, abs=0.03)


def test_noise_only_coefficients_fall_back_to_the_base_rate():
    """Coefficients unrelated to y: the scale goes to 0, the shift to the base rate."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(50_000, 20))
    y = (rng.random(50_000) < 0.07).astype(int)
    noise_coef = rng.normal(size=20)
    scale, shift = private_logit_calibration(X, y, noise_coef, 0.0, 1.0, rng=rng)
    assert scale < 0.05
    assert expit(shift) == pytest.approx(0.07, abs=0.01)


def test_a_calibrated_model_is_kept_or_barely_moved():
    """With noisy counts a model at its optimum stays (nearly) as it was:
    held-out log-loss within 1% of the model's at the median over draws
    (the binned fit moves it a little even without noise: a bin's rows are
    not all at its centre)."""
    coef, b = np.array([1.0, -0.5]), -1.0
    X, y = _logistic_data(5_000, coef, b, 2)
    Xt, yt = _logistic_data(50_000, coef, b, 3)
    z = Xt @ coef + b
    reference = log_loss(yt, expit(z))
    ratios = []
    for seed in range(20):
        scale, shift = private_logit_calibration(
            X, y, coef, b, 5.0, rng=np.random.default_rng(seed)
        )
        ratios.append(log_loss(yt, expit(scale * z + shift)) / reference)
    assert np.median(ratios) < 1.01 and max(ratios) < 1.03


def test_cell_counts_have_replace_one_l2_sensitivity_sqrt2():
    """Coupled neighbours: replacing one record changes the counts by at most sqrt(2)."""
    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 3)) * 4
    y = rng.integers(0, 2, 300)
    coef = np.array([2.0, -1.0, 0.5])
    base = logit_cell_counts(X, y, coef, 0.3)
    worst = 0.0
    extremes = [np.array([1e6, 0, 0]), np.array([-1e6, 0, 0]), np.zeros(3)]
    for i in range(0, 300, 7):
        for row in extremes + [rng.normal(size=3) * 10]:
            for label in (0, 1):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                diff = logit_cell_counts(X2, y2, coef, 0.3) - base
                worst = max(worst, float(np.linalg.norm(diff)))
    assert worst == pytest.approx(math.sqrt(2.0))
    assert base.sum() == 300 and base.size == 2 * (len(LOGIT_EDGES) + 1)


def test_release_noise_matches_its_event(monkeypatch):
    """The histogram is drawn with standard deviation z sqrt(2) (sensitivity
    sqrt(2) times the multiplier of the event the fit composes), and the fit's
    spent epsilon is that of the composed plan including it."""
    import skdp.solvers.calibration as calibration

    drawn = []
    original = calibration.gaussian_mechanism

    def spy(value, sensitivity, noise_multiplier, *, rng, **ledger):
        drawn.append((sensitivity, noise_multiplier))
        return original(value, sensitivity, noise_multiplier, rng=rng, **ledger)

    monkeypatch.setattr(calibration, "gaussian_mechanism", spy)
    X, y = _logistic_data(2_000, np.array([1.0, 0.0]), -2.0, 8)
    rng = np.random.default_rng(0)
    private_logit_calibration(X, y, np.array([1.0, 0.0]), -2.0, 3.0, rng=rng)
    assert drawn == [(math.sqrt(2.0), 3.0)]
    assert gdp_mu_of(calibration_event(3.0)) == pytest.approx(1 / 3.0)


def test_event_is_one_gaussian_histogram():
    event = calibration_event(4.0)
    assert isinstance(event, dp_event.GaussianDpEvent)
    assert gdp_mu_of(event) == pytest.approx(0.25)


def test_estimator_spends_the_target_with_calibration():
    X, y = _logistic_data(3_000, np.array([1.0, 0.0, 0.0]), -2.0, 5)
    for share in (0.0, 0.1, 0.5):
        clf = HeavyTailedLogisticRegression(
            classes=[0, 1], epsilon=1.0, delta=1e-6, calibration_share=share,
            random_state=0,
        ).fit(X, y)  # fmt: skip
        eps, delta = clf.privacy_spent_
        assert eps == pytest.approx(1.0, rel=1e-6) and eps <= 1.0
        assert (clf.logit_calibration_ is None) == (share == 0.0)


def test_no_effect_without_noise_or_with_one_vs_rest():
    X, y = _logistic_data(2_000, np.array([1.0, -1.0]), -1.0, 6)
    fits = [
        HeavyTailedLogisticRegression(
            classes=[0, 1], epsilon=np.inf, calibration_share=share, random_state=0
        ).fit(X, y)
        for share in (0.0, 0.3)
    ]
    np.testing.assert_array_equal(fits[0].coef_, fits[1].coef_)
    assert fits[1].logit_calibration_ is None
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    # (the softmax fit has its own recalibration: tests/test_softmax_shrinkage.py)
    for params in ({"multi_class": "ovr", "solver": "onepass"},):
        clf = HeavyTailedLogisticRegression(
            classes=[0, 1, 2], random_state=0, **params
        ).fit(X, y3)
        assert clf.logit_calibration_ is None
    clf = HeavyTailedLogisticRegression(
        classes=[0, 1], fit_intercept=False, random_state=0
    ).fit(X, y)
    assert clf.logit_calibration_ is None


def test_calibration_applies_to_the_raw_rows_with_centring_and_sparse_input():
    """The scale and shift act on the logits of the rows as predicted: with
    center=True the uncentred coefficients carry them, and sparse input gives
    the dense result."""
    import scipy.sparse as sparse

    X, y = _logistic_data(4_000, np.array([2.0, -1.0, 0.0]), -2.5, 9)
    X = X + 3.0  # an offset that centring removes
    kw = dict(classes=[0, 1], epsilon=0.5, random_state=0, feature_norm=10.0)
    clf = HeavyTailedLogisticRegression(center=True, **kw).fit(X, y)
    scale, shift = clf.logit_calibration_
    assert 0.0 <= scale <= 4.0
    assert np.isfinite(clf.decision_function(X)).all()
    p = clf.predict_proba(X)[:, 1]
    assert abs(p.mean() - y.mean()) < 0.05  # calibrated in the large
    dense = HeavyTailedLogisticRegression(**kw).fit(X, y)
    sparse_fit = HeavyTailedLogisticRegression(**kw).fit(sparse.csr_matrix(X), y)
    assert dense.logit_calibration_ == pytest.approx(sparse_fit.logit_calibration_)
    np.testing.assert_allclose(dense.coef_, sparse_fit.coef_, rtol=1e-9, atol=1e-12)


def test_a_share_that_leaves_nothing_for_the_fit_is_refused_before_spending():
    X, y = _logistic_data(500, np.array([1.0]), 0.0, 10)
    clf = HeavyTailedLogisticRegression(
        classes=[0, 1], center=True, feature_norm=5.0, calibration_share=0.96
    )
    with pytest.raises(ValueError, match="calibration_share=0.96 leaves nothing"):
        clf.fit(X, y)
    assert not hasattr(clf, "privacy_spent_")


def test_calibration_beats_the_base_rate_on_rare_positives():
    """Theory on synthetic data: many noise features, rare positives, small
    epsilon. Without calibration the noisy logits lose to the base rate; with
    it the model is at most a little worse than the base rate and better
    than the uncalibrated fit (medians over seeds)."""
    rng = np.random.default_rng(7)
    coef = np.zeros(150)
    coef[0] = 1.0
    ratios = {0.0: [], 0.1: []}
    for seed in range(5):
        X, y = _logistic_data(3_000, coef, -2.5, 100 + seed)
        Xt, yt = _logistic_data(20_000, coef, -2.5, 200 + seed)
        base = log_loss(yt, np.full(len(yt), y.mean()))
        for share in ratios:
            clf = HeavyTailedLogisticRegression(
                classes=[0, 1], epsilon=0.5, calibration_share=share,
                random_state=int(rng.integers(1 << 30)),
            ).fit(X, y)  # fmt: skip
            ratios[share].append(log_loss(yt, clf.predict_proba(Xt)[:, 1]) / base)
    uncalibrated, calibrated = np.median(ratios[0.0]), np.median(ratios[0.1])
    assert uncalibrated > 1.1
    assert calibrated < 1.03
    assert logit(np.clip(np.mean(y), 1e-6, 1)) < 0  # rare positive class indeed
