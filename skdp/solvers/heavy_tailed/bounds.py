"""Private bounds for the heavy-tailed GLM solvers: quantiles, scales, clip levels.

Everything here is either public arithmetic or a Gaussian mechanism on a
count with replace-one sensitivity 1:

- :func:`noisy_log_quantile` estimates a quantile of per-record positive
  values by a noisy bisection on ``log2`` scale: each step releases one count
  ``#{v_i <= 2**mid} + N(0, z**2)``, so ``steps`` queries cost ``steps``
  Gaussian events of multiplier ``z``; :func:`noisy_median` is the same on a
  linear scale for signed values.
- :func:`private_scales` / :func:`scale_quantile` estimate, once and over all
  records, a row-norm bound and (squared loss) a target scale; they set the
  search range of every later clip level (:func:`clip_search_range`), so a
  noisy search can never return an absurd clip level. With too few records
  (:func:`scales_estimable`) public defaults for standardized data are used
  (:func:`default_scales`).
- :func:`tail_fraction` is the public rule that picks the clipped fraction of
  per-sample gradients from the noise level (measured on synthetic data;
  study at f9c3d36: ``python -m benchmarks.heavy_tailed.main``);
  :func:`quantile_reliable` is the public
  rule that skips a clip search whose count noise would swamp the counts.
"""

import math
from dataclasses import dataclass

import numpy as np

from ...privacy._norm_bound import (
    LOG2_RANGE,
    RANGE_STEPS,
    UNRELIABLE_SLACK,
    bisect_noisy_counts,
    norm_bound_from_counts,
)
from ...privacy._norm_bound import quantile_level as scale_level
from .._distributed import as_float_records, bisection_counter, log2_records

__all__ = [
    "BISECTION_STEPS",
    "RANGE_STEPS",
    "SEARCH_OCTAVES",
    "LOG2_RANGE",
    "SCALE_TAIL",
    "UNRELIABLE_SLACK",
    "QuantileTarget",
    "DEFAULT_TARGET",
    "tail_fraction",
    "bisect_counts",
    "noisy_log_quantile",
    "noisy_median",
    "quantile_reliable",
    "clip_search_range",
    "scale_level",
    "scale_quantile",
    "private_scales",
    "scales_estimable",
    "small_n_scale_share",
    "default_scales",
    "scales_needed",
    "scale_share",
    "SCALE_FRACTION_PER_QUANTILE",
    "MAX_SCALE_FRACTION",
]


# LOG2_RANGE (public range of the scale quantiles, in log2 units),
# RANGE_STEPS (bisection steps over it) and UNRELIABLE_SLACK are those of the
# one private norm bound, skdp.privacy._norm_bound.


#: Width, in octaves, of the search range of a clip level below its ceiling.
SEARCH_OCTAVES = 16.0


#: Bisection steps of one clip level over SEARCH_OCTAVES (1/16 octave).
BISECTION_STEPS = 8


#: Share of ``bound_share`` paid for each scale quantile over all records
#: (at most :data:`MAX_SCALE_FRACTION` of it in all); the rest of
#: ``bound_share`` pays for the clip levels. A scale quantile that goes wrong
#: wrecks every later search range, so it gets a larger share per count
#: than a clip level, whose errors are local.
SCALE_FRACTION_PER_QUANTILE = 0.1
MAX_SCALE_FRACTION = 0.5


def scale_share(bound_share, n_scales):
    """Share of ``mu**2`` spent on ``n_scales`` scale quantiles (public).

    Parameters
    ----------
    bound_share : float
    n_scales : int

    Returns
    -------
    float

    Examples
    --------
    >>> round(scale_share(0.1, 4), 6), scale_share(0.1, 0)
    (0.04, 0.0)
    """
    frac = min(MAX_SCALE_FRACTION, SCALE_FRACTION_PER_QUANTILE * int(n_scales))
    return float(bound_share) * frac


#: Target tail of the scale quantiles (row norms, |y|): the 0.99 quantile
#: when ``n`` allows it (:func:`scale_level`).
SCALE_TAIL = 0.01


