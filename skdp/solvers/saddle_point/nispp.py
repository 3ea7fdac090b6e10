"""Noisy inexact stochastic proximal point (NISPP) with a certified inner solver.

Algorithm 2 of Boob and Guzmán (box missing from the paper text; see the
implementation note, section 2.2): for ``k = 0..K``,

.. code-block:: text

    u_{k+1} = a nu-accurate solution in W of the strongly monotone VI with
              G_k(u) = F_{B_{k+1}}(u) + lambda (u - w_k)
    w_{k+1} = u_{k+1} + xi_{k+1},  xi ~ N(0, sigma^2 I)     # not projected
    return Pi_W(sum_k w_{k+1} / (K + 1))

``nu``-accurate means ``<G_k(u), w - u> >= -nu`` for every ``w`` in ``W``.

**Privacy depends on the inner accuracy.** For two batches that differ in one
record (the other inputs fixed), two ``nu``-accurate solutions ``u, u'``
satisfy ``lambda p^2 <= 2 nu + a p`` with ``p = ||u - u'||`` and ``a = 2M /
normalizer`` (monotonicity and M-boundedness; Proposition 9), so

``p <= s(nu) = (a/2 + sqrt(a^2/4 + 2 lambda nu)) / lambda``.

The paper takes ``nu <= 2 M^2 / (lambda B^2)`` and ``s = 4M / (lambda B)``.
skdp instead fixes a smaller public target ``nu = inner_tol * a^2 / (8
lambda)``, for which ``s = (1 + sqrt(1 + inner_tol)) / 2 * a / lambda`` is
within ``inner_tol / 4`` of the exact-solution sensitivity ``2M / (lambda
B)``: about half the paper's noise for the same privacy. The inner solver
stops only when the exact duality certificate ``<G(u), u> - min_W <G(u), w>``
(a linear minimisation over the domain, closed form for balls and simplices)
is below the target with a floating-point margin. It has no user-set
iteration cap: a cap that some batches hit and others do not would make the
abort itself a data-dependent release. Its cap is instead
:func:`guaranteed_inner_iterations`, a count after which the linear
convergence of the strongly monotone subproblem *proves* the certificate is
met on every batch; only floating-point failure can exceed it, and then it
raises :class:`InnerSolverError` rather than release an uncertified point.
Where float64 cannot certify the target at all (very large batches),
:func:`nispp` raises the step's target to what it can certify and the noise
with it, keeping the noise multiplier, hence the privacy, unchanged. That
decision uses public inputs only: the released centre and a public bound on
the batch size. Under Poisson sampling the realised size includes whether the
changed record was drawn, so the bound is :func:`poisson_batch_bound`, which
every batch stays below except with probability :data:`BATCH_TAIL` per step;
that failure probability is part of the plan (:func:`batch_failure_event`,
added to delta by the accountant).

Under Poisson sampling, dp-accounting's replace-one pair bounds the effect of
one record *relative to its absence* by half the sensitivity; adding one
record moves the batch operator by at most ``M / B``, so the same argument
bounds that effect by ``s(nu)`` computed with ``M / 2``, and the noise uses
twice that (equal to ``s(nu)`` at ``nu = 0``, never above ``4M / (lambda
B)``).
"""

import math

import numpy as np

from ...privacy import FailureDpEvent, NoOpDpEvent, gaussian_noise, record_failure
from ..sampling import release_part
from .nseg import SaddlePointResult, _first_averaged

__all__ = [
    "BATCH_TAIL",
    "InnerSolverError",
    "batch_failure_event",
    "poisson_batch_bound",
    "guaranteed_inner_iterations",
    "nispp",
    "nispp_prox_parameter",
    "prox_sensitivity",
    "prox_accuracy_target",
    "solve_prox_subproblem",
    "vi_certificate",
]


# Per-step probability that a Poisson batch exceeds poisson_batch_bound. Its
# sum over the steps enters the plan as a FailureDpEvent, i.e. adds
# (1 + e^eps) * n_steps * BATCH_TAIL to delta: below 1e-12 for eps <= 10 and
# a thousand steps, so the calibrated noise does not move measurably.
BATCH_TAIL = 1e-20


