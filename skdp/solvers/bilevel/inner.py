"""DP-Loc-GD / DP-Loc-SGD: localized noisy projected gradient descent.

Kornowski, Alg. 2 (full batch) and Alg. 4 (mini-batch), after Feldman, Koren
and Talwar (2020). For a ``mu``-strongly convex objective, round ``m`` runs
``K`` noisy projected steps on the ball ``B(y_0^m, R_m)`` around its own start
and hands the *average* of ``y_0^m, ..., y_{K-1}^m`` to the next round.

Differences from the paper, all public and data-independent:

- ``K`` (the paper's ``T_GD = n**2``) is a parameter and the noise is
  calibrated by the accountant to the steps actually run;
- the step size is ``eta_t = min(1 / beta, 1 / (mu (t + 1)))`` when a public
  smoothness bound ``beta`` is given (the paper's ``1 / (mu (t + 1))``
  otherwise); the analysis of Thm 28 still holds because ``1/eta_t -
  1/eta_{t-1} <= mu``;
- the radii ``R_m`` come from the one-round bound of the proof of Thm 28 with
  explicit constants (:func:`localization_radii`); they never grow.

The gradient oracle is given by the caller and must already be the clipped
(mini-batch) mean whose sensitivity the noise was calibrated for; this module
only adds the noise, which it draws with :func:`skdp.privacy.gaussian_noise`.
"""

import math

import numpy as np

from ...privacy import gaussian_noise

__all__ = ["localized_noisy_gd", "localization_radii", "project_ball"]


def project_ball(y, center, radius):
    """Euclidean projection of ``y`` on the ball ``B(center, radius)``.

    Examples
    --------
    >>> import numpy as np
    >>> project_ball(np.array([3.0, 4.0]), np.zeros(2), 1.0)
    array([0.6, 0.8])
    """
    diff = y - center
    norm = float(np.linalg.norm(diff))
    if norm <= radius or math.isinf(radius):
        return y
    return center + diff * (radius / norm)


def localization_radii(
    initial_radius,
    *,
    n_rounds,
    n_steps,
    noise_std,
    gradient_bound,
    strong_convexity,
    n_features,
    smoothness=None,
    sampling_std=0.0,
    failure_probability=0.05,
):
    """Public radii ``R_0 > R_1 >= ...`` of DP-Loc-(S)GD.

    One round with ``K`` steps, noise ``sigma`` and ``y* in B(y_0^m, R_m)``
    gives, with probability ``1 - gamma / M`` (proof of Kornowski's Thm 28,
    with the sum in term (II) read as a maximum):

    ``h(y_0^{m+1}) - h* <= 2 R_m s sqrt(2 log(4M/gamma) / K)
    + (L**2 + sigma**2 (sqrt(d) + sqrt(2 log(4MK/gamma)))**2) (1 + log K) / (mu K)
    + 2 beta R_m**2 / K``

    where ``s = sigma + sampling_std`` and the last term appears only with a
    step cap ``1/beta``; then ``R_{m+1} = sqrt(2 gap / mu)``. Radii depend on
    public quantities only.

    Parameters
    ----------
    initial_radius : float
        Public bound on the distance from the start to the minimizer.
    n_rounds, n_steps : int
        ``M`` and ``K``.
    noise_std : float
        Standard deviation of the noise on each gradient coordinate.
    gradient_bound : float
        Public bound ``L`` on the gradient norm over the balls.
    strong_convexity : float
        ``mu > 0``.
    n_features : int
        Dimension ``d``.
    smoothness : float, optional
        Public smoothness ``beta`` when the step is capped at ``1/beta``.
    sampling_std : float, default=0.0
        Bound on the sub-Gaussian scale of the mini-batch error (Alg. 4).
    failure_probability : float, default=0.05
        ``gamma``.

    Returns
    -------
    radii : list of float
        ``[R_0, ..., R_{M-1}]``.

    Examples
    --------
    >>> r = localization_radii(10.0, n_rounds=3, n_steps=10_000, noise_std=1e-3,
    ...     gradient_bound=1.0, strong_convexity=1.0, n_features=5)
    >>> r[0] > r[1] > r[2]
    True
    """
    m_rounds, k = int(n_rounds), int(n_steps)
    mu = float(strong_convexity)
    log_m = math.log(4.0 * m_rounds / failure_probability)
    log_mk = math.log(4.0 * m_rounds * k / failure_probability)
    noise_max = noise_std * (math.sqrt(n_features) + math.sqrt(2.0 * log_mk))
    decay = (1.0 + math.log(k)) / (mu * k)
    radii = [float(initial_radius)]
    for _ in range(m_rounds - 1):
        r = radii[-1]
        gap = 2.0 * r * (noise_std + sampling_std) * math.sqrt(2.0 * log_m / k)
        gap += (gradient_bound**2 + noise_max**2) * decay
        if smoothness is not None:
            gap += 2.0 * smoothness * r * r / k
        radii.append(min(r, math.sqrt(2.0 * gap / mu)))
    return radii


def localized_noisy_gd(
    gradient,
    y0,
    *,
    radii,
    n_steps,
    noise_std,
    strong_convexity,
    rng,
    sensitivity,
    sampling=(),
    smoothness=None,
):
    """Run DP-Loc-GD (full-batch oracle) or DP-Loc-SGD (sampling oracle).

    Parameters
    ----------
    gradient : callable
        ``y -> g``: the clipped (mini-batch) mean gradient at ``y``, computed
        on the private data; it may draw its batch from ``rng``.
    y0 : ndarray of shape (d,)
        Start (a warm start from a previous private solution is fine).
    radii : sequence of float
        Public radius of each round (``M = len(radii)``).
    n_steps : int
        Steps per round ``K``.
    noise_std : float
        Standard deviation of the Gaussian noise added to every gradient.
    strong_convexity : float
        Public ``mu``; steps are ``1 / (mu (t + 1))``.
    rng : numpy.random.Generator
    sensitivity : float or PartSensitivities
        Replace-one sensitivity of each gradient release (per part of a
        parallel scope, with its sampling, for a bilevel run), for the
        privacy ledger (see :func:`skdp.privacy.gaussian_noise`).
    sampling : tuple, default=()
        The ledger's sampling of a gradient's batch (see
        :func:`skdp.privacy.gaussian_noise`).
    smoothness : float, optional
        Public ``beta``; caps the steps at ``1 / beta``.

    Returns
    -------
    y_out : ndarray of shape (d,)
        The last round's average.

    Examples
    --------
    >>> import numpy as np
    >>> y = localized_noisy_gd(lambda y: y - 1.0, np.zeros(2), radii=[5.0, 5.0],
    ...     n_steps=200, noise_std=0.0, strong_convexity=1.0,
    ...     rng=np.random.default_rng(0), sensitivity=1.0)
    >>> np.allclose(y, 1.0, atol=1e-2)
    True
    """
    y_start = np.array(y0, dtype=float, copy=True)
    k = int(n_steps)
    t = np.arange(k)
    steps = 1.0 / (float(strong_convexity) * (t + 1.0))
    if smoothness is not None:
        steps = np.minimum(steps, 1.0 / float(smoothness))
    for radius in radii:
        noise = gaussian_noise(
            rng,
            noise_std,
            (k, y_start.size),
            sensitivity=sensitivity,
            sampling=sampling,
            repetitions=k,
            label="inner gradient",
        )
        y = y_start.copy()
        total = np.zeros_like(y)
        for i in range(k):
            total += y
            y = project_ball(y - steps[i] * (gradient(y) + noise[i]), y_start, radius)
        y_start = total / k
    return y_start
