"""Theorem 1 pipeline of Asi, Liu and Tian: population localization with split-and-aggregate.

- **Algorithm 2 (Population-Localize).** Phases ``i = 1..I`` with
  regularisation ``lambda_i = lambda_1 * 32**(i-1)`` centred at the previous
  phase's output ``x_{i-1}``; each phase uses a fresh, disjoint batch of
  about ``n / 2**i`` records (the first phase takes the remainder, so every
  record is used).
- **Algorithm 3 (Aggregate-ERM).** A phase's batch is split into
  ``n_splits`` disjoint chunks; each runs Clipped-DP-SGD (Algorithm 1,
  :func:`~skdp.solvers.heavy_tailed.gd.clipped_dp_gd`) on the regularised
  problem ``F_chunk(x) + lambda_i / 2 ||x - x_{i-1}||**2`` from
  ``x_{i-1}``, and the geometric :func:`aggregate` picks one of the chunk
  outputs (pure post-processing).

Privacy: every record lies in exactly one chunk of one phase, so the plan is
a :class:`~skdp.privacy.ParallelDpEvent` of the chunk runs, each with the
whole budget. The paper's ``J ~ 400 log(I / delta)`` chunks per phase need an
enormous ``n``; ``n_splits`` is a practical (public) choice.
"""

import math
from dataclasses import dataclass

import numpy as np

from ...privacy import (
    ComposedDpEvent,
    ParallelDpEvent,
    gaussian_steps,
    parallel_scope,
)
from .bounds import (
    RANGE_STEPS,
    clip_search_range,
    default_scales,
    private_scales,
    scales_estimable,
    scales_needed,
)
from .bounds import scale_share as bound_scale_share
from .common import (
    gdp_of,
    paper_power,
    split_gdp,
)
from .gd import clipped_dp_gd, make_full_batch_plan
from .result import HeavyTailedResult
from .units import planned_design

__all__ = [
    "LocalizedPlan",
    "aggregate",
    "corollary1_parameters",
    "localized_chunks",
    "make_localized_plan",
    "localized_dp_sgd",
    "REG_GROWTH",
]

#: Regularisation growth between phases (Algorithm 2: lambda_i = lambda 32**i).
REG_GROWTH = 32.0


def aggregate(points, radius=None):
    """Geometric aggregation (Fact 2): a point with a majority of the others close.

    With ``radius=R``, returns a point ``x_i`` that has at least ``0.51 k``
    points (itself included) within ``2R``; if at least ``0.51 k`` of the
    points lie within ``R`` of some unknown ``z``, the result is within
    ``3R`` of ``z``. With ``radius=None`` the smallest such ``R`` is used
    (the point whose ``ceil(0.51 k)``-th nearest neighbour is closest), which
    is legitimate post-processing of private points.

    Parameters
    ----------
    points : ndarray of shape (k, d)
    radius : float, optional

    Returns
    -------
    point : ndarray of shape (d,)

    Raises
    ------
    ValueError
        If ``radius`` is given and no point has a majority within ``2 radius``.

    Examples
    --------
    >>> import numpy as np
    >>> pts = np.array([[0.0], [0.1], [0.2], [5.0], [9.0]])
    >>> aggregate(pts)
    array([0.1])
    """
    pts = np.asarray(points, dtype=float)
    k = pts.shape[0]
    need = int(math.ceil(0.51 * k))
    dist = np.linalg.norm(pts[:, None, :] - pts[None, :, :], axis=-1)
    if radius is None:
        kth = np.sort(dist, axis=1)[:, need - 1]
        return pts[int(np.argmin(kth))].copy()
    counts = np.count_nonzero(dist <= 2.0 * radius, axis=1)
    good = np.flatnonzero(counts >= need)
    if good.size == 0:
        raise ValueError("No point has a majority of the others within 2 * radius.")
    return pts[good[np.argmax(counts[good])]].copy()


