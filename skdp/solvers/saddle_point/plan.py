"""Public plan of a minimax group-fair fit: estimates, solver schedule, noise.

:func:`plan_minimax` turns the public inputs of a fit (``epsilon``,
``delta``, ``n``, the dimensions and the estimator's parameters) into a
:class:`MinimaxPlan`: which public quantities are estimated privately and
at which noise, the solver's schedule (:class:`GDASchedule` for the
full-batch descent-ascent, a :class:`~skdp.solvers.sampling.BatchSchedule`
for NSEG / NISPP), the noise multiplier of its releases and the privacy
event of the whole fit. Nothing here reads data: a plan can be printed,
compared and tested without running a solver, and it is charged to the
accountant before any record is read.

The schedule rule of ``solver="gda"`` (:func:`gda_schedule`) is public: it
depends on the per-step noise multiplier only, itself a function of
``epsilon``, ``delta``, ``max_iter`` and the plan.
"""

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    SelfComposedDpEvent,
    calibrate_gaussian,
    noisy_histogram_event,
    private_norm_bound_event,
)
from ...privacy._norm_bound import median_out_of_reach, norm_bound_noise_multiplier
from ..calibration import calibration_event, shrinkage_event
from ..heavy_tailed.multinomial import MULTINOMIAL_CURVATURE
from .dispatch import calibrate_schedule, saddle_point_schedule, schedule_event

__all__ = [
    "GDASchedule",
    "MinimaxPlan",
    "gda_plan",
    "gda_schedule",
    "default_norm_clip_scale",
    "multinomial_average_from",
    "multinomial_bound_share",
    "multinomial_clip_scale",
    "multinomial_momentum",
    "multinomial_noise_ratio",
    "multinomial_noisy_average_from",
    "multinomial_radius",
    "norm_quantile_reachable",
    "plan_minimax",
]

