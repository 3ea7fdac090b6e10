"""Review (s6, R1): the small-n step growth of HeavyTailedLinearRegression.

The growth (``clipped_dp_gd(step_growth=...)``) must be post-processing of
the released gradients: with the releases forced equal on neighbouring
datasets the run is identical, and the privacy audit has a configuration in
which the growth runs.
"""

import warnings

import numpy as np
import pytest

from skdp._testing.audit_configs import AUDIT_VARIANTS, CANARY_TARGET
from skdp.linear_model import HeavyTailedLinearRegression
from skdp.losses import SquaredLoss
from skdp.privacy.audit import label_flip_canary
from skdp.solvers.heavy_tailed import gd

GROWTH_AUDIT = "HeavyTailedLinearRegression(max_iter='auto', step growth)"


def _canary_data(n=50):  # as in tests/test_privacy_audit.py
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    X[:, 0] = 0.0
    y = np.clip(X[:, 1], -1, 1)
    target = CANARY_TARGET["HeavyTailedLinearRegression"]
    return label_flip_canary(X, y, classifier=False, target=target)


def test_audit_configuration_runs_the_step_growth():
    name, params = AUDIT_VARIANTS[GROWTH_AUDIT]
    assert name == "HeavyTailedLinearRegression"
    X, y_out, y_in = _canary_data()
    n, d = X.shape[0], X.shape[1] + int(params["fit_intercept"])
    grown = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # default scales at n = 50
        for y in (y_out, y_in):
            for seed in range(10):
                est = HeavyTailedLinearRegression(
                    epsilon=1.0, random_state=seed, **params
                ).fit(X, y)
                assert est.n_iter_ == 30
                grown.append(est.step_sizes_.max() > est.step_sizes_[0])
    p = est._make_plan(n, d, est._budget(1), SquaredLoss()).gd.clip_fraction
    assert est._step_growth(n, p) > 1.0  # the rule is on at the audit's size
    assert np.mean(grown) >= 0.8  # the growth runs in most audited fits


@pytest.mark.parametrize("search", [True, False])
def test_step_growth_reads_only_releases(monkeypatch, search):
    # Neighbouring datasets (one record replaced) with the releases forced
    # equal: the noise of the second run is chosen so that its noisy sums
    # and clip levels are those of the first. Whatever is computed after
    # the noise -- the growth, the divergence guard, the averaging -- must
    # then be identical, while the pre-noise sums differ.
    rng = np.random.default_rng(0)
    n, d = 1000, 5
    X = rng.normal(size=(n, d))
    y = X @ np.full(d, 2.0) + 0.1 * rng.normal(size=n)
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = 3.0 * rng.normal(size=d), -50.0
    plan = gd.make_full_batch_plan(1.0, n, d, 30, adaptive_clip=search)
    real_sum, real_q, real_noise = (
        gd.clipped_gradient_sum,
        gd.noisy_log_quantile,
        gd.gaussian_noise,
    )

    def run(Xd, yd, releases=None):
        rec = {"sums": [], "q": [], "pre": []}
        cur = {"pre": None, "i": 0, "j": 0}

        def csum(*args):
            cur["pre"] = real_sum(*args)
            rec["pre"].append(cur["pre"])
            return cur["pre"]

        def quantile(*args, **kwargs):
            v = real_q(*args, **kwargs)  # keeps the generator in step
            if releases is None:
                rec["q"].append(v)
                return v
            cur["j"] += 1
            return releases["q"][cur["j"] - 1]

        def noise(r, std, size=None, **ledger):
            e = real_noise(r, std, size, **ledger)
            if releases is None:
                rec["sums"].append(cur["pre"] + e)
                return e
            cur["i"] += 1
            return releases["sums"][cur["i"] - 1] - cur["pre"]

        monkeypatch.setattr(gd, "clipped_gradient_sum", csum)
        monkeypatch.setattr(gd, "noisy_log_quantile", quantile)
        monkeypatch.setattr(gd, "gaussian_noise", noise)
        res = gd.clipped_dp_gd(
            Xd, yd, SquaredLoss(), plan, np.random.default_rng(1),
            step_size=0.05, clip=None if search else 1.0, clip_range=(-10, 6),
            step_growth=4.0,
        )  # fmt: skip
        return res, rec

    r1, rel = run(X, y)
    r2, rec2 = run(X2, y2, rel)
    assert r1.step_sizes.max() > r1.step_sizes[0]  # the growth ran
    assert not np.allclose(rel["pre"][0], rec2["pre"][0])  # the data differ
    np.testing.assert_array_equal(r2.clip_levels, r1.clip_levels)
    np.testing.assert_array_equal(r2.step_sizes, r1.step_sizes)
    np.testing.assert_array_equal(r2.coef, r1.coef)
