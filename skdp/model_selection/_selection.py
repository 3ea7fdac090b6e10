"""The selection mechanism: a random number of trials, the best one released.

Liu and Talwar (2019) and Papernot and Steinke (2022): run a private trial
``K`` times, ``K`` drawn independently of the data, and release only the
trial with the best (noisy) score. Hiding ``K`` and the other trials is what
makes the cost of the whole search close to the cost of one trial; the
accounting is :class:`skdp.privacy.PrivateSelectionDpEvent`.
"""

import math

import numpy as np

from ..privacy import truncated_negative_binomial_gamma

__all__ = ["draw_n_trials", "BestTrial", "select_best"]


def draw_n_trials(rng, mean, shape):
    """Draw the number of trials ``K`` (independent of the data).

    Parameters
    ----------
    rng : numpy.random.Generator
        The search's generator.
    mean : float
        ``E[K]``, at least 1.
    shape : float
        ``inf``: Poisson (``K`` may be 0); ``0``: logarithmic; ``1``:
        geometric; otherwise the negative binomial with this shape, truncated
        to ``K >= 1``.

    Returns
    -------
    K : int

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> k = draw_n_trials(np.random.default_rng(0), 10.0, 1.0)
    >>> k >= 1
    True
    """
    if math.isinf(shape):
        return int(rng.poisson(mean))
    gamma = truncated_negative_binomial_gamma(mean, shape)
    if gamma >= 1.0:
        return 1
    if shape == 0:
        # P(K = k) proportional to (1 - gamma)^k / k.
        return int(rng.logseries(1.0 - gamma))
    # P(K = k) proportional to (1 - gamma)^k C(k + shape - 1, k), k >= 1:
    # numpy's negative binomial (failures before `shape` successes of
    # probability gamma), redrawn while 0 (a data-independent rejection).
    while True:
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


class BestTrial:
    """Keep the trial with the smallest noisy loss (ties: the first one).

    Only the kept trial is ever released; the others are dropped.

    Examples
    --------
    >>> best = BestTrial()
    >>> best.offer(0.5, "a"); best.offer(0.2, "b"); best.offer(0.3, "c")
    >>> best.loss, best.payload
    (0.2, 'b')
    """

    def __init__(self):
        self.loss = np.inf
        self.payload = None

    def offer(self, noisy_loss, payload):
        """Keep ``payload`` if ``noisy_loss`` beats the current best."""
        if self.payload is None or noisy_loss < self.loss:
            self.loss = float(noisy_loss)
            self.payload = payload


def select_best(rng, n_candidates, mean, shape, run_trial):
    """Run ``K`` trials on random candidates and keep the best one.

    Parameters
    ----------
    rng : numpy.random.Generator
        The search's generator: it draws ``K`` and every trial's candidate.
    n_candidates : int
    mean, shape : float
        Distribution of ``K`` (see :func:`draw_n_trials`).
    run_trial : callable
        ``run_trial(candidate_index, rng) -> (noisy_loss, payload)``.

    Returns
    -------
    best : BestTrial
        ``best.payload`` is ``(candidate_index, payload)`` of the released
        trial, or ``None`` if ``K = 0``.

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> best = select_best(rng, 3, 5.0, 1.0, lambda c, r: (float(c), None))
    >>> best.payload[0] == best.loss
    True
    """
    best = BestTrial()
    for _ in range(draw_n_trials(rng, mean, shape)):
        c = int(rng.integers(n_candidates))
        loss, payload = run_trial(c, rng)
        best.offer(loss, (c, payload))
    return best