# solver="gda" defaults (benchmarks/minimax_fair/main.py): steps, Nesterov
# momentum, public cap on a record's loss in the risk estimates, share of the
# loss block in the stacked release (lam * B = _GDA_LOSS_SHARE * C).
_GDA_MAX_ITER = 100
_GDA_MOMENTUM = 0.9
_GDA_LOSS_CAP = 4.0 * math.log(2.0)
_GDA_LOSS_SHARE = 0.5
_GDA_DUAL_STEP = 0.3
_GDA_OPTIMISTIC = True
_GDA_AVERAGE_FROM = 0.5
_GDA_DUAL_WARMUP = 0.3
_GDA_CONFIDENCE = 1.0
_GDA_RESTART = False
_GDA_PRIMAL_AVERAGE_FROM = None
_GDA_STEP_FACTOR = 1.0
# Public schedule rule continuous in the per-step noise multiplier z (issue
# 20, round 4; benchmarks/results/minimax_fair_gap_frontier_*_round4.md):
# with u = max(0, 1 - z / _GDA_NOISELESS_Z) every binary schedule constant
# is (1 - u) * its noisy value above + u * its noiseless value below. The
# noisy schedule (small steps, long averaging) averages out the noise; without
# noise the larger steps and the last primal iterate close the duality gap at
# the same max_iter. z depends only on epsilon, delta, max_iter and the plan.
_GDA_NOISELESS_Z = 1.0
# Gradient-restarted momentum wherever u > 0 (round 5;
# benchmarks/results/minimax_fair_noiseless_restart.md): the dual step grows
# from 0.3 towards 1 with u, and the primal's Nesterov momentum 0.9 remembers
# about 1 / (1 - 0.9) = 10 steps, so the group weights move faster than the
# primal iterate forgets the objective they set. On the synthetic 3-group
# task the weights of the two conflicting groups then swing between 0.05 and
# 0.95 with a growing amplitude (certified gap 8.7e-2 at 100 steps, 0.72 at
# 300). The restart drops the stale momentum as soon as the released
# gradient points along the last move (the objective shifted under the
# iterate), post-processing of releases only; at z >= 1 (u = 0, every
# epsilon <= 50 at the default max_iter) nothing changes.
_GDA_NOISELESS = {
    "step_factor": 3.0,
    "dual_step": 1.0,
    "primal_average_from": 0.99,
    "dual_warmup": 0.1,
    "clip_factor": 1.0,
}
# Binary per-record gradient clip where the noise dominates a step (issue
# 34; the suite's dev grouped binary tables, standardised view, 5 seeds):
# 0.3 row bounds, with the primal step divided by the same factor, so a
# step's noise in the coefficients is unchanged and only the gradients above
# the clip lose weight (records far from the margin no longer dominate the
# noisy mean). Worst-group log-loss over the group-blind
# HeavyTailedLogisticRegression, median over tables at epsilon 0.5 / 1 / 2:
# 1.043 / 1.059 / 1.014 at 1 (never binds) against 1.009 / 1.027 / 1.006 at
# 0.3; 0.2 and 0.5 were close, 0.1 lost at epsilon = 1. Where the noise is
# small a clip below the gradients is only a bias (synthetic n = 2e4 to 2e5
# at epsilon 1 and 5: up to 0.13% worse), so the clipped share follows the
# noise: the factor moves to 1 by the same noise ratio r = z sqrt(p) / n and
# log-linear ramp as the multinomial momentum (:func:`multinomial_noise_ratio`
# with K = 1, ``_GDA_MOMENTUM_RATIO``), and to 1 with the noiseless share u.
# On the dev half the ramp and the constant 0.3 were level (medians within
# 0.015 at every epsilon); the ramp is the public formula, not a suite win.
_GDA_BINARY_CLIP_FACTOR = 0.3
# The multinomial loss has its own schedule (issue 17,
# benchmarks/results/minimax_fair_multiclass_schedule.md): the primal step is
# 3 / (K_curv bound^2) at every z (the softmax curvature bound is loose), and
# the whole-record gradient is clipped at 0.7 bound when noisy, moving to
# sqrt(2) bound (never binds: the exact objective) as z -> 0 by the same share
# u. Dual step, warm-up and averaging keep the noisy binary values at every z:
# the binary noiseless ones made the worst-group log-loss of the K = 5 group
# task 1.8 times worse at epsilon = inf without the momentum restart (with it
# 1.148 against 1.155 at n = 1e5, but a 6 times larger gap at n = 2e4).
_GDA_MULTINOMIAL = {"step_factor": 3.0, "clip_factor": 0.7}
_GDA_NOISELESS_MULTINOMIAL = {"step_factor": 3.0, "clip_factor": math.sqrt(2.0)}
# Multinomial momentum rule (issue 17, small real data sets;
# benchmarks/results/minimax_fair_multiclass_real.md): the public per-step
# noise-to-signal ratio r = z sqrt(p K) / n (the noise norm of the mean
# gradient over the largest mean gradient, up to the constant 2 clip_factor)
# switches Nesterov momentum off where the noise dominates a step: momentum
# 0.9 for r <= _GDA_MOMENTUM_RATIO[0], none for r >= _GDA_MOMENTUM_RATIO[1],
# linear in log r in between. Momentum carries the noise of every step
# forward with its signal; at large n (r about 0.003 to 0.03 on the issue's
# synthetic tasks) it is unchanged.
_GDA_MOMENTUM_RATIO = (0.05, 0.3)
# Default radius (``radius=None``): 5 for the binary loss and wherever the
# multinomial noise ratio r is at most _GDA_MOMENTUM_RATIO[0]; from there it
# grows, linear in log r, to _GDA_RADIUS_GROWTH times 5 at
# _GDA_MOMENTUM_RATIO[1]. Where the noise dominates each step, the iterate in
# a ball of radius 5 is mostly noise (the noise alone fills it); a larger
# ball lets the consistent part of the gradients add up over the steps while
# the noise grows like sqrt(T) (iris, wine, digits at epsilon <= 2;
# benchmarks/results/minimax_fair_multiclass_real.md).
_GDA_DEFAULT_RADIUS = 5.0
_GDA_RADIUS_GROWTH = 4.0
# Primal averaging of the multinomial fit where momentum is on (issue 17,
# round 3; benchmarks/results/minimax_fair_multiclass_steps_*.md): the
# momentum iterates carry the noise of many steps, so at r <=
# _GDA_MOMENTUM_RATIO[0] the primal iterate is averaged from 0.3 of the run
# (synthetic K = 5, n = 1e4, epsilon = 1: +0.0013 +- 0.0002), moving to the
# no-momentum start (_GDA_MULTINOMIAL_NOISY_AVERAGE_FROM, by p K) as momentum
# falls to 0 (r >= _GDA_MOMENTUM_RATIO[1]) and to 0.5 as z -> 0 (the
# noiseless limit keeps its schedule).
_GDA_MULTINOMIAL_AVERAGE_FROM = 0.3
# Primal averaging start of the one-group multinomial fit without momentum
# (r >= _GDA_MOMENTUM_RATIO[1]) as the number of coefficients p K grows
# (issue 17, round 6; benchmarks/results/minimax_fair_multiclass_averaging.md):
# _GDA_MULTINOMIAL_NOISY_AVERAGE_FROM[0] up to p K = _GDA_AVERAGE_COEFS[0],
# [1] from _GDA_AVERAGE_COEFS[1] on, linear in log(p K) between. With many
# coefficients the clipped mean gradient's signal is spread over more
# coordinates and the run is still travelling in its second half, so a later
# window averages less of the path (digits, p K = 650, epsilon 0.5 / 1 / 2 /
# 5: +0.006 / +0.0035 / +0.002 / +0.002; four fresh tasks with p K = 244 to
# 255 gained, the p K <= 112 tasks lost up to 0.006 and keep 0.5). The
# noiseless limit keeps _GDA_AVERAGE_FROM; several groups keep the
# schedule's window.
_GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = (0.5, 0.7)
_GDA_AVERAGE_COEFS = (120.0, 240.0)
# Clip under the public default feature norm (issue 17, round 2;
# benchmarks/results/minimax_fair_multiclass_clip_*.md): the default
# sqrt(d) is the largest norm of a row in [-1, 1]^d, while a row of d
# independent features uniform on [-1, 1] has norm about sqrt(d / 3). The
# noisy multinomial clip factor (0.7 row bounds) is then taken in units of
# that typical augmented row, sqrt(d / 3 + s^2), instead of the bound
# sqrt(d + s^2) (:func:`default_norm_clip_scale`): 0.48 bounds on iris,
# 0.43 on wine. A released bound (a 0.95-quantile) keeps 0.7.
_GDA_DEFAULT_NORM_SPREAD = 3.0
# Noisy multinomial clip where the noise dominates each step (issue 17,
# round 4; benchmarks/results/minimax_fair_multiclass_steps_rules_*.md): above
# the noise ratio r = _GDA_CLIP_RATIO the noisy clip factor is scaled by
# (_GDA_CLIP_RATIO / r) ** _GDA_CLIP_POWER. The noise of a step is
# proportional to the clip while the clipped mean gradient grows more slowly
# than the clip once most gradients are clipped, so a smaller clip trades a
# little bias for less noise (digits epsilon = 0.5 / 1: +0.022 / +0.002;
# wine 0.5 / 1 / 2: +0.034 / +0.023 / +0.011; iris 0.5: +0.041). At
# r <= _GDA_CLIP_RATIO (digits at epsilon >= 2, every synthetic task) a
# smaller clip lost (digits epsilon = 2 / 5, clip 0.65: -0.0014 / -0.0011),
# so the factor stays 1 there.
_GDA_CLIP_RATIO = 0.4
_GDA_CLIP_POWER = 0.3
# Share of its estimation budget that the feature-norm bound of a multinomial
# "gda" fit takes when it is the fit's only estimate (issue 17, round 5;
# benchmarks/results/minimax_fair_multiclass_steps_rules_*.md, `bshare=0.2`),
# where the quantile stays reachable at the smaller share: the bound's level
# barely moves with its budget (digits: 4.315 at both shares of 0.1 and 0.03,
# forced quantile levels 0.915 / 0.845 differ by +0.0002), while the budget
# left goes to the 100 steps (digits epsilon = 0.5 / 1 / 2: +0.017 / +0.007 /
# +0.001; held-out digits n = 500 +0.019, synthetic K = 3 and 7 +0.001 to
# +0.009; iris epsilon = 5 -0.004 +- 0.003, the one point estimate below 0).
_GDA_MULTINOMIAL_BOUND_SHARE = 0.2


