"""Independent cross-checks of MinimaxFairClassifier's multinomial gda rules
(review RV2): ``multinomial_bound_share``, ``multinomial_clip_scale`` and the
one-group primal averaging of ``gda_plan(n_groups=...)``.

The norm bound is the one release whose budget the bound-share rule moves: each
test records the GDP budget the fit actually hands to
:func:`~skdp.privacy.private_norm_bound` (numpy and dask paths) and the noise
multiplier of the steps it runs, and checks them against the event charged to
the shared accountant before any record is read.
"""

import math
import warnings

import numpy as np
import pytest

import skdp.fairness._dask_fit as dask_fit
import skdp.solvers.saddle_point.plan as plan_module
import skdp.solvers.saddle_point.run as run_module
from skdp import MinimaxFairClassifier, PrivacyAccountant
from skdp.privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    SelfComposedDpEvent,
    certify_epsilon,
    private_norm_bound_event,
)


def _data(n, K, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4)) / 2.0
    y = rng.integers(0, K, size=n)
    g = rng.integers(0, 2, size=n)
    return X, y, g


def _spy_release(monkeypatch):
    """Record the budget of every norm-bound release and the steps' noise."""
    seen = {"mu": [], "z": []}
    for module in (run_module, dask_fit):
        original = module.private_norm_bound

        def spy(values, mu, *args, _original=original, **kwargs):
            seen["mu"].append(float(mu))
            return _original(values, mu, *args, **kwargs)

        monkeypatch.setattr(module, "private_norm_bound", spy)
    gda_run = run_module.group_dro_gda

    def steps(*args, **kwargs):
        seen["z"].append(float(kwargs["noise_multiplier"]))
        return gda_run(*args, **kwargs)

    monkeypatch.setattr(run_module, "group_dro_gda", steps)
    return seen


def _as_dask(X, y, g):
    da = pytest.importorskip("dask.array")
    return (
        da.from_array(X, chunks=(700, -1)),
        da.from_array(y, chunks=700),
        da.from_array(g, chunks=700),
    )


@pytest.mark.parametrize("dask", [False, True])
@pytest.mark.parametrize(
    "K, share, grouped",
    [
        (3, 0.1, False),  # the bound alone: a fifth of its share
        (3, 0.3, False),  # a user share: a fifth of it
        (3, 0.1, True),  # declared groups, given priors: still the bound alone
        (2, 0.1, False),  # binary: the whole share
    ],
)
def test_the_released_bound_spends_exactly_what_was_charged(
    monkeypatch, dask, K, share, grouped
):
    n, eps, delta = 1500, 1.0, 1e-6
    X, y, g = _data(n, K)
    kw = dict(groups=[0, 1], group_priors=[0.5, 0.5]) if grouped else {}
    sf = g if grouped else None
    if dask:
        X, y, sf_d = _as_dask(X, y, g)
        sf = sf_d if grouped else None
    seen = _spy_release(monkeypatch)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = MinimaxFairClassifier(
        epsilon=eps,
        delta=delta,
        classes=list(range(K)),
        estimation_share=share,
        calibration_share=0.0,  # the bound and the steps only
        max_iter=20,
        accountant=acc,
        random_state=0,
        **kw,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y, sensitive_features=sf)
    _, charged = acc.ledger[0]
    plan = clf._plan(n, 4, 2 if grouped else 1, K, delta, False)
    assert plan.estimates == ("feature_norm",)
    full = Budget.from_target(eps, delta, margin=False).share(share).mu
    fraction = plan_module._GDA_MULTINOMIAL_BOUND_SHARE if K > 2 else 1.0
    assert plan.estimate_mu == pytest.approx(full * math.sqrt(fraction), rel=1e-12)
    # one release of the bound, at the plan's budget, and nothing else read
    assert seen["mu"] == [plan.estimate_mu]
    assert seen["z"] == [plan.noise_multiplier]
    # the charged event is the bound at that budget, then the planned steps
    steps = SelfComposedDpEvent(GaussianDpEvent(plan.noise_multiplier), 20)
    expected = ComposedDpEvent(
        [ComposedDpEvent([private_norm_bound_event(seen["mu"][0])]), steps]
    )
    assert charged == plan.event == expected
    spent = certify_epsilon(charged, delta)
    assert clf.privacy_spent_ == (spent, delta)
    assert 0.99 * eps < spent <= eps


