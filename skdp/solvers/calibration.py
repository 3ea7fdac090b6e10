"""Private recalibration of a binary linear classifier's logits.

A noisy model can be worse than predicting the base rate: gradient noise
inflates the coefficients' norm (over-confident logits) and clipping biases
the intercept toward the majority class. Both show in the training log-loss,
because the noise of a private fit is independent of the data. This module
refits the two numbers of Platt scaling, ``p(x) = sigmoid(a z(x) + b)`` with
``z`` the fitted logit, on a noisy histogram of the training logits split by
label: one Gaussian release, whatever the number of rows, after which the
fit is post-processing. ``a = 0`` is the base-rate predictor, so the
calibrated model can fall back to it; ``a = 1, b = 0`` leaves the model as it
was, and is kept unless the noisy histogram shows a gain above its own noise.

With no noise (``epsilon=inf``) nothing is released and the model is left
as it is: a logistic fit with an intercept at its optimum is already
calibrated in this sense (the first-order conditions of ``a`` and ``b``);
``epsilon=inf`` must reach that optimum, which the suite runner checks.
"""

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, log_softmax

from ..privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    gaussian_mechanism,
    noisy_histogram_event,
)
from ._distributed import record_sum

__all__ = [
    "LOGIT_EDGES",
    "calibration_event",
    "logit_cell_counts",
    "calibrate_from_counts",
    "private_logit_calibration",
    "SHRINK_LEVELS",
    "shrinkage_event",
    "BRIER_BOUND",
    "brier_sums",
    "choose_shrinkage",
    "private_softmax_shrinkage",
]

#: Public bin edges of the logit, in nats: unit bins on ``[-6, 6]`` and two
#: open tails (probabilities below 0.25% or above 99.75%). Within a unit bin
#: a logit differs from the bin's centre by at most 0.5, which moves a
#: probability by at most ``0.5 p (1 - p)``. Wider outer bins (out to
#: ``+-1000``) were tried: a noise-only count in one of them passes the
#: ``KEEP_Z`` filter about once in two fits and, at a centre of 70 or 200,
#: drags the scale to 0.
LOGIT_EDGES = np.arange(-6.0, 6.0 + 0.5, 1.0)
#: Largest scale ``a``: the calibration may sharpen under-converged logits
#: (early stopping shrinks them) up to four times.
MAX_LOGIT_SCALE = 4.0
#: A bin enters the fit only if its noisy row count exceeds this many noise
#: standard deviations: empty bins then add no phantom rows (a noise value
#: above 2 standard deviations has probability 2.3%).
KEEP_Z = 2.0
#: The calibration replaces the model only if its gain in the noisy
#: histogram's log-loss exceeds this many standard deviations of the gain's
#: noise (so a well-calibrated model is not moved by noise).
ACCEPT_Z = 1.0

#: Levels ``t`` of the softmax fit's shrinkage toward the private base rates,
#: ``log p_t = t (X W + b) + (1 - t) log(prior)`` up to normalisation; ``t = 0``
#: is the constant predictor, ``t = 1`` the fit.
SHRINK_LEVELS = (0.0, 0.125, 0.25, 0.5, 0.75)
#: Largest Brier score of one row, ``sum_k (p_k - [k = y])**2 <= 2``: the
#: released sums' replace-one L2 sensitivity is ``BRIER_BOUND
#: sqrt(len(SHRINK_LEVELS) + 1)``. The levels are compared on the Brier score
#: because it is bounded and proper. A capped cross-entropy (cap
#: ``log K + 1``, tried first on the development half) rewards confident
#: scores: a fit that put all its weight on the majority class paid the cap
#: on the other rows only, beat the constant predictor there, and kept a
#: log-loss of 20 (gsoep_school, raw view, epsilon = 1).
BRIER_BOUND = 2.0
#: Share of the shrinkage's ``mu**2`` spent on the class counts (the prior);
#: the rest pays for the Brier sums.
COUNT_SHARE = 0.3


def calibration_event(noise_multiplier):
    """Event of :func:`private_logit_calibration`: one noisy histogram.

    Parameters
    ----------
    noise_multiplier : float

    Returns
    -------
    GaussianDpEvent

    Examples
    --------
    >>> calibration_event(2.0).noise_multiplier
    2.0
    """
    return noisy_histogram_event(noise_multiplier)


def _cell_counts(X, y, coef, intercept, edges):
    with np.errstate(all="ignore"):
        z = np.asarray(X @ coef).ravel() + intercept
    z = np.where(np.isnan(z), 0.0, z)
    cells = 2 * np.searchsorted(edges, z) + (np.asarray(y).ravel() > 0)
    return np.bincount(cells, minlength=2 * (len(edges) + 1)).astype(np.float64)


