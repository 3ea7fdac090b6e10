"""Basic private mechanisms shared by the solvers.

Every random perturbation in skdp goes through :func:`gaussian_noise` (or the
exponential mechanism below), so that

- all noise comes from the caller's :class:`numpy.random.Generator`, and
- the privacy audit can scale all noise down with the test-only context
  manager :func:`_scaled_noise` to check that it detects an under-noised
  estimator. It is not a public parameter.

Floating-point Gaussian sampling is not exactly DP (Mironov 2012); skdp, like
other DP libraries built on numpy, accepts this caveat and documents it.
"""

import contextlib
import contextvars
import math
import warnings

import numpy as np

from ..utils._validation import clip_rows
from ._events import GaussianDpEvent, PureDpEvent
from ._ledger import LedgerEntry, record, record_draw

__all__ = [
    "gaussian_noise",
    "gaussian_mechanism",
    "private_row_mean",
    "private_quantile",
    "quantile_from_counts",
    "reachable_quantile_level",
    "noisy_histogram",
    "private_quantile_event",
    "noisy_histogram_event",
]

_NOISE_SCALE = contextvars.ContextVar("skdp_noise_scale", default=1.0)


@contextlib.contextmanager
def _scaled_noise(factor):
    """Test-only: multiply every noise draw by ``factor`` inside the block.

    Used by the privacy audit's negative control. An estimator fitted inside
    this block is NOT private at its stated epsilon when ``factor < 1``.
    """
    token = _NOISE_SCALE.set(float(factor))
    try:
        yield
    finally:
        _NOISE_SCALE.reset(token)


def noise_scale():
    """Current multiplier applied to all noise (1.0 outside the audit hook)."""
    return _NOISE_SCALE.get()


def gaussian_noise(
    rng,
    std,
    size=None,
    *,
    sensitivity,
    repetitions=1,
    sampling=(),
    correlation=0.0,
    label="",
):
    """Draw ``N(0, std**2)`` noise of the given size from ``rng``.

    The draw is written to every open privacy ledger (see
    :func:`skdp.privacy.recording`) from the scale actually used and the
    caller's ``sensitivity``.

    Parameters
    ----------
    rng : numpy.random.Generator
        The fit's generator.
    std : float
        Standard deviation; ``0`` returns zeros without consuming ``rng``
        (the non-private ``epsilon=inf`` path).
    size : int or tuple, optional
        Shape of the draw.
    sensitivity : float or PartSensitivities
        Replace-one L2 sensitivity of the noised statistic (of one of the
        ``repetitions`` releases), which the caller enforces by clipping; or,
        for a release that reads several parts of a parallel scope, one per
        part (:meth:`parallel_scope(...).sensitivities
        <skdp.privacy.parallel_scope>`).
    repetitions : int, default=1
        Number of releases the draw holds (for example ``k`` steps drawn as
        one array of ``k`` rows), each of ``size / repetitions`` coordinates.
    sampling : tuple, default=()
        ``("poisson", q)`` or ``("without_replacement", n, m)`` when the
        statistic is computed on a sampled batch (the ledger's event then
        amplifies by sampling).
    correlation : float, default=0.0
        ``rho`` of a draw that is one of a jointly Gaussian pair with
        correlation ``rho`` on two disjoint parts (the second built as
        ``rho * first + sqrt(1 - rho**2) * fresh``, both drawn here). For a
        record of one part the pair is a Gaussian mechanism of scale
        ``std * sqrt(1 - rho**2)``, which the ledger records.
    label : str, default=""
        What is released, for reading the ledger.

    Returns
    -------
    noise : float or ndarray

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.
    - Mironov, "On significance of the least significant bits for differential privacy", CCS
      2012.

    Examples
    --------
    >>> import numpy as np
    >>> gaussian_noise(np.random.default_rng(0), 0.0, 3, sensitivity=1.0)
    array([0., 0., 0.])
    """
    std = float(std) * _NOISE_SCALE.get()
    count = 1 if size is None else int(np.prod(size))
    record_draw(
        LedgerEntry(
            "gaussian",
            scale=std * math.sqrt(1.0 - float(correlation) ** 2),
            size=count // max(int(repetitions), 1),
            repetitions=int(repetitions),
            sampling=tuple(sampling),
            label=label,
        ),
        sensitivity,
    )
    if std == 0.0:
        return 0.0 if size is None else np.zeros(size)
    return rng.normal(0.0, std, size=size)


