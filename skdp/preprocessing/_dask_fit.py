"""The private preprocessing transformers on dask input.

The transformers' own plan, accountant and noise run unchanged: on dask input
the rows stay on the workers, where each chunk is clipped to the public
bounds and reduced to per-column sums (of the unit values, their squares and
the observed counts); only those ``d``- or ``2 d``-vectors reach the driver,
where they are added in chunk order, divided by the public ``n`` and released
with the numpy path's noise, drawn from the transformer's generator.
``transform`` is a lazy map of the fitted (numpy) transform over the chunks.

``nan``/``inf`` are refused, as on the numpy path, before anything is
charged: from flags computed per chunk in the fit's first statistics pass
(the fit checks the budget before that pass and charges its plan after it,
before any noise). Bounds estimated privately (``bounds=None``) take one
more pass, first: the exponential-mechanism quantiles' public cell counts
of every column, summed over chunks, with the draws on the driver (finite
``epsilon`` only). Only the fits that read nothing else (``MinMaxScaler``
with declared bounds, ``SimpleImputer(strategy="constant")``) keep a
validation pass of its own.
"""

import numpy as np

from ..privacy._mechanisms import quantile_from_counts
from ..solvers._distributed import (
    as_dask_xy,
    column_edge_counts_on_workers,
    lazy_rows,
    record_sum,
    reject_dask,
)
from ._moments import clipped_unit_values

__all__ = [
    "check_categories_on_workers",
    "declared_row",
    "estimate_bounds_on_workers",
    "lazy_transform",
    "observed_sums_on_workers",
    "unit_moments_on_workers",
    "validate_dask_rows",
]


def validate_dask_rows(est, X, *, allow_nan=False, needs_bounds=True, read=True):
    """Dask rows with the numpy path's input checks, before anything is spent.

    One pass over the rows refuses ``inf`` (and ``nan`` unless
    ``allow_nan``), as :func:`~sklearn.utils.validation.validate_data` does;
    sets ``n_features_in_`` (the number of columns is public).

    Parameters
    ----------
    est : transformer
    X : dask array or DataFrame of shape (n, d)
    allow_nan : bool, default=False
    needs_bounds : bool, default=True
        The fit reads values clipped to ``est.bounds``; with ``bounds=None``
        they are estimated privately (:func:`estimate_bounds_on_workers`),
        which needs a finite ``epsilon`` (the exact quantiles of
        ``epsilon=inf`` are not distributed: refused here).
    read : bool, default=True
        ``False``: shapes only, no pass; the fit's one statistics pass
        refuses ``nan``/``inf`` from flags computed with its sums
        (:func:`unit_moments_on_workers`, :func:`observed_sums_on_workers`)
        and the fit charges its plan only after that pass.

    Returns
    -------
    dask.array.Array of float64, chunked by rows only
    """
    import dask.array as da

    if needs_bounds and est.bounds is None and np.isinf(est.epsilon):
        reject_dask(X, f"{type(est).__name__}(bounds=None, epsilon=inf)")
    X, _ = as_dask_xy(X)
    if X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"Found array with shape {X.shape}: a fit needs data.")
    if not read:
        pass
    elif allow_nan:
        ok = bool((~da.isinf(X)).all().compute())
        message = "Input X contains infinity."
    else:
        ok = bool(da.isfinite(X).all().compute())
        message = "Input X contains NaN or infinity."
    if read and not ok:  # not echoed: where the value is, a further release
        raise ValueError(message)
    est.n_features_in_ = int(X.shape[1])
    if hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    return X


def _unit_sums(Xb, lower, upper, with_var):
    # one chunk (on its worker): column sums of u and of 2 u**2, interleaved,
    # then a flag (1.0 if the chunk holds nan/inf) summed with them
    U = clipped_unit_values(Xb, lower, upper)
    d = U.shape[1]
    out = np.empty((2 if with_var else 1) * d + 1)
    if not with_var:
        out[:d] = U.sum(axis=0)
    else:
        out[0 : 2 * d : 2] = U.sum(axis=0)
        out[1 : 2 * d : 2] = 2.0 * np.sum(U * U, axis=0)
    out[-1] = 0.0 if np.isfinite(Xb).all() else 1.0
    return out