def logit_cell_counts(X, y, coef, intercept, edges=LOGIT_EDGES):
    """Counts of the rows per (logit bin, label) cell (exact; a per-record sum).

    Parameters
    ----------
    X : ndarray, sparse matrix or dask array of shape (n, d)
        The rows the model was fitted on (after its public per-record map).
    y : ndarray of shape (n,)
        Labels, positive class where ``y > 0``.
    coef : ndarray of shape (d,)
    intercept : float
    edges : ndarray, default=LOGIT_EDGES

    Returns
    -------
    counts : ndarray of shape (2 * (len(edges) + 1),)
        Cell ``2 k + label``: rows whose logit falls in bin ``k``.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[0.0], [0.2], [9.0]])
    >>> counts = logit_cell_counts(X, np.array([0, 1, 1]), np.array([1.0]), 0.0)
    >>> cells = np.flatnonzero(counts)  # cell 2 k + label of bin k
    >>> [(int(c) // 2, int(c) % 2) for c in cells] == [
    ...     (int(np.searchsorted(LOGIT_EDGES, z)), label)
    ...     for z, label in ((0.0, 0), (0.2, 1), (9.0, 1))]
    True
    """
    coef = np.asarray(coef, dtype=np.float64)
    return record_sum(_cell_counts, (X, y), coef, float(intercept), np.asarray(edges))


def calibrate_from_counts(counts, noise_std, edges=LOGIT_EDGES):
    """Platt scaling ``(a, b)`` fitted on (noisy) cell counts; post-processing.

    Bin ``k`` has centre ``c_k`` (the open tails: the outer edge -+ half the
    outermost bin's width), noisy
    row count ``m_k = h0_k + h1_k`` and positives ``h1_k``. Bins with ``m_k``
    above ``KEEP_Z`` times its noise standard deviation enter the binned
    log-loss ``sum_k m_k softplus(s_k) - h1_k s_k``, ``s_k = a c_k + b``
    (linear in ``h1_k``, so its noise enters linearly), with ``h1_k`` clipped to
    ``[0, m_k]`` and ``0 <= a <= MAX_LOGIT_SCALE`` (that clip and the
    ``KEEP_Z`` filter bias the fit a little toward bins with many rows). The fit replaces
    ``(1, 0)`` only if it lowers that loss by more than ``ACCEPT_Z`` standard
    deviations of the noise of the difference.

    Parameters
    ----------
    counts : ndarray of shape (2 * (len(edges) + 1),)
        Cell counts (:func:`logit_cell_counts`), noise added.
    noise_std : float
        Standard deviation of the noise of each cell (0: exact counts).
    edges : ndarray, default=LOGIT_EDGES

    Returns
    -------
    scale, shift : float
        The calibrated logit is ``scale * z + shift``.

    Examples
    --------
    >>> import numpy as np
    >>> counts = np.zeros(2 * (len(LOGIT_EDGES) + 1))
    >>> k = int(np.searchsorted(LOGIT_EDGES, 0.0))  # bin (-1, 0]; bin k + 1 is (0, 1]
    >>> counts[2 * k : 2 * k + 4] = [40, 10, 10, 40]  # positive rates 0.2 and 0.8
    >>> a, b = calibrate_from_counts(counts, 0.0)
    >>> round(a, 2), round(b, 2)
    (2.77, 0.0)
    """
    edges = np.asarray(edges, dtype=np.float64)
    low, high = (edges[1] - edges[0]) / 2, (edges[-1] - edges[-2]) / 2
    centres = np.concatenate(
        [[edges[0] - low], (edges[:-1] + edges[1:]) / 2, [edges[-1] + high]]
    )
    h0, h1 = counts[0::2], counts[1::2]
    m = h0 + h1
    keep = m > KEEP_Z * math.sqrt(2.0) * noise_std
    if not keep.any():
        return 1.0, 0.0
    c, m, h1 = centres[keep], m[keep], np.clip(h1[keep], 0.0, m[keep])

    def loss(v):
        s = v[0] * c + v[1]
        p = expit(s)
        value = np.sum(m * np.logaddexp(0.0, s) - h1 * s)
        residual = m * p - h1
        return value, np.array([residual @ c, residual.sum()])

    fit = minimize(
        loss,
        np.array([1.0, 0.0]),
        jac=True,
        method="L-BFGS-B",
        bounds=[(0.0, MAX_LOGIT_SCALE), (None, None)],
    )
    a, b = (float(v) for v in fit.x)
    if noise_std > 0:
        s0, s1 = c, a * c + b
        gain_rows = np.logaddexp(0.0, s0) - np.logaddexp(0.0, s1)  # per row of a bin
        gain_pos = gain_rows - (s0 - s1)  # per positive row
        gain = np.sum((m - h1) * gain_rows + h1 * gain_pos)
        # h0_k and h1_k carry independent noise of standard deviation noise_std
        spread = noise_std * math.sqrt(np.sum(gain_rows**2 + gain_pos**2))
        if not gain > ACCEPT_Z * spread:
            return 1.0, 0.0
    return a, b