def gaussian_mechanism(
    value, sensitivity, noise_multiplier, *, rng, label="gaussian_mechanism"
):
    """Release ``value + N(0, (noise_multiplier * sensitivity)**2 I)``.

    Parameters
    ----------
    value : float or ndarray
        Statistic computed on clipped data.
    sensitivity : float
        Its replace-one L2 sensitivity, enforced by clipping upstream.
    noise_multiplier : float
        ``sigma / sensitivity``; the matching event is
        ``GaussianDpEvent(noise_multiplier)``.
    rng : numpy.random.Generator
    label : str, default="gaussian_mechanism"
        What is released, for reading the privacy ledger.

    Returns
    -------
    noisy : float or ndarray

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.
    - Mironov, "On significance of the least significant bits for differential privacy", CCS
      2012.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> gaussian_mechanism(np.zeros(2), 1.0, 0.0, rng=rng)
    array([0., 0.])
    """
    value = np.asarray(value, dtype=float)
    noise = gaussian_noise(
        rng,
        noise_multiplier * sensitivity,
        value.shape or None,
        sensitivity=sensitivity,
        label=label,
    )
    out = value + noise
    return float(out) if out.ndim == 0 else out


def private_row_mean(X, norm_bound, noise_multiplier, *, rng, row_norms=None):
    """Gaussian release of the mean of the rows of ``X`` clipped to a norm.

    Rows are scaled down to norm at most ``norm_bound`` (a public bound), so
    replacing one of the ``n`` rows moves the mean by at most
    ``2 norm_bound / n``, the sensitivity the noise is calibrated to.

    Parameters
    ----------
    X : ndarray of shape (n_samples, n_features)
    norm_bound : float
        Public (or privately released) bound on the row norm.
    noise_multiplier : float
        ``sigma / sensitivity``; the matching event is
        ``GaussianDpEvent(noise_multiplier)``.
    rng : numpy.random.Generator
    row_norms : ndarray of shape (n_samples,), optional
        Norms of the rows of ``X``.

    Returns
    -------
    ndarray of shape (n_features,)

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0], [0.0, 1.0]])
    >>> private_row_mean(X, 1.0, 0.0, rng=np.random.default_rng(0))
    array([0.3, 0.9])
    """
    X = np.asarray(X, dtype=float)
    clipped = clip_rows(X, float(norm_bound), row_norms=row_norms)
    sensitivity = 2.0 * float(norm_bound) / X.shape[0]
    mean = gaussian_mechanism(
        clipped.mean(axis=0), sensitivity, noise_multiplier, rng=rng
    )
    return np.atleast_1d(mean)


