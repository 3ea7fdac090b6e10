"""Independent cross-checks of three public rules landed in session 6 (review R2).

- MinimaxFairClassifier: the feature-norm bound (a noisy bisection since the
  norm bounds merged) that ``n`` cannot support is not released (public
  default ``sqrt(n_features)``); on both sides of the
  reach the fit's event, recomposed with dp-accounting's PLD from its leaves,
  meets the target, and the branch, radius and momentum do not move with
  empty declared classes or groups.
- HeavyTailedLogisticRegression(max_iter="auto"): the softmax fit draws as
  many gradient releases as the rule's ``T``, the event holds that count and
  is certified by dp-accounting; numpy and dask use the same ``T``.
- BilevelRidge (gd): where the curvature release is planned from the 0.4
  ratio, the event (all Gaussian) is certified by dp-accounting.
"""

import math
import warnings

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib

from skdp import BilevelRidge, HeavyTailedLogisticRegression, MinimaxFairClassifier
from skdp.privacy import PureDpEvent
from skdp.privacy._norm_bound import RANGE_STEPS
from skdp.solvers.bilevel.ridge import gd as rgd
from skdp.solvers.heavy_tailed import multinomial as mn
from skdp.solvers.saddle_point.plan import norm_quantile_reachable

# dask and numpy fits compared noise for noise (see conftest.py)
pytestmark = pytest.mark.usefixtures("dask_input_shares_the_numpy_stream")

_GRID = 2e-6  # fine enough that the PLD's pessimism stays below 1e-5


def _leaves(event, count=1):
    """``(kind, parameter, count)`` of every leaf of a skdp event tree."""
    if isinstance(event, dp_event.ComposedDpEvent):
        return [leaf for e in event.events for leaf in _leaves(e, count)]
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _leaves(event.event, count * int(event.count))
    if isinstance(event, dp_event.GaussianDpEvent):
        return [("gauss", float(event.noise_multiplier), count)]
    if isinstance(event, PureDpEvent):
        return [("pure", float(event.epsilon), count)]
    if isinstance(event, dp_event.NoOpDpEvent):
        return []
    raise TypeError(f"unexpected event {event!r}")


def _bound_events(event):
    """The norm bound's ``RANGE_STEPS`` Gaussian counts in an event tree."""
    if isinstance(event, dp_event.ComposedDpEvent):
        return [b for e in event.events for b in _bound_events(e)]
    if isinstance(event, dp_event.SelfComposedDpEvent) and event.count == RANGE_STEPS:
        return [event]
    return []


def _pld_epsilon(event, delta):
    """dp-accounting's PLD epsilon of a composition of Gaussian and pure leaves."""
    leaves = _leaves(event)
    mu2 = sum(c / z**2 for kind, z, c in leaves if kind == "gauss" and z > 0)
    assert all(z > 0 for kind, z, _ in leaves if kind == "gauss")
    pld = pld_lib.from_gaussian_mechanism(
        standard_deviation=1.0 / math.sqrt(mu2),
        sensitivity=1.0,
        value_discretization_interval=_GRID,
    )
    for kind, eps, c in leaves:
        if kind == "pure":
            pure = pld_lib.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(eps, 0.0),
                value_discretization_interval=_GRID,
            )
            for _ in range(c):
                pld = pld.compose(pure)
    return pld.get_epsilon_for_delta(delta)


def _spy(cls):
    """``cls`` recording the events it charges."""

    class Spy(cls):
        def _spend(self, event):
            type(self).events.append(event)
            return super()._spend(event)

    Spy.events = []
    Spy.__name__ = cls.__name__
    return Spy