def private_logit_calibration(X, y, coef, intercept, noise_multiplier, *, rng):
    """Private Platt scaling ``(scale, shift)`` of a binary linear model.

    Releases the (logit bin, label) cell counts of the training rows with
    Gaussian noise: replacing one record moves one count down and one up, so
    the replace-one L2 sensitivity is ``sqrt(2)`` (:func:`calibration_event`).
    The logits are those of the released ``coef`` and ``intercept`` on the
    rows after the fit's public per-record map (the feature-norm clip and
    the released centre; rows that Algorithm 4 truncated for the gradient
    steps are counted with their logits like the others). The rest
    (:func:`calibrate_from_counts`) is post-processing.

    Parameters
    ----------
    X : ndarray, sparse matrix or dask array of shape (n, d)
    y : ndarray of shape (n,)
        Labels, positive class where ``y > 0``.
    coef : ndarray of shape (d,)
    intercept : float
    noise_multiplier : float
        ``0``: no release, the model is returned unchanged.
    rng : numpy.random.Generator

    Returns
    -------
    scale, shift : float
        The calibrated logit is ``scale * (X @ coef + intercept) + shift``;
        ``(1.0, 0.0)`` leaves the model unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20_000, 2)); y = (X[:, 0] + rng.logistic(size=20_000) > 2)
    >>> a, b = private_logit_calibration(X, y, np.array([3.0, 0.0]), 0.0, 1.0, rng=rng)
    >>> round(a, 1), round(b, 1)
    (0.3, -2.0)
    """
    if noise_multiplier == 0:
        return 1.0, 0.0
    counts = logit_cell_counts(X, y, coef, intercept)
    noisy = gaussian_mechanism(
        counts, math.sqrt(2.0), noise_multiplier, rng=rng, label="logit histogram"
    )
    return calibrate_from_counts(noisy, noise_multiplier * math.sqrt(2.0))


def shrinkage_event(mu):
    """Event of :func:`private_softmax_shrinkage` with GDP budget ``mu``.

    ``COUNT_SHARE`` of ``mu**2`` for the class counts, the rest for the
    Brier sums.

    Parameters
    ----------
    mu : float

    Returns
    -------
    ComposedDpEvent
        Of the counts' and the sums' Gaussian events.

    Examples
    --------
    >>> event = shrinkage_event(1.0)
    >>> [round(e.noise_multiplier, 3) for e in event.events]
    [1.826, 1.195]
    """
    z_counts, z_sums = _shrinkage_multipliers(mu)
    return ComposedDpEvent([noisy_histogram_event(z_counts), GaussianDpEvent(z_sums)])


def _shrinkage_multipliers(mu):
    budget = Budget(mu)
    return (
        budget.share(COUNT_SHARE).noise_multiplier(),
        budget.share(1.0 - COUNT_SHARE).noise_multiplier(),
    )


def _class_counts(labels, n_classes):
    return np.bincount(np.asarray(labels), minlength=n_classes).astype(np.float64)


def _brier_sums(X, labels, W, b, log_prior, levels):
    with np.errstate(all="ignore"):
        scores = np.asarray(X @ W) + b
        rows = np.arange(scores.shape[0])
        labels = np.asarray(labels)
        out = np.empty(len(levels))
        for j, t in enumerate(levels):
            p = np.exp(log_softmax(t * scores + (1.0 - t) * log_prior, axis=1))
            brier = np.sum(p * p, axis=1) - 2.0 * p[rows, labels] + 1.0
            # a non-finite score (an extreme row) counts as the worst score
            brier = np.nan_to_num(brier, nan=BRIER_BOUND)
            out[j] = np.sum(np.clip(brier, 0.0, BRIER_BOUND))
    return out