def private_quantile(
    values, quantile, epsilon, *, bounds, rng, log_scale=False, n_cells=2048
):
    """Exponential-mechanism estimate of a quantile of ``values``.

    Values are clipped to the public ``bounds``, which are cut into
    ``n_cells`` equal public cells (equal in ``log(value)`` if
    ``log_scale``). Cell ``[e_j, e_{j+1})`` has utility minus the distance
    from ``quantile * n`` to its rank range ``[#{x < e_j}, #{x < e_{j+1}}]``
    (zero for the cell that holds the quantile), is chosen with probability
    proportional to ``exp(epsilon * utility / 2)``, and the output is uniform
    inside it. Both counts move by at most one when a record is replaced, so
    the utility has sensitivity 1 and the release is pure ``epsilon``-DP
    (event ``PureDpEvent(epsilon)``).

    Public cells, rather than the intervals between sorted values (Smith
    2011), keep tied values estimable: a tie is a point, which has no length
    between sorted values, so that mechanism can never output it (one-hot
    rows, whose norms are all equal, or integer targets, would be estimated
    orders of magnitude off whatever ``epsilon``). The price is a resolution
    of one cell.

    With ``log_scale=True`` cells are equal in ``log(value)``, which suits
    positive, heavy-tailed quantities such as row norms whose scale is unknown
    over orders of magnitude.

    Parameters
    ----------
    values : array-like of shape (n,)
        One value per record.
    quantile : float
        In [0, 1].
    epsilon : float
        Pure DP budget of this release, in (0, inf]. ``inf`` returns the exact
        (clipped) empirical quantile.
    bounds : tuple (low, high)
        Public range of the output; ``low > 0`` if ``log_scale``.
    rng : numpy.random.Generator
    log_scale : bool, default=False
    n_cells : int, default=2048
        Number of public cells of the range (the resolution).

    Returns
    -------
    estimate : float

    Warns
    -----
    UserWarning
        If the estimate falls in the first or the last cell: the quantile may
        lie outside ``bounds``, or ``n * epsilon`` is too small for the
        mechanism to find it (post-processing of the release).

    References
    ----------
    - McSherry and Talwar, "Mechanism design via differential privacy", FOCS 2007.
    - Smith, "Privacy-preserving statistical estimation with optimal convergence rates",
      STOC 2011.
    - Gillenwater, Joseph and Kulesza, "Differentially private quantiles", ICML 2021.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> x = rng.exponential(size=10_000)
    >>> q = private_quantile(x, 0.9, 1.0, bounds=(1e-3, 1e3), rng=rng, log_scale=True)
    >>> 2.0 < q < 2.7
    True
    >>> ties = np.full(1000, 3.0)
    >>> q = private_quantile(ties, 0.9, 1.0, bounds=(1e-3, 1e3), rng=rng, log_scale=True)
    >>> 2.9 < q < 3.1
    True
    """
    eps = float(epsilon) / _NOISE_SCALE.get()
    lo, hi, edges = _quantile_edges(bounds, log_scale, n_cells)
    _check_quantile(quantile)
    x = np.asarray(values, dtype=float).ravel()
    if x.size and math.isinf(eps):
        record(LedgerEntry("exponential", sensitivity=1.0, scale=0.0, label="exact quantile"))
        exact = np.quantile(np.clip(x, lo, hi), quantile, method="inverted_cdf")
        return float(exact)
    counts = _edge_counts(x, edges, lo, hi, log_scale)
    return quantile_from_counts(
        counts, x.size, quantile, epsilon, bounds=bounds, rng=rng, log_scale=log_scale
    )


def quantile_from_counts(
    counts, n, quantile, epsilon, *, bounds, rng, log_scale=False, stacklevel=3
):
    """The release of :func:`private_quantile` from its public cells' counts.

    The one driver-side draw of the exponential-mechanism quantile, for
    values in one process (:func:`private_quantile`) and for counts summed
    over chunks (the dask fits): ``counts[j] = #{x < e_j}`` at the
    ``n_cells + 1`` public edges ``e_j`` (values clipped to ``bounds``, in
    log units if ``log_scale``). The utilities, the Gumbel-max choice of the
    cell and the uniform point inside it are drawn from ``rng`` in this
    order. Each count moves by at most one when a record is replaced: pure
    ``epsilon``-DP (event ``PureDpEvent(epsilon)``).

    Parameters
    ----------
    counts : array-like of int of shape (n_cells + 1,)
        Number of (clipped) values below each public edge.
    n : int
        Public number of records.
    quantile : float
        In [0, 1].
    epsilon : float
        Pure DP budget of this release, in (0, inf) (``inf``, the exact
        quantile, reads the values: :func:`private_quantile` only).
    bounds : tuple (low, high)
        Public range of the output; ``low > 0`` if ``log_scale``.
    rng : numpy.random.Generator
    log_scale : bool, default=False
    stacklevel : int, default=3
        Of the warning below (3: the caller of the function that called
        this one).

    Returns
    -------
    estimate : float

    Warns
    -----
    UserWarning
        If the estimate falls in the first or the last cell (as
        :func:`private_quantile`).
    """
    eps = float(epsilon) / _NOISE_SCALE.get()
    counts = np.asarray(counts)
    _, _, edges = _quantile_edges(bounds, log_scale, counts.size - 1)
    _check_quantile(quantile)
    # The utility (minus a rank distance, sensitivity 1) is weighted by
    # eps / 2: the Gumbel noise has scale 2 / eps in utility units.
    record(
        LedgerEntry(
            "exponential",
            sensitivity=1.0,
            scale=0.0 if math.isinf(eps) else 2.0 / eps,
            label=f"{quantile:g}-quantile",
        )
    )
    if n == 0:
        out = rng.uniform(edges[0], edges[-1])
        return float(math.exp(out) if log_scale else out)
    if math.isinf(eps):
        raise ValueError(
            "quantile_from_counts needs a finite epsilon: the exact quantile "
            "(epsilon=inf) reads the values (private_quantile)."
        )
    logw = _quantile_log_weights(counts, n, quantile, eps, edges)
    # Gumbel-max sampling of the cell, then uniform inside it.
    i = int(np.argmax(logw + rng.gumbel(size=logw.size)))
    if i in (0, logw.size - 1):
        warnings.warn(
            f"The private {quantile:g}-quantile fell in the "
            f"{'first' if i == 0 else 'last'} cell of its public range "
            f"{tuple(bounds)}: the quantile may lie outside the range, or "
            "n * epsilon is too small to locate it.",
            UserWarning,
            stacklevel=stacklevel,
        )
    out = rng.uniform(edges[i], edges[i + 1])
    return float(math.exp(out) if log_scale else out)


