"""The one result type of the heavy-tailed solvers.

Every solver of the family (:func:`~skdp.solvers.heavy_tailed.gd.clipped_dp_gd`,
:func:`~skdp.solvers.heavy_tailed.known_lipschitz.known_lipschitz`,
:func:`~skdp.solvers.heavy_tailed.onepass.onepass_clipped_dp_sgd`,
:func:`~skdp.solvers.heavy_tailed.localized.localized_dp_sgd`,
:func:`~skdp.solvers.heavy_tailed.multinomial.multinomial_dp_gd` and
:func:`~skdp.solvers.heavy_tailed.multinomial.ovr_dp_gd`) returns a
:class:`HeavyTailedResult`: the parameters in the data's units, the releases
an estimator reports (clip levels, step sizes, feature scale, truncation
level) and the plan that paid for them. Entries a solver does not release
stay ``None`` (the feature scale is ``1`` when it is not released).
"""

from dataclasses import dataclass

import numpy as np

__all__ = ["HeavyTailedResult"]


@dataclass
class HeavyTailedResult:
    """Output of a heavy-tailed solver (every entry is a private release or public).

    Attributes
    ----------
    coef : ndarray of shape (d,) or (d, K)
        Parameters in the data's units, the intercept entry (row for the
        softmax model) last when ``fit_intercept``.
    clip_levels : ndarray
        Clip level of each gradient release (shape per solver: ``(T,)``
        full batch, ``(n_phases,)`` one pass, ``(n_phases, n_splits, T)``
        localized).
    step_sizes : ndarray
        Step size of each step, same shape as ``clip_levels``.
    n_iter : int
        Gradient steps run.
    feature_scale : float, default=1.0
        Private feature scale ``s`` (1 when not released).
    truncation : float, optional
        Truncation level of Algorithm 4 (full-batch solvers).
    target_scale : float, optional
        Private target scale (``known_lipschitz`` warm start).
    stage_coefs : list of ndarray, optional
        Averages of the stages of a ridge path (``penalties``).
    row_caps : ndarray, optional
        Smoothness-guard row norm of each phase (one-pass solver).
    phase_sizes : tuple of int, optional
        Rows per phase (one-pass solver).
    regularization : ndarray, optional
        ``lambda_i`` of each phase (localized solver).
    fit_intercept : bool, default=False
        Whether the last entry (row) of ``coef`` is the intercept.
    plan : object, optional
        The public plan the run was accounted with.

    Examples
    --------
    >>> import numpy as np
    >>> res = HeavyTailedResult(np.array([2.0, -1.0, 0.5]), np.ones(3), np.ones(3), 3,
    ...                         fit_intercept=True)
    >>> res.weights, res.intercept
    (array([ 2., -1.]), 0.5)
    """

    coef: np.ndarray
    clip_levels: np.ndarray
    step_sizes: np.ndarray
    n_iter: int
    feature_scale: float = 1.0
    truncation: float | None = None
    target_scale: float | None = None
    stage_coefs: list | None = None
    row_caps: np.ndarray | None = None
    phase_sizes: tuple | None = None
    regularization: np.ndarray | None = None
    fit_intercept: bool = False
    plan: object = None

    @property
    def weights(self):
        """Coefficients without the intercept, in scikit-learn's layout.

        ``(d,)`` for a scalar model, ``(K, d)`` (a view of ``coef``) for
        the softmax model.
        """
        coef = self.coef[:-1] if self.fit_intercept else self.coef
        return coef.T if np.ndim(coef) == 2 else coef

    @property
    def intercept(self):
        """The intercept: a float, or ``(K,)`` for the softmax model (0 without one)."""
        if np.ndim(self.coef) == 2:
            if self.fit_intercept:
                return self.coef[-1].copy()
            return np.zeros(self.coef.shape[1])
        return float(self.coef[-1]) if self.fit_intercept else 0.0
