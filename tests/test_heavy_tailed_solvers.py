"""Heavy-tailed GLM solvers: coupled-run sensitivity, plans vs execution, building blocks."""

import math

import numpy as np
import pytest

from skdp.losses import HuberLoss, LogisticLoss, SquaredLoss
from skdp.privacy import (
    ComposedDpEvent,
    ParallelDpEvent,
    certify_epsilon,
    gdp_mu,
    gdp_mu_of,
)
from skdp.privacy import _norm_bound as norm_bound
from skdp.solvers.heavy_tailed import bounds as bounds
from skdp.solvers.heavy_tailed import common as common
from skdp.solvers.heavy_tailed import gd as gd
from skdp.solvers.heavy_tailed import known_lipschitz as kl
from skdp.solvers.heavy_tailed import onepass as onepass
from skdp.solvers.heavy_tailed.kernels import clipped_gradient_sum, onepass_phase
from skdp.solvers.heavy_tailed.localized import (
    aggregate,
    localized_chunks,
    localized_dp_sgd,
    make_localized_plan,
)

LOSSES = [SquaredLoss(), HuberLoss(0.5), LogisticLoss()]


def _heavy_data(rng, n, d, loss):
    X = rng.standard_t(2.5, size=(n, d))
    X[0] *= 1e4  # a row far beyond any smoothness guard
    if isinstance(loss, LogisticLoss):
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
    else:
        y = X @ rng.normal(size=d) + rng.standard_t(2.1, size=n) * 10
    return X, y


def _replace(X, y, i, rng, loss, scale=50.0):
    X2, y2 = X.copy(), y.copy()
    X2[i] = rng.standard_t(2.5, size=X.shape[1]) * scale
    y2[i] = -1.0 if isinstance(loss, LogisticLoss) else -y[i] * scale
    return X2, y2


# -- Algorithm 8: phase averages of neighbours differ by at most 2 eta_i C_i --
@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_onepass_coupled_phase_averages(loss):
    rng = np.random.default_rng(0)
    n, d = 600, 4
    X, y = _heavy_data(rng, n, d, loss)
    plan = onepass.make_onepass_plan(np.inf, n, d, n_scales=0, adaptive_clip=False)
    order = rng.permutation(n)
    sizes = plan.sizes
    starts = np.cumsum((0,) + sizes[:-1])
    worst = 0.0
    for trial in range(20):
        phase = trial % 3
        pos = starts[phase] + rng.integers(sizes[phase])
        X2, y2 = _replace(X, y, order[pos], rng, loss)
        kwargs = dict(step_size=0.3, clip=0.7, order=order, return_phase_averages=True)
        r1, avg1 = onepass.onepass_clipped_dp_sgd(
            X, y, loss, plan, np.random.default_rng(1), **kwargs
        )
        r2, avg2 = onepass.onepass_clipped_dp_sgd(
            X2, y2, loss, plan, np.random.default_rng(1), **kwargs
        )
        for i in range(phase):  # phases before the change are identical
            np.testing.assert_array_equal(avg1[i], avg2[i])
        bound = 2 * r1.step_sizes[phase] * r1.clip_levels[phase]
        gap = np.linalg.norm(avg1[phase] - avg2[phase])
        assert gap <= bound * (1 + 1e-9)
        worst = max(worst, gap / bound)
    assert worst > 0.05  # the check is not vacuous


def _phase(X, y, eta, C, row_cap):
    m, d = X.shape
    norms = np.linalg.norm(X, axis=1)
    zero = np.zeros(d)
    return onepass_phase(
        X, y, np.arange(m), 0, m, zero, eta, C, row_cap, norms, 0, 0.0, zero, np.inf, 0
    )


def test_onepass_coupled_bound_is_attained():
    # the changed record comes first and the others barely move the iterate:
    # the gap of the averages is then close to 2 eta C
    m, eta, C = 50, 0.1, 1.0
    X = np.full((m, 3), 1e-3)
    X[0] = [10.0, 0.0, 0.0]
    y1, y2 = np.zeros(m), np.zeros(m)
    y1[0], y2[0] = 1e3, -1e3  # clipped gradients +-C in opposite directions
    cap = math.sqrt(2.0 / eta)
    gap = np.linalg.norm(_phase(X, y1, eta, C, cap) - _phase(X, y2, eta, C, cap))
    assert 0.9 * 2 * eta * C <= gap <= 2 * eta * C