def reachable_quantile_level(n, epsilon, target, *, n_cells=2048, failure=0.01):
    """Highest quantile level (up to ``target``) that :func:`private_quantile` finds.

    Above the largest value, each of up to ``n_cells`` empty cells keeps
    weight ``exp(-epsilon (1 - q) n / 2)`` against about one for the cell of
    the quantile. Their total stays below ``failure`` when ``(1 - q) n
    epsilon / 2 >= log(n_cells / failure)``; a lower level is the price of a
    small ``n epsilon``. A public function of ``n`` and ``epsilon``, floored
    at the median.

    Parameters
    ----------
    n : int
        Public number of records.
    epsilon : float
        Budget of the quantile release.
    target : float
        Level wanted when ``n epsilon`` is large, in [0.5, 1].
    n_cells : int, default=2048
        As in :func:`private_quantile`.
    failure : float, default=0.01
        Bound on the weight of the empty cells above the data.

    Returns
    -------
    float

    Warns
    -----
    UserWarning
        If even the median is out of reach (``n epsilon`` too small).

    References
    ----------
    - McSherry and Talwar, "Mechanism design via differential privacy", FOCS 2007.

    Examples
    --------
    >>> reachable_quantile_level(10**5, 1.0, 0.95)
    0.95
    >>> round(reachable_quantile_level(200, 1.0, 0.95), 3)
    0.878
    """
    if math.isinf(epsilon):
        return float(target)
    need = 2.0 * math.log(n_cells / failure) / (max(n, 1) * float(epsilon))
    if need > 0.5:
        warnings.warn(
            f"{max(n, 1)} rows at epsilon={float(epsilon):.3g} for this quantile are "
            "too few to estimate a public bound privately: even the median can "
            "land orders of magnitude off. Pass the bound (e.g. feature_norm, "
            "target_bound) from public knowledge.",
            UserWarning,
            stacklevel=3,
        )
    return float(np.clip(1.0 - need, 0.5, target))


def _check_quantile(quantile):
    if not (0.0 <= quantile <= 1.0):
        raise ValueError("quantile must be in [0, 1].")


def _quantile_edges(bounds, log_scale, n_cells):
    """``(lo, hi, edges)``: the clip range and the public cell edges.

    ``edges`` holds the ``n_cells + 1`` edges, in log units if ``log_scale``.
    """
    lo, hi = (float(b) for b in bounds)
    if not (lo < hi) or (log_scale and lo <= 0):
        raise ValueError("bounds must satisfy low < high (and low > 0 on a log scale).")
    if int(n_cells) < 1:
        raise ValueError("n_cells must be a positive integer.")
    a, b = (math.log(lo), math.log(hi)) if log_scale else (lo, hi)
    return lo, hi, np.linspace(a, b, int(n_cells) + 1)


def _edge_counts(values, edges, lo, hi, log_scale):
    """``#{x < e_j}`` for every public edge (values clipped, log units if asked).

    The exponential mechanism's only read of the data; on dask each chunk is
    counted on its worker and the counts are added.
    """
    with np.errstate(all="ignore"):
        x = np.clip(np.asarray(values, dtype=float).ravel(), lo, hi)
        if log_scale:
            x = np.log(x)
    return np.searchsorted(np.sort(x), edges, side="left")


