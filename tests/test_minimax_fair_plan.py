"""The public plan and the single result type of MinimaxFairClassifier's solvers."""

import math
import warnings

import numpy as np
import pytest

from skdp import MinimaxFairClassifier, PrivacyAccountant
from skdp.privacy import certify_epsilon
from skdp.solvers.saddle_point.plan import (
    MinimaxPlan,
    gda_plan,
    norm_quantile_reachable,
    plan_minimax,
)
from skdp.solvers.saddle_point.run import MinimaxResult, release_inputs, run_minimax


def _data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.choice(["a", "b"], size=n, p=[0.7, 0.3])
    y = (X[:, 0] + np.where(g == "a", 0.5, -0.5) + rng.logistic(size=n) > 0).astype(int)
    return X, y, g


def test_plan_is_built_without_data_printable_and_comparable():
    kw = dict(max_iter=20, estimation_share=0.2)
    plan = plan_minimax(1.0, 1e-6, 1000, 3, 2, 2, **kw)
    assert isinstance(plan, MinimaxPlan)
    assert plan == plan_minimax(1.0, 1e-6, 1000, 3, 2, 2, **kw)
    assert plan != plan_minimax(1.0, 1e-6, 1000, 3, 2, 2, max_iter=21)
    text = repr(plan)
    assert "MinimaxPlan(" in text and "GaussianDpEvent" in text
    assert plan.estimates == ("feature_norm", "group_priors")
    assert plan.n_releases == plan.gda.n_steps == 20
    # the whole fit's event meets the target, and nearly spends it
    eps = certify_epsilon(plan.event, 1e-6)
    assert 0.99 < eps <= 1.0
    # declared bounds and priors: nothing is estimated, all goes to the steps
    bare = plan_minimax(
        1.0, 1e-6, 1000, 3, 2, 2, estimate_norm=False, estimate_priors=False, **kw
    )
    assert bare.estimates == ()
    assert bare.noise_multiplier < plan.noise_multiplier
    assert bare.event == gda_plan(1.0, 1e-6, [], 20).event


@pytest.mark.parametrize("solver", ["nseg", "nispp"])
def test_operator_solvers_plan_their_batch_schedule(solver):
    plan = plan_minimax(
        1.0, 1e-6, 1000, 3, 2, 2, solver=solver, max_iter=5, estimate_norm=False
    )
    assert plan.gda is None and plan.batches is not None
    assert plan.n_releases == plan.batches.n_releases
    assert certify_epsilon(plan.event, 1e-6) <= 1.0


@pytest.mark.parametrize("solver", ["gda", "nseg", "nispp"])
def test_fit_charges_its_plan_and_sets_attributes_from_one_result_type(solver):
    X, y, g = _data()
    accountant = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = MinimaxFairClassifier(
        epsilon=2.0,
        groups=["a", "b"],
        classes=[0, 1],
        solver=solver,
        max_iter=5,
        batch_size=60 if solver != "gda" else None,
        feature_norm=3.0,
        accountant=accountant,
        random_state=0,
    ).fit(X, y, sensitive_features=g)
    plan = clf._plan(len(y), 3, 2, 2, clf.delta_, True)
    assert clf.n_iter_ * (2 if solver == "nseg" else 1) == plan.n_releases
    assert clf.constants_["noise_multiplier"] == plan.noise_multiplier
    assert clf.privacy_spent_[0] == pytest.approx(
        certify_epsilon(plan.event, clf.delta_)
    )
    # the accountant was charged exactly the plan's event
    assert accountant.ledger[-1][1] == plan.event

    # The same run by hand from the plan: one MinimaxResult, same numbers.
    rng = np.random.default_rng(123)
    codes = np.searchsorted(["a", "b"], g)
    y_code = np.where(y == 1, 1.0, -1.0)
    inputs = release_inputs(X, codes, plan, rng, feature_norm=3.0)
    assert inputs.bound == pytest.approx(math.hypot(3.0, 1.0))
    result = run_minimax(
        inputs.rows, y_code, codes, inputs.priors, inputs.bound, plan, rng
    )
    assert isinstance(result, MinimaxResult)
    assert result.coef.shape == (4,)
    assert result.weights.shape == (2,)
    assert result.n_iter == clf.n_iter_
    assert set(result.constants) == set(clf.constants_)


