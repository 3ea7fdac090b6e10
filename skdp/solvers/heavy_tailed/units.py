"""Private units of the data for the heavy-tailed GLM solvers.

Gradient descent is only well behaved when its step matches the curvature of
the loss, ``curvature * E[a a^T]``, which grows with the square of the
feature scale. Under DP the scale of private data is not free, so instead of
assuming standardized features the solvers release one more scale quantile
(from the same budget share as the other scale quantiles, a per-record count
query with replace-one sensitivity 1):

- the **feature scale** ``s``: the median over rows of the root mean square
  of the row's non-zero entries, ``||a_i|| / sqrt(nnz(a_i))`` (the
  intercept column excluded; an all-zero row counts as ``+inf``: it says
  nothing about the scale), divided by the same median for a standard
  Gaussian vector of the same dimension,
  ``sqrt(chi2_d.median / d)``. On standardized data ``s ~ 1``; if the
  features are multiplied by ``c``, so is ``s``. Counting only the non-zero
  entries keeps one-hot and other sparse 0/1 columns at ``s ~ 1`` (their
  non-zero entries have unit size) instead of ``sqrt(nnz / d)``, which would
  give a step ``d / nnz`` times too large for the directions that matter and
  amplify the noise along the rarely active ones.

Everything scale dependent is then a public rule of ``s`` (post-processing):
the default step sizes are divided by ``s**2`` (so ``step * s**2`` plays the
role of the step on standardized data), the ``localized`` regularisation is
multiplied by ``s**2``, and the intercept column is the constant ``s``
instead of 1, so that the intercept's curvature, and its share of the
gradient noise, match those of the features (the fitted intercept is ``s``
times its coefficient). Clip levels, truncation levels and search ranges are
private quantiles of the data's own norms and scale with it already.

Rows of data in very different units per column are not fixed by a single
scale, and neither are features with a large common offset (the curvature
then concentrates on the mean direction); the divergence guard of the
full-batch solver keeps those from blowing up, but they converge slowly.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

from ...utils import safe_row_norms
from ...utils._sparse import append_constant_column, as_float_rows, is_sparse, row_nnz
from ...utils._sparse import row_norms as sparse_row_norms
from .._distributed import (
    as_float_records,
    design_on_workers,
    floored_design_on_workers,
    is_dask_collection,
    log2_records,
)
from .bounds import LOG2_RANGE, RANGE_STEPS, bisect_counts

__all__ = [
    "Design",
    "feature_scale",
    "floored_design",
    "gaussian_norm_median",
    "planned_design",
    "private_design",
    "row_rms",
]


def gaussian_norm_median(d):
    """Median norm of a standard Gaussian vector in dimension ``d`` (public).

    Parameters
    ----------
    d : int

    Returns
    -------
    float

    Examples
    --------
    >>> round(gaussian_norm_median(1), 4), round(gaussian_norm_median(100), 2)
    (0.6745, 9.97)
    """
    return float(math.sqrt(chi2.ppf(0.5, max(int(d), 1))))


def row_rms(X, row_norms=None):
    """Root mean square of each row's non-zero entries (``+inf`` if none).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    row_norms : ndarray of shape (n,), optional

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> row_rms(np.array([[3.0, 4.0, 0.0], [0.0, 0.0, 0.0], [2.0, 2.0, 2.0]]))
    array([3.53553391,        inf, 2.        ])
    """
    if is_sparse(X):
        norms = sparse_row_norms(X) if row_norms is None else row_norms
        nnz = row_nnz(X)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(nnz > 0, norms / np.sqrt(np.maximum(nnz, 1)), np.inf)
    X = np.asarray(X, dtype=float)
    norms = safe_row_norms(X) if row_norms is None else np.asarray(row_norms, float)
    nnz = np.count_nonzero(X, axis=1)
    with np.errstate(all="ignore"):
        return np.where(nnz > 0, norms / np.sqrt(np.maximum(nnz, 1)), np.inf)


def feature_scale(rms, d, z, rng, *, steps=RANGE_STEPS):
    """Private feature scale ``s``: median row RMS over its Gaussian reference.

    A noisy bisection of ``steps`` counts ``#{rms_i <= 2**mid} + N(0, z**2)``
    (replace-one sensitivity 1) on ``log2`` scale over
    :data:`~skdp.solvers.heavy_tailed.bounds.LOG2_RANGE`; the midpoint of the
    final bracket is divided by ``gaussian_norm_median(d) / sqrt(d)``. With
    ``z = 0`` the exact median is used.

    Parameters
    ----------
    rms : ndarray of shape (n,)
        :func:`row_rms` of the feature rows (without the intercept column).
    d : int
        Number of features.
    z : float
        Noise multiplier of each count.
    rng : numpy.random.Generator
    steps : int, default=RANGE_STEPS

    Returns
    -------
    s : float
        Positive; about 1 for standardized features.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = 4.0 * rng.normal(size=(5000, 10))
    >>> round(feature_scale(row_rms(X), 10, 0.0, rng), 1)
    4.0
    """
    logv = log2_records(as_float_records(rms))  # dask: silent on the workers
    hi = bisect_counts(logv, 0.5, z, rng, LOG2_RANGE, steps)
    # midpoint of the final bracket: no side is safer for a step size
    width = (LOG2_RANGE[1] - LOG2_RANGE[0]) / 2.0**steps
    reference = gaussian_norm_median(d) / math.sqrt(max(int(d), 1))
    return float(2.0 ** (hi - width / 2.0)) / reference


@dataclass
class Design:
    """The matrix a solver runs on, in private units.

    Attributes
    ----------
    X : ndarray of shape (n, d) or (n, d + 1)
        Features, then (with an intercept) the constant column
        ``intercept_value``.
    row_norms : ndarray of shape (n,)
        Norms of the rows of ``X``.
    scale : float
        Feature scale ``s`` (1 when not released).
    intercept_value : float or None
        Value of the intercept column (``None``: no intercept).
    """

    X: np.ndarray
    row_norms: np.ndarray
    scale: float = 1.0
    intercept_value: float = None

    @property
    def curvature_scale(self):
        """``s**2``: the default steps are divided by it."""
        return self.scale * self.scale

    def to_original(self, w):
        """Coefficients with the intercept (last entry) in the data's units."""
        w = np.array(w, dtype=float, copy=True)
        if self.intercept_value is not None:
            w[-1] *= self.intercept_value
        return w

    def to_design(self, w):
        """Inverse of :meth:`to_original`."""
        w = np.array(w, dtype=float, copy=True)
        if self.intercept_value is not None:
            w[-1] /= self.intercept_value
        return w


