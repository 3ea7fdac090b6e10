"""Generic DP bilevel backend: oracles, sensitivities, accounting, special cases."""

import math

import numpy as np
import pytest

from skdp.privacy import certify_epsilon, gaussian_noise
from skdp.solvers.bilevel.hypergradient import (
    FULL_BATCH,
    BilevelOracles,
    InnerSettings,
    dp_bilevel,
    lower_statistic,
    outer_statistic,
    penalized_statistic,
)
from skdp.solvers.bilevel.inner import localization_radii, localized_noisy_gd
from skdp.solvers.bilevel.plan import (
    BilevelDesign,
    bilevel_sensitivities,
    calibrate_bilevel_noise,
    gdp_budget,
)
from skdp.utils import clip_rows

DELTA = 1e-6


def example1(xi):
    """Kornowski's Example 1: f = ||x + y||^2 / 2, g = mean ||y - xi_i||^2 / 2."""
    n = xi.shape[0]
    return BilevelOracles(
        n,
        n,
        True,
        lower_grad_y=lambda x, y, idx: y - xi[idx],
        upper_regularizer=lambda x, y: (x + y, x + y),
    )


def run_example1(xi, epsilon, rng, *, sampling=None, fraction=1.0, n_iter=15, steps=60):
    n, d = xi.shape
    clip = 6.0  # ||y - xi|| <= ||y|| + 3 on the inner balls
    design = BilevelDesign(
        n,
        n,
        True,
        n_iter,
        1,
        steps,
        10.0,
        clip,
        clip,
        1.0,
        False,
        False,
        upper_in_inner=False,
        sampling=sampling,
        inner_batch_fraction=fraction,
    )
    noise = calibrate_bilevel_noise(design, epsilon, DELTA)
    radii = localization_radii(
        6.0,
        n_rounds=1,
        n_steps=steps,
        noise_std=noise.lower_std,
        gradient_bound=clip,
        strong_convexity=1.0,
        n_features=d,
    )
    res = dp_bilevel(
        example1(xi),
        np.zeros(d),
        np.zeros(d),
        penalty=10.0,
        n_iter=n_iter,
        step_size=1.0,
        project=lambda x: x,
        inner=InnerSettings(tuple(radii), steps, 1.0, 1.0),
        clip_upper=clip,
        clip_lower=clip,
        clip_outer=1.0,
        noise=noise,
        rng=rng,
        sampling=sampling,
        inner_batch_fraction=fraction,
    )
    return res, noise


@pytest.fixture(scope="module")
def xi():
    rng = np.random.default_rng(0)
    data = rng.normal(size=(2000, 3)) * 0.5 + np.array([1.0, -0.5, 0.3])
    return clip_rows(data, 3.0)


def test_example1_non_private_returns_minus_mean(xi):
    res, _ = run_example1(xi, np.inf, np.random.default_rng(1))
    np.testing.assert_allclose(res.x, -xi.mean(axis=0), atol=1e-3)


def test_example1_large_epsilon_close_to_minus_mean(xi):
    errors = []
    for eps in (2.0, 50.0):
        res, noise = run_example1(xi, eps, np.random.default_rng(2))
        assert certify_epsilon(noise.event, DELTA) <= eps
        errors.append(np.linalg.norm(res.x + xi.mean(axis=0)))
    assert errors[1] < 0.05
    assert errors[1] < errors[0]


def test_example1_poisson_minibatch(xi):
    """Alg. 3/4 with Poisson sampling, calibrated exactly (PLD)."""
    res, noise = run_example1(
        xi,
        4.0,
        np.random.default_rng(3),
        sampling="poisson",
        fraction=0.2,
        n_iter=6,
        steps=30,
    )
    assert 0.99 * 4.0 <= certify_epsilon(noise.event, DELTA) <= 4.0
    assert np.linalg.norm(res.x + xi.mean(axis=0)) < 0.1


