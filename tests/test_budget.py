"""The budget object: splits of mu**2 compose back to the target, exactly."""

import math

import numpy as np
import pytest

from skdp.privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    PureDpEvent,
    SelfComposedDpEvent,
    certify_epsilon,
    gdp_budget,
    gdp_delta,
    gdp_mu,
    split_gdp,
)


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
@pytest.mark.parametrize("shares", [[1.0], [0.1, 0.9], [0.05, 0.25, 0.7]])
def test_split_composes_to_the_target(epsilon, shares):
    """Releases planned from sub-budgets compose to the target (closed-form GDP)."""
    delta = 1e-6
    budget = Budget.from_target(epsilon, delta)
    counts = [1, 7, 30][: len(shares)]
    events = [
        SelfComposedDpEvent(GaussianDpEvent(part.noise_multiplier(c)), c)
        for part, c in zip(budget.split(shares), counts)
    ]
    mu_total = math.sqrt(
        sum(
            c / part.noise_multiplier(c) ** 2
            for part, c in zip(budget.split(shares), counts)
        )
    )
    assert mu_total <= gdp_mu(epsilon, delta)
    assert mu_total == pytest.approx(gdp_mu(epsilon, delta), rel=1e-8)
    # the closed-form GDP curve and the package's certification agree
    assert gdp_delta(mu_total, epsilon) <= delta * (1 + 1e-6)
    certified = certify_epsilon(ComposedDpEvent(events), delta)
    assert certified <= epsilon * (1 + 1e-9)
    assert certified == pytest.approx(epsilon, rel=1e-6)


def test_other_event_is_taken_out_exactly():
    delta = 1e-6
    quantile = PureDpEvent(0.1)
    budget = Budget.from_target(1.0, delta, quantile)
    assert budget.mu < Budget.from_target(1.0, delta).mu
    event = ComposedDpEvent([quantile, GaussianDpEvent(budget.noise_multiplier())])
    assert certify_epsilon(event, delta) == pytest.approx(1.0, rel=1e-3)
    assert certify_epsilon(event, delta) <= 1.0 + 1e-9


def test_noise_multipliers_match_split_gdp():
    budget = Budget.from_target(2.0, 1e-5)
    parts = [(3, 0.2), (10, 0.8)]
    assert budget.noise_multipliers(parts) == split_gdp(budget.mu, parts)
    # one release spending a share: z = 1 / (mu sqrt(share))
    assert budget.share(0.2).noise_multiplier() == pytest.approx(
        1.0 / (budget.mu * math.sqrt(0.2))
    )
    assert budget.share(0.5, count=4).mu == pytest.approx(budget.mu * math.sqrt(0.125))


def test_margin_convention():
    """``margin=True`` is gdp_budget's mu (never overspends); False is exact."""
    exact = Budget.from_target(1.0, 1e-6, margin=False).mu
    assert exact == gdp_mu(1.0, 1e-6)
    assert Budget.from_target(1.0, 1e-6).mu == gdp_budget(1.0, 1e-6) < exact


def test_infinite_budget_means_no_noise():
    budget = Budget.from_target(np.inf, 1e-6)
    assert budget.is_infinite
    assert all(b.noise_multiplier(5) == 0.0 for b in budget.split([0.3, 0.7]))
    assert budget.epsilon(1e-6) == math.inf


@pytest.mark.parametrize("bad", [[0.6, 0.6], [0.0, 1.0], [-0.1]])
def test_bad_shares_raise(bad):
    with pytest.raises(ValueError):
        Budget(1.0).split(bad)


def test_budget_is_comparable_and_printable():
    assert Budget(0.5) == Budget(0.5) != Budget(0.4)
    assert repr(Budget(0.5)) == "Budget(mu=0.5)"
    with pytest.raises(ValueError):
        Budget(0.0)