# -- MinimaxFairClassifier: the norm quantile out of reach ------------------------
@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
@pytest.mark.parametrize("n", [150, 3000])
def test_minimax_fit_event_is_certified_by_dp_accounting_on_both_sides(classes, n):
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(n, 4))
    y = np.resize(classes, n)
    g = rng.integers(0, 2, n)
    Spy = _spy(MinimaxFairClassifier)
    clf = Spy(epsilon=1.0, classes=classes, groups=[0, 1], max_iter=40, random_state=0)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        clf.fit(X, y, sensitive_features=g)
    defaulted = any("too few" in str(w.message) for w in caught)
    (event,) = Spy.events
    # the norm bound: RANGE_STEPS Gaussian counts (the gda steps are 40)
    bound = _bound_events(event)
    # the branch: the bound is released iff reachable
    assert defaulted == (n == 150) == (not bound)
    if bound:
        z_bound = bound[0].event.noise_multiplier
        assert norm_quantile_reachable(n, math.sqrt(RANGE_STEPS) / z_bound)
        assert not norm_quantile_reachable(n // 20, math.sqrt(RANGE_STEPS) / z_bound)
    else:
        assert clf.feature_norm_ == 2.0  # sqrt(n_features)
    eps = _pld_epsilon(event, clf.delta_)
    assert eps <= 1.0 + 1e-5
    assert eps > 0.99  # the budget is spent, not wasted
    assert clf.privacy_spent_[0] <= 1.0


def test_minimax_branch_radius_momentum_ignore_empty_declared_sets():
    rng = np.random.default_rng(1)
    n, d = 120, 4
    X = rng.uniform(-1, 1, size=(n, d))
    out = []
    for n_classes, n_groups in [(3, 3), (4, 3), (3, 2), (4, 2)]:
        y = rng.integers(0, n_classes, n)  # class 3 present or not
        g = rng.integers(0, n_groups, n)  # group 2 present or not
        clf = MinimaxFairClassifier(
            epsilon=1.0,
            classes=[0, 1, 2, 3],
            groups=[0, 1, 2],
            max_iter=10,
            random_state=0,
        )
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            clf.fit(X, y, sensitive_features=g)
        warned = any("too few" in str(w.message) for w in caught)
        c = clf.constants_
        out.append(
            (warned, clf.feature_norm_, clf.radius_, c["momentum"], c["step_size"])
        )
    assert out[0][0]  # n = 120 at epsilon = 1: below the reach
    assert all(o == out[0] for o in out)


# -- HeavyTailedLogisticRegression(max_iter="auto"): the softmax fit's T ----------
def _three_classes(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, 3))
    score = X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n)
    return X, np.digitize(score, [-0.5, 0.8])


@pytest.mark.parametrize("n, steps", [(300, 30), (3000, 300)])
def test_auto_steps_are_the_draws_and_the_event(monkeypatch, n, steps):
    X, y = _three_classes(n)
    draws = []
    real = mn.gaussian_noise

    def recorded(rng, std, size=None, **ledger):
        draws.append(size)
        return real(rng, std, size, **ledger)

    monkeypatch.setattr(mn, "gaussian_noise", recorded)
    Spy = _spy(HeavyTailedLogisticRegression)
    est = Spy(epsilon=1.0, delta=1e-6, classes=[0, 1, 2], random_state=0)
    est.fit(X, y)
    dim = (3 + 1) * 3
    mu = est._budget(1)
    assert mn.auto_multinomial_steps(n, dim, mu) == steps == est.n_iter_
    assert draws.count(dim) == steps  # one d x K release per step
    (event,) = Spy.events
    counts = [c for _, _, c in _leaves(event)]
    assert counts.count(steps) == 1 and max(counts) == steps
    eps = _pld_epsilon(event, est.delta_)
    assert 0.99 < eps <= 1.0 + 1e-5


def test_auto_steps_on_dask_match_numpy(client):
    da = pytest.importorskip("dask.array")
    X, y = _three_classes(3000)
    kw = dict(epsilon=1.0, delta=1e-6, classes=[0, 1, 2], random_state=0)
    a = HeavyTailedLogisticRegression(**kw).fit(X, y)
    b = HeavyTailedLogisticRegression(**kw).fit(
        da.from_array(X, chunks=(700, -1)), da.from_array(y, chunks=700)
    )
    assert a.n_iter_ == b.n_iter_ == 300
    assert a.privacy_spent_ == b.privacy_spent_
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10)


# -- BilevelRidge (gd): the curvature release planned from the 0.4 ratio --------
@pytest.mark.parametrize("ratio_rule", [0.4, 0.5])
def test_bilevel_ridge_curvature_band_event_is_certified_by_dp_accounting(
    monkeypatch, ratio_rule
):
    from skdp.solvers.bilevel.ridge import gd_defaults as bilevel_module

    monkeypatch.setattr(rgd, "CURVATURE_RATIO", ratio_rule)
    plans = []
    real = bilevel_module.plan_ridge_gd

    def recorded(*args, **kwargs):
        plans.append(real(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(bilevel_module, "plan_ridge_gd", recorded)
    rng = np.random.default_rng(0)
    n, d = 1000, 20
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) * 0.1 + rng.normal(size=n)
    Spy = _spy(BilevelRidge)
    est = Spy(
        epsilon=1.0,
        delta=1e-6,  # the former benchmarks' min(1e-6, 1 / n**2)
        inner_solver="gd",
        feature_norm=3.0 * math.sqrt(d),
        target_bound=5.0,
        random_state=0,
    ).fit(X, y)
    (event,) = Spy.events
    (plan,) = plans
    assert event == plan.event
    # n = 1e3, d = 20, epsilon = 1 (ratio 0.42) is in the new band: released
    # from 0.4 on, not at 0.5, and the event holds the release iff planned
    assert plan.measure_curvature == (ratio_rule == 0.4)
    curvature = ("gauss", plan.z_curvature, 1)
    assert (curvature in _leaves(event)) == plan.measure_curvature
    eps = _pld_epsilon(event, est.delta_)
    assert 0.99 < eps <= 1.0 + 1e-5
    assert est.privacy_spent_[0] <= 1.0