def poisson_batch_bound(n_samples, sampling_probability, tail=BATCH_TAIL):
    """Public size that a Poisson batch exceeds with probability at most ``tail``.

    Bernstein's inequality for ``|B| ~ Binomial(n, q)`` with mean ``mu = n q``:
    ``P(|B| >= mu + t) <= exp(-t^2 / (2 (mu + t / 3)))``, which equals ``tail``
    at ``t = L / 3 + sqrt(L^2 / 9 + 2 mu L)``, ``L = ln(1 / tail)``. A
    function of public quantities only (``n`` and ``q``).

    Parameters
    ----------
    n_samples : int
    sampling_probability : float
    tail : float, default=BATCH_TAIL

    Returns
    -------
    bound : int
        At most ``n_samples``.

    Examples
    --------
    >>> poisson_batch_bound(10_000, 0.01)
    213
    >>> poisson_batch_bound(50, 1.0)
    50
    """
    mu = n_samples * sampling_probability
    log_inv = -math.log(tail)
    t = log_inv / 3.0 + math.sqrt(log_inv**2 / 9.0 + 2.0 * mu * log_inv)
    return int(min(n_samples, math.ceil(mu + t)))


def record_batch_failure(schedule):
    """Write :func:`batch_failure_event` to the privacy ledger, if it is one."""
    failure = batch_failure_event(schedule)
    if isinstance(failure, FailureDpEvent):
        record_failure(failure.probability, label="Poisson batch above its bound")


def batch_failure_event(schedule, tail=BATCH_TAIL):
    """The plan's share for batches above :func:`poisson_batch_bound`.

    Parameters
    ----------
    schedule : BatchSchedule
    tail : float, default=BATCH_TAIL
        Per-step probability.

    Returns
    -------
    DpEvent
        ``FailureDpEvent(n_releases * tail)`` under Poisson sampling when the
        bound is below ``n`` (a union bound over the steps), else a no-op:
        other schemes have a public batch size.

    Examples
    --------
    >>> from skdp.solvers.sampling import BatchSchedule
    >>> event = batch_failure_event(BatchSchedule(1000, 100, 10, "poisson"))
    >>> type(event).__name__, event.probability == 100 * BATCH_TAIL
    ('FailureDpEvent', True)
    """
    if (
        schedule.sampling != "poisson"
        or poisson_batch_bound(schedule.n_samples, schedule.sampling_probability, tail)
        >= schedule.n_samples
    ):
        return NoOpDpEvent()
    return FailureDpEvent(schedule.n_releases * tail)


class InnerSolverError(RuntimeError):
    """The proximal subproblem could not be certified: nothing was released."""


def prox_sensitivity(M, lam, normalizer, nu):
    """Replace-one sensitivity of a ``nu``-accurate proximal solution.

    Parameters
    ----------
    M : float
        Bound on every per-record operator.
    lam : float
        Proximal parameter ``lambda``.
    normalizer : float
        Public divisor of the batch sum (the batch size ``B``).
    nu : float
        Certified accuracy of the solutions.

    Returns
    -------
    s : float
        ``(a/2 + sqrt(a^2/4 + 2 lambda nu)) / lambda`` with ``a = 2M/B``;
        at most ``4M / (lambda B)`` when ``nu <= 2M^2 / (lambda B^2)``.

    Examples
    --------
    >>> prox_sensitivity(1.0, 2.0, 10.0, 0.0)
    0.1
    >>> prox_sensitivity(1.0, 2.0, 10.0, 2 * 1.0 / (2.0 * 100)) <= 4 / 20
    True
    """
    a = 2.0 * M / normalizer
    return (0.5 * a + math.sqrt(0.25 * a * a + 2.0 * lam * nu)) / lam


def prox_accuracy_target(M, lam, normalizer, inner_tol):
    """Public accuracy target ``nu = inner_tol * a^2 / (8 lambda)``, ``a = 2M/B``.

    At this target :func:`prox_sensitivity` is ``(1 + sqrt(1 + inner_tol)) /
    2 * a / lambda``; ``inner_tol = 4`` is the paper's ``nu_priv = 2M^2 /
    (lambda B^2)``.

    Parameters
    ----------
    M, lam, normalizer : float
    inner_tol : float
        Positive.

    Returns
    -------
    nu : float

    Examples
    --------
    >>> import math
    >>> math.isclose(prox_accuracy_target(1.0, 2.0, 10.0, 4.0), 2 * 1.0 / (2.0 * 100))
    True
    """
    a = 2.0 * M / normalizer
    return inner_tol * a * a / (8.0 * lam)