def test_norm_quantile_out_of_reach_is_not_released():
    """Public rule: when even the median is out of the private norm bound's
    reach (n < 8 z, z the noisy bisection's count noise), the plan releases
    nothing for the bound and uses sqrt(n_features); the threshold is the one
    at which private_norm_bound warns."""
    from skdp.privacy import private_norm_bound
    from skdp.privacy._norm_bound import norm_bound_noise_multiplier

    for mu_q in (0.05, 0.3, 1.0):
        n_lo = math.ceil(8.0 * norm_bound_noise_multiplier(mu_q)) - 1
        assert not norm_quantile_reachable(n_lo, mu_q)
        assert norm_quantile_reachable(n_lo + 1, mu_q)
        rng = np.random.default_rng(0)
        with pytest.warns(UserWarning, match="too few"):
            private_norm_bound(np.ones(n_lo), mu_q, rng=rng)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            private_norm_bound(np.ones(n_lo + 1), mu_q, rng=rng)
    assert norm_quantile_reachable(1, np.inf)
    for n_classes in (2, 3):
        small = plan_minimax(1.0, 1e-6, 150, 4, 1, n_classes, max_iter=50)
        assert small.estimates == () and small.default_feature_norm == 2.0
        assert not norm_quantile_reachable(150, small.estimate_mu)
        # nothing spent on the bound: all of the budget goes to the steps
        assert small.event == gda_plan(1.0, 1e-6, [], 50, n_classes=n_classes).event
        assert 0.99 < certify_epsilon(small.event, 1e-6) <= 1.0
        large = plan_minimax(1.0, 1e-6, 10**5, 4, 1, n_classes, max_iter=50)
        assert large.estimates == ("feature_norm",)
        assert large.default_feature_norm is None
        assert norm_quantile_reachable(10**5, large.estimate_mu)
        assert large.noise_multiplier > small.noise_multiplier
    # with estimated priors the histogram gets the whole estimation share
    both = plan_minimax(1.0, 1e-6, 150, 4, 2, 2, max_iter=50)
    only = plan_minimax(1.0, 1e-6, 150, 4, 2, 2, max_iter=50, estimate_norm=False)
    assert both.estimates == ("group_priors",) == only.estimates
    assert both.event == only.event
    assert both.estimate_noise_multiplier == only.estimate_noise_multiplier


@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
def test_fit_below_the_quantile_reach_uses_the_public_default(classes):
    rng = np.random.default_rng(0)
    n, d = 120, 4
    fits = []
    for scale in (0.1, 100.0):  # the bound does not depend on the data
        X = rng.normal(size=(n, d)) * scale
        y = np.resize(classes, n)
        clf = MinimaxFairClassifier(
            epsilon=1.0, classes=classes, max_iter=30, random_state=0
        )
        with pytest.warns(UserWarning, match=r"sqrt\(n_features\) = 2"):
            clf.fit(X, y)
        assert clf.feature_norm_ == 2.0
        assert clf.privacy_spent_[0] <= 1.0
        fits.append(clf)
    assert fits[0].noise_std_ == fits[1].noise_std_
    # enough rows: the bound is estimated as before, without that warning
    X = rng.normal(size=(4000, d))
    y = np.resize(classes, 4000)
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        clf = MinimaxFairClassifier(
            epsilon=1.0, classes=classes, max_iter=30, random_state=0
        ).fit(X, y)
    assert 1.0 < clf.feature_norm_ < 5.0