def gda_schedule(noise_multiplier, multinomial=False):
    """Schedule constants of ``solver="gda"`` for a noise multiplier (public).

    The constants move continuously from the noisy schedule (``_GDA_*``) to
    the noiseless one (``_GDA_NOISELESS``) as ``z`` falls from
    ``_GDA_NOISELESS_Z`` to 0, by the share ``u = max(0, 1 - z /
    _GDA_NOISELESS_Z)``, and the primal momentum is gradient-restarted
    wherever ``u > 0`` (the dual step is then above its noisy value and would
    outpace the momentum's memory). ``z`` is computed from the public budget and plan
    only, so the rule is post-processing-free public information. The
    multinomial loss has its own primal step factor and a clip factor
    (``_GDA_MULTINOMIAL`` to ``_GDA_NOISELESS_MULTINOMIAL``); its other
    constants stay noisy.

    Parameters
    ----------
    noise_multiplier : float
        ``z`` of every step (``0`` at ``epsilon=np.inf``).
    multinomial : bool, default=False
        Whether the multinomial loss is fitted.

    Returns
    -------
    dict
        ``step_factor``, ``dual_step``, ``primal_average_from``,
        ``dual_warmup``, ``restart`` (gradient-restarted momentum, on
        wherever ``u > 0``, for both losses) and the share
        ``noiseless_share`` (``u``).

    Examples
    --------
    >>> gda_schedule(0.0)["step_factor"]
    3.0
    >>> gda_schedule(0.0)["restart"], gda_schedule(1.0)["restart"]
    (True, False)
    >>> gda_schedule(50.0)["noiseless_share"]
    0.0
    >>> gda_schedule(50.0, multinomial=True)["clip_factor"]
    0.7
    """
    z = float(noise_multiplier)
    u = max(0.0, 1.0 - z / _GDA_NOISELESS_Z)
    noiseless = _GDA_NOISELESS_MULTINOMIAL if multinomial else _GDA_NOISELESS
    noisy = {
        "step_factor": _GDA_MULTINOMIAL["step_factor"]
        if multinomial
        else _GDA_STEP_FACTOR,
        "dual_step": _GDA_DUAL_STEP,
        "primal_average_from": (
            _GDA_AVERAGE_FROM
            if _GDA_PRIMAL_AVERAGE_FROM is None
            else _GDA_PRIMAL_AVERAGE_FROM
        ),
        "dual_warmup": _GDA_DUAL_WARMUP,
    }
    noisy["clip_factor"] = (
        _GDA_MULTINOMIAL["clip_factor"] if multinomial else _GDA_BINARY_CLIP_FACTOR
    )
    if u == 0.0:
        out = dict(noisy)
        out["primal_average_from"] = _GDA_PRIMAL_AVERAGE_FROM  # as before
    else:
        out = {
            k: (1.0 - u) * v + u * noiseless[k] if k in noiseless else v
            for k, v in noisy.items()
        }
    out["restart"] = _GDA_RESTART or u > 0.0
    out["noiseless_share"] = u
    return out


def multinomial_noise_ratio(noise_multiplier, n_samples, n_params, n_classes):
    """Public per-step noise-to-signal ratio ``r = z sqrt(p K) / n``.

    The norm of the Gaussian noise on the mean gradient of a step is about
    ``2 clip z sqrt(p K) / n``; the mean of clipped gradients has norm at most
    ``clip``. ``r`` is their ratio up to the constant 2: a function of the
    budget, ``n``, the dimensions and the plan only.

    Parameters
    ----------
    noise_multiplier : float
        ``z`` of every step.
    n_samples : int
        Public number of records.
    n_params : int
        Rows of the coefficient matrix (features plus intercept column).
    n_classes : int

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_noise_ratio(20.0, 1000, 25, 4)
    0.2
    """
    return float(noise_multiplier) * math.sqrt(n_params * n_classes) / n_samples


def multinomial_momentum(noise_ratio):
    """Nesterov momentum of the multinomial ``"gda"`` schedule (public rule).

    ``_GDA_MOMENTUM`` (0.9) while the per-step noise-to-signal ratio ``r``
    (:func:`multinomial_noise_ratio`) is at most ``_GDA_MOMENTUM_RATIO[0]``,
    none from ``_GDA_MOMENTUM_RATIO[1]`` on, linear in ``log r`` between.

    Parameters
    ----------
    noise_ratio : float

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_momentum(0.01), multinomial_momentum(1.0)
    (0.9, 0.0)
    """
    return _GDA_MOMENTUM * (1.0 - _noise_share(noise_ratio))


