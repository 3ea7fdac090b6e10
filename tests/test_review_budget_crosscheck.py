"""Independent cross-checks of the unified estimation budget (privacy review R1).

The plan of a MinimaxFairClassifier fit (the Gaussian norm bound at GDP
``mu sqrt(share)``, a noisy histogram, a private mean and the solver's
Gaussian steps) is recomposed from scratch with dp-accounting's PLD
accountant and must meet the reported ``privacy_spent_`` and the target; the
multinomial release is checked on neighbours that change features, class and
group together; the deprecated share names give the same fit as the new one.
"""

import math
import warnings

import numpy as np
import pytest
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from skdp import BilevelRidge, HeavyTailedLinearRegression, MinimaxFairClassifier
from skdp.privacy import Budget
from skdp.solvers.saddle_point.gda import (
    stacked_sensitivity,
    stacked_statistic_multinomial,
)

_GRID = 2e-6  # PLD grid fine enough that its pessimism stays below 1e-5


def _pld_epsilon(pure, gaussian_mu2, delta):
    """Epsilon of pure steps composed with a ``sqrt(gaussian_mu2)``-GDP part."""
    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=1.0 / math.sqrt(gaussian_mu2),
        sensitivity=1.0,
        value_discretization_interval=_GRID,
    )
    for eps in pure:
        pld = pld.compose(
            pld_lib.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(eps, 0.0),
                value_discretization_interval=_GRID,
            )
        )
    return pld.get_epsilon_for_delta(delta)


@pytest.mark.parametrize(
    "kwargs",
    [
        {},
        {"center": True},
        {"center": True, "estimation_share": 0.6},
        {"epsilon": 4.0, "estimation_share": 0.3},
    ],
)
def test_multiclass_minimax_plan_is_certified_by_dp_accounting_pld(kwargs):
    rng = np.random.default_rng(0)
    n = 1500
    X = rng.normal(size=(n, 3))
    y = rng.integers(0, 3, n)
    groups = rng.choice(["a", "b"], n)
    clf = MinimaxFairClassifier(
        classes=[0, 1, 2], groups=["a", "b"], max_iter=20, random_state=0, **kwargs
    ).fit(X, y, sensitive_features=groups)
    eps, delta = float(clf.epsilon), clf.delta_
    share = kwargs.get("estimation_share", 0.1)
    k = 2 + int(kwargs.get("center", False))  # norm, priors, (mean)
    each = Budget.from_target(eps, delta, margin=False).share(share, k).mu
    # every estimate (the norm bound's 10 Gaussian counts too) at GDP
    # mu sqrt(share / k); the steps at 1/z each
    z = clf.constants_["noise_multiplier"]
    # and the shrinkage toward the base rates at calibration_share of mu**2
    shrink = Budget.from_target(eps, delta, margin=False).share(0.1).mu
    mu2 = k * each**2 + clf.n_iter_ / z**2 + shrink**2
    independent = _pld_epsilon([], mu2, delta)
    assert independent <= eps * (1 + 1e-5)
    assert clf.privacy_spent_[0] <= eps
    assert clf.privacy_spent_[0] == pytest.approx(independent, rel=1e-4)


def test_multinomial_release_moves_within_sensitivity_when_group_and_class_change():
    rng = np.random.default_rng(3)
    worst = 0.0
    for _ in range(400):
        n, p, K, m = 5, 3, int(rng.integers(3, 6)), int(rng.integers(2, 4))
        bound = 2.0
        X = rng.normal(size=(n, p)) * rng.choice([0.01, 1.0, 100.0])
        X *= np.minimum(1.0, bound / np.linalg.norm(X, axis=1, keepdims=True))
        y, g = rng.integers(0, K, n), rng.integers(0, m, n)
        W = rng.normal(size=(p, K)) * rng.choice([0.1, 1.0, 30.0])
        a = rng.exponential(size=m) * rng.choice([1.0, 10.0])
        C, B = math.sqrt(2.0) * bound, 4.0 * math.log(K)
        lam = rng.uniform(0.0, 2.0) * C / B
        s0 = stacked_statistic_multinomial(X, y, g, m, W, a, C, B, lam)
        X2, y2, g2 = X.copy(), y.copy(), g.copy()
        X2[0] = rng.normal(size=p)
        X2[0] *= min(1.0, bound / np.linalg.norm(X2[0]))
        y2[0], g2[0] = (y[0] + 1) % K, (g[0] + 1) % m  # new class AND group
        s1 = stacked_statistic_multinomial(X2, y2, g2, m, W, a, C, B, lam)
        worst = max(worst, np.linalg.norm(s1 - s0) / stacked_sensitivity(a, C, lam * B))
    assert worst <= 1.0 + 1e-12


@pytest.mark.parametrize(
    "make, old",
    [
        (lambda **kw: BilevelRidge(inner_solver="sufficient_statistics", **kw),
         "bounds_epsilon_share"),
        (lambda **kw: BilevelRidge(**kw), "bounds_epsilon_share"),
        (lambda **kw: HeavyTailedLinearRegression(**kw), "bound_share"),
    ],
)  # fmt: skip
def test_deprecated_share_name_gives_the_same_plan_and_fit(make, old):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1000, 3))
    y = X @ np.array([1.0, 2.0, 3.0]) + rng.normal(size=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        new = make(estimation_share=0.3, random_state=0).fit(X, y)
    with pytest.warns(FutureWarning, match=old):
        dep = make(**{old: 0.3}, random_state=0).fit(X, y)
    assert dep.privacy_spent_ == new.privacy_spent_
    np.testing.assert_array_equal(dep.coef_, new.coef_)