def test_without_replacement_minibatch_event():
    """Fixed-size batches without replacement are accounted for in RDP."""
    from skdp.privacy import SampledWithoutReplacementDpEvent
    from skdp.solvers.bilevel.plan import bilevel_event

    design = BilevelDesign(
        2000,
        2000,
        True,
        6,
        1,
        30,
        10.0,
        6.0,
        6.0,
        1.0,
        False,
        False,
        upper_in_inner=False,
        sampling="without_replacement",
        inner_batch_fraction=0.2,
    )
    sens = bilevel_sensitivities(design)["lower"]["all"]
    assert sens == pytest.approx(2 * 6.0 / 400)  # 2 C / batch size
    stds = {"lower": 3.0 * sens, "penalized": 3.0 * sens, "outer": 0.0}
    event = bilevel_event(design, stds)
    leaf = event.events[0].event
    assert isinstance(leaf, SampledWithoutReplacementDpEvent)
    assert (leaf.source_dataset_size, leaf.sample_size) == (2000, 400)
    assert leaf.event.noise_multiplier == pytest.approx(3.0)
    assert 0 < certify_epsilon(event, DELTA) < np.inf


def test_g_independent_of_x_is_dp_gd_on_f():
    """Remark 6: with grad_x g = 0 the outer loop is DP-GD on f(., y)."""
    rng = np.random.default_rng(4)
    n, d = 300, 2
    a = clip_rows(rng.normal(size=(n, d)) + 2.0, 3.0)
    b = rng.normal(size=(n, d))
    oracles = BilevelOracles(
        n,
        n,
        True,
        upper_grad_y=lambda x, y, idx: np.repeat(y[None, :], a[idx].shape[0], 0),
        lower_grad_y=lambda x, y, idx: y - b[idx],
        upper_grad_x=lambda x, y, idx: x - a[idx],
    )
    clip_out, eta, steps = 1.5, 0.3, 20
    design = BilevelDesign(
        n, n, True, steps, 1, 5, 10.0, 1.0, 5.0, clip_out, True, False
    )
    noise = calibrate_bilevel_noise(design, 1.0, DELTA)
    assert noise.outer_std > 0
    # Zero inner noise: the inner solves then consume no randomness, so the
    # outer noise sequence can be replayed.
    noise = type(noise)(0.0, 0.0, noise.outer_std, noise.event)
    res = dp_bilevel(
        oracles,
        np.zeros(d),
        np.zeros(d),
        penalty=10.0,
        n_iter=steps,
        step_size=eta,
        project=lambda x: x,
        inner=InnerSettings((5.0,), 5, 1.0, 2.0),
        clip_upper=1.0,
        clip_lower=5.0,
        clip_outer=clip_out,
        noise=noise,
        rng=np.random.default_rng(5),
        adaptive=False,
    )
    replay, x = np.random.default_rng(5), np.zeros(d)
    path = [x]
    for _ in range(steps):
        g = clip_rows(x - a, clip_out).mean(axis=0)
        x = x - eta * (g + gaussian_noise(replay, noise.outer_std, d, sensitivity=1.0))
        path.append(x)
    np.testing.assert_allclose(res.x_path, np.array(path), atol=1e-12)
    steps_taken = np.linalg.norm(np.diff(res.x_path, axis=0), axis=1)
    assert res.t_out == int(np.argmin(steps_taken))
    np.testing.assert_array_equal(res.x, res.x_path[res.t_out])


def test_output_rule_is_smallest_step():
    from skdp.solvers.bilevel.hypergradient import bilevel_outer_loop

    grads = iter([3.0, -1.0, 0.1, 2.0])
    res = bilevel_outer_loop(
        np.zeros(1),
        lambda x, t: (None, None),
        lambda x, a, b: np.array([next(grads)]),
        lambda x: np.clip(x, -1.0, 10.0),
        n_iter=4,
        step_size=1.0,
        adaptive=False,
    )
    np.testing.assert_allclose(res.x_path[:, 0], [0.0, -1.0, 0.0, -0.1, -1.0])
    assert res.t_out == 2 and res.x[0] == 0.0