@dataclass(frozen=True)
class GDASchedule:
    """Public schedule of ``solver="gda"`` (full-batch noisy descent-ascent).

    Everything :func:`~skdp.solvers.saddle_point.gda.group_dro_gda` needs
    besides the rows and the public row bound, which is known only once it
    has been released (:meth:`settings`).

    Attributes
    ----------
    n_steps : int
        Full-batch releases.
    noise_multiplier : float
        ``z`` of every release, relative to its own sensitivity.
    n_classes : int
        ``2``: binary logistic loss; more: multinomial loss.
    radius : float
        Radius of the coefficient ball (Frobenius for ``n_classes > 2``).
    step_scale : float
        User multiplier of the primal step.
    step_factor : float
        Schedule multiplier of the primal step.
    clip_factor : float
        Per-record gradient clip in units of the row bound (binary loss: 0.3
        where the noise ratio ``z sqrt(p) / n`` is at least 0.3, rising to 1,
        where it never binds, as that ratio falls to 0.05 and as ``z -> 0``;
        the multinomial gradient's norm is at most ``sqrt(2)`` row bounds).
    dual_step, dual_warmup, average_from, primal_average_from : float
        Dual step, warm-up fraction and averaging windows
        (``primal_average_from`` may be ``None``: the same as
        ``average_from``).
    momentum : float
    optimistic : bool
    confidence : float
    restart : bool
    noiseless_share : float
        ``u`` of :func:`gda_schedule`.
    """

    n_steps: int
    noise_multiplier: float
    n_classes: int
    radius: float
    step_scale: float
    step_factor: float
    clip_factor: float
    dual_step: float
    dual_warmup: float
    average_from: float
    primal_average_from: Any
    momentum: float
    optimistic: bool
    confidence: float
    restart: bool
    noiseless_share: float

    @property
    def multinomial(self):
        """Whether the multinomial (softmax) loss is fitted."""
        return self.n_classes > 2

    def settings(self, bound, n_groups):
        """Clip, loss cap and step sizes for rows of norm at most ``bound``.

        Parameters
        ----------
        bound : float
            Public (given or released) bound on the augmented row norms.
        n_groups : int

        Returns
        -------
        dict
            ``clip``, ``loss_bound``, ``loss_factor`` and ``primal_step``.

        Examples
        --------
        >>> s = gda_plan(np.inf, 1e-6, [], None, radius=5.0).schedule
        >>> s.settings(2.0, 1)["clip"], s.settings(2.0, 1)["primal_step"]
        (2.0, 3.0)
        """
        if self.multinomial:
            # ||x (p - e_y)^T|| <= sqrt(2) bound: the Frobenius clip of the
            # whole d x K gradient binds when noisy (factor 0.7) and never
            # without noise (factor sqrt(2): epsilon=inf is the unclipped
            # multinomial objective).
            clip = self.clip_factor * bound
            # Losses are capped at a public multiple of the loss at W = 0.
            loss_cap = _GDA_LOSS_CAP * math.log(self.n_classes) / math.log(2.0)
            # 1 / smoothness bound (the softmax Hessian is at most 1/2) times
            # the schedule's factor
            primal_step = (
                self.step_scale * self.step_factor / (MULTINOMIAL_CURVATURE * bound**2)
            )
        else:
            # |l'| <= 1 and ||x|| <= bound: the gradients fit in one bound, so
            # the clip binds only below it (noisy: _GDA_BINARY_CLIP_FACTOR)
            clip = self.clip_factor * bound
            loss_cap = min(float(np.logaddexp(0.0, self.radius * bound)), _GDA_LOSS_CAP)
            # 1 / smoothness bound times the schedule's factor (1 when noisy),
            # over the clip factor: the step's noise in w does not change
            primal_step = (
                self.step_scale * self.step_factor * 4.0 / (self.clip_factor * bound**2)
            )
        loss_factor = _GDA_LOSS_SHARE * clip / loss_cap if n_groups > 1 else 0.0
        return {
            "clip": clip,
            "loss_bound": loss_cap,
            "loss_factor": loss_factor,
            "primal_step": primal_step,
        }


@dataclass(frozen=True)
class GDAPlan:
    """:func:`gda_plan`'s result: the schedule and the whole fit's event.

    Attributes
    ----------
    schedule : GDASchedule
    event : DpEvent
        The fixed events (if any) composed with the ``n_steps`` releases.
    """

    schedule: GDASchedule
    event: Any


def _log_ramp(x, lo, hi):
    """0 for ``x <= lo``, 1 from ``hi`` on, linear in ``log x`` between."""
    x = float(x)
    if x <= lo:
        return 0.0
    if x >= hi:
        return 1.0
    return math.log(x / lo) / math.log(hi / lo)


def _noise_share(noise_ratio):
    """0 for ``r <= _GDA_MOMENTUM_RATIO[0]``, 1 from ``[1]`` on, linear in log r."""
    return _log_ramp(noise_ratio, *_GDA_MOMENTUM_RATIO)


