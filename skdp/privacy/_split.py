"""Split one (epsilon, delta) budget between the steps of a pipeline."""

import math

import numpy as np

from ._conversions import gdp_epsilon, gdp_mu

__all__ = ["split_epsilon"]


def split_epsilon(epsilon, delta, shares):
    """Per-step epsilons whose composition is ``(epsilon, delta)``, by GDP shares.

    The total is ``mu``-GDP with ``mu = gdp_mu(epsilon, delta)``; step ``i``
    gets ``mu_i = mu sqrt(share_i)`` (shares of ``mu**2``, which add up under
    composition) and is given ``epsilon_i = gdp_epsilon(mu_i, delta)``. Steps
    whose plans are full-batch Gaussian releases calibrated at ``(epsilon_i,
    delta)`` (skdp's scalers and imputer with declared bounds, and the
    GDP-budgeted estimators) then compose to at most ``(epsilon, delta)``:
    pass every step ``delta=delta`` and one
    :class:`PrivacyAccountant(epsilon, delta) <PrivacyAccountant>`, which
    checks the composition exactly and refuses a step that would overspend.

    Parameters
    ----------
    epsilon : float
        Total epsilon, in (0, inf].
    delta : float
        Total delta, in (0, 1); also each step's ``delta``.
    shares : array-like of float
        Non-negative shares of ``mu**2``; normalised to sum to one.

    Returns
    -------
    list of float
        One epsilon per share (``inf`` if ``epsilon`` is ``inf``).

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> eps = split_epsilon(1.0, 1e-6, [0.1, 0.9])
    >>> [round(e, 3) for e in eps]
    [0.291, 0.945]
    """
    shares = np.asarray(shares, dtype=float)
    if shares.ndim != 1 or shares.size == 0 or np.any(shares < 0) or shares.sum() <= 0:
        raise ValueError("shares must be a non-empty list of non-negative numbers.")
    if math.isinf(epsilon):
        return [math.inf] * shares.size
    mu = gdp_mu(float(epsilon), float(delta))
    shares = shares / shares.sum()
    return [float(gdp_epsilon(mu * math.sqrt(s), float(delta))) for s in shares]
