"""A privacy receipt: what a fitted estimator or pipeline drew, as JSON."""

import math

from sklearn.exceptions import NotFittedError

from ._spent import spent
from .pipeline import _diagnose
from .utils._pipeline_walk import iter_leaf_steps

__all__ = ["receipt"]

RECEIPT_VERSION = 1


def receipt(estimator, *, delta=None):
    """A JSON-serialisable record of every private step and draw of a fit.

    For each skdp step of a (nested) pipeline, column transformer or feature
    union, or for a single estimator: its path, class, ``privacy_spent_`` and
    privacy ledger (every noise draw's mechanism, sensitivity, scale, count,
    sampling and disjoint part, see :mod:`skdp.privacy`), and the composed
    ``(epsilon, delta)`` of :func:`skdp.spent`. It holds the public quantities
    of the releases only, never a value read from the data.
    :func:`skdp.privacy.verify` (or ``python -m skdp.verify receipt.json``)
    recomputes epsilon from the ledgers alone.

    Steps that share a :class:`~skdp.PrivacyAccountant` are listed by their
    own ledgers; :func:`skdp.spent` then reports the accountant's total,
    which also counts the other fits charged to it, so ``verify`` of the
    receipt may be lower.

    Parameters
    ----------
    estimator : fitted estimator
    delta : float, optional
        As in :func:`skdp.spent`.

    Returns
    -------
    dict
        ``{"skdp_receipt": 1, "epsilon", "delta", "steps": [...],
        "nonprivate_steps": [...]}``.

    Raises
    ------
    sklearn.exceptions.NotFittedError
        If a private step is not fitted.

    References
    ----------
    - Google's dp-accounting library: privacy events as data.

    Examples
    --------
    >>> import json
    >>> import numpy as np
    >>> from skdp import HeavyTailedLinearRegression, receipt
    >>> from skdp.privacy import verify
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2)); y = X @ [1.0, -1.0]
    >>> model = HeavyTailedLinearRegression(random_state=0).fit(X, y)
    >>> record = json.loads(json.dumps(receipt(model)))
    >>> bool(abs(verify(record) - model.privacy_spent_[0]) < 1e-6)
    True
    """
    steps, nonprivate = [], []
    for path, step in iter_leaf_steps(estimator, fitted=True):
        if _diagnose(step) is not None:
            nonprivate.append(path or type(step).__name__)
            continue
        if not hasattr(step, "epsilon"):
            continue  # a stateless public step
        if not hasattr(step, "privacy_spent_"):
            raise NotFittedError(f"Step {path or type(step).__name__!r} is not fitted.")
        steps.append(
            {
                "step": path or type(step).__name__,
                "estimator": type(step).__name__,
                "privacy_spent": [float(v) for v in step.privacy_spent_],
                "ledger": step.privacy_ledger_.to_dict(),
            }
        )
    epsilon, total_delta = spent(estimator, delta=delta)
    return {
        "skdp_receipt": RECEIPT_VERSION,
        "epsilon": None if math.isinf(epsilon) else float(epsilon),
        "delta": float(total_delta),
        "steps": steps,
        "nonprivate_steps": nonprivate,
    }


