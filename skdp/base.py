"""What every skdp estimator shares: privacy parameters, budget and randomness.

An estimator's ``fit`` reads like this::

    X, y = validate_data(self, X, y, ...)          # errors before any noise
    delta, rng = self._begin_private_fit(n)        # resolve delta_, fresh Generator
    plan = <public privacy plan: a DpEvent, data-independent>
    self._spend(plan)                              # shared budget, may raise
    result = solvers.<algorithm>(X, y, ..., rng)   # the only place noise is drawn
    self._record_privacy(plan)                     # privacy_spent_
"""

from numbers import Real

import numpy as np
from sklearn.utils._param_validation import Interval

from .privacy import BudgetExceededError, PrivacyAccountant, certify_epsilon
from .utils._validation import check_generator, resolve_delta

__all__ = ["PrivateEstimatorMixin"]


class PrivateEstimatorMixin:
    """Mixin for DP estimators: parameters ``epsilon``, ``delta``, ``accountant``, ``random_state``.

    Neighbouring datasets differ by replacing one record; ``n`` is public.
    """

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="right")],  # np.inf allowed
        "delta": [Interval(Real, 0, 1, closed="left"), None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
    }

    def _begin_private_fit(self, n_samples):
        """Resolve ``delta_`` and build the fit's random generator.

        Parameters
        ----------
        n_samples : int
            Public number of records.

        Returns
        -------
        delta : float
        rng : numpy.random.Generator
        """
        self.delta_ = resolve_delta(self.delta, n_samples, self.epsilon)
        # Clones share the accountant but copy random_state: give each fit on
        # the ledger its own stream, or CV folds would reuse the same noise.
        stream = None if self.accountant is None else self.accountant.claim_stream()
        return self.delta_, check_generator(self.random_state, stream)

    def _spend(self, plan):
        """Charge ``plan`` to the shared accountant, if any, before any noise."""
        if self.accountant is None:
            return
        # A non-private fit releases its statistics exactly: no finite budget
        # pays for it, whatever the plan says its noise costs (none at all).
        try:
            if np.isinf(self.epsilon) and not np.isinf(self.accountant.epsilon):
                raise BudgetExceededError(
                    f"{type(self).__name__}(epsilon=inf) is not private, so a "
                    f"finite budget (epsilon={self.accountant.epsilon:g}) cannot "
                    "pay for it. No data was used."
                )
            self.accountant.spend(plan, label=type(self).__name__)
        except (BudgetExceededError, RuntimeError):
            # A refused refit (over budget, or a ledger copied to another
            # process or pickled) must not leave a mix of the new input's
            # attributes (n_features_in_) and the old model: forget the fit.
            for name in [k for k in vars(self) if k.endswith("_") and k[0] != "_"]:
                delattr(self, name)
            raise

    def _record_privacy(self, plan):
        """Set ``privacy_spent_`` to the certified ``(epsilon, delta_)`` of ``plan``."""
        if np.isinf(self.epsilon):
            self.privacy_spent_ = (np.inf, self.delta_)
            return
        eps = certify_epsilon(plan, self.delta_) if self.delta_ > 0 else np.inf
        self.privacy_spent_ = (float(eps), float(self.delta_))
