"""The private norm bound: a high quantile of positive per-record values.

One mechanism for every private bound on row norms, ``|y|`` or gradient
norms in skdp: a noisy bisection on counts, on a ``log2`` scale over a public
range. Each of its ``steps`` rounds releases one count
``#{i : log2(v_i) <= mid} + N(0, z**2)``; replacing one record moves the count
by at most 1, so the search is ``steps`` Gaussian mechanisms of multiplier
``z`` (:func:`private_norm_bound_event`), exactly ``sqrt(steps) / z``-GDP. It
composes exactly with the Gaussian steps that make up the rest of every plan
(a pure-DP exponential-mechanism quantile does not: its cost in a GDP split is
only bounded). A study measured it against the exponential-mechanism quantile
it replaced at the same zCDP cost (at f9c3d36:
``python -m benchmarks.privacy.norm_bound``).

:func:`bisect_noisy_counts` is the one bisection (also used for the heavy-tailed
solvers' clip levels and median); :func:`norm_bound_from_counts` the one
draw of a bound from a count function (numpy values here, per-chunk counts
summed on dask in ``skdp.solvers._distributed.bisection_counter``, the same
release); :func:`private_norm_bound` the numpy entry point that takes a GDP
``mu``.
"""

import math
import warnings

import numpy as np

from ._events import gaussian_steps
from ._mechanisms import gaussian_noise

__all__ = [
    "LOG2_RANGE",
    "RANGE_STEPS",
    "NORM_BOUND_QUANTILE",
    "UNRELIABLE_SLACK",
    "median_out_of_reach",
    "bisect_noisy_counts",
    "quantile_level",
    "norm_bound_noise_multiplier",
    "norm_bound_from_counts",
    "private_norm_bound",
    "private_norm_bound_event",
]

#: Public range of a bound, in ``log2`` units (about 1e-9 to 1e9: features and
#: targets in their natural units, not only standardized ones). Values
#: outside count as the end points.
LOG2_RANGE = (-30.0, 30.0)

#: Bisection steps of a bound over :data:`LOG2_RANGE` (0.06 octave).
RANGE_STEPS = 10

#: Level of :func:`private_norm_bound` when ``n`` allows it.
NORM_BOUND_QUANTILE = 0.95

#: When ``n`` cannot support the wanted level, a lower quantile times this
#: public factor stands in for the high quantile (so that a bound never
#: clips a large fraction of the data).
UNRELIABLE_SLACK = 4.0


def median_out_of_reach(n, z):
    """Whether ``n`` records at count noise ``z`` are too few for a bound.

    ``8 z > n``: even the median can then land orders of magnitude off. A
    public function of ``n`` and ``z`` (the warning of
    :func:`norm_bound_from_counts`, and the reach of a planned bound).

    Parameters
    ----------
    n : int
    z : float

    Returns
    -------
    bool

    Examples
    --------
    >>> median_out_of_reach(100, 20.0), median_out_of_reach(1000, 20.0)
    (True, False)
    """
    return bool(z > 0 and 8.0 * float(z) > max(int(n), 1))


def bisect_noisy_counts(count_le, n, quantile, z, rng, bounds, steps):
    """Upper end of the final bracket of a noisy-count bisection.

    Each of the ``steps`` rounds releases ``count_le(mid) + N(0, z**2)``
    (a count with replace-one sensitivity 1) and keeps the half of
    ``bounds`` that holds the ``quantile`` level of the ``n`` records.

    Parameters
    ----------
    count_le : callable
        ``mid -> #{i : values_i <= mid}``.
    n : int
        Public number of records.
    quantile : float
        Level in ``[0, 1]``.
    z : float
        Noise multiplier of each count (``0`` for exact counts).
    rng : numpy.random.Generator
    bounds : tuple (low, high)
        Public search range.
    steps : int

    Returns
    -------
    float

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> v = np.arange(8.0)
    >>> count_le = lambda mid: int(np.count_nonzero(v <= mid))
    >>> bisect_noisy_counts(count_le, 8, 0.5, 0.0, np.random.default_rng(0), (0, 8), 3)
    3.0
    """
    target = float(quantile) * n
    lo, hi = (float(b) for b in bounds)
    for _ in range(int(steps)):
        mid = 0.5 * (lo + hi)
        count = count_le(mid) + gaussian_noise(
            rng, z, sensitivity=1.0, label="bisection count"
        )
        if count >= target:
            hi = mid
        else:
            lo = mid
    return hi


