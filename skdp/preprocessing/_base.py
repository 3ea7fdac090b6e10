"""The fit protocol of skdp's transformers (the estimators' one, plus the plan)."""

import numpy as np
from sklearn.utils.validation import check_is_fitted

from ..base import PrivateEstimatorMixin
from ..privacy import NonPrivateDpEvent, NoOpDpEvent
from ..solvers._distributed import reject_dask
from ..utils._validation import validate_data  # errors quote no data
from ._bounds import check_bounds

__all__ = ["PrivateTransformerMixin"]


class PrivateTransformerMixin(PrivateEstimatorMixin):
    """:class:`~skdp.base.PrivateEstimatorMixin` that also keeps its plan.

    After ``fit``, ``privacy_plan_`` is the DpEvent the fit spent, so that
    :func:`skdp.spent` can compose the steps of a pipeline exactly.
    """

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data but its shape (public).

        Such a fit is not a leak whatever ``epsilon`` says (even ``inf``):
        :func:`skdp.check_pipeline` does not list it.
        """
        return False

    def _plan_or_free(self, event):
        """``NonPrivateDpEvent`` at ``epsilon=inf``; ``event`` otherwise."""
        return NonPrivateDpEvent() if np.isinf(self.epsilon) else event

    def _declared_bounds(self, n_features):
        """The checked public ``bounds``, or ``None`` when they are to be estimated.

        Parameters
        ----------
        n_features : int
            Number of columns of the data.

        Returns
        -------
        tuple of ndarray or None
            ``(lower, upper)``, each of shape ``(n_features,)``.
        """
        # a public parameter: checked before anything is spent or read
        return None if self.bounds is None else check_bounds(self.bounds, n_features)

    def _validate_for_transform(self, X, fitted_attribute, **kwargs):
        """Check the fit and return a float64 copy of ``X`` safe to modify in place.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        fitted_attribute : str
            Attribute that ``fit`` sets (for :func:`check_is_fitted`).
        **kwargs
            Further arguments of :func:`sklearn.utils.validation.validate_data`.

        Returns
        -------
        ndarray or sparse matrix of shape (n_samples, n_features)
        """
        check_is_fitted(self, fitted_attribute)
        reject_dask(X, f"{type(self).__name__}.transform")
        return validate_data(
            self, X, reset=False, dtype=np.float64, copy=True, **kwargs
        )

    def _spend(self, plan):
        if isinstance(plan, NoOpDpEvent):
            # Nothing is read from the data: free whatever ``epsilon`` says,
            # but still listed on a shared ledger.
            if self.accountant is not None:
                self.accountant.spend(plan, label=type(self).__name__)
            return
        super()._spend(plan)

    def _record_privacy(self, plan):
        self.privacy_plan_ = plan
        if isinstance(plan, NoOpDpEvent):
            # Nothing was released: no epsilon and no delta were spent.
            self.privacy_spent_ = (0.0, 0.0)
            return
        super()._record_privacy(plan)