def unit_moments_on_workers(X, lower, upper, with_var):
    """Pre-noise statistic of :func:`~._moments.private_moments` for dask rows.

    Each chunk is clipped to the public bounds and mapped to unit values on
    its worker; its column sums of ``u`` (and ``2 u**2``) are added on the
    driver and divided by ``n``: the numpy statistic up to the order of the
    additions, with the same replace-one sensitivity ``sqrt(d) / n``. Each
    chunk also flags ``nan``/``inf`` in the same pass: refused (the numpy
    path's error) before anything is returned.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    lower, upper : ndarray of shape (d,)
    with_var : bool

    Returns
    -------
    ndarray of shape (d,) or (2 d,)
    """
    sums = record_sum(
        _unit_sums, (X,), np.asarray(lower, float), np.asarray(upper, float), with_var
    )
    if sums[-1] != 0:  # the flags of this same pass; nothing is released
        raise ValueError("Input X contains NaN or infinity.")
    return sums[:-1] / X.shape[0]


def _observed_sums(Xb, lower, upper):
    # one chunk: column sums of u o and of the observed indicator o, then a
    # flag (1.0 if the chunk holds inf) summed with them
    observed = ~np.isnan(Xb)
    U = np.where(observed, clipped_unit_values(np.nan_to_num(Xb), lower, upper), 0.0)
    d = Xb.shape[1]
    out = np.empty(2 * d + 1)
    out[0 : 2 * d : 2] = U.sum(axis=0)
    out[1 : 2 * d : 2] = observed.sum(axis=0)
    out[-1] = 1.0 if np.isinf(Xb).any() else 0.0
    return out


def observed_sums_on_workers(X, lower, upper, count_weight):
    """Pre-noise statistic of :func:`~._imputer.private_observed_mean`, dask rows.

    Per chunk on the workers: the column sums of the clipped unit values of
    the observed entries and the observed counts; on the driver, their sum
    over chunks divided by ``n`` (the counts weighted by ``count_weight``).
    ``inf`` is flagged per chunk in the same pass and refused (the numpy
    path's error) before anything is returned.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
        May contain NaN.
    lower, upper : ndarray of shape (d,)
    count_weight : float

    Returns
    -------
    ndarray of shape (2 d,)
    """
    sums = record_sum(
        _observed_sums, (X,), np.asarray(lower, float), np.asarray(upper, float)
    )
    if sums[-1] != 0:  # the flags of this same pass; nothing is released
        raise ValueError("Input X contains infinity.")
    sums = sums[:-1]
    n = X.shape[0]
    stat = np.empty_like(sums)
    stat[0::2] = sums[0::2] / n
    stat[1::2] = count_weight * (sums[1::2] / n)
    return stat


def lazy_transform(method, X, width=None, numeric=True):
    """Lazy ``method(X)`` of a fitted transformer on every chunk of rows.

    The fitted transform is a per-row map of released (or public) values:
    each worker runs the numpy ``method`` on its chunk; nothing is computed
    here.

    Parameters
    ----------
    method : callable
        A fitted transformer's bound method (e.g. ``est.transform``).
    X : dask array or DataFrame of shape (n, d)
    width : int, optional
        Columns of the output (default: ``d``).
    numeric : bool, default=True
        Cast ``X`` to float64 (``False`` keeps its dtype, e.g. strings).

    Returns
    -------
    dask.array.Array
    """
    if numeric:
        d = getattr(method.__self__, "n_features_in_", None)
        return lazy_rows(method, X, width=d if width is None else width)
    from sklearn.utils.validation import check_is_fitted

    from ..solvers._distributed import _to_array, silently

    check_is_fitted(method.__self__)
    X = _to_array(X)
    if X.ndim != 2:
        raise ValueError(f"Expected a 2D dask array, got ndim={X.ndim}.")
    X = X.rechunk({1: -1})
    chunks = (X.chunks[0], (int(width),))
    return X.map_blocks(silently, method, chunks=chunks, dtype=np.float64)