def test_rprop_step_reaches_the_minimizer_where_adagrad_stalls():
    """F(u) = exp(-3u) + u from u0 = -5: the gradient shrinks by 1e6 along
    the way, AdaGrad-norm's steps collapse after the first huge gradients,
    the sign-based rule reaches u* = log(3) / 3 and the smallest step is
    taken there."""
    from skdp.solvers.bilevel.hypergradient import bilevel_outer_loop

    def run(rule):
        return bilevel_outer_loop(
            np.array([-5.0]),
            lambda x, t: (None, None),
            lambda x, a, b: np.array([1.0 - 3.0 * math.exp(-3.0 * x[0])]),
            lambda x: np.clip(x, -10.0, 10.0),
            n_iter=60,
            step_size=1.0,
            step_rule=rule,
        )

    target = math.log(3.0) / 3.0
    assert run("rprop").x[0] == pytest.approx(target, abs=1e-3)
    assert abs(run("adagrad").x[0] - target) > 1.0
    with pytest.raises(ValueError, match="step rule"):
        run("newton")


# -- sensitivities: coupled runs on neighbouring datasets --------------------


def _neighbours(rng, n, d, center=None):
    """Datasets differing in record 0, placed far on opposite sides of ``center``.

    Every per-record term of record 0 is then clipped, in opposite
    directions, which attains the declared sensitivity.
    """
    data = rng.normal(size=(n, d))
    other = data.copy()
    c = np.zeros(d) if center is None else center
    v = np.eye(d)[0] * 50.0
    data[0], other[0] = c - v, c + v
    return data, other


@pytest.mark.parametrize("shared", [True, False])
def test_inner_statistics_sensitivity(shared):
    rng = np.random.default_rng(6)
    n_u, n_l, d, lam, cu, cl = 40, 60, 3, 4.0, 0.7, 1.3
    n_u = n_l if shared else n_u
    y = rng.normal(size=d)
    u, u2 = _neighbours(rng, n_u, d, y)
    low, low2 = _neighbours(rng, n_l, d, y)
    design = BilevelDesign(n_u, n_l, shared, 1, 1, 1, lam, cu, cl, 1.0, False, False)
    sens = bilevel_sensitivities(design)

    def oracles(up, lo):
        return BilevelOracles(
            n_u,
            n_l,
            shared,
            upper_grad_y=lambda x, yy, idx: yy - up[idx],
            lower_grad_y=lambda x, yy, idx: yy - lo[idx],
        )

    def stats(o):
        return (
            lower_statistic(o, None, y, FULL_BATCH, cl),
            penalized_statistic(o, None, y, FULL_BATCH, FULL_BATCH, lam, cu, cl),
        )

    base = stats(oracles(u, low))
    if shared:
        # One person holds the record of both functions.
        moved = stats(oracles(u2, low2))
        bound_low, bound_pen = sens["lower"]["all"], sens["penalized"]["all"]
        shifts = [np.linalg.norm(a - b) for a, b in zip(base, moved)]
        assert shifts[0] <= bound_low * (1 + 1e-12)
        assert shifts[1] <= bound_pen * (1 + 1e-12)
        assert shifts[0] > 0.999 * bound_low and shifts[1] > 0.999 * bound_pen
        return
    for part, other in (("upper", oracles(u2, low)), ("lower", oracles(u, low2))):
        moved = stats(other)
        for k, mech in enumerate(("lower", "penalized")):
            shift = np.linalg.norm(base[k] - moved[k])
            bound = sens[mech][part]
            assert shift <= bound * (1 + 1e-12)
            if bound > 0:
                assert shift > 0.999 * bound  # tight: the test can fail


