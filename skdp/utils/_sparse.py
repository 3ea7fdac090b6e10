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
    "as_float_columns",
    "row_norms",
    "row_nnz",
    "clip_rows_any",
    "append_constant_column",
    "scale_any",
    "matvec",
    "rmatvec",
    "plain_row_norms",
    "augmented_gram",
    "MAX_GRAM_FEATURES",
    "check_gram_size",
    "reject_sparse",
]

#: Largest number of features (intercept column included) for which a solver
#: that must form the dense ``d x d`` Gram matrix accepts sparse input: about
#: 34 MB per copy of the matrix and an eigendecomposition of a few seconds.
#: A public rule of the shape; larger sparse inputs get a clear error rather
#: than an out-of-memory failure.
MAX_GRAM_FEATURES = 2048


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


def as_float_columns(X):
    """Float64 CSC copy of a sparse matrix with duplicate entries summed.

    The per-column statistics read the stored entries one by one; scipy gives
    a duplicated ``(i, j)`` the *sum* of its stored values, so duplicates must
    be summed first (otherwise one record with many stored entries in a
    column would count many times and escape its clip).

    Parameters
    ----------
    X : sparse matrix of shape (n, d)

    Returns
    -------
    scipy.sparse.csc_matrix
        A new matrix (the caller's is never modified), in canonical format.

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> X = sp.csr_matrix((np.ones(2), np.zeros(2, int), np.array([0, 2])), shape=(1, 1))
    >>> as_float_columns(X).data
    array([2.])
    """
    X = sp.csc_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()
    return X


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


def scale_any(X, factor):
    """``X * factor``: a float64 CSR matrix or a C-contiguous array.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    factor : float

    Returns
    -------
    ndarray or scipy.sparse.csr_matrix

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> scale_any(sp.csc_matrix(np.eye(2)), 2.0).format
    'csr'
    """
    if sp.issparse(X):
        return as_float_rows(X) * float(factor)
    return np.ascontiguousarray(X * factor)


def matvec(X, w):
    """``X @ w`` for a vector ``w``; dense input through ``einsum``.

    ``einsum`` rather than BLAS ``gemv`` for dense ``X`` (as the saddle-point
    solvers had it: bit-identical there); the sparse product touches the
    stored entries only.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    w : ndarray of shape (d,)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> matvec(sp.csr_matrix(np.eye(2)), np.array([1.0, 2.0]))
    array([1., 2.])
    """
    if sp.issparse(X):
        return np.asarray(X @ w).ravel()
    return np.einsum("ij,j->i", X, w)


def rmatvec(X, v):
    """``X^T @ v`` for a vector ``v``; dense input through ``einsum``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    v : ndarray of shape (n,)

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> rmatvec(sp.csr_matrix(np.array([[1.0, 0.0], [1.0, 3.0]])), np.ones(2))
    array([2., 3.])
    """
    if sp.issparse(X):
        return np.asarray(X.T @ v).ravel()
    return np.einsum("ij,i->j", X, v)


def plain_row_norms(X):
    """``sqrt(sum_j x_ij**2)`` without rescaling (inputs already clipped).

    Dense input through ``einsum`` (as the saddle-point solvers had it);
    callers on private rows run it under ``np.errstate(all="ignore")``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)

    Returns
    -------
    ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> plain_row_norms(sp.csr_matrix(np.array([[3.0, 4.0], [0.0, 0.0]])))
    array([5., 0.])
    """
    if sp.issparse(X):
        X = as_float_rows(X)
        sq = np.bincount(_row_index(X), weights=X.data * X.data, minlength=X.shape[0])
        return np.sqrt(sq)
    return np.sqrt(np.einsum("ij,ij->i", X, X))


def check_gram_size(n_features, what, limit=None):
    """Refuse a sparse input whose dense Gram matrix would be too large.

    A rule of the public shape only.

    Parameters
    ----------
    n_features : int
        Columns of the Gram matrix (intercept column included).
    what : str
        The estimator and solver, for the message.
    limit : int, default=None
        ``None``: :data:`MAX_GRAM_FEATURES`.

    Raises
    ------
    ValueError
        If ``n_features > limit``.

    Examples
    --------
    >>> check_gram_size(10, "BilevelRidge")
    """
    limit = MAX_GRAM_FEATURES if limit is None else int(limit)
    if n_features > limit:
        raise ValueError(
            f"{what} forms the dense {n_features} x {n_features} Gram matrix "
            f"X^T X; sparse input is accepted up to {limit} columns (intercept "
            "included) so that it cannot exhaust memory. Use a gradient-based "
            'solver (BilevelRidge(inner_solver="gd")) for wider sparse data.'
        )


def augmented_gram(X, y, intercept_scaling=None):
    """Exact ``(Z^T Z, Z^T y, n, y^T y)`` with ``Z = [X, c 1]``, ``X`` sparse.

    The ``d x d`` block ``X^T X`` is formed from the stored entries (sparse
    product) and returned dense, as are the constant-column terms
    (``c X^T 1``, ``c**2 n``, ``c 1^T y``); the matrix is never densified.

    Parameters
    ----------
    X : sparse matrix of shape (n, d)
        Clipped rows.
    y : ndarray of shape (n,)
        Clipped targets.
    intercept_scaling : float or None
        Constant column ``c``; ``None`` for no intercept.

    Returns
    -------
    gram : ndarray of shape (p, p)
    moment : ndarray of shape (p,)
    n : int
    target_sq : float

    Examples
    --------
    >>> import numpy as np, scipy.sparse as sp
    >>> g, m, n, t = augmented_gram(sp.csr_matrix(np.eye(2)), np.array([1.0, 2.0]), 1.0)
    >>> g
    array([[1., 0., 1.],
           [0., 1., 1.],
           [1., 1., 2.]])
    """
    X = as_float_rows(X)
    y = np.asarray(y, dtype=float)
    n, d = X.shape
    xtx = (X.T @ X).toarray()
    xty = np.asarray(X.T @ y).ravel()
    if intercept_scaling is None:
        return xtx, xty, n, float(y @ y)
    c = float(intercept_scaling)
    col = c * np.asarray(X.sum(axis=0)).ravel()
    gram = np.empty((d + 1, d + 1))
    gram[:d, :d] = xtx
    gram[:d, d] = col
    gram[d, :d] = col
    gram[d, d] = c * c * n
    moment = np.append(xty, c * y.sum())
    return gram, moment, n, float(y @ y)


def reject_sparse(X, what, supported):
    """Raise a clear error for sparse ``X`` on a path that needs dense rows.

    A rule of the input type and public parameters only.

    Parameters
    ----------
    X : object
    what : str
        The estimator and setting that refuses sparse input.
    supported : str
        The setting(s) that accept it.

    Raises
    ------
    TypeError
        If ``X`` is sparse.

    Examples
    --------
    >>> import numpy as np
    >>> reject_sparse(np.eye(2), "X(solver='a')", "solver='b'")
    """
    if sp.issparse(X):
        raise TypeError(
            f"Sparse input is not supported by {what}: pass a dense array, or "
            f"use {supported}, which accepts CSR/CSC input without densifying."
        )
