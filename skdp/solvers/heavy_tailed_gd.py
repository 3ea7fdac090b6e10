"""Full-batch clipped DP-GD (Algorithm 1) and the known-Lipschitz reduction (Algorithm 4).

:func:`clipped_dp_gd` is the workhorse: each step releases the sum of
per-sample gradients clipped to ``C_t`` plus ``N(0, (2 C_t z)**2 I)``
(replace-one sensitivity ``2 C_t``), so ``T`` steps are ``T`` Gaussian events
of multiplier ``z`` whatever the clip levels. The clip level is either fixed
(public) or re-estimated at a few public checkpoints as a private quantile of
the per-sample gradient norms at the current iterate
(:func:`~skdp.solvers.heavy_tailed_common.noisy_log_quantile`). Everything
after the noisy sum -- step, divergence guard, projection, averaging -- is
post-processing.

:func:`known_lipschitz` is Algorithm 4 of Asi, Liu and Tian: rows whose
per-row Lipschitz bound exceeds a threshold are replaced by the zero function
(a per-record map, so neighbours stay neighbours), then a DP solver for
Lipschitz losses runs on the result. The paper leaves that solver open; we
use :func:`clipped_dp_gd`.
"""

import math
from dataclasses import dataclass, field

import numpy as np

from ..losses import LogisticLoss, SquaredLoss
from ..privacy import ComposedDpEvent, gaussian_noise, gaussian_steps
from .heavy_tailed_common import (
    BISECTION_STEPS,
    DEFAULT_TARGET,
    RANGE_STEPS,
    SEARCH_OCTAVES,
    UNRELIABLE_SLACK,
    clip_search_range,
    default_scales,
    fast_row_norms,
    noisy_log_quantile,
    noisy_median,
    quantile_reliable,
    row_lipschitz_bounds,
    safe_derivatives,
    scale_quantile,
    scales_estimable,
    split_gdp,
    tail_fraction,
)
from .heavy_tailed_kernels import clipped_gradient_sum

__all__ = [
    "FullBatchPlan",
    "GDResult",
    "make_full_batch_plan",
    "clipped_dp_gd",
    "known_lipschitz",
    "make_known_lipschitz_plan",
    "known_lipschitz_scales",
    "KnownLipschitzPlan",
    "checkpoint_schedule",
    "practical_step_size",
]

#: A step whose released gradient grows by more than this factor (and is well
#: above the noise floor) is treated as divergence: undo it, halve the step.
_GUARD_GROWTH = 1.5
_GUARD_NOISE_FLOOR = 3.0
#: Clip level before the first private estimate: this many octaves below the
#: ceiling of the search range (heavy clipping is the safe side).
_FALLBACK_OCTAVES = 8.0
#: Step-size rule (practical_step_size): full 1/L step below this clipped
#: fraction, and never below the floor.
_STEP_P0 = 0.006
_STEP_FLOOR = 0.25
#: Largest fraction of rows Algorithm 4's truncation aims to drop.
_MAX_TRUNC_FRACTION = 0.01


def checkpoint_schedule(n_steps):
    """Steps at which the clip level is re-estimated: 0, 1, 3, 7, 15, ...

    Gradient norms change fastest at the start, so checkpoints are
    geometrically spaced (public, data independent).

    Parameters
    ----------
    n_steps : int

    Returns
    -------
    tuple of int

    Examples
    --------
    >>> checkpoint_schedule(30)
    (0, 1, 3, 7, 15)
    """
    out, k = [], 1
    while k - 1 < n_steps:
        out.append(k - 1)
        k *= 2
    return tuple(out)


