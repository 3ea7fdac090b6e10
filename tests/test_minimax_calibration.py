"""MinimaxFairClassifier: the private Platt scaling of two-class fits and the
noisy binary clip of its descent-ascent schedule."""

import math

import numpy as np
import pytest
from sklearn.metrics import log_loss

import skdp.solvers.calibration as calibration
from skdp import MinimaxFairClassifier, PrivacyAccountant
from skdp.privacy import Budget, certify_epsilon, gdp_mu_of, verify
from skdp.solvers.calibration import calibration_event, logit_cell_counts
from skdp.solvers.saddle_point.plan import gda_plan, gda_schedule, plan_minimax


def _data(n, seed, intercept=-2.5, n_noise=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 2 + n_noise))
    g = rng.choice(["a", "b"], size=n, p=[0.7, 0.3])
    margin = X[:, 0] + np.where(g == "a", 0.3, -0.3) + intercept
    y = (margin + rng.logistic(size=n) > 0).astype(int)
    return X, y, g


@pytest.fixture
def drawn(monkeypatch):
    log = []
    original = calibration.gaussian_mechanism

    def spy(value, sensitivity, noise_multiplier, *, rng, **ledger):
        log.append((sensitivity, noise_multiplier, value.copy()))
        return original(value, sensitivity, noise_multiplier, rng=rng, **ledger)

    monkeypatch.setattr(calibration, "gaussian_mechanism", spy)
    return log


def test_histogram_is_drawn_at_the_planned_noise_and_composes_to_the_target(
    drawn, monkeypatch
):
    """One histogram of sensitivity sqrt(2) at the plan's multiplier, whose GDP
    share is calibration_share of mu**2; the charged event is the plan's and
    spends the target. The counts are those of the solver's logits on the
    clipped rows it was fitted on, and the refit reads the noisy counts."""
    refit_inputs = []
    original_refit = calibration.calibrate_from_counts

    def refit(counts, noise_std, *args, **kwargs):
        refit_inputs.append((counts.copy(), noise_std))
        return original_refit(counts, noise_std, *args, **kwargs)

    monkeypatch.setattr(calibration, "calibrate_from_counts", refit)
    X, y, g = _data(3_000, 0)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    kw = dict(epsilon=1.0, delta=1e-6, classes=[0, 1], groups=["a", "b"])
    clf = MinimaxFairClassifier(accountant=acc, random_state=0, **kw)
    clf.fit(X, y, sensitive_features=g)
    plan = clf._plan(3_000, 2, 2, 2, 1e-6, True)
    z_c = plan.calibration_noise_multiplier
    assert len(drawn) == 1 and drawn[0][:2] == (math.sqrt(2.0), z_c)
    mu = Budget.from_target(1.0, 1e-6, margin=False).mu
    assert gdp_mu_of(calibration_event(z_c)) ** 2 == pytest.approx(0.1 * mu**2)
    assert acc.ledger[-1][1] == plan.event
    eps = certify_epsilon(plan.event, 1e-6)
    assert clf.privacy_spent_[0] == pytest.approx(eps) and 0.99 < eps <= 1.0
    # exact counts: the solver's coefficients (intercept column of 1) on the
    # rows clipped to hypot(feature_norm_, 1)
    scale, shift = clf.logit_calibration_
    assert scale > 0
    coef = np.append(clf.coef_[0], clf.intercept_[0] - shift) / scale
    rows = np.column_stack([X, np.ones(len(X))])
    norms = np.linalg.norm(rows, axis=1)
    bound = math.hypot(clf.feature_norm_, 1.0)
    rows = rows * np.minimum(1.0, bound / norms)[:, None]
    exact = logit_cell_counts(rows, y, coef, 0.0)
    np.testing.assert_allclose(drawn[0][2], exact, atol=1e-6)
    assert exact.sum() == 3_000
    # the refit gets the noisy counts, with noise of standard deviation z_c sqrt(2)
    ((noisy, noise_std),) = refit_inputs
    assert noise_std == pytest.approx(z_c * math.sqrt(2.0))
    residual = noisy - exact
    assert np.all(residual != 0.0)
    assert 0.6 * noise_std < residual.std() < 1.5 * noise_std