def test_onepass_smoothness_guard_is_needed():
    # Without the guard, a row with eta ||a||**2 = 10 after the changed record
    # turns a small gap along it into ~2 eta C while keeping the orthogonal
    # gap: the averages end up ~1.3x further apart than 2 eta C. The guard
    # (rows scaled to eta ||a||**2 <= 2) restores the bound.
    m, eta, C, kappa = 50, 0.1, 1.0, 10.0
    X = np.full((m, 2), 1e-3)
    X[0] = 4.0 * np.array([1 / kappa, math.sqrt(1 - 1 / kappa**2)])
    X[1] = [math.sqrt(kappa / eta), 0.0]
    y1, y2 = np.zeros(m), np.zeros(m)
    y1[0], y2[0] = 1e3, -1e3
    bound = 2 * eta * C
    unguarded = np.linalg.norm(
        _phase(X, y1, eta, C, np.inf) - _phase(X, y2, eta, C, np.inf)
    )
    assert unguarded > 1.2 * bound
    cap = math.sqrt(2.0 / eta)
    guarded = np.linalg.norm(_phase(X, y1, eta, C, cap) - _phase(X, y2, eta, C, cap))
    assert guarded <= bound


# -- Algorithm 1 / 4: clipped gradient sums differ by at most 2 C ------------
@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_clipped_gradient_sum_sensitivity(loss):
    rng = np.random.default_rng(2)
    n, d, C = 300, 5, 0.8
    X, y = _heavy_data(rng, n, d, loss)
    worst = 0.0
    for _ in range(30):
        w = rng.normal(size=d) * 3
        X2, y2 = _replace(X, y, rng.integers(n), rng, loss)
        s1 = clipped_gradient_sum(X, y, w, 1 / np.linalg.norm(X, axis=1), C, loss)
        s2 = clipped_gradient_sum(X2, y2, w, 1 / np.linalg.norm(X2, axis=1), C, loss)
        gap = np.linalg.norm(s1 - s2)
        assert gap <= 2 * C * (1 + 1e-9)
        worst = max(worst, gap / (2 * C))
    assert worst > 0.5


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_known_lipschitz_truncation_makes_survivors_lipschitz(loss):
    # Algorithm 4 with a finite radius: every surviving row's gradient norm
    # on the domain is at most the truncation level, and the clipped sums of
    # neighbours (after truncation) differ by at most 2 C.
    rng = np.random.default_rng(3)
    n, d, R, C = 400, 4, 2.0, 20.0
    X, y = _heavy_data(rng, n, d, loss)
    norms = np.linalg.norm(X, axis=1)
    bounds = common.row_lipschitz_bounds(loss, norms, y, R)
    keep = bounds <= C
    assert 0 < keep.sum() < n
    for _ in range(20):
        w = rng.normal(size=d)
        w *= R * rng.random() / np.linalg.norm(w)
        grads = np.abs(loss.derivative(X @ w, y)) * norms
        assert np.all(grads[keep] <= C * (1 + 1e-9))
        X2, y2 = _replace(X, y, rng.integers(n), rng, loss)
        n2 = np.linalg.norm(X2, axis=1)
        keep2 = common.row_lipschitz_bounds(loss, n2, y2, R) <= C
        s1 = clipped_gradient_sum(X, y, w, np.where(keep, 1 / norms, 0.0), C, loss)
        s2 = clipped_gradient_sum(X2, y2, w, np.where(keep2, 1 / n2, 0.0), C, loss)
        assert np.linalg.norm(s1 - s2) <= 2 * C * (1 + 1e-9)


def test_clipped_gradient_sum_numpy_fallback_matches_numba():
    rng = np.random.default_rng(4)
    X = rng.standard_t(3, size=(200, 4))
    y = rng.normal(size=200)
    w = rng.normal(size=4)
    inv = 1 / np.linalg.norm(X, axis=1)
    inv[:10] = 0.0
    fast = clipped_gradient_sum(X, y, w, inv, 0.5, HuberLoss(0.3))
    slow = clipped_gradient_sum(np.asfortranarray(X), y, w, inv, 0.5, HuberLoss(0.3))
    np.testing.assert_allclose(fast, slow, rtol=1e-10)


# -- plans match what the solvers draw ----------------------------------------
class _NoiseRecorder:
    def __init__(self, monkeypatch, modules):
        self.calls = []
        real = norm_bound.gaussian_noise
        for mod in modules:
            # the bounds' counts are drawn by the one private norm bound
            mod = norm_bound if mod is bounds else mod
            monkeypatch.setattr(mod, "gaussian_noise", self._wrap(real))

    def _wrap(self, real):
        def noise(rng, std, size=None, **ledger):
            self.calls.append((float(std), size))
            return real(rng, std, size, **ledger)

        return noise


