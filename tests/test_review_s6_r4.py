"""Independent cross-checks of three public rules landed in session 6 (review R4).

Each test records, step by step, the clip level a clipped sum was computed
with and the standard deviation of the noise added to it, and checks that the
noise is calibrated to that clip (never to a discarded or planned one), that
the number of releases is the plan's, and that the plan's event does not move.

- ``multinomial_dp_gd``: a checkpoint clip release below
  ``CLIP_COLLAPSE_FRACTION`` of the level in use is discarded (forced here).
- ``plan_minimax``: the noisy multinomial clip factor scaled by
  ``default_norm_clip_scale`` under the public default feature norm.
- ``ridge_gd``: the heavy-tail clip floor (``HEAVY_TAIL_CLIPPED``) set by
  ``known_lipschitz(gd_plan_rule=...)`` from the truncation and scale releases.
"""

import math
import warnings

import numpy as np
import pytest

from skdp import MinimaxFairClassifier
from skdp.privacy import gdp_mu
from skdp.solvers.bilevel.ridge import gd as rgd
from skdp.solvers.heavy_tailed import gd as hgd
from skdp.solvers.heavy_tailed import multinomial as mn
from skdp.solvers.heavy_tailed.known_lipschitz import make_known_lipschitz_plan
from skdp.solvers.saddle_point import gda
from skdp.solvers.saddle_point import plan as plan_module


def _record(monkeypatch, module, sum_name):
    """Record the clip of every finite clipped sum and every noise std."""
    log = {"clip": [], "std": []}
    clipped_sum, noise = getattr(module, sum_name), module.gaussian_noise

    def summed(*args, **kwargs):
        C = args[4]
        if math.isfinite(C):
            log["clip"].append(float(C))
        return clipped_sum(*args, **kwargs)

    def noisy(rng, std, size=None, **ledger):
        log["std"].append(float(std))
        return noise(rng, std, size, **ledger)

    monkeypatch.setattr(module, sum_name, summed)
    monkeypatch.setattr(module, "gaussian_noise", noisy)
    return log


def test_discarded_multinomial_clip_release_is_never_the_noise_scale(monkeypatch):
    # every checkpoint release after the first collapses 100x: the guard must
    # discard it, and clip and noise stay at the kept level, step by step
    n, K = 4000, 3
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y = np.digitize(X[:, 0], [-0.5, 0.5])
    plan = make_known_lipschitz_plan(2.0, n, 3 * K, 40, feature_scale=True)
    assert len(plan.gd.checkpoints) > 1
    releases = []
    quantile = mn.noisy_log_quantile

    def collapsing(*args, **kwargs):
        value = quantile(*args, **kwargs)
        value = value if not releases else value / 100.0
        releases.append(value)
        return value

    monkeypatch.setattr(mn, "noisy_log_quantile", collapsing)
    log = _record(monkeypatch, mn, "clipped_multinomial_gradient_sum")
    res = mn.multinomial_dp_gd(
        X, y, K, plan, np.random.default_rng(1), step_size=2.0, fit_intercept=True
    )
    T = plan.gd.n_steps
    assert len(releases) == len(plan.gd.checkpoints)  # every search still runs
    clips = np.array(log["clip"])
    stds = np.array(log["std"][-T:])  # the gradient releases, one per step
    assert clips.size == T and res.clip_levels.size == T
    np.testing.assert_array_equal(clips, res.clip_levels)
    np.testing.assert_allclose(stds, 2.0 * clips * plan.gd.z_grad, rtol=1e-12)
    # the guard fired: the first release is kept for the whole run
    first = min(plan.gd.checkpoints)
    np.testing.assert_array_equal(clips[first:], clips[first])
    assert all(r < mn.CLIP_COLLAPSE_FRACTION * clips[first] for r in releases[1:])