def localized_chunks(n, n_splits, n_phases=None):
    """Disjoint index ranges ``[(start, stop), ...]`` per phase and chunk.

    Phase sizes are ``n >> i`` for ``i >= 2`` with the remainder in phase 1;
    each phase is cut into ``n_splits`` contiguous chunks of near-equal size
    (of a public random permutation). Phases whose chunks would be empty are
    dropped.

    Parameters
    ----------
    n : int
    n_splits : int
    n_phases : int, optional
        Default ``floor(log2(n / n_splits))`` (the paper's ``I``), at least 1.

    Returns
    -------
    list of list of (int, int)

    Examples
    --------
    >>> localized_chunks(20, 2)
    [[(0, 6), (6, 13)], [(13, 16), (16, 18)], [(18, 19), (19, 20)]]
    """
    n = int(n)
    J = max(1, min(int(n_splits), n))  # public: never more chunks than records
    if n_phases is None:
        n_phases = int(math.floor(math.log2(max(n / J, 1.0))))
    n_phases = max(1, int(n_phases))
    sizes = [n >> i for i in range(1, n_phases + 1)]
    sizes = [s for s in sizes if s >= J] or [n]
    sizes[0] += n - sum(sizes)
    out, start = [], 0
    for m in sizes:
        bounds = np.linspace(start, start + m, J + 1).round().astype(int)
        out.append([(int(a), int(b)) for a, b in zip(bounds[:-1], bounds[1:])])
        start += m
    return out


@dataclass(frozen=True)
class LocalizedPlan:
    """Noise of the localized pipeline (public).

    Parameters
    ----------
    chunks : list of list of (int, int)
        From :func:`localized_chunks`.
    runs : tuple of FullBatchPlan
        Plan of every chunk run of each phase (the whole budget each, minus
        the scale quantiles).
    n_scales : int
        Scale quantiles over all records (:func:`private_scales`, and the
        feature scale of :mod:`~skdp.solvers.heavy_tailed.units`).
    z_scale : float
    default_scales : bool
        Too few records for private scales: public defaults for
        standardized data (feature scale 1).
    feature_scale : bool
        Whether one of the ``n_scales`` quantiles is the feature scale.
    """

    chunks: list
    runs: tuple
    n_scales: int = 0
    z_scale: float = math.inf
    default_scales: bool = False
    feature_scale: bool = False

    @property
    def event(self):
        """Scale quantiles (all records), then all chunks in parallel."""
        chunks = ParallelDpEvent(
            [self.runs[i].event for i, phase in enumerate(self.chunks) for _ in phase]
        )
        if not self.n_scales:
            return chunks
        scales = gaussian_steps(self.z_scale, self.n_scales * RANGE_STEPS)
        return ComposedDpEvent([scales, chunks])


def make_localized_plan(
    mu,
    n,
    d,
    n_steps,
    *,
    n_splits=3,
    n_phases=None,
    n_scales=1,
    feature_scale=False,
    adaptive_clip=True,
    bound_share=0.1,
):
    """Plan of :func:`localized_dp_sgd` (shares of ``mu**2``).

    Parameters
    ----------
    mu : float
        GDP budget (every chunk gets all of it, minus a tenth of
        ``bound_share`` per scale quantile over all records).
    n, d : int
    n_steps : int
        Gradient steps of each chunk run.
    n_splits : int, default=3
    n_phases : int, optional
    n_scales : int, default=1
        Scale quantiles other than the feature scale; 0 when the clip level
        is public.
    feature_scale : bool, default=False
        Also release the feature scale (step, regularisation and the
        intercept column adapt to it).
    adaptive_clip : bool, default=True
    bound_share : float, default=0.1

    Returns
    -------
    LocalizedPlan

    Examples
    --------
    >>> from skdp.privacy import gdp_mu_of
    >>> plan = make_localized_plan(0.4, 10_000, 5, 20)
    >>> round(gdp_mu_of(plan.event), 6)
    0.4
    """
    chunks = localized_chunks(n, n_splits, n_phases)
    n_scales = int(n_scales) + bool(feature_scale)
    scale_share = bound_scale_share(bound_share, n_scales)
    z_scale = split_gdp(mu, [(n_scales * RANGE_STEPS, scale_share)])[0]
    use_defaults = bool(n_scales) and not scales_estimable(n, z_scale)
    if use_defaults:  # too few records: public scales, budget to the runs
        n_scales, scale_share, z_scale = 0, 0.0, math.inf
        feature_scale = False
    runs = tuple(
        make_full_batch_plan(
            mu,
            min(b - a for a, b in phase),
            d,
            n_steps,
            adaptive_clip=adaptive_clip,
            clip_share=bound_share - scale_share,
            reserved_share=scale_share,
        )
        for phase in chunks
    )
    return LocalizedPlan(
        chunks,
        runs,
        n_scales,
        z_scale,
        default_scales=use_defaults,
        feature_scale=bool(feature_scale),
    )