def test_epsilon_inf_releases_the_exact_quantile_and_charges_nothing(monkeypatch):
    X, y, _ = _data(1500, 3)
    seen = _spy_release(monkeypatch)
    clf = MinimaxFairClassifier(
        epsilon=np.inf, classes=range(3), max_iter=5, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    assert seen["mu"] == [math.inf] and seen["z"] == [0.0]
    assert clf.privacy_spent_[0] == math.inf


@pytest.mark.parametrize("n_features, n", [(4, 300), (4, 400), (64, 300)])
def test_bound_share_falls_back_to_the_whole_share_where_a_fifth_is_out_of_reach(
    n_features, n
):
    """Between the reach of the whole share and the reach of a fifth of it the
    bound keeps the whole share (it is still released, not replaced by the
    public default)."""
    eps, delta = 1.0, n**-1.1
    full = Budget.from_target(eps, delta, margin=False).share(0.1).mu
    fifth = full * math.sqrt(plan_module._GDA_MULTINOMIAL_BOUND_SHARE)
    assert plan_module.norm_quantile_reachable(n, full)
    assert not plan_module.norm_quantile_reachable(n, fifth)
    plan = plan_module.plan_minimax(eps, delta, n, n_features, 1, 3, max_iter=100)
    assert plan.estimates == ("feature_norm",)
    assert plan.default_feature_norm is None
    assert plan_module.multinomial_bound_share(n, full) == 1.0
    assert plan.estimate_mu == pytest.approx(full, rel=1e-12)


def test_one_group_averaging_rule_reads_the_declared_groups_on_every_path():
    """n_groups is the declared (or, with a PrivacyLeakWarning, inferred)
    number of groups: one declared group averages early like a fit without
    sensitive_features, two declared groups keep the schedule's window, and
    two groups read from the data warn and plan as two declared groups."""
    X, y, g = _data(20000, 5)
    kw = dict(classes=range(5), feature_norm=2.0, max_iter=3, random_state=0)
    seen = []
    original = run_module.group_dro_gda

    def spy(*args, **kwargs):
        seen.append(kwargs["primal_average_from"])
        return original(*args, **kwargs)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(run_module, "group_dro_gda", spy)
        MinimaxFairClassifier(**kw).fit(X, y)
        MinimaxFairClassifier(groups=["all"], **kw).fit(
            X, y, sensitive_features=np.full(len(y), "all")
        )
        MinimaxFairClassifier(groups=[0, 1], group_priors=[0.5, 0.5], **kw).fit(
            X, y, sensitive_features=g
        )
        with pytest.warns(Warning, match="groups"):
            MinimaxFairClassifier(group_priors=[0.5, 0.5], **kw).fit(
                X, y, sensitive_features=g
            )
    one, declared_one, two, inferred_two = seen
    assert one == declared_one is not None and one < 0.5
    assert two is None and inferred_two is None


@pytest.mark.parametrize("center, priors", [(True, None), (False, "estimated")])
def test_bound_share_leaves_plans_with_other_estimates_alone(center, priors):
    """A private mean or estimated priors: the bound keeps its equal part of
    the share (the rule is for the bound alone)."""
    n, eps, delta = 5000, 1.0, 1e-6
    n_groups = 2 if priors == "estimated" else 1
    plan = plan_module.plan_minimax(
        eps, delta, n, 4, n_groups, 3, center=center, max_iter=20
    )
    assert len(plan.estimates) == 2 and plan.estimates[0] == "feature_norm"
    equal = Budget.from_target(eps, delta, margin=False).share(0.1, 2).mu
    assert plan.estimate_mu == pytest.approx(equal, rel=1e-12)
    assert plan.event.events[0].events[0] == private_norm_bound_event(equal)


@pytest.mark.parametrize("n, K, max_iter", [(40, 12, 1), (60, 40, 3), (2000, 25, 1)])
def test_edge_sizes_stay_within_the_budget_and_finite(n, K, max_iter):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3)) + 1.0
    y = rng.integers(0, K, size=n)
    for center in (False, True):
        clf = MinimaxFairClassifier(
            epsilon=0.3,
            classes=range(K),
            center=center,
            max_iter=max_iter,
            random_state=0,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            clf.fit(X, y)
        assert clf.privacy_spent_[0] <= 0.3
        assert np.all(np.isfinite(clf.coef_)) and np.all(np.isfinite(clf.intercept_))
        assert 0.0 < clf.constants_["clip"] < math.inf