def test_default_norm_clip_scale_noise_follows_the_clip_used(monkeypatch):
    # n = 112 rows, 3 classes: the public default norm, clip factor scaled;
    # every step's noise is z times the stacked sensitivity of the clip the
    # statistic was computed with, and as many steps as planned
    log = {"clip": [], "std": [], "sens": []}
    statistic, noise = gda.stacked_statistic_multinomial, gda.gaussian_noise
    sensitivity = gda.stacked_sensitivity

    def stat(X, y, groups, m, v, a, clip, *args, **kwargs):
        log["clip"].append(float(clip))
        return statistic(X, y, groups, m, v, a, clip, *args, **kwargs)

    def sens(a, clip, loss_scale):
        out = sensitivity(a, clip, loss_scale)
        log["sens"].append((float(clip), out))
        return out

    def noisy(rng, std, size=None, **ledger):
        log["std"].append(float(std))
        return noise(rng, std, size, **ledger)

    monkeypatch.setattr(gda, "stacked_statistic_multinomial", stat)
    monkeypatch.setattr(gda, "stacked_sensitivity", sens)
    monkeypatch.setattr(gda, "gaussian_noise", noisy)
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(112, 4))
    y = rng.integers(0, 3, size=112)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = MinimaxFairClassifier(epsilon=1.0, classes=range(3), random_state=0)
        clf.fit(X, y)
    plan = clf._plan(112, 4, 1, 3, clf.delta_, False)
    assert plan.default_feature_norm == 2.0
    scale = plan_module.default_norm_clip_scale(4, 1.0)
    # the multinomial noise-ratio rule multiplies the default-norm scale
    ratio = plan_module.multinomial_noise_ratio(plan.gda.noise_multiplier, 112, 5, 3)
    scale *= plan_module.multinomial_clip_scale(ratio)
    assert plan.gda.clip_factor == pytest.approx(0.7 * scale)
    T = plan.gda.n_steps
    clip = clf.constants_["clip"]
    assert log["clip"] == [clip] * T  # the scaled clip, every step
    assert [c for c, _ in log["sens"]] == [clip] * T
    np.testing.assert_allclose(
        log["std"][-T:], [plan.gda.noise_multiplier * s for _, s in log["sens"]]
    )
    # the same event as without the rule
    monkeypatch.setattr(plan_module, "default_norm_clip_scale", lambda d, s: 1.0)
    assert clf._plan(112, 4, 1, 3, clf.delta_, False).event == plan.event


def test_heavy_tail_floor_changes_no_noise_scale_and_no_release(monkeypatch):
    N, D = 100_000, 5
    rng = np.random.default_rng(0)
    X = rng.standard_t(3, size=(N, D))
    y = X @ np.ones(D) / math.sqrt(D) + 1.0 + rng.normal(size=N)
    runs = {}
    for flag in (0.4, None):
        monkeypatch.setattr(rgd, "HEAVY_TAIL_CLIPPED", flag)
        log = _record(monkeypatch, hgd, "clipped_gradient_sum")
        plan = rgd.plan_ridge_gd(
            gdp_mu(1.0, 1e-10),
            N,
            D,
            tuning="risk_estimate",
            curvature_share=0.05,
            large_n_rule=True,
        )
        res = rgd.ridge_gd(X, y, plan, np.random.default_rng(1))
        T = plan.fit.gd.n_steps
        clips, stds = np.array(log["clip"]), np.array(log["std"])
        assert clips.size == stds.size == T  # one gradient release per step
        np.testing.assert_array_equal(clips, res.info["clip_thresholds"])
        np.testing.assert_allclose(stds, 2.0 * clips * plan.fit.gd.z_grad, rtol=1e-12)
        runs[flag] = (plan, res)
        monkeypatch.undo()
    (on, res_on), (off, res_off) = runs[0.4], runs[None]
    assert res_on.info["clip_fraction"] == 0.4 > res_off.info["clip_fraction"]
    assert on.event == off.event and on.fit == off.fit
    # the rule reads releases only: the truncation and scale releases before
    # the descent are the same draws with the floor on and off
    assert res_on.info["truncation_threshold"] == res_off.info["truncation_threshold"]
    assert res_on.info["feature_scale"] == res_off.info["feature_scale"]
