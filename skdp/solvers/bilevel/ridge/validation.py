"""The bilevel objective of the sufficient-statistics ridge solver.

Everything here is post-processing of the two released parts (see
:mod:`.bilevel_ridge_stats`). A *pair* ``(P, O, w)`` is a lower-level ridge
model trained on part ``P`` and scored on part ``O``; the upper-level
objective is ``F(alpha) = sum_pairs w * L_O(theta_P(alpha))`` with ``L_O`` the
mean squared loss / 2 of part ``O``. One pair ``(train, val, 1)`` is the
paper's Sec. 7 split; the two pairs ``(A, B, n_B / n)`` and ``(B, A, n_A / n)``
are two-fold cross-validation, the same bilevel problem with the lower-level
variable ``(theta_A, theta_B)`` (each record is validation data once).

The penalty ``alpha`` is in sum units of the training part (scikit-learn's
``Ridge(alpha)``); the paper's weight on the mean training loss is
``omega = alpha / n_P``.

Two facts about the *released* objective matter when the parts carry privacy
noise (moment noise of marginal variance ``s**2`` per entry, correlation
``rho`` between the parts). Write ``e_P`` for part ``P``'s moment noise. A model
trained on ``P`` is linear in ``P``'s released moment vector given the released
Gram matrix (also after the PSD projection), ``theta_P = theta0_P + M_P e_P``
with ``M_P = (Z_P^T Z_P + alpha D)^{-1}`` the augmented inverse (``D`` leaves the
intercept unpenalized), and the released objective contains
``- sum_pairs w / n_O theta_P^T e_O``, whose noise-times-noise part is
``- e_A^T K e_B`` with ``K = sum_pairs w / n_O M_P(alpha)``:

- **Correlation bias.** ``E[- e_A^T K e_B] = -rho s**2 tr(K)``, exactly. For
  ``rho < 0`` it is positive and largest at small ``alpha``: left in, it
  drives ``alpha`` far too high (10-200 times at ``n = 1e5``, d = 20,
  epsilon = 1). :meth:`ValidationObjective.correction` removes it.
- **Noise level.** Its standard deviation is ``s**2 sqrt((1 + rho**2)
  tr(K**2))``, again exact; it is largest where the models are mostly noise.
  The objective adds ``margin`` standard deviations (an upper confidence
  bound), so ``alpha`` goes into that region only on clear evidence.

The Gram noise also biases the released loss (to second order,
``-rho s_G**2 (tr(M) ||coef||**2 + theta^T M theta)``); that approximation is
unreliable where the Gram noise is not small against the Gram matrix and made
the choice worse in measurements, so it is not corrected.

Both terms are public functions of ``alpha`` and the released statistics;
their ``alpha``-derivative enters the outer step as the ``grad_x f`` term of the
paper's hypergradient (Eq. 3).
"""

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["ValidationNoise", "ValidationObjective", "validation_loss"]


@dataclass(frozen=True)
class ValidationNoise:
    """Noise of the released parts (normalized units).

    Parameters
    ----------
    moment_std : float
        Marginal standard deviation of each released moment entry.
    correlation : float
        Correlation of the two parts' noises, entry by entry.
    """

    moment_std: float = 0.0
    correlation: float = 0.0

    @property
    def is_zero(self):
        return self.moment_std == 0.0


def validation_loss(stats, coef, intercept):
    """Mean squared loss / 2 of ``(coef, intercept)`` on a part, up to a constant.

    The constant (``sum y**2``) is not released and does not depend on the
    model.

    Parameters
    ----------
    stats : RidgeStatistics
        Centred statistics of the part (weight = number of rows).
    coef : ndarray of shape (d,)
    intercept : float

    Returns
    -------
    float
    """
    shift = (
        intercept + stats.mean_x @ coef - stats.mean_y if stats.fit_intercept else 0.0
    )
    quad = coef @ stats.scatter @ coef - 2.0 * coef @ stats.cross
    return 0.5 * (quad / stats.weight + shift * shift)


def _augmented_inverse(stats, alpha, intercept_scaling):
    """``(Z^T Z + alpha D)^{-1}`` rebuilt from centred (projected) statistics."""
    s, d = stats.scatter, stats.cross.shape[0]
    if not stats.fit_intercept:
        return np.linalg.pinv(s + alpha * np.eye(d), hermitian=True)
    n, c, mx = stats.weight, float(intercept_scaling), stats.mean_x
    h = np.empty((d + 1, d + 1))
    h[:d, :d] = s + n * np.outer(mx, mx) + alpha * np.eye(d)
    h[:d, d] = h[d, :d] = n * c * mx
    h[d, d] = n * c * c
    return np.linalg.pinv(h, hermitian=True)