def practical_step_size(curvature, clip_fraction):
    """Default full-batch step for standardized features (public rule).

    ``max(0.25, min(1, sqrt(0.006 / p)) / curvature)``: the classical
    ``1 / L`` step when the planned clipped fraction ``p`` is small (little
    noise), and a smaller step, hence more averaging of the noise, when ``p``
    is large (noise dominates). Measured on the benchmark's synthetic data
    (see ``benchmarks/results/heavy_tailed.md``); the divergence guard of
    :func:`clipped_dp_gd` halves it if the data are worse conditioned.

    Parameters
    ----------
    curvature : float
        Bound on the loss's second derivative (1 squared/Huber, 1/4 logistic).
    clip_fraction : float
        Planned fraction ``p`` of clipped per-sample gradients.

    Returns
    -------
    float

    Examples
    --------
    >>> practical_step_size(0.25, 0.0), practical_step_size(1.0, 0.44)
    (4.0, 0.25)
    """
    scale = 1.0 if clip_fraction <= _STEP_P0 else math.sqrt(_STEP_P0 / clip_fraction)
    return max(_STEP_FLOOR, scale / float(curvature))


@dataclass(frozen=True)
class FullBatchPlan:
    """Noise of one run of :func:`clipped_dp_gd` (public, data independent).

    Parameters
    ----------
    n_steps : int
        Gradient steps ``T``; each is ``GaussianDpEvent(z_grad)``.
    z_grad : float
        Multiplier of every clipped-gradient sum (sensitivity ``2 C_t``).
    clip_fraction : float
        Target fraction ``p`` of clipped per-sample gradients
        (:func:`~skdp.solvers.heavy_tailed_common.tail_fraction`).
    checkpoints : tuple of int
        Steps at which the clip level is privately re-estimated (empty if
        the clip level is public or a search would be unreliable).
    z_count : float
        Multiplier of each bisection count (sensitivity 1).
    bisection_steps : int
        Counts per private clip level.
    """

    n_steps: int
    z_grad: float
    clip_fraction: float = 0.0
    checkpoints: tuple = ()
    z_count: float = math.inf
    bisection_steps: int = BISECTION_STEPS

    @property
    def n_counts(self):
        return len(self.checkpoints) * self.bisection_steps

    @property
    def event(self):
        """The run as a DpEvent (counts, then gradient sums)."""
        parts = []
        if self.n_counts:
            parts.append(gaussian_steps(self.z_count, self.n_counts))
        parts.append(gaussian_steps(self.z_grad, self.n_steps))
        return ComposedDpEvent(parts)


def make_full_batch_plan(
    mu,
    n,
    d,
    n_steps,
    *,
    adaptive_clip=True,
    clip_share=0.08,
    reserved_share=0.0,
    target=DEFAULT_TARGET,
):
    """Split a GDP budget ``mu`` between clip estimation and gradient steps.

    Shares are fractions of ``mu**2``; ``reserved_share`` is spent elsewhere
    (e.g. on scale quantiles over the same records). If a clip search on
    ``n`` records would be unreliable (:func:`quantile_reliable`), no
    checkpoint is planned and the solver uses its fallback clip level.

    Parameters
    ----------
    mu : float
        GDP budget of the records of this run (``inf``: no noise).
    n, d : int
        Records and dimension of the run (public).
    n_steps : int
    adaptive_clip : bool, default=True
        Estimate clip levels privately at :func:`checkpoint_schedule`.
    clip_share : float, default=0.08
    reserved_share : float, default=0.0
    target : QuantileTarget, optional

    Returns
    -------
    FullBatchPlan

    Examples
    --------
    >>> from skdp.privacy import gdp_mu_of
    >>> plan = make_full_batch_plan(0.5, 10_000, 5, 30)
    >>> plan.checkpoints, round(gdp_mu_of(plan.event), 6)
    ((0, 1, 3, 7, 15), 0.5)
    """
    checkpoints = checkpoint_schedule(n_steps) if adaptive_clip else ()
    grad_share = 1.0 - reserved_share
    if checkpoints:
        n_counts = len(checkpoints) * BISECTION_STEPS
        z_count, z_grad = split_gdp(
            mu, [(n_counts, clip_share), (n_steps, grad_share - clip_share)]
        )
        p = tail_fraction(z_grad, n, d, target)
        if quantile_reliable(n, p, z_count):
            return FullBatchPlan(n_steps, z_grad, p, checkpoints, z_count)
    (z_grad,) = split_gdp(mu, [(n_steps, grad_share)])
    return FullBatchPlan(n_steps, z_grad, tail_fraction(z_grad, n, d, target))


