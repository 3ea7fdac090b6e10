"""Review R4 of the curvature release of BilevelRidge's plug-in rule.

Regression tests (no defect found): the pre-noise sum moves by at most its
declared sensitivity 1 on adversarial neighbours (clipped rows and residuals,
extreme and subnormal values, the intercept column; numpy, CSR and dask give
the same sum), and the estimator's plan, with the release, is what
dp-accounting certifies and what ``privacy_spent_`` reports.
"""

import math
import warnings

import dp_accounting
import numpy as np
import pytest
import scipy.sparse as sp
from dp_accounting import dp_event

from skdp import BilevelRidge
from skdp.privacy import Budget, gdp_mu
from skdp.solvers.bilevel.ridge import curvature as curv
from skdp.solvers.bilevel.ridge import gd as rgd
from skdp.solvers.bilevel.ridge import gd_defaults


def _released_inputs(fit_intercept, row_bound, seed):
    """Inputs of the release in a real run: (X, y, w, clip, B, column)."""
    seen = []
    real = curv.clipped_curvature

    def spy(X, y, w, clip, s, z, rng, fit_intercept, **kwargs):
        seen.append((np.array(w), float(clip), float(s), kwargs.get("row_bound")))
        return real(X, y, w, clip, s, z, rng, fit_intercept, **kwargs)

    rng = np.random.default_rng(seed)
    n, d = 1000, 20
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1) / 7.0)[:, None]
    y = X @ np.full(d, 0.05) + 30.0 * rng.normal(size=n)
    plan = rgd.plan_ridge_gd(
        gdp_mu(0.5, 1e-6),
        n,
        d,
        tuning="risk_estimate",
        curvature_share="auto",
        fit_intercept=fit_intercept,
    )
    assert plan.measure_curvature
    mp = pytest.MonkeyPatch()
    try:
        mp.setattr(rgd, "clipped_curvature", spy)
        rgd.ridge_gd(X, y, plan, rng, row_bound=row_bound)
    finally:
        mp.undo()
    assert len(seen) == 1  # one release, as planned
    w, clip, s, bound = seen[0]
    D = d + int(fit_intercept)
    B = curv.curvature_row_bound(s, D, bound)
    column = s if fit_intercept else 0.0
    return X, y, w, clip, B, column


def _moves(fit_intercept, row_bound, seed, n_pairs=400):
    X, y, w, clip, B, col = _released_inputs(fit_intercept, row_bound, seed)
    n, d = X.shape
    coef, b = (w[:-1], w[-1]) if fit_intercept else (w, 0.0)

    def total(A, t):
        return curv._curvature_sum(A, t, w, clip, B, col, fit_intercept)[0]

    base = total(X, y)
    assert total(sp.csr_matrix(X), y) == pytest.approx(base, rel=1e-12)
    rng = np.random.default_rng(seed + 100)
    moves = []
    for k in range(n_pairs):
        X2, y2 = X.copy(), y.copy()
        i = int(rng.integers(n))
        kind = k % 6
        if kind == 0:  # a row far outside the release's row clip B
            X2[i] = rng.normal(size=d) * rng.choice([10.0, 1e6, 1e150])
        elif kind == 1:  # a clipped residual
            y2[i] = rng.choice([-1.0, 1.0]) * 10 ** rng.uniform(1, 300)
        elif kind == 2:  # a kept row (zero residual) at or above B
            X2[i] = rng.normal(size=d) * rng.choice([0.5, 2.0, 5.0])
            y2[i] = X2[i] @ coef + b
        elif kind == 3:  # only the intercept column left
            X2[i], y2[i] = 0.0, b
        elif kind == 4:  # subnormal row, huge target
            X2[i], y2[i] = 1e-320, 1e300
        else:  # overflowing residual and row norm
            X2[i], y2[i] = 1e200, -1e308
        moves.append(abs(total(X2, y2) - base))
    return np.array(moves)


@pytest.mark.parametrize("fit_intercept", [True, False])
@pytest.mark.parametrize("row_bound", [None, 7.0])
def test_curvature_sum_moves_at_most_one_on_adversarial_neighbours(
    fit_intercept, row_bound
):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # silent on extreme rows
        moves = _moves(fit_intercept, row_bound, seed=int(fit_intercept))
    assert np.all(moves <= 1.0 + 1e-9)
    assert moves.max() > 0.5  # the bound is nearly attained


