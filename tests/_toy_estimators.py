"""A minimal private estimator used to test skdp's privacy machinery in isolation."""

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import validate_data

from skdp.base import PrivateEstimatorMixin
from skdp.privacy import calibrate_gaussian, gaussian_mechanism, gaussian_steps
from skdp.utils import clip_targets


class PrivateMean(PrivateEstimatorMixin, RegressorMixin, BaseEstimator):
    """Test double: predicts a private mean of targets clipped to [-1, 1]."""

    _parameter_constraints = dict(PrivateEstimatorMixin._privacy_parameter_constraints)

    def __init__(self, epsilon=1.0, delta=None, accountant=None, random_state=None):
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def fit(self, X, y):
        X, y = validate_data(self, X, y)
        delta, rng = self._begin_private_fit(X.shape[0])
        z = calibrate_gaussian(self.epsilon, delta)
        plan = gaussian_steps(z, 1)
        self._spend(plan)
        yc = clip_targets(y, 1.0)
        self.mean_ = gaussian_mechanism(yc.mean(), 2.0 / len(yc), z, rng=rng)
        self._record_privacy(plan)
        return self

    def predict(self, X):
        X = validate_data(self, X, reset=False)
        return np.full(X.shape[0], self.mean_)
