"""Heavy-tailed GLMs in the data's own units: private feature scale, guard."""

import math

import numpy as np
import pytest
from scipy.special import expit

from skdp import (
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    PrivacyAccountant,
)
from skdp.losses import SquaredLoss
from skdp.privacy import gdp_mu, gdp_mu_of
from skdp.solvers.heavy_tailed import known_lipschitz as kl
from skdp.solvers.heavy_tailed import onepass as onepass
from skdp.solvers.heavy_tailed.bounds import RANGE_STEPS
from skdp.solvers.heavy_tailed.gd import clipped_dp_gd, make_full_batch_plan
from skdp.solvers.heavy_tailed.localized import make_localized_plan
from skdp.solvers.heavy_tailed.units import feature_scale, private_design, row_rms

D = 5
W = np.linspace(-1.0, 1.0, D)


def _features(n, rng):
    return rng.standard_t(5, size=(n, D)) * math.sqrt(3 / 5)  # unit variance


def _linear(n, seed):
    rng = np.random.default_rng(seed)
    X = _features(n, rng)
    noise = np.exp(rng.normal(size=n)) - math.exp(0.5) + rng.standard_t(2.1, size=n)
    return X, X @ W + 1.0 + 0.5 * noise


def _linear_risk(model, a, c):
    # a model fitted on (a X, c y) is (coef a / c, b / c) on (X, y); Sigma = I
    coef = model.coef_ * a / c
    return float(np.sum((coef - W) ** 2) + (model.intercept_ / c - 1.0) ** 2)


def _binary(n, seed):
    rng = np.random.default_rng(seed)
    X = _features(n, rng)
    return X, (rng.random(n) < expit(X @ W - 0.5)).astype(int)


FRESH = _features(50_000, np.random.default_rng(99))
P_FRESH = expit(FRESH @ W - 0.5)


def _logistic_risk(model, a):
    z = FRESH @ (model.coef_.ravel() * a) + model.intercept_[0]
    risk = P_FRESH * np.logaddexp(0, -z) + (1 - P_FRESH) * np.logaddexp(0, z)
    z0 = FRESH @ W - 0.5
    best = P_FRESH * np.logaddexp(0, -z0) + (1 - P_FRESH) * np.logaddexp(0, z0)
    return float(np.mean(risk - best))


# -- the release --------------------------------------------------------------


@pytest.mark.parametrize(
    "replacement",
    [np.zeros(D), np.full(D, 1e300), np.eye(D)[0] * 1e-300, -1e6 * np.ones(D)],
    ids=["zeros", "huge", "tiny-one-hot", "negative"],
)
def test_feature_scale_counts_move_by_at_most_one(replacement):
    """Coupled run: every count the scale bisection can query (any threshold)
    differs by at most 1 between neighbouring datasets, the sensitivity its
    noise is calibrated to."""
    rng = np.random.default_rng(3)
    X = _features(500, rng)
    X_prime = X.copy()
    X_prime[17] = replacement
    rms, rms_prime = row_rms(X), row_rms(X_prime)
    thresholds = np.concatenate([[0.0, np.inf], np.logspace(-320, 308, 5000)])
    counts = (rms[:, None] <= thresholds).sum(axis=0)
    counts_prime = (rms_prime[:, None] <= thresholds).sum(axis=0)
    assert np.max(np.abs(counts - counts_prime)) <= 1
    assert np.max(np.abs(counts - counts_prime)) == 1  # the replacement is seen


def test_feature_scale_is_one_on_standardized_data_and_follows_the_units():
    rng = np.random.default_rng(0)
    X = _features(20_000, rng)
    rms = row_rms(X)
    s = feature_scale(rms, D, 0.0, rng)
    assert 0.85 <= s <= 1.15
    for a in (1e-3, 4.0, 1e4):
        # the same bisection on a shifted log scale: equal up to one bracket
        assert feature_scale(a * rms, D, 0.0, rng) / (a * s) == pytest.approx(
            1.0, abs=0.05
        )
    noisy = [feature_scale(rms, D, 50.0, rng) for _ in range(20)]
    assert max(abs(v / s - 1.0) for v in noisy) < 0.1  # the median is robust


