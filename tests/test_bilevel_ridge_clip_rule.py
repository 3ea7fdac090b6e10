"""BilevelRidge gd: the clip rule where the curvature release is planned (issue 21, round 9)."""

import numpy as np
import pytest

from skdp.privacy import certify_epsilon, gdp_mu, gdp_mu_of
from skdp.solvers.bilevel.ridge import gd as rgd
from skdp.solvers.heavy_tailed import gd as hgd

KW = dict(tuning="risk_estimate", curvature_share="auto")


def _mu(eps, n):
    return gdp_mu(eps, min(1e-6, 1.0 / n**2))


def _old_rule(monkeypatch):
    monkeypatch.setattr(rgd, "HIGH_NOISE_MAX_CLIPPED", None)
    monkeypatch.setattr(rgd, "HIGH_NOISE_CHECKPOINTS", None)


def test_high_noise_plan_thins_out_the_clip_search(monkeypatch):
    n, d, eps = 1000, 20, 1.0
    mu = _mu(eps, n)
    plan = rgd.plan_ridge_gd(mu, n, d, **KW)
    assert plan.measure_curvature
    gd = plan.fit.gd
    assert gd.checkpoints == (25, 50)
    assert gd.clip_fraction == pytest.approx(rgd.HIGH_NOISE_MAX_CLIPPED)
    # the whole budget, exactly, and the counts in the event
    assert gdp_mu_of(plan.event) == pytest.approx(mu, rel=1e-6)
    assert certify_epsilon(plan.event, min(1e-6, n**-2.0)) == pytest.approx(
        eps, abs=1e-3
    )
    assert gd.n_counts == 2 * gd.bisection_steps
    _old_rule(monkeypatch)
    old = rgd.plan_ridge_gd(mu, n, d, **KW).fit.gd
    assert len(old.checkpoints) == 7 and old.clip_fraction == 0.7
    # the same shares: the gradients' noise is unchanged, each count less noisy
    assert gd.z_grad == pytest.approx(old.z_grad, rel=1e-9)
    assert gd.z_count < old.z_count / 1.8


def test_high_noise_rule_leaves_other_plans_alone(monkeypatch):
    cases = [
        (1000, 20, 0.5),  # high noise, but too few rows for any search
        (10_000, 20, 1.0),  # no curvature release
        (1000, 10, 1.0),
        (331, 10, 1.0),  # diabetes-sized
    ]
    new = [rgd.plan_ridge_gd(_mu(e, n), n, d, **KW) for n, d, e in cases]
    _old_rule(monkeypatch)
    old = [rgd.plan_ridge_gd(_mu(e, n), n, d, **KW) for n, d, e in cases]
    assert new == old
    # the path tuning never plans the rule
    mu = _mu(1.0, 1000)
    assert rgd.plan_ridge_gd(mu, 1000, 20, tuning="path", curvature_share="auto") == (
        rgd.plan_ridge_gd(mu, 1000, 20, tuning="path")
    )


def test_high_noise_clip_rule_is_public_arithmetic():
    target, steps = rgd.high_noise_clip_rule(rgd.CLIP_TARGET, None, 100)
    assert steps == (25, 50) and target.max_fraction == 0.75
    assert target.scale == rgd.CLIP_TARGET.scale
    # a caller's checkpoints are kept, a larger cap too
    wide = rgd.CLIP_TARGET.__class__(scale=60.0, max_fraction=0.9)
    target, steps = rgd.high_noise_clip_rule(wide, (0, 3), 100)
    assert steps == (0, 3) and target.max_fraction == 0.9


def test_full_batch_plan_takes_public_checkpoints():
    plan = hgd.make_full_batch_plan(0.5, 10_000, 5, 40, checkpoints=(10, 20))
    default = hgd.make_full_batch_plan(0.5, 10_000, 5, 40)
    assert plan.checkpoints == (10, 20)
    assert plan.n_counts == 2 * plan.bisection_steps
    assert gdp_mu_of(plan.event) == pytest.approx(0.5, rel=1e-6)
    assert plan.z_grad == pytest.approx(default.z_grad, rel=1e-12)
    assert plan.z_count < default.z_count
    off = hgd.make_full_batch_plan(0.5, 10_000, 5, 40, adaptive_clip=False)
    assert off.checkpoints == ()


def test_clip_and_noise_change_only_at_the_planned_checkpoints(monkeypatch):
    # every gradient release's noise is 2 C_t z with C_t the level its
    # clipped sum used, and C_t changes only at the planned searches
    n, d = 1000, 20
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = X @ (np.ones(d) / np.sqrt(d)) + 1.0 + 3.0 * rng.normal(size=n)
    plan = rgd.plan_ridge_gd(_mu(1.0, n), n, d, **KW)
    log = {"clip": [], "std": []}
    summed, noise = hgd.clipped_gradient_sum, hgd.gaussian_noise
    searches = []
    quantile = hgd.noisy_log_quantile

    def clipped(X, y, w, inv_norms, C, loss):
        log["clip"].append(float(C))
        return summed(X, y, w, inv_norms, C, loss)

    def noisy(rng, std, size=None, **ledger):
        log["std"].append(float(std))
        return noise(rng, std, size, **ledger)

    def search(*args, **kwargs):
        searches.append(1)
        return quantile(*args, **kwargs)

    monkeypatch.setattr(hgd, "clipped_gradient_sum", clipped)
    monkeypatch.setattr(hgd, "gaussian_noise", noisy)
    monkeypatch.setattr(hgd, "noisy_log_quantile", search)
    res = rgd.ridge_gd(X, y, plan, np.random.default_rng(1), row_bound=1.5 * d**0.5)
    T = plan.fit.gd.n_steps
    clips = np.asarray(res.info["clip_thresholds"])
    assert clips.size == T and len(searches) == 2
    np.testing.assert_array_equal(np.asarray(log["clip"][-T:]), clips)
    np.testing.assert_allclose(
        log["std"][-T:], 2.0 * clips * plan.fit.gd.z_grad, rtol=1e-12
    )
    for lo, hi in ((0, 25), (25, 50), (50, T)):
        assert np.all(clips[lo:hi] == clips[lo])
