"""Private intercept correction after a heavily clipped regression run.

Clipping many per-sample gradients turns least squares into a robust
(Huber-type) M-estimator. With features symmetric about their centre the
slopes of that estimator are still those of least squares, but with skewed
noise its intercept is a robust location of the residuals, not their mean:
the least-squares risk then pays the squared bias. The correction releases
the mean residual once, clipped at a private high quantile of the absolute
residuals, and moves the intercept by it:

1. ``R``: ``RESIDUAL_SLACK`` times the private ``level`` quantile of
   ``|r_i|``, ``r_i = y_i - <x_i, w> - b``, with ``level = 1 - max(tail,
   4 z_count / n)`` (the margin of
   :func:`~skdp.solvers.heavy_tailed.bounds.scale_level`; a noisy bisection,
   :func:`~skdp.solvers.heavy_tailed.bounds.noisy_log_quantile`,
   ``RANGE_STEPS`` counts of multiplier ``z_count``, replace-one sensitivity
   1 each);
2. ``sum_i clip(r_i, -R, R) + N(0, (2 R z_mean)**2)`` (replace-one
   sensitivity ``2 R``), divided by ``n``, is added to ``b``.

Both are full-batch Gaussian releases (:attr:`InterceptPlan.event`). The
model ``(w, b)`` is an earlier release, so the residuals are a per-record map.

With ``shrink=True`` (:func:`shrink_shift`, post-processing of the two
releases) the shift is shrunk towards 0 by a positive-part James-Stein
factor ``max(0, 1 - se**2 / shift**2)``, ``se`` a public-rule bound on its
standard error from ``R`` and the noise: under symmetric noise the robust
intercept is already the least-squares one and the shift is noise (and
the mean residual is a less efficient location than the robust one), under
skewed noise the shift is many standard errors and is kept.
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import norm

from ...privacy import ComposedDpEvent, gaussian_noise, gaussian_steps
from .._distributed import as_float_records, is_dask_collection
from .bounds import RANGE_STEPS, noisy_log_quantile
from .common import noise_std, split_gdp

__all__ = [
    "InterceptPlan",
    "make_intercept_plan",
    "clipped_residual_sum",
    "intercept_shift",
    "shrink_shift",
]

#: Tail of the residual quantile that clips the mean (public).
RESIDUAL_TAIL = 0.01
#: The clip is this multiple of the quantile (public): little clipping bias
#: under skewed noise, and twice the noise of the quantile itself at most.
RESIDUAL_SLACK = 1.5


@dataclass(frozen=True)
class InterceptPlan:
    """Noise of one intercept correction (public, data independent).

    Parameters
    ----------
    z_count : float
        Multiplier of each of the ``RANGE_STEPS`` counts of the residual
        quantile.
    z_mean : float
        Multiplier of the clipped residual sum (sensitivity ``2 R``).
    tail : float, default=RESIDUAL_TAIL
        The clip ``R`` is ``RESIDUAL_SLACK`` times the ``1 - tail``
        quantile of ``|r_i|`` (a lower one if ``n`` cannot support it).
    """

    z_count: float
    z_mean: float
    tail: float = RESIDUAL_TAIL

    @property
    def event(self):
        """The correction as a DpEvent (counts, then the sum)."""
        return ComposedDpEvent(
            [gaussian_steps(self.z_count, RANGE_STEPS), gaussian_steps(self.z_mean)]
        )


def make_intercept_plan(mu, *, count_share=0.5, tail=RESIDUAL_TAIL):
    """Split a GDP budget ``mu`` between the residual quantile and the sum.

    Parameters
    ----------
    mu : float
        GDP budget of the correction (``inf``: no noise).
    count_share : float, default=0.5
        Share of ``mu**2`` for the quantile's counts.
    tail : float, default=RESIDUAL_TAIL

    Returns
    -------
    InterceptPlan

    Examples
    --------
    >>> from skdp.privacy import gdp_mu_of
    >>> round(gdp_mu_of(make_intercept_plan(0.2).event), 6)
    0.2
    """
    z_count, z_mean = split_gdp(
        mu, [(RANGE_STEPS, count_share), (1, 1.0 - count_share)]
    )
    return InterceptPlan(z_count, z_mean, tail)


def clipped_residual_sum(residuals, bound):
    """``sum_i clip(r_i, -bound, bound)``: replace-one sensitivity ``2 bound``.

    Parameters
    ----------
    residuals : ndarray of shape (n,)
    bound : float

    Returns
    -------
    float

    Examples
    --------
    >>> clipped_residual_sum(np.array([-5.0, 0.5, 9.0]), 1.0)
    0.5
    """
    r = as_float_records(residuals)
    if is_dask_collection(r):  # clipped per chunk on the workers, one sum back
        return float(r.map_blocks(_clipped, float(bound), dtype=float).sum().compute())
    return float(np.sum(_clipped(r, float(bound))))


def _clipped(r, bound):
    with np.errstate(all="ignore"):
        return np.clip(np.nan_to_num(r, nan=0.0), -bound, bound)


def _abs_finite(r):
    with np.errstate(all="ignore"):
        return np.nan_to_num(np.abs(r), nan=0.0, posinf=np.finfo(float).max)


def _quantile_level(plan, n):
    return 1.0 - min(0.5, max(plan.tail, 4.0 * plan.z_count / max(n, 1)))


def shrink_shift(shift, bound, plan, n):
    """Positive-part James-Stein shrinkage of a released shift (post-processing).

    ``se**2 = (R / (RESIDUAL_SLACK q))**2 / n + (2 R z_mean / n)**2``: the
    residuals' scale read off the released clip ``R`` as if they were
    Gaussian (``q`` the standard normal quantile of the residual quantile's
    level; heavier tails give a larger ``R``, so more shrinkage), plus the
    variance of the sum's noise. Returns ``shift * max(0, 1 - se**2 /
    shift**2)``.

    Parameters
    ----------
    shift : float
        Released mean residual (:func:`intercept_shift`).
    bound : float
        Released clip ``R``.
    plan : InterceptPlan
    n : int

    Returns
    -------
    float

    Examples
    --------
    >>> plan = make_intercept_plan(0.1)
    >>> shrink_shift(0.001, 3.0, plan, 10_000)  # within its noise: dropped
    0.0
    >>> round(shrink_shift(0.5, 3.0, plan, 10_000), 2)  # far above it: kept
    0.5
    """
    n = max(int(n), 1)
    if plan.z_count == 0 or shift == 0.0:
        return float(shift)
    q = float(norm.ppf(1.0 - (1.0 - _quantile_level(plan, n)) / 2.0))
    sigma = bound / (RESIDUAL_SLACK * q)
    se2 = sigma**2 / n + (2.0 * bound * plan.z_mean / n) ** 2
    return float(shift * max(0.0, 1.0 - se2 / shift**2))


def intercept_shift(residuals, plan, rng):
    """Private mean residual, clipped at a private quantile of ``|r_i|``.

    Parameters
    ----------
    residuals : ndarray of shape (n,)
        ``y_i - <x_i, w> - b`` at a released model.
    plan : InterceptPlan
    rng : numpy.random.Generator

    Returns
    -------
    shift : float
        To be added to the intercept.
    bound : float
        The private clip ``R`` (a release).

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> r = rng.exponential(size=10_000) - 0.7  # mean 0.3, median about -0.01
    >>> shift, R = intercept_shift(r, make_intercept_plan(np.inf), rng)
    >>> bool(abs(shift - r.mean()) < 1e-12), round(shift, 1)  # no noise: the mean
    (True, 0.3)
    """
    r = as_float_records(residuals)  # dask: stays on the workers
    n = r.size
    absr = (
        r.map_blocks(_abs_finite, dtype=float)
        if is_dask_collection(r)
        else _abs_finite(r)
    )
    if plan.z_count == 0:
        bound = noisy_log_quantile(absr, 1.0, 0.0, rng)
    else:
        level = _quantile_level(plan, n)
        bound = RESIDUAL_SLACK * noisy_log_quantile(absr, level, plan.z_count, rng)
    total = clipped_residual_sum(r, bound)
    total += float(
        gaussian_noise(
            rng,
            noise_std(2.0 * bound, plan.z_mean),
            sensitivity=2.0 * bound,
            label="clipped residual sum",
        )
    )
    return total / max(n, 1), float(bound)
