"""Accounting of private selection (repeat a private trial, release the best).

Checked against dp-accounting's own ``RepeatAndSelectDpEvent`` (RDP,
REPLACE_ONE) at several (epsilon, delta) and trial distributions, and the
search's per-trial calibration against the total it must meet.
"""

import math

import numpy as np
import pytest
from _toy_estimators import PrivateMean
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

from skdp import HeavyTailedLinearRegression
from skdp.model_selection._plan import plan_search, probe_plan
from skdp.model_selection._selection import draw_n_trials
from skdp.privacy import (
    ComposedDpEvent,
    GaussianDpEvent,
    ParallelDpEvent,
    PoissonSampledDpEvent,
    PrivateSelectionDpEvent,
    PureDpEvent,
    SampledWithoutReplacementDpEvent,
    certify_delta,
    certify_epsilon,
    gdp_mu,
    rdp_curve,
    selection_epsilon,
    truncated_negative_binomial_gamma,
)
from skdp.privacy._selection import DEFAULT_ORDERS, truncated_negative_binomial_mean

SHAPES = [0.0, 0.5, 1.0, 3.0, math.inf]


def _dp_accounting_epsilon(inner, mean, shape, delta):
    acc = rdp_lib.RdpAccountant(neighboring_relation=rdp_lib.NeighborRel.REPLACE_ONE)
    acc.compose(dp_event.RepeatAndSelectDpEvent(inner, mean, shape))
    return acc.get_epsilon(delta)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mean", [2.0, 10.0, 40.0])
@pytest.mark.parametrize("z, delta", [(1.5, 1e-5), (8.0, 1e-7), (30.0, 1e-6)])
def test_selection_epsilon_matches_dp_accounting(shape, mean, z, delta):
    event = PrivateSelectionDpEvent([GaussianDpEvent(z)], mean, shape, delta)
    ref = _dp_accounting_epsilon(GaussianDpEvent(z), mean, shape, delta)
    assert selection_epsilon(event) == pytest.approx(ref, rel=1e-8)


@pytest.mark.parametrize("shape", [0.0, 1.0, math.inf])
def test_selection_of_composed_and_sampled_trials_matches_dp_accounting(shape):
    # A trial mixing full-batch and without-replacement steps.
    wor = SampledWithoutReplacementDpEvent(1000, 50, GaussianDpEvent(3.0))
    inner = ComposedDpEvent(
        [GaussianDpEvent(20.0), dp_event.SelfComposedDpEvent(wor, 30)]
    )
    event = PrivateSelectionDpEvent([inner], 5.0, shape, 1e-6)
    ref = _dp_accounting_epsilon(inner, 5.0, shape, 1e-6)
    assert selection_epsilon(event) == pytest.approx(ref, rel=1e-6)


def test_worst_candidate_and_worst_part_are_charged():
    weak, strong = GaussianDpEvent(10.0), GaussianDpEvent(3.0)
    two = PrivateSelectionDpEvent([weak, strong], 10.0, 1.0, 1e-6)
    one = PrivateSelectionDpEvent([strong], 10.0, 1.0, 1e-6)
    assert selection_epsilon(two) == pytest.approx(selection_epsilon(one))
    # Disjoint parts: the record sits in one of them, so the worse one counts.
    par = PrivateSelectionDpEvent([ParallelDpEvent([weak, strong])], 10.0, 1.0, 1e-6)
    assert selection_epsilon(par) == pytest.approx(selection_epsilon(one))
    # Composition on the same records costs more than either.
    both = PrivateSelectionDpEvent([ComposedDpEvent([weak, strong])], 10.0, 1.0, 1e-6)
    assert selection_epsilon(both) > selection_epsilon(one) * 1.01


def test_rdp_leaves():
    orders = DEFAULT_ORDERS
    # Gaussian: alpha / (2 z^2); pure eps: min(eps, alpha eps^2 / 2).
    assert np.allclose(rdp_curve(GaussianDpEvent(2.0)), orders / 8.0)
    assert np.allclose(rdp_curve(PureDpEvent(0.5)), np.minimum(0.5, orders * 0.125))
    # Poisson at q = 1 is the full-batch Gaussian: the unsampled bound wins.
    pois = PoissonSampledDpEvent(1.0, GaussianDpEvent(2.0))
    assert np.allclose(rdp_curve(pois), orders / 8.0)
    # Without replacement: dp-accounting's curve, read from its accountant.
    wor = SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(1.0))
    acc = rdp_lib.RdpAccountant(neighboring_relation=rdp_lib.NeighborRel.REPLACE_ONE)
    acc.compose(wor, 7)
    ours = rdp_lib.compute_epsilon(
        orders, rdp_curve(dp_event.SelfComposedDpEvent(wor, 7)), 1e-6
    )[0]
    assert ours == pytest.approx(acc.get_epsilon(1e-6), rel=1e-12)