def test_feature_scale_of_sparse_unit_columns_is_one():
    # one-hot blocks (8 of 80 columns active) have unit entries: s ~ 1, not
    # sqrt(8 / 80), which would make the default step 10x too large
    rng = np.random.default_rng(10)
    n, blocks, width = 5000, 8, 10
    X = np.zeros((n, blocks * width))
    X[
        np.arange(n)[:, None],
        np.arange(blocks) * width + rng.integers(width, size=(n, blocks)),
    ] = 1.0
    X[:50] = 0.0  # all-zero rows say nothing about the scale
    s = feature_scale(row_rms(X), X.shape[1], 0.0, rng)
    assert 0.9 <= s <= 1.1
    assert feature_scale(row_rms(3 * X), X.shape[1], 0.0, rng) == pytest.approx(
        3 * s, rel=0.05
    )


def test_private_design_intercept_column_and_back():
    rng = np.random.default_rng(1)
    X = 100.0 * _features(3000, rng)
    des = private_design(X, rng, z_scale=0.0, fit_intercept=True)
    assert des.scale == pytest.approx(100.0, rel=0.15)
    np.testing.assert_array_equal(des.X[:, -1], des.scale)
    np.testing.assert_allclose(des.row_norms, np.linalg.norm(des.X, axis=1))
    w = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 0.5])
    np.testing.assert_allclose(des.to_design(des.to_original(w)), w)
    assert des.to_original(w)[-1] == pytest.approx(0.5 * des.scale)
    one = private_design(X, rng, fit_intercept=True, scaled_intercept=False)
    assert one.scale == 1.0 and np.all(one.X[:, -1] == 1.0)  # nothing released
    assert private_design(X, rng).X.shape == X.shape


@pytest.mark.parametrize(
    "make, kwargs",
    [
        (kl.make_known_lipschitz_plan, dict(n_steps=30, n_scales=3)),
        (onepass.make_onepass_plan, dict(n_scales=2)),
        (make_localized_plan, dict(n_steps=20, n_scales=2)),
    ],
    ids=["known_lipschitz", "onepass", "localized"],
)
def test_plans_pay_for_the_feature_scale(make, kwargs):
    mu = gdp_mu(1.0, 1e-5)
    without = make(mu, 10_000, D + 1, **kwargs)
    with_scale = make(mu, 10_000, D + 1, feature_scale=True, **kwargs)
    assert with_scale.feature_scale and not without.feature_scale
    assert with_scale.n_scales == without.n_scales + 1
    assert gdp_mu_of(with_scale.event) == pytest.approx(mu)
    # every scale quantile gets the same share of the budget
    assert with_scale.z_scale == pytest.approx(without.z_scale)


def test_solver_draws_the_feature_scale_it_planned(monkeypatch):
    # the bounds' counts are drawn by the one private norm bound
    from skdp.privacy import _norm_bound as bounds

    calls = []
    real = bounds.gaussian_noise

    def record(rng, std, size=None, **ledger):
        calls.append((float(std), size))
        return real(rng, std, size, **ledger)

    monkeypatch.setattr(bounds, "gaussian_noise", record)
    X, y = _linear(3000, 2)
    needed = kl.known_lipschitz_scales(SquaredLoss(), math.inf, intercept=True)
    plan = kl.make_known_lipschitz_plan(
        gdp_mu(1.0, 1e-5), 3000, D + 1, 20, n_scales=needed, feature_scale=True
    )
    res = kl.known_lipschitz(
        100 * X,
        y,
        SquaredLoss(),
        plan,
        np.random.default_rng(3),
        step_size=1.0,
        fit_intercept=True,
    )
    scale_counts = [c for c in calls if c == (plan.z_scale, None)]
    assert len(scale_counts) == plan.n_scales * RANGE_STEPS == (needed + 1) * 10
    assert res.feature_scale == pytest.approx(100.0, rel=0.2)
    assert res.step_sizes[0] == pytest.approx(1.0 / res.feature_scale**2)
    # a plan whose quantiles do not include the feature scale is refused
    short = kl.make_known_lipschitz_plan(
        gdp_mu(1.0, 1e-5), 3000, D + 1, 20, n_scales=needed - 1, feature_scale=True
    )
    with pytest.raises(ValueError, match="does not pay"):
        kl.known_lipschitz(
            X,
            y,
            SquaredLoss(),
            short,
            np.random.default_rng(3),
            step_size=1.0,
            fit_intercept=True,
        )


def _same_stream():
    """A fresh unlimited ledger: its first fit draws from ``SeedSequence(seed, spawn_key=(0,))``.

    Coupled runs need the same noise on other data (or other parameters);
    without an accountant a seeded fit's stream mixes in its data and
    parameters (issue 32), so each side gets a fresh ledger instead.
    """
    return PrivacyAccountant(epsilon=np.inf, delta=0.5)


# -- the estimators in other units --------------------------------------------
LINEAR_UNITS = [(100.0, 0.01), (0.01, 100.0), (4.0, 4.0)]


