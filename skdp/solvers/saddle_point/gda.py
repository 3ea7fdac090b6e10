"""Full-batch noisy gradient descent-ascent for logistic group DRO.

The problem is the one of :mod:`skdp.solvers.saddle_point.group_dro`:

``min_{||w|| <= R_w} max_{q in simplex} sum_g q_g R_g(w)``, with
``R_g(w) = sum_{i in g} l_i(w) / (n pi_g)``

(``l`` the logistic loss, ``pi`` public or privately estimated group shares,
floored). Its gradient in ``w`` is ``(1/n) sum_i a_{g_i} grad l_i(w)`` with
the record weights ``a_g = q_g / pi_g``, and its gradient in ``q`` is the
vector of group risks.

**One release per step.** At the current point ``(w_t, q_t)`` step ``t``
releases the stacked vector

``S_t = [ sum_i a_{g_i} clip_C(grad l_i(w_t)),  lam * (sum_{i in g} clip_B(l_i(w_t)))_g ]``

(``p + m`` entries) plus ``N(0, (z Delta_t)^2 I)``. Groups come from the data,
so under replace-one a record can leave group ``k`` and join group ``j``; the
L2 sensitivity is the largest of

- same group ``k``: ``sqrt((2 a_k C)^2 + (lam B)^2)``;
- ``k -> j``: ``sqrt(((a_k + a_j) C)^2 + 2 (lam B)^2)``

over all pairs (:func:`stacked_sensitivity`). The weights ``a`` are computed
from released values only (``q_t`` from earlier noisy releases, the public or
noisy priors), so ``Delta_t`` is public and each step is a Gaussian mechanism
of multiplier ``z`` with respect to its own sensitivity: ``T`` steps compose
exactly to ``sqrt(T) / z``-GDP (adaptive composition). Everything after the
noisy release (the primal step, the exponentiated dual step, projections,
averaging) is post-processing.

**Warm start.** ``q_0 = pi`` makes every record weight 1, so the first
steps (``dual_warmup``) are full-batch DP-GD on the group-blind logistic loss
(private ERM, with the sensitivity ``sqrt(4 C^2 + (lam B)^2)`` of that
release); the dual then moves the weight towards the groups whose noisy risk
is highest.

**Updates.** Primal: a projected (optionally Nesterov-accelerated) gradient
step on ``w`` with the noisy weighted mean gradient. Dual: exponentiated
(mirror) ascent from ``pi``, written as follow-the-regularised-leader,
``q proportional to pi * exp(eta_q * (S_g - kappa * s_g))`` with ``S_g`` the
sum of the noisy risks ``R_hat_g = (L_g + noise / lam) / (n pi_g)`` since the
warm-up (plus the latest one if optimistic) and ``s_g`` the standard
deviation of its noise (public), so that a group with a noisy risk estimate
gains weight only on evidence. The output is the average of the iterates over
the last part of the run (``average_from``).
"""

import math
from dataclasses import dataclass, field

import numpy as np
from scipy.special import expit

from ...privacy import gaussian_noise
from ...utils._sparse import (
    as_float_rows,
    is_sparse,
    matvec,
    plain_row_norms,
    rmatvec,
)
from ...utils._sparse import row_norms as sparse_row_norms
from .._distributed import as_records, map_rows, record_sum
from ..heavy_tailed.multinomial import softmax_residuals
from ..projections import Ball

__all__ = [
    "GDAResult",
    "stacked_sensitivity",
    "stacked_statistic",
    "stacked_statistic_multinomial",
    "group_dro_gda",
]


@dataclass
class GDAResult:
    """Output of :func:`group_dro_gda`.

    Attributes
    ----------
    coef : ndarray of shape (p,) or (p, K)
        Averaged primal iterate.
    weights : ndarray of shape (m,)
        Averaged group weights (a probability vector).
    n_iter : int
        Steps run (releases made).
    noise_stds : ndarray of shape (n_iter,)
        Standard deviation of each step's Gaussian draw.
    sensitivities : ndarray of shape (n_iter,)
        Replace-one sensitivity of each step's stacked release.
    info : dict
        Step sizes used.
    """

    coef: np.ndarray
    weights: np.ndarray
    n_iter: int
    noise_stds: np.ndarray
    sensitivities: np.ndarray
    info: dict = field(default_factory=dict)


