"""Conversions between (epsilon, delta)-DP, rho-zCDP and mu-GDP.

All functions are pure and vectorisation-free; they are used to calibrate
noise before any data is touched, so exactness matters more than speed.

The Gaussian differential privacy (GDP) trade-off of Dong, Roth and Su (2022)
is exact for compositions of full-batch Gaussian mechanisms: a composition of
Gaussian steps with sensitivities ``Delta_t`` and noise ``sigma_t`` is exactly
``mu``-GDP with ``mu = sqrt(sum_t (Delta_t / sigma_t) ** 2)``, and ``mu``-GDP
is ``(epsilon, delta(epsilon))``-DP for

``delta(epsilon) = Phi(-epsilon / mu + mu / 2) - exp(epsilon) Phi(-epsilon / mu - mu / 2)``

and for no smaller ``delta``. The zCDP route (Bun and Steinke, 2016),
``epsilon = rho + 2 sqrt(rho log(1 / delta))``, is a valid but looser bound
that we only provide for comparison and for pure-epsilon steps in RDP.
"""

import math

import numpy as np
from scipy.optimize import brentq
from scipy.special import log_ndtr

__all__ = [
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "zcdp_epsilon",
    "zcdp_rho",
    "gdp_to_zcdp",
    "pure_to_zcdp",
]


def _check_delta(delta):
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")


def gdp_delta(mu, epsilon):
    """Smallest ``delta`` such that ``mu``-GDP implies ``(epsilon, delta)``-DP.

    Parameters
    ----------
    mu : float
        GDP parameter, ``mu >= 0``. ``mu = inf`` means no privacy.
    epsilon : float
        Target epsilon, ``epsilon >= 0``.

    Returns
    -------
    delta : float
        ``Phi(-epsilon/mu + mu/2) - exp(epsilon) Phi(-epsilon/mu - mu/2)``.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022, Cor. 2.13.

    Examples
    --------
    >>> round(gdp_delta(1.0, 1.0), 4)
    0.1269
    """
    if mu < 0 or epsilon < 0:
        raise ValueError("mu and epsilon must be non-negative.")
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return 1.0
    if math.isinf(epsilon):
        return 0.0
    a = log_ndtr(-epsilon / mu + mu / 2)
    b = epsilon + log_ndtr(-epsilon / mu - mu / 2)
    # delta = e^a - e^b with a >= b; written as e^a (1 - e^(b-a)) for accuracy.
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def gdp_epsilon(mu, delta):
    """Smallest ``epsilon`` such that ``mu``-GDP implies ``(epsilon, delta)``-DP.

    Parameters
    ----------
    mu : float
        GDP parameter.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> round(gdp_epsilon(1.0, 1e-5), 3)
    4.377
    """
    _check_delta(delta)
    if mu == 0:
        return 0.0
    if math.isinf(mu):
        return math.inf
    if gdp_delta(mu, 0.0) <= delta:
        return 0.0
    hi = 1.0
    while gdp_delta(mu, hi) > delta:
        hi *= 2.0
    return brentq(lambda e: gdp_delta(mu, e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-12)


def gdp_mu(epsilon, delta):
    """Largest ``mu`` such that ``mu``-GDP implies ``(epsilon, delta)``-DP.

    This is the budget, in GDP units, of a composition of full-batch Gaussian
    mechanisms: any composition with ``sqrt(sum (Delta_t / sigma_t) ** 2) <= mu``
    is ``(epsilon, delta)``-DP, and the bound is tight.

    Parameters
    ----------
    epsilon : float
        Target epsilon, in (0, inf].
    delta : float
        Target delta, in (0, 1).

    Returns
    -------
    mu : float

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> round(gdp_mu(1.0, 1e-6), 4)
    0.2367
    """
    _check_delta(delta)
    if math.isinf(epsilon):
        return math.inf
    if epsilon < 0:
        raise ValueError("epsilon must be non-negative.")
    hi = 1.0
    while gdp_delta(hi, epsilon) < delta:
        hi *= 2.0
    lo = 0.0
    return brentq(
        lambda m: gdp_delta(m, epsilon) - delta, lo, hi, xtol=1e-14, rtol=1e-13
    )


def zcdp_epsilon(rho, delta):
    """``epsilon = rho + 2 sqrt(rho log(1/delta))``: rho-zCDP implies (epsilon, delta)-DP.

    Parameters
    ----------
    rho : float
        zCDP parameter.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    epsilon : float

    References
    ----------
    - Bun and Steinke, "Concentrated differential privacy", TCC 2016, Prop. 1.3.

    Examples
    --------
    >>> round(zcdp_epsilon(0.5, 1e-5), 3)
    5.299
    """
    _check_delta(delta)
    return float(rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta)))


def zcdp_rho(epsilon, delta):
    """Largest ``rho`` with ``zcdp_epsilon(rho, delta) <= epsilon``.

    ``rho = (sqrt(epsilon + log(1/delta)) - sqrt(log(1/delta))) ** 2``.

    Parameters
    ----------
    epsilon : float
        Target epsilon.
    delta : float
        Target delta in (0, 1).

    Returns
    -------
    rho : float

    References
    ----------
    - Bun and Steinke, "Concentrated differential privacy: simplifications, extensions, and
      lower bounds", TCC 2016.

    Examples
    --------
    >>> round(zcdp_rho(1.0, 1e-6), 5)
    0.01747
    """
    _check_delta(delta)
    if math.isinf(epsilon):
        return math.inf
    L = math.log(1.0 / delta)
    return float((math.sqrt(epsilon + L) - math.sqrt(L)) ** 2)


def gdp_to_zcdp(mu):
    """``mu``-GDP from Gaussian steps is ``mu**2 / 2``-zCDP.

    Parameters
    ----------
    mu : float

    Returns
    -------
    rho : float

    References
    ----------
    - Bun and Steinke, "Concentrated differential privacy: simplifications, extensions, and
      lower bounds", TCC 2016.
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> gdp_to_zcdp(2.0)
    2.0
    """
    return float(mu) ** 2 / 2.0


def pure_to_zcdp(epsilon):
    """A pure ``epsilon``-DP step is ``epsilon**2 / 2``-zCDP (Bun and Steinke, Prop. 1.4).

    Parameters
    ----------
    epsilon : float

    Returns
    -------
    rho : float

    References
    ----------
    - Bun and Steinke, "Concentrated differential privacy: simplifications, extensions, and
      lower bounds", TCC 2016.

    Examples
    --------
    >>> pure_to_zcdp(0.2)
    0.020000000000000004
    """
    return float(epsilon) ** 2 / 2.0


def _as_float(x):
    return float(np.asarray(x, dtype=float))
