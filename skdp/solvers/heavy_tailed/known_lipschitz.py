"""Algorithm 4 of Asi, Liu and Tian (KnownLipReduction) followed by clipped DP-GD.

Rows whose per-row Lipschitz bound exceeds a threshold are replaced by the
zero function (a per-record map, so neighbours stay neighbours), then a DP
solver for Lipschitz losses runs on the result. The paper leaves that solver
open ([FKT20]); we use :func:`~skdp.solvers.heavy_tailed.gd.clipped_dp_gd`
with private, adaptive clip levels capped at the truncation level.
"""

import math
from dataclasses import dataclass

import numpy as np

from ...privacy import ComposedDpEvent, gaussian_steps
from ..noise_free import minimise_noise_free
from .bounds import (
    DEFAULT_TARGET,
    RANGE_STEPS,
    SEARCH_OCTAVES,
    UNRELIABLE_SLACK,
    clip_search_range,
    default_scales,
    noisy_median,
    scale_quantile,
    scales_estimable,
    small_n_scale_share,
)
from .bounds import scale_share as bound_scale_share
from .common import (
    gdp_of,
    paper_power,
    row_lipschitz_bounds,
    split_gdp,
)
from .gd import FullBatchPlan, clipped_dp_gd, make_full_batch_plan
from .units import floored_design, planned_design

__all__ = [
    "KnownLipschitzPlan",
    "make_known_lipschitz_plan",
    "known_lipschitz_scales",
    "known_lipschitz",
    "theorem2_clip",
]

#: Largest fraction of rows Algorithm 4's truncation aims to drop.
_MAX_TRUNC_FRACTION = 0.01