def multinomial_noisy_average_from(n_coefficients):
    """Averaging start of the multinomial fit without momentum (public rule).

    ``_GDA_MULTINOMIAL_NOISY_AVERAGE_FROM[0]`` (0.5) while the number of
    coefficients ``p K`` is at most ``_GDA_AVERAGE_COEFS[0]``,
    ``_GDA_MULTINOMIAL_NOISY_AVERAGE_FROM[1]`` (0.7) from
    ``_GDA_AVERAGE_COEFS[1]`` on, linear in ``log(p K)`` between. A function
    of the dimensions only.

    Parameters
    ----------
    n_coefficients : int or None
        ``p K``: rows of the coefficient matrix (features plus intercept
        column) times the number of classes. ``None``: the small-model end.

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_noisy_average_from(15), multinomial_noisy_average_from(650)
    (0.5, 0.7)
    """
    lo, hi = _GDA_MULTINOMIAL_NOISY_AVERAGE_FROM
    if n_coefficients is None:
        return lo
    return lo + (hi - lo) * _log_ramp(n_coefficients, *_GDA_AVERAGE_COEFS)


def multinomial_average_from(noise_ratio, noiseless_share=0.0, n_coefficients=None):
    """Primal averaging start of the one-group multinomial ``"gda"`` fit.

    A public rule: ``_GDA_MULTINOMIAL_AVERAGE_FROM`` (0.3) while the per-step
    noise-to-signal ratio ``r`` (:func:`multinomial_noise_ratio`) is at most
    ``_GDA_MOMENTUM_RATIO[0]`` (full momentum), ``A =``
    :func:`multinomial_noisy_average_from` ``(p K)`` from
    ``_GDA_MOMENTUM_RATIO[1]`` on (no momentum), ``A - (A - 0.3) (1 -
    s)**2`` between, with ``s`` the share of :func:`multinomial_radius`
    (linear in ``log r``); and moved to ``_GDA_AVERAGE_FROM`` (0.5) by the
    noiseless share ``u`` of :func:`gda_schedule`. A function of the budget,
    ``n`` and the dimensions.

    Parameters
    ----------
    noise_ratio : float
    noiseless_share : float, default=0.0
    n_coefficients : int or None, default=None
        ``p K`` (:func:`multinomial_noisy_average_from`).

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_average_from(0.01), multinomial_average_from(1.0)
    (0.3, 0.5)
    >>> multinomial_average_from(1.0, n_coefficients=650)
    0.7
    >>> multinomial_average_from(0.0, noiseless_share=1.0)
    0.5
    """
    noisy = multinomial_noisy_average_from(n_coefficients)
    gap = noisy - _GDA_MULTINOMIAL_AVERAGE_FROM
    # squared: the momentum's memory (1 / (1 - m) steps) is long only near
    # full momentum; at momentum 0.36 (digits, epsilon = 5) the earlier
    # average of the linear rule cost 0.0008 +- 0.0004
    u = float(noiseless_share)
    on = (1.0 - _noise_share(noise_ratio)) ** 2 * (1.0 - u)
    # this order of operations keeps the values before the p K rule exact
    # where the start is 0.5 (the last term is then 0.0)
    return noisy - gap * on + u * (_GDA_AVERAGE_FROM - noisy)


def default_norm_clip_scale(n_features, intercept_scaling):
    """Clip scale of the multinomial fit under the public default norm.

    ``sqrt((d / 3 + s^2) / (d + s^2))``: the norm of a typical augmented row
    with features uniform on ``[-1, 1]`` over the public default bound
    ``sqrt(d + s^2)`` (``s``: the intercept column's value, ``0`` without
    intercept). A public function of the dimensions.

    Parameters
    ----------
    n_features : int
    intercept_scaling : float
        ``0`` without an intercept column.

    Returns
    -------
    float

    Examples
    --------
    >>> round(default_norm_clip_scale(4, 1.0), 3), default_norm_clip_scale(3, 0.0)
    (0.683, 0.5773502691896257)
    """
    d, s2 = float(n_features), float(intercept_scaling) ** 2
    return math.sqrt((d / _GDA_DEFAULT_NORM_SPREAD + s2) / (d + s2))


def multinomial_clip_scale(noise_ratio):
    """Scale of the noisy multinomial clip factor (public rule).

    ``min(1, (_GDA_CLIP_RATIO / r) ** _GDA_CLIP_POWER)`` with ``r`` the
    per-step noise-to-signal ratio (:func:`multinomial_noise_ratio`): 1 up to
    ``r = 0.4``, then a smaller clip as the noise dominates each step. A
    public rule: ``r`` is a function of the budget, ``n`` and the dimensions.

    Parameters
    ----------
    noise_ratio : float

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_clip_scale(0.1), round(multinomial_clip_scale(1.0), 3)
    (1.0, 0.76)
    """
    r = float(noise_ratio)
    if r <= _GDA_CLIP_RATIO:
        return 1.0
    return float((_GDA_CLIP_RATIO / r) ** _GDA_CLIP_POWER)


def multinomial_bound_share(n_samples, mu):
    """Fraction of its budget the multinomial feature-norm bound keeps (public).

    ``_GDA_MULTINOMIAL_BOUND_SHARE`` if the bound's quantile stays reachable
    (:func:`norm_quantile_reachable`) at that fraction of its GDP budget
    ``mu**2``, else 1. A function of ``n`` and the budget only.

    Parameters
    ----------
    n_samples : int
    mu : float
        GDP budget the bound would have without the rule.

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_bound_share(1347, 0.45), multinomial_bound_share(120, 0.45)
    (0.2, 1.0)
    """
    share = _GDA_MULTINOMIAL_BOUND_SHARE
    if norm_quantile_reachable(n_samples, float(mu) * math.sqrt(share)):
        return share
    return 1.0