def vi_certificate(g, u, domain):
    """``max_{w in W} <g, u - w>``: exact VI accuracy of ``u`` when ``g = G(u)``.

    Parameters
    ----------
    g : ndarray of shape (d,)
    u : ndarray of shape (d,)
        A point of the domain.
    domain : Ball, Simplex or ProductDomain

    Returns
    -------
    nu : float

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.projections import Ball
    >>> vi_certificate(np.array([1.0, 0.0]), np.array([-1.0, 0.0]), Ball(2, 1.0))
    0.0
    """
    return float(g @ u) - domain.min_linear(g)


def _gradient_bound(operator_bound, lam, center, domain):
    # |G(u)| <= |F_B(u)| + lambda |u - center| on W, from public inputs only.
    outside = float(np.linalg.norm(center - domain.project(center)))
    return float(operator_bound) + lam * (domain.diameter + outside)


def _certificate_margin(gradient_bound, operator_bound, batch_size, domain):
    # Round-off bound of the computed certificate <g, u> - min_W <g, w>, four
    # times over: the length-d inner products and norm (about d eps |g| |u|),
    # forming g = F_B(u) + lambda (u - c), and the batch sum inside F_B
    # (about |B| eps |F_B|). |u| and |w| are at most |centre of W| + D on W.
    # Public, so stopping depends on the data only through the certificate.
    eps = np.finfo(float).eps
    u_bound = float(np.linalg.norm(domain.center())) + domain.diameter
    g_error = (domain.dim + 4) * gradient_bound + (batch_size + 8) * operator_bound
    return 4.0 * eps * g_error * 2.0 * u_bound + 1e-300


# Backtracking accepts a step eta when eta |G(v) - G(u)| <= _EG_THETA |v - u|.
_EG_THETA = 0.9


def guaranteed_inner_iterations(g0_norm, lipschitz, lam, diameter, nu_target):
    """Iterations within which :func:`solve_prox_subproblem` certifies ``nu_target``.

    The bound holds for every batch, so the inner solver never stops on
    data-dependent grounds. With ``G = F_B + lambda (. - w_k)``,
    ``lambda``-strongly monotone and ``L_G = lipschitz + lambda``-Lipschitz on
    the domain ``W`` of diameter ``D``, ``g_0 = G(u_0)`` at the start
    ``u_0 in W`` and ``u*`` the exact solution:

    - **Phase 1** (proximal fixed point) continues only while the certificate
      halves, from at most ``|g_0| D``: it ends within ``ceil(log2(2 |g_0| D /
      nu)) + 1`` iterations.
    - **Phase 2** (extragradient). Each accepted step has ``eta >= 1 / (2
      L_G)`` and ``eta |G(v) - G(u)| <= theta |v - u|`` (``theta = 0.9``), so
      the extragradient inequality ``|u+ - u*|^2 <= |u - u*|^2 - (1 -
      theta^2) |v - u|^2 - 2 eta lambda |v - u*|^2`` gives ``|u_t - u*|^2 <=
      (1 - r)^t D^2`` with ``r = min(1 - theta^2, lambda / L_G) / 2``.
    - **Distance to certificate.** For ``u in W``, ``<G(u), u - w> <= (L_G D
      + |G(u*)|) |u - u*|`` and ``|G(u*)| <= |g_0| + L_G D``, so the
      certificate is at most ``nu / 2`` once ``(2 L_G D + |g_0|) D (1 -
      r)^(t/2) <= nu / 2``. The other half of ``nu`` is left for the
      floating-point margin (at most ``nu / 4``, counted twice).

    Parameters
    ----------
    g0_norm : float
        Bound on ``|G(u_0)|`` at the starting point; the solver passes the
        public bound on ``|G|`` over the domain, so the count is public too.
    lipschitz : float
        Lipschitz bound of the batch operator ``F_B``.
    lam : float
        Proximal parameter.
    diameter : float
        Diameter ``D`` of the domain.
    nu_target : float
        Accuracy to certify.

    Returns
    -------
    n_iter : int

    Examples
    --------
    >>> guaranteed_inner_iterations(1.0, 1.0, 2.0, 2.0, 1e-8)
    480
    """
    lam = float(lam)
    l_g = float(lipschitz) + lam
    scale = max(float(g0_norm) * diameter, 0.0)
    if scale == 0.0:
        return 1
    n_fixed_point = max(math.ceil(math.log2(2.0 * scale / nu_target)), 0) + 1
    rate = 0.5 * min(1.0 - _EG_THETA**2, lam / l_g)
    span = (2.0 * l_g * diameter + float(g0_norm)) * diameter
    n_extragradient = max(
        math.ceil(2.0 * math.log(2.0 * span / nu_target) / -math.log1p(-rate)), 0
    )
    return n_fixed_point + n_extragradient + 1