def test_known_lipschitz_draws_exactly_its_plan(monkeypatch):
    rec = _NoiseRecorder(monkeypatch, [bounds, gd])
    rng = np.random.default_rng(5)
    n, d = 3000, 4
    X = rng.standard_t(3, size=(n, d))
    y = X @ np.ones(d) + rng.standard_t(3, size=n)
    plan = kl.make_known_lipschitz_plan(gdp_mu(1.0, 1e-5), n, d, 20, n_scales=2)
    res = kl.known_lipschitz(X, y, SquaredLoss(), plan, rng, step_size=0.5)
    counts = [c for c in rec.calls if c[1] is None]
    grads = [c for c in rec.calls if c[1] == d]
    assert len(counts) == plan.n_scales * bounds.RANGE_STEPS + plan.gd.n_counts
    assert (
        sum(std == plan.z_scale for std, _ in counts)
        == plan.n_scales * bounds.RANGE_STEPS
    )
    assert sum(std == plan.gd.z_count for std, _ in counts) == plan.gd.n_counts
    assert len(grads) == plan.gd.n_steps
    np.testing.assert_allclose(
        [s for s, _ in grads], 2 * res.clip_levels * plan.gd.z_grad
    )
    assert certify_epsilon(plan.event, 1e-5) == pytest.approx(1.0, abs=1e-3)


def test_onepass_draws_exactly_its_plan(monkeypatch):
    rec = _NoiseRecorder(monkeypatch, [bounds, onepass])
    rng = np.random.default_rng(6)
    n, d = 20_000, 20
    X = rng.standard_t(3, size=(n, d))
    y = np.where(X[:, 0] + rng.logistic(size=n) > 0, 1.0, -1.0)
    plan = onepass.make_onepass_plan(gdp_mu(1.0, 1e-5), n, d, n_scales=1)
    assert isinstance(plan.event, ComposedDpEvent)
    assert isinstance(plan.event.events[1], ParallelDpEvent)
    res = onepass.onepass_clipped_dp_sgd(
        X, y, LogisticLoss(), plan, rng, step_size=0.01
    )
    outs = [s for s, size in rec.calls if size == d]
    counts = [s for s, size in rec.calls if size is None]
    assert len(outs) == len(plan.sizes)
    expected = 2 * res.step_sizes * res.clip_levels * np.array(plan.z_out)
    np.testing.assert_allclose(outs, expected)
    n_search = sum(plan.searches)
    assert 0 < n_search < len(plan.sizes)  # small phases skip their search
    assert len(counts) == bounds.RANGE_STEPS + n_search * plan.bisection_steps
    assert certify_epsilon(plan.event, 1e-5) == pytest.approx(1.0, abs=1e-3)


def test_localized_plan_is_parallel_over_disjoint_chunks():
    chunks = localized_chunks(1000, 3)
    flat = [c for phase in chunks for c in phase]
    assert flat[0][0] == 0 and flat[-1][1] == 1000
    assert all(a[1] == b[0] for a, b in zip(flat[:-1], flat[1:]))  # disjoint, all used
    mu = gdp_mu(1.0, 1e-5)
    plan = make_localized_plan(mu, 1000, 4, 10, n_scales=2)
    assert gdp_mu_of(plan.event) == pytest.approx(mu)
    assert certify_epsilon(plan.event, 1e-5) <= 1.0
    # tiny inputs still give valid, non-empty chunks
    assert all(b > a for phase in localized_chunks(2, 3) for a, b in phase)


def test_full_batch_plan_skips_unreliable_searches():
    mu = gdp_mu(1.0, 1e-5)
    small = gd.make_full_batch_plan(mu, 30, 5, 30)
    large = gd.make_full_batch_plan(mu, 30_000, 5, 30)
    assert small.checkpoints == () and large.checkpoints
    assert gdp_mu_of(small.event) == pytest.approx(mu)
    assert gdp_mu_of(large.event) == pytest.approx(mu)