def localized_dp_sgd(
    X,
    y,
    loss,
    plan,
    rng,
    *,
    step_size,
    reg=None,
    clip=None,
    radius=math.inf,
    localization_radius=None,
    row_norms=None,
    order=None,
    fit_intercept=False,
    scaled_intercept=True,
):
    """Theorem 1 pipeline: Algorithm 2 with Algorithm 3 over Algorithm 1.

    If ``plan.feature_scale``, the private feature scale ``s`` of
    :mod:`~skdp.solvers.heavy_tailed.units` is released first (else
    ``s = 1``): the step is ``step_size / s**2``, the default
    regularisation is multiplied by ``s**2`` (it is relative to the
    curvature) and the intercept column is ``s``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features, without an intercept column.
    y : ndarray of shape (n,)
    loss : _GLMLoss
    plan : LocalizedPlan
    rng : numpy.random.Generator
    step_size : float
        Step of every Clipped-DP-SGD run, for features of unit scale.
    reg : float, optional
        ``lambda_1``. Default ``curvature_bound s**2 / sqrt(m)`` with ``m``
        the size of a first-phase chunk: Proposition 2's optimal ``lambda``
        scales like ``Delta / D`` with ``Delta ~ G / sqrt(m)``; the constant
        is practical (the paper's ``C_reg-pop`` is unspecified).
    clip : float or callable, optional
        Public clip level of every run, or ``m -> C`` for chunks of ``m``
        records. Default: a private row-norm bound (and target scale) over
        all records sets the search range, then each run estimates its clip
        levels privately (:func:`clipped_dp_gd`); a run too small for a
        reliable search starts from the previous phase's median level.
    radius : float, default=inf
        Final output is projected on ``B(0, radius)``.
    localization_radius : callable, optional
        ``lambda -> r``: chunk runs are projected on ``B(x_{i-1}, r)``
        (the paper's ``r = 2 G_1 / lambda``). Default: no ball.
    row_norms : ndarray of shape (n,), optional
    order : ndarray of shape (n,), optional
        Public permutation (default drawn from ``rng``).
    fit_intercept : bool, default=False
        Append a constant intercept column (its coefficient, in the units of
        ``y``, is the last entry of ``coef``).
    scaled_intercept : bool, default=True
        The intercept column is ``s`` rather than 1.

    Returns
    -------
    HeavyTailedResult
        ``clip_levels`` and ``step_sizes`` of shape ``(n_phases, n_splits,
        T)``, ``regularization`` (``lambda_i`` per phase), ``n_iter``
        (gradient steps over all chunk runs) and ``feature_scale``.

    References
    ----------
    Asi, Liu and Tian, NeurIPS 2024, Algorithms 1-3 and Theorem 1.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 2)); y = X @ np.array([1.0, -1.0])
    >>> plan = make_localized_plan(np.inf, 3000, 2, 40, n_scales=2)
    >>> res = localized_dp_sgd(X, y, SquaredLoss(), plan, rng, step_size=0.5)
    >>> np.round(res.coef, 1)  # lambda_1 shrinks towards 0 by ~2%
    array([ 1., -1.])
    """
    needed = (scales_needed(loss) if clip is None else 0) + plan.feature_scale
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
    if order is None:
        order = rng.permutation(n)
    curv = float(loss.curvature_bound) * design.curvature_scale
    step_size = float(step_size) / design.curvature_scale
    if reg is None:
        first = plan.chunks[0][0]
        reg = curv / math.sqrt(max(first[1] - first[0], 1))
    clip_range = None
    if clip is None:
        if plan.default_scales:
            # too few records for private scales: public ones (standardized data)
            row_bound, target_bound = default_scales(d, loss)
        else:
            row_bound, target_bound = private_scales(
                row_norms, y, loss, plan.z_scale, rng
            )
        clip_range = clip_search_range(loss, row_bound, target_bound)
    x = np.zeros(d)
    regs, clips, steps = [], [], []
    n_iter = 0
    clip_start = None
    # Every record lies in one chunk of one phase: one ledger part per chunk.
    parts = parallel_scope(sum(len(phase) for phase in plan.chunks))
    part = 0
    for i, phase in enumerate(plan.chunks):
        lam = float(reg) * REG_GROWTH**i
        r = math.inf if localization_radius is None else float(localization_radius(lam))
        outs, c_i, s_i = [], [], []
        for start, stop in phase:
            idx = order[start:stop]
            run_clip = clip(stop - start) if callable(clip) else clip
            with parts.part(part):
                res = clipped_dp_gd(
                    X[idx],
                    y[idx],
                    loss,
                    plan.runs[i],
                    rng,
                    step_size=step_size,
                    clip=run_clip,
                    clip_range=clip_range,
                    clip_start=clip_start,
                    w0=x,
                    center=x,
                    reg=lam,
                    radius=r,
                    row_norms=row_norms[idx],
                )
            part += 1
            outs.append(res.coef)
            c_i.append(res.clip_levels)
            s_i.append(res.step_sizes)
            n_iter += res.n_iter
        # post-processing: the next phase starts from this phase's levels
        clip_start = float(np.median([c[-1] for c in c_i]))
        x = aggregate(np.array(outs))
        regs.append(lam)
        clips.append(c_i)
        steps.append(s_i)
    if not math.isinf(radius):
        nrm = float(np.linalg.norm(x))
        if nrm > radius:
            x = x * (radius / nrm)
    return HeavyTailedResult(
        design.to_original(x),
        np.array(clips),
        np.array(steps),
        n_iter,
        feature_scale=design.scale,
        regularization=np.array(regs),
        fit_intercept=bool(fit_intercept),
        plan=plan,
    )