@dataclass(frozen=True)
class KnownLipschitzPlan:
    """Noise of :func:`known_lipschitz`: scale quantiles, then the GD run.

    Parameters
    ----------
    gd : FullBatchPlan
    n_scales : int
        Private scale quantiles over all records (the feature scale of
        :mod:`~skdp.solvers.heavy_tailed.units`, the truncation level, the
        target scale for the squared loss without a radius, the target
        median); 0 if all public.
    z_scale : float
        Multiplier of their counts.
    trunc_fraction : float
        Fraction of rows the truncation level aims to drop.
    default_scales : bool
        Too few records for private scales: public defaults for
        standardized data (:func:`default_scales`, feature scale 1) are
        used instead.
    feature_scale : bool
        Whether one of the ``n_scales`` quantiles is the feature scale.
    """

    gd: FullBatchPlan
    n_scales: int = 0
    z_scale: float = math.inf
    trunc_fraction: float = 0.0
    default_scales: bool = False
    feature_scale: bool = False

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
    feature_scale=False,
    adaptive_clip=True,
    bound_share=0.1,
    target=DEFAULT_TARGET,
    small_n_share=0.0,
    scale_margin=1.0,
    search_at_cap=True,
    max_trunc_fraction=_MAX_TRUNC_FRACTION,
    margin_share=0.0,
    checkpoints=None,
):
    """Budget split of Algorithm 4 + DP-GD (shares of ``mu**2``).

    A tenth of ``bound_share`` per scale quantile (feature scale, truncation
    level and, if needed, target scale and median; see
    :func:`~skdp.solvers.heavy_tailed.bounds.scale_share`) pays for those,
    the rest of ``bound_share`` for the clip levels; the remainder pays for
    the gradients.

    Parameters
    ----------
    mu : float
    n, d : int
    n_steps : int
    n_scales : int, default=1
        Scale quantiles other than the feature scale
        (:func:`known_lipschitz_scales`); 0 when the truncation level and
        clip level are public.
    feature_scale : bool, default=False
        Also release the feature scale (default step sizes and the
        intercept column adapt to it).
    adaptive_clip : bool, default=True
    bound_share : float, default=0.1
    target : QuantileTarget, optional
        Rule for the clipped fraction.
    small_n_share : float, default=0.0
        When ``n`` is too small for the scale quantiles at their default
        share, spend up to this share of ``mu**2`` on them
        (:func:`~skdp.solvers.heavy_tailed.bounds.small_n_scale_share`)
        instead of assuming standardized data; 0 keeps the public defaults.
        The clip-level share is unchanged; the gradients pay the difference.
    scale_margin : float, default=1.0
        Margin of :func:`~skdp.solvers.heavy_tailed.bounds.scales_estimable`
        for the default share (``2``: the scale counts' noise must be below
        ``n / 8``, else the small-``n`` share or the public defaults).
    search_at_cap : bool, default=True
        See :func:`~skdp.solvers.heavy_tailed.gd.make_full_batch_plan`.
    max_trunc_fraction : float, default=0.01
        Largest fraction of rows the truncation level aims to drop (it aims
        at ``min(max_trunc_fraction, p / 4)``, ``p`` the clipped fraction).
    margin_share : float, default=0.0
        When the scales are estimable without ``scale_margin`` but not with
        it, spend up to this share of ``mu**2`` on them to reach the margin
        (as ``small_n_share``) rather than use the public defaults.
    checkpoints : sequence of int, optional
        Steps of the clip search (see
        :func:`~skdp.solvers.heavy_tailed.gd.make_full_batch_plan`).

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
    n_scales = int(n_scales) + bool(feature_scale)
    scale_share = bound_scale_share(bound_share, n_scales)
    use_defaults = False
    clip_share = bound_share - scale_share
    if n_scales:
        (z_scale,) = split_gdp(mu, [(n_scales * RANGE_STEPS, scale_share)])
        if not scales_estimable(n, z_scale, scale_margin):
            share = None
            cap = small_n_share
            if scales_estimable(n, z_scale):
                # estimable without the margin: buy the margin (public rule)
                cap = max(cap, margin_share)
            if cap > 0:
                share = small_n_scale_share(mu, n, n_scales * RANGE_STEPS, cap)
            if share is not None and share > scale_share:
                scale_share = share
                (z_scale,) = split_gdp(mu, [(n_scales * RANGE_STEPS, share)])
            else:
                use_defaults, n_scales, scale_share = True, 0, 0.0
                feature_scale = False
                clip_share = bound_share
    gd = make_full_batch_plan(
        mu,
        n,
        d,
        n_steps,
        adaptive_clip=adaptive_clip,
        clip_share=clip_share,
        reserved_share=scale_share,
        target=target,
        search_at_cap=search_at_cap,
        checkpoints=checkpoints,
    )
    if not n_scales:
        return KnownLipschitzPlan(gd, default_scales=use_defaults)
    trunc = min(float(max_trunc_fraction), gd.clip_fraction / 4.0)
    return KnownLipschitzPlan(
        gd, n_scales, z_scale, trunc, feature_scale=bool(feature_scale)
    )


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
    unbounded = not loss.lipschitz_on(radius)
    median = _warm_start_intercept(loss, intercept, public_clip)
    target = (unbounded and not public_clip) or median
    return int(not public_truncation) + int(target) + int(median)


def _warm_start_intercept(loss, intercept, public_clip):
    return bool(intercept and not public_clip and not loss.labels)


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
    fit_intercept=False,
    scaled_intercept=True,
    penalties=None,
    scale_floor=None,
    average_from=0.5,
    step_growth=1.0,
    gd_plan_rule=None,
):
    """Algorithm 4 (KnownLipReduction) followed by clipped DP-GD.

    0. Units (:mod:`~skdp.solvers.heavy_tailed.units`): if
       ``plan.feature_scale``, the private feature scale ``s`` (else 1);
       the step is ``step_size / s**2`` and, with ``fit_intercept``, the
       intercept column is ``s`` (``scaled_intercept``) or 1.
    1. Per-row Lipschitz bounds ``L_i`` (:func:`row_lipschitz_bounds`) of
       the rows with their intercept column.
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
        Features, without an intercept column.
    y : ndarray of shape (n,)
    loss : _GLMLoss
    plan : KnownLipschitzPlan
    rng : numpy.random.Generator
    step_size : float
        Step for features of unit scale; divided by ``s**2``.
    truncation : float, optional
    clip : float, optional
        Public clip level (default: private, adaptive).
    radius : float, default=inf
        Domain radius; iterates (coefficients and intercept coefficient)
        are projected on ``B(0, radius)``.
    row_norms : ndarray of shape (n,), optional
        Norms of the rows of ``X``.
    fit_intercept : bool, default=False
        Append a constant intercept column. For regression losses with a
        private clip level, the run starts with the intercept at a private
        median of ``y`` (found in ``[-Y, Y]`` with ``Y`` the private target
        scale): heavy clipping makes a far-off intercept slow to reach, and
        the warm start costs one more scale quantile.
    scaled_intercept : bool, default=True
        The intercept column is the feature scale ``s`` rather than 1.
    penalties : sequence of (int, float, int), optional
        A ridge path in the same run (:func:`clipped_dp_gd`'s ``stages``):
        ``(n_steps_k, omega_k, n_averaged_k)`` with
        ``omega_k s**2 / 2 ||coef||**2`` added to the mean loss (``omega_k``
        is in units of the curvature ``s**2``, ``s`` the private feature
        scale; the intercept is not penalized). ``omega_k`` may be a
        callable ``omega_k(stage_coefs, clip_levels, s, windows)`` of the
        earlier stages' averages (original units), the clip levels so far,
        ``s`` and the earlier stages' averaged iterates (original units),
        all private releases. The steps add up to
        ``plan.gd.n_steps``; the privacy cost is that of ``plan``.
    scale_floor : float, optional
        Public factor ``f`` of a floor on the private feature scale: after
        the truncation level ``C`` is released, ``s`` is raised to at least
        ``C / (f sqrt(d))`` (with ``C`` a norm quantile, a row's RMS over
        its non-zero entries is at least its norm over ``sqrt(d)``; ``f``
        leaves room for heavy-tailed norms) and the design is rebuilt with
        it. Post-processing of two releases: a collapsed ``s`` (a huge
        step) is cut back to the scale of the row norms. Applies only when
        the truncation level is a norm quantile (a private ``C`` with the
        logistic loss or the squared loss without a radius). ``None``: no
        floor.
    average_from : float, default=0.5
        Without ``penalties``: the iterates from step ``floor(average_from
        * T)`` on are averaged (:func:`clipped_dp_gd`).
    step_growth : float, default=1.0
        Largest growth of the step before the averaged tail
        (:func:`clipped_dp_gd`; 1: constant step).
    gd_plan_rule : callable, optional
        ``f(gd_plan, truncation, feature_scale, step_size) -> (gd_plan,
        step_size)``, called once the truncation level and the feature scale
        are released, before the descent (post-processing of those
        releases; it may change the clipped fraction, not the noise).
        ``None``: ``plan.gd`` and ``step_size`` as given.

    Returns
    -------
    HeavyTailedResult
        ``coef`` has the intercept (in the units of ``y``) last if
        ``fit_intercept``; also the ``truncation`` level, the
        ``feature_scale`` ``s``, the ``target_scale`` (``None`` if not
        released) and, with ``penalties``, the ``stage_coefs`` (all private
        releases), and the ``plan``.

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
    >>> plan = make_known_lipschitz_plan(1.0, 2000, 3, 30, feature_scale=True)
    >>> res = known_lipschitz(X, y, LogisticLoss(), plan, rng, step_size=1.0)
    >>> bool(res.coef[0] > 1.0)
    True
    """
    warm = _warm_start_intercept(loss, fit_intercept, clip is not None)
    is_lipschitz = loss.lipschitz_on(radius)
    need_target = (clip is None and not is_lipschitz) or warm
    needed = (truncation is None) + need_target + warm + plan.feature_scale
    design = planned_design(
        X,
        rng,
        plan,
        needed,
        fit_intercept=fit_intercept,
        scaled_intercept=scaled_intercept,
        row_norms=row_norms,
    )
    X, row_norms = design.X, design.row_norms
    n, d = X.shape
    d_x = d - int(fit_intercept)
    bounds = row_lipschitz_bounds(loss, row_norms, y, radius)
    # with radius=inf the squared-loss "bounds" are only a ranking
    tail = 0.0 if plan.z_scale == 0 else plan.trunc_fraction
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
    else:
        if truncation is None:
            truncation = scale_quantile(bounds, tail, plan.z_scale, rng)
            # as before: the floor serves the logistic loss and the squared
            # loss with radius=inf (rows ranked by their norm)
            norm_ranked = loss.labels or not loss.lipschitz_on(radius)
            if scale_floor is not None and plan.feature_scale and norm_ranked:
                floor = truncation / (float(scale_floor) * math.sqrt(max(d_x, 1)))
                if design.scale < floor:
                    design = floored_design(design, floor, d_x)
                    X, row_norms = design.X, design.row_norms
                    bounds = row_lipschitz_bounds(loss, row_norms, y, radius)
        if need_target:
            target = scale_quantile(np.abs(y), tail, plan.z_scale, rng)
        if warm:
            w0[-1] = noisy_median(y, target, plan.z_scale, rng)
            w0 = design.to_design(w0)
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
    stages = None
    if penalties is not None:
        mask = np.ones(d)
        if fit_intercept:
            mask[-1] = 0.0  # unpenalized intercept, as in scikit-learn's Ridge

        def in_design(omega):
            if not callable(omega):
                return float(omega) * design.curvature_scale * mask

            def reg(coefs, clips, windows):
                orig = [design.to_original(c) for c in coefs]
                wins = [
                    np.array([design.to_original(w) for w in win]) for win in windows
                ]
                value = omega(orig, clips, design.scale, wins)
                return float(value) * design.curvature_scale * mask

            return reg

        stages = [(k, in_design(omega), n_avg) for k, omega, n_avg in penalties]
    gd_plan = plan.gd
    if gd_plan_rule is not None:
        gd_plan, step_size = gd_plan_rule(
            gd_plan, float(truncation), design.scale, step_size
        )
    res = clipped_dp_gd(
        X,
        y,
        loss,
        gd_plan,
        rng,
        step_size=float(step_size) / design.curvature_scale,
        clip=clip,
        clip_range=clip_range,
        clip_cap=truncation if is_lipschitz else math.inf,
        w0=w0,
        radius=radius,
        row_norms=norms_t,
        stages=stages,
        average_from=average_from,
        step_growth=step_growth,
    )
    if (
        gd_plan.z_grad == 0
        and plan.z_scale == 0
        and stages is None
        and not radius < math.inf
        and not loss.labels
    ):
        # nothing is private: finish at the objective's minimum (noise_free).
        # Not for labels: the unpenalised logistic loss has no minimiser on
        # separable rows, and there the descent's fixed number of steps is
        # what keeps the probabilities finite.
        res.coef = minimise_noise_free(X, y, loss, res.coef, keep)
    res.coef = design.to_original(res.coef)
    if stages is not None:
        res.stage_coefs = [design.to_original(c) for c in res.stage_coefs]
    res.truncation = float(truncation)
    res.feature_scale = design.scale
    res.target_scale = None if target is None else float(target)
    res.fit_intercept = bool(fit_intercept)
    res.plan = plan
    return res


def theorem2_clip(gd_plan, n, dim, G_k, k):
    """Theorem 2's truncation and clip level ``G_k (n sqrt(rho) / sqrt(dim))**(1/k)``.

    ``rho`` is the zCDP parameter ``mu**2 / 2`` of the gradient steps of
    ``gd_plan`` (public: the clip level is a function of the plan and the
    public moment bound only).

    Parameters
    ----------
    gd_plan : FullBatchPlan
    n : int
    dim : int
        Dimension of the noise (``d``, or ``d K`` for the softmax gradient).
    G_k : float
        Public bound on the ``k``-th moment of the per-row Lipschitz constants.
    k : int

    Returns
    -------
    float
        ``inf`` at ``epsilon = inf``.

    Examples
    --------
    >>> plan = make_full_batch_plan(np.inf, 100, 3, 10)
    >>> theorem2_clip(plan, 100, 3, 1.0, 4)
    inf
    """
    rho = 0.5 * gdp_of(gd_plan.z_grad, gd_plan.n_steps) ** 2
    return paper_power(G_k, n * math.sqrt(rho) / math.sqrt(dim), int(k))