# -- building blocks ------------------------------------------------------------
def test_noisy_log_quantile_exact_and_in_range():
    rng = np.random.default_rng(7)
    v = rng.lognormal(size=20_000)
    for q in (0.1, 0.5, 0.9, 0.99):
        est = bounds.noisy_log_quantile(v, q, 0.0, rng)
        assert np.mean(v <= est) == pytest.approx(q, abs=0.01)
    est = bounds.noisy_log_quantile(v, 0.9, 20.0, rng)
    assert np.mean(v <= est) == pytest.approx(0.9, abs=0.02)
    assert bounds.noisy_log_quantile(v, 1.0, 0.0, rng) >= v.max()
    for _ in range(20):  # hopeless noise still returns a value in the range
        est = bounds.noisy_log_quantile(v[:5], 0.5, 1e3, rng, log2_range=(-3, 4))
        assert 2**-3 <= est <= 2**4


def test_split_gdp_is_exact():
    mu = 0.7
    z = common.split_gdp(mu, [(3, 0.2), (10, 0.8)])
    assert 3 / z[0] ** 2 + 10 / z[1] ** 2 == pytest.approx(mu**2)
    assert common.split_gdp(np.inf, [(3, 0.5)]) == [0.0]
    with pytest.raises(ValueError):
        common.split_gdp(1.0, [(1, 0.7), (1, 0.7)])


def test_aggregate_fact_2():
    rng = np.random.default_rng(8)
    R = 0.5
    for _ in range(50):
        k, d = 9, 3
        z = rng.normal(size=d)
        good = z + rng.normal(size=(5, d)) * R / 4  # >= 0.51 k within R of z
        bad = rng.normal(size=(4, d)) * 50
        pts = np.vstack([good, bad])[rng.permutation(k)]
        assert np.linalg.norm(aggregate(pts, R) - z) <= 3 * R
        assert np.linalg.norm(aggregate(pts) - z) <= 3 * R


def test_row_lipschitz_bounds():
    norms, y = np.array([2.0]), np.array([-3.0])
    assert common.row_lipschitz_bounds(LogisticLoss(), norms, y, 5.0)[0] == 2.0
    assert common.row_lipschitz_bounds(HuberLoss(0.5), norms, y, 5.0)[0] == 1.0
    assert common.row_lipschitz_bounds(SquaredLoss(), norms, y, 5.0)[0] == 2 * (10 + 3)


def test_paper_constants_match_the_notes_example():
    # heavy_tails.md section 4.8: n = 2**16, d = 20, rho = 0.5, k = 4
    eta, C = onepass.paper_onepass_parameters(2**16, 20, 0.5, 4, 4.47, 6.0, 10.0)
    assert eta == pytest.approx(0.0110, rel=0.01)
    assert C == pytest.approx(36.0, rel=0.01)


def test_localized_solver_runs_every_phase():
    rng = np.random.default_rng(9)
    n, d = 4000, 3
    X = rng.normal(size=(n, d))
    y = X @ np.array([1.0, 0.0, -1.0]) + 0.1 * rng.normal(size=n)
    plan = make_localized_plan(np.inf, n, d, 40, n_scales=2)
    res = localized_dp_sgd(X, y, SquaredLoss(), plan, rng, step_size=0.5)
    assert res.regularization.shape == (len(plan.chunks),)
    assert np.all(np.diff(res.regularization) > 0)
    np.testing.assert_allclose(res.coef, [1.0, 0.0, -1.0], atol=0.05)


def test_tiny_data_uses_public_scales_and_spends_nothing_on_them(monkeypatch):
    rec = _NoiseRecorder(monkeypatch, [bounds, gd])
    rng = np.random.default_rng(10)
    n, d = 40, 3
    X = rng.normal(size=(n, d))
    y = X @ np.ones(d) + rng.normal(size=n)
    plan = kl.make_known_lipschitz_plan(
        gdp_mu(1.0, 1e-3), n, d + 1, 10, n_scales=3, feature_scale=True
    )
    assert plan.default_scales and plan.n_scales == 0 and plan.gd.checkpoints == ()
    assert not plan.feature_scale  # public feature scale 1 as well
    assert gdp_mu_of(plan.event) == pytest.approx(gdp_mu(1.0, 1e-3))
    res = kl.known_lipschitz(
        X, y, SquaredLoss(), plan, rng, step_size=0.5, fit_intercept=True
    )
    assert all(size == d + 1 for _, size in rec.calls)  # only gradient noise
    assert len(rec.calls) == 10
    assert res.feature_scale == 1.0
    B, _ = bounds.default_scales(d + 1, SquaredLoss())
    assert res.truncation == pytest.approx(B * bounds.UNRELIABLE_SLACK)