def multinomial_radius(noise_ratio):
    """Default radius of the multinomial ``"gda"`` fit (``radius=None``).

    ``_GDA_DEFAULT_RADIUS`` (5) while the per-step noise-to-signal ratio
    ``r`` (:func:`multinomial_noise_ratio`) is at most
    ``_GDA_MOMENTUM_RATIO[0]``, ``_GDA_RADIUS_GROWTH`` (4) times that from
    ``_GDA_MOMENTUM_RATIO[1]`` on, geometric in between (linear in ``log r``).
    A public rule: ``r`` is a function of the budget, ``n`` and the
    dimensions.

    Parameters
    ----------
    noise_ratio : float

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_radius(0.01), multinomial_radius(1.0)
    (5.0, 20.0)
    """
    return _GDA_DEFAULT_RADIUS * _GDA_RADIUS_GROWTH ** _noise_share(noise_ratio)


def gda_plan(
    epsilon,
    delta,
    fixed,
    max_iter,
    *,
    n_classes=2,
    radius=5.0,
    step_scale=1.0,
    dual_step=None,
    n_samples=None,
    n_params=None,
    clip_scale=1.0,
    n_groups=1,
):
    """Public plan of ``solver="gda"`` next to the ``fixed`` estimation events.

    ``n_steps`` full-batch releases (``max_iter``, default 100) at the noise
    multiplier ``z`` that meets ``(epsilon, delta)`` together with the
    ``fixed`` events, and the schedule rule of :func:`gda_schedule` at that
    ``z``.

    Parameters
    ----------
    epsilon, delta : float
    fixed : list of DpEvent
        Other releases of the same fit (estimates), composed first.
    max_iter : int or None
    n_classes : int, default=2
    radius : float or None, default=5.0
        ``None``: ``_GDA_DEFAULT_RADIUS`` (5), or with more than two classes
        and ``n_samples``, ``n_params`` given, :func:`multinomial_radius`.
    step_scale : float, default=1.0
    dual_step : float or None, default=None
        ``None``: the schedule rule's.
    n_samples, n_params : int or None, default=None
        Public number of records and of coefficient rows (features plus
        intercept column). With more than two classes and both given, the
        momentum follows :func:`multinomial_momentum`, the default radius
        :func:`multinomial_radius` and, with one group (``n_groups``), the
        primal averaging :func:`multinomial_average_from`; otherwise they are
        ``_GDA_MOMENTUM``, 5 and the schedule rule's; the noisy clip factor
        is also scaled by :func:`multinomial_clip_scale`.
    clip_scale : float, default=1.0
        Multiplier of the noisy multinomial clip factor (the noiseless one,
        ``sqrt(2)``, is kept; in between the share ``u`` of
        :func:`gda_schedule` interpolates). :func:`plan_minimax` passes
        :func:`default_norm_clip_scale` under the public default norm.
    n_groups : int, default=1
        Public number of groups. The earlier multinomial averaging of
        :func:`multinomial_average_from` is for one group (plain ERM); with
        several, the group weights still move early in the run, so the
        primal average keeps the schedule rule's window.

    Returns
    -------
    GDAPlan

    Examples
    --------
    >>> plan = gda_plan(1.0, 1e-6, [], 10)
    >>> plan.schedule.n_steps, round(plan.schedule.noise_multiplier, 2)
    (10, 13.36)
    """
    fixed_event = ComposedDpEvent(fixed) if fixed else NoOpDpEvent()
    n_steps = _GDA_MAX_ITER if max_iter is None else int(max_iter)
    z = calibrate_gaussian(
        epsilon, delta, n_steps, other_event=fixed_event if fixed else None
    )
    steps_event = (
        SelfComposedDpEvent(GaussianDpEvent(z), n_steps)
        if np.isfinite(epsilon)
        else NonPrivateDpEvent()
    )
    event = ComposedDpEvent([fixed_event, steps_event]) if fixed else steps_event
    rule = gda_schedule(z, multinomial=n_classes > 2)
    momentum = _GDA_MOMENTUM
    default_radius = _GDA_DEFAULT_RADIUS
    primal_average_from = rule["primal_average_from"]
    if n_classes > 2 and n_samples is not None and n_params is not None:
        ratio = multinomial_noise_ratio(z, n_samples, n_params, n_classes)
        momentum = multinomial_momentum(ratio)
        default_radius = multinomial_radius(ratio)
        if int(n_groups) == 1:
            # with several groups, iterates from before the weights settle
            # would enter the average (3-group K = 5 task, n = 1e5, epsilon
            # = 1: worst-group log-loss 1.194 / 1.210 against 1.152 / 1.156
            # with the schedule's window, seeds 0 / 1)
            primal_average_from = multinomial_average_from(
                ratio, rule["noiseless_share"], n_params * int(n_classes)
            )
        clip_scale = clip_scale * multinomial_clip_scale(ratio)
    radius = default_radius if radius is None else radius
    clip_factor = rule.get("clip_factor", 1.0)
    if n_classes == 2 and n_samples is not None and n_params is not None:
        # the noisy binary clip binds only where the noise dominates a step
        ratio = multinomial_noise_ratio(z, n_samples, n_params, 1)
        clip_factor = 1.0 - (1.0 - clip_factor) * _noise_share(ratio)
    if n_classes > 2 and clip_scale != 1.0:
        u = rule["noiseless_share"]
        clip_factor = (1.0 - u) * _GDA_MULTINOMIAL[
            "clip_factor"
        ] * clip_scale + u * _GDA_NOISELESS_MULTINOMIAL["clip_factor"]
    schedule = GDASchedule(
        n_steps=n_steps,
        noise_multiplier=z,
        n_classes=int(n_classes),
        radius=float(radius),
        step_scale=float(step_scale),
        step_factor=rule["step_factor"],
        clip_factor=float(clip_factor),
        dual_step=float(rule["dual_step"] if dual_step is None else dual_step),
        dual_warmup=rule["dual_warmup"],
        average_from=_GDA_AVERAGE_FROM,
        primal_average_from=primal_average_from,
        momentum=momentum,
        optimistic=_GDA_OPTIMISTIC,
        confidence=_GDA_CONFIDENCE,
        restart=rule["restart"],
        noiseless_share=rule["noiseless_share"],
    )
    return GDAPlan(schedule, event)