def solve_prox_subproblem(
    operator,
    indices,
    normalizer,
    center,
    lam,
    domain,
    nu_target,
    *,
    lipschitz,
    operator_bound,
    u0=None,
    max_iter=None,
):
    """Certified ``nu``-accurate solution of ``VI(F_B + lambda (. - center), W)``.

    The proximal fixed-point iteration ``u <- Pi(center - F_B(u) / lambda)``
    while it contracts (factor ``L / lambda``), then extragradient with
    backtracking on the local Lipschitz constant (the subproblem is
    ``lambda``-strongly monotone, so it converges linearly). Either way it
    stops only on the exact certificate :func:`vi_certificate` plus a
    floating-point margin.

    Parameters
    ----------
    operator : callable
        ``operator(w, indices) -> sum_i F_i(w)``.
    indices : ndarray of int
        The batch.
    normalizer : float
        Divisor of the batch sum.
    center : ndarray of shape (d,)
        Proximal centre ``w_k`` (may lie outside ``W``).
    lam : float
        Proximal parameter (strong monotonicity).
    domain : Ball, Simplex or ProductDomain
    nu_target : float
        Accuracy to certify.
    lipschitz : float
        Lipschitz bound of ``F_B`` (used to bound the backtracking).
    operator_bound : float
        Public bound on ``|F_B(u)|`` over the domain (``M |B| / normalizer``).
        With ``lam``, ``center`` and the domain it fixes the floating-point
        margin and the iteration cap, so neither depends on the data.
    u0 : ndarray, optional
        Warm start (projected onto the domain).
    max_iter : int, optional
        Iterations (of either phase) before giving up. The default,
        :func:`guaranteed_inner_iterations`, is reached on no batch in exact
        arithmetic. A smaller cap is for tests only: hitting it on some
        batches and not others would make the abort a private release.

    Returns
    -------
    u : ndarray of shape (d,)
    certificate : float
        Certified accuracy (``<= nu_target``).
    n_iter : int

    Raises
    ------
    InnerSolverError
        If ``nu_target`` is below the floating-point margin (a decision on
        public inputs, taken before the data are touched), or if the
        certificate is not reached within ``max_iter`` iterations (with the
        default cap: floating-point failure, or invalid ``lipschitz`` or
        ``operator_bound``).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.projections import Ball
    >>> op = lambda w, idx: np.full(1, float(len(idx)))  # F_i(w) = 1
    >>> u, cert, _ = solve_prox_subproblem(op, np.arange(2), 2.0, np.zeros(1), 4.0,
    ...                                    Ball(1, 1.0), 1e-9, lipschitz=0.0,
    ...                                    operator_bound=1.0)
    >>> round(float(u[0]), 6), cert <= 1e-12
    (-0.25, True)
    """
    scale = 1.0 / normalizer
    gradient_bound = _gradient_bound(operator_bound, lam, center, domain)
    margin = _certificate_margin(gradient_bound, operator_bound, len(indices), domain)
    # The cap proves an exact certificate <= nu / 2; the stopping test adds
    # the margin to a computed value that may be off by the margin again.
    if not margin <= 0.25 * nu_target:
        raise InnerSolverError(
            f"The accuracy target {nu_target:.3g} is below the floating-point "
            f"margin {margin:.3g} of its certificate, so it cannot be certified; "
            "nothing was released. Use a larger inner_tol or smaller batches."
        )
    if max_iter is None:
        max_iter = guaranteed_inner_iterations(
            gradient_bound, lipschitz, lam, domain.diameter, nu_target
        )

    def F(u):
        return operator(u, indices) * scale

    u = domain.project(center if u0 is None else u0)
    f = F(u)
    g = f + lam * (u - center)
    cert = vi_certificate(g, u, domain)
    it = 0
    # Phase 1: the proximal fixed-point map u <- Pi(center - F(u) / lambda),
    # one evaluation per iteration, a contraction with factor L / lambda when
    # lambda > L (note section 2.3.3(a) with tau -> inf). Left as soon as it
    # stops contracting.
    while it < max_iter:
        if cert + margin <= nu_target:
            return u, max(cert, 0.0), it
        it += 1
        u_next = domain.project(center - f / lam)
        f_next = F(u_next)
        g_next = f_next + lam * (u_next - center)
        cert_next = vi_certificate(g_next, u_next, domain)
        if not cert_next <= 0.5 * cert:
            break
        u, f, g, cert = u_next, f_next, g_next, cert_next
    # Phase 2: extragradient with backtracking on the local Lipschitz
    # constant; linear convergence for the lambda-strongly monotone G.
    max_step = 1.0 / lam
    min_step = 0.5 / (float(lipschitz) + lam)
    eta = max_step
    while True:
        if cert + margin <= nu_target:
            return u, max(cert, 0.0), it
        if it >= max_iter:
            break
        it += 1
        v = domain.project(u - eta * g)
        gv = F(v) + lam * (v - center)
        step_len = float(np.linalg.norm(v - u))
        # Backtrack while the local Lipschitz estimate exceeds theta / eta; at
        # min_step the global bound already gives 0.5 <= theta.
        while (
            eta > min_step
            and eta * float(np.linalg.norm(gv - g)) > _EG_THETA * step_len
        ):
            eta = max(0.5 * eta, min_step)
            v = domain.project(u - eta * g)
            gv = F(v) + lam * (v - center)
            step_len = float(np.linalg.norm(v - u))
        u = domain.project(u - eta * gv)
        g = F(u) + lam * (u - center)
        cert = vi_certificate(g, u, domain)
        eta = min(1.5 * eta, max_step)
    raise InnerSolverError(
        f"The proximal subproblem was not certified to accuracy {nu_target:.3g} "
        f"within {max_iter} iterations (last certificate {cert:.3g}). NISPP's "
        "privacy guarantee needs this accuracy, so nothing was released. With "
        "the default cap this means floating-point failure or an invalid "
        "Lipschitz bound; a larger inner_tol relaxes the target."
    )