@dataclass
class GDResult:
    """Output of :func:`clipped_dp_gd` (all entries are private releases).

    Attributes
    ----------
    coef : ndarray of shape (d,)
        Average of the iterates of the second half of the run.
    clip_levels : ndarray of shape (T,)
        Clip level used at each step.
    step_sizes : ndarray of shape (T,)
        Step size used at each step.
    n_iter : int
    """

    coef: np.ndarray
    clip_levels: np.ndarray
    step_sizes: np.ndarray
    n_iter: int
    extra: dict = field(default_factory=dict)


def _project(w, center, radius):
    if math.isinf(radius):
        return w
    diff = w - center
    dist = float(np.linalg.norm(diff))
    return w if dist <= radius else center + diff * (radius / dist)


def _prox_step(w, data_grad, lr, reg, center, radius):
    # argmin_x lr <g, x> + lr reg/2 ||x - center||^2 + 1/2 ||x - w||^2, then
    # projection (Algorithm 1, line 5, with the regulariser centred at center)
    x = center + (w - lr * data_grad - center) / (1.0 + lr * reg)
    return _project(x, center, radius)


def clipped_dp_gd(
    X,
    y,
    loss,
    plan,
    rng,
    *,
    step_size,
    clip=None,
    clip_range=None,
    clip_start=None,
    clip_cap=math.inf,
    w0=None,
    center=None,
    reg=0.0,
    radius=math.inf,
    row_norms=None,
):
    """Full-batch DP-GD with per-sample clipping (Algorithm 1, practical form).

    Step ``t`` releases ``S_t = sum_i clip_{C_t}(grad_i(w_t)) + N(0, (2 C_t
    z)**2 I)`` and moves to the minimiser of
    ``eta <S_t / n, x> + eta reg / 2 ||x - center||**2 + ||x - w_t||**2 / 2``
    projected on ``B(center, radius)`` (Algorithm 1, line 5). The per-sample
    gradient of a GLM is ``loss'(<x_i, w>, y_i) x_i``; it is clipped by
    clipping the scalar derivative to ``C_t / ||x_i||``.

    Privacy: ``plan.n_steps`` Gaussian sums of multiplier ``plan.z_grad``
    plus the private clip levels (``plan.n_counts`` counts), i.e.
    ``plan.event``. ``n`` is public.

    Practical choices (not from the paper, all post-processing): a constant
    step ``step_size`` halved whenever a released gradient grows by more than
    1.5x while being well above its noise level (divergence guard), and the
    average of the iterates of the second half of the run (the paper uses
    weights ``t + 4`` with steps ``4 / (lambda (t + 1))``).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    loss : _GLMLoss
    plan : FullBatchPlan
    rng : numpy.random.Generator
    step_size : float
    clip : float, optional
        Public clip level. ``None``: at ``plan.checkpoints`` the clip level
        is the private ``1 - plan.clip_fraction`` quantile of the per-sample
        gradient norms, searched in ``clip_range``; before the first
        checkpoint (or without any) it is ``clip_start``.
    clip_range : tuple (low, high), optional
        ``log2`` search range (from earlier private releases); required if
        ``clip`` is ``None``.
    clip_start : float, optional
        Clip level before the first checkpoint; default
        ``2**(clip_range[1] - 8)`` (heavy clipping is the safe side).
    clip_cap : float, default=inf
        Upper bound on the clip level (the truncation level of Algorithm 4).
    w0 : ndarray of shape (d,), optional
        Start (default ``center`` or 0).
    center : ndarray of shape (d,), optional
        Centre of the regulariser and of the domain ball (default 0).
    reg : float, default=0.0
        Coefficient of ``reg / 2 * ||w - center||**2``.
    radius : float, default=inf
    row_norms : ndarray of shape (n,), optional

    Returns
    -------
    GDResult

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(500, 2)); y = X @ np.array([1.0, -2.0])
    >>> plan = make_full_batch_plan(np.inf, 500, 2, 40)
    >>> res = clipped_dp_gd(X, y, SquaredLoss(), plan, rng, step_size=0.5, clip_range=(-10, 6))
    >>> np.round(res.coef, 3)
    array([ 1., -2.])
    """
    n, d = X.shape
    if row_norms is None:
        row_norms = fast_row_norms(X)
    center = np.zeros(d) if center is None else np.asarray(center, dtype=float)
    w = center.copy() if w0 is None else np.asarray(w0, dtype=float).copy()
    w = _project(w, center, radius)
    T = int(plan.n_steps)
    q = 1.0 - plan.clip_fraction
    if clip is None:
        if clip_range is None:
            raise ValueError("A private clip level needs a clip_range.")
        checkpoints = set(plan.checkpoints)
        C = (
            2.0 ** (clip_range[1] - _FALLBACK_OCTAVES)
            if clip_start is None
            else clip_start
        )
    else:
        checkpoints = set()
        C = float(clip)
    with np.errstate(divide="ignore"):
        inv_norms = np.where(row_norms > 0, 1.0 / row_norms, 0.0)
    lr = float(step_size)
    clip_levels = np.empty(T)
    step_sizes = np.empty(T)
    acc = np.zeros(d)
    n_avg = 0
    first_avg = T // 2
    prev = None  # (point, released data gradient, norm of the full gradient)
    X = np.ascontiguousarray(X, dtype=float)
    y = np.ascontiguousarray(y, dtype=float)
    for t in range(T):
        if t in checkpoints:
            with np.errstate(over="ignore", invalid="ignore"):
                g = safe_derivatives(loss, X @ w, y)
                norms = np.abs(g) * row_norms
            C = min(
                clip_cap,
                noisy_log_quantile(
                    norms,
                    q,
                    plan.z_count,
                    rng,
                    log2_range=clip_range,
                    steps=plan.bisection_steps,
                ),
            )
        C = min(C, clip_cap)
        # sum of per-sample gradients clipped to C (scalar derivative clipped
        # to C / ||x_i||); rows with zero norm (e.g. truncated) are skipped
        clipped_sum = clipped_gradient_sum(X, y, w, inv_norms, C, loss)
        noisy_sum = clipped_sum + gaussian_noise(rng, 2.0 * C * plan.z_grad, d)
        data_grad = noisy_sum / n
        clip_levels[t] = C
        gnorm = float(np.linalg.norm(data_grad + reg * (w - center)))
        noise_norm = 2.0 * C * plan.z_grad * math.sqrt(d) / n
        if (
            prev is not None
            and gnorm > _GUARD_GROWTH * prev[2]
            and gnorm > _GUARD_NOISE_FLOOR * noise_norm
        ):
            # divergence guard (post-processing): back to the previous point
            # with half the step, using the gradient already released there
            lr *= 0.5
            w = _prox_step(prev[0], prev[1], lr, reg, center, radius)
        else:
            prev = (w, data_grad, gnorm)
            w = _prox_step(w, data_grad, lr, reg, center, radius)
        step_sizes[t] = lr
        if t >= first_avg:
            acc += w
            n_avg += 1
    coef = acc / n_avg if n_avg else w
    return GDResult(coef, clip_levels, step_sizes, T)