@pytest.mark.parametrize("solver", ["known_lipschitz", "onepass", "localized"])
def test_linear_fit_is_unit_free(solver):
    X, y = _linear(8000, 4)
    ref = HeavyTailedLinearRegression(
        solver=solver, random_state=0, accountant=_same_stream()
    ).fit(X, y)
    base = _linear_risk(ref, 1.0, 1.0)
    assert 0.8 <= ref.feature_scale_ <= 1.2  # t(5): median norm a bit below
    for a, c in LINEAR_UNITS:
        m = HeavyTailedLinearRegression(
            solver=solver, random_state=0, accountant=_same_stream()
        ).fit(a * X, c * y)
        assert m.feature_scale_ == pytest.approx(a * ref.feature_scale_, rel=0.05)
        risk = _linear_risk(m, a, c)
        # same seed, same data in other units: the same fit up to the
        # rounding of the log-scale bisections (a 10x band would still catch
        # the divergence at a = 100 and the stall at a = 0.01 seen before)
        assert np.isfinite(risk) and 0.67 <= risk / base <= 1.5, (a, c, risk, base)


def test_logistic_fit_is_unit_free():
    X, y = _binary(8000, 5)
    ref = HeavyTailedLogisticRegression(
        random_state=0, classes=[0, 1], accountant=_same_stream()
    ).fit(X, y)
    base = _logistic_risk(ref, 1.0)
    for a in (0.01, 4.0, 100.0):
        m = HeavyTailedLogisticRegression(
            random_state=0, classes=[0, 1], accountant=_same_stream()
        ).fit(a * X, y)
        risk = _logistic_risk(m, a)
        assert np.isfinite(risk) and 0.67 <= risk / base <= 1.5, (a, risk, base)


def test_intercept_in_natural_units():
    # features x 100 and a large offset: the intercept column is s, so the
    # intercept converges as fast as the coefficients
    X, y = _linear(5000, 6)
    m = HeavyTailedLinearRegression(epsilon=1.0, random_state=0).fit(100 * X, y + 49.0)
    assert m.intercept_ == pytest.approx(50.0, rel=0.02)
    np.testing.assert_allclose(m.coef_ * 100, W, atol=0.1)


def test_a_given_step_size_is_used_as_is_and_releases_no_scale():
    X, y = _linear(3000, 7)
    m = HeavyTailedLinearRegression(step_size=0.3, epsilon=0.8, random_state=0)
    m.fit(X, y)
    assert m.feature_scale_ == 1.0 and m.step_sizes_[0] == 0.3
    assert 0.97 * 0.8 <= m.privacy_spent_[0] <= 0.8
    plan = m._make_plan(3000, D + 1, 1.0, SquaredLoss())
    default = HeavyTailedLinearRegression()._make_plan(3000, D + 1, 1.0, SquaredLoss())
    assert plan.n_scales + 1 == default.n_scales


# -- divergence guard -------------------------------------------------------------
@pytest.mark.parametrize("overshoot", [2.3, 20.0, 1e4])
def test_divergence_guard_catches_slow_and_fast_divergence(overshoot):
    # step = overshoot / L on a quadratic with L ~ 1: at 2.3 the gradient only
    # grows 1.3x per step, which a one-step 1.5x rule never sees
    rng = np.random.default_rng(8)
    X = rng.normal(size=(2000, 3))
    w = np.array([1.0, -1.0, 0.5])
    L = np.linalg.eigvalsh(X.T @ X / 2000).max()
    plan = make_full_batch_plan(np.inf, 2000, 3, 40)
    res = clipped_dp_gd(
        X, X @ w, SquaredLoss(), plan, rng, step_size=overshoot / L, clip=1e6
    )
    np.testing.assert_allclose(res.coef, w, atol=1e-3)
    assert res.step_sizes[-1] * L < 2.0
    if overshoot > 10:  # cut by the growth factor, not halved 10+ times
        assert np.count_nonzero(np.diff(res.step_sizes)) <= 2


# -- private centring -----------------------------------------------------------


def _offset_linear(n, seed, offset=3.0):
    X, y = _linear(n, seed)
    return X + offset, y


def test_center_matches_sklearn_without_noise():
    from sklearn.linear_model import LinearRegression

    X, y = _offset_linear(3000, 0)
    model = HeavyTailedLinearRegression(
        epsilon=np.inf, feature_norm=1e6, center=True, max_iter=3000
    ).fit(X, y)
    ref = LinearRegression().fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-3)
    assert model.intercept_ == pytest.approx(ref.intercept_, abs=1e-2)
    np.testing.assert_allclose(model.center_, X.mean(axis=0))


