"""The public plan and the single result type of MinimaxFairClassifier's solvers."""

import math

import numpy as np
import pytest

from skdp import MinimaxFairClassifier, PrivacyAccountant
from skdp.privacy import certify_epsilon
from skdp.solvers.saddle_point.plan import MinimaxPlan, gda_plan, plan_minimax
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
