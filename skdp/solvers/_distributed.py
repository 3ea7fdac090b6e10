"""Dask backend: exact sums of clipped per-record quantities over chunks.

Only *sums* leave the workers. Each chunk of rows is clipped to the public
bounds on its worker, reduced to a few small arrays (e.g. ``Z^T Z``,
``Z^T y``, ``y^T y`` and the row count) and those partial sums are gathered
and added on the driver in chunk order. No noise is drawn here: the caller
adds it on the driver from the estimator's generator, so the privacy plan,
the accountant and the noise draws are those of the numpy path. The number
of rows (read from the chunk sizes) is public.

Dask is optional: nothing here imports it until a dask collection is passed
(:func:`is_dask_collection` only looks at the type's module).
"""

import numpy as np

from ..utils import add_intercept_column, clip_rows, clip_targets

__all__ = [
    "DISTRIBUTED_FITS",
    "as_dask_xy",
    "clipped_statistics",
    "is_dask_collection",
    "lazy_decision",
    "reject_dask",
]

#: Fits that run distributed on dask input (named in every rejection).
DISTRIBUTED_FITS = (
    'BilevelRidge(inner_solver="sufficient_statistics") with public '
    "feature_norm and target_bound"
)


def is_dask_collection(X):
    """Whether ``X`` is a dask array, DataFrame or Series (never imports dask).

    Parameters
    ----------
    X : object

    Returns
    -------
    bool

    Examples
    --------
    >>> import numpy as np
    >>> is_dask_collection(np.ones(3))
    False
    """
    module = type(X).__module__ or ""
    return module.split(".")[0] in ("dask", "dask_expr") and hasattr(
        X, "__dask_graph__"
    )


def reject_dask(X, what):
    """Raise a clear error if ``X`` is a dask collection ``what`` cannot fit.

    Parameters
    ----------
    X : object
    what : str
        The estimator/solver being rejected, e.g. ``"solver='onepass'"``.

    Examples
    --------
    >>> import numpy as np
    >>> reject_dask(np.ones((2, 2)), "solver='onepass'")  # numpy: no error
    """
    if is_dask_collection(X):
        raise TypeError(
            f"{what} does not run on dask input (it needs all rows in one "
            f"process). Distributed fits: {DISTRIBUTED_FITS}. Pass a numpy "
            "array, or use a distributed fit."
        )


def _to_array(X):
    import dask.array as da

    if isinstance(X, da.Array):
        return X
    if hasattr(X, "to_dask_array"):  # dask DataFrame / Series
        return X.to_dask_array(lengths=True)  # chunk lengths: n is public
    return da.asarray(X)


def as_dask_xy(X, y=None, n_features=None):
    """Validate dask input: float64 rows in one column chunk, ``y`` aligned.

    Only the public shape and chunk sizes are read here (no pass over the
    data); ``nan``/``inf`` are detected in the same pass as the sums
    (:func:`clipped_statistics`).

    Parameters
    ----------
    X : dask array or DataFrame of shape (n, d)
    y : dask array or Series of shape (n,), optional
    n_features : int, optional
        Expected ``d`` (at predict time).

    Returns
    -------
    X : dask.array.Array of float64, chunked along rows only
    y : dask.array.Array of float64 with ``X``'s row chunks, or None
    """
    X = _to_array(X).astype(np.float64)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D dask array, got ndim={X.ndim}.")
    if any(np.isnan(c) for c in X.chunks[0]):
        X = X.compute_chunk_sizes()
    X = X.rechunk({1: -1})
    if n_features is not None and X.shape[1] != n_features:
        raise ValueError(
            f"X has {X.shape[1]} features, but the estimator was fitted with "
            f"{n_features} features."
        )
    if y is None:
        return X, None
    if not is_dask_collection(y):
        raise TypeError("With a dask X, y must be a dask array or Series too.")
    y = _to_array(y).astype(np.float64)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1D, got ndim={y.ndim}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"X and y have different numbers of rows: {X.shape[0]} != {y.shape[0]}."
        )
    return X, y.rechunk((X.chunks[0],))


