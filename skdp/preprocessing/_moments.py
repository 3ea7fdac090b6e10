"""Private per-column means and variances of rows clipped to public bounds.

Each value is clipped to its column's public range ``[lower_j, upper_j]`` and
mapped to ``u = (x - mid_j) / width_j`` in ``[-1/2, 1/2]``. The released
statistic is the mean over rows of the vector ``(u_1, ..., u_d)``, or of
``(u_1, 2 u_1**2, ..., u_d, 2 u_d**2)`` when variances are needed. Replacing
one row moves the pair of column ``j`` by ``(t, 2 (a**2 - b**2)) / n`` with
``t = a - b``; its squared norm ``t**2 (1 + 4 (a + b)**2) / n**2`` is at most
``1 / n**2`` on ``[-1/2, 1/2]**2`` (``(1 - |s|)**2 (1 + 4 s**2) <= 1`` for
``|s| <= 1``, attained at ``a = -b = 1/2``). The replace-one L2 sensitivity
of either vector is therefore ``sqrt(d) / n``, and one Gaussian release with
multiplier ``z`` (event ``GaussianDpEvent(z)``) covers all columns.
"""

import math

import numpy as np
import scipy.sparse as sp

from ..privacy import gaussian_mechanism
from ..solvers._distributed import is_dask_collection
from ..utils._sparse import as_float_columns

__all__ = [
    "moments_sensitivity",
    "clipped_unit_values",
    "private_moments",
    "sparse_columns",
]


def moments_sensitivity(n_samples, n_features):
    """Replace-one L2 sensitivity ``sqrt(d) / n`` of the released vector.

    Parameters
    ----------
    n_samples, n_features : int

    Returns
    -------
    float
    """
    return math.sqrt(n_features) / n_samples


def clipped_unit_values(X, lower, upper):
    """``u = (clip(x, lower, upper) - mid) / width``, in ``[-1/2, 1/2]``.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    lower, upper : ndarray of shape (n_features,)

    Returns
    -------
    ndarray of shape (n_samples, n_features)
    """
    width = upper - lower
    mid = lower + 0.5 * width
    with np.errstate(all="ignore"):
        U = (np.clip(X, lower, upper) - mid) / width
        # Rounding can leave |u| a hair above 1/2; the bound must hold exactly.
        return np.clip(U, -0.5, 0.5)


def private_moments(
    X, lower, upper, noise_multiplier, *, with_var, rng, before_noise=None
):
    """Private per-column mean (and variance) of ``X`` clipped to its bounds.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    lower, upper : ndarray of shape (n_features,)
        Public bounds, ``lower < upper``.
    noise_multiplier : float
        ``sigma / Delta`` with ``Delta = sqrt(d) / n``; ``0`` is exact.
    with_var : bool
        Also release the second moments and return variances.
    rng : numpy.random.Generator
    before_noise : callable, optional
        Called once the statistic is computed, before the noise is drawn (a
        one-pass dask fit charges its plan there).

    Returns
    -------
    mean : ndarray of shape (n_features,)
        In ``[lower, upper]`` (post-processing).
    var : ndarray of shape (n_features,) or None
        At least the noise level of the second moment (post-processing),
        ``0`` allowed only without noise.
    pre_noise : ndarray
        The statistic before noise (for coupled-run tests).
    """
    n, d = X.shape
    if sp.issparse(X):
        stat = _sparse_unit_moments(X, lower, upper, with_var)
    elif is_dask_collection(X):  # clipped and summed per chunk on the workers
        from ._dask_fit import unit_moments_on_workers

        stat = unit_moments_on_workers(X, lower, upper, with_var)
    else:
        U = clipped_unit_values(X, lower, upper)
        with np.errstate(all="ignore"):
            if with_var:
                stat = np.empty(2 * d)
                stat[0::2] = U.mean(axis=0)
                stat[1::2] = 2.0 * np.mean(U * U, axis=0)
            else:
                stat = U.mean(axis=0)
    if before_noise is not None:
        before_noise()
    sens = moments_sensitivity(n, d)
    noisy = np.atleast_1d(gaussian_mechanism(stat, sens, noise_multiplier, rng=rng))
    width = upper - lower
    mid = lower + 0.5 * width
    m_u = np.clip(noisy[0::2] if with_var else noisy, -0.5, 0.5)
    mean = np.clip(mid + width * m_u, lower, upper)
    if not with_var:
        return mean, None, stat
    floor = 0.5 * noise_multiplier * sens  # noise std of E[u**2]
    var_u = np.clip(0.5 * noisy[1::2] - m_u * m_u, floor, 0.25)
    return mean, width * width * var_u, stat


def sparse_columns(X, lower, upper):
    """Column layout of sparse ``X`` for statistics over stored entries.

    A column statistic of a sparse matrix is the sum over its stored entries
    plus ``n - nnz_j`` times the value of an implicit zero, whose unit value
    is ``0`` clipped to the column's bounds.

    Parameters
    ----------
    X : sparse matrix of shape (n_samples, n_features)
    lower, upper : float or ndarray of shape (n_features,)

    Returns
    -------
    X : scipy.sparse.csc_matrix
        Float64, duplicates summed (one value per record and column).
    cols : ndarray of int
        Column of each stored entry of ``X.data``.
    lower, upper : ndarray of shape (n_features,)
    implicit : ndarray of int
        Number of implicit zeros per column.
    u_zero : ndarray of shape (n_features,)
        Unit value of an implicit zero.
    """
    X = as_float_columns(X)  # duplicates summed: one value per record and column
    n, d = X.shape
    lower = np.broadcast_to(np.asarray(lower, dtype=float), (d,))
    upper = np.broadcast_to(np.asarray(upper, dtype=float), (d,))
    counts = np.diff(X.indptr)
    cols = np.repeat(np.arange(d), counts)
    u_zero = clipped_unit_values(np.zeros(d), lower, upper)
    return X, cols, lower, upper, n - counts, u_zero


def _sparse_unit_moments(X, lower, upper, with_var):
    """The statistic of :func:`private_moments` from the stored entries only.

    An implicit zero of column ``j`` has the unit value of ``0`` clipped to
    ``[lower_j, upper_j]``; the column sums add it ``n - nnz_j`` times, so the
    statistic equals the dense one (up to summation order).
    """
    X, cols, lower, upper, implicit, u_zero = sparse_columns(X, lower, upper)
    n, d = X.shape
    u_data = clipped_unit_values(X.data, lower[cols], upper[cols])
    with np.errstate(all="ignore"):
        mean = (np.bincount(cols, u_data, minlength=d) + implicit * u_zero) / n
        if not with_var:
            return mean
        second = (
            np.bincount(cols, u_data * u_data, minlength=d) + implicit * u_zero * u_zero
        ) / n
    stat = np.empty(2 * d)
    stat[0::2] = mean
    stat[1::2] = 2.0 * second
    return stat
