"""Private intercept correction (skdp.solvers.heavy_tailed.intercept)."""

import dp_accounting
import numpy as np
import pytest
from dp_accounting import dp_event
from scipy.stats import norm

from skdp.privacy import gdp_mu_of
from skdp.solvers.heavy_tailed.bounds import RANGE_STEPS
from skdp.solvers.heavy_tailed.intercept import (
    RESIDUAL_SLACK,
    clipped_residual_sum,
    intercept_shift,
    make_intercept_plan,
)


@pytest.mark.parametrize("replacement", [1e6, -1e6, 0.0, np.inf])
def test_clipped_residual_sum_moves_by_at_most_its_sensitivity(replacement):
    # coupled run: the same residuals but one replaced; the pre-noise sum
    # moves by at most 2 R, and an extreme replacement nearly attains it
    rng = np.random.default_rng(0)
    r = rng.standard_t(2, size=500)
    R = 3.0
    worst = 0.0
    for i in range(r.size):
        r2 = r.copy()
        r2[i] = replacement
        worst = max(
            worst, abs(clipped_residual_sum(r2, R) - clipped_residual_sum(r, R))
        )
    assert worst <= 2 * R + 1e-9
    if abs(replacement) > R:
        assert worst >= 1.9 * R


def test_intercept_shift_uses_the_same_stream_on_neighbours():
    # the released clip R moves only through the noisy counts: on neighbours
    # with the same stream the shift differs by at most 2 R / n + noise diff 0
    rng = np.random.default_rng(1)
    r = rng.standard_t(3, size=4000)
    r2 = r.copy()
    r2[0] = 1e9
    plan = make_intercept_plan(0.5)
    s1, R1 = intercept_shift(r, plan, np.random.default_rng(7))
    s2, R2 = intercept_shift(r2, plan, np.random.default_rng(7))
    if R1 == R2:
        assert abs(s1 - s2) <= 2 * R1 / r.size + 1e-12
    assert R1 >= RESIDUAL_SLACK * np.quantile(np.abs(r), 0.5)


def test_intercept_plan_accounting_matches_the_gdp_curve_and_pld():
    mu = 0.3
    plan = make_intercept_plan(mu)
    assert gdp_mu_of(plan.event) == pytest.approx(mu)
    # the same event in dp-accounting's PLD: REPLACE_ONE reads the multiplier
    # as sigma / C with sensitivity 2 C; ours is sigma / (2 C): pass 2 z
    acc = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=1e-4,
    )
    acc.compose(
        dp_event.ComposedDpEvent(
            [
                dp_event.SelfComposedDpEvent(
                    dp_event.GaussianDpEvent(2 * plan.z_count), RANGE_STEPS
                ),
                dp_event.GaussianDpEvent(2 * plan.z_mean),
            ]
        )
    )
    eps = 1.0
    delta_gdp = norm.cdf(-eps / mu + mu / 2) - np.exp(eps) * norm.cdf(
        -eps / mu - mu / 2
    )
    assert acc.get_delta(eps) == pytest.approx(delta_gdp, rel=0.05)


def test_no_noise_gives_the_exact_mean_residual():
    r = np.random.default_rng(2).lognormal(size=3000)
    shift, R = intercept_shift(r, make_intercept_plan(np.inf), np.random.default_rng(0))
    assert shift == pytest.approx(r.mean(), rel=1e-12)
    assert R >= r.max()


def test_shrink_shift_is_post_processing_of_the_releases():
    from skdp.solvers.heavy_tailed.intercept import shrink_shift

    plan = make_intercept_plan(0.05)
    n = 100_000
    r = np.random.default_rng(3).standard_t(3, size=n)
    rng = np.random.default_rng(4)
    shift, R = intercept_shift(r, plan, rng)
    state = rng.bit_generator.state
    out = shrink_shift(shift, R, plan, n)
    assert rng.bit_generator.state == state  # draws nothing
    assert abs(out) <= abs(shift) and out * shift >= 0
    # no noise: the shift is the exact mean residual, left alone
    exact = make_intercept_plan(np.inf)
    assert shrink_shift(0.01, 3.0, exact, n) == 0.01


def test_shrink_shift_drops_noise_and_keeps_a_skew_bias():
    from skdp.solvers.heavy_tailed.intercept import shrink_shift

    plan = make_intercept_plan(0.05)
    n = 40_000
    kept, dropped = [], []
    for seed in range(20):
        g = np.random.default_rng(seed)
        sym = g.standard_t(3, size=n)  # mean 0: the shift is noise
        s, R = intercept_shift(sym, plan, g)
        dropped.append((s, shrink_shift(s, R, plan, n)))
        skew = g.exponential(size=n) - np.log(2)  # mean 1 - log 2 ~ 0.31
        s, R = intercept_shift(skew, plan, g)
        kept.append(shrink_shift(s, R, plan, n) / s)
    raw = np.array([s for s, _ in dropped])
    shrunk = np.array([t for _, t in dropped])
    assert np.mean(shrunk**2) < 0.6 * np.mean(raw**2)
    assert min(kept) > 0.9
