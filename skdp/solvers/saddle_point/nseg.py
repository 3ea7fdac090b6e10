"""Noisy stochastic extragradient (NSEG) for monotone variational inequalities.

Algorithm 1 of Boob and Guzmán (the box is missing from the paper text; it is
reconstructed in the implementation note, section 2.1): for ``t = 1..T``,

.. code-block:: text

    w_t = Pi_W(u_{t-1} - gamma * (F_{B1_t}(u_{t-1}) + xi1_t))   # extrapolation
    u_t = Pi_W(u_{t-1} - gamma * (F_{B2_t}(w_t)     + xi2_t))   # update
    return sum_t w_t / T

with fresh Gaussian noise ``xi ~ N(0, sigma^2 I)`` on every batch operator
value. Each value is a batch sum of per-record operators bounded by ``M``,
divided by a public normalizer, so its replace-one sensitivity is
``2 M / normalizer`` (``2M/B``) and ``sigma = z * 2M/B``.

The variants differ only in the :class:`~skdp.solvers.sampling.
BatchSchedule` of the ``2T`` releases: disjoint batches (single pass,
parallel composition) or Poisson / without-replacement sampling (multi pass,
accounted with dp-accounting for exactly the scheme run, never with the
paper's closed forms).
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ...privacy import gaussian_noise
from ..sampling import release_part

__all__ = ["nseg", "nseg_step_size", "SaddlePointResult"]


def _first_averaged(averaging, n_iter):
    """Index of the first iterate in the output average."""
    if averaging == "uniform":
        return 0
    if averaging == "suffix":
        return n_iter // 2
    raise ValueError(f"averaging must be 'uniform' or 'suffix', got {averaging!r}.")


@dataclass
class SaddlePointResult:
    """What a saddle-point solver returns.

    Attributes
    ----------
    solution : ndarray of shape (d,)
        The released point (in the domain).
    n_iter : int
        Outer iterations run.
    noise_std : float
        Standard deviation of every Gaussian draw.
    sensitivity : float
        Replace-one L2 sensitivity of every noised statistic.
    step_size : float
        ``gamma`` (NSEG) or ``1 / lambda`` (NISPP).
    info : dict
        Solver-specific diagnostics.
    """

    solution: np.ndarray
    n_iter: int
    noise_std: float
    sensitivity: float
    step_size: float
    info: dict = field(default_factory=dict)


def nseg_step_size(M, L, D, dim, noise_std, n_iter, step_scale=1.0):
    """NSEG step ``gamma`` from the convergence bound of Theorem 2.

    Theorem 2 bounds the gap by ``(D^2 + 7 sum_t gamma^2 (M^2/2 + d
    sigma^2)) / (T gamma)``, minimised at ``gamma* = D / sqrt(7 T (M^2/2 + d
    sigma^2))`` (Corollary 1); the theorem also needs ``gamma <= 1 / (sqrt(3)
    L)``, which Corollary 1 forgets. ``step_scale`` multiplies
    the result (a public hyperparameter; tuning it on private data costs
    privacy). Privacy does not depend on the step.

    Parameters
    ----------
    M, L, D : float
        Operator bound, Lipschitz constant and domain diameter.
    dim : int
    noise_std : float
        ``sigma`` on each batch operator value.
    n_iter : int
        ``T``.
    step_scale : float, default=1.0

    Returns
    -------
    gamma : float

    Examples
    --------
    >>> round(nseg_step_size(1.0, 1.0, 2.0, 3, 0.0, 100), 4)
    0.1069
    """
    denom = math.sqrt(7.0 * n_iter * (0.5 * M**2 + dim * noise_std**2))
    gamma = D / denom if denom > 0 else math.inf
    if L > 0:
        gamma = min(gamma, 1.0 / (math.sqrt(3.0) * L))
    if not math.isfinite(gamma):
        raise ValueError("NSEG needs M > 0, noise or L > 0 to choose a step size.")
    return step_scale * gamma


def nseg(
    operator,
    domain,
    schedule,
    *,
    M,
    L,
    noise_multiplier,
    rng,
    step_scale=1.0,
    step_size=None,
    w0=None,
    averaging="uniform",
):
    """Run NSEG on a batched monotone operator; the only place noise is drawn.

    Parameters
    ----------
    operator : callable
        ``operator(w, indices) -> ndarray (d,)``: the **sum** over records
        ``indices`` of the per-record monotone operators ``F_i(w)``, each
        bounded by ``M`` and ``L``-Lipschitz on the domain.
    domain : Ball, Simplex or ProductDomain
        Provides ``project``, ``diameter`` (``D``) and ``center``.
    schedule : BatchSchedule
        ``2T`` releases (two per iteration).
    M, L : float
        Public bound on ``||F_i(w)||`` and Lipschitz constant of each ``F_i``.
    noise_multiplier : float
        ``z = sigma / (2 M / normalizer)``; ``0`` runs without noise.
    rng : numpy.random.Generator
        Batches and noise.
    step_scale : float, default=1.0
        Multiplier of the theory step (see :func:`nseg_step_size`).
    step_size : float, optional
        Fixed step overriding the theory rule (tests, non-private runs).
    w0 : ndarray, optional
        Starting point in the domain (default: ``domain.center()``).
    averaging : {"uniform", "suffix"}, default="uniform"
        Output the average of all extrapolated points (the paper) or of the
        second half only (suffix averaging, which forgets the start-up
        transient; post-processing, so privacy is unchanged).

    Returns
    -------
    SaddlePointResult

    References
    ----------
    Boob and Guzmán, "Optimal algorithms for differentially private stochastic
    monotone variational inequalities and saddle-point problems", Math.
    Program. 204 (2024), Algorithm 1. Juditsky, Nemirovski and Tauvel,
    "Solving variational inequalities with stochastic mirror-prox algorithm",
    Stoch. Syst. 2011.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.projections import Ball
    >>> from skdp.solvers.sampling import BatchSchedule
    >>> targets = np.array([[0.5], [0.3], [0.1], [0.3]])
    >>> op = lambda w, idx: (w - targets[idx]).sum(axis=0)  # F_i(w) = w - t_i
    >>> sched = BatchSchedule(4, 200, 2, "poisson")
    >>> res = nseg(op, Ball(1, 1.0), sched, M=2.0, L=1.0, noise_multiplier=0.0,
    ...            rng=np.random.default_rng(0), step_size=0.3)
    >>> bool(abs(res.solution[0] - 0.3) < 0.05)
    True
    """
    if schedule.n_releases % 2:
        raise ValueError("NSEG needs an even number of releases (two per step).")
    n_iter = schedule.n_releases // 2
    dim = domain.dim
    sensitivity = 2.0 * M / schedule.normalizer
    sigma = float(noise_multiplier) * sensitivity
    if step_size is None:
        step_size = nseg_step_size(
            M, L, domain.diameter, dim, sigma, n_iter, step_scale
        )
    gamma = float(step_size)
    u = domain.center() if w0 is None else domain.project(w0)
    w_sum = np.zeros(dim)
    batches = schedule.batches(rng)
    scale = 1.0 / schedule.normalizer
    first = _first_averaged(averaging, n_iter)
    scope, sampled = schedule.ledger_scope(), schedule.ledger_sampling

    def noise(release):
        with release_part(scope, release):
            return gaussian_noise(
                rng, sigma, dim, sensitivity=sensitivity, sampling=sampled,
                label="operator",
            )

    for t in range(n_iter):
        g1 = operator(u, next(batches)) * scale + noise(2 * t)
        w = domain.project(u - gamma * g1)
        g2 = operator(w, next(batches)) * scale + noise(2 * t + 1)
        u = domain.project(u - gamma * g2)
        # Constant steps: the gamma-weighted average is the plain average.
        if t >= first:
            w_sum += w
    return SaddlePointResult(
        solution=w_sum / (n_iter - first),
        n_iter=n_iter,
        noise_std=sigma,
        sensitivity=sensitivity,
        step_size=gamma,
        info={"last_iterate": u},
    )