def nispp_prox_parameter(M, L, D, dim, operator_noise_std, n_iter, step_scale=1.0):
    """Proximal parameter ``lambda`` minimising the bound of Theorem 5.

    With ``gamma_k = 1`` and ``K + 1 = n_iter`` subproblems, Theorem 5's
    ``Z_0(K) / Gamma_K`` is ``1.5 lambda D^2 / (K+1) + (4 M^2 + 3 L^2 D^2 + 2.5
    d s^2) / lambda``, where the iterate noise is ``sigma ~ s / lambda`` and
    ``s`` is the noise on the operator scale (``z * 2M / B``). It is minimised
    at ``lambda* = sqrt((K+1) (4 M^2 + 3 L^2 D^2 + 2.5 d s^2) / (1.5 D^2))``;
    ``step_scale`` divides it (``1 / lambda`` plays the role of NSEG's
    step). Privacy holds for any ``lambda``: the noise is recomputed from it.

    Parameters
    ----------
    M, L, D : float
    dim : int
    operator_noise_std : float
        ``s = z * 2M / B``.
    n_iter : int
        ``K + 1``.
    step_scale : float, default=1.0

    Returns
    -------
    lam : float

    Examples
    --------
    >>> round(nispp_prox_parameter(1.0, 1.0, 2.0, 3, 0.0, 100), 2)
    16.33
    """
    num = n_iter * (4.0 * M**2 + 3.0 * L**2 * D**2 + 2.5 * dim * operator_noise_std**2)
    lam = math.sqrt(num / (1.5 * D**2)) / step_scale
    if not (lam > 0 and math.isfinite(lam)):
        raise ValueError("NISPP needs M > 0 or L > 0 and D > 0 to choose lambda.")
    return lam


