"""Is there any signal in the released statistics? A chi-square test.

The bilevel ridge solver adds a margin of noise standard deviations to the
released validation loss, so that ``alpha`` moves to where the part models
are mostly privacy noise only on clear evidence. Where the data hold no
detectable signal that margin is what keeps the model near the constant one;
where they do, it costs accuracy (benchmarks: 1.3-1.5 times the excess risk
of no margin). The dip of the validation loss cannot tell the two cases
apart (its size in noise units overlaps), but a test on the pooled
statistics can: it sees all rows at once and needs no model.

Under ``H0: coef = 0`` (the target does not depend on the features) the
centred cross-moment ``c = sum (x - xbar) (y - ybar)`` of the pooled release
is the sum of a statistical part, of covariance ``var(y) S`` given the
features (``S`` the centred scatter), and of the privacy noise, of known
covariance. So ``Q = c^T (V + var(y) S)^{-1} c`` is about chi-square with
``d`` degrees of freedom, and a large ``Q`` is evidence of signal. ``var(y)``
comes from the released ``y^T y`` (an upper confidence value, which only
lowers ``Q``), ``S`` from the released Gram matrix, ``V`` from the public
noise scales (to first order in the noise, with the centring's own noise).
Everything is post-processing of the release.
"""

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import chi2

__all__ = ["SignalTest", "signal_test"]


@dataclass(frozen=True)
class SignalTest:
    """Result of :func:`signal_test`.

    Attributes
    ----------
    statistic : float
        ``Q``.
    dof : int
        Degrees of freedom (number of features).
    pvalue : float
        Chi-square tail probability of ``Q``.
    """

    statistic: float
    dof: int
    pvalue: float


def signal_test(release, *, moment_var, gram_var, target_sq_var):
    """Chi-square test of ``coef = 0`` on released ridge statistics.

    Parameters
    ----------
    release : RawStatistics
        Released statistics of all rows (normalized units: ``|y| <= 1``),
        with ``target_sq``.
    moment_var, gram_var, target_sq_var : float
        Noise variance of each entry of the moment vector, of each
        upper-triangle entry of the Gram matrix, and of ``y^T y``.

    Returns
    -------
    SignalTest

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.bilevel.ridge.stats import exact_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 3)) / 3
    >>> flat = exact_statistics(X, 0.3 * rng.normal(size=500), 1.0)
    >>> slope = exact_statistics(X, X @ [0.5, 0.0, 0.0] + 0.3 * rng.normal(size=500), 1.0)
    >>> noise = dict(moment_var=1.0, gram_var=1.0, target_sq_var=1.0)
    >>> bool(signal_test(flat, **noise).pvalue > 0.01)
    True
    >>> bool(signal_test(slope, **noise).pvalue < 1e-6)
    True
    """
    if release.target_sq is None:
        raise ValueError("The signal test needs the released y^T y.")
    centred = release.centered()
    n, d = centred.weight, centred.cross.size
    c = release.intercept_scaling
    # var(y): released second moment minus the released mean's square, raised
    # by two noise standard deviations and kept within the target bound.
    mean_sq = centred.mean_y**2 if centred.fit_intercept else 0.0
    var_y = release.target_sq / n - mean_sq + 2.0 * math.sqrt(target_sq_var) / n
    var_y = float(np.clip(var_y, 0.0, 1.0))
    # Noise of the centred cross-moment m_x - n xbar ybar, to first order:
    # e_x - xbar e_c / c - ybar E_{x,c} / c.
    cov = moment_var * np.eye(d)
    if centred.fit_intercept:
        cov += moment_var * np.outer(centred.mean_x, centred.mean_x) / c**2
        cov += gram_var * (centred.mean_y / c) ** 2 * np.eye(d)
    cov += var_y * centred.scatter
    q = float(centred.cross @ np.linalg.lstsq(cov, centred.cross, rcond=None)[0])
    return SignalTest(q, d, float(chi2.sf(q, d)))
