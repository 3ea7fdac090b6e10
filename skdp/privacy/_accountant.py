"""A shared privacy budget that estimators spend from."""

import math
import os
import threading

from ._composition import certify_epsilon
from ._events import ComposedDpEvent

__all__ = ["PrivacyAccountant", "BudgetExceededError"]


class BudgetExceededError(RuntimeError):
    """Raised, before any data is used, when a fit would overspend a budget.

    References
    ----------
    - Google's dp-accounting library, https://github.com/google/differential-privacy.

    Examples
    --------
    >>> from skdp.privacy import PrivacyAccountant, gaussian_steps
    >>> acc = PrivacyAccountant(epsilon=0.1, delta=1e-5)
    >>> try:
    ...     acc.spend(gaussian_steps(1.0))
    ... except BudgetExceededError:
    ...     print("refused")
    refused
    """


class PrivacyAccountant:
    """Total (epsilon, delta) budget shared by several fits.

    Every estimator that receives ``accountant=`` describes the mechanisms of
    its fit as a :class:`~dp_accounting.DpEvent` and calls :meth:`spend`
    *before* it draws any noise. The ledger composes all recorded events
    tightly (see :func:`skdp.privacy.certify_epsilon`), so five folds of a
    cross-validation cost exactly the composition of five fits. A fit that
    would overspend raises :class:`BudgetExceededError` and is not recorded.

    ``clone`` and ``copy.deepcopy`` return the accountant itself, so copies
    of an estimator made by ``cross_val_score``, ``GridSearchCV`` or
    ``deepcopy`` spend from the same ledger. A pickled copy (``pickle``,
    ``joblib``, ``copy.copy``, or ``n_jobs > 1`` with a process backend)
    could not report back to the ledger it was copied from: it keeps the
    record for reading, but spending from it raises ``RuntimeError``.

    All fits are assumed to touch every record (the worst case), and the
    neighbouring relation is replace-one.

    Parameters
    ----------
    epsilon : float
        Total epsilon, in (0, inf].
    delta : float
        Total delta, in (0, 1). The spent epsilon is reported at this delta.

    Attributes
    ----------
    ledger : list of (str, DpEvent)
        Recorded fits, in order.

    Notes
    -----
    Cross-validation scores and the choice made by ``GridSearchCV`` are
    computed from the data without noise and are *not* private releases; the
    accountant only covers the fitted models. Use ``BilevelRidge`` to tune a
    penalty privately.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Google's dp-accounting library, https://github.com/google/differential-privacy.

    Examples
    --------
    >>> from skdp.privacy import PrivacyAccountant, gaussian_steps
    >>> acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    >>> acc.spend(gaussian_steps(20.0, 10), label="fit 1")
    >>> round(acc.spent_epsilon, 3)
    0.561
    >>> acc.spend(gaussian_steps(1.0, 10))
    Traceback (most recent call last):
    ...
    skdp.privacy._accountant.BudgetExceededError: ...
    """

    def __init__(self, epsilon, delta):
        if not (epsilon > 0):
            raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}.")
        if not (0.0 < delta < 1.0):
            raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
        self.epsilon = float(epsilon)
        self.delta = float(delta)
        self.ledger = []
        self._streams = 0
        self._lock = threading.Lock()
        self._pid = os.getpid()
        self._copied = False

    # -- scikit-learn integration -------------------------------------------
    def __sklearn_clone__(self):
        # Folds of cross_val_score / GridSearchCV must share one ledger.
        return self

    def __deepcopy__(self, memo):
        # A ledger is one budget: a deep copy of an estimator shares it, as
        # clone() does, rather than fork it and spend the budget twice.
        return self

    def __getstate__(self):
        state = self.__dict__.copy()
        del state["_lock"]
        return state

    def __setstate__(self, state):
        self.__dict__.update(state)
        self._lock = threading.Lock()
        # A copy of the record, not the ledger: spending from it would go
        # unseen by the original (see _check_process).
        self._copied = True

    def __repr__(self):
        return (
            f"PrivacyAccountant(epsilon={self.epsilon!r}, delta={self.delta!r}, "
            f"fits={len(self.ledger)})"
        )

    # -- spending -------------------------------------------------------------
    def claim_stream(self):
        """A new index for the random stream of one fit on this ledger.

        ``clone`` copies an estimator's ``random_state``, so the folds of a
        cross-validation would otherwise draw the *same* noise on overlapping
        data: subtracting two folds' releases would cancel it, and the
        ledger's composition (which assumes independent noise) would not
        hold. Estimators mix this index into their seed.

        Returns
        -------
        int
        """
        with self._lock:
            self._streams += 1
            return self._streams - 1

    def _check_process(self):
        if os.getpid() != self._pid:
            raise RuntimeError(
                "This PrivacyAccountant was copied to another process (for "
                "example by n_jobs > 1 in cross_val_score or GridSearchCV). A "
                "fit there cannot report its spending back to the shared "
                "ledger. Use n_jobs=1 (or a threading backend) with a shared "
                "accountant."
            )
        if self._copied:
            raise RuntimeError(
                "This PrivacyAccountant is a pickled copy (pickle, joblib or "
                "copy.copy) of a ledger: spending from it would not reach the "
                "original, so the budget could be spent twice. Spend from the "
                "original object, or create a new accountant for a new budget."
            )

    def _epsilon_of(self, events):
        if not events:
            return 0.0
        return certify_epsilon(ComposedDpEvent(list(events)), self.delta)

    def epsilon_after(self, event):
        """Total epsilon at ``self.delta`` if ``event`` were spent now.

        Parameters
        ----------
        event : DpEvent

        Returns
        -------
        epsilon : float
        """
        return self._epsilon_of([e for _, e in self.ledger] + [event])

    def can_spend(self, event):
        """Whether ``event`` fits in the remaining budget.

        Parameters
        ----------
        event : DpEvent

        Returns
        -------
        bool
        """
        return self.epsilon_after(event) <= self.epsilon * (1 + 1e-9)

    def spend(self, event, *, label=None):
        """Record ``event`` or raise :class:`BudgetExceededError`.

        Call this before drawing any noise or releasing anything.

        Parameters
        ----------
        event : DpEvent
            The fit's privacy plan.
        label : str, optional
            Name recorded in the ledger.

        Raises
        ------
        BudgetExceededError
            If the composed epsilon would exceed ``self.epsilon``.
        RuntimeError
            If called from another process than the one that created the
            accountant.
        """
        self._check_process()
        with self._lock:
            total = self.epsilon_after(event)
            if not total <= self.epsilon * (1 + 1e-9):
                raise BudgetExceededError(
                    f"This fit would bring the total privacy loss to epsilon="
                    f"{total:.4g} at delta={self.delta:g}, above the budget "
                    f"epsilon={self.epsilon:g} ({len(self.ledger)} fits spent "
                    f"epsilon={self.spent_epsilon:.4g}). No data was used."
                )
            self.ledger.append((label or "fit", event))

    # -- reporting --------------------------------------------------------------
    @property
    def spent_epsilon(self):
        """Composed epsilon of all recorded fits, at ``self.delta``."""
        return self._epsilon_of([e for _, e in self.ledger])

    @property
    def spent(self):
        """``(epsilon, delta)`` certified for all recorded fits."""
        return (self.spent_epsilon, self.delta)

    @property
    def remaining_epsilon(self):
        """``epsilon - spent_epsilon``, a guide only: composition is not additive."""
        return (
            max(0.0, self.epsilon - self.spent_epsilon)
            if not math.isinf(self.epsilon)
            else math.inf
        )