@dataclass(frozen=True)
class QuantileTarget:
    """Public rule for the clipped fraction of per-sample gradients.

    The clip level is the ``1 - p`` quantile of the per-sample gradient
    norms, with ``p = min(max_fraction, scale * z * sqrt(d) / n)`` where
    ``z`` is the noise multiplier of a clipped-gradient sum, ``d`` the
    dimension and ``n`` the number of records summed. ``z sqrt(d) / n`` is
    the noise of the clipped mean relative to the clip level: the noisier
    the release, the more clipping pays (it trades bias for noise, as in
    Fact 1 of the paper). The constants were chosen on synthetic
    heavy-tailed data (public), never on the data being fitted.

    Parameters
    ----------
    scale : float, default=6.0
    max_fraction : float, default=0.7
    min_fraction : float, default=0.0
        Floor of ``p`` when there is noise (public; a robustness floor:
        clipping a few percent of the gradients down-weights heavy-tailed
        rows even when the noise alone would not ask for it).
    """

    scale: float = 6.0
    max_fraction: float = 0.7
    min_fraction: float = 0.0


#: The rule used by default (constants measured on synthetic data).
DEFAULT_TARGET = QuantileTarget()


def tail_fraction(z, n, d, target=None):
    """Fraction of per-sample gradients to clip (public).

    Parameters
    ----------
    z : float
        Noise multiplier of one clipped-gradient sum (``0`` if non-private).
    n : int
        Number of records in the sum.
    d : int
        Dimension of the gradient.
    target : QuantileTarget, optional

    Returns
    -------
    p : float
        In ``[0, target.max_fraction]``; ``0`` when ``z == 0``.

    Examples
    --------
    >>> round(tail_fraction(20.0, 100_000, 21), 4)
    0.0055
    >>> tail_fraction(0.0, 10, 3)
    0.0
    """
    target = DEFAULT_TARGET if target is None else target
    if z == 0:
        return 0.0
    p = max(target.min_fraction, target.scale * z * math.sqrt(d) / max(n, 1))
    return float(min(target.max_fraction, p))


def noisy_log_quantile(
    values, quantile, z, rng, *, log2_range=LOG2_RANGE, steps=RANGE_STEPS
):
    """Private quantile of non-negative per-record values by noisy bisection.

    Each of the ``steps`` rounds releases ``#{i : values_i <= 2**mid}`` plus
    ``N(0, z**2)``; replacing one record moves the count by at most 1, so a
    round is a Gaussian mechanism with multiplier ``z`` and the whole search
    is ``steps`` such events. The search runs over ``log2_range`` (public, or
    computed from earlier private releases) and returns the upper end of the
    final bracket, so with ``z = 0`` and ``quantile = 1`` no value exceeds the
    answer (unless it exceeds the range). The answer always lies in the range.

    Parameters
    ----------
    values : ndarray of shape (n,)
        Non-negative values (``inf`` allowed), one per record.
    quantile : float
        Target level in ``[0, 1]``.
    z : float
        Noise multiplier of each count (``0`` for exact counts).
    rng : numpy.random.Generator
    log2_range : tuple (low, high), default=LOG2_RANGE
    steps : int, default=RANGE_STEPS

    Returns
    -------
    estimate : float

    Examples
    --------
    >>> import numpy as np
    >>> v = np.arange(1, 1001, dtype=float)
    >>> q = noisy_log_quantile(v, 0.5, 0.0, np.random.default_rng(0))
    >>> 500 <= q <= 525  # the upper end of a 0.06-octave bracket
    True
    """
    v = as_float_records(values)  # dask: stays on the workers
    logv = log2_records(v)  # dask: silent on the workers too
    return float(2.0 ** bisect_counts(logv, quantile, z, rng, log2_range, steps))


def bisect_counts(values, quantile, z, rng, bounds, steps):
    """Upper end of the final bracket of a noisy-count bisection.

    Each of the ``steps`` rounds releases ``#{values_i <= mid} + N(0, z**2)``
    (replace-one sensitivity 1) and keeps the half of ``bounds`` that holds
    the ``quantile`` level.

    Parameters
    ----------
    values : ndarray of shape (n,)
    quantile : float
    z : float
    rng : numpy.random.Generator
    bounds : tuple (low, high)
    steps : int

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> bisect_counts(np.arange(8.0), 0.5, 0.0, np.random.default_rng(0), (0, 8), 3)
    3.0
    """
    lo, hi = (float(b) for b in bounds)
    count_le = bisection_counter(values, (lo, hi), steps)  # dask: one pass
    return bisect_noisy_counts(count_le, values.size, quantile, z, rng, (lo, hi), steps)