def test_small_n_share_pays_the_scales_and_spends_exactly_mu(monkeypatch):
    # n too small for the default scale share: with small_n_share the scale
    # quantiles get the share small_n_scale_share computes (count noise at
    # most n / 8), the clip share is unchanged and the total is exactly mu.
    rec = _NoiseRecorder(monkeypatch, [bounds, gd])
    rng = np.random.default_rng(12)
    n, d = 330, 4
    X = rng.normal(size=(n, d)) * 0.05
    y = 150.0 + X @ np.full(d, 300.0) + 50.0 * rng.normal(size=n)
    mu = gdp_mu(1.0, 1e-6)
    old = kl.make_known_lipschitz_plan(mu, n, d + 1, 10, n_scales=3, feature_scale=True)
    assert old.default_scales  # the default share cannot pay them
    plan = kl.make_known_lipschitz_plan(
        mu, n, d + 1, 10, n_scales=3, feature_scale=True, small_n_share=0.5
    )
    assert not plan.default_scales and plan.n_scales == 4 and plan.feature_scale
    assert plan.z_scale == pytest.approx(n / (4 * bounds.SMALL_N_MARGIN))
    share = bounds.small_n_scale_share(mu, n, 4 * bounds.RANGE_STEPS, 0.5)
    assert 0.0 < share <= 0.5
    # exact composition: scale counts + gradient steps (+ clip counts) = mu
    assert gdp_mu_of(plan.event) == pytest.approx(mu, rel=1e-6)
    grad_mu = gdp_mu_of(plan.gd.event)
    assert grad_mu**2 == pytest.approx((1.0 - share) * mu**2, rel=1e-6)
    res = kl.known_lipschitz(
        X, y, SquaredLoss(), plan, rng, step_size=0.5, fit_intercept=True
    )
    counts = [std for std, size in rec.calls if size is None]
    assert sum(std == plan.z_scale for std in counts) == 4 * bounds.RANGE_STEPS
    assert 0.01 < res.feature_scale < 1.0  # private, not the default 1
    assert res.target_scale > 100.0  # not the default 3
    # too small even for half the budget: public defaults, as before
    tiny = kl.make_known_lipschitz_plan(
        mu, 100, d + 1, 10, n_scales=3, feature_scale=True, small_n_share=0.5
    )
    assert tiny.default_scales
    assert gdp_mu_of(tiny.event) == pytest.approx(mu, rel=1e-6)


def test_small_n_scale_counts_coupled_on_neighbours(monkeypatch):
    # The scale counts at the small-n multiplier: on neighbouring data
    # (replace one record) with the same random stream, every released count
    # moves by at most its sensitivity 1 while the bisection paths agree, and
    # the bound is attained.
    released = []

    def noise(rng, std, size=None, **ledger):
        e = float(rng.normal(0.0, std))
        released.append(e)
        return e

    monkeypatch.setattr(norm_bound, "gaussian_noise", noise)  # draws the counts
    counts = []
    real_count = np.count_nonzero

    def count(a):
        c = int(real_count(a))
        counts.append(c)
        return c

    monkeypatch.setattr(bounds.np, "count_nonzero", count)
    n = 330
    z = n / (4 * bounds.SMALL_N_MARGIN)
    v = np.abs(np.random.default_rng(13).normal(150.0, 50.0, size=n)) + 1.0
    w = v.copy()
    w[0] = 1e-8  # the replaced record jumps from the bulk to the far low end
    paths = []
    for vals in (v, w):
        counts.clear()
        bounds.noisy_log_quantile(vals, 0.5, z, np.random.default_rng(14))
        paths.append(list(counts))
    a, b = (np.array(p) for p in paths)
    assert a.shape == b.shape == (bounds.RANGE_STEPS,)
    assert np.max(np.abs(a - b)) <= 1
    assert np.max(np.abs(a - b)) == 1


def test_noisy_median_and_warm_start():
    rng = np.random.default_rng(11)
    v = rng.standard_t(2, size=5000) + 30.0
    assert bounds.noisy_median(v, 100.0, 0.0, rng) == pytest.approx(
        np.median(v), abs=0.2
    )
    assert abs(bounds.noisy_median(v, 100.0, 30.0, rng) - np.median(v)) < 1.0
    assert -5 <= bounds.noisy_median(v[:3], 5.0, 1e4, rng) <= 5  # always in range
    # the warm start is one more scale quantile in the plan
    assert kl.known_lipschitz_scales(HuberLoss(), np.inf, intercept=True) == 3
    assert kl.known_lipschitz_scales(LogisticLoss(), np.inf, intercept=True) == 1