@pytest.mark.parametrize("shape", [0.0, 0.5, 1.0, 4.0])
def test_truncated_negative_binomial_mean_and_sampler(shape):
    gamma = truncated_negative_binomial_gamma(8.0, shape)
    assert truncated_negative_binomial_mean(gamma, shape) == pytest.approx(
        8.0, rel=1e-9
    )
    rng = np.random.default_rng(0)
    draws = np.array([draw_n_trials(rng, 8.0, shape) for _ in range(20_000)])
    assert draws.min() >= 1
    # Standard error of the mean is below 0.1 for these shapes.
    assert abs(draws.mean() - 8.0) < 0.5


def test_poisson_trials_mean():
    rng = np.random.default_rng(0)
    draws = np.array([draw_n_trials(rng, 8.0, math.inf) for _ in range(20_000)])
    assert abs(draws.mean() - 8.0) < 0.1 and draws.min() == 0


# -- the ledger: the RDP guarantee enters as one (epsilon, delta) pair -------------
def test_ledger_conversion_of_a_selection():
    event = PrivateSelectionDpEvent([GaussianDpEvent(8.0)], 10.0, 1.0, 1e-6)
    eps = selection_epsilon(event)
    # Alone: the pair itself, exactly.
    assert certify_epsilon(event, 1e-6) == pytest.approx(eps, rel=1e-12)
    assert certify_delta(event, eps) == pytest.approx(1e-6, rel=1e-6)
    # Below its delta the pair certifies nothing.
    assert math.isinf(certify_epsilon(event, 1e-7))
    # More delta buys a smaller epsilon (exact curve of the pair).
    assert certify_epsilon(event, 1e-3) < eps
    # Composed with a Gaussian fit: at least each part, at most basic composition.
    g = GaussianDpEvent(10.0)
    both = certify_epsilon(ComposedDpEvent([event, g]), 2e-6)
    g_alone = certify_epsilon(g, 1e-6)
    assert max(eps, certify_epsilon(g, 2e-6)) < both <= eps + g_alone + 1e-3
    # With a without-replacement fit (RDP route): basic composition.
    wor = SampledWithoutReplacementDpEvent(1000, 10, GaussianDpEvent(2.0))
    mixed = certify_epsilon(ComposedDpEvent([event, wor]), 2e-6)
    assert mixed == pytest.approx(eps + certify_epsilon(wor, 1e-6), rel=1e-9)


# -- calibration of the per-trial budget --------------------------------------------
def _toy_probe(X, y):
    def probe(c, eps_t, delta_t):
        return probe_plan(PrivateMean(), {}, eps_t, delta_t, X, y, {})

    return probe


@pytest.mark.parametrize("shape", [0.0, 1.0, 2.0, math.inf])
@pytest.mark.parametrize("epsilon, delta", [(0.5, 1e-6), (2.0, 1e-5), (5.0, 1e-7)])
def test_calibration_meets_the_total_checked_by_dp_accounting(shape, epsilon, delta):
    X, y = np.zeros((100, 1)), np.zeros(100)
    plan, _ = plan_search(epsilon, delta, _toy_probe(X, y), 3, 10.0, shape)
    # Independent check: a trial is a Gaussian fit and a Gaussian score on
    # disjoint parts, so its RDP curve is the less noisy Gaussian's.
    z_fit = plan.fit_events[0].noise_multiplier
    z = min(z_fit, plan.score_noise_multiplier)
    ref = _dp_accounting_epsilon(GaussianDpEvent(z), 10.0, shape, delta)
    assert ref <= epsilon * (1 + 1e-9)
    assert ref >= epsilon * (1 - 5e-3)  # and nearly attains it
    assert certify_epsilon(plan.event, delta) <= epsilon * (1 + 1e-9)
    # The score is calibrated as an (epsilon_t, delta_t) Gaussian release.
    assert plan.score_noise_multiplier == pytest.approx(
        1 / gdp_mu(plan.trial_epsilon, plan.trial_delta)
    )