def noisy_median(values, bound, z, rng, *, steps=RANGE_STEPS):
    """Private median of signed per-record values in ``[-bound, bound]``.

    The same noisy bisection as :func:`noisy_log_quantile` on a linear
    scale: ``steps`` counts with replace-one sensitivity 1 and noise
    multiplier ``z``. Values outside the range count as its end points.

    Parameters
    ----------
    values : ndarray of shape (n,)
    bound : float
        Public (or previously released) range half-width.
    z : float
    rng : numpy.random.Generator
    steps : int, default=RANGE_STEPS

    Returns
    -------
    float
        The midpoint of the final bracket.

    Examples
    --------
    >>> import numpy as np
    >>> m = noisy_median(np.arange(-5.0, 106.0), 200.0, 0.0, np.random.default_rng(0))
    >>> abs(m - 50.0) < 0.5
    True
    """
    v = as_float_records(values)
    hi = bisect_counts(v, 0.5, z, rng, (-float(bound), float(bound)), steps)
    return float(hi - float(bound) / 2.0**steps)


def quantile_reliable(n, p, z):
    """Whether a private quantile search on ``n`` records is worth its budget.

    Near the answer a count is about ``(1 - p) n``; its noise ``z`` moves the
    clipped fraction by about ``z / n``. The search is run only if that is
    at most ``min(p, 1 - p) / 1.5`` (public rule: ``n``, ``p`` and ``z`` are
    public); otherwise its answer would be mostly noise.

    Parameters
    ----------
    n : int
    p : float
        Target clipped fraction.
    z : float
        Count noise multiplier.

    Returns
    -------
    bool

    Examples
    --------
    >>> quantile_reliable(1000, 0.4, 70.0), quantile_reliable(166, 0.7, 65.0)
    (True, False)
    """
    if z == 0:
        return True
    return bool(1.5 * z <= min(p, 1.0 - p) * n)


def clip_search_range(loss, row_bound, target_bound):
    """``log2`` range of the per-sample gradient norms' clip level.

    The ceiling is a (private, already released) bound on typical gradient
    norms: ``||a|| |loss'|`` with ``||a|| <= row_bound`` and ``|loss'|`` at
    most 1 (logistic), ``tau`` (Huber) or ``4 target_bound`` (squared: the
    residual at the start is ``y``; the slack covers the early iterates).
    The floor is :data:`SEARCH_OCTAVES` octaves below.

    Parameters
    ----------
    loss : _GLMLoss
    row_bound : float
    target_bound : float or None
        Needed for the squared loss.

    Returns
    -------
    (low, high) : tuple of float

    Examples
    --------
    >>> from skdp.losses import LogisticLoss
    >>> clip_search_range(LogisticLoss(), 8.0, None)
    (-13.0, 3.0)
    """
    deriv = loss.derivative_bound
    if math.isinf(deriv):
        deriv = 4.0 * float(target_bound)
    high = math.log2(max(float(row_bound) * deriv, 2.0 ** LOG2_RANGE[0]))
    high = min(high, LOG2_RANGE[1])
    return (high - SEARCH_OCTAVES, high)


def scale_quantile(values, tail, z, rng):
    """Private high quantile of positive per-record values, robust to small ``n``.

    The one private norm bound
    (:func:`skdp.privacy._norm_bound.norm_bound_from_counts`) at count noise
    ``z``, on numpy or dask values: the :func:`scale_level` quantile
    (``RANGE_STEPS`` counts of multiplier ``z``), times
    ``UNRELIABLE_SLACK`` when that level had to be lowered below
    ``1 - tail``; with ``z = 0`` the exact ``1 - tail`` quantile.

    Parameters
    ----------
    values : ndarray of shape (n,)
    tail : float
    z : float
    rng : numpy.random.Generator

    Returns
    -------
    float

    Examples
    --------
    >>> import numpy as np
    >>> v = np.arange(1.0, 1001.0)
    >>> 1000 <= scale_quantile(v, 0.0, 0.0, np.random.default_rng(0)) <= 1045
    True
    """
    v = as_float_records(values)  # dask: stays on the workers
    count_le = bisection_counter(log2_records(v), LOG2_RANGE, RANGE_STEPS)
    return norm_bound_from_counts(count_le, v.size, tail, z, rng)


