"""The privacy audit itself: valid on a private mechanism, powerful on a broken one."""

import numpy as np
import pytest
from _toy_estimators import PrivateMean

from skdp.privacy._mechanisms import _scaled_noise
from skdp.privacy.audit import audit_estimator, epsilon_lower_bound


def _neighbours(n=100):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    y_out = np.clip(rng.normal(size=n), -1, 1)
    y_out[0], y_in = -1.0, y_out.copy()
    y_in[0] = 1.0  # the canary moves the clipped mean by its full sensitivity
    return X, y_out, y_in


def test_lower_bound_formula():
    out, inn = np.zeros(100), np.ones(100)
    # Perfect separation on 100 + 100 runs: the Clopper-Pearson limit.
    assert epsilon_lower_bound(out, inn, 0.5, 1, 0.0) == pytest.approx(3.28, abs=0.01)
    # Indistinguishable scores give no evidence.
    same = np.random.default_rng(0).normal(size=200)
    assert epsilon_lower_bound(same[:100], same[100:], 0.0, 1, 0.0) < 0.5


def test_audit_passes_private_and_flags_underscaled_noise():
    X, y_out, y_in = _neighbours()
    est = PrivateMean(epsilon=1.0, delta=1e-5)
    honest = audit_estimator(est, X, y_out, y_in, n_fits=400, random_state=0)
    assert not honest.violated
    with _scaled_noise(0.1):  # negative control: noise divided by 10
        broken = audit_estimator(est, X, y_out, y_in, n_fits=400, random_state=0)
    assert broken.violated
    assert broken.epsilon_lower_bound > 1.3