def quantile_level(n, z, tail):
    """Quantile level that ``n`` records can support at count noise ``z``.

    A count near the ``1 - t`` quantile has noise ``z``; the level is
    ``1 - max(tail, 4 z / n)``, at least the median. The margin matters most
    at the top of the range, where every record is counted: a count of ``n``
    must not look below the target, or the bisection jumps up by many
    octaves (and, for the heavy-tailed solvers' scales, wrecks the
    clip-search ranges set from them). With a ``4 z`` margin that happens
    with probability ``Phi(-4) = 3e-5`` per step (``2.3%`` with ``2 z``,
    ``0.13%`` with ``3 z``: both were seen in benchmark runs). Public: ``n``, ``z`` and ``tail`` are
    public. With ``z = 0`` and ``tail = 0`` it is 1 (the maximum).

    Parameters
    ----------
    n : int
    z : float
    tail : float

    Returns
    -------
    float

    Examples
    --------
    >>> quantile_level(100_000, 50.0, 0.01), quantile_level(1000, 50.0, 0.01)
    (0.99, 0.8)
    """
    return float(1.0 - min(0.5, max(float(tail), 4.0 * float(z) / max(n, 1))))


def norm_bound_noise_multiplier(mu, steps=RANGE_STEPS):
    """Count noise multiplier of a bound at GDP budget ``mu``.

    ``steps`` counts of multiplier ``z`` are ``sqrt(steps) / z``-GDP, so
    ``z = sqrt(steps) / mu`` (``0`` for ``mu = inf``).

    Parameters
    ----------
    mu : float
        GDP budget of the bound, in (0, inf]. A pure-DP budget ``epsilon``
        of the same zCDP cost (``epsilon**2 / 2``) is ``mu = epsilon``.
    steps : int, default=RANGE_STEPS

    Returns
    -------
    float

    Examples
    --------
    >>> norm_bound_noise_multiplier(float("inf")), norm_bound_noise_multiplier(1.0, 4)
    (0.0, 2.0)
    """
    mu = float(mu)
    if not mu > 0:
        raise ValueError(f"The budget of a private bound must be positive, got {mu!r}.")
    return 0.0 if math.isinf(mu) else math.sqrt(int(steps)) / mu


def private_norm_bound_event(mu, steps=RANGE_STEPS):
    """Event of :func:`private_norm_bound` at GDP budget ``mu``.

    Parameters
    ----------
    mu : float
    steps : int, default=RANGE_STEPS

    Returns
    -------
    event : DpEvent
        ``steps`` Gaussian counts of multiplier
        :func:`norm_bound_noise_multiplier` (``NonPrivateDpEvent`` for
        ``mu = inf``).

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> private_norm_bound_event(1.0, 4)
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=2.0), count=4)
    """
    return gaussian_steps(norm_bound_noise_multiplier(mu, steps), steps)


def norm_bound_from_counts(
    count_le,
    n,
    tail,
    z,
    rng,
    *,
    log2_range=LOG2_RANGE,
    steps=RANGE_STEPS,
    slack=UNRELIABLE_SLACK,
    warn=False,
):
    """Private high quantile of positive values from their ``log2`` counts.

    The one draw of a private bound: the :func:`quantile_level` quantile
    (``steps`` counts of multiplier ``z`` over ``log2_range``, the upper end
    of the final bracket), times :data:`UNRELIABLE_SLACK` when ``n`` is too
    small for the level ``1 - tail``; with ``z = 0`` the ``1 - tail``
    quantile up to the resolution of the range.

    Parameters
    ----------
    count_le : callable
        ``mid -> #{i : log2(values_i) <= mid}``.
    n : int
        Public number of records.
    tail : float
        Wanted tail ``1 - level``.
    z : float
        Noise multiplier of each count.
    rng : numpy.random.Generator
    log2_range : tuple (low, high), default=LOG2_RANGE
    steps : int, default=RANGE_STEPS
    slack : float, default=UNRELIABLE_SLACK
        Public factor applied when the level is lowered (the heavy-tailed
        solvers' scales, which set every later search range).
    warn : bool, default=False
        Warn when ``n`` is too small for even the median (``8 z > n``, a
        public function of ``n`` and ``z``).

    Returns
    -------
    float

    Warns
    -----
    UserWarning
        With ``warn=True``, if ``8 z > n``.

    Examples
    --------
    >>> import numpy as np
    >>> logv = np.log2(np.arange(1.0, 1001.0))
    >>> count_le = lambda mid: int(np.count_nonzero(logv <= mid))
    >>> b = norm_bound_from_counts(count_le, 1000, 0.0, 0.0, np.random.default_rng(0))
    >>> 1000 <= b <= 1045
    True
    """
    if warn and median_out_of_reach(n, z):
        warnings.warn(
            f"{max(n, 1)} rows at count noise {float(z):.3g} are too few to "
            "estimate a bound privately: even the median can land orders of "
            "magnitude off. Pass the bound (e.g. feature_norm, target_bound) "
            "from public knowledge.",
            UserWarning,
            stacklevel=3,
        )
    target = 1.0 - float(tail)
    level = target if z == 0 else quantile_level(n, z, tail)
    estimate = 2.0 ** bisect_noisy_counts(count_le, n, level, z, rng, log2_range, steps)
    return estimate * (slack if level < target else 1.0)