def stacked_sensitivity(record_weights, clip, loss_scale):
    """Replace-one L2 sensitivity of the stacked per-step release.

    Parameters
    ----------
    record_weights : ndarray of shape (m,)
        Non-negative weight ``a_g`` of a record of each group in the gradient
        sum.
    clip : float
        ``C``, bound on every per-record gradient norm.
    loss_scale : float
        ``lam * B``: bound on one record's (scaled, clipped) loss.

    Returns
    -------
    float
        Largest change of the stacked vector when one record is replaced,
        also by a record of another group.

    Examples
    --------
    >>> import numpy as np
    >>> stacked_sensitivity(np.ones(1), 1.0, 0.0)
    2.0
    >>> round(stacked_sensitivity(np.array([1.0, 3.0]), 1.0, 1.0), 4)
    6.0828
    """
    a = np.asarray(record_weights, dtype=float)
    C, lb = float(clip), float(loss_scale)
    same = math.sqrt((2.0 * float(a.max()) * C) ** 2 + lb**2)
    if a.size < 2:
        return same
    top = np.sort(a)[-2:]  # the two largest weights of different groups
    moved = math.sqrt((float(top.sum()) * C) ** 2 + 2.0 * lb**2)
    return max(same, moved)


def stacked_statistic(
    X,
    y,
    groups,
    n_groups,
    coef,
    record_weights,
    clip,
    loss_bound,
    loss_factor,
    row_norms=None,
):
    """Pre-noise statistic of one step (the vector whose sensitivity is bounded).

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Rows (intercept column included).
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``.
    groups : ndarray of shape (n,)
        Group codes in ``0 .. n_groups - 1``.
    n_groups : int
    coef : ndarray of shape (p,)
    record_weights : ndarray of shape (n_groups,)
    clip : float
        ``C``: per-record gradients are scaled to norm at most ``C``.
    loss_bound : float
        ``B``: per-record losses are clipped to ``[0, B]``.
    loss_factor : float
        ``lam``: the loss sums are multiplied by it.
    row_norms : ndarray of shape (n,), optional
        ``||x_i||`` (computed if not given).

    Returns
    -------
    ndarray of shape (p + n_groups,)
        ``[sum_i a_{g_i} clip_C(grad l_i), lam * (sum_{i in g} clip_B(l_i))_g]``.
    """
    with np.errstate(all="ignore"):
        # einsum rather than BLAS gemv: on a busy machine gemv's thread
        # start-up dominated these thin products (10x slower, measured).
        margin = y * matvec(X, coef)
        # A huge (finite) row can make the product inf - inf: such a record
        # gets no gradient direction and its loss bound, as a non-finite
        # score does in the multinomial kernel (softmax_residuals).
        overflowed = np.isnan(margin)
        tail = np.where(overflowed, 0.0, expit(-margin))  # |l'(margin)|
        # -log(1 - tail) is the logistic loss; where it rounds to inf the
        # loss is far above any cap and is clipped to B.
        loss = np.where(
            overflowed, loss_bound, np.minimum(-np.log1p(-tail), loss_bound)
        )
        dloss = -tail * y  # gradient of l_i is dloss_i * x_i
        if row_norms is None:
            row_norms = plain_row_norms(X)
        norms = tail * row_norms
        scale = np.where(norms > clip, clip / np.where(norms > 0, norms, 1.0), 1.0)
        grad = rmatvec(X, record_weights[groups] * dloss * scale)
        sums = np.bincount(groups, weights=loss, minlength=n_groups)
    return np.concatenate([grad, loss_factor * sums])