def nispp(
    operator,
    domain,
    schedule,
    *,
    M,
    L,
    noise_multiplier,
    rng,
    step_scale=1.0,
    prox=None,
    inner_tol=1e-2,
    w0=None,
    averaging="uniform",
):
    """Run NISPP on a batched monotone operator; the only place noise is drawn.

    Parameters
    ----------
    operator : callable
        ``operator(w, indices) -> ndarray (d,)``: the **sum** over records
        ``indices`` of per-record monotone operators ``F_i(w)``, each bounded
        by ``M`` and ``L``-Lipschitz on the domain.
    domain : Ball, Simplex or ProductDomain
        Provides ``project``, ``min_linear``, ``diameter`` and ``center``.
    schedule : BatchSchedule
        ``K + 1`` releases, one per subproblem.
    M, L : float
        Public constants of the per-record operators.
    noise_multiplier : float
        ``z = sigma / s`` with ``s`` the certified sensitivity
        :func:`prox_sensitivity` at the accuracy target.
    rng : numpy.random.Generator
    step_scale : float, default=1.0
        Divides the theory ``lambda`` (:func:`nispp_prox_parameter`).
    prox : float, optional
        Fixed ``lambda`` overriding the theory rule.
    inner_tol : float, default=1e-2
        Accuracy target as a fraction of ``a^2 / (8 lambda)``
        (:func:`prox_accuracy_target`); must be at most 4 (the paper's
        ``nu_priv``).
    w0 : ndarray, optional
        Starting point (default: ``domain.center()``).
    averaging : {"uniform", "suffix"}, default="uniform"
        Average all noisy iterates (the paper) or the second half only.

    Returns
    -------
    SaddlePointResult
        ``info`` holds ``nu_target``, ``nu_priv`` (the paper's threshold),
        ``relaxed_steps`` (steps whose target was raised to what float64 can
        certify, with the noise raised to match; decided from the released
        centre and ``batch_size_bound``, the public bound on the batch size,
        :func:`poisson_batch_bound` under Poisson sampling) and ``max_noise_std`` (the
        largest noise of any step; ``noise_std`` is that of the others),
        ``last_iterate`` (the last noisy iterate), and the diagnostics
        ``max_certificate`` and ``inner_iterations``. The two diagnostics
        depend on the data without noise: they are for tests, not for
        release, and no estimator exposes them.

    References
    ----------
    Boob and Guzmán, Math. Program. 204 (2024), Algorithm 2, Propositions 9
    and 10, Theorems 5 and 7.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.projections import Ball
    >>> from skdp.solvers.sampling import BatchSchedule
    >>> targets = np.array([[0.5], [0.3], [0.1], [0.3]])
    >>> op = lambda w, idx: (w - targets[idx]).sum(axis=0)
    >>> sched = BatchSchedule(4, 100, 2, "poisson")
    >>> res = nispp(op, Ball(1, 1.0), sched, M=2.0, L=1.0, noise_multiplier=0.0,
    ...             rng=np.random.default_rng(0), prox=2.0)
    >>> bool(abs(res.solution[0] - 0.3) < 0.05)
    True
    """
    if not (0.0 < inner_tol <= 4.0):
        raise ValueError("inner_tol must be in (0, 4] (4 is the paper's nu_priv).")
    n_iter = schedule.n_releases
    dim = domain.dim
    B = schedule.normalizer
    if prox is None:
        prox = nispp_prox_parameter(
            M,
            L,
            domain.diameter,
            dim,
            noise_multiplier * 2.0 * M / B,
            n_iter,
            step_scale,
        )
    lam = float(prox)
    nu_target = prox_accuracy_target(M, lam, B, inner_tol)

    def step_sensitivity(nu):
        if schedule.sampling == "poisson":
            # dp-accounting's replace-one Poisson pair bounds each record's
            # effect *relative to its absence* by half the sensitivity. Adding
            # one record moves the batch operator by at most M / B, so the
            # same argument as Proposition 9 bounds that effect by
            # prox_sensitivity(M / 2, ...); the convention's is twice it.
            return 2.0 * prox_sensitivity(0.5 * M, lam, B, nu)
        return prox_sensitivity(M, lam, B, nu)

    sensitivity = step_sensitivity(nu_target)
    sigma = float(noise_multiplier) * sensitivity
    # Public bound on the batch size for the relaxation decision below (the
    # realised Poisson size reveals whether the changed record was drawn).
    if schedule.sampling == "poisson":
        size_bound = poisson_batch_bound(
            schedule.n_samples, schedule.sampling_probability
        )
    else:
        size_bound = int(schedule.batch_size)
    max_sigma, relaxed_steps = sigma, 0
    u = domain.center() if w0 is None else domain.project(w0)
    w = u.copy()
    w_sum = np.zeros(dim)
    max_cert = 0.0
    inner_total = 0
    first = _first_averaged(averaging, n_iter)
    scope, sampled = schedule.ledger_scope(), schedule.ledger_sampling
    for k, indices in enumerate(schedule.batches(rng)):
        # Under Poisson sampling the batch sum of |B| operators, divided by
        # the expected size, is (L |B| / B)-Lipschitz and bounded by M |B| / B.
        lipschitz = L * max(len(indices), 1) / B
        operator_bound = M * max(len(indices), 1) / B
        # Float64 cannot certify an accuracy below four times the round-off
        # margin (large batches, large lambda). The target is then relaxed on
        # this step and the noise follows its sensitivity: the same noise
        # multiplier, so the same privacy, decided on public inputs only: the
        # released centre w and the public size bound (the margin grows with
        # the batch size, so it covers every batch up to the bound; a larger
        # batch is the plan's failure event, batch_failure_event).
        public_size = max(size_bound, len(indices))
        public_bound = M * max(public_size, 1) / B
        floor = 4.0 * _certificate_margin(
            _gradient_bound(public_bound, lam, w, domain),
            public_bound,
            public_size,
            domain,
        )
        nu_step, sigma_step = nu_target, sigma
        if floor > nu_target:
            nu_step = floor * (1.0 + 1e-9)
            sigma_step = float(noise_multiplier) * step_sensitivity(nu_step)
            max_sigma, relaxed_steps = max(max_sigma, sigma_step), relaxed_steps + 1
        # The release must be a function of the batch and of the public
        # centre w only: warm-starting from the previous (unreleased) u would
        # carry an earlier batch's record into this step, which the parallel
        # composition of the single-pass variant and Proposition 9 exclude.
        # So the inner solver starts from Pi_W(w), a public point.
        u, cert, its = solve_prox_subproblem(
            operator,
            indices,
            B,
            w,
            lam,
            domain,
            nu_step,
            lipschitz=lipschitz,
            operator_bound=operator_bound,
            u0=None,
        )
        max_cert = max(max_cert, cert)
        inner_total += its
        # Line 5: the noisy iterate is NOT projected (the paper stresses it).
        with release_part(scope, k):
            w = u + gaussian_noise(
                rng,
                sigma_step,
                dim,
                sensitivity=step_sensitivity(nu_step),
                sampling=sampled,
                label="proximal point",
            )
        if k >= first:
            w_sum += w
    return SaddlePointResult(
        solution=domain.project(w_sum / (n_iter - first)),
        n_iter=n_iter,
        noise_std=sigma,
        sensitivity=sensitivity,
        step_size=1.0 / lam,
        info={
            "prox": lam,
            "nu_target": nu_target,
            "nu_priv": 2.0 * M**2 / (lam * B**2),
            "relaxed_steps": relaxed_steps,
            "batch_size_bound": size_bound,
            "max_noise_std": max_sigma,
            "max_certificate": max_cert,
            "inner_iterations": inner_total,
            "last_iterate": w,  # the noisy release, not the private u
        },
    )
