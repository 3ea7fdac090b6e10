"""Output-perturbation inner solver for bilevel ridge regression.

Each inner problem of the bilevel ridge loop is a weighted ridge regression
``sum_i a_i (x_i w - y_i)**2 / 2 + omega / 2 ||w||**2`` on centred, clipped
rows (``||x|| <= A``, ``|y| <= B``). It is solved exactly and released with
Gaussian noise (Chaudhuri, Monteleoni and Sarwate 2011, output perturbation):

- the objective at ``w = 0`` is at most ``W B**2 / 2`` with ``W = sum_i a_i``,
  so every minimizer, on any dataset, lies in the ball ``||w|| <= D`` with
  ``D = B sqrt(W / omega)``;
- on that ball each loss is ``L``-Lipschitz with ``L = A (A D + B)``;
- the objective is ``omega``-strongly convex, so replacing a record of weight
  ``a`` moves the minimizer by at most ``2 a L / omega`` (replace-one).

The noise of each solve is ``z`` times the largest per-part sensitivity; with
the multiplier ``z`` fixed in advance, each solve is ``1/z``-GDP whatever the
(public) ``omega`` it runs at.
"""

import math

import numpy as np

from ..privacy import gaussian_noise

__all__ = ["ridge_ball_radius", "output_sensitivities", "perturbed_ridge"]


def ridge_ball_radius(total_weight, omega, target_bound):
    """Public radius ``D`` containing every weighted ridge minimizer.

    Examples
    --------
    >>> ridge_ball_radius(1.0, 0.25, 1.0)
    2.0
    """
    return float(target_bound) * math.sqrt(float(total_weight) / float(omega))


def output_sensitivities(weights, omega, feature_norm, target_bound):
    """Replace-one sensitivity of the weighted ridge minimizer, per part.

    Parameters
    ----------
    weights : dict
        ``{part: (a, n_part)}``: per-row weight and row count of each part.
    omega : float
        Ridge penalty (strong convexity).
    feature_norm, target_bound : float
        Public bounds on the (centred) rows and targets.

    Returns
    -------
    dict
        ``{part: 2 a L / omega}``.

    Examples
    --------
    >>> s = output_sensitivities({"train": (0.01, 100)}, 1.0, 1.0, 1.0)
    >>> round(s["train"], 4)
    0.04
    """
    total = sum(a * n for a, n in weights.values())
    radius = ridge_ball_radius(total, omega, target_bound)
    lipschitz = feature_norm * (feature_norm * radius + target_bound)
    return {p: 2.0 * a * lipschitz / omega for p, (a, _) in weights.items()}


def perturbed_ridge(scatter, cross, omega, noise_std, rng):
    """Exact weighted ridge solution plus ``N(0, noise_std**2 I)``.

    Parameters
    ----------
    scatter : ndarray of shape (d, d)
        ``sum_i a_i x_i x_i^T`` of the centred, clipped rows (exact).
    cross : ndarray of shape (d,)
        ``sum_i a_i x_i y_i``.
    omega : float
    noise_std : float
    rng : numpy.random.Generator

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> perturbed_ridge(np.eye(2), np.ones(2), 1.0, 0.0, np.random.default_rng(0))
    array([0.5, 0.5])
    """
    d = cross.size
    w = np.linalg.solve(scatter + omega * np.eye(d), cross)
    return w + gaussian_noise(rng, noise_std, d)