def test_center_mean_moves_by_at_most_its_sensitivity():
    """Coupled run: with the same random stream, the released means of
    neighbouring datasets differ by the pre-noise shift, which is at most
    2 feature_norm / n (rows are clipped to feature_norm first)."""
    X, y = _offset_linear(400, 1)
    X_prime = X.copy()
    X_prime[5] = -1e9  # clipped to norm feature_norm in the opposite corner
    C = 10.0
    centers = [
        HeavyTailedLinearRegression(
            feature_norm=C,
            center=True,
            max_iter=1,
            random_state=7,
            accountant=_same_stream(),
        )
        .fit(Z, y)
        .center_
        for Z in (X, X_prime)
    ]
    shift = np.linalg.norm(centers[0] - centers[1])
    assert shift <= 2 * C / 400 + 1e-12
    assert shift > C / 400  # the replaced row does move the mean


def test_center_is_paid_for():
    X, y = _offset_linear(2000, 2)
    for center in (False, True):
        model = HeavyTailedLinearRegression(
            epsilon=1.0, feature_norm=20.0, center=center, random_state=0
        ).fit(X, y)
        eps, delta = model.privacy_spent_
        assert eps <= 1.0 + 1e-9 and eps == pytest.approx(1.0, rel=1e-2)
        assert delta == pytest.approx(model.delta_)
    # (the centred plan would certify ~3% less than 1 if its mean release
    # were missing from the plan)


def test_center_removes_a_large_offset():
    X, y = _offset_linear(10_000, 3)

    def risk(center):
        model = HeavyTailedLinearRegression(
            feature_norm=40.0, center=center, random_state=0
        ).fit(X, y)
        b = model.intercept_ + 3.0 * model.coef_.sum()  # back to unshifted X
        return float(np.sum((model.coef_ - W) ** 2) + (b - 1.0) ** 2)

    assert risk(True) < 0.1 * risk(False)
    assert risk(True) < 0.05


@pytest.mark.parametrize(
    "params, match",
    [
        ({"center": True}, "feature_norm"),
        (
            {"center": True, "feature_norm": 5.0, "fit_intercept": False},
            "fit_intercept",
        ),
    ],
)
def test_center_needs_a_public_norm_and_an_intercept(params, match):
    X, y = _linear(200, 4)
    with pytest.raises(ValueError, match=match):
        HeavyTailedLinearRegression(**params).fit(X, y)


def test_center_logistic_multiclass_uses_one_shared_mean():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(3000, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)), axis=1)
    X = X + 4.0
    model = HeavyTailedLogisticRegression(
        epsilon=np.inf, feature_norm=100.0, center=True, max_iter=300
    ).fit(X, y)
    assert model.center_.shape == (3,)
    assert model.score(X, y) > 0.9
    # the same fit as on features centred beforehand, reported for raw X
    pre = HeavyTailedLogisticRegression(
        epsilon=np.inf, feature_norm=100.0, max_iter=300
    ).fit(X - X.mean(axis=0), y)
    np.testing.assert_allclose(model.coef_, pre.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        model.intercept_, pre.intercept_ - X.mean(axis=0) @ pre.coef_.T, atol=1e-6
    )


def test_planned_design_rejects_unpaid_feature_scale_with_default_scales():
    # a custom plan with public default scales that still asks for the
    # feature scale must pay for it: its event holds no scale counts here
    from skdp.solvers.heavy_tailed.units import planned_design

    class Plan:
        default_scales, feature_scale, n_scales, z_scale = True, True, 0, 5.0

    X = np.random.default_rng(0).normal(size=(50, 3))
    with pytest.raises(ValueError, match="does not pay"):
        planned_design(X, np.random.default_rng(0), Plan(), 1)
    Plan.n_scales = 1  # paid: released
    assert planned_design(X, np.random.default_rng(0), Plan(), 1).scale > 0


