"""The fit protocol of skdp's transformers (the estimators' one, plus the plan)."""

import numpy as np

from ..base import PrivateEstimatorMixin
from ..privacy import NonPrivateDpEvent, NoOpDpEvent

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