def private_norm_bound(
    values,
    mu,
    *,
    rng,
    quantile=NORM_BOUND_QUANTILE,
    bounds=None,
    steps=RANGE_STEPS,
    slack=1.0,
    count_le=None,
):
    """Private upper bound on non-negative per-record values (row norms, ``|y|``).

    A noisy bisection on ``log2`` counts over a public range: ``steps``
    Gaussian counts of multiplier ``z = sqrt(steps) / mu``, exactly
    ``mu``-GDP (:func:`private_norm_bound_event`). The level is ``quantile``,
    lowered by :func:`quantile_level` (a public function of ``n`` and ``z``)
    when ``n`` is too small to reach it (and the bound then multiplied by
    ``slack``). The answer is the upper end of the final
    bracket, so it lies in the range, and with ``mu = inf`` no more than a
    ``1 - quantile`` fraction of the values exceed it.

    Parameters
    ----------
    values : array-like of shape (n,), or int
        One non-negative value per record (``inf`` allowed); the public
        number of records ``n`` when ``count_le`` is given.
    mu : float
        GDP budget, in (0, inf]; ``inf`` gives the exact quantile (up to the
        resolution of the range). A pure-DP ``epsilon`` of the same zCDP cost
        is ``mu = epsilon``.
    rng : numpy.random.Generator
    quantile : float, default=0.95
        Level wanted when ``n`` is large.
    bounds : tuple (low, high), optional
        Public range of the bound (``low > 0``); default ``2**LOG2_RANGE``.
    steps : int, default=RANGE_STEPS
        Counts of the bisection (its resolution is the range's octaves over
        ``2**steps``).
    slack : float, default=1.0
        Public factor applied when the level is lowered. ``1``: a bound used
        as a clip level is the lowered quantile itself (measured better than
        ``UNRELIABLE_SLACK`` there; study at f9c3d36:
        ``python -m benchmarks.privacy.norm_bound``).
    count_le : callable, optional
        ``mid -> #{i : log2(values_i) <= mid}`` counted elsewhere (the dask
        fits sum per-chunk counts,
        ``skdp.solvers._distributed.bisection_counter``): the same release.

    Returns
    -------
    float

    Warns
    -----
    UserWarning
        If ``n`` is too small for even the median (a public function of
        ``n`` and ``mu``).

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> import numpy as np
    >>> norms = np.linalg.norm(np.random.default_rng(0).normal(size=(5000, 4)), axis=1)
    >>> b = private_norm_bound(norms, 1.0, rng=np.random.default_rng(1))
    >>> bool(2.5 < b < 4.0)
    True
    """
    z = norm_bound_noise_multiplier(mu, steps)
    log2_range = LOG2_RANGE
    if bounds is not None:
        lo, hi = (float(b) for b in bounds)
        if not 0 < lo < hi:
            raise ValueError("bounds must satisfy 0 < low < high.")
        log2_range = (math.log2(lo), math.log2(hi))
    if count_le is None:
        v = np.asarray(values, dtype=float).ravel()
        n = v.size
        with np.errstate(all="ignore"):
            logv = np.log2(np.maximum(v, 0.0))

        def count_le(mid):
            return int(np.count_nonzero(logv <= mid))
    else:
        n = int(values)
    return norm_bound_from_counts(
        count_le,
        n,
        1.0 - float(quantile),
        z,
        rng,
        log2_range=log2_range,
        steps=steps,
        slack=slack,
        warn=True,
    )