def corollary1_parameters(plan, d, *, G_k=None, G_2=None, k=4):
    """Public clip rule and localization radius of Corollary 1.

    With ``G_k``, a chunk of ``m`` records clips at ``G_k (25 m**2 rho /
    (32 d))**(1/(2k))``, ``rho`` the zCDP parameter of one chunk run of
    ``plan``; with ``G_1 = G_2`` (or ``G_k``), the runs of a phase with
    regularisation ``lambda`` are projected on the ball of radius
    ``2 G_1 / lambda`` around the phase's start (Algorithm 2).

    Parameters
    ----------
    plan : LocalizedPlan
    d : int
        Coefficients (with the intercept).
    G_k, G_2 : float, optional
        Public moment bounds.
    k : int, default=4

    Returns
    -------
    clip : callable or None
        ``m -> C`` (``None`` without ``G_k``: private clip levels).
    localization_radius : callable or None
        ``lambda -> r`` (``None`` without ``G_2`` and ``G_k``: no ball).

    Examples
    --------
    >>> plan = make_localized_plan(1.0, 10_000, 3, 30, n_scales=0)
    >>> clip, radius = corollary1_parameters(plan, 3, G_2=1.0)
    >>> clip is None, radius(4.0)
    (True, 0.5)
    """
    clip = None
    if G_k is not None:
        rho = 0.5 * gdp_of(plan.runs[0].z_grad, plan.runs[0].n_steps) ** 2

        def clip(m):
            return paper_power(G_k, 25 * m * m * rho / (32 * d), 2 * int(k))

    G_1 = G_2 if G_2 is not None else G_k
    loc_radius = None if G_1 is None else (lambda lam: 2.0 * G_1 / lam)
    return clip, loc_radius