def private_design(
    X,
    rng,
    *,
    z_scale=None,
    fit_intercept=False,
    scaled_intercept=True,
    row_norms=None,
):
    """Release the feature scale (if planned) and build the design matrix.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (already clipped to any public feature norm).
    rng : numpy.random.Generator
    z_scale : float, optional
        Noise multiplier of the feature-scale counts; ``None``: no release,
        ``s = 1`` (e.g. a user-given step size, or too few records).
    fit_intercept : bool, default=False
        Append a constant intercept column.
    scaled_intercept : bool, default=True
        Its value is ``s`` (else the public constant 1, used when public
        constants such as a domain radius or ``G_k`` refer to that column).
    row_norms : ndarray of shape (n,), optional
        Norms of the rows of ``X``.

    Returns
    -------
    Design

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = 100.0 * rng.normal(size=(4000, 3))
    >>> des = private_design(X, rng, z_scale=0.0, fit_intercept=True)
    >>> round(des.scale / 100, 1), des.X.shape, bool(des.X[0, -1] == des.scale)
    (1.0, (4000, 4), True)
    """
    if is_dask_collection(X):  # the same release, summed over dask chunks
        return design_on_workers(
            X,
            rng,
            z_scale=z_scale,
            fit_intercept=fit_intercept,
            scaled_intercept=scaled_intercept,
            row_norms=row_norms,
        )
    X = as_float_rows(X) if is_sparse(X) else np.asarray(X, dtype=float)
    n, d = X.shape
    if row_norms is None:
        norms = sparse_row_norms(X)  # dense or sparse
    else:
        norms = np.asarray(row_norms, float)
    s = 1.0
    if z_scale is not None:
        s = feature_scale(row_rms(X, norms), d, z_scale, rng)
    if not fit_intercept:
        return Design(as_float_rows(X), norms, s, None)
    value = s if scaled_intercept else 1.0
    Xd = append_constant_column(X, value)
    with np.errstate(all="ignore"):
        full = np.hypot(norms, value)
    return Design(Xd, full, s, value)


def planned_design(X, rng, plan, n_needed, **kwargs):
    """Check that ``plan`` pays for the run's scale quantiles, then release.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features (already clipped to any public feature norm).
    rng : numpy.random.Generator
    plan : object
        A solver plan with ``default_scales``, ``n_scales``, ``z_scale`` and
        ``feature_scale`` attributes.
    n_needed : int
        Scale quantiles this run releases (the feature scale included).
    **kwargs
        ``fit_intercept``, ``scaled_intercept`` and ``row_norms`` of
        :func:`private_design`.

    Returns
    -------
    Design

    Raises
    ------
    ValueError
        If a custom plan pays for a different number of quantiles than the
        run releases (the accounting would not match the mechanism).
    """
    # with public default scales only the feature scale (if any) is released
    releases = int(plan.feature_scale) if plan.default_scales else n_needed
    if plan.n_scales != releases:
        raise ValueError(
            "The plan does not pay for the scale quantiles this run needs."
        )
    z_scale = plan.z_scale if plan.feature_scale else None
    return private_design(X, rng, z_scale=z_scale, **kwargs)


def floored_design(design, scale, d):
    """The same design with the feature scale raised to ``scale``.

    Post-processing of the released scale (a public floor, see
    :func:`~skdp.solvers.heavy_tailed.known_lipschitz.known_lipschitz`): the
    intercept column, if it is the scale, takes the new value and the row
    norms follow.

    Parameters
    ----------
    design : Design
    scale : float
        New feature scale (positive).
    d : int
        Number of features (columns before the intercept column).

    Returns
    -------
    Design

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> des = private_design(np.ones((3, 2)), rng, z_scale=0.0, fit_intercept=True)
    >>> new = floored_design(des, 2.0, 2)
    >>> new.scale, new.X[0].tolist(), round(float(new.row_norms[0]), 4)
    (2.0, [1.0, 1.0, 2.0], 2.4495)
    """
    scale = float(scale)
    if design.intercept_value is None or design.intercept_value != design.scale:
        # no intercept, or a public constant column: only the units change
        return Design(design.X, design.row_norms, scale, design.intercept_value)
    features = design.X[:, :d]
    if is_dask_collection(features):  # per chunk, kept on the workers
        return floored_design_on_workers(features, scale)
    with np.errstate(all="ignore"):
        norms = np.hypot(sparse_row_norms(features), scale)
    return Design(append_constant_column(features, scale), norms, scale, scale)