def stacked_statistic_multinomial(
    X,
    labels,
    groups,
    n_groups,
    coef,
    record_weights,
    clip,
    loss_bound,
    loss_factor,
    row_norms=None,
):
    """Pre-noise statistic of one step for the multinomial (softmax) loss.

    The per-record gradient of the cross-entropy ``l_i(W) = -log
    softmax(W^T x_i)_{y_i}`` is the ``p x K`` matrix ``x_i r_i^T`` with
    ``r_i = softmax(W^T x_i) - e_{y_i}``; it is clipped as a whole, in
    Frobenius norm ``||x_i|| ||r_i||``, never per class. Every record thus
    contributes a gradient of norm at most ``a_g C`` and a loss in
    ``[0, B]``, exactly as in the binary :func:`stacked_statistic`, so
    :func:`stacked_sensitivity` bounds this release too (also for a record
    that changes group and class).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, p)
        Rows (intercept column included).
    labels : int ndarray of shape (n,)
        Class index in ``0 .. K - 1``.
    groups : ndarray of shape (n,)
        Group codes in ``0 .. n_groups - 1``.
    n_groups : int
    coef : ndarray of shape (p, K)
    record_weights : ndarray of shape (n_groups,)
    clip : float
        ``C``: per-record gradients are scaled to Frobenius norm at most ``C``.
    loss_bound : float
        ``B``: per-record losses are clipped to ``[0, B]``.
    loss_factor : float
        ``lam``: the loss sums are multiplied by it.
    row_norms : ndarray of shape (n,), optional
        ``||x_i||`` (computed if not given).

    Returns
    -------
    ndarray of shape (p * K + n_groups,)
        ``[vec(sum_i a_{g_i} clip_C(x_i r_i^T)), lam * (sum_{i in g}
        clip_B(l_i))_g]`` (the gradient block flattened in C order).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0]])
    >>> s = stacked_statistic_multinomial(
    ...     X, np.array([0]), np.array([0]), 1, np.zeros((2, 3)), np.ones(1),
    ...     1.0, 10.0, 1.0)
    >>> round(float(np.linalg.norm(s[:6])), 6), round(float(s[6]), 4)
    (1.0, 1.0986)
    """
    n = X.shape[0]
    with np.errstate(all="ignore"):
        if isinstance(X, np.ndarray):
            # einsum rather than BLAS (as in stacked_statistic): thread
            # start-up dominated X @ coef on a busy machine (4x, measured).
            scores = np.einsum("ij,jk->ik", X, coef)
        else:
            scores = np.asarray(X @ coef)  # sparse rows
        top = np.max(scores, axis=1, keepdims=True)
        lse = top[:, 0] + np.log(np.sum(np.exp(scores - top), axis=1))
        loss = lse - scores[np.arange(n), labels]
        # a non-finite loss is far above any cap: clipped to B
        loss = np.where(np.isfinite(loss), np.clip(loss, 0.0, loss_bound), loss_bound)
        R = softmax_residuals(scores, labels)
        if row_norms is None:
            row_norms = sparse_row_norms(X)
        norms = row_norms * np.sqrt(np.einsum("ij,ij->i", R, R))
        scale = np.where(norms > clip, clip / np.where(norms > 0, norms, 1.0), 1.0)
        R *= (record_weights[groups] * scale)[:, None]
        grad = np.asarray(X.T @ R)
        sums = np.bincount(groups, weights=loss, minlength=n_groups)
    return np.concatenate([grad.ravel(), loss_factor * sums])