def _block_statistics(Xb, yb, labels, n_parts, feature_norm, target_bound, c):
    """Per-part sums of one chunk (runs on a worker; clipping happens here).

    Rows are clipped exactly as on the numpy path: to ``feature_norm``, scaled
    to unit norm bound, clipped to 1 again; targets likewise with
    ``target_bound``.
    """
    finite = bool(np.isfinite(Xb).all() and np.isfinite(yb).all())
    with np.errstate(all="ignore"):
        Xc = clip_rows(clip_rows(Xb, feature_norm) / feature_norm, 1.0)
        yc = clip_targets(clip_targets(yb, target_bound) / target_bound, 1.0)
        if c is not None:
            Xc = add_intercept_column(Xc, c)
        out = []
        for k in range(n_parts):
            m = slice(None) if labels is None else labels == k
            Z, t = Xc[m], yc[m]
            out.append((Z.T @ Z, Z.T @ t, float(t @ t), int(Z.shape[0])))
    return out, finite


def clipped_statistics(
    X, y, feature_norm, target_bound, intercept_scaling=None, labels=None
):
    """Exact augmented statistics of the clipped rows, summed over chunks.

    For each part ``k`` (``labels == k``; one part if ``labels`` is None):
    ``Z^T Z``, ``Z^T y``, ``y^T y`` and the count, where the rows are clipped
    to ``feature_norm`` and divided by it, the targets clipped to
    ``target_bound`` and divided by it, and ``Z = [X, c 1]``. Each chunk is
    clipped and reduced on its worker; only these sums reach the driver,
    where they are added in chunk order. Replacing one record moves a part's
    sums by at most the sensitivities of
    :mod:`~skdp.solvers.bilevel.ridge.stats` (as on the numpy path).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
        From :func:`as_dask_xy`.
    y : dask.array.Array of shape (n,)
    feature_norm, target_bound : float
        Public bounds.
    intercept_scaling : float or None
        Constant column ``c``; ``None`` for no intercept.
    labels : ndarray of int of shape (n,), optional
        Public part of each row (e.g. a public random split).

    Returns
    -------
    list of RawStatistics
        One per part, without noise.

    Raises
    ------
    ValueError
        If ``X`` or ``y`` holds ``nan`` or ``inf`` (as the numpy path's input
        validation; found in the same pass as the sums).
    """
    import dask
    from dask import delayed

    from .bilevel.ridge.stats import RawStatistics

    n_parts = 1 if labels is None else int(np.max(labels)) + 1
    xs = X.to_delayed().ravel()
    ys = y.to_delayed().ravel()
    bounds = np.cumsum((0,) + X.chunks[0])
    tasks = []
    for i, (xb, yb) in enumerate(zip(xs, ys)):
        lab = None if labels is None else labels[bounds[i] : bounds[i + 1]]
        tasks.append(
            delayed(_block_statistics)(
                xb,
                yb,
                lab,
                n_parts,
                float(feature_norm),
                float(target_bound),
                intercept_scaling,
            )
        )
    results = dask.compute(*tasks)
    if not all(finite for _, finite in results):
        # the numpy path's validation error (here after the plan was charged,
        # the conservative side); nothing is released
        raise ValueError("Input X or y contains NaN or infinity.")
    blocks = [b for b, _ in results]
    out = []
    for k in range(n_parts):
        gram = sum(b[k][0] for b in blocks)
        moment = sum(b[k][1] for b in blocks)
        target_sq = float(sum(b[k][2] for b in blocks))
        count = int(sum(b[k][3] for b in blocks))
        out.append(
            RawStatistics(
                np.asarray(gram, dtype=float),
                np.asarray(moment, dtype=float),
                count,
                intercept_scaling,
                target_sq,
            )
        )
    return out


def lazy_decision(X, coef, intercept):
    """``X @ coef + intercept`` as a lazy dask array (no compute).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    coef : ndarray of shape (d,)
    intercept : float

    Returns
    -------
    dask.array.Array of shape (n,)
    """
    coef = np.asarray(coef, dtype=float)
    return X.map_blocks(lambda b: b @ coef + intercept, drop_axis=1, dtype=np.float64)
