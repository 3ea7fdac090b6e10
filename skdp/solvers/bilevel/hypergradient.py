"""Differentially private bilevel optimization (Kornowski, Alg. 1 and 3).

Problem: ``min_{x in X} F(x) = f(x, y*(x))`` with ``y*(x) = argmin_y g(x, y)``,
``g(x, .)`` strongly convex. Each outer step

1. solves privately ``y_t ~ argmin_y g(x_t, y)`` and
   ``y_t^lam ~ argmin_y f(x_t, y) / lam + g(x_t, y)`` (the paper's
   ``f + lam g``, rescaled), with warm starts;
2. forms the first-order hypergradient estimate
   ``grad_x f(x_t, y^lam) + lam (grad_x g(x_t, y^lam) - grad_x g(x_t, y_t))``;
   its data-dependent part is clipped *per record as a whole difference
   vector* and noised (notes §7.3); a data-independent part (e.g. ``grad_x`` of
   a regularizer) is post-processing of the private ``y``'s and is added
   without noise;
3. takes the projected step ``x_{t+1} = Proj_X(x_t - eta_t g_t)``.

The output is ``x_{t_out}`` with ``t_out = argmin_t ||x_{t+1} - x_t||`` (the
iterate with the smallest step), together with the inner solutions at it.

Privacy: every data-dependent release is a clipped mean with Gaussian noise
whose scale comes from :mod:`skdp.solvers.bilevel.plan`. Per-record
clipping enforces the Lipschitz assumptions instead of assuming them. Mini-
batches (Alg. 3/4) are drawn by Poisson sampling or fixed-size sampling
without replacement, which the accountant supports under replace-one; the
paper's sampling with replacement is not used.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from ...privacy import gaussian_noise, parallel_scope
from ...utils import clip_factors, safe_row_norms
from ..sampling import FractionSampler as _Sampler
from .inner import localized_noisy_gd

__all__ = [
    "BilevelOracles",
    "BilevelResult",
    "InnerSettings",
    "bilevel_outer_loop",
    "dp_bilevel",
    "clipped_sum",
    "lower_statistic",
    "penalized_statistic",
    "outer_statistic",
    "FULL_BATCH",
]


@dataclass(frozen=True)
class BilevelOracles:
    """Per-record first-order oracles of a bilevel ERM problem.

    Per-record oracles take ``(x, y, idx)`` and return one row per index in
    ``idx`` (an integer array into that function's own records, or
    ``slice(None)`` for all of them). ``None``
    means that function has no data-dependent gradient in that variable.
    Regularizers take ``(x, y)`` and return ``(grad_x, grad_y)`` of the
    data-independent part of ``f`` or ``g`` (never clipped, never noised).

    Parameters
    ----------
    n_upper, n_lower : int
        Records of ``f`` and of ``g``.
    shared : bool
        ``f`` and ``g`` read the same records (index ``i`` is one person).
    upper_grad_y, lower_grad_y : callable or None
        ``grad_y f_i``, ``grad_y g_i``.
    upper_grad_x, lower_grad_x : callable or None
        ``grad_x f_i``, ``grad_x g_i``.
    upper_regularizer, lower_regularizer : callable or None
        Data-independent parts of ``f`` and ``g``.
    """

    n_upper: int
    n_lower: int
    shared: bool
    upper_grad_y: Callable = None
    lower_grad_y: Callable = None
    upper_grad_x: Callable = None
    lower_grad_x: Callable = None
    upper_regularizer: Callable = None
    lower_regularizer: Callable = None


@dataclass(frozen=True)
class InnerSettings:
    """Public settings of the two inner DP-Loc-(S)GD solves.

    Parameters
    ----------
    radii : sequence of float
        Localization radii (``M = len(radii)``).
    n_steps : int
        Steps per round ``K``.
    strong_convexity : float
        Public ``mu_g`` (both inner problems are ``mu_g``-strongly convex).
    smoothness : float, optional
        Public smoothness bound (caps the step).
    """

    radii: tuple
    n_steps: int
    strong_convexity: float
    smoothness: float = None


@dataclass
class BilevelResult:
    """Output of the outer loop.

    Attributes
    ----------
    x : ndarray
        ``x_{t_out}``.
    y_lower, y_penalized : ndarray
        Private inner solutions at ``x_{t_out}``.
    t_out : int
    x_path : ndarray of shape (T + 1, d_x)
    step_norms : ndarray of shape (T,)
    hypergradients : ndarray of shape (T, d_x)
    """

    x: np.ndarray
    y_lower: np.ndarray
    y_penalized: np.ndarray
    t_out: int
    x_path: np.ndarray
    step_norms: np.ndarray
    hypergradients: np.ndarray = field(repr=False)


def _clip_factors(rows, clip_norm):
    """Per-row factors ``min(1, clip_norm / ||row||)``."""
    with np.errstate(all="ignore"):  # private rows: silent (see clip_factors)
        norms = np.sqrt(np.einsum("ij,ij->i", rows, rows))
    if not np.all(np.isfinite(norms)):
        norms = safe_row_norms(rows)  # overflow-safe for huge entries
    return clip_factors(norms, clip_norm)


def clipped_sum(rows, clip_norm):
    """Sum of the rows, each clipped to ``clip_norm`` (one pass, no copy).

    Examples
    --------
    >>> import numpy as np
    >>> clipped_sum(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    array([0.9, 1.2])
    """
    rows = np.asarray(rows, dtype=float)
    with np.errstate(all="ignore"):
        if math.isinf(clip_norm):
            return rows.sum(axis=0)
        return _clip_factors(rows, clip_norm) @ rows


RPROP_GROW, RPROP_SHRINK, RPROP_MAX = 1.2, 0.5, 2.0


def bilevel_outer_loop(
    x0,
    solve_inner,
    hypergradient,
    project,
    *,
    n_iter,
    step_size,
    adaptive=True,
    step_rule=None,
):
    """Projected (hyper)gradient descent with the smallest-step output rule.

    Parameters
    ----------
    x0 : ndarray of shape (d_x,)
        Public start in ``X``.
    solve_inner : callable
        ``(x, t) -> (y_lower, y_penalized)``: the two private inner solutions.
    hypergradient : callable
        ``(x, y_lower, y_penalized) -> g``: the private hypergradient.
    project : callable
        Euclidean projection on ``X``.
    n_iter : int
        Outer iterations ``T``.
    step_size : float
        ``eta`` (constant) or ``eta_0`` of the adaptive rule.
    adaptive : bool, default=True
        AdaGrad-norm steps ``eta_t = eta_0 / sqrt(sum_s ||g_s||**2)``: a
        function of the private hypergradients only (post-processing), which
        removes the need to know the smoothness of ``F``. ``False`` gives the
        paper's constant step.
    step_rule : {"adagrad", "rprop", "constant"}, default=None
        Overrides ``adaptive`` when given. ``"rprop"`` (Riedmiller and Braun
        1993), per coordinate: move by the current step against the sign of
        the hypergradient; the step grows by 1.2 while the sign persists (up
        to 2) and halves when it flips, starting at ``step_size``. It does
        not depend on the hypergradient's scale, which on ``log(alpha)``
        varies by orders of magnitude along the path (AdaGrad-norm then
        stalls after the first large gradients).

    Returns
    -------
    BilevelResult
    """
    rule = step_rule or ("adagrad" if adaptive else "constant")
    if rule not in ("adagrad", "rprop", "constant"):
        raise ValueError(f"Unknown step rule {rule!r}.")
    x = np.array(x0, dtype=float, copy=True)
    path, steps, grads, inner = [x.copy()], [], [], []
    sum_sq = 0.0
    rprop = np.full(x.shape, float(step_size))
    sign_prev = np.zeros(x.shape)
    for t in range(int(n_iter)):
        y_low, y_pen = solve_inner(x, t)
        g = np.atleast_1d(np.asarray(hypergradient(x, y_low, y_pen), dtype=float))
        if rule == "rprop":
            sign = np.sign(g)
            flip = sign * sign_prev
            rprop = np.where(flip > 0, np.minimum(rprop * RPROP_GROW, RPROP_MAX), rprop)
            rprop = np.where(flip < 0, rprop * RPROP_SHRINK, rprop)
            sign_prev = np.where(flip < 0, 0.0, sign)  # no double shrink
            x_next = project(x - rprop * sign)
        else:
            eta = float(step_size)
            if rule == "adagrad":
                sum_sq += float(g @ g)
                eta = eta / math.sqrt(sum_sq) if sum_sq > 0 else 0.0
            x_next = project(x - eta * g)
        inner.append((y_low, y_pen))
        grads.append(g)
        steps.append(float(np.linalg.norm(x_next - x)))
        x = x_next
        path.append(x.copy())
    t_out = int(np.argmin(steps))
    y_low, y_pen = inner[t_out]
    return BilevelResult(
        x=path[t_out],
        y_lower=y_low,
        y_penalized=y_pen,
        t_out=t_out,
        x_path=np.array(path),
        step_norms=np.array(steps),
        hypergradients=np.array(grads),
    )


def _sum_clipped(oracle, x, y, idx, clip_norm, dim):
    if isinstance(idx, np.ndarray) and idx.size == 0:
        return np.zeros(dim)
    return clipped_sum(np.reshape(oracle(x, y, idx), (-1, dim)), clip_norm)


FULL_BATCH = (slice(None), None)


def _batch(batch, n):
    idx, normalizer = batch
    return idx, float(n) if normalizer is None else normalizer


def lower_statistic(oracles, x, y, batch, clip_lower):
    """Data part of ``grad_y g``: clipped batch sum over the normalizer.

    Replace-one sensitivity ``2 clip_lower / normalizer`` (the noised release
    of the lower inner problem, before its data-independent regularizer).

    Parameters
    ----------
    oracles : BilevelOracles
    x, y : ndarray
    batch : tuple (idx, normalizer)
        Indices into ``g``'s records and the public normalizer (``None``: the
        part size). :data:`FULL_BATCH` is the full batch.
    clip_lower : float

    Returns
    -------
    ndarray of shape (d_y,)
    """
    o = oracles
    idx, norm = _batch(batch, o.n_lower)
    return _sum_clipped(o.lower_grad_y, x, y, idx, clip_lower, np.size(y)) / norm


def penalized_statistic(
    oracles, x, y, batch_lower, batch_upper, penalty, clip_upper, clip_lower
):
    """Data part of ``grad_y (f / lambda + g)`` (clipped, per part).

    Replace-one sensitivity: ``2 clip_lower / n_lower`` for a record of
    ``g`` and ``2 clip_upper / (lambda n_upper)`` for a record of ``f``
    (their sum when records are shared), with batch normalizers in place of
    the sizes.
    """
    o = oracles
    idx_l, norm_l = _batch(batch_lower, o.n_lower)
    g = _sum_clipped(o.lower_grad_y, x, y, idx_l, clip_lower, np.size(y)) / norm_l
    if o.upper_grad_y is not None:
        idx_u, norm_u = _batch(batch_lower if o.shared else batch_upper, o.n_upper)
        g = g + _sum_clipped(o.upper_grad_y, x, y, idx_u, clip_upper, np.size(y)) / (
            penalty * norm_u
        )
    return g


def outer_statistic(
    oracles, x, y_low, y_pen, batch_lower, batch_upper, penalty, clip_outer
):
    """Data part of the hypergradient, each record's difference vector clipped.

    Per record ``u_i = grad_x f_i(x, y_pen) + lambda (grad_x g_i(x, y_pen) -
    grad_x g_i(x, y_low))`` is clipped *as a whole* to ``clip_outer`` (with
    disjoint parts, each part's own term is clipped), so the sensitivity is
    ``2 clip_outer / normalizer`` whatever ``lambda`` is (notes §7.3).
    """
    o = oracles
    d_x = np.atleast_1d(np.asarray(x)).size
    lam = float(penalty)
    idx_l, norm_l = _batch(batch_lower, o.n_lower)
    if o.shared:
        rows = 0.0
        if o.upper_grad_x is not None:
            rows = rows + o.upper_grad_x(x, y_pen, idx_l)
        if o.lower_grad_x is not None:
            rows = rows + lam * (
                o.lower_grad_x(x, y_pen, idx_l) - o.lower_grad_x(x, y_low, idx_l)
            )
        return clipped_sum(np.reshape(rows, (-1, d_x)), clip_outer) / norm_l
    g = np.zeros(d_x)
    if o.upper_grad_x is not None:
        idx_u, norm_u = _batch(batch_upper, o.n_upper)
        g = g + _sum_clipped(o.upper_grad_x, x, y_pen, idx_u, clip_outer, d_x) / norm_u
    if o.lower_grad_x is not None:
        diff = lam * (o.lower_grad_x(x, y_pen, idx_l) - o.lower_grad_x(x, y_low, idx_l))
        g = g + clipped_sum(np.reshape(diff, (-1, d_x)), clip_outer) / norm_l
    return g


def dp_bilevel(
    oracles,
    x0,
    y0,
    *,
    penalty,
    n_iter,
    step_size,
    project,
    inner,
    clip_upper,
    clip_lower,
    clip_outer,
    noise,
    rng,
    sampling=None,
    inner_batch_fraction=1.0,
    outer_batch_fraction=1.0,
    adaptive=True,
    ledger_parts=None,
):
    """DP bilevel optimization with DP-Loc-(S)GD inner solves (Alg. 1 / 3).

    Parameters
    ----------
    oracles : BilevelOracles
    x0 : ndarray of shape (d_x,)
        Public start in ``X``.
    y0 : ndarray of shape (d_y,)
        Public start of the inner solves (then warm starts).
    penalty : float
        ``lambda``.
    n_iter : int
        Outer iterations ``T``.
    step_size : float
        Outer step (see :func:`bilevel_outer_loop`).
    project : callable
        Projection on ``X``.
    inner : InnerSettings or callable
        Settings of both inner solves, or ``x -> InnerSettings`` when they
        depend on the (public) current ``x``; the step count must not change.
    clip_upper, clip_lower : float
        Clip norms of ``grad_y f_i`` and ``grad_y g_i``.
    clip_outer : float
        Clip norm of each record's outer difference vector.
    noise : BilevelNoise
        Noise standard deviations from
        :func:`~skdp.solvers.bilevel.plan.calibrate_bilevel_noise` for the
        same public design.
    rng : numpy.random.Generator
    sampling : {None, "poisson", "without_replacement"}, default=None
    inner_batch_fraction, outer_batch_fraction : float, default=1.0
    adaptive : bool, default=True
        Outer step rule (see :func:`bilevel_outer_loop`).
    ledger_parts : tuple (scope, dict), optional
        The privacy ledger's parallel scope of the two parts and the index
        of ``"upper"`` and ``"lower"`` in it (a caller whose plan holds the
        parts in another scope); by default a scope of its own, in
        :func:`~skdp.solvers.bilevel.plan.bilevel_event`'s order.

    Returns
    -------
    BilevelResult
    """
    o = oracles
    lam = float(penalty)
    if ledger_parts is None and not o.shared:
        ledger_parts = (parallel_scope(2), {"upper": 0, "lower": 1})

    def ledger_of(mechanism):
        """``(sensitivity, sampling)`` of a release, for the privacy ledger."""
        per_part = noise.ledger.get(mechanism, {})
        if o.shared:
            return per_part.get("all", (0.0, ()))
        scope, index = ledger_parts
        return scope.sensitivities({index[p]: v for p, v in per_part.items()}), ()

    y0 = np.asarray(y0, dtype=float)
    d_y = y0.size
    d_x = np.atleast_1d(np.asarray(x0, dtype=float)).size
    parts = ("lower",) if o.shared else ("upper", "lower")
    sizes = {"upper": o.n_upper, "lower": o.n_lower}
    samplers = {
        (p, kind): _Sampler(sizes[p], sampling, frac, rng)
        for p in parts
        for kind, frac in (
            ("inner", inner_batch_fraction),
            ("outer", outer_batch_fraction),
        )
    }

    def reg(fn, x, y):
        if fn is None:
            return np.zeros(d_x), np.zeros(d_y)
        gx, gy = fn(x, y)
        return np.atleast_1d(gx), np.asarray(gy, dtype=float)

    def draw(part, kind):
        sampler = samplers[("lower" if o.shared else part, kind)]
        return sampler.draw(), sampler.normalizer

    def lower_gradient(x):
        def grad(y):
            g = lower_statistic(o, x, y, draw("lower", "inner"), clip_lower)
            return g + reg(o.lower_regularizer, x, y)[1]

        return grad

    def penalized_gradient(x):
        def grad(y):
            batch_l = draw("lower", "inner")
            batch_u = batch_l if o.shared else draw("upper", "inner")
            g = penalized_statistic(
                o, x, y, batch_l, batch_u, lam, clip_upper, clip_lower
            )
            g = g + reg(o.lower_regularizer, x, y)[1]
            return g + reg(o.upper_regularizer, x, y)[1] / lam

        return grad

    warm = {"lower": y0.copy(), "penalized": y0.copy()}

    def solve_inner(x, t):
        settings = inner(x) if callable(inner) else inner
        for name, make in (
            ("lower", lower_gradient),
            ("penalized", penalized_gradient),
        ):
            warm[name] = localized_noisy_gd(
                make(x),
                warm[name],
                radii=settings.radii,
                n_steps=settings.n_steps,
                noise_std=noise.std(name),
                strong_convexity=settings.strong_convexity,
                smoothness=settings.smoothness,
                rng=rng,
                sensitivity=ledger_of(name)[0],
                sampling=ledger_of(name)[1],
            )
        return warm["lower"].copy(), warm["penalized"].copy()

    def hypergradient(x, y_low, y_pen):
        g = reg(o.upper_regularizer, x, y_pen)[0]
        g = g + lam * (
            reg(o.lower_regularizer, x, y_pen)[0]
            - reg(o.lower_regularizer, x, y_low)[0]
        )
        if o.upper_grad_x is None and o.lower_grad_x is None:
            return g  # post-processing of the private inner solutions
        batch_l = draw("lower", "outer")
        batch_u = batch_l if o.shared else draw("upper", "outer")
        g = g + outer_statistic(o, x, y_low, y_pen, batch_l, batch_u, lam, clip_outer)
        sensitivity, sampled = ledger_of("outer")
        return g + gaussian_noise(
            rng,
            noise.outer_std,
            d_x,
            sensitivity=sensitivity,
            sampling=sampled,
            label="outer hypergradient",
        )

    return bilevel_outer_loop(
        x0,
        solve_inner,
        hypergradient,
        project,
        n_iter=n_iter,
        step_size=step_size,
        adaptive=adaptive,
    )