@pytest.mark.parametrize("solver", ["known_lipschitz", "onepass", "localized"])
def test_public_moment_bound_at_infinite_budget_is_finite(solver):
    """With a public G_k and epsilon = inf the paper's clip is infinite (no
    clipping) and there is no noise: the fit must not turn into nan."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(500, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=500)
    # (seed 1 for localized: its random phases at seed 0 land 0.38 off)
    model = HeavyTailedLinearRegression(
        epsilon=np.inf,
        G_k=3.0,
        radius=50.0,
        solver=solver,
        random_state=1 if solver == "localized" else 0,
    ).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    np.testing.assert_allclose(model.coef_, [1.0, 2.0, 3.0], atol=0.35)


# -- robustness of the private scales at small n (public floor and margin) --


def test_scale_floor_raises_a_collapsed_scale_to_the_norm_quantile():
    # most rows tiny, a few of unit scale: the median RMS (the feature scale)
    # is 1e-4, far below the truncation quantile of the norms; the floor
    # (post-processing of both releases) raises it to T / (8 sqrt(d))
    rng = np.random.default_rng(0)
    n, d = 2000, 4
    X = 1e-4 * rng.normal(size=(n, d))
    X[:100] = rng.normal(size=(100, d))
    y = X @ np.ones(d)
    plan = kl.make_known_lipschitz_plan(
        np.inf, n, d + 1, 5, n_scales=3, feature_scale=True
    )
    kw = dict(step_size=0.1, fit_intercept=True, scaled_intercept=True)
    plain = kl.known_lipschitz(
        X, y, SquaredLoss(), plan, np.random.default_rng(1), **kw
    )
    floored = kl.known_lipschitz(
        X, y, SquaredLoss(), plan, np.random.default_rng(1), scale_floor=8.0, **kw
    )
    s0, s1 = plain.feature_scale, floored.feature_scale
    T = floored.truncation
    assert s0 < 1e-3
    assert s1 == pytest.approx(T / (8.0 * math.sqrt(d)))
    assert np.all(np.isfinite(floored.coef))


def test_scale_floor_leaves_a_consistent_scale_alone():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 5))
    y = X @ np.ones(5) + 0.1 * rng.normal(size=3000)
    plan = kl.make_known_lipschitz_plan(
        np.inf, 3000, 6, 20, n_scales=3, feature_scale=True
    )
    kw = dict(step_size=0.5, fit_intercept=True)
    a = kl.known_lipschitz(X, y, SquaredLoss(), plan, np.random.default_rng(2), **kw)
    b = kl.known_lipschitz(
        X, y, SquaredLoss(), plan, np.random.default_rng(2), scale_floor=8.0, **kw
    )
    assert a.feature_scale == b.feature_scale
    np.testing.assert_array_equal(a.coef, b.coef)


def test_scale_margin_plan_is_paid_in_full():
    # n = 400 at the default delta: the count noise (z = 79) is below n / 4
    # but not n / 8; with margin 2 the linear plan (small-n share) buys
    # z <= n / 8 and the logistic plan (no small-n share) uses the public
    # defaults; either way the plan spends exactly mu
    mu = gdp_mu(1.0, 400**-1.1)
    for small, n_scales in ((0.0, 1), (0.5, 3)):
        kw = dict(n_scales=n_scales, feature_scale=True, small_n_share=small)
        loose = kl.make_known_lipschitz_plan(mu, 400, 11, 30, **kw)
        strict = kl.make_known_lipschitz_plan(mu, 400, 11, 30, scale_margin=2.0, **kw)
        assert not loose.default_scales and 8 * loose.z_scale > 400
        assert strict.default_scales or 8 * strict.z_scale <= 400 * (1 + 1e-6)
        assert strict.default_scales == (small == 0.0)
        assert gdp_mu_of(strict.event) == pytest.approx(mu)
        # margin_share: buy the margin instead of the public defaults
        bought = kl.make_known_lipschitz_plan(
            mu, 400, 11, 30, scale_margin=2.0, margin_share=0.5, **kw
        )
        assert not bought.default_scales
        assert 8 * bought.z_scale <= 400 * (1 + 1e-6)
        assert gdp_mu_of(bought.event) == pytest.approx(mu)


@pytest.mark.parametrize("seed", [14, 26, 34, 69, 77])
def test_scales_do_not_collapse_at_n_400(seed):
    # these draws collapsed the feature scale (0.0056 or 3.5e4 instead of
    # ~1) before the public margin and floor: coefficient error up to 9e9
    # (linear) and accuracy 0.46 (logistic)
    r = np.random.default_rng(seed)
    X = r.normal(size=(400, 10))
    w = np.ones(10) / 3
    y = X @ w + r.standard_t(3, size=400)
    lin = HeavyTailedLinearRegression(random_state=seed).fit(X, y)
    assert 0.2 < lin.feature_scale_ < 5
    assert np.sum((lin.coef_ - w) ** 2) < 0.6
    yb = (y > 0).astype(int)
    log = HeavyTailedLogisticRegression(random_state=seed).fit(X, yb)
    assert log.score(X, yb) > 0.6