def _quantile_log_weights(counts, n, quantile, epsilon, edges):
    # cell j: length times exp(epsilon * utility / 2), utility minus the
    # distance from quantile * n to its rank range [counts[j], counts[j+1]]
    below, upto = counts[:-1], counts[1:].copy()
    upto[-1] = n  # the last cell is closed: it holds the values at ``hi``
    target = quantile * n
    utility = -np.maximum.reduce([below - target, target - upto, np.zeros(below.size)])
    penalty = 0.0 if math.isinf(epsilon) else 0.5 * epsilon
    return np.log(np.diff(edges)) + penalty * utility


def _quantile_intervals(values, quantile, epsilon, bounds, log_scale, n_cells=2048):
    """Public cells of the exponential mechanism and their log weights.

    Returns ``(edges, logw, log_scale)``: cell ``i`` is ``[edges[i],
    edges[i+1]]`` (in log units if ``log_scale``) and is chosen with
    probability proportional to ``exp(logw[i])`` = length times
    ``exp(epsilon * utility_i / 2)``.
    """
    lo, hi, edges = _quantile_edges(bounds, log_scale, n_cells)
    _check_quantile(quantile)
    x = np.asarray(values, dtype=float).ravel()
    counts = _edge_counts(x, edges, lo, hi, log_scale)
    return (
        edges,
        _quantile_log_weights(counts, x.size, quantile, epsilon, edges),
        log_scale,
    )


def private_quantile_event(epsilon):
    """Event of :func:`private_quantile` at ``epsilon``.

    Parameters
    ----------
    epsilon : float

    Returns
    -------
    event : PureDpEvent

    References
    ----------
    - Smith, "Privacy-preserving statistical estimation with optimal convergence rates", STOC
      2011.

    Examples
    --------
    >>> private_quantile_event(0.1)
    PureDpEvent(epsilon=0.1)
    """
    return PureDpEvent(float(epsilon))


def noisy_histogram(labels, categories, noise_multiplier, *, rng):
    """Counts of each declared category plus Gaussian noise.

    Replacing one record moves one count down and another up, so the
    replace-one L2 sensitivity is ``sqrt(2)``; the noise standard deviation is
    ``noise_multiplier * sqrt(2)`` and the event is
    ``GaussianDpEvent(noise_multiplier)``. Categories must be declared (public):
    a category list read from the data would itself leak.

    Parameters
    ----------
    labels : array-like of shape (n,)
        One category per record; every label must be in ``categories``.
    categories : array-like of shape (k,)
        Public list of categories.
    noise_multiplier : float
        ``sigma / sqrt(2)``; ``0`` gives exact counts.
    rng : numpy.random.Generator

    Returns
    -------
    counts : ndarray of shape (k,)
        Noisy counts (may be negative; post-process as needed).

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> noisy_histogram(["a", "b", "a"], ["a", "b"], 0.0, rng=np.random.default_rng(0))
    array([2., 1.])
    """
    categories = np.asarray(categories)
    labels = np.asarray(labels)
    # Vectorised lookup: sort the declared categories, then binary search.
    order = np.argsort(categories, kind="stable")
    pos = np.searchsorted(categories[order], labels)
    pos = np.minimum(pos, len(categories) - 1)
    found = categories[order][pos] == labels
    if not np.all(found):
        bad = labels[~found][0]
        raise ValueError(f"Label {bad!r} is not among the declared categories.")
    codes = order[pos]
    counts = np.bincount(codes, minlength=len(categories)).astype(float)
    return counts + gaussian_noise(
        rng,
        noise_multiplier * math.sqrt(2.0),
        counts.shape,
        sensitivity=math.sqrt(2.0),
        label="histogram",
    )


def noisy_histogram_event(noise_multiplier):
    """Event of :func:`noisy_histogram`.

    Parameters
    ----------
    noise_multiplier : float

    Returns
    -------
    event : GaussianDpEvent

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> noisy_histogram_event(5.0)
    GaussianDpEvent(noise_multiplier=5.0)
    """
    return GaussianDpEvent(float(noise_multiplier))
