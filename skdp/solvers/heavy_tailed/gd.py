"""Full-batch clipped DP gradient descent (Algorithm 1, practical form).

:func:`clipped_dp_gd` is the workhorse: each step releases the sum of
per-sample gradients clipped to ``C_t`` plus ``N(0, (2 C_t z)**2 I)``
(replace-one sensitivity ``2 C_t``), so ``T`` steps are ``T`` Gaussian events
of multiplier ``z`` whatever the clip levels. The clip level is either fixed
(public) or re-estimated at a few public checkpoints as a private quantile of
the per-sample gradient norms at the current iterate
(:func:`~skdp.solvers.heavy_tailed.common.noisy_log_quantile`). Everything
after the noisy sum -- step, divergence guard, projection, averaging -- is
post-processing.
"""

import math
from dataclasses import dataclass

import numpy as np

from ...privacy import ComposedDpEvent, gaussian_noise, gaussian_steps
from ...utils._sparse import as_float_rows
from ...utils._sparse import row_norms as any_row_norms
from .._distributed import as_float_records, is_dask_collection, persist_records
from .bounds import (
    BISECTION_STEPS,
    DEFAULT_TARGET,
    noisy_log_quantile,
    quantile_reliable,
    tail_fraction,
)
from .common import (
    noise_std,
    safe_derivatives,
    split_gdp,
)
from .kernels import clipped_gradient_sum
from .result import HeavyTailedResult

