"""Per-column public bounds: check the declared ones, or estimate them privately.

A scaler needs a public range ``[lower_j, upper_j]`` for every column: rows
are clipped to it, so that the column's statistics have a known
sensitivity. Declared bounds cost nothing. Bounds left to ``None`` are
estimated by the exponential-mechanism quantile of :mod:`skdp.privacy`, two
per column (a low and a high quantile), each a pure ``epsilon_q``-DP release.
"""

import math
import warnings

import numpy as np
import scipy.sparse as sp

from ..privacy import (
    Budget,
    ComposedDpEvent,
    private_quantile,
    private_quantile_event,
    reachable_quantile_level,
)
from ..solvers._distributed import is_dask_collection

__all__ = [
    "check_bounds",
    "bounds_event",
    "estimate_bounds",
    "saturate",
    "BOUNDS_CONSTRAINT",
    "QUANTILE_RANGE",
    "quantile_epsilon",
    "share_quantile_epsilon",
]

#: Parameter constraint of a transformer's ``bounds`` (``None``: estimate them).
BOUNDS_CONSTRAINT = [tuple, list, "array-like", None]

#: Public search range of the private bound quantiles, in ``asinh`` units:
#: ``|x| <= 1e12``, cut into 2048 cells (relative resolution about 3%).
QUANTILE_RANGE = (-math.asinh(1e12), math.asinh(1e12))

#: Quantile level of the upper bound (the lower one is ``1 - level``) when
#: ``n * epsilon_q`` allows it (see :func:`skdp.privacy.reachable_quantile_level`).
TARGET_LEVEL = 0.995

#: Below this reachable level, estimated bounds clip much of the data: warn.
MIN_LEVEL = 0.9


def check_bounds(bounds, n_features):
    """Declared ``(lower, upper)`` as two float arrays of shape ``(n_features,)``.

    Parameters
    ----------
    bounds : tuple (lower, upper)
        Scalars or arrays of shape ``(n_features,)``, public.
    n_features : int

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)

    Raises
    ------
    ValueError
        If the bounds or their widths are not finite, have the wrong length,
        or ``lower >= upper`` somewhere. They are public: the error reveals
        nothing about the data.
    """
    try:
        lower, upper = bounds
    except (TypeError, ValueError):
        raise ValueError(
            "bounds must be a pair (lower, upper) of scalars or per-column arrays."
        ) from None
    out = []
    for name, b in (("lower", lower), ("upper", upper)):
        b = np.asarray(b, dtype=float)
        if b.ndim == 0:
            b = np.full(n_features, float(b))
        if b.shape != (n_features,):
            raise ValueError(
                f"bounds: {name} has shape {b.shape}, expected a scalar or "
                f"({n_features},) for {n_features} features."
            )
        if not np.all(np.isfinite(b)):
            raise ValueError(f"bounds: {name} must be finite.")
        out.append(b)
    if np.any(out[0] >= out[1]):
        raise ValueError("bounds: every lower bound must be below its upper bound.")
    with np.errstate(over="ignore"):
        width = out[1] - out[0]
    if not np.all(np.isfinite(width)):
        # The statistics map each range to [-1/2, 1/2] by its width: an
        # overflowing width would make every released statistic NaN.
        raise ValueError(
            "bounds: upper - lower must be a finite float (below about 1.8e308)."
        )
    return out[0], out[1]


def quantile_epsilon(epsilon, share, n_features):
    """Pure epsilon of each of the ``2 * n_features`` bound quantiles.

    A public rule: ``share * epsilon`` split evenly (basic composition; the
    accountant then composes the releases exactly, so this only chooses how
    much noise, never what is certified).

    Parameters
    ----------
    epsilon : float
    share : float
    n_features : int

    Returns
    -------
    float
    """
    if math.isinf(epsilon):
        return math.inf
    return float(share) * float(epsilon) / (2 * max(int(n_features), 1))


def share_quantile_epsilon(epsilon, delta, share, n_features):
    """Pure epsilon of each bound quantile, from a share of the GDP budget.

    The ``estimation_share`` unit of every skdp estimator: the fit's target
    ``(epsilon, delta)`` is the GDP budget ``mu`` (:class:`skdp.privacy.Budget`)
    and the ``2 * n_features`` quantiles take ``share`` of ``mu**2``, split
    evenly. A pure step with ``epsilon_q`` costs ``epsilon_q**2 / 2`` in
    zCDP, so each gets ``epsilon_q = mu sqrt(share / (2 n_features))``. This
    only chooses how much noise; the accountant certifies the composition of
    the quantiles and the rest of the fit exactly.

    Parameters
    ----------
    epsilon : float
        Target epsilon of the fit, in (0, inf].
    delta : float
        Target delta of the fit.
    share : float
        Share of ``mu**2``, in (0, 1).
    n_features : int

    Returns
    -------
    float
        ``inf`` when ``epsilon`` is ``inf``.
    """
    if math.isinf(epsilon):
        return math.inf
    budget = Budget.from_target(epsilon, delta, margin=False)
    return budget.share(share, 2 * max(int(n_features), 1)).mu