def test_outer_statistic_clips_the_whole_difference_vector():
    rng = np.random.default_rng(7)
    n, d, lam, clip = 50, 2, 1e3, 0.5
    a, a2 = _neighbours(rng, n, d)

    def oracles(data):
        # lambda times a difference of per-record gradients: huge unless clipped
        # as a whole, which keeps the sensitivity independent of lambda.
        return BilevelOracles(
            n,
            n,
            True,
            lower_grad_y=lambda x, y, idx: y - data[idx],
            upper_grad_x=lambda x, y, idx: x - data[idx],
            lower_grad_x=lambda x, y, idx: data[idx] * y[0],
        )

    x, y_low, y_pen = np.zeros(d), np.array([1.0, 0.0]), np.array([1.003, 0.0])
    design = BilevelDesign(n, n, True, 1, 1, 1, lam, 1.0, 1.0, clip, True, True)
    bound = bilevel_sensitivities(design)["outer"]["all"]
    g = outer_statistic(oracles(a), x, y_low, y_pen, FULL_BATCH, FULL_BATCH, lam, clip)
    g2 = outer_statistic(
        oracles(a2), x, y_low, y_pen, FULL_BATCH, FULL_BATCH, lam, clip
    )
    assert np.linalg.norm(g - g2) <= bound * (1 + 1e-12)
    assert np.linalg.norm(g - g2) > 0.999 * bound
    assert bound == pytest.approx(2 * clip / n)  # independent of lambda


# -- accounting ----------------------------------------------------------------


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("outer", [False, True])
def test_full_batch_plan_spends_exactly_the_budget(shared, outer):
    n_u = 500 if shared else 200
    design = BilevelDesign(
        n_u, 500, shared, 20, 2, 50, 30.0, 1.0, 2.0, 1.0, outer, outer
    )
    noise = calibrate_bilevel_noise(design, 1.0, DELTA)
    eps = certify_epsilon(noise.event, DELTA)
    assert eps <= 1.0
    # Shared records pay every release at its calibrated sensitivity. With
    # disjoint parts each release's noise follows its worst part, so a part
    # may pay less (never more).
    if shared or not outer:
        assert eps >= 0.999
    assert (noise.outer_std > 0) == outer
    # T_GD = n^2 is never used: noise is calibrated to the steps actually run.
    fewer = calibrate_bilevel_noise(
        BilevelDesign(n_u, 500, shared, 20, 2, 10, 30.0, 1.0, 2.0, 1.0, outer, outer),
        1.0,
        DELTA,
    )
    assert fewer.lower_std == pytest.approx(noise.lower_std / math.sqrt(5))


def test_gdp_budget_leaves_room_for_other_steps():
    from skdp.privacy import ComposedDpEvent, GaussianDpEvent, PureDpEvent

    other = PureDpEvent(0.1)
    mu = gdp_budget(1.0, DELTA, other)
    eps = certify_epsilon(ComposedDpEvent([other, GaussianDpEvent(1 / mu)]), DELTA)
    assert 0.99 <= eps <= 1.0
    assert gdp_budget(np.inf, DELTA) == np.inf


def test_localized_gd_converges_and_radii_shrink():
    target = np.array([0.5, -0.2])
    y = localized_noisy_gd(
        lambda y: 2.0 * (y - target),
        np.zeros(2),
        radii=[4.0, 4.0],
        n_steps=300,
        noise_std=0.0,
        strong_convexity=2.0,
        rng=np.random.default_rng(0),
        sensitivity=1.0,
        smoothness=2.0,
    )
    np.testing.assert_allclose(y, target, atol=1e-3)
    radii = localization_radii(
        10.0,
        n_rounds=4,
        n_steps=10**5,
        noise_std=1e-3,
        gradient_bound=1.0,
        strong_convexity=1.0,
        n_features=3,
    )
    assert radii[0] == 10.0 and all(a >= b for a, b in zip(radii, radii[1:]))
    assert radii[-1] < 0.1
