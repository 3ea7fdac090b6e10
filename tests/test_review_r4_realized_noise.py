"""Review R4: the noise actually drawn by a HeavyTailed* fit composes to the
planned GDP budget (the large-n rule with its intercept correction, the
small-n scale margin bought with budget, the multinomial no-search rule), so
``privacy_spent_`` is the cost of what ran."""

import math
import warnings

import numpy as np
import pytest

import skdp.linear_model._heavy_tailed as ht
import skdp.privacy._norm_bound as bounds  # draws the bounds' counts
import skdp.solvers.calibration as calibration
import skdp.solvers.heavy_tailed.gd as gd
import skdp.solvers.heavy_tailed.intercept as intercept
import skdp.solvers.heavy_tailed.multinomial as multinomial
from skdp.linear_model import HeavyTailedLinearRegression, HeavyTailedLogisticRegression
from skdp.privacy import Budget


@pytest.fixture
def draws(monkeypatch):
    log, clips = [], []
    for mod in (bounds, gd, intercept, multinomial):
        orig = mod.gaussian_noise

        def spy(rng, std, *args, _orig=orig, _name=mod.__name__, **kw):
            log.append((_name.rsplit(".", 1)[-1], float(std)))
            return _orig(rng, std, *args, **kw)

        monkeypatch.setattr(mod, "gaussian_noise", spy)
    orig_shift = ht.intercept_shift

    def shift(r, plan, rng):
        out = orig_shift(r, plan, rng)
        clips.append(out[1])
        return out

    monkeypatch.setattr(ht, "intercept_shift", shift)
    orig_mechanism = calibration.gaussian_mechanism

    def mechanism(value, sensitivity, noise_multiplier, *, rng):
        # the logit histogram: the standard deviation actually drawn
        log.append(("calibration", float(sensitivity), noise_multiplier * sensitivity))
        return orig_mechanism(value, sensitivity, noise_multiplier, rng=rng)

    monkeypatch.setattr(calibration, "gaussian_mechanism", mechanism)
    return log, clips


def _realized_mu(est, log, clips):
    # counts: sensitivity 1; gradient sums: 2 C; intercept sum: 2 R;
    # the calibration's logit histogram: sqrt(2)
    total = sum(1.0 / e[1] ** 2 for e in log if e[0] == "_norm_bound")
    total += sum((e[1] / e[2]) ** 2 for e in log if e[0] == "calibration")
    log = [e for e in log if e[0] != "calibration"]
    grads = [s for m, s in log if m in ("gd", "multinomial")]
    levels = np.ravel(est.clip_thresholds_)
    assert len(grads) == levels.size
    total += sum((2.0 * c / s) ** 2 for c, s in zip(levels, grads))
    sums = [s for m, s in log if m == "intercept"]
    assert len(sums) == len(clips) <= 1
    total += sum((2.0 * R / s) ** 2 for R, s in zip(clips, sums))
    return math.sqrt(total)


@pytest.mark.parametrize(
    "kind, n, d, eps, intercept_runs",
    [
        ("linear", 12_000, 4, 1.0, 1),  # large-n rule + intercept correction
        ("linear", 300, 5, 1.0, 0),  # scale margin bought with budget
        ("binary", 400, 5, 1.0, 0),
        ("multinomial", 400, 20, 1.0, 0),  # no clip search at the cap
    ],
)
def test_drawn_noise_composes_to_the_budget(draws, kind, n, d, eps, intercept_runs):
    log, clips = draws
    rng = np.random.default_rng(0)
    X = rng.standard_t(3, size=(n, d)) * 50
    kw = dict(epsilon=eps, delta=1e-5, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "linear":
            y = X @ np.ones(d) + rng.exponential(30, size=n)
            est = HeavyTailedLinearRegression(**kw).fit(X, y)
        elif kind == "binary":
            est = HeavyTailedLogisticRegression(**kw).fit(X, (X[:, 0] > 0) * 1)
        else:
            y = np.digitize(X[:, 0], [-20, 0, 20])
            est = HeavyTailedLogisticRegression(**kw).fit(X, y)
    assert len(clips) == intercept_runs
    calibrations = sum(e[0] == "calibration" for e in log)
    assert calibrations == (kind == "binary")
    mu = Budget.from_target(eps, 1e-5, margin=False).mu
    assert _realized_mu(est, log, clips) == pytest.approx(mu, rel=1e-8)
    assert _realized_mu(est, log, clips) <= mu
    assert est.privacy_spent_[0] <= eps