__all__ = [
    "FullBatchPlan",
    "make_full_batch_plan",
    "clipped_dp_gd",
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
#: make_full_batch_plan(search_at_cap=False): no clip search from this
#: multiple of the largest clipped fraction on (public; 1.0 lost accuracy on
#: wine at epsilon = 5, benchmarks/results/multiclass_real.md).
_NO_SEARCH_FACTOR = 1.5
#: clipped_dp_gd(step_growth > 1): steps per test of the mean released
#: gradient, and its threshold in noise standard deviations per coordinate.
ADAPT_WINDOW = 4
ADAPT_MARGIN = 1.5


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
    """Default full-batch step for features of unit scale (public rule).

    ``max(0.25, min(1, sqrt(0.006 / p)) / curvature)``: the classical
    ``1 / L`` step when the planned clipped fraction ``p`` is small (little
    noise), and a smaller step, hence more averaging of the noise, when ``p``
    is large (noise dominates). Measured on synthetic data (study at
    f9c3d36: ``python -m benchmarks.heavy_tailed.main``). The solvers divide
    it by
    ``s**2``, ``s`` the private feature scale
    (:mod:`~skdp.solvers.heavy_tailed.units`), and the divergence guard of
    :func:`clipped_dp_gd` cuts it if the data are worse conditioned.

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
        (:func:`~skdp.solvers.heavy_tailed.common.tail_fraction`).
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
    search_at_cap=True,
    checkpoints=None,
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
    search_at_cap : bool, default=True
        ``False``: when the rule's uncapped clipped fraction is at least
        1.5 times ``target.max_fraction`` (the noise asks for much more
        clipping than the rule allows), plan no clip search; the solver
        then uses its fixed fallback clip level and the gradients get the
        search's share.
    checkpoints : sequence of int, optional
        Steps of the clip search (public; default
        :func:`checkpoint_schedule`). Before the first one the solver uses
        its fallback clip level. The search's share is the same however
        many there are. Duplicates and steps outside ``[0, n_steps)`` are
        dropped (the run would not search there).

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
    if checkpoints is None:
        checkpoints = checkpoint_schedule(n_steps)
    # the run searches at each distinct step in [0, n_steps) once (a set):
    # charge exactly those searches, no more
    steps = {int(t) for t in checkpoints if 0 <= int(t) < n_steps}
    checkpoints = tuple(sorted(steps)) if adaptive_clip else ()
    grad_share = 1.0 - reserved_share
    if checkpoints:
        n_counts = len(checkpoints) * BISECTION_STEPS
        z_count, z_grad = split_gdp(
            mu, [(n_counts, clip_share), (n_steps, grad_share - clip_share)]
        )
        p = tail_fraction(z_grad, n, d, target)
        raw = target.scale * z_grad * math.sqrt(d) / max(n, 1)
        capped = not search_at_cap and raw >= _NO_SEARCH_FACTOR * target.max_fraction
        if quantile_reliable(n, p, z_count) and not capped:
            return FullBatchPlan(n_steps, z_grad, p, checkpoints, z_count)
    (z_grad,) = split_gdp(mu, [(n_steps, grad_share)])
    return FullBatchPlan(n_steps, z_grad, tail_fraction(z_grad, n, d, target))


def _project(w, center, radius):
    if math.isinf(radius):
        return w
    diff = w - center
    dist = float(np.linalg.norm(diff))
    return w if dist <= radius else center + diff * (radius / dist)


def _stage_reg(reg, stage_coefs, clip_levels, windows):
    if not callable(reg):
        return reg
    return reg(list(stage_coefs), clip_levels.copy(), list(windows))


def _first_averaged(n_steps, average_from):
    if not 0.0 <= average_from < 1.0:
        raise ValueError("average_from must be in [0, 1).")
    return int(math.floor(average_from * n_steps))


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
    stages=None,
    average_from=0.5,
    step_growth=1.0,
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
    step ``step_size``, cut whenever a released gradient, well above its
    noise level, is more than 1.5x the previous one or the smallest one since
    the clip level last changed (divergence guard: the run restarts from that
    best point with the step divided by the last growth factor, at least
    2), and the average of the iterates of the second half of the run (the
    paper uses weights ``t + 4`` with steps ``4 / (lambda (t + 1))``).

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
    reg : float or ndarray of shape (d,), default=0.0
        Coefficient of ``reg / 2 * ||w - center||**2`` (per coordinate if an
        array, e.g. 0 on an unpenalized intercept column).
    radius : float, default=inf
    row_norms : ndarray of shape (n,), optional
    stages : sequence of (int, float or ndarray[, int]), optional
        A penalty path inside the same run: ``(n_steps_k, reg_k)`` pairs
        whose steps add up to ``plan.n_steps``; stage ``k`` uses ``reg_k``
        instead of ``reg``, warm started at the end of stage ``k - 1``. An
        optional third entry is the number of final iterates of the stage
        that are averaged (default: half of them, rounded up). ``reg_k``
        may be a callable ``reg_k(stage_coefs, clip_levels, windows)`` of
        the earlier stages' averages, the clip levels so far and the
        earlier stages' averaged iterates (arrays of shape (m_k, d)), all
        private releases, so the penalty is post-processing; it is
        evaluated when the stage starts. The
        average of the iterates of each stage is in
        ``stage_coefs`` and ``coef`` is the last one. The plan (and
        so the privacy cost) is that of one run of ``plan.n_steps`` steps:
        the penalty is data independent, and the stage averages are
        post-processing. ``None``: one stage, ``(plan.n_steps, reg)``.
    average_from : float, default=0.5
        Without ``stages``: ``coef`` averages the iterates from step
        ``floor(average_from * T)`` on (0.5: the second half). Public, and
        post-processing: a longer tail averages more of the gradient noise
        once the run has converged.
    step_growth : float, default=1.0
        Largest factor by which the step may grow before the averaged tail
        (1: constant step, the behaviour before this option). Without
        ``stages``, every :data:`ADAPT_WINDOW` steps before the first
        averaged step, the step doubles (up to ``step_growth`` times
        ``step_size``) when the mean of the window's released gradients is
        well above its noise (norm above ``ADAPT_MARGIN sqrt(d)`` times the
        noise standard deviation of that mean): the run is still moving
        consistently in one direction, i.e. it has not converged. A
        noise-dominated run keeps its step. Post-processing of released
        gradients and public noise levels; the growth stops once the
        divergence guard has fired.

    Returns
    -------
    HeavyTailedResult
        ``coef``, ``clip_levels``, ``step_sizes``, ``n_iter``, ``plan`` and,
        with ``stages``, ``stage_coefs``.

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
        row_norms = any_row_norms(X)
    center = np.zeros(d) if center is None else np.asarray(center, dtype=float)
    w = center.copy() if w0 is None else np.asarray(w0, dtype=float).copy()
    w = _project(w, center, radius)
    T = int(plan.n_steps)
    q = 1.0 - plan.clip_fraction
    staged = stages is not None
    if staged:
        stages = [
            (int(st[0]), st[1], int(st[2]) if len(st) > 2 else None) for st in stages
        ]
        if sum(k for k, _, _ in stages) != T or min(k for k, _, _ in stages) < 1:
            raise ValueError("stages must have positive lengths adding up to n_steps.")
    else:
        stages = [(T, reg, T - _first_averaged(T, average_from))]
    # step -> (stage index, first averaged step of the stage, last step)
    stage_of, start = [], 0
    for k, (length, _, n_last) in enumerate(stages):
        skip = length // 2 if n_last is None else length - min(max(n_last, 1), length)
        stage_of += [(k, start + skip, start + length - 1)] * length
        start += length
    stage_coefs = []
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
    # dask: per chunk, silent on the worker (a zero norm's 1/0 must not warn
    # there, outside the driver's np.errstate)
    if is_dask_collection(row_norms):
        inv_norms = row_norms.map_blocks(_inverse_norms, dtype=np.float64)
    else:
        inv_norms = _inverse_norms(row_norms)
    lr = float(step_size)
    lr_max = lr * max(float(step_growth), 1.0)
    adapt = not staged and lr_max > lr
    win_sum, win_var, win_len = np.zeros(d), 0.0, 0
    clip_levels = np.empty(T)
    step_sizes = np.empty(T)
    acc = np.zeros(d)
    n_avg = 0
    first_avg = stage_of[0][1]
    stage_windows, window = [], []
    reg = _stage_reg(stages[0][1], stage_coefs, clip_levels[:0], stage_windows)
    # divergence guard state: the last accepted point and the accepted point
    # with the smallest gradient since the clip level last changed, each as
    # (point, released data gradient, norm of the full gradient)
    prev = best = None
    X = X if is_dask_collection(X) else as_float_rows(X)  # sparse stays CSR
    y = as_float_records(y, contiguous=True)
    X, y, inv_norms, row_norms = persist_records(X, y, inv_norms, row_norms)
    for t in range(T):
        k, first_avg, last = stage_of[t]
        if staged and t > 0 and k != stage_of[t - 1][0]:
            # new penalty: gradient norms of different objectives differ
            reg = _stage_reg(stages[k][1], stage_coefs, clip_levels[:t], stage_windows)
            prev = best = None
        if t in checkpoints:
            best = None  # gradient norms at different clip levels differ

            norms = _gradient_norms(X, y, row_norms, w, loss)
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
        noisy_sum = clipped_sum + gaussian_noise(
            rng,
            noise_std(2.0 * C, plan.z_grad),
            d,
            sensitivity=2.0 * C,
            label="clipped gradient sum",
        )
        data_grad = noisy_sum / n
        clip_levels[t] = C
        gnorm = float(np.linalg.norm(data_grad + reg * (w - center)))
        noise_norm = noise_std(2.0 * C, plan.z_grad) * math.sqrt(d) / n
        diverging = prev is not None and gnorm > _GUARD_NOISE_FLOOR * noise_norm
        diverging = diverging and (
            gnorm > _GUARD_GROWTH * prev[2]  # one step blew up
            or (best is not None and gnorm > _GUARD_GROWTH * best[2])  # creeping up
        )
        if adapt and t < first_avg:
            # step growth (post-processing): is the window's mean released
            # gradient above the noise of that mean?
            win_sum += data_grad + reg * (w - center)
            win_var += (noise_std(2.0 * C, plan.z_grad) / n) ** 2
            win_len += 1
            if win_len == ADAPT_WINDOW:
                mean_norm = float(np.linalg.norm(win_sum)) / win_len
                noise_mean = math.sqrt(win_var * d) / win_len
                if not diverging and mean_norm > ADAPT_MARGIN * noise_mean:
                    lr = min(lr_max, 2.0 * lr)
                win_sum, win_var, win_len = np.zeros(d), 0.0, 0
        if diverging:
            adapt = False
            # divergence guard (post-processing): back to the best recent
            # point, using the gradient already released there, with the step
            # cut by the last growth factor (at least halved): a quadratic
            # whose step overshoots by eta * L = k grows by k - 1 per step
            lr *= min(0.5, prev[2] / gnorm)
            back = best if best is not None else prev
            w = _prox_step(back[0], back[1], lr, reg, center, radius)
            prev = back
        else:
            prev = (w, data_grad, gnorm)
            if best is None or gnorm < best[2]:
                best = prev
            w = _prox_step(w, data_grad, lr, reg, center, radius)
        step_sizes[t] = lr
        if t >= first_avg:
            acc += w
            n_avg += 1
            if staged:
                window.append(w.copy())
        if staged and t == last:
            stage_coefs.append(acc / n_avg if n_avg else w.copy())
            stage_windows.append(np.array(window))
            acc, n_avg, window = np.zeros(d), 0, []
    if staged:
        return HeavyTailedResult(
            stage_coefs[-1],
            clip_levels,
            step_sizes,
            T,
            stage_coefs=stage_coefs,
            plan=plan,
        )
    coef = acc / n_avg if n_avg else w
    return HeavyTailedResult(coef, clip_levels, step_sizes, T, plan=plan)


def _inverse_norms(row_norms):
    """``1 / ||x_i||``, 0 for a zero (truncated) or subnormal norm (per record)."""
    with np.errstate(all="ignore"):
        inv_norms = np.where(row_norms > 0, 1.0 / row_norms, 0.0)
    # 1 / ||x_i|| overflows for a subnormal norm: the derivative cap would be
    # inf and the row's gradient (huge |y| times a tiny row) would escape the
    # clip, so such rows are skipped like zero rows (a per-record map)
    inv_norms[~np.isfinite(inv_norms)] = 0.0
    return inv_norms


def _norms_block(X, y, row_norms, w, loss):
    with np.errstate(all="ignore"):
        g = safe_derivatives(loss, np.asarray(X @ w), y)
        return np.abs(g) * row_norms


def _gradient_norms(X, y, row_norms, w, loss):
    """Per-sample gradient norms ``|l'(x_i w, y_i)| ||x_i||`` (dask: per chunk)."""
    if not is_dask_collection(X):
        with np.errstate(all="ignore"):
            g = safe_derivatives(loss, as_float_records(X @ w), y)
            return np.abs(g) * row_norms
    import dask.array as da

    # one function per chunk on its worker, silent there (its own errstate)
    return da.blockwise(
        _norms_block, "i", X, "ij", y, "i", row_norms, "i",
        w=np.asarray(w), loss=loss, concatenate=True, dtype=np.float64,
    )  # fmt: skip
