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


@pytest.fixture
def heavier_on(monkeypatch):
    monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", 0.4)
    monkeypatch.setattr(rgd, "HEAVIER_TAIL_CLIPPED", 0.5)


def test_tail_clip_floor_levels():
    # r = T / (s sqrt(D)): 0 up to HEAVY_TAIL_RATIO, then the heavy floor,
    # then the heavier one above HEAVIER_TAIL_RATIO (if larger)
    D, s = 9, 2.0
    assert rgd.HEAVY_TAIL_RATIO < rgd.HEAVIER_TAIL_RATIO

    def at(r, heavier=0.5):
        return rgd.tail_clip_floor(r * s * math.sqrt(D), s, D, 0.4, heavier)

    assert at(0.99 * rgd.HEAVY_TAIL_RATIO) == 0.0
    assert at(1.01 * rgd.HEAVY_TAIL_RATIO) == 0.4
    assert at(1.01 * rgd.HEAVIER_TAIL_RATIO) == 0.5
    assert at(1.01 * rgd.HEAVIER_TAIL_RATIO, heavier=0.0) == 0.4
    assert at(1.01 * rgd.HEAVIER_TAIL_RATIO, heavier=0.3) == 0.4
    assert rgd.tail_clip_floor(math.nan, s, D, 0.4, 0.5) == 0.0


def test_heavier_floor_only_with_the_heavy_one(heavier_on, monkeypatch):
    plan = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    assert (plan.heavy_tail_clipped, plan.heavier_tail_clipped) == (0.4, 0.5)
    # below the large-n rule and where the truncation level is lowered: off
    for n, d in ((5_000, 5), (10_000, 20)):
        plan = rgd.plan_ridge_gd(
            gdp_mu(1.0, 1e-8), n, d, tuning="risk_estimate", large_n_rule=True
        )
        assert plan.heavier_tail_clipped == 0.0
    monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", None)
    plan = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    assert plan.heavier_tail_clipped == 0.0


def test_heavier_floor_reads_releases_and_keeps_the_plan(heavier_on, monkeypatch):
    # the floor changes a quantile level (post-processing), not a release
    on = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    X, y = _rows("t3")
    plan, res = _fit(X, y)
    s, T = res.info["feature_scale"], res.info["truncation_threshold"]
    ratio = T / (s * math.sqrt(D + 1))
    assert ratio > rgd.HEAVIER_TAIL_RATIO  # t(3) rows, D = 6: about 3.5
    assert res.info["clip_fraction"] == 0.5
    monkeypatch.setattr(rgd, "HEAVIER_TAIL_CLIPPED", None)
    off = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    assert on.event == off.event and on.fit == off.fit
    plan_off, res_off = _fit(X, y)
    # the same releases before the descent (same draws), whatever the floor
    assert res_off.info["truncation_threshold"] == T
    assert res_off.info["feature_scale"] == s
    assert res_off.info["clip_fraction"] == 0.4
    # Gaussian rows: no floor at all
    monkeypatch.setattr(rgd, "HEAVIER_TAIL_CLIPPED", 0.5)
    plan, res = _fit(*_rows("gauss"))
    assert res.info["clip_fraction"] == plan.fit.gd.clip_fraction < 0.4


def test_short_first_stage_where_little_is_clipped():
    # a public rule of n, d and the budget (the plan's clipped fraction)
    mu = gdp_mu(1.0, 1e-10)
    plan = rgd.plan_ridge_gd(mu, 100_000, 20, tuning="risk_estimate", large_n_rule=True)
    assert plan.fit.gd.clip_fraction <= rgd.FIRST_STAGE_MAX_CLIPPED
    first = int(rgd.LARGE_N_FIRST_STAGE * 100)
    assert plan.stages == ((first, first - first // 2), (100 - first, 100 - first))
    # the 0.7 cap at n = 1e4, d = 20, and below the large-n rule: halves
    mu = gdp_mu(1.0, 1e-8)
    for n in (10_000, 5_000):
        plan = rgd.plan_ridge_gd(mu, n, 20, tuning="risk_estimate", large_n_rule=True)
        assert plan.stages == ((50, 25), (50, 50))
    plan = rgd.plan_ridge_gd(1.0, N, D, tuning="path", large_n_rule=True)
    assert len(plan.stages) == len(rgd.DEFAULT_PENALTIES)


def test_short_first_stage_keeps_the_privacy_plan(monkeypatch):
    on = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    monkeypatch.setattr(rgd, "LARGE_N_FIRST_STAGE", None)
    off = rgd.plan_ridge_gd(1.0, N, D, tuning="risk_estimate", large_n_rule=True)
    assert on.stages != off.stages == ((50, 25), (50, 50))
    assert on.event == off.event and on.fit == off.fit
