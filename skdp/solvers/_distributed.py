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

from ..privacy._mechanisms import _edge_counts, _quantile_edges
from ..utils import add_intercept_column, clip_rows, clip_targets

__all__ = [
    "DISTRIBUTED_FITS",
    "as_dask_xy",
    "as_float_records",
    "as_records",
    "bisection_counter",
    "check_budget_before_pass",
    "clipped_statistics",
    "design_on_workers",
    "floored_design_on_workers",
    "gradient_sum_on_workers",
    "is_dask_collection",
    "lazy_decision",
    "lazy_rows",
    "log2_records",
    "map_rows",
    "nan_to_zero",
    "persist_records",
    "record_norms",
    "record_sum",
    "refuse_undistributed_dask",
    "reject_dask",
]

#: Fits that run distributed on dask input (named in every rejection).
DISTRIBUTED_FITS = (
    'BilevelRidge(inner_solver="sufficient_statistics") with public '
    'feature_norm and target_bound, or inner_solver="gd"; '
    "HeavyTailedLinearRegression and HeavyTailedLogisticRegression (declared "
    'classes: binary, or multinomial with multi_class="multinomial") with '
    'solver="known_lipschitz" and center=False; '
    'MinimaxFairClassifier(solver="gda") with declared classes and declared '
    "groups, center=False (feature_norm public, or private at a finite "
    "epsilon); the preprocessing steps "
    "StandardScaler and MinMaxScaler (bounds declared, or private at a finite "
    'epsilon), SimpleImputer (strategy="constant", or "mean" with declared '
    "bounds) and OneHotEncoder with declared categories (dense output)"
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


#: Estimators whose ``fit`` handles dask input itself (a distributed fit for
#: the configurations of :data:`DISTRIBUTED_FITS`, a clear error otherwise).
DASK_ESTIMATORS = frozenset(
    {
        "BilevelRidge",
        "HeavyTailedLinearRegression",
        "HeavyTailedLogisticRegression",
        "MinimaxFairClassifier",
        "MinMaxScaler",
        "OneHotEncoder",
        "SimpleImputer",
        "StandardScaler",
    }
)


def refuse_undistributed_dask(estimator, args, kwargs):
    """Refuse dask input to a fit that would gather it (before any work).

    Every other private estimator's input validation would convert a dask
    collection to numpy, i.e. gather all rows in one process; this raises a
    clear error instead, naming the fits that run distributed.

    Parameters
    ----------
    estimator : object
    args : tuple
    kwargs : dict
        The fit's arguments.

    Examples
    --------
    >>> import numpy as np
    >>> refuse_undistributed_dask(object(), (np.ones(2),), {})  # numpy: no error
    """
    values = list(args) + list(kwargs.values())
    if any(c.__name__ in DASK_ESTIMATORS for c in type(estimator).__mro__):
        if values and is_dask_collection(values[0]):
            return  # a distributed fit (or the estimator's own clear error)
        values = values[1:]  # numpy X: a dask y would be gathered
    for value in values:
        reject_dask(value, type(estimator).__name__)


def _to_array(X):
    import dask.array as da

    if isinstance(X, da.Array):
        return X
    if hasattr(X, "to_dask_array"):  # dask DataFrame / Series
        return X.to_dask_array(lengths=True)  # chunk lengths: n is public
    return da.asarray(X)


def as_dask_xy(X, y=None, n_features=None, y_dtype=np.float64):
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
    y_dtype : dtype or None, default=float64
        ``None`` keeps the labels' dtype (classification).

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
    y = _to_array(y)
    if y_dtype is not None:
        y = y.astype(y_dtype)
    if y.ndim == 2 and y.shape[1] == 1:
        y = y[:, 0]
    if y.ndim != 1:
        raise ValueError(f"y must be 1D, got ndim={y.ndim}.")
    if y.shape[0] != X.shape[0]:
        raise ValueError(
            f"X and y have different numbers of rows: {X.shape[0]} != {y.shape[0]}."
        )
    return X, y.rechunk((X.chunks[0],))


def check_budget_before_pass(est, plan):
    """Refuse an over-budget fit before its one pass reads the data.

    A one-pass dask fit charges ``plan`` after the pass (once its
    finiteness flags are known), so the accountant's refusal is checked
    here first, without charging: an over-budget fit reads nothing, as on
    the numpy path. Charging stays bookkeeping; the noise is drawn after it.

    Parameters
    ----------
    est : PrivateEstimatorMixin
    plan : DpEvent
        The fit's whole plan (what ``est._spend`` will charge).
    """
    acc = est.accountant
    if acc is None:
        return
    if (np.isinf(est.epsilon) and not np.isinf(acc.epsilon)) or not acc.can_spend(plan):
        est._spend(plan)  # raises the numpy path's refusal; nothing is charged


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
        # the flags of this same pass: the fits charge their plan only after
        # this returns (check_budget_before_pass); nothing is released
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
    return X.map_blocks(
        silently, lambda b: b @ coef + intercept, drop_axis=1, dtype=np.float64
    )


def lazy_rows(method, X, width=None, dtype=np.float64):
    """Lazy ``method(X)`` of a fitted estimator on every chunk of rows.

    Prediction is a per-row map of the released model: each worker runs the
    estimator's numpy method on its chunk (as dask-ml does; no compute).

    Parameters
    ----------
    method : callable
        A fitted estimator's bound method (e.g. ``est.predict``).
    X : dask array or DataFrame of shape (n, d)
    width : int, optional
        Columns of the output (``None``: one value per row).
    dtype : dtype, default=float64

    Returns
    -------
    dask.array.Array
    """
    from sklearn.utils.validation import check_is_fitted

    est = method.__self__
    check_is_fitted(est)
    X, _ = as_dask_xy(X, n_features=getattr(est, "n_features_in_", None))
    if width is None:
        return X.map_blocks(silently, method, drop_axis=1, dtype=dtype)
    chunks = (X.chunks[0], (int(width),))
    return X.map_blocks(silently, method, chunks=chunks, dtype=dtype)


# -- per-record quantities for the iterative solvers ---------------------------
#
# The full-batch solvers of :mod:`~skdp.solvers.heavy_tailed` touch the rows
# only through per-record maps (clipping, norms, derivatives: elementwise, so a
# dask array stays lazy and on the workers) and through three reductions:
# counts ``#{v_i <= t}`` (private quantiles), the clipped gradient sum, and the
# release of the feature scale. The helpers below are the numpy path's
# operation for numpy input (bit for bit) and its chunked form for dask input,
# so each solver call site dispatches in one line. Only the reductions'
# results (an integer, a d-vector) reach the driver.


def as_float_records(values, contiguous=False):
    """``np.asarray(values, float)`` for numpy input; dask input stays lazy.

    Parameters
    ----------
    values : array-like or dask array of shape (n,) or (n, d)
    contiguous : bool, default=False
        ``np.ascontiguousarray`` instead of ``np.asarray`` (numpy input).

    Returns
    -------
    ndarray or dask.array.Array of float64

    Examples
    --------
    >>> as_float_records([1, 2])
    array([1., 2.])
    """
    if is_dask_collection(values):
        return _to_array(values).astype(np.float64)
    if contiguous:
        return np.ascontiguousarray(values, dtype=np.float64)
    return np.asarray(values, dtype=np.float64)


def as_records(values, dtype):
    """``np.asarray(values, dtype)`` for numpy input; dask input stays lazy.

    Parameters
    ----------
    values : array-like or dask array
    dtype : dtype

    Returns
    -------
    ndarray or dask.array.Array

    Examples
    --------
    >>> as_records([1.0, 2.0], int)
    array([1, 2])
    """
    if is_dask_collection(values):
        return _to_array(values).astype(dtype)
    return np.asarray(values, dtype=dtype)


def _record_sum_block(func, blocks, args, kwargs, names):
    kwargs = dict(kwargs, **dict(zip(names, blocks[len(blocks) - len(names) :])))
    with np.errstate(all="ignore"):
        return func(*blocks[: len(blocks) - len(names)], *args, **kwargs)


def record_sum(func, records, *args, chunked=None, **kwargs):
    """``func(*records, *args, **kwargs)``, a sum over records, per dask chunk.

    ``func`` must return a sum over the rows of ``records`` of per-record
    quantities (e.g. a clipped gradient sum stacked with per-group clipped
    loss sums). numpy input: one call (the numpy path, bit for bit). dask
    input: the same function runs on every chunk of rows on its worker
    (clipping happens there) and only the per-chunk results are gathered
    and added on the driver in chunk order: the numpy result up to the order
    of the additions, with the same sensitivity.

    Parameters
    ----------
    func : callable
    records : tuple of ndarray or dask.array.Array
        Per-record inputs (first axis ``n``), passed first and positionally.
    *args
        Public arguments, passed unchanged to every chunk.
    chunked : dict, optional
        Further per-record inputs passed by keyword (e.g. ``row_norms``).
    **kwargs
        Public keyword arguments.

    Returns
    -------
    ndarray

    Examples
    --------
    >>> import numpy as np
    >>> record_sum(np.sum, (np.arange(4.0),))
    np.float64(6.0)
    """
    chunked = dict(chunked or {})
    if not is_dask_collection(records[0]):
        return func(*records, *args, **kwargs, **chunked)
    import dask
    from dask import delayed

    names = list(chunked)
    arrays = list(records) + [chunked[k] for k in names]
    rows = arrays[0].chunks[0]
    pieces = []
    for a in arrays:
        a = _to_array(a)
        a = a.rechunk((rows,) + ((-1,) * (a.ndim - 1)))
        pieces.append(a.to_delayed().reshape(len(rows)))
    block = delayed(_record_sum_block, pure=True)
    parts = dask.compute(
        *[block(func, list(bs), args, kwargs, names) for bs in zip(*pieces)]
    )
    out = np.array(parts[0], dtype=np.float64, copy=True)
    for p in parts[1:]:
        out += p
    return out


def persist_records(*arrays):
    """Compute dask arrays once and keep them on the workers (numpy: identity).

    Iterative solvers call this on their per-record inputs so that each step
    reads the persisted chunks instead of recomputing the graph.

    Parameters
    ----------
    *arrays : ndarray or dask.array.Array

    Returns
    -------
    tuple, or the single array if one was passed

    Examples
    --------
    >>> import numpy as np
    >>> persist_records(np.ones(2))
    array([1., 1.])
    """
    if any(is_dask_collection(a) for a in arrays):
        import dask

        arrays = dask.persist(*arrays)
    return arrays[0] if len(arrays) == 1 else tuple(arrays)


def _bisection_midpoints(lo, hi, steps):
    """Every midpoint a ``steps``-round bisection of ``[lo, hi]`` can visit,
    computed with the same float operations as the bisection itself."""
    mids, brackets = [], [(lo, hi)]
    for _ in range(int(steps)):
        nxt = []
        for a, b in brackets:
            m = 0.5 * (a + b)
            mids.append(m)
            nxt += [(a, m), (m, b)]
        brackets = nxt
    return np.unique(np.asarray(mids, dtype=np.float64))


def _counts_below(values, mids):
    # #{v <= mids[j]} for every j: v <= mids[j] iff searchsorted(left) <= j;
    # nan sorts last and is never counted, as with ``values <= mid``
    with np.errstate(all="ignore"):
        idx = np.searchsorted(mids, np.asarray(values, dtype=np.float64), side="left")
    return np.cumsum(np.bincount(idx, minlength=mids.size + 1)[: mids.size])


def bisection_counter(values, bounds, steps):
    """``mid -> #{i : values_i <= mid}`` for a noisy-count bisection.

    numpy input: the count is taken when asked (the numpy path's
    ``np.count_nonzero(values <= mid)``). dask input: the exact counts at
    every midpoint the bisection can visit (``2**steps - 1`` of them) are
    computed in one pass, summed over chunks, and looked up; the noisy
    bisection on the driver then releases exactly the same counts (plus the
    same noise) as the numpy path, with one round trip instead of ``steps``.
    Only these counts reach the driver.

    Parameters
    ----------
    values : ndarray or dask.array.Array of shape (n,)
    bounds : tuple (low, high)
    steps : int

    Returns
    -------
    callable
        ``count_le(mid) -> int``.

    Examples
    --------
    >>> import numpy as np
    >>> count_le = bisection_counter(np.arange(8.0), (0.0, 8.0), 3)
    >>> count_le(4.0)
    5
    """
    if not is_dask_collection(values):
        return lambda mid: int(np.count_nonzero(values <= mid))
    import dask
    from dask import delayed

    lo, hi = (float(b) for b in bounds)
    mids = _bisection_midpoints(lo, hi, steps)
    parts = dask.compute(
        *[delayed(_counts_below)(b, mids) for b in values.to_delayed().ravel()]
    )
    counts = np.zeros(mids.size, dtype=np.int64)
    for p in parts:
        counts += p
    table = dict(zip(mids.tolist(), counts.tolist()))

    def count_le(mid):
        return int(table[float(mid)])

    return count_le


def nan_to_zero(values):
    """``np.nan_to_num(values, nan=0.0)``, per chunk for dask input.

    Parameters
    ----------
    values : ndarray or dask.array.Array

    Returns
    -------
    ndarray or dask.array.Array

    Examples
    --------
    >>> import numpy as np
    >>> nan_to_zero(np.array([np.nan, 1.0]))
    array([0., 1.])
    """
    if is_dask_collection(values):
        return values.map_blocks(silently, np.nan_to_num, nan=0.0, dtype=np.float64)
    return np.nan_to_num(values, nan=0.0)


def _log2_nonneg(values):
    return np.log2(np.maximum(values, 0.0))


def log2_records(values):
    """``log2(max(values, 0))`` of per-record values, silently (``-inf`` at 0).

    numpy input: under ``np.errstate(all="ignore")``. dask input: a lazy
    map through :func:`silently`, so that the ``log2(0)`` of a zero value
    (a truncated row's gradient norm, say) does not warn on the worker that
    computes it later, where the driver's ``np.errstate`` does not apply.

    Parameters
    ----------
    values : ndarray or dask.array.Array of float

    Returns
    -------
    ndarray or dask.array.Array

    Examples
    --------
    >>> import numpy as np
    >>> log2_records(np.array([0.0, 4.0]))
    array([-inf,   2.])
    """
    if is_dask_collection(values):
        return values.map_blocks(silently, _log2_nonneg, dtype=np.float64)
    with np.errstate(all="ignore"):
        return _log2_nonneg(values)


def silently(block, func, *args, **kwargs):
    """``func(block, *args, **kwargs)`` under ``np.errstate(all="ignore")``.

    The per-chunk functions mapped over dask rows run on the workers, later,
    where the driver's ``np.errstate`` does not apply; every map of this
    module goes through this wrapper so that floating point on private rows
    stays silent there too (no NumPy warning in a worker's log).

    Parameters
    ----------
    block : ndarray
        One chunk of rows.
    func : callable
    *args, **kwargs
        Passed to ``func``.

    Returns
    -------
    object
        ``func``'s result.

    Examples
    --------
    >>> import numpy as np
    >>> silently(np.array([0.0]), np.log)
    array([-inf])
    """
    with np.errstate(all="ignore"):
        return func(block, *args, **kwargs)


def map_rows(func, X, *args, width=None):
    """Apply a per-record map to every chunk of rows (numpy: ``func(X, *args)``).

    Parameters
    ----------
    func : callable
        ``func(X_block, *args)``, a map from rows to rows (or, with
        ``width=0``, to one value per row).
    X : ndarray or dask.array.Array of shape (n, d)
    *args
        Public arguments, passed unchanged to every chunk.
    width : int, optional
        Columns of the result (default: ``d``; ``0`` for a vector).

    Returns
    -------
    ndarray or dask.array.Array

    Examples
    --------
    >>> import numpy as np
    >>> map_rows(np.multiply, np.ones((2, 2)), 3.0)
    array([[3., 3.],
           [3., 3.]])
    """
    if not is_dask_collection(X):
        return func(X, *args)
    if width == 0:
        return X.map_blocks(silently, func, *args, drop_axis=1, dtype=np.float64)
    chunks = None if width is None else (X.chunks[0], (int(width),))
    return X.map_blocks(silently, func, *args, chunks=chunks, dtype=np.float64)


def _silent_row_norms(X):
    from ..utils import safe_row_norms

    with np.errstate(all="ignore"):
        return safe_row_norms(X)


def record_norms(X):
    """Euclidean norm of every row, as on the numpy path (per chunk for dask).

    Parameters
    ----------
    X : ndarray, sparse matrix or dask.array.Array of shape (n, d)

    Returns
    -------
    ndarray or dask.array.Array of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> record_norms(np.array([[3.0, 4.0]]))
    array([5.])
    """
    if is_dask_collection(X):
        return map_rows(_silent_row_norms, X, width=0)
    from ..utils._sparse import row_norms

    return row_norms(X)


def _gradient_block(Xb, yb, w, inv_b, clip, loss):
    from .heavy_tailed.kernels import clipped_gradient_sum

    Xb = np.ascontiguousarray(Xb, dtype=np.float64)
    yb = np.ascontiguousarray(yb, dtype=np.float64)
    with np.errstate(all="ignore"):
        return clipped_gradient_sum(Xb, yb, w, np.asarray(inv_b, float), clip, loss)


def gradient_sum_on_workers(X, y, w, inv_norms, clip, loss):
    """The clipped gradient sum of :func:`~skdp.solvers.heavy_tailed.kernels.clipped_gradient_sum`
    over dask chunks.

    Every chunk runs the same kernel on its worker (clipping happens
    there); the ``d``-vectors are added on the driver in chunk order, so the
    result is the numpy path's sum up to the order of the additions.
    Replacing one record moves it by at most ``2 clip`` (as on one process).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    y, inv_norms : dask.array.Array of shape (n,)
    w : ndarray of shape (d,)
    clip : float
    loss : _GLMLoss

    Returns
    -------
    ndarray of shape (d,)
    """
    import dask
    from dask import delayed

    rows = (X.chunks[0],)
    xs = X.to_delayed().ravel()
    ys = y.rechunk(rows).to_delayed().ravel()
    invs = inv_norms.rechunk(rows).to_delayed().ravel()
    w = np.asarray(w, dtype=np.float64)
    block = delayed(_gradient_block, pure=True)
    parts = dask.compute(
        *[block(xb, yb, w, ib, float(clip), loss) for xb, yb, ib in zip(xs, ys, invs)]
    )
    out = np.zeros(X.shape[1])
    for p in parts:
        out += p
    return out


def _with_constant(Xb, value):
    from ..utils._sparse import append_constant_column

    return np.ascontiguousarray(append_constant_column(Xb, value))


def _hypot(norms, value):
    with np.errstate(all="ignore"):
        return np.hypot(norms, value)


def design_on_workers(
    X, rng, *, z_scale=None, fit_intercept=False, scaled_intercept=True, row_norms=None
):
    """:func:`~skdp.solvers.heavy_tailed.units.private_design` for dask rows.

    The feature scale is the same private median of the per-row RMS (its
    counts summed over chunks, noise on the driver); the design matrix (with
    its intercept column) and its row norms are built per chunk and persisted
    on the workers for the iterations that follow.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    rng : numpy.random.Generator
    z_scale : float, optional
    fit_intercept, scaled_intercept : bool
    row_norms : dask.array.Array of shape (n,), optional

    Returns
    -------
    Design
    """
    from .heavy_tailed.units import Design, feature_scale, row_rms

    X = _to_array(X).astype(np.float64)
    norms = record_norms(X) if row_norms is None else row_norms
    s = 1.0
    if z_scale is not None:
        # row_rms recomputes the chunk's row norms (the same safe_row_norms)
        rms = map_rows(row_rms, X, width=0)
        s = feature_scale(rms, X.shape[1], z_scale, rng)
    if not fit_intercept:
        X, norms = persist_records(X, norms)
        return Design(X, norms, s, None)
    value = s if scaled_intercept else 1.0
    Xd = map_rows(_with_constant, X, value, width=X.shape[1] + 1)
    full = norms.map_blocks(_hypot, value, dtype=np.float64)
    Xd, full = persist_records(Xd, full)
    return Design(Xd, full, s, value)


def floored_design_on_workers(features, scale):
    """:func:`~skdp.solvers.heavy_tailed.units.floored_design` for dask rows.

    The intercept column takes the (released) floored scale and the row
    norms follow, chunk by chunk on the workers: no row reaches the driver.

    Parameters
    ----------
    features : dask.array.Array of shape (n, d)
        The design without its intercept column.
    scale : float

    Returns
    -------
    Design
    """
    from .heavy_tailed.units import Design

    scale = float(scale)
    Xd = map_rows(_with_constant, features, scale, width=features.shape[1] + 1)
    full = record_norms(features).map_blocks(_hypot, scale, dtype=np.float64)
    Xd, full = persist_records(Xd, full)
    return Design(Xd, full, scale, scale)


# -- multinomial (softmax) full-batch solver ------------------------------------


def multinomial_design_on_workers(
    X, labels, plan, rng, truncation, fit_intercept, scaled_intercept, scales
):
    """``multinomial._design`` for dask rows (the same releases, in order).

    The row norms, the per-row RMS and the truncation are per-record maps
    (lazy, on the workers); the private feature scale and truncation level
    are released by ``scales`` (the numpy path's ``_scales``, whose counts
    are summed over chunks by :func:`bisection_counter`); the design with
    its intercept column, the labels and the kept rows' norms are then
    persisted on the workers for the gradient steps.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    labels : dask.array.Array of int of shape (n,)
    plan : KnownLipschitzPlan
    rng : numpy.random.Generator
    truncation : float or None
    fit_intercept, scaled_intercept : bool
    scales : callable
        ``scales(X, norms, plan, rng, truncation) -> (s, T)``.

    Returns
    -------
    X, labels, norms_t, s, T, value
        As ``multinomial._design``; the arrays are dask arrays.
    """
    X = _to_array(X).astype(np.float64)
    labels = as_records(labels, np.int64).rechunk((X.chunks[0],))
    norms = record_norms(X)
    needed = int(truncation is None and not plan.default_scales) + int(
        plan.feature_scale
    )
    if not plan.default_scales and plan.n_scales != needed:
        raise ValueError(
            "The plan does not pay for the scale quantiles this run needs."
        )
    s, T = scales(X, norms, plan, rng, truncation)
    value = None
    full = norms
    if fit_intercept:
        value = s if scaled_intercept else 1.0
        X = map_rows(_with_constant, X, value, width=X.shape[1] + 1)
        full = norms.map_blocks(_hypot, value, dtype=np.float64)
    norms_t = norms.map_blocks(
        silently, lambda b, f, t: np.where(b <= t, f, 0.0), full, float(T),
        dtype=np.float64,
    )  # fmt: skip
    X, labels, norms_t = persist_records(X, labels, norms_t)
    return X, labels, norms_t, s, T, value


def _multinomial_block(Xb, lb, nb, W, clip):
    from .heavy_tailed.multinomial import clipped_multinomial_gradient_sum

    with np.errstate(all="ignore"):
        return clipped_multinomial_gradient_sum(
            np.ascontiguousarray(Xb), lb, W, nb, clip
        )


def multinomial_gradient_sum_on_workers(X, labels, W, norms, clip):
    """``clipped_multinomial_gradient_sum`` over dask chunks.

    Every chunk runs the numpy kernel on its worker (each per-sample
    gradient clipped there to Frobenius norm ``clip``); the ``d x K`` sums
    are added on the driver in chunk order, so replacing one record moves
    the result by at most ``2 clip``, as in one process. The per-sample
    gradient norms stay on the workers (a lazy dask array, read only through
    the counts of a private quantile).

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    labels : dask.array.Array of int of shape (n,)
    W : ndarray of shape (d, K)
    norms : dask.array.Array of shape (n,)
    clip : float

    Returns
    -------
    sum : ndarray of shape (d, K)
    norms : dask.array.Array of shape (n,)
    """
    import dask
    import dask.array as da
    from dask import delayed

    W = np.asarray(W, dtype=np.float64)
    rows = X.chunks[0]
    xs = X.to_delayed().ravel()
    ls = labels.rechunk((rows,)).to_delayed().ravel()
    ns = norms.rechunk((rows,)).to_delayed().ravel()
    block = delayed(_multinomial_block, pure=True, nout=2)
    parts = [block(xb, lb, nb, W, float(clip)) for xb, lb, nb in zip(xs, ls, ns)]
    gnorms = da.concatenate(
        [
            da.from_delayed(p[1], shape=(r,), dtype=np.float64)
            for p, r in zip(parts, rows)
        ]
    )
    sums = dask.compute(*[p[0] for p in parts])
    out = np.array(sums[0], dtype=np.float64, copy=True)
    for p in sums[1:]:
        out += p
    return out, gnorms


# -- the exponential-mechanism quantile of skdp.privacy, from chunked counts ----


def _column_edge_counts(block, edges, lo, hi, transform, flag=False):
    # one chunk: the edge counts of every column (after a public map), and
    # with ``flag`` whether the chunk is finite (in the same pass)
    with np.errstate(all="ignore"):
        T = block if transform is None else transform(block)
    counts = np.stack(
        [_edge_counts(T[:, j], edges, lo, hi, False) for j in range(T.shape[1])]
    )
    return (counts, bool(np.isfinite(block).all())) if flag else counts


def column_edge_counts_on_workers(
    X, bounds, *, transform=None, n_cells=2048, refuse_non_finite=False
):
    """Cell counts of every column of dask rows, for ``quantile_from_counts``.

    One pass: each worker maps its chunk by the public ``transform`` (e.g.
    ``np.arcsinh``), clips every column to ``bounds`` and counts
    ``#{x < e_j}`` at the public edges; the driver adds the ``d x
    (n_cells + 1)`` integer tables. Only these counts leave the workers.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    bounds : tuple (low, high)
    transform : callable, optional
    n_cells : int, default=2048
    refuse_non_finite : bool, default=False
        Each chunk also flags ``nan``/``inf`` in the same pass; a flagged
        chunk raises the numpy path's ``ValueError`` (nothing returned).

    Returns
    -------
    ndarray of int of shape (d, n_cells + 1)
    """
    import dask
    from dask import delayed

    lo, hi, edges = _quantile_edges(bounds, False, n_cells)
    X = _to_array(X).astype(np.float64).rechunk({1: -1})
    parts = dask.compute(
        *[
            delayed(_column_edge_counts)(b, edges, lo, hi, transform, refuse_non_finite)
            for b in X.to_delayed().ravel()
        ]
    )
    if refuse_non_finite:
        if not all(ok for _, ok in parts):  # nothing is released
            raise ValueError("Input X contains NaN or infinity.")
        parts = [p for p, _ in parts]
    counts = np.zeros((X.shape[1], edges.size), dtype=np.int64)
    for p in parts:
        counts += p
    return counts
