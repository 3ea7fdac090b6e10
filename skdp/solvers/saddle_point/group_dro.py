"""The group-DRO logistic saddle point as a batched monotone operator.

Implementation note, section 4.2 (importance-weighted single records). With
public group priors ``pi`` (``pi_g > 0``, summing to one), rows ``x`` clipped
to ``||x|| <= R_x`` (intercept column included) and labels ``y`` in
``{-1, +1}``, each record ``i`` of group ``g_i`` contributes

``f_i(w, q) = q_{g_i} / pi_{g_i} * log(1 + exp(-y_i <w, x_i>))``

to the objective ``min_{||w|| <= R_w} max_{q in simplex} mean_i f_i(w, q)``,
whose inner maximum is the worst group's (importance-weighted) risk. The
per-record monotone operator is ``F_i = (grad_w f_i, -grad_q f_i)``.

Two refinements that change no iterate of the solvers:

- the dual block is centred, ``-(l_i / pi_g)(e_g - 1/m)``: projection onto
  the simplex ignores shifts along ``1``, and ``<1, q - q'> = 0`` on it, so
  iterates, subproblem solutions and gaps are unchanged while the bound
  ``M`` shrinks;
- the dual variable is rescaled, ``q = c r`` with ``r`` in the simplex scaled
  by ``1/c`` (``c = dual_scale``): the dual block becomes ``-c (l_i / pi_g)
  (e_g - 1/m)``. This is the same saddle point in other coordinates, with a
  dual step ``c^2`` times the primal one; it balances the two blocks of the
  isotropic noise.

Public constants (every record, every point of the domain):

- ``l_max = log(1 + exp(R_w R_x))``;
- ``M = sqrt(R_x^2 + c^2 (1 - 1/m) l_max^2) / pi_min``;
- ``L = (R_x^2 / 4 + c R_x sqrt(1 - 1/m)) / pi_min``;
- ``D = sqrt((2 R_w)^2 + 2 / c^2)`` (``2 R_w`` if ``m = 1``).

``M`` and ``L`` are worst cases over single records: a record of the
smallest group, at the worst margin, when all the weight sits on its group.
They set the noise. Step-size rules only need the size of a *typical* batch
operator, in which the importance weights ``q_g / pi_g`` average to about
one; ``M_step = sqrt((R_x/2)^2 + c^2 (1 - 1/m) log(2)^2)`` is the bound for a
unit-weight record at the starting point ``w = 0`` (where ``|l'| = 1/2`` and
``l = log 2``) and ``L_step = R_x^2/4 + c R_x sqrt(1 - 1/m)`` its Lipschitz
constant. Using them for the step is a public choice that affects utility,
never privacy.
"""

import math

import numpy as np

from ...losses import LogisticLoss
from ..projections import Ball, ProductDomain, Simplex

__all__ = ["GroupDROLogistic"]


