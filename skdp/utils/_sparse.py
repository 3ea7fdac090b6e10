"""Row operations on dense or ``scipy.sparse`` matrices without densifying.

Per-row norms, non-zero counts, clipping to a public norm and appending a
constant column: the per-record maps the private solvers need, computed on
the stored entries of a CSR matrix (CSC input is converted to CSR once).
Dense input goes through the dense helpers of :mod:`skdp.utils._validation`.
"""

import numpy as np
import scipy.sparse as sp

from ._validation import safe_row_norms

__all__ = [
    "is_sparse",
    "as_float_rows",
    "row_norms",
    "row_nnz",
    "clip_rows_any",
    "append_constant_column",
]


def is_sparse(X):
    """Whether ``X`` is a ``scipy.sparse`` matrix or array.

    Parameters
    ----------
    X : object

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> is_sparse(sp.csr_matrix(np.eye(2))), is_sparse(np.eye(2))
    (True, False)
    """
    return sp.issparse(X)


def as_float_rows(X):
    """Float64 CSR (sparse input) or C-contiguous float64 array (dense).

    Parameters
    ----------
    X : array-like or sparse matrix of shape (n, d)

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> as_float_rows(sp.csc_matrix(np.eye(2))).format
    'csr'
    """
    if sp.issparse(X):
        X = sp.csr_matrix(X, dtype=np.float64)
        if not X.has_canonical_format:
            X = X.copy()  # never modify the caller's matrix
            X.sum_duplicates()
        return X
    return np.ascontiguousarray(X, dtype=np.float64)


def _row_index(X):
    return np.repeat(np.arange(X.shape[0]), np.diff(X.indptr))


def row_norms(X):
    """Euclidean norm of each row, overflow-safe, for dense or sparse ``X``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> row_norms(sp.csr_matrix(np.array([[3.0, 4.0], [0.0, 0.0], [1e300, 1e300]])))
    array([5.00000000e+000, 0.00000000e+000, 1.41421356e+300])
    """
    if not sp.issparse(X):
        return safe_row_norms(X)
    X = as_float_rows(X)
    n = X.shape[0]
    rows = _row_index(X)
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.bincount(rows, weights=X.data * X.data, minlength=n))
    # squares may overflow, or underflow to 0 for a row of tiny entries
    redo = ~np.isfinite(norms) | (norms > 1e150) | (norms < 1e-150)
    if np.any(redo):
        # rescale the stored entries of those rows by their largest magnitude
        absd = np.abs(X.data)
        scale = np.zeros(n)
        np.maximum.at(scale, rows, absd)
        safe = np.where((scale > 0) & np.isfinite(scale), scale, 1.0)
        with np.errstate(all="ignore"):
            scaled = X.data / safe[rows]
            sq = np.bincount(rows, weights=scaled * scaled, minlength=n)
            norms[redo] = safe[redo] * np.sqrt(sq[redo])
    return norms


def row_nnz(X):
    """Number of non-zero entries of each row (stored zeros not counted).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)

    Returns
    -------
    ndarray of shape (n,), int

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> row_nnz(sp.csr_matrix(np.array([[3.0, 0.0], [0.0, 0.0]])))
    array([1, 0])
    """
    if not sp.issparse(X):
        return np.count_nonzero(X, axis=1)
    X = as_float_rows(X)
    counts = np.bincount(
        _row_index(X), weights=(X.data != 0).astype(float), minlength=X.shape[0]
    )
    return counts.astype(np.int64)


def clip_rows_any(X, max_norm, norms=None):
    """Scale down every row whose norm exceeds the public ``max_norm``.

    Sparse input stays sparse (only stored entries are scaled); dense input
    goes through :func:`~skdp.utils.clip_rows`. A new matrix is returned.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    max_norm : float
    norms : ndarray of shape (n,), optional

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> clip_rows_any(sp.csr_matrix(np.array([[3.0, 4.0], [0.3, 0.4]])), 1.0).toarray()
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    if not sp.issparse(X):
        from ._validation import clip_rows

        return clip_rows(X, max_norm, norms)
    X = as_float_rows(X).copy()
    if np.isinf(max_norm):
        return X
    norms = row_norms(X) if norms is None else np.asarray(norms)
    with np.errstate(all="ignore"):
        factor = np.where(norms > max_norm, max_norm / norms, 1.0)
        # Private rows: silent, and as the dense clip_rows, a row whose norm
        # overflows or whose factor is below the normal range keeps its
        # direction (clipped in rescaled form, on its stored entries).
        hard = (norms > max_norm) & ~(
            np.isfinite(norms) & (factor >= np.finfo(float).tiny)
        )
        factor = np.where(hard, 1.0, factor)
        X.data *= factor[_row_index(X)]
    if np.any(hard):
        from ._validation import clip_rows

        for i in np.flatnonzero(hard):
            start, stop = X.indptr[i], X.indptr[i + 1]
            X.data[start:stop] = clip_rows(X.data[None, start:stop], max_norm)[0]
    return X


def append_constant_column(X, value):
    """``[X, value]``: a constant last column, sparse if ``X`` is sparse.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    value : float

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix of shape (n, d + 1)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> append_constant_column(sp.csr_matrix(np.eye(2)), 2.0).toarray()
    array([[1., 0., 2.],
           [0., 1., 2.]])
    """
    n = X.shape[0]
    if sp.issparse(X):
        col = sp.csr_matrix(np.full((n, 1), float(value)))
        return sp.hstack([as_float_rows(X), col], format="csr")
    out = np.empty((n, X.shape[1] + 1))
    out[:, :-1] = X
    out[:, -1] = value
    return out