@dataclass(frozen=True)
class KnownLipschitzPlan:
    """Noise of :func:`known_lipschitz`: scale quantiles, then the GD run.

    Parameters
    ----------
    gd : FullBatchPlan
    n_scales : int
        Private scale quantiles over all records (truncation level, and the
        target scale for the squared loss without a radius); 0 if public.
    z_scale : float
        Multiplier of their counts.
    trunc_fraction : float
        Fraction of rows the truncation level aims to drop.
    default_scales : bool
        Too few records for private scales: public defaults for
        standardized data (:func:`default_scales`) are used instead.
    """

    gd: FullBatchPlan
    n_scales: int = 0
    z_scale: float = math.inf
    trunc_fraction: float = 0.0
    default_scales: bool = False

    @property
    def event(self):
        parts = []
        if self.n_scales:
            parts.append(gaussian_steps(self.z_scale, self.n_scales * RANGE_STEPS))
        parts.append(self.gd.event)
        return ComposedDpEvent(parts)


def make_known_lipschitz_plan(
    mu,
    n,
    d,
    n_steps,
    *,
    n_scales=1,
    adaptive_clip=True,
    bound_share=0.1,
    target=DEFAULT_TARGET,
):
    """Budget split of Algorithm 4 + DP-GD (shares of ``mu**2``).

    A fifth of ``bound_share`` pays for the ``n_scales`` scale quantiles
    (truncation level and, if needed, target scale), the rest for the clip
    levels; the remainder pays for the gradients.

    Parameters
    ----------
    mu : float
    n, d : int
    n_steps : int
    n_scales : int, default=1
        0 when the truncation level and clip level are public.
    adaptive_clip : bool, default=True
    bound_share : float, default=0.1
    target : QuantileTarget, optional
        Rule for the clipped fraction.

    Returns
    -------
    KnownLipschitzPlan

    Examples
    --------
    >>> from skdp.privacy import gdp_mu_of
    >>> plan = make_known_lipschitz_plan(0.3, 10_000, 5, 30)
    >>> round(gdp_mu_of(plan.event), 6)
    0.3
    """
    scale_share = 0.2 * bound_share if n_scales else 0.0
    use_defaults = False
    if n_scales:
        (z_scale,) = split_gdp(mu, [(n_scales * RANGE_STEPS, scale_share)])
        if not scales_estimable(n, z_scale):
            use_defaults, n_scales, scale_share = True, 0, 0.0
    clip_share = bound_share - scale_share
    gd = make_full_batch_plan(
        mu,
        n,
        d,
        n_steps,
        adaptive_clip=adaptive_clip,
        clip_share=clip_share,
        reserved_share=scale_share,
        target=target,
    )
    if not n_scales:
        return KnownLipschitzPlan(gd, default_scales=use_defaults)
    trunc = min(_MAX_TRUNC_FRACTION, gd.clip_fraction / 4.0)
    return KnownLipschitzPlan(gd, n_scales, z_scale, trunc)