def declared_row(est, X):
    """Check dask ``X``'s shape against the declared categories; one row of them.

    The encoder's fit reads nothing from the private rows on dask input (nor
    on numpy input): it is set up from the declared categories alone
    (:func:`~skdp.preprocessing._one_hot.encoder_of_declared`). Only ``X``'s
    public shape and dtype are read here; the returned row holds the first
    declared category of every column, in ``X``'s dtype.

    Parameters
    ----------
    est : OneHotEncoder
    X : dask array or DataFrame of shape (n, d)

    Returns
    -------
    ndarray of shape (1, d)
    """
    from ..solvers._distributed import _to_array

    if est.sparse_output:
        reject_dask(X, "OneHotEncoder(sparse_output=True)")
    X = _to_array(X)
    categories = list(est.categories)
    if X.ndim == 2 and len(categories) == 1:
        categories = categories * X.shape[1]
    if X.ndim != 2 or len(categories) != X.shape[1]:
        raise ValueError(
            f"X has shape {X.shape}; the encoder declares {len(categories)} "
            "columns of categories."
        )
    row = np.empty((1, X.shape[1]), dtype=X.dtype)
    for j, cats in enumerate(categories):
        row[0, j] = np.asarray(cats)[0]
    return row


def _all_known(block, encoder):
    try:
        encoder.transform(block)
    except ValueError:
        return np.array([False])
    return np.array([True])


def check_categories_on_workers(encoder, X):
    """``handle_unknown="error"``: refuse a value outside the declared categories.

    Each worker checks its chunk; only one flag per chunk reaches the driver.
    As on the numpy path, the error reveals that some record holds an
    undeclared value (the parameter validates a schema).

    Parameters
    ----------
    encoder : sklearn.preprocessing.OneHotEncoder
        Fitted on the declared categories.
    X : dask array or DataFrame of shape (n, d)
    """
    from ..solvers._distributed import _to_array

    X = _to_array(X).rechunk({1: -1})
    flags = X.map_blocks(
        _all_known, encoder, drop_axis=1, chunks=((1,) * X.numblocks[0],), dtype=bool
    )
    if not bool(flags.all().compute()):
        raise ValueError("X contains a value outside the declared categories.")


def estimate_bounds_on_workers(X, epsilon_q, rng, before_noise=None):
    """:func:`~._bounds.estimate_bounds` for dask rows (the same releases).

    One pass counts, per column, the values of ``asinh(x)`` below each
    public cell edge of :data:`~._bounds.QUANTILE_RANGE` (per chunk on the
    workers, summed on the driver); the driver then draws the low and the
    high quantile of every column in the numpy path's order
    (:func:`~skdp.privacy._mechanisms.quantile_from_counts`, the function
    that draws the numpy release too), widens a column whose releases meet
    by one cell and maps back by ``sinh``.

    Parameters
    ----------
    X : dask.array.Array of shape (n, d)
    epsilon_q : float
        Pure epsilon of each quantile (finite).
    rng : numpy.random.Generator
    before_noise : callable, optional
        Called after the counts' pass (which refuses ``nan``/``inf`` from
        per-chunk flags), before the first draw.

    Returns
    -------
    lower, upper : ndarray of shape (d,)
    """
    from ._bounds import QUANTILE_RANGE, bounds_level, column_bounds

    n, d = X.shape
    level = bounds_level(n, epsilon_q, stacklevel=5)
    counts = column_edge_counts_on_workers(
        X, QUANTILE_RANGE, transform=np.arcsinh, refuse_non_finite=True
    )
    if before_noise is not None:
        before_noise()
    lower, upper = np.empty(d), np.empty(d)
    kw = dict(bounds=QUANTILE_RANGE, rng=rng)
    for j in range(d):
        lo = quantile_from_counts(counts[j], n, 1.0 - level, epsilon_q, **kw)
        hi = quantile_from_counts(counts[j], n, level, epsilon_q, **kw)
        lower[j], upper[j] = column_bounds(lo, hi)
    return lower, upper
