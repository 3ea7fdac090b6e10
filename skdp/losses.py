"""Generalised linear model losses with per-sample clipped gradients.

Each loss is a function ``loss(z, y)`` of the linear prediction ``z = x @ w``
and the target ``y``. For a GLM, the per-sample gradient in ``w`` is the
scalar derivative times the row, ``loss'(z_i, y_i) x_i``, so clipping it to
norm ``C`` is the same as clipping the scalar to ``C / ||x_i||``. That is how
skdp clips: one vectorised pass, no per-sample Python loop, and the clipped
gradient stays a multiple of the row (which the one-pass analysis of Asi,
Liu and Tian needs).

Conventions:

- :class:`SquaredLoss`: ``(z - y)**2 / 2``.
- :class:`HuberLoss`: ``r**2 / 2`` for ``|r| <= tau`` and
  ``tau |r| - tau**2 / 2`` otherwise, ``r = z - y``.
- :class:`LogisticLoss`: ``log(1 + exp(-y z))`` with ``y`` in ``{-1, +1}``.
"""

import numpy as np
from scipy.special import expit

from .utils._validation import safe_row_norms

__all__ = ["SquaredLoss", "HuberLoss", "LogisticLoss", "get_loss"]


class _GLMLoss:
    """Base class: subclasses define ``value``, ``derivative`` and constants."""

    #: Upper bound on the second derivative in ``z`` (smoothness).
    curvature_bound = np.inf
    #: Upper bound on ``|derivative|`` over all ``z`` and ``y`` (``inf`` if none).
    derivative_bound = np.inf
    #: Whether ``y`` holds labels in ``{-1, +1}`` rather than real targets
    #: (no target scale or median to estimate).
    labels = False
    #: The loss's number in the compiled clipped-gradient kernels.
    kernel_code = None

    def value(self, z, y):
        raise NotImplementedError

    def derivative(self, z, y):
        raise NotImplementedError

    def kernel_args(self):
        """``(code, tau)`` of this loss for the compiled kernels.

        Returns
        -------
        code : int
            0 squared, 1 Huber, 2 logistic.
        tau : float
            Huber threshold (0 otherwise).
        """
        if self.kernel_code is None:
            raise TypeError(f"No compiled kernel for the loss {self!r}.")
        return self.kernel_code, 0.0

    def lipschitz_on(self, radius):
        """Whether the loss is Lipschitz in ``w`` on the ball of radius ``radius``.

        Parameters
        ----------
        radius : float
            Domain radius (``inf`` allowed).

        Returns
        -------
        bool
            False only for an unbounded derivative on an unbounded domain.
        """
        return not (np.isinf(radius) and np.isinf(self.derivative_bound))

    def row_lipschitz_bounds(self, row_norms, y, radius):
        """Per-row Lipschitz bounds of ``w -> loss(<a, w>, y)`` on ``{||w|| <= R}``.

        Parameters
        ----------
        row_norms : ndarray of shape (n,)
        y : ndarray of shape (n,)
        radius : float
            Domain radius ``R`` (``inf`` allowed).

        Returns
        -------
        ndarray of shape (n,)
        """
        raise NotImplementedError

    def mean_value(self, X, y, coef, intercept=0.0):
        """Mean loss of the linear model ``X @ coef + intercept``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
        y : ndarray of shape (n,)
        coef : ndarray of shape (d,)
        intercept : float, default=0.0

        Returns
        -------
        float
        """
        return float(np.mean(self.value(X @ coef + intercept, y)))

    def gradient(self, X, y, coef):
        """Mean (unclipped) gradient in ``coef``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
        y : ndarray of shape (n,)
        coef : ndarray of shape (d,)

        Returns
        -------
        ndarray of shape (d,)
        """
        return X.T @ self.derivative(X @ coef, y) / X.shape[0]

    def clipped_derivatives(self, X, y, coef, clip_norm, row_norms=None):
        """Scalar derivatives clipped so that each ``s_i x_i`` has norm <= ``clip_norm``.

        Parameters
        ----------
        X : ndarray of shape (n, d)
        y : ndarray of shape (n,)
        coef : ndarray of shape (d,)
        clip_norm : float
            Per-sample gradient norm bound ``C``; ``inf`` disables clipping.
        row_norms : ndarray of shape (n,), optional
            Precomputed ``||x_i||``.

        Returns
        -------
        s : ndarray of shape (n,)
            Clipped derivatives; the clipped gradients are ``s[:, None] * X``.
        """
        s = self.derivative(X @ coef, y)
        if np.isinf(clip_norm):
            return s
        if row_norms is None:
            row_norms = safe_row_norms(X)
        with np.errstate(all="ignore"):
            cap = np.where(row_norms > 0, clip_norm / row_norms, np.inf)
        return np.clip(s, -cap, cap)

    def clipped_gradients(self, X, y, coef, clip_norm, row_norms=None):
        """Per-sample gradients clipped to ``clip_norm``, shape (n, d).

        Parameters
        ----------
        X, y, coef, clip_norm, row_norms
            See :meth:`clipped_derivatives`.

        Returns
        -------
        ndarray of shape (n, d)
        """
        s = self.clipped_derivatives(X, y, coef, clip_norm, row_norms)
        return s[:, None] * X

    def clipped_gradient_sum(self, X, y, coef, clip_norm, row_norms=None):
        """Sum of per-sample clipped gradients (replace-one sensitivity ``2 C``).

        Parameters
        ----------
        X, y, coef, clip_norm, row_norms
            See :meth:`clipped_derivatives`.

        Returns
        -------
        ndarray of shape (d,)
        """
        s = self.clipped_derivatives(X, y, coef, clip_norm, row_norms)
        return X.T @ s


