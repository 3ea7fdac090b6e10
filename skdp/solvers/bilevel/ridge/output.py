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
(public) ``omega`` it runs at. The final model is post-processed with its
public noise level: positive-part James-Stein shrinkage (:func:`shrink_noisy`,
a smaller expected error whatever the true minimizer), then projection on
the public ball of radius ``D`` (:func:`project_on_ball`; the exact minimizer
lies in it, so the projection never moves the release away from it). Where
the noise (``~ omega**-1.5``) outgrows the ball (``~ omega**-0.5``), the two
bound the damage; in the outer loop the raw releases are used, as projected
ones bias the hypergradient towards small penalties.
"""

import math

import numpy as np

from ....privacy import gaussian_noise

__all__ = [
    "output_sensitivities",
    "perturbed_ridge",
    "project_on_ball",
    "ridge_ball_radius",
    "shrink_noisy",
]


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


def perturbed_ridge(
    scatter, cross, omega, noise_std, rng, radius=np.inf, *, sensitivity
):
    """Exact weighted ridge solution plus ``N(0, noise_std**2 I)``, projected.

    Parameters
    ----------
    scatter : ndarray of shape (d, d)
        ``sum_i a_i x_i x_i^T`` of the centred, clipped rows (exact).
    cross : ndarray of shape (d,)
        ``sum_i a_i x_i y_i``.
    omega : float
    noise_std : float
    rng : numpy.random.Generator
    radius : float, default=inf
        Public radius of a ball centred at 0 that contains the exact
        solution (:func:`ridge_ball_radius`); the noisy solution is
        projected on it.

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> perturbed_ridge(np.eye(2), np.ones(2), 1.0, 0.0, np.random.default_rng(0),
    ...                 sensitivity=0.1)
    array([0.5, 0.5])
    """
    d = cross.size
    w = np.linalg.solve(scatter + omega * np.eye(d), cross)
    noise = gaussian_noise(
        rng, noise_std, d, sensitivity=sensitivity, label="ridge minimizer"
    )
    return project_on_ball(w + noise, radius)


def project_on_ball(w, radius):
    """Euclidean projection of ``w`` on the ball ``||w|| <= radius``.

    Examples
    --------
    >>> import numpy as np
    >>> project_on_ball(np.array([3.0, 4.0]), 1.0)
    array([0.6, 0.8])
    """
    norm = float(np.linalg.norm(w))
    return w * (radius / norm) if norm > radius else w


def shrink_noisy(w, noise_std):
    """Positive-part James-Stein shrinkage of ``w = w* + N(0, noise_std**2 I)``.

    ``max(0, 1 - (d - 2) noise_std**2 / ||w||**2) w`` has a smaller expected
    squared error to ``w*`` than ``w`` for ``d >= 3`` (James and Stein 1961),
    whatever ``w*``; with a public ``noise_std`` it is post-processing. When
    the release is mostly noise it returns (nearly) zero instead of a random
    vector. ``d < 3`` is returned unchanged.

    Examples
    --------
    >>> import numpy as np
    >>> shrink_noisy(np.array([1.0, 0.0, 0.0]), 0.5)
    array([0.75, 0.  , 0.  ])
    """
    d = w.size
    sq = float(w @ w)
    if d < 3 or sq == 0.0:
        return w
    return w * max(0.0, 1.0 - (d - 2) * noise_std**2 / sq)