@dataclass(frozen=True)
class MinimaxPlan:
    """Public plan of a minimax group-fair fit (built without data).

    Attributes
    ----------
    solver : {"gda", "nseg", "nispp"}
    n_samples, n_groups, n_classes : int
    estimates : tuple of str
        Public quantities released privately before the solver runs, in
        order: ``"feature_norm"``, ``"group_priors"``, ``"center"``.
    estimate_mu : float
        GDP parameter of each estimate (the norm bound's noisy bisection,
        :func:`~skdp.privacy.private_norm_bound`, is released at exactly
        this ``mu``; for the multinomial ``"gda"`` bound alone it is
        :func:`multinomial_bound_share` of its share).
    estimate_noise_multiplier : float
        Noise multiplier of the Gaussian estimates (histogram, mean).
    noise_multiplier : float
        ``z`` of the solver's releases.
    n_releases : int
        Noisy releases of the solver.
    event : DpEvent
        The whole fit's privacy event (charged before any record is read).
    radius : float
    min_group_prior : float
    intercept_scaling : float
        Value of the constant column (``0``: no intercept).
    step_scale : float
    dual_scale : float or None
        NSEG / NISPP only.
    gda : GDASchedule or None
        ``solver="gda"``.
    batches : BatchSchedule or None
        NSEG / NISPP.
    default_feature_norm : float or None
        Public feature-norm bound used instead of an estimate when
        ``feature_norm`` was not given and ``n`` is too small for the private
        quantile at its budget (:func:`norm_quantile_reachable`);
        ``sqrt(n_features)``. ``None`` otherwise.
    calibration_noise_multiplier : float
        Noise multiplier of the private logit calibration's histogram
        (:func:`~skdp.solvers.calibration.private_logit_calibration`), run
        after the solver; ``0.0``: no calibration.
    shrinkage_mu : float
        GDP budget of the private shrinkage of a multiclass fit toward the
        private base rates
        (:func:`~skdp.solvers.calibration.private_softmax_shrinkage`), run
        after the solver; ``0.0``: none.
    """

    solver: str
    n_samples: int
    n_groups: int
    n_classes: int
    estimates: tuple
    estimate_mu: float
    estimate_noise_multiplier: float
    noise_multiplier: float
    n_releases: int
    event: Any
    radius: float
    min_group_prior: float
    intercept_scaling: float
    step_scale: float
    dual_scale: Any = None
    gda: Any = None
    batches: Any = None
    default_feature_norm: Any = None
    calibration_noise_multiplier: float = 0.0
    shrinkage_mu: float = 0.0

    @property
    def fit_intercept(self):
        """Whether a constant column is appended."""
        return self.intercept_scaling > 0


def norm_quantile_reachable(n_samples, mu):
    """Whether the private feature-norm bound can reach even the median.

    :func:`~skdp.privacy.private_norm_bound` bisects on counts with Gaussian
    noise ``z`` (``sqrt(steps) / mu``, :func:`~skdp.privacy.private_norm_bound_event`); when
    ``n < 8 z`` even the median can land orders of magnitude off (measured on
    iris and wine at ``epsilon = 1``: 1.6e-5 to 8.7e4 for row norms of about
    1, with the exponential mechanism that preceded the bisection). A public
    function of ``n`` and the bound's GDP budget.

    Parameters
    ----------
    n_samples : int
    mu : float
        GDP budget of the bound.

    Returns
    -------
    bool

    Examples
    --------
    >>> norm_quantile_reachable(112, 0.17), norm_quantile_reachable(1347, 0.13)
    (False, True)
    """
    return not median_out_of_reach(n_samples, norm_bound_noise_multiplier(mu))