def private_scales(row_norms, y, loss, z, rng, *, tail=SCALE_TAIL):
    """Private row-norm bound and (squared loss) target bound, over all records.

    Each is a :func:`scale_quantile` (``RANGE_STEPS`` counts of multiplier
    ``z``). With ``z = 0`` the level is 1 (the exact maxima), so the
    non-private path clips nothing.

    Parameters
    ----------
    row_norms : ndarray of shape (n,)
    y : ndarray of shape (n,)
    loss : _GLMLoss
    z : float
    rng : numpy.random.Generator
    tail : float, default=SCALE_TAIL

    Returns
    -------
    row_bound : float
    target_bound : float or None
        ``None`` unless the loss is unbounded (squared).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> b, t = private_scales(np.ones(5), np.full(5, 3.0), SquaredLoss(), 0.0,
    ...                       np.random.default_rng(0))
    >>> round(b, 1), round(t, 1)  # upper ends of 0.06-octave brackets
    (1.0, 3.1)
    """
    tail = 0.0 if z == 0 else tail
    row_bound = scale_quantile(row_norms, tail, z, rng)
    target_bound = None
    if scales_needed(loss) == 2:
        target_bound = scale_quantile(np.abs(np.asarray(y, dtype=float)), tail, z, rng)
    return row_bound, target_bound


def scales_estimable(n, z, margin=1.0):
    """Whether ``n`` records support a private scale quantile at noise ``z``.

    Even the median needs its count noise below ``n / 4``
    (:func:`scale_level`); below that, public defaults are used instead and
    no budget is spent (public rule).

    Parameters
    ----------
    n : int
    z : float
    margin : float, default=1.0
        Require the count noise below ``n / (4 margin)``. A bisection whose
        noise is ``n / 4`` takes a wrong early turn (and its result is off
        by octaves) for a few percent of the draws; ``margin = 2``
        (:data:`SMALL_N_MARGIN`) makes that about ``1e-4`` per count.

    Returns
    -------
    bool

    Examples
    --------
    >>> scales_estimable(1000, 100.0), scales_estimable(100, 100.0)
    (True, False)
    """
    return bool(z == 0 or 4.0 * float(margin) * z <= n)


#: Margin of :func:`small_n_scale_share`: its multiplier is at most
#: ``n / (4 SMALL_N_MARGIN)``, i.e. a count noise of at most an eighth of
#: ``n`` (the scale quantile is then the median, times UNRELIABLE_SLACK).
SMALL_N_MARGIN = 2.0


def small_n_scale_share(mu, n, n_counts, max_share):
    """Share of ``mu**2`` that makes ``n_counts`` scale counts estimable.

    Public arithmetic of ``mu``, ``n`` and ``n_counts``: the share whose
    multiplier ``z`` (``n_counts`` Gaussian counts sharing it) satisfies
    ``4 z SMALL_N_MARGIN <= n``. Used when the default share is too small
    for :func:`scales_estimable`: spending more of the budget on the scales
    beats assuming standardized data (:func:`default_scales`), which wrecks
    fits on data in natural units (e.g. targets in the hundreds).

    Parameters
    ----------
    mu : float
        GDP budget of the fit.
    n : int
    n_counts : int
        Counts of the scale quantiles (``n_scales * RANGE_STEPS``).
    max_share : float
        Largest share allowed.

    Returns
    -------
    float or None
        The share, or ``None`` if it would exceed ``max_share``.

    Examples
    --------
    >>> round(small_n_scale_share(0.25, 400, 40, 0.5), 4)
    0.256
    >>> small_n_scale_share(0.25, 100, 40, 0.5) is None
    True
    """
    if math.isinf(mu):
        return 0.0
    z_max = float(n) / (4.0 * SMALL_N_MARGIN)
    share = float(n_counts) / (mu * z_max) ** 2
    return share if share <= max_share else None


def default_scales(d, loss):
    """Public scales for standardized data, used when ``n`` is too small.

    Row norm ``2 sqrt(d)`` (rows of ``d`` unit-variance entries have norm
    about ``sqrt(d)``) and, for the squared loss, ``|y| <= 3``.

    Parameters
    ----------
    d : int
    loss : _GLMLoss

    Returns
    -------
    row_bound : float
    target_bound : float or None

    Examples
    --------
    >>> from skdp.losses import SquaredLoss
    >>> default_scales(4, SquaredLoss())
    (4.0, 3.0)
    """
    return 2.0 * math.sqrt(d), (3.0 if scales_needed(loss) == 2 else None)


def scales_needed(loss):
    """Number of scale quantiles :func:`private_scales` releases for ``loss``.

    Parameters
    ----------
    loss : _GLMLoss

    Returns
    -------
    int
        2 for an unbounded derivative (squared), else 1.

    Examples
    --------
    >>> from skdp.losses import LogisticLoss, SquaredLoss
    >>> scales_needed(LogisticLoss()), scales_needed(SquaredLoss())
    (1, 2)
    """
    return 2 if math.isinf(loss.derivative_bound) else 1