def test_nothing_is_planned_or_drawn_where_it_does_not_apply(drawn):
    X, y, g = _data(1_500, 1)
    free = MinimaxFairClassifier(epsilon=np.inf, classes=[0, 1], random_state=0)
    free.fit(X, y)
    no_intercept = MinimaxFairClassifier(
        classes=[0, 1], fit_intercept=False, random_state=0
    ).fit(X, y)
    off = MinimaxFairClassifier(classes=[0, 1], calibration_share=0.0, random_state=0)
    off.fit(X, y)
    y3 = np.digitize(X[:, 0], [-0.5, 0.5])
    multi = MinimaxFairClassifier(
        classes=[0, 1, 2], calibration_share=0.0, random_state=0
    ).fit(X, y3)
    assert not drawn
    for clf in (free, no_intercept, off, multi):
        assert clf.logit_calibration_ is None
    # more classes: the shrinkage toward the base rates instead of the histogram
    shrunk = MinimaxFairClassifier(classes=[0, 1, 2], random_state=0).fit(X, y3)
    assert [round(d[0], 6) for d in drawn] == [
        round(math.sqrt(2.0), 6),
        round(2.0 * math.sqrt(6.0), 6),
    ]
    scale, shift = shrunk.logit_calibration_
    assert 0.0 <= scale <= 1.0 and np.shape(shift) == (3,)
    assert verify(shrunk.privacy_ledger_, shrunk.delta_) == pytest.approx(
        shrunk.privacy_spent_[0], rel=1e-6
    )
    # the plan of a fit without calibration is the plan with a zero share
    for n_classes in (2, 3):
        kw = dict(fit_intercept=False)
        plan = plan_minimax(
            1.0, 1e-6, 1_500, 2, 1, n_classes, calibration_share=0.1, **kw
        )
        assert plan.calibration_noise_multiplier == plan.shrinkage_mu == 0.0
        assert plan == plan_minimax(1.0, 1e-6, 1_500, 2, 1, n_classes, **kw)
    multi = plan_minimax(1.0, 1e-6, 1_500, 2, 1, 3, calibration_share=0.1)
    assert multi.calibration_noise_multiplier == 0.0
    assert multi.shrinkage_mu == pytest.approx(
        Budget.from_target(1.0, 1e-6, margin=False).share(0.1).mu
    )
    assert plan_minimax(np.inf, 1e-6, 1_500, 2, 1, 2, calibration_share=0.1) == (
        plan_minimax(np.inf, 1e-6, 1_500, 2, 1, 2)
    )


def test_a_share_that_leaves_nothing_for_the_solver_is_refused_before_spending():
    X, y, g = _data(500, 2)
    clf = MinimaxFairClassifier(
        classes=[0, 1], estimation_share=0.5, calibration_share=0.5, random_state=0
    )
    with pytest.raises(ValueError, match="calibration_share=0.5 leaves nothing"):
        clf.fit(X, y)
    assert not hasattr(clf, "privacy_spent_")


