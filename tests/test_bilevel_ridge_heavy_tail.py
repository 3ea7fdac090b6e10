"""The gd solver's heavy-tail clip floor (HEAVY_TAIL_CLIPPED): a public rule on releases."""

import math

import numpy as np
import pytest

from skdp.privacy import gdp_mu
from skdp.solvers.bilevel.ridge import gd as rgd

N, D = 100_000, 5


@pytest.fixture
def floor_on(monkeypatch):
    monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", 0.4)


def _rows(kind, seed=0):
    rng = np.random.default_rng(seed)
    if kind == "t3":
        X = rng.standard_t(3, size=(N, D))
    else:
        X = rng.normal(size=(N, D))
    y = X @ np.ones(D) / math.sqrt(D) + 1.0 + rng.normal(size=N)
    return X, y


def _fit(X, y, mu=None, seed=0):
    mu = gdp_mu(1.0, 1e-10) if mu is None else mu
    plan = rgd.plan_ridge_gd(
        mu, N, D, tuning="risk_estimate", curvature_share=0.05, large_n_rule=True
    )
    return plan, rgd.ridge_gd(X, y, plan, np.random.default_rng(seed))


def test_off_when_switched_off(monkeypatch):
    monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", None)
    plan, res = _fit(*_rows("t3"))
    assert plan.heavy_tail_clipped == 0.0
    assert res.info["clip_fraction"] == plan.fit.gd.clip_fraction


def test_fires_on_heavy_tailed_rows_only(floor_on):
    plan, res = _fit(*_rows("t3"))
    assert plan.heavy_tail_clipped == 0.4
    assert plan.fit.gd.clip_fraction < 0.4
    assert res.info["clip_fraction"] == 0.4
    s, T = res.info["feature_scale"], res.info["truncation_threshold"]
    assert T > rgd.HEAVY_TAIL_RATIO * s * math.sqrt(D + 1)
    plan, res = _fit(*_rows("gauss"))
    s, T = res.info["feature_scale"], res.info["truncation_threshold"]
    assert T < rgd.HEAVY_TAIL_RATIO * s * math.sqrt(D + 1)
    assert res.info["clip_fraction"] == plan.fit.gd.clip_fraction < 0.4


def test_not_where_the_truncation_level_is_lowered(floor_on):
    # n = 1e4: the truncation quantile is read at a lowered level (times a
    # slack), too coarse to tell tails apart; the floor stays off
    plan = rgd.plan_ridge_gd(
        gdp_mu(1.0, 1e-8), 10_000, 20, tuning="risk_estimate", large_n_rule=True
    )
    assert plan.heavy_tail_clipped == 0.0
    # and below the large-n rule's threshold
    plan = rgd.plan_ridge_gd(gdp_mu(1.0, 1e-8), 5_000, 5, large_n_rule=True)
    assert plan.heavy_tail_clipped == 0.0


def test_the_privacy_plan_does_not_move(floor_on, monkeypatch):
    # the floor changes a quantile level (post-processing), not a release
    on = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", None)
    off = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    assert on.heavy_tail_clipped == 0.4 and off.heavy_tail_clipped == 0.0
    assert on.event == off.event
    assert on.fit == off.fit


def test_without_noise_no_floor(floor_on):
    # epsilon = inf: the same code path; without noise the scales are exact
    # maxima and nothing is clipped, so the floor must not switch on
    X, y = _rows("t3")
    plan, res = _fit(X, y, mu=math.inf)
    assert plan.heavy_tail_clipped == 0.0 or res.info["clip_fraction"] == 0.0
