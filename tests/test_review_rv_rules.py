"""Fresh-eyes privacy review of issue 21 round 9 / issue 17 rules (rv).

Regression guards that the new public rules change only public choices:
the noise of every release is the planned one, at the level actually used.
"""

import numpy as np
import pytest

from skdp import HeavyTailedLogisticRegression
from skdp.privacy import gdp_mu
from skdp.solvers.bilevel.ridge import gd as rgd
from skdp.solvers.heavy_tailed import gd as hgd
from skdp.solvers.heavy_tailed import multinomial as mn


def test_noise_capped_clip_noise_follows_the_capped_level(monkeypatch):
    # wine-sized softmax fit without a clip search: the cap binds; every
    # gradient release must carry N(0, (2 C z)**2) with C the level its
    # clipped sum used, and the cap must read the public/released scale
    rng = np.random.default_rng(4)
    n, d, K = 133, 13, 3
    X = rng.normal(size=(n, d)) / 4.0
    y = np.argmax(X @ rng.normal(size=(d, K)) + rng.gumbel(size=(n, K)), axis=1)
    calls = {"cap": [], "clip": [], "std": []}
    cap_fn, summed, noise = (
        mn.noise_capped_clip,
        mn.clipped_multinomial_gradient_sum,
        mn.gaussian_noise,
    )

    def cap(s, step, z, T, n_, d_):
        calls["cap"].append((s, step, z, T, n_, d_))
        return cap_fn(s, step, z, T, n_, d_)

    def clipped(X, labels, W, norms, clip):
        if np.isfinite(clip):
            calls["clip"].append(float(clip))
        return summed(X, labels, W, norms, clip)

    def noisy(rng, std, size=None, **ledger):
        calls["std"].append(float(std))
        return noise(rng, std, size, **ledger)

    monkeypatch.setattr(mn, "noise_capped_clip", cap)
    monkeypatch.setattr(mn, "clipped_multinomial_gradient_sum", clipped)
    monkeypatch.setattr(mn, "gaussian_noise", noisy)
    m = HeavyTailedLogisticRegression(
        epsilon=1.0, classes=range(K), calibration_share=0.0, random_state=0
    )
    m.fit(X, y)
    assert len(calls["cap"]) == 1
    s, step, z, T, n_, d_ = calls["cap"][0]
    # public inputs: n, d (+ intercept), the plan's steps, the public step
    assert (n_, d_, T) == (n, d + 1, m.n_iter_)
    assert step == pytest.approx(m.step_sizes_[0] * s * s)
    assert s == pytest.approx(m.feature_scale_)
    clips = np.ravel(m.clip_thresholds_)
    assert clips[0] == pytest.approx(cap_fn(s, step, z, T, n_, d_))
    # the clipped sums used exactly the recorded level, the noise 2 C z
    np.testing.assert_array_equal(calls["clip"][-T:], clips)
    np.testing.assert_allclose(calls["std"][-T:], 2.0 * clips * z, rtol=1e-12)
    # z is the plan's whole-budget gradient multiplier (no search, no scales)
    # (split_gdp rounds toward more noise)
    assert z == pytest.approx(np.sqrt(T) / m._budget(1), rel=1e-6)
    assert z >= np.sqrt(T) / m._budget(1)


def test_high_noise_run_makes_exactly_the_planned_counts(monkeypatch):
    # the thinned clip search: each search releases plan.bisection_steps
    # counts at the plan's z_count, and there are len(checkpoints) searches
    n, d = 1000, 20
    plan = rgd.plan_ridge_gd(
        gdp_mu(1.0, 1e-6), n, d, tuning="risk_estimate", curvature_share="auto"
    )
    gd = plan.fit.gd
    assert gd.checkpoints == (25, 50)
    seen = []
    quantile = hgd.noisy_log_quantile

    def search(values, q, z, rng, **kw):
        seen.append((z, kw["steps"]))
        return quantile(values, q, z, rng, **kw)

    monkeypatch.setattr(hgd, "noisy_log_quantile", search)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, d))
    y = X @ (np.ones(d) / np.sqrt(d)) + 3.0 * rng.normal(size=n)
    rgd.ridge_gd(X, y, plan, np.random.default_rng(1), row_bound=1.5 * d**0.5)
    assert sum(k for _, k in seen) == gd.n_counts
    assert all(z == gd.z_count for z, _ in seen)


def test_full_batch_plan_charges_only_the_searches_the_run_makes():
    # clipped_dp_gd searches once at each distinct step t in [0, n_steps)
    # (``t in set(plan.checkpoints)``): a duplicate or out-of-range
    # checkpoint must not be charged (it was: 4 searches charged, 1 run)
    plan = hgd.make_full_batch_plan(0.5, 10_000, 5, 40, checkpoints=(10, 10, 40, -1))
    assert plan.checkpoints == (10,)
    assert plan.n_counts == plan.bisection_steps
    same = hgd.make_full_batch_plan(0.5, 10_000, 5, 40, checkpoints=(10,))
    assert plan == same