def test_calibrated_counts_have_replace_one_sensitivity_sqrt2_on_raw_rows():
    """Coupled neighbours: with the released model fixed, replacing one record
    (features, label and group; huge rows included) moves the counts by at
    most sqrt(2) in L2, whatever per-record map gives the logits (here the
    raw rows; the estimator counts its clipped rows)."""
    X, y, g = _data(400, 3)
    clf = MinimaxFairClassifier(classes=[0, 1], groups=["a", "b"], random_state=0)
    clf.fit(X, y, sensitive_features=g)
    coef, b = clf.coef_[0], clf.intercept_[0]
    base = logit_cell_counts(X, y, coef, b)
    worst = 0.0
    rows = [np.array([1e300, -1e300]), np.array([-1e12, 0.0]), np.zeros(2)]
    for i in range(0, 400, 13):
        for row in rows:
            for label in (0, 1):
                X2, y2 = X.copy(), y.copy()
                X2[i], y2[i] = row, label
                diff = logit_cell_counts(X2, y2, coef, b) - base
                worst = max(worst, float(np.linalg.norm(diff)))
    assert worst <= math.sqrt(2.0) + 1e-12
    assert worst == pytest.approx(math.sqrt(2.0))


def test_calibration_beats_the_uncalibrated_fit_on_rare_positives():
    """Theory on synthetic data: rare positives and 30 noise features at a
    small epsilon and n = 2000. The noisy logits lose to the base rate; the
    calibrated fit's held-out log-loss is near the base rate's and far below
    the uncalibrated fit's (medians over seeds)."""
    ratios = {0.0: [], 0.1: []}
    for seed in range(4):
        X, y, g = _data(2_000, 10 + seed, intercept=-3.0, n_noise=30)
        Xt, yt, _ = _data(20_000, 50 + seed, intercept=-3.0, n_noise=30)
        base = log_loss(yt, np.full(len(yt), y.mean()))
        for share in ratios:
            clf = MinimaxFairClassifier(
                epsilon=0.5, classes=[0, 1], groups=["a", "b"],
                calibration_share=share, random_state=seed,
            ).fit(X, y, sensitive_features=g)  # fmt: skip
            ratios[share].append(log_loss(yt, clf.predict_proba(Xt)[:, 1]) / base)
    # uncalibrated: 1.4 to 1.6 times the base rate's loss; calibrated: 1.00 to 1.05
    assert np.median(ratios[0.1]) < 0.8 * np.median(ratios[0.0])
    assert np.median(ratios[0.1]) < 1.05


def test_binary_clip_follows_the_noise():
    """The binary clip is 0.3 row bounds where the noise dominates a step
    (noise ratio r = z sqrt(p) / n at least 0.3), with the primal step over
    the same factor (the step's noise in w is unchanged); it moves to 1
    (never binds) as r falls to 0.05 and as z -> 0: without noise the fit is
    the exact objective."""
    assert gda_schedule(50.0)["clip_factor"] == pytest.approx(0.3)
    assert gda_schedule(0.0)["clip_factor"] == pytest.approx(1.0)
    assert gda_schedule(0.5)["clip_factor"] == pytest.approx(0.65)
    bound = 2.0

    def schedule(epsilon, n):
        return gda_plan(epsilon, 1e-6, [], 100, n_samples=n, n_params=3).schedule

    noisy, free = schedule(1.0, 200), schedule(np.inf, 200)
    z = noisy.noise_multiplier
    assert z * math.sqrt(3) / 200 > 0.3  # the noise dominates each step
    s_noisy, s_free = noisy.settings(bound, 1), free.settings(bound, 1)
    assert s_noisy["clip"] == pytest.approx(0.3 * bound)
    assert s_free["clip"] == pytest.approx(bound)
    # noise in w per step: step * z * 2 clip / n, as with the clip at one bound
    assert s_noisy["primal_step"] * s_noisy["clip"] == pytest.approx(
        noisy.step_scale * noisy.step_factor * 4.0 / bound
    )
    # the same budget on many rows: r <= 0.05, the clip never binds
    large = schedule(1.0, math.ceil(z * math.sqrt(3) / 0.05))
    assert large.clip_factor == pytest.approx(1.0)
    # in between, log-linear in r and monotone
    factors = [schedule(1.0, n).clip_factor for n in (300, 600, 1_200, 2_400)]
    assert all(0.3 < f < 1.0 for f in factors[1:-1])
    assert factors == sorted(factors)