def test_curvature_sum_is_the_same_on_dask_chunks():
    da = pytest.importorskip("dask.array")
    import dask

    from skdp.solvers._distributed import record_sum

    X, y, w, clip, B, col = _released_inputs(True, 7.0, seed=2)
    args = (w, clip, B, col, True)
    exact = curv._curvature_sum(X, y, *args)[0]
    with dask.config.set(scheduler="synchronous"):
        chunked = record_sum(
            curv._curvature_sum,
            (da.from_array(X, chunks=(128, X.shape[1])), da.from_array(y, 128)),
            *args,
        )[0]
    assert chunked == pytest.approx(exact, rel=1e-12)


def _doubled(event):
    """The event with every Gaussian multiplier doubled (see below)."""
    if isinstance(event, dp_event.GaussianDpEvent):
        return dp_event.GaussianDpEvent(2 * event.noise_multiplier)
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return dp_event.SelfComposedDpEvent(_doubled(event.event), event.count)
    if isinstance(event, dp_event.ComposedDpEvent):
        return dp_event.ComposedDpEvent([_doubled(e) for e in event.events])
    raise TypeError(f"unexpected event {event!r}")


def _leaves(event):
    if isinstance(event, dp_event.GaussianDpEvent):
        yield ("gauss", event.noise_multiplier)
    elif isinstance(event, dp_event.SelfComposedDpEvent):
        for _ in range(event.count):
            yield from _leaves(event.event)
    else:
        for e in event.events:
            yield from _leaves(e)


def test_estimator_plan_with_the_release_matches_dp_accounting(monkeypatch):
    plans = []
    real = gd_defaults.plan_ridge_gd

    def spy(*args, **kwargs):
        plans.append(real(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(gd_defaults, "plan_ridge_gd", spy)
    eps, delta, n, d = 0.5, 1e-6, 1000, 20
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(n, d)), rng.normal(size=n)
    est = BilevelRidge(
        epsilon=eps, delta=delta, feature_norm=5.0, target_bound=5.0, random_state=0
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    # the switch is a function of n, d and the budget: same plan on other data
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BilevelRidge(epsilon=eps, delta=delta, feature_norm=5.0, target_bound=5.0).fit(
            10.0 * rng.standard_t(2, size=(n, d)), rng.normal(size=n) ** 3
        )
    plan, other = plans
    assert plan.measure_curvature and plan == other
    mu = Budget.from_target(eps, delta).mu
    share = rgd.CURVATURE_SHARE * (1.0 - rgd.INTERCEPT_SHARE)
    assert plan.z_curvature == pytest.approx(1.0 / (math.sqrt(share) * mu), rel=1e-6)
    # dp-accounting's PLD, REPLACE_ONE: it reads the multiplier as sigma / C
    # with sensitivity 2 C; ours is sigma / sensitivity, so pass 2 z.
    events = list(_leaves(plan.event))
    assert ("gauss", plan.z_curvature) in events  # the release is in the plan
    acc = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=1e-5,
    )
    acc.compose(_doubled(plan.event))
    assert acc.get_epsilon(delta) == pytest.approx(eps, abs=1e-5)
    assert est.privacy_spent_[0] <= eps and est.privacy_spent_[1] == delta


def test_audit_configuration_runs_the_curvature_release(monkeypatch):
    # The audit variant covers the release only while its plan is above
    # CURVATURE_RATIO (a narrow margin at n = 50, d = 2, epsilon = 1).
    from skdp._testing.audit_configs import AUDIT_VARIANTS

    name, params = AUDIT_VARIANTS["BilevelRidge(inner_solver='gd', curvature release)"]
    assert name == "BilevelRidge"
    plans = []
    real = gd_defaults.plan_ridge_gd

    def spy(*args, **kwargs):
        plans.append(real(*args, **kwargs))
        return plans[-1]

    monkeypatch.setattr(gd_defaults, "plan_ridge_gd", spy)
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(50, 2)), np.clip(rng.normal(size=50), -1, 1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        BilevelRidge(epsilon=1.0, random_state=0, **params).fit(X, y)
    assert plans[-1].measure_curvature