def group_dro_gda(
    X,
    y,
    groups,
    priors,
    *,
    radius,
    clip,
    loss_bound,
    loss_factor,
    n_steps,
    noise_multiplier,
    primal_step,
    dual_step,
    rng,
    momentum=0.0,
    average_from=0.5,
    optimistic=False,
    dual_warmup=0.0,
    confidence=0.0,
    restart=False,
    primal_average_from=None,
    n_classes=None,
):
    """Run full-batch noisy gradient descent-ascent (module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, p)
        Rows, intercept column included, finite. The release is private for
        any finite rows: every record's gradient is clipped to ``clip`` and
        its loss to ``[0, loss_bound]`` here, and a record whose margin or
        scores overflow (a huge row can make them ``inf - inf``) contributes
        its loss bound and no gradient, silently (``np.errstate``), so that
        neither the release nor a floating-point warning depends on it. Rows
        should still be clipped to a public norm bound for utility and for a
        meaningful gradient clip (as
        :class:`~skdp.fairness.MinimaxFairClassifier` does);
        the plan's sensitivity does not rely on it.
    y : ndarray of shape (n,)
        Labels in ``{-1, +1}``, or class indices ``0 .. n_classes - 1`` when
        ``n_classes`` is given.
    groups : ndarray of shape (n,)
        Group codes.
    priors : ndarray of shape (m,)
        Public or already released positive group shares ``pi`` (the record
        weight of group ``g`` is ``q_g / pi_g``).
    radius : float
        Radius of the coefficient ball.
    clip : float
        Per-record gradient bound ``C``.
    loss_bound : float
        Per-record loss bound ``B``.
    loss_factor : float
        ``lam``: weight of the loss block in the release.
    n_steps : int
        Number of steps (Gaussian releases).
    noise_multiplier : float
        ``z = sigma_t / Delta_t`` of every step; ``0`` is the non-private run.
    primal_step : float
        Step size on ``w``.
    dual_step : float
        Step size of the exponentiated ascent on ``q``.
    rng : numpy.random.Generator
    momentum : float, default=0.0
        Nesterov momentum of the primal step (``0``: projected gradient).
    average_from : float, default=0.5
        Fraction of the run after which the iterates are averaged.
    optimistic : bool, default=False
        Optimistic dual step: ascend along ``2 R_hat_t - R_hat_{t-1}``
        (post-processing of the two latest releases).
    dual_warmup : float, default=0.0
        Fraction of the run during which ``q`` stays at ``pi`` (the weighted
        problem is then plain ERM: a private ERM warm start for ``w``).
    confidence : float, default=0.0
        ``kappa``: the dual ascends on the accumulated noisy risks minus
        ``kappa`` times their accumulated noise standard deviation (public),
        so a group gains weight only on evidence above its noise (small
        groups have noisier risk estimates). No effect without noise.
    restart : bool, default=False
        Gradient-restarted momentum: the momentum is reset whenever the noisy
        released gradient makes an acute angle with the last move
        (``grad @ (w_t - w_{t-1}) > 0``), post-processing of releases only.
    primal_average_from : float or None, default=None
        Averaging window of the primal iterate alone (``None``: the same as
        ``average_from``); ``1.0`` returns the last primal iterate.
    n_classes : int or None, default=None
        ``None``: binary logistic loss (coefficients of shape ``(p,)``). An
        integer ``K``: multinomial loss (:func:`stacked_statistic_multinomial`),
        coefficients of shape ``(p, K)`` in a Frobenius ball of ``radius``.

    Returns
    -------
    GDAResult
    """
    X = as_float_rows(X) if is_sparse(X) else as_records(X, float)  # dask: lazy
    groups = as_records(groups, np.intp)
    priors = np.asarray(priors, dtype=float)
    n, p = X.shape
    m = priors.size
    with np.errstate(all="ignore"):
        row_norms = map_rows(plain_row_norms, X, width=0)  # per chunk on dask
    z = float(noise_multiplier)
    lam = float(loss_factor)
    if n_classes is None:
        y = as_records(y, float)
        shape = (p,)

        def statistic(v, a):
            return record_sum(  # per chunk on dask, summed on the driver
                stacked_statistic, (X, y, groups), m, v, a, clip, loss_bound, lam,
                chunked={"row_norms": row_norms},
            )  # fmt: skip

    else:
        y = as_records(y, np.intp)
        shape = (p, int(n_classes))

        def statistic(v, a):
            return record_sum(  # per chunk on dask, summed on the driver
                stacked_statistic_multinomial,
                (X, y, groups),
                m,
                v.reshape(shape),
                a,
                clip,
                loss_bound,
                lam,
                chunked={"row_norms": row_norms},
            )

    size = math.prod(shape)  # the iterate is kept flat (Frobenius ball)
    ball = Ball(size, radius)
    w = np.zeros(size)
    w_prev = w.copy()
    q = priors / priors.sum()  # warm start: record weights q/pi all 1 (ERM)
    start = min(int(math.floor(average_from * n_steps)), n_steps - 1)
    if primal_average_from is None:
        pstart = start
    else:
        pstart = min(int(math.floor(primal_average_from * n_steps)), n_steps - 1)
    pcount = 0
    mom = momentum
    since = 0
    warmup = int(math.floor(dual_warmup * n_steps))
    w_sum, q_sum, count = np.zeros(size), np.zeros(m), 0
    log_prior = np.log(q)
    risk_sum, risk_var = np.zeros(m), np.zeros(m)
    stds, sens = np.empty(n_steps), np.empty(n_steps)
    for t in range(n_steps):
        a = q / priors
        # Nesterov look-ahead point (post-processing of released iterates).
        v = ball.project(w + mom * (w - w_prev)) if mom else w
        delta = stacked_sensitivity(a, clip, lam * loss_bound)
        stat = statistic(v, a)
        std = z * delta
        noisy = stat + gaussian_noise(
            rng, std, stat.size, sensitivity=delta, label="gradient and group losses"
        )
        stds[t], sens[t] = std, delta
        grad = noisy[:size] / n
        risks = noisy[size:] / (lam * n * priors) if lam > 0 else np.zeros(m)
        w_prev, w = w, ball.project(v - primal_step * grad)
        if restart and momentum:
            # Gradient restart (O'Donoghue and Candes): the released gradient
            # points along the last move, so the momentum is reset and grows
            # again as k / (k + 3), capped at ``momentum``.
            since = 0 if float(np.vdot(grad, w - w_prev)) > 0.0 else since + 1
            mom = min(momentum, since / (since + 3.0))
        if t >= warmup:
            # Exponentiated ascent from pi written as follow-the-regularised-
            # leader on the accumulated risks (optionally optimistic), less
            # kappa accumulated noise standard deviations.
            risk_sum += risks
            if lam > 0:
                risk_var += (std / (lam * n * priors)) ** 2
            lead = risk_sum + risks if optimistic else risk_sum
            logits = log_prior + dual_step * (lead - confidence * np.sqrt(risk_var))
            logits -= logits.max()
            q = np.exp(logits)
            q /= q.sum()
        if t >= start:
            q_sum += q
            count += 1
        if t >= pstart:
            w_sum += w
            pcount += 1
    return GDAResult(
        coef=(w_sum / pcount).reshape(shape),
        weights=q_sum / count,
        n_iter=n_steps,
        noise_stds=stds,
        sensitivities=sens,
        info={"primal_step": primal_step, "dual_step": dual_step},
    )