def test_onepass_kernel_python_fallback_is_identical():
    # without numba the same function runs as plain Python
    py = getattr(onepass_phase, "py_func", onepass_phase)
    rng = np.random.default_rng(12)
    X = rng.standard_t(3, size=(60, 3))
    y = np.where(rng.random(60) < 0.5, 1.0, -1.0)
    norms = np.linalg.norm(X, axis=1)
    args = (
        X,
        y,
        rng.permutation(60),
        5,
        55,
        np.zeros(3),
        0.05,
        0.7,
        3.0,
        norms,
        2,
        0.0,
        np.zeros(3),
        2.0,
        20,
    )
    np.testing.assert_allclose(onepass_phase(*args), py(*args), rtol=1e-12)


def test_quantile_target_floor():
    # the floor applies only when there is noise, and the cap still binds
    t = bounds.QuantileTarget(scale=6.0, min_fraction=0.05)
    assert bounds.tail_fraction(20.0, 100_000, 21, t) == pytest.approx(0.05)
    assert bounds.tail_fraction(20.0, 100_000, 21) == pytest.approx(
        6.0 * 20.0 * math.sqrt(21) / 100_000
    )
    assert bounds.tail_fraction(0.0, 100_000, 21, t) == 0.0
    big = bounds.QuantileTarget(min_fraction=0.9)
    assert bounds.tail_fraction(1.0, 100_000, 21, big) == 0.7


def test_clipped_dp_gd_average_from_averages_the_stated_tail():
    # noise-free, fixed clip: runs of T' steps are prefixes of the run of T
    # steps, so their last iterates are the run's iterates; averaging from
    # floor(a T) must be their mean
    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = X @ np.array([1.0, -2.0, 0.5]) + rng.standard_t(3, size=400)

    def run(T, a):
        plan = gd.make_full_batch_plan(np.inf, 400, 3, T, adaptive_clip=False)
        res = gd.clipped_dp_gd(
            X, y, SquaredLoss(), plan, rng, step_size=0.1, clip=1.0, average_from=a
        )
        return res.coef

    T, a = 10, 0.3
    last = [run(k, (k - 0.5) / k) for k in range(1, T + 1)]  # w_1 .. w_T
    first = math.floor(a * T)  # iterates after steps first + 1 .. T
    assert np.allclose(run(T, a), np.mean(last[first:], axis=0), rtol=1e-12)
    assert np.allclose(run(T, 0.5), np.mean(last[T // 2 :], axis=0), rtol=1e-12)
    assert not np.allclose(run(T, a), run(T, 0.5))
    with pytest.raises(ValueError):
        run(T, 1.0)


def test_clipped_dp_gd_step_growth_is_post_processing_of_released_gradients():
    # step_growth=1 is the constant step; a signal-dominated run grows its
    # step (at most step_growth times, only before the averaged tail); a
    # noise-dominated one keeps it; and the growth draws no extra noise
    rng = np.random.default_rng(0)
    n, d = 1000, 5
    X = rng.normal(size=(n, d))
    y = X @ np.full(d, 2.0) + 0.1 * rng.normal(size=n)
    plan = gd.make_full_batch_plan(1.0, n, d, 30, adaptive_clip=False)

    def run(data_y, growth, seed=1):
        r = np.random.default_rng(seed)
        res = gd.clipped_dp_gd(
            X, data_y, SquaredLoss(), plan, r, step_size=0.05, clip=1.0,
            step_growth=growth,
        )  # fmt: skip
        return res, r.bit_generator.state

    base, state0 = run(y, 1.0)
    assert np.all(base.step_sizes == 0.05)
    same, _ = run(y, 1.0)
    np.testing.assert_array_equal(same.coef, base.coef)
    grown, state1 = run(y, 3.0)
    assert state1 == state0  # the same draws: no new release
    assert grown.step_sizes.max() == pytest.approx(0.15)  # 0.05 -> 0.1 -> 0.15
    assert np.all(grown.step_sizes[15:] == grown.step_sizes[15])  # tail: fixed
    assert np.all(np.diff(grown.step_sizes[:15]) >= 0)
    # noise only (the optimum is the start): the step never grows
    noise = 0.1 * np.random.default_rng(2).normal(size=n)
    flat, _ = run(noise, 3.0)
    assert np.all(flat.step_sizes == 0.05)