@pytest.mark.parametrize("epsilon", [1.0, 5.0])
def test_calibration_of_a_real_estimator_grid(epsilon):
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(500, 3)), rng.normal(size=500)
    grid = [dict(max_iter=m, feature_norm=f) for m in (5, 20) for f in (1.0, None)]

    def probe(c, eps_t, delta_t):
        return probe_plan(
            HeavyTailedLinearRegression(), grid[c], eps_t, delta_t, X, y, {}
        )

    plan, _ = plan_search(epsilon, 1e-6, probe, len(grid), 10.0, 1.0)
    # Two distinct plans (max_iter changes the plan): the worst one is charged.
    assert len({repr(e) for e in plan.fit_events}) == 2
    assert epsilon * 0.99 <= selection_epsilon(plan.event) <= epsilon


@pytest.mark.parametrize(
    "q, z, steps", [(0.0056, 2.0, 1000), (0.01, 1.0, 100), (0.1, 5.0, 50)]
)
def test_poisson_replace_one_rdp_is_valid_and_amplified(q, z, steps):
    event = dp_event.SelfComposedDpEvent(
        PoissonSampledDpEvent(q, GaussianDpEvent(z)), steps
    )
    curve = rdp_curve(event)
    ours = rdp_lib.compute_epsilon(DEFAULT_ORDERS, curve, 1e-6)[0]
    # Never below the tight PLD answer (a bound below it would be invalid) ...
    assert ours >= certify_epsilon(event, 1e-6)
    # ... and far below the bound without amplification.
    unsampled = steps * DEFAULT_ORDERS / (2 * z**2)
    assert np.all(curve <= unsampled)
    assert ours < 0.2 * rdp_lib.compute_epsilon(DEFAULT_ORDERS, unsampled, 1e-6)[0]


@pytest.mark.parametrize("shape", [1.0, math.inf])
def test_selection_charges_the_trials_failure_probability(shape):
    # A FailureDpEvent has no Renyi-DP curve; the selection must still pay for
    # it in delta ((1 + e^eps) E[K] p), not drop it.
    from skdp.privacy import FailureDpEvent

    mean, delta = 10.0, 1e-6
    clean = GaussianDpEvent(5.0)
    eps_clean = selection_epsilon(PrivateSelectionDpEvent([clean], mean, shape, delta))
    assert math.isinf(
        selection_epsilon(
            PrivateSelectionDpEvent(
                [ComposedDpEvent([clean, FailureDpEvent(0.5)])], mean, shape, delta
            )
        )
    )
    fail = 1e-8
    event = PrivateSelectionDpEvent(
        [ComposedDpEvent([clean, FailureDpEvent(fail)])], mean, shape, delta
    )
    eps = selection_epsilon(event)
    assert eps > eps_clean
    # Certified: the RDP delta at eps plus the failure share stays below delta.
    orders = DEFAULT_ORDERS
    from skdp.privacy import repeat_and_select_rdp

    out = repeat_and_select_rdp(orders, rdp_curve(clean, orders), mean, shape)
    rdp_delta, _ = rdp_lib.compute_delta(orders, out, eps)
    assert rdp_delta + (1 + math.exp(eps)) * mean * fail <= delta * (1 + 1e-9)
    # The ledger charges the same pair.
    assert certify_epsilon(event, delta) == pytest.approx(eps, rel=1e-9)


def test_nispp_poisson_plan_carries_a_failure_event():
    # The plan a search probes for MinimaxFairClassifier(solver="nispp") with
    # Poisson batches holds a FailureDpEvent: the case the test above covers.
    from skdp import MinimaxFairClassifier
    from skdp.privacy import FailureDpEvent

    rng = np.random.default_rng(0)
    X = rng.normal(size=(2000, 2))
    y = (X[:, 0] > 0).astype(int)
    groups = rng.integers(2, size=2000)
    est = MinimaxFairClassifier(
        solver="nispp", sampling="poisson", feature_norm=1.0, classes=[0, 1]
    )
    ev, _ = probe_plan(est, {}, 1.0, 1e-6, X, y, {"sensitive_features": groups})

    def leaves(e):
        for child in getattr(e, "events", []) or []:
            yield from leaves(child)
        inner = getattr(e, "event", None)
        if inner is not None:
            yield from leaves(inner)
        yield e

    fails = [e for e in leaves(ev) if isinstance(e, FailureDpEvent)]
    assert fails and fails[0].probability > 0