def known_lipschitz_scales(
    loss, radius, *, public_truncation=False, public_clip=False, intercept=False
):
    """Number of private scale quantiles :func:`known_lipschitz` needs.

    Truncation level (unless public), target scale (squared loss without a
    radius, or to bound the intercept's warm start) and the target median
    (regression with an intercept and private clipping).

    Parameters
    ----------
    loss : _GLMLoss
    radius : float
    public_truncation, public_clip : bool, default=False
    intercept : bool, default=False
        Whether the last column is a public constant intercept column.

    Returns
    -------
    int

    Examples
    --------
    >>> from skdp.losses import SquaredLoss
    >>> known_lipschitz_scales(SquaredLoss(), math.inf)
    2
    >>> known_lipschitz_scales(SquaredLoss(), math.inf, intercept=True)
    3
    """
    unbounded = math.isinf(radius) and isinstance(loss, SquaredLoss)
    median = _warm_start_intercept(loss, intercept, public_clip)
    target = (unbounded and not public_clip) or median
    return int(not public_truncation) + int(target) + int(median)


def _warm_start_intercept(loss, intercept, public_clip):
    return bool(intercept and not public_clip and not isinstance(loss, LogisticLoss))


def known_lipschitz(
    X,
    y,
    loss,
    plan,
    rng,
    *,
    step_size,
    truncation=None,
    clip=None,
    radius=math.inf,
    row_norms=None,
    intercept_index=None,
):
    """Algorithm 4 (KnownLipReduction) followed by clipped DP-GD.

    1. Per-row Lipschitz bounds ``L_i`` (:func:`row_lipschitz_bounds`).
    2. Truncation level ``C``: ``truncation`` if given (public, e.g. the
       paper's ``G_k (n sqrt(rho) / sqrt(d))**(1/k)``), else the private
       ``1 - plan.trunc_fraction`` quantile of ``L_i`` (at most 1% of the
       rows; on data too small for that quantile, a lower one times 4, see
       :func:`scale_quantile`).
    3. Rows with ``L_i > C`` become the zero function (row and target set to
       0: zero gradient for every loss). A per-record map, so neighbouring
       datasets stay neighbours.
    4. :func:`clipped_dp_gd` on the result. When ``L_i`` is a true Lipschitz
       bound (finite radius, or logistic/Huber) the clip level is capped at
       ``C``, so the surviving losses are ``C``-Lipschitz as the paper
       needs, and ``C`` is the ceiling of the clip search. For the squared
       loss without a radius, ``L_i`` ranks rows by norm and the ceiling is
       ``4 C Y`` with ``Y`` a private quantile of ``|y|``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    loss : _GLMLoss
    plan : KnownLipschitzPlan
    rng : numpy.random.Generator
    step_size : float
    truncation : float, optional
    clip : float, optional
        Public clip level (default: private, adaptive).
    radius : float, default=inf
        Domain radius; iterates are projected on ``B(0, radius)``.
    row_norms : ndarray of shape (n,), optional
    intercept_index : int, optional
        Column holding a public constant 1. For regression losses with a
        private clip level, the run starts with that coefficient at a
        private median of ``y`` (found in ``[-Y, Y]`` with ``Y`` the private
        target scale): heavy clipping makes a far-off intercept slow to
        reach, and the warm start costs one more scale quantile.

    Returns
    -------
    GDResult
        ``extra["truncation"]`` holds the truncation level (private).

    References
    ----------
    Asi, Liu and Tian, "Private stochastic convex optimization with heavy
    tails: near-optimality from simple reductions", NeurIPS 2024, Alg. 4.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import LogisticLoss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_t(5, size=(2000, 3)); y = np.sign(X[:, 0] + 0.1)
    >>> plan = make_known_lipschitz_plan(1.0, 2000, 3, 30)
    >>> res = known_lipschitz(X, y, LogisticLoss(), plan, rng, step_size=1.0)
    >>> bool(res.coef[0] > 1.0)
    True
    """
    n, d = X.shape
    if row_norms is None:
        row_norms = fast_row_norms(X)
    bounds = row_lipschitz_bounds(loss, row_norms, y, radius)
    # with radius=inf the squared-loss "bounds" are only a ranking
    is_lipschitz = not (math.isinf(radius) and isinstance(loss, SquaredLoss))
    tail = 0.0 if plan.z_scale == 0 else plan.trunc_fraction
    warm = _warm_start_intercept(loss, intercept_index is not None, clip is not None)
    need_target = (clip is None and not is_lipschitz) or warm
    needed = (truncation is None) + need_target + warm
    target = None
    w0 = np.zeros(d)
    if plan.default_scales:
        # too few records for private scales: public ones (standardized data)
        B, target = default_scales(d, loss)
        if truncation is None:
            ref = row_lipschitz_bounds(
                loss, np.array([B]), np.array([target or 0.0]), radius
            )
            truncation = float(ref[0]) * UNRELIABLE_SLACK
    elif plan.n_scales != needed:
        raise ValueError(
            "The plan does not pay for the scale quantiles this run needs."
        )
    else:
        if truncation is None:
            truncation = scale_quantile(bounds, tail, plan.z_scale, rng)
        if need_target:
            target = scale_quantile(np.abs(y), tail, plan.z_scale, rng)
        if warm:
            w0[intercept_index] = noisy_median(y, target, plan.z_scale, rng)
    # Algorithm 4: rows above the truncation level become the zero function;
    # a zero norm makes every solver step skip the row (no copy of X)
    keep = bounds <= truncation
    norms_t = np.where(keep, row_norms, 0.0)
    clip_range = None
    if clip is None:
        if is_lipschitz:
            clip_range = (math.log2(truncation) - SEARCH_OCTAVES, math.log2(truncation))
        else:
            clip_range = clip_search_range(loss, truncation, target)
    res = clipped_dp_gd(
        X,
        y,
        loss,
        plan.gd,
        rng,
        step_size=step_size,
        clip=clip,
        clip_range=clip_range,
        clip_cap=truncation if is_lipschitz else math.inf,
        w0=w0,
        radius=radius,
        row_norms=norms_t,
    )
    res.extra["truncation"] = float(truncation)
    return res
