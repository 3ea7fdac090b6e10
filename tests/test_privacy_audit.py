"""A light privacy audit of every public estimator, with a negative control.

Black-box audits of the final model have little power when the output mixes
many noisy releases (the noise of the other steps hides the canary). Each
estimator is therefore audited in a configuration whose output is close to a
single release (one solver step, public bounds), where a correct
implementation at epsilon = 1 must not be flagged and the same estimator with
its noise divided by 10 must be. The benchmark ``benchmarks/privacy/audit.py``
runs thousands of fits, several epsilons and the /4 control.
"""

import numpy as np
import pytest
from sklearn.base import clone, is_classifier

from skdp._testing.audit_configs import AUDIT_PARAMS, CANARY_TARGET, audit_cases
from skdp._testing.estimator_checks import public_estimators
from skdp.privacy._mechanisms import _scaled_noise
from skdp.privacy.audit import audit_estimator, label_flip_canary

CASES = audit_cases(
    [e for e in public_estimators() if type(e).__name__ in AUDIT_PARAMS]
)
N_FITS = 300


def _canary_data(estimator, n=50):  # batch_size=50 in the NISPP config
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 2))
    X[:, 0] = 0.0  # the canary's direction is unused by the other records
    if is_classifier(estimator):
        y = (X[:, 1] > 0).astype(int)
    else:
        y = np.clip(X[:, 1], -1, 1)
    target = CANARY_TARGET.get(type(estimator).__name__)
    return label_flip_canary(X, y, classifier=is_classifier(estimator), target=target)


def test_every_public_estimator_has_an_audit_configuration():
    missing = {type(e).__name__ for e in public_estimators()} - set(AUDIT_PARAMS)
    assert not missing


# The heavy-tailed configuration fits 50 rows with default scales on purpose.
@pytest.mark.filterwarnings("ignore:n_samples=.* too small for this budget")
@pytest.mark.parametrize("label, estimator, params", CASES, ids=[c[0] for c in CASES])
def test_audit_at_epsilon_one_and_negative_control(label, estimator, params):
    X, y_out, y_in = _canary_data(estimator)
    est = clone(estimator).set_params(epsilon=1.0, **params)
    honest = audit_estimator(est, X, y_out, y_in, n_fits=N_FITS, random_state=0)
    assert honest.claimed_epsilon <= 1.0
    assert not honest.violated, honest
    with _scaled_noise(0.1):
        control = audit_estimator(est, X, y_out, y_in, n_fits=N_FITS, random_state=0)
    assert control.violated, control