def brier_sums(X, labels, W, b, log_prior, levels):
    """Sums over the rows of the Brier score of each shrinkage level ``t``.

    The row's Brier score under ``p = softmax(t (x W + b) + (1 - t)
    log_prior)`` is ``sum_k (p_k - [k = y])**2``, in ``[0, BRIER_BOUND]``, so
    replacing one record moves the vector of sums by at most ``BRIER_BOUND
    sqrt(len(levels))`` in L2 (a per-record sum: numpy, sparse and dask give
    the same).

    Parameters
    ----------
    X : ndarray, sparse matrix or dask array of shape (n, d)
    labels : ndarray of int of shape (n,)
    W : ndarray of shape (d, K)
    b : ndarray of shape (K,)
    log_prior : ndarray of shape (K,)
    levels : sequence of float

    Returns
    -------
    ndarray of shape (len(levels),)

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[30.0], [-30.0]]); W = np.array([[1.0, -1.0]])
    >>> sums = brier_sums(X, np.array([1, 1]), W, np.zeros(2),
    ...                   np.log([0.5, 0.5]), levels=(0.0, 1.0))
    >>> np.round(sums, 3)  # the constant's 2 * 0.5; the fit: one row wrong
    array([1., 2.])
    """
    return record_sum(
        _brier_sums,
        (X, labels),
        np.asarray(W, dtype=np.float64),
        np.asarray(b, dtype=np.float64),
        np.asarray(log_prior, dtype=np.float64),
        tuple(float(t) for t in levels),
    )


def choose_shrinkage(noisy_sums, levels=SHRINK_LEVELS):
    """The level of the lowest noisy sum (post-processing).

    Every sum carries noise of the same scale, so the choice is not biased
    toward any level; a margin in favour of the fit (as the binary Platt
    scaling keeps, :data:`ACCEPT_Z`) kept fits that lost to the constant
    predictor on the suite's development half (gsoep_school at epsilon = 1:
    1.42x its log-loss, against 0.96x without the margin).

    Parameters
    ----------
    noisy_sums : ndarray of shape (len(levels) + 1,)
        One sum per level of ``levels``, and the fit's (``t = 1``) last.
    levels : sequence of float, default=SHRINK_LEVELS

    Returns
    -------
    float

    Examples
    --------
    >>> choose_shrinkage(np.array([50.0, 20.0, 90.0, 99.0, 100.0, 100.0]))
    0.125
    >>> choose_shrinkage(np.array([95.0, 96.0, 99.0, 99.0, 100.0, 90.0]))
    1.0
    """
    return float((tuple(levels) + (1.0,))[int(np.argmin(noisy_sums))])


def private_softmax_shrinkage(X, labels, W, b, n_classes, mu, *, rng):
    """Private shrinkage of a softmax model toward private base rates.

    A noisy softmax fit can lose to the constant predictor: noise inflates
    its scores. Two Gaussian releases, then post-processing:

    1. the class counts (replace-one L2 sensitivity ``sqrt(2)``), from which
       the prior is ``max(count, 1)`` normalised;
    2. for each level ``t`` of :data:`SHRINK_LEVELS` and for the fit
       (``t = 1``), the sum of the rows' Brier scores of the model shrunk
       to ``t`` (:func:`brier_sums`).

    The chosen level (:func:`choose_shrinkage`) gives the scores
    ``t (x W + b) + (1 - t) log(prior)``, a linear model again.

    Parameters
    ----------
    X : ndarray, sparse matrix or dask array of shape (n, d)
        The rows the model was fitted on (after its public per-record map).
    labels : ndarray of int of shape (n,)
    W : ndarray of shape (d, K)
    b : ndarray of shape (K,)
    n_classes : int
    mu : float
        GDP budget of the two releases (:func:`shrinkage_event`).
    rng : numpy.random.Generator

    Returns
    -------
    scale : float
        The level ``t``.
    shift : ndarray of shape (K,)
        ``(1 - t) log(prior)``, added to the scaled scores.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 2)); labels = rng.integers(0, 3, size=5000)
    >>> W = 5.0 * rng.normal(size=(2, 3))  # scores of pure noise
    >>> t, shift = private_softmax_shrinkage(X, labels, W, np.zeros(3), 3, 1.0, rng=rng)
    >>> t
    0.0
    """
    z_counts, z_sums = _shrinkage_multipliers(mu)
    counts = record_sum(_class_counts, (labels,), int(n_classes))
    noisy = gaussian_mechanism(
        counts, math.sqrt(2.0), z_counts, rng=rng, label="class counts"
    )
    prior = np.maximum(noisy, 1.0)
    log_prior = np.log(prior / prior.sum())
    levels = tuple(SHRINK_LEVELS) + (1.0,)
    sums = brier_sums(X, labels, W, b, log_prior, levels)
    sensitivity = BRIER_BOUND * math.sqrt(len(levels))
    noisy_sums = gaussian_mechanism(
        sums, sensitivity, z_sums, rng=rng, label="shrinkage losses"
    )
    t = choose_shrinkage(noisy_sums)
    return t, (1.0 - t) * log_prior
