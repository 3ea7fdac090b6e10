"""Building blocks shared by the heavy-tailed GLM solvers (Asi, Liu and Tian).

- :func:`split_gdp` (from :mod:`skdp.privacy`, re-exported) turns a GDP
  budget ``mu`` into noise multipliers for groups of full-batch Gaussian
  releases by shares of ``mu**2``.
- :func:`row_lipschitz_bounds` gives the per-row Lipschitz bounds of
  Assumption 2 (known Lipschitz) for linear models on a ball.
- :func:`safe_derivatives`: non-finite derivatives made harmless.
- :func:`gdp_of`, :func:`paper_power`: the pieces of the papers' clip
  formulas (Theorem 2, Corollary 1), evaluated safely.

Every solver returns :class:`~skdp.solvers.heavy_tailed.result.HeavyTailedResult`.

Private bounds (quantiles, scales, clip levels) live in
:mod:`skdp.solvers.heavy_tailed.bounds`.
"""

import math

import numpy as np

from ...privacy import split_gdp  # noqa: F401  (re-exported)
from .._distributed import as_float_records

__all__ = [
    "noise_std",
    "split_gdp",
    "row_lipschitz_bounds",
    "safe_derivatives",
    "gdp_of",
    "paper_power",
]


def noise_std(sensitivity, z):
    """Standard deviation ``z * sensitivity`` of a Gaussian release.

    With ``z = 0`` (``epsilon = inf``) there is no noise, also when the
    sensitivity is infinite (no clipping, e.g. the paper's clip formula at
    infinite budget), where ``0 * inf`` would give ``nan``.

    Parameters
    ----------
    sensitivity : float
        L2 sensitivity of the released statistic.
    z : float
        Noise multiplier.

    Returns
    -------
    float

    Examples
    --------
    >>> noise_std(float("inf"), 0.0), noise_std(2.0, 1.5)
    (0.0, 3.0)
    """
    return 0.0 if z == 0 else float(z) * float(sensitivity)


def safe_derivatives(loss, z, y):
    """Scalar derivatives with non-finite values made harmless.

    Rows with astronomically large entries can make ``x @ w`` infinite or
    ``nan`` (``inf - inf``). An infinite derivative is clipped later to the
    per-row cap, so keep its sign; a ``nan`` carries no direction and is
    replaced by 0 (a per-record map, so privacy is unaffected).

    Parameters
    ----------
    loss : _GLMLoss
    z, y : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> safe_derivatives(SquaredLoss(), np.array([np.nan, np.inf]), np.zeros(2))
    array([ 0., inf])
    """
    with np.errstate(all="ignore"):
        g = loss.derivative(z, y)
    g = as_float_records(g)  # dask: stays on the workers
    g[np.isnan(g)] = 0.0
    return g


def row_lipschitz_bounds(loss, row_norms, y, radius):
    """Per-row Lipschitz bounds over the ball of radius ``radius`` (Assumption 2).

    For ``f(w; (a, y)) = loss(<a, w>, y)`` on ``{||w|| <= R}``:
    logistic ``||a||``, Huber ``tau ||a||``, squared ``||a|| (R ||a|| + |y|)``.
    With ``R = inf`` the squared-loss bound is infinite for every non-zero
    row; rows are then ranked by their bound per unit radius, ``||a||**2``,
    which orders them exactly like ``||a||`` (the limit ``R -> inf``).

    Parameters
    ----------
    loss : _GLMLoss
    row_norms : ndarray of shape (n,)
    y : ndarray of shape (n,)
    radius : float
        Domain radius (``inf`` allowed).

    Returns
    -------
    bounds : ndarray of shape (n,)
        A true Lipschitz bound when it is finite; for the squared loss with
        ``radius=inf``, ``row_norms`` (a ranking only).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> row_lipschitz_bounds(SquaredLoss(), np.array([2.0]), np.array([-1.0]), 3.0)
    array([14.])
    """
    # the loss owns the formula; dask collections stay on the workers
    return loss.row_lipschitz_bounds(
        as_float_records(row_norms), as_float_records(y), radius
    )


def gdp_of(z, count):
    """GDP parameter ``sqrt(count) / z`` of ``count`` Gaussian releases.

    Parameters
    ----------
    z : float
        Noise multiplier of each release (0: no noise).
    count : int

    Returns
    -------
    float
        ``inf`` when ``z = 0``.

    Examples
    --------
    >>> gdp_of(2.0, 4), gdp_of(0.0, 4)
    (1.0, inf)
    """
    return math.inf if z == 0 else math.sqrt(count) / z


def paper_power(G, base, power):
    """``G * base**(1/power)`` computed in logs (a huge ``n**2 rho / d`` is fine).

    Parameters
    ----------
    G : float
        Public moment bound (``G_k``).
    base : float
        ``inf`` gives ``inf``; values below ``1e-300`` are raised to it.
    power : float

    Returns
    -------
    float

    Examples
    --------
    >>> round(paper_power(2.0, 16.0, 4), 12)
    4.0
    """
    if math.isinf(base):
        return math.inf
    return float(math.exp(math.log(G) + math.log(max(base, 1e-300)) / power))