class SquaredLoss(_GLMLoss):
    """Squared loss ``(z - y)**2 / 2``.

    References
    ----------
    - Asi, Liu and Tian, "Private stochastic convex optimization with heavy tails: near-
      optimality from simple reductions", Sec. 6.
    - Abadi et al., "Deep learning with differential privacy", CCS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> SquaredLoss().derivative(np.array([2.0]), np.array([0.5]))
    array([1.5])
    """

    curvature_bound = 1.0
    kernel_code = 0

    def value(self, z, y):
        return 0.5 * (z - y) ** 2

    def derivative(self, z, y):
        return z - y

    def row_lipschitz_bounds(self, row_norms, y, radius):
        """``||a|| (R ||a|| + |y|)``; with ``R = inf`` it is infinite for every
        non-zero row, so the rows are ranked by ``||a||`` instead (their bound
        per unit radius ``||a||**2`` orders them alike: the limit ``R -> inf``).

        Examples
        --------
        >>> import numpy as np
        >>> SquaredLoss().row_lipschitz_bounds(np.array([2.0]), np.array([-1.0]), 3.0)
        array([14.])
        """
        if np.isinf(radius):
            return row_norms.copy()
        with np.errstate(all="ignore"):
            return row_norms * (radius * row_norms + np.abs(y))


class HuberLoss(_GLMLoss):
    """Huber loss with threshold ``tau`` on the residual ``r = z - y``.

    Parameters
    ----------
    tau : float, default=1.0
        Residual at which the loss turns linear; the derivative is bounded by
        ``tau``.

    References
    ----------
    - Huber, "Robust estimation of a location parameter", Ann. Math. Statist. 1964.
    - Asi, Liu and Tian, "Private stochastic convex optimization with heavy tails: near-
      optimality from simple reductions", Sec. 6.

    Examples
    --------
    >>> import numpy as np
    >>> HuberLoss(1.0).derivative(np.array([5.0, 0.5]), np.zeros(2))
    array([1. , 0.5])
    """

    curvature_bound = 1.0

    def __init__(self, tau=1.0):
        if not 0 < tau < np.inf:
            # tau = inf is the squared loss; its bound tau ||a|| would be inf
            raise ValueError("tau must be positive and finite.")
        self.tau = float(tau)
        self.derivative_bound = self.tau

    kernel_code = 1

    def kernel_args(self):
        return self.kernel_code, self.tau

    def row_lipschitz_bounds(self, row_norms, y, radius):
        """``tau ||a||`` for every radius."""
        return self.tau * row_norms

    def value(self, z, y):
        r = np.abs(z - y)
        return np.where(r <= self.tau, 0.5 * r**2, self.tau * r - 0.5 * self.tau**2)

    def derivative(self, z, y):
        return np.clip(z - y, -self.tau, self.tau)


class LogisticLoss(_GLMLoss):
    """Logistic loss ``log(1 + exp(-y z))`` with labels ``y`` in ``{-1, +1}``.

    References
    ----------
    - Asi, Liu and Tian, "Private stochastic convex optimization with heavy tails: near-
      optimality from simple reductions", Sec. 6.
    - Abadi et al., "Deep learning with differential privacy", CCS 2016.

    Examples
    --------
    >>> import numpy as np
    >>> float(LogisticLoss().value(np.array([0.0]), np.array([1.0]))[0])
    0.6931471805599453
    """

    curvature_bound = 0.25
    derivative_bound = 1.0
    labels = True
    kernel_code = 2

    def row_lipschitz_bounds(self, row_norms, y, radius):
        """``||a||`` for every radius."""
        return row_norms.copy()

    def value(self, z, y):
        return np.logaddexp(0.0, -y * z)

    def derivative(self, z, y):
        return -y * expit(-y * z)

    @staticmethod
    def margin_value(margin):
        """Loss at the margin ``m = y z``: ``log(1 + exp(-m))``.

        Parameters
        ----------
        margin : ndarray

        Returns
        -------
        ndarray
        """
        return np.logaddexp(0.0, -margin)

    @staticmethod
    def margin_derivative(margin):
        """Derivative in the margin ``m = y z``: ``-1 / (1 + exp(m))``.

        Parameters
        ----------
        margin : ndarray

        Returns
        -------
        ndarray
        """
        return -expit(-margin)


_LOSSES = {"squared": SquaredLoss, "huber": HuberLoss, "logistic": LogisticLoss}


def get_loss(name, **kwargs):
    """Loss object from its name.

    Parameters
    ----------
    name : {"squared", "huber", "logistic"}
    **kwargs
        Passed to the loss (``tau`` for Huber).

    Returns
    -------
    loss : _GLMLoss

    References
    ----------
    - Asi, Liu and Tian, "Private stochastic convex optimization with heavy tails: near-
      optimality from simple reductions", Sec. 6.

    Examples
    --------
    >>> get_loss("huber", tau=2.0).tau
    2.0
    """
    try:
        return _LOSSES[name](**kwargs)
    except KeyError:
        raise ValueError(
            f"Unknown loss {name!r}; use one of {sorted(_LOSSES)}."
        ) from None
