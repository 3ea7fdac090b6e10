"""A light privacy audit of every public estimator, with a negative control.

Black-box audits of the final model have little power when the output mixes
many noisy releases (the noise of the other steps hides the canary). Each
estimator is therefore audited in a configuration whose output is close to a
single release (one solver step, public bounds), where a correct
implementation at epsilon = 1 must not be flagged and the same estimator with
its noise divided by 10 must be. The benchmark ``benchmarks/audit.py``
(``python -m benchmarks.run --part audit``) runs thousands of fits, several
epsilons and the /4 control.
"""

import numpy as np
import pytest
from sklearn.base import BaseEstimator, clone, is_classifier

from skdp._testing.audit_configs import AUDIT_PARAMS, CANARY_TARGET, audit_cases
from skdp._testing.estimator_checks import public_estimators
from skdp.privacy import GaussianDpEvent, calibrate_noise_multiplier
from skdp.privacy._mechanisms import _scaled_noise
from skdp.privacy.audit import audit_estimator, label_flip_canary
from skdp.solvers.bilevel.ridge.curvature import clipped_curvature

pytestmark = pytest.mark.slow

CASES = audit_cases(
    [e for e in public_estimators() if type(e).__name__ in AUDIT_PARAMS]
)
N_FITS = 300
# Configurations whose output mixes the audited release with others (the
# curvature reaches BilevelRidge's model only through the plug-in penalty):
# the /10 control needs more fits to be flagged. At 300 it was flagged on
# f9c3d36's noise streams and not on today's (lower bound 0.94 against 1.0):
# the power sat at the edge, so the draw decided.
N_FITS_LOW_POWER = {"BilevelRidge(inner_solver='gd', curvature release)": 1000}


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
    n_fits = N_FITS_LOW_POWER.get(label, N_FITS)
    honest = audit_estimator(est, X, y_out, y_in, n_fits=n_fits, random_state=0)
    assert honest.claimed_epsilon <= 1.0
    assert not honest.violated, honest
    with _scaled_noise(0.1):
        control = audit_estimator(est, X, y_out, y_in, n_fits=n_fits, random_state=0)
    assert control.violated, control


class _CurvatureRelease(BaseEstimator):
    """The BilevelRidge curvature release alone, as an estimator to audit.

    Its estimator-level audit configuration has little power (the released
    curvature reaches the model only through the plug-in penalty: the /4
    control's lower bound is 0.48 in the former
    ``benchmarks/results/privacy_audit.md`` at f9c3d36, see git history),
    so the release is audited here by itself, at public ``w = 0`` and clip,
    with the noise multiplier of one ``GaussianDpEvent`` at (1, 1e-5).
    """

    def __init__(self, kept_fraction=False, random_state=None):
        self.kept_fraction = kept_fraction
        self.random_state = random_state

    def fit(self, X, y):
        eps, delta = 1.0, 1e-5
        z = calibrate_noise_multiplier(GaussianDpEvent, eps, delta)
        out = clipped_curvature(
            X,
            y,
            np.zeros(X.shape[1]),
            1.0,
            1.0,
            z,
            np.random.default_rng(self.random_state),
            False,
            kept_fraction=self.kept_fraction,
        )
        # With the fraction, both sums move by 1: their sum is the test.
        self.release_ = out[0] / out[1] + (out[2] / out[3] if self.kept_fraction else 0)
        self.privacy_spent_ = (eps, delta)
        return self


def _release_score(model, x_canary, y_canary):
    return model.release_


@pytest.mark.parametrize("kept_fraction", [False, True])
def test_audit_of_the_curvature_release_alone(kept_fraction):
    # The canary row (norm 3 > the row clip 1.5 sqrt(2)) counts fully when its
    # residual is 0 (D') and not at all when it is clipped (D): the sum moves
    # by its sensitivity, 1.
    rng = np.random.default_rng(0)
    X = rng.normal(size=(50, 2))
    X[:, 0] = 0.0
    X[0] = [3.0, 0.0]
    y_out = np.zeros(50)
    y_out[0] = 100.0
    y_in = np.zeros(50)
    est = _CurvatureRelease(kept_fraction=kept_fraction)
    kw = dict(n_fits=4000, score=_release_score, random_state=0)
    honest = audit_estimator(est, X, y_out, y_in, **kw)
    assert not honest.violated, honest
    with _scaled_noise(0.25):
        control = audit_estimator(est, X, y_out, y_in, **kw)
    assert control.violated, control