class GroupDROLogistic:
    """Per-record operator of the importance-weighted group-DRO logistic problem.

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Rows already clipped to ``feature_bound`` (intercept column included).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    groups : ndarray of shape (n,)
        Group codes in ``0 .. m-1``.
    priors : ndarray of shape (m,)
        Public positive group weights summing to one.
    radius : float
        ``R_w``, radius of the coefficient ball.
    feature_bound : float
        ``R_x``, public bound on every row norm.
    dual_scale : float, default=1.0
        ``c``: the dual variable is ``q = c r``.

    Attributes
    ----------
    n_features, n_groups, dim : int
    domain : ProductDomain
        Ball of radius ``R_w`` times the simplex scaled by ``1 / c``.
    M, L, D : float
        Public constants (module docstring).
    M_step, L_step : float
        Typical constants of a unit-weight record, for step-size rules.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[1.0, 0.0], [0.0, 1.0]])
    >>> op = GroupDROLogistic(X, np.array([1.0, -1.0]), np.array([0, 1]),
    ...                       np.array([0.5, 0.5]), radius=1.0, feature_bound=1.0)
    >>> op(op.domain.center(), np.arange(2))[:2]
    array([-0.5,  0.5])
    """

    def __init__(self, X, y, groups, priors, *, radius, feature_bound, dual_scale=1.0):
        self.X = np.asarray(X, dtype=float)
        self.y = np.asarray(y, dtype=float)
        self.groups = np.asarray(groups, dtype=np.intp)
        self.priors = np.asarray(priors, dtype=float)
        self.radius = float(radius)
        self.feature_bound = float(feature_bound)
        self.dual_scale = float(dual_scale)
        self.n_features = self.X.shape[1]
        self.n_groups = self.priors.size
        self.dim = self.n_features + self.n_groups
        self.domain = ProductDomain(
            Ball(self.n_features, self.radius),
            Simplex(self.n_groups, 1.0 / self.dual_scale),
        )
        self._inv_prior = 1.0 / self.priors
        m, c, R_x = self.n_groups, self.dual_scale, self.feature_bound
        pi_min = float(self.priors.min())
        centring = math.sqrt(1.0 - 1.0 / m)
        self.loss_bound = float(np.logaddexp(0.0, self.radius * R_x))
        self.M = math.hypot(R_x, c * centring * self.loss_bound) / pi_min
        self.L = (0.25 * R_x**2 + c * centring * R_x) / pi_min
        self.D = self.domain.diameter
        self.M_step = math.hypot(0.5 * R_x, c * centring * math.log(2.0))
        self.L_step = self.L * pi_min

    def split(self, v):
        """``(w, q)`` from a concatenated point, with ``q = c r``.

        Parameters
        ----------
        v : ndarray of shape (dim,)

        Returns
        -------
        w : ndarray of shape (p,)
        q : ndarray of shape (m,)
        """
        return v[: self.n_features], self.dual_scale * v[self.n_features :]

    def __call__(self, v, indices):
        """Sum over ``indices`` of the per-record operators at ``v``.

        Parameters
        ----------
        v : ndarray of shape (dim,)
        indices : ndarray of int

        Returns
        -------
        ndarray of shape (dim,)
        """
        w, q = self.split(v)
        X, y, g = self.X[indices], self.y[indices], self.groups[indices]
        margin = y * (X @ w)
        weight = self._inv_prior[g]
        loss = LogisticLoss.margin_value(margin)
        dloss = LogisticLoss.margin_derivative(margin)
        grad_w = X.T @ (q[g] * weight * dloss * y)
        h = np.bincount(g, weights=loss * weight, minlength=self.n_groups)
        grad_r = -self.dual_scale * (h - h.sum() / self.n_groups)
        return np.concatenate([grad_w, grad_r])

    # -- objective, for diagnostics and tests (not used by the solvers) --------
    def group_risks(self, w, indices=None):
        """Importance-weighted group risks ``sum_{i in g} l_i / (n pi_g)``.

        They equal the plain group means when ``pi`` is the empirical group
        share; the saddle function is ``sum_g q_g * group_risks[g]``.

        Parameters
        ----------
        w : ndarray of shape (p,)
        indices : ndarray of int, optional
            Records to use (default: all).

        Returns
        -------
        ndarray of shape (m,)
        """
        idx = np.arange(self.y.size) if indices is None else indices
        loss = LogisticLoss.margin_value(self.y[idx] * (self.X[idx] @ w))
        h = np.bincount(self.groups[idx], weights=loss, minlength=self.n_groups)
        return h * self._inv_prior / idx.size

    def best_response_value(self, q, n_iter=2000):
        """``min_{||w|| <= R_w} sum_g q_g risk_g(w)`` by accelerated projected gradient.

        Parameters
        ----------
        q : ndarray of shape (m,)
            Group weights (a probability vector).
        n_iter : int, default=2000

        Returns
        -------
        value : float
        w : ndarray of shape (p,)
        """
        coef = np.asarray(q, dtype=float) * self._inv_prior
        weights = coef[self.groups] / self.y.size
        X, y = self.X, self.y
        smooth = 0.25 * float(np.sum(weights * np.einsum("ij,ij->i", X, X)))
        step = 1.0 / max(smooth, 1e-12)
        ball = Ball(self.n_features, self.radius)

        def value_grad(w):
            margin = y * (X @ w)
            value = float(weights @ LogisticLoss.margin_value(margin))
            grad = X.T @ (weights * LogisticLoss.margin_derivative(margin) * y)
            return value, grad

        w = np.zeros(self.n_features)
        z, t = w.copy(), 1.0
        for _ in range(n_iter):
            _, grad = value_grad(z)
            w_next = ball.project(z - step * grad)
            t_next = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
            z = w_next + ((t - 1.0) / t_next) * (w_next - w)
            w, t = w_next, t_next
        return value_grad(w)[0], w

    def saddle_point_gap(self, v, n_iter=2000):
        """Empirical primal-dual gap ``max_q f(w, q) - min_w f(w, q_hat)``.

        Parameters
        ----------
        v : ndarray of shape (dim,)
            A point of the domain.
        n_iter : int, default=2000
            Iterations of the inner minimisation (the gap is over-estimated
            by its error).

        Returns
        -------
        gap : float
        """
        w, q = self.split(self.domain.project(v))
        worst = float(np.max(self.group_risks(w)))
        best, _ = self.best_response_value(q, n_iter=n_iter)
        return worst - best