def plan_minimax(
    epsilon,
    delta,
    n_samples,
    n_features,
    n_groups,
    n_classes,
    *,
    solver="gda",
    estimate_norm=True,
    estimate_priors=True,
    center=False,
    estimation_share=0.1,
    calibration_share=0.0,
    max_iter=None,
    sampling="poisson",
    batch_size=None,
    radius=None,
    step_scale=1.0,
    dual_scale=None,
    dual_step=None,
    min_group_prior=0.05,
    fit_intercept=True,
    intercept_scaling=1.0,
):
    """Plan a minimax group-fair fit from public inputs only.

    Each estimate takes its part of ``estimation_share`` of ``mu**2`` (GDP):
    each (histogram of the groups, mean, the norm bound's noisy bisection)
    is a Gaussian release at that GDP parameter. The solver's noise is then
    calibrated exactly to what is left. When ``n`` is too small for the norm
    bound at its share
    (:func:`norm_quantile_reachable`), it is not released: the plan uses the
    public ``default_feature_norm = sqrt(n_features)`` (rows of features
    scaled to ``[-1, 1]``), spends nothing on it, and scales the noisy
    multinomial clip factor by :func:`default_norm_clip_scale`. When the
    bound is the only estimate of a multinomial ``"gda"`` fit, it takes
    :func:`multinomial_bound_share` of its share (the rest goes to the
    steps).

    Parameters
    ----------
    epsilon, delta : float
        Target of the whole fit.
    n_samples : int
        Public number of records.
    n_features : int
        Number of features (without the intercept column).
    n_groups, n_classes : int
    solver : {"gda", "nseg", "nispp"}, default="gda"
    estimate_norm : bool, default=True
        Estimate the feature-norm bound privately.
    estimate_priors : bool, default=True
        Estimate the group priors privately (only with several groups).
    center : bool, default=False
        Release a private mean to centre the features.
    estimation_share : float, default=0.1
    calibration_share : float, default=0.0
        Share of ``mu**2`` for the private logit calibration, one Gaussian
        histogram composed with the rest (two classes with an intercept and
        a finite ``epsilon`` only; else nothing is planned for it). The
        solver's noise is calibrated to what is left.
    max_iter, sampling, batch_size, radius, step_scale, dual_scale, dual_step
        As in :class:`~skdp.fairness.MinimaxFairClassifier`.
        (``radius=None``: 5, or :func:`multinomial_radius` for the
        multinomial ``"gda"`` fit).
    min_group_prior : float, default=0.05
    fit_intercept : bool, default=True
    intercept_scaling : float, default=1.0

    Returns
    -------
    MinimaxPlan

    Examples
    --------
    >>> plan = plan_minimax(1.0, 1e-6, 1000, 3, 2, 2, max_iter=10)
    >>> plan.estimates, plan.n_releases
    (('feature_norm', 'group_priors'), 10)
    >>> plan == plan_minimax(1.0, 1e-6, 1000, 3, 2, 2, max_iter=10)
    True
    """
    eps = float(epsilon)
    n_groups = int(n_groups)

    def shares(estimates, fraction=1.0):
        estimate = Budget.from_target(eps, delta, margin=False).share(
            estimation_share * fraction, max(len(estimates), 1)
        )
        return estimate.mu, estimate.noise_multiplier()

    estimates = []
    if estimate_norm:
        estimates.append("feature_norm")
    if estimate_priors and n_groups > 1:
        estimates.append("group_priors")
    if center:
        estimates.append("center")
    mu_est, z_est = shares(estimates)
    default_norm = None
    if estimate_norm and not norm_quantile_reachable(n_samples, mu_est):
        # public rule: a quantile out of reach is not released
        estimates.remove("feature_norm")
        default_norm = math.sqrt(int(n_features))
        mu_est, z_est = shares(estimates)
    if solver == "gda" and int(n_classes) > 2 and estimates == ["feature_norm"]:
        # public rule: the multinomial bound alone needs less of its share
        fraction = multinomial_bound_share(n_samples, mu_est)
        if fraction < 1.0:
            mu_est, z_est = shares(estimates, fraction)
    fixed = []
    for name in estimates:
        if name == "feature_norm":
            fixed.append(private_norm_bound_event(mu_est))
        elif name == "group_priors":
            fixed.append(noisy_histogram_event(z_est))
        else:
            fixed.append(GaussianDpEvent(z_est))
    z_calibration = shrinkage_mu = 0.0
    if calibration_share and fit_intercept and math.isfinite(eps):
        if not estimation_share + calibration_share < 1.0:  # public parameters
            raise ValueError(
                f"calibration_share={calibration_share:g} leaves nothing for the "
                f"fit: with estimation_share={estimation_share:g} it must be "
                f"below {1.0 - estimation_share:g}."
            )
        budget = Budget.from_target(eps, delta, margin=False).share(calibration_share)
        if int(n_classes) == 2:
            z_calibration = budget.noise_multiplier()
            fixed.append(calibration_event(z_calibration))
        else:
            shrinkage_mu = budget.mu
            fixed.append(shrinkage_event(shrinkage_mu))
    common = dict(
        solver=solver,
        n_samples=int(n_samples),
        n_groups=n_groups,
        n_classes=int(n_classes),
        estimates=tuple(estimates),
        estimate_mu=mu_est,
        estimate_noise_multiplier=z_est,
        radius=_GDA_DEFAULT_RADIUS if radius is None else float(radius),
        min_group_prior=float(min_group_prior),
        intercept_scaling=float(intercept_scaling) if fit_intercept else 0.0,
        step_scale=float(step_scale),
        default_feature_norm=default_norm,
        calibration_noise_multiplier=z_calibration,
        shrinkage_mu=shrinkage_mu,
    )
    if solver == "gda":
        plan = gda_plan(
            eps,
            delta,
            fixed,
            max_iter,
            n_classes=n_classes,
            radius=radius,
            step_scale=step_scale,
            dual_step=dual_step,
            n_samples=n_samples,
            n_params=int(n_features) + int(bool(fit_intercept)),
            n_groups=n_groups,
            clip_scale=(
                1.0
                if default_norm is None
                else default_norm_clip_scale(
                    n_features, float(intercept_scaling) if fit_intercept else 0.0
                )
            ),
        )
        common["radius"] = plan.schedule.radius
        return MinimaxPlan(
            noise_multiplier=plan.schedule.noise_multiplier,
            n_releases=plan.schedule.n_steps,
            event=plan.event,
            gda=plan.schedule,
            **common,
        )
    fixed_event = ComposedDpEvent(fixed) if fixed else NoOpDpEvent()
    batches = saddle_point_schedule(
        solver,
        sampling,
        n_samples,
        dim=int(n_features) + int(fit_intercept) + n_groups,
        epsilon=eps,
        delta=delta,
        batch_size=batch_size,
        max_iter=max_iter,
    )
    z = calibrate_schedule(batches, eps, delta, fixed_event)
    return MinimaxPlan(
        noise_multiplier=z,
        n_releases=batches.n_releases,
        event=schedule_event(batches, z, fixed_event),
        dual_scale=None if dual_scale is None else float(dual_scale),
        batches=batches,
        **common,
    )