class ValidationObjective:
    """Released bilevel ridge objective over one or two train/validation pairs.

    Parameters
    ----------
    parts : sequence of RidgeStatistics
        Centred statistics of the parts (unscaled: weight = rows).
    pairs : sequence of (int, int, float)
        ``(train part, validation part, weight)``.
    noise : ValidationNoise
    margin : float, default=0.0
        Standard deviations of the validation noise added to the objective.
    intercept_scaling : float, default=1.0
        Constant column of the released statistics.
    bias_correction : bool, default=True
        Remove the correlation bias (``False`` only for ablation studies).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.bilevel.ridge.stats import exact_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(200, 3)); y = X @ np.ones(3) + rng.normal(size=200)
    >>> a = exact_statistics(X[:100], y[:100], 1.0).centered()
    >>> b = exact_statistics(X[100:], y[100:], 1.0).centered()
    >>> obj = ValidationObjective([a, b], [(0, 1, 0.5), (1, 0, 0.5)],
    ...                           ValidationNoise())
    >>> bool(obj.value(1.0) < obj.value(1e4))
    True
    """

    def __init__(
        self,
        parts,
        pairs,
        noise,
        margin=0.0,
        intercept_scaling=1.0,
        bias_correction=True,
    ):
        self.bias_correction = bool(bias_correction)
        self.parts = list(parts)
        self.pairs = [(int(p), int(o), float(w)) for p, o, w in pairs]
        self.noise = noise
        self.margin = float(margin)
        self.intercept_scaling = float(intercept_scaling)

    # -- the lower level --------------------------------------------------
    def models(self, alpha):
        """Ridge solutions ``[(coef, intercept)]`` of each pair's training part."""
        return [self.parts[p].solve(alpha) for p, _, _ in self.pairs]

    def penalized_models(self, alpha, penalty):
        """Solutions of ``f / lambda + g`` per pair (``g`` in mean units).

        ``penalty(omega) -> lambda`` with ``omega = alpha / n_P``.
        """
        out = []
        for p, o, w in self.pairs:
            train, val = self.parts[p], self.parts[o]
            omega = alpha / train.weight
            lam = penalty(omega)
            pooled = train.scaled(1.0 / train.weight) + val.scaled(
                w / (lam * val.weight)
            )
            out.append(pooled.solve(omega))
        return out

    # -- the upper level --------------------------------------------------
    def value(self, alpha):
        """Released (uncorrected) validation objective at ``alpha``."""
        return sum(
            w * validation_loss(self.parts[o], *m)
            for (_, o, w), m in zip(self.pairs, self.models(alpha))
        )

    def hypergradient(self, alpha, penalty, low=None, pen=None):
        """F2BA estimate of ``d F / d log(alpha)`` (uncorrected objective).

        ``sum_pairs omega_P lambda_P (R(theta^lam_P) - R(theta_P))`` with
        ``R = ||coef||**2 / 2``, the paper's first-order estimate for each
        pair (``grad_omega g = R``, ``grad_omega f = 0``). ``low`` and ``pen``
        are the inner solutions (:meth:`models`, :meth:`penalized_models`),
        computed if not given.
        """
        g = 0.0
        low = self.models(alpha) if low is None else low
        pen = self.penalized_models(alpha, penalty) if pen is None else pen
        for (p, _, _), (w_low, _), (w_pen, _) in zip(self.pairs, low, pen):
            omega = alpha / self.parts[p].weight
            lam = penalty(omega)
            g += omega * lam * 0.5 * (w_pen @ w_pen - w_low @ w_low)
        return g

    def _noise_matrix(self, alpha):
        """``K = sum_pairs w / n_O M_P(alpha)``: the released objective's
        noise-times-noise term is ``- e_A^T K e_B``."""
        k = 0.0
        for p, o, w in self.pairs:
            m = _augmented_inverse(self.parts[p], alpha, self.intercept_scaling)
            k = k + (w / self.parts[o].weight) * m
        return k

    def noise_bias_and_sd(self, alpha):
        """Mean and standard deviation of the noise-times-noise term.

        With ``e_B = rho e_A + sqrt(1 - rho**2) e'`` (marginal variance
        ``s**2`` per entry): ``E[-e_A^T K e_B] = -rho s**2 tr(K)`` and
        ``Var = s**4 (1 + rho**2) tr(K**2)``, exactly, given the released Gram
        matrices.
        """
        nz = self.noise
        rho, s2 = nz.correlation, nz.moment_std**2
        k = self._noise_matrix(alpha)
        bias = -rho * s2 * float(np.trace(k))
        sd = s2 * math.sqrt((1.0 + rho * rho) * float(np.sum(k * k)))
        return bias, sd

    def correction(self, alpha):
        """Public term added to the released objective: ``- bias + margin * sd``."""
        if self.noise.is_zero:
            return 0.0
        bias, sd = self.noise_bias_and_sd(alpha)
        return -bias * self.bias_correction + self.margin * sd

    def corrected_value(self, alpha):
        """The objective the outer loop minimizes."""
        return self.value(alpha) + self.correction(alpha)

    def correction_gradient(self, u, step=1e-3):
        """``d correction / d log(alpha)`` at ``u = log(alpha)`` (central difference
        of a public function of ``alpha``)."""
        if self.noise.is_zero:
            return 0.0
        hi = self.correction(math.exp(u + step))
        lo = self.correction(math.exp(u - step))
        return (hi - lo) / (2.0 * step)
