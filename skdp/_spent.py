"""What a fitted estimator, pipeline or column transformer spent in total."""

import math
import warnings

import numpy as np
from sklearn.exceptions import NotFittedError

from .exceptions import PrivacyLeakWarning
from .pipeline import _diagnose, _shared_ledger_seed_steps, _shared_seed_steps
from .privacy import ComposedDpEvent, NoOpDpEvent, certify_epsilon
from .utils._pipeline_walk import iter_leaf_steps

__all__ = ["spent"]


def spent(estimator, *, delta=None):
    """Total ``(epsilon, delta)`` that a fitted (composite) estimator spent.

    The steps of a :class:`~sklearn.pipeline.Pipeline`,
    :class:`~sklearn.compose.ColumnTransformer` or
    :class:`~sklearn.pipeline.FeatureUnion` (recursively) all read the same
    private rows, so their releases compose. The composition is exact: it is
    made of the steps' privacy plans (DpEvents), never of a sum of epsilons.

    - Steps that spent from a shared :class:`PrivacyAccountant` count through
      its ledger: everything on it (all steps, and every fold of a
      ``cross_val_score`` that used it), once.
    - Other skdp steps count through their privacy ledger
      ``privacy_ledger_``: the events of the noise they drew, composed
      exactly with the other steps'. A step without a ledger counts by its
      plan ``privacy_plan_``, or else by its ``privacy_spent_`` under basic
      composition (epsilons and deltas add up), a valid but looser bound.
    - A step that learns from the data without privacy (see
      :func:`skdp.check_pipeline`) makes the total ``epsilon`` infinite.
    - skdp steps that share a ``random_state`` (the same integer, or the
      same ``Generator`` object) without an accountant draw different noise,
      so the total holds, but one seed replays all of them: a
      :class:`~skdp.PrivacyLeakWarning` names them (their parameters are
      public). Steps that share a seed on *separate* accountants are named
      too: at the same position of their ledgers they draw the same noise.

    Parameters
    ----------
    estimator : fitted estimator
        A pipeline, a column transformer, a feature union or a single step.
    delta : float, optional
        Report epsilon at this delta. Default: the sum of the accountants'
        ``delta`` and of the other steps' spent deltas. Below the summed
        deltas of the steps counted by basic composition, the epsilon is
        infinite.

    Returns
    -------
    (epsilon, delta) : tuple of float

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If a private step is not fitted.

    Warns
    -----
    PrivacyLeakWarning
        If skdp steps share a ``random_state`` without an accountant, or
        on separate accountants.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.pipeline import make_pipeline
    >>> from skdp.preprocessing import MinMaxScaler, StandardScaler
    >>> from skdp import PrivacyAccountant, spent
    >>> X = np.random.default_rng(0).uniform(0, 10, size=(1000, 2))
    >>> acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    >>> pipe = make_pipeline(
    ...     StandardScaler(bounds=(0, 10), epsilon=0.5, delta=5e-6, accountant=acc),
    ...     MinMaxScaler(bounds=(-5, 5), accountant=acc),
    ... ).fit(X)
    >>> eps, delta = spent(pipe)
    >>> eps == acc.spent_epsilon, delta
    (True, 1e-05)
    """

    shared = _shared_seed_steps(estimator, fitted=True)
    if shared:
        names = ", ".join(repr(path or type(step).__name__) for path, step, _ in shared)
        warnings.warn(
            f"Steps {names} share a random_state and have no accountant: their "
            "noise streams differ, but one seed replays all of them. Use "
            "random_state=None, or one shared PrivacyAccountant.",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    shared = _shared_ledger_seed_steps(estimator, fitted=True)
    if shared:
        names = ", ".join(repr(path or type(step).__name__) for path, step, _ in shared)
        warnings.warn(
            f"Steps {names} share a random_state on separate accountants: fits "
            "at the same position of their ledgers drew the same noise, and the "
            "total below assumes independent noise. Use random_state=None, or "
            "one shared PrivacyAccountant.",
            PrivacyLeakWarning,
            stacklevel=2,
        )
    accountants, events, basic = [], [], []
    delta_events = 0.0
    for path, step in iter_leaf_steps(estimator, fitted=True):
        if _diagnose(step) is not None:
            return (math.inf, float(delta) if delta is not None else 0.0)
        if not hasattr(step, "epsilon"):
            continue  # a stateless public step
        if not hasattr(step, "privacy_spent_"):
            raise NotFittedError(f"Step {path or type(step).__name__!r} is not fitted.")
        acc = getattr(step, "accountant", None)
        if acc is not None:
            if not any(acc is a for a in accountants):
                accountants.append(acc)
        elif hasattr(step, "privacy_ledger_"):
            # Exact: the events of the step's own draws (its privacy ledger).
            events.append(step.privacy_ledger_.event())
            delta_events += float(step.privacy_spent_[1])
        elif hasattr(step, "privacy_plan_"):
            events.append(step.privacy_plan_)
            delta_events += float(step.privacy_spent_[1])
        else:
            basic.append(tuple(float(v) for v in step.privacy_spent_))
    events = [e for e in events if not isinstance(e, NoOpDpEvent)]
    for acc in accountants:
        events.extend(e for _, e in acc.ledger)
        delta_events += acc.delta
    eps_basic = sum(e for e, _ in basic)
    delta_basic = sum(d for _, d in basic)
    if delta is None:
        delta = delta_events + delta_basic
    target = float(delta) - delta_basic
    if not events:
        # Basic composition certifies (sum of epsilons, sum of deltas) only:
        # at a smaller delta nothing is certified.
        if delta_basic > 0 and target < -1e-12 * delta_basic:
            return (math.inf, float(delta))
        return (eps_basic, float(delta))
    if target <= 0:
        return (math.inf, float(delta))
    eps = certify_epsilon(ComposedDpEvent(events), target)
    return (float(np.float64(eps) + eps_basic), float(delta))