def bounds_event(epsilon_q, n_features):
    """Event of :func:`estimate_bounds`: ``2 * n_features`` pure releases.

    Parameters
    ----------
    epsilon_q : float
    n_features : int

    Returns
    -------
    DpEvent
    """
    return ComposedDpEvent([private_quantile_event(epsilon_q)] * (2 * n_features))


def estimate_bounds(X, epsilon_q, rng, before_noise=None):
    """Private per-column ``(lower, upper)``: low and high quantiles of each column.

    Each quantile is a release of :func:`skdp.privacy.private_quantile` on
    ``asinh(x)`` (a public monotone map, so the quantile of ``asinh(x)`` is
    ``asinh`` of the quantile of ``x``) over :data:`QUANTILE_RANGE`, at level
    ``1 - q`` and ``q`` with ``q`` the highest level up to 0.995 that ``n``
    rows at ``epsilon_q`` can locate (a public function of ``n`` and
    ``epsilon_q``). A column whose two releases meet is widened by one cell
    (post-processing).

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    epsilon_q : float
        Pure epsilon of each quantile.
    rng : numpy.random.Generator
    before_noise : callable, optional
        Dask input: called once the cell counts are summed (their pass also
        refuses ``nan``/``inf``), before the first draw (a one-pass dask fit
        charges its plan there). Ignored for numpy input.

    Returns
    -------
    lower, upper : ndarray of shape (n_features,)
    """
    if is_dask_collection(X):  # cell counts per chunk, draws on the driver
        from ._dask_fit import estimate_bounds_on_workers

        return estimate_bounds_on_workers(X, epsilon_q, rng, before_noise)
    n, d = X.shape
    level = bounds_level(n, epsilon_q, stacklevel=4)
    lower, upper = np.empty(d), np.empty(d)
    column = _asinh_columns(X)
    for j in range(d):
        col = column(j)
        lo = private_quantile(
            col, 1.0 - level, epsilon_q, bounds=QUANTILE_RANGE, rng=rng
        )
        hi = private_quantile(col, level, epsilon_q, bounds=QUANTILE_RANGE, rng=rng)
        lower[j], upper[j] = column_bounds(lo, hi)
    return lower, upper


def bounds_level(n, epsilon_q, stacklevel=2):
    """Level ``q`` of the bound quantiles, warning when it is below MIN_LEVEL.

    The highest level up to :data:`TARGET_LEVEL` that ``n`` rows at
    ``epsilon_q`` can locate (:func:`skdp.privacy.reachable_quantile_level`):
    a public rule of ``n`` and ``epsilon_q``, so the warning costs no
    privacy. Shared by the numpy and the dask fits.

    Parameters
    ----------
    n : int
    epsilon_q : float
    stacklevel : int, default=2
        Of the warning.

    Returns
    -------
    float
    """
    level = reachable_quantile_level(n, epsilon_q, TARGET_LEVEL)
    if level < MIN_LEVEL:
        warnings.warn(
            f"{n} rows at epsilon={epsilon_q:.3g} per quantile only locate the "
            f"({1 - level:.2f}, {level:.2f}) quantiles of each column: the "
            "private bounds will clip much of the data. Pass public bounds.",
            UserWarning,
            stacklevel=stacklevel,
        )
    return level


def column_bounds(lo, hi):
    """A column's ``(lower, upper)`` from its two releases in ``asinh`` units.

    Releases that meet are widened to one cell of :data:`QUANTILE_RANGE`
    (post-processing); the result is mapped back by ``sinh``. Shared by the
    numpy and the dask fits.

    Parameters
    ----------
    lo, hi : float

    Returns
    -------
    (float, float)

    Examples
    --------
    >>> column_bounds(0.0, 0.0)[1] > 0
    True
    """
    cell = (QUANTILE_RANGE[1] - QUANTILE_RANGE[0]) / 2048
    if hi - lo < cell:
        mid = 0.5 * (lo + hi)
        lo, hi = mid - 0.5 * cell, mid + 0.5 * cell
    return math.sinh(lo), math.sinh(hi)


def saturate(X):
    """Replace, in place, values that overflowed to ``+-inf`` by ``+-max float``.

    ``transform`` output on private rows: validated input is finite, so an
    infinity can only come from an overflow on an extreme value, and the next
    step of a pipeline would raise on it (an error one record triggers is a
    release). NaN cannot arise from finite input and finite parameters.

    Parameters
    ----------
    X : ndarray of float

    Returns
    -------
    X : ndarray
        The same array.
    """
    big = np.finfo(X.dtype).max
    return np.clip(X, -big, big, out=X)


def _asinh_columns(X):
    """``j -> asinh(X[:, j])`` as a dense column (sparse input: one column at a time)."""
    if sp.issparse(X):
        T = sp.csc_matrix(X, dtype=np.float64, copy=True)
        T.sum_duplicates()  # asinh of each entry's summed value
        with np.errstate(all="ignore"):
            T.data = np.arcsinh(T.data)  # asinh(0) = 0 keeps the zeros implicit
        return lambda j: T[:, [j]].toarray().ravel()
    with np.errstate(all="ignore"):
        T = np.arcsinh(X)
    return lambda j: T[:, j]
