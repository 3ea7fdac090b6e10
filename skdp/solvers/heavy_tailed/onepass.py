"""Algorithm 8 of Asi, Liu and Tian: localized one-pass clipped DP-SGD for smooth GLMs.

The data are split (by a public random permutation) into disjoint phases of
sizes about ``n/2, n/4, ...``; **all** records are used (the first phase takes
the remainder) instead of rounding ``n`` down to a power of two. Phase ``i``
runs one pass of projected SGD (Algorithm 5) from the previous output with
step ``eta_i = eta_1 / 16**(i-1)`` and per-sample gradients clipped to
``C_i``, and releases the average of its iterates plus Gaussian noise.

Privacy (Theorem 4's argument, replace-one). For a GLM every per-sample
gradient is a multiple of its row, clipping keeps the step non-expansive
(Lemma 14) provided ``eta_i * beta_row <= 2`` for every row, where
``beta_row = curvature_bound * ||a||**2``. A smoothness guard scales every
row of phase ``i`` to norm at most ``sqrt(2 / (curvature_bound * eta_i))``
(a per-record map), so the guard holds for *every* row, not only in
expectation. Two neighbouring datasets differ in one record, which lies in
one phase; with a shared random stream the two runs coincide before that
phase, and in it the averages differ by at most ``2 eta_i C_i``. The phase
output is therefore a Gaussian mechanism with sensitivity ``2 eta_i C_i``
and noise ``2 eta_i C_i z`` -- no 2x slack. The plan is a
:class:`~skdp.privacy.ParallelDpEvent` of one event per phase (each phase
also pays for its own private clip level, estimated on its own batch).
"""

import math
from dataclasses import dataclass

import numpy as np

from ...privacy import (
    ComposedDpEvent,
    ParallelDpEvent,
    gaussian_noise,
    gaussian_steps,
    parallel_scope,
)
from .bounds import (
    BISECTION_STEPS,
    DEFAULT_TARGET,
    RANGE_STEPS,
    clip_search_range,
    default_scales,
    noisy_log_quantile,
    private_scales,
    quantile_reliable,
    scales_estimable,
    scales_needed,
    tail_fraction,
)
from .bounds import scale_share as bound_scale_share
from .common import (
    noise_std,
    safe_derivatives,
    split_gdp,
)
from .kernels import onepass_phase
from .result import HeavyTailedResult
from .units import planned_design

__all__ = [
    "OnePassPlan",
    "make_onepass_plan",
    "onepass_phase_sizes",
    "onepass_clipped_dp_sgd",
    "onepass_schedule",
    "paper_onepass_parameters",
]

#: Step-size decay between phases (Algorithm 8: eta_i = 16**-i eta).
STEP_DECAY = 16.0
#: Clip growth between phases when the clip level is public (C_i = 2**i C).
CLIP_GROWTH = 2.0
#: Without a reliable search, the clip level is this many octaves below the
#: ceiling of the search range (heavy clipping is the safe side).
_FALLBACK_OCTAVES = 8.0
#: Practical schedule (:func:`onepass_schedule` without ``G_k``, measured on
#: the benchmark's synthetic data, see benchmarks/results/heavy_tailed.md):
#: first-phase step ``PRACTICAL_STEP / sqrt(n) / curvature`` (the paper's
#: eta also scales like 1/sqrt(n)), step halved per phase (the paper divides
#: by 16), and each phase releases the average of its last half of iterates
#: (the paper: all). Any public schedule and any fixed averaging weights keep
#: the phase sensitivity 2 eta_i C_i, so privacy is unaffected.
PRACTICAL_STEP = 0.06
PRACTICAL_DECAY = 2.0
PRACTICAL_TAIL = 0.5


def onepass_phase_sizes(n):
    """Disjoint phase sizes using every record: ``n >> i`` for ``i >= 2``.

    Parameters
    ----------
    n : int

    Returns
    -------
    list of int
        Sums to ``n``; the first phase takes the remainder.

    Examples
    --------
    >>> onepass_phase_sizes(10)
    [7, 2, 1]
    >>> sum(onepass_phase_sizes(1000))
    1000
    """
    n = int(n)
    n_phases = max(1, int(math.floor(math.log2(max(n, 1)))))
    sizes = [n >> i for i in range(1, n_phases + 1)]
    sizes[0] += n - sum(sizes)
    return sizes


@dataclass(frozen=True)
class OnePassPlan:
    """Noise of Algorithm 8 (public, data independent).

    Parameters
    ----------
    sizes : tuple of int
        Phase sizes.
    z_out : tuple of float
        Multiplier of each phase output (sensitivity ``2 eta_i C_i``); a
        phase without a clip search puts that share into its output.
    clip_fractions : tuple of float
        Target clipped fraction of each phase.
    searches : tuple of bool
        Whether phase ``i`` estimates its clip level privately on its batch.
    z_count : float
        Multiplier of those counts.
    n_scales : int
        Scale quantiles over all records (:func:`private_scales`, and the
        feature scale of :mod:`~skdp.solvers.heavy_tailed.units`).
    z_scale : float
    bisection_steps : int
    default_scales : bool
        Too few records for private scales: public defaults for
        standardized data (feature scale 1).
    feature_scale : bool
        Whether one of the ``n_scales`` quantiles is the feature scale.
    """

    sizes: tuple
    z_out: tuple
    clip_fractions: tuple
    searches: tuple
    z_count: float = math.inf
    n_scales: int = 0
    z_scale: float = math.inf
    bisection_steps: int = BISECTION_STEPS
    default_scales: bool = False
    feature_scale: bool = False

    def phase_event(self, i):
        parts = []
        if self.searches[i]:
            parts.append(gaussian_steps(self.z_count, self.bisection_steps))
        parts.append(gaussian_steps(self.z_out[i], 1))
        return ComposedDpEvent(parts)

    @property
    def event(self):
        """Scale quantiles (all records), then parallel disjoint phases."""
        phases = ParallelDpEvent([self.phase_event(i) for i in range(len(self.sizes))])
        if not self.n_scales:
            return phases
        scales = gaussian_steps(self.z_scale, self.n_scales * RANGE_STEPS)
        return ComposedDpEvent([scales, phases])


def make_onepass_plan(
    mu,
    n,
    d,
    *,
    n_scales=1,
    feature_scale=False,
    adaptive_clip=True,
    bound_share=0.1,
    target=DEFAULT_TARGET,
):
    """Budget of Algorithm 8 (shares of ``mu**2``).

    Every record is in one phase, so every phase gets the whole budget left
    after the scale quantiles (a tenth of ``bound_share`` each, over all
    records); a phase spends the rest of ``bound_share`` on its clip level
    when that search is reliable (:func:`quantile_reliable`).

    Parameters
    ----------
    mu : float
        GDP budget.
    n, d : int
    n_scales : int, default=1
        Scale quantiles other than the feature scale; 0 when the clip
        levels are public.
    feature_scale : bool, default=False
        Also release the feature scale (the step and the intercept column
        adapt to it).
    adaptive_clip : bool, default=True
        Estimate each phase's clip level privately on its batch.
    bound_share : float, default=0.1
    target : QuantileTarget, optional

    Returns
    -------
    OnePassPlan

    Examples
    --------
    >>> from skdp.privacy import certify_epsilon, gdp_mu
    >>> plan = make_onepass_plan(gdp_mu(1.0, 1e-5), 1000, 5)
    >>> round(certify_epsilon(plan.event, 1e-5), 4)
    1.0
    """
    sizes = tuple(onepass_phase_sizes(n))
    n_scales = int(n_scales) + bool(feature_scale)
    scale_share = bound_scale_share(bound_share, n_scales)
    z_scale = split_gdp(mu, [(n_scales * RANGE_STEPS, scale_share)])[0]
    use_defaults = bool(n_scales) and not scales_estimable(n, z_scale)
    if use_defaults:  # too few records: public scales, budget to the phases
        n_scales, scale_share, z_scale = 0, 0.0, math.inf
        feature_scale = False
    (z_alone,) = split_gdp(mu, [(1, 1.0 - scale_share)])
    z_count, z_with = math.inf, z_alone
    if adaptive_clip:
        z_count, z_with = split_gdp(
            mu,
            [(BISECTION_STEPS, bound_share - scale_share), (1, 1.0 - bound_share)],
        )
    fractions = tuple(tail_fraction(z_with, m, d, target) for m in sizes)
    searches = tuple(
        adaptive_clip and quantile_reliable(m, p, z_count)
        for m, p in zip(sizes, fractions)
    )
    z_out = tuple(z_with if s else z_alone for s in searches)
    return OnePassPlan(
        sizes,
        z_out,
        fractions,
        searches,
        z_count,
        n_scales,
        z_scale,
        default_scales=use_defaults,
        feature_scale=bool(feature_scale),
    )


def paper_onepass_parameters(n, d, rho, k, G_2, G_k, diameter):
    """Step ``eta`` and clip ``C`` of Algorithm 8, line 4 (computed in logs).

    ``eta = min(sqrt(8/n) D/G_2, (1/n) (n**2 rho/(32 d))**((k-1)/(2k))
    2**((k+1)/(2k)) D/G_k)`` and ``C = (G_k**k D rho n / (32 eta d))**(1/(k+1))``;
    phase ``i`` (1-based) then uses ``eta / 16**i`` and ``2**i C``.

    Parameters
    ----------
    n, d : int
    rho : float
        zCDP parameter of the phase outputs.
    k : int
    G_2, G_k : float
    diameter : float

    Returns
    -------
    eta, C : float

    Examples
    --------
    >>> eta, C = paper_onepass_parameters(2**16, 20, 0.5, 4, 4.47, 6.0, 10.0)
    >>> round(eta, 4), round(C, 1)
    (0.011, 36.0)
    """
    D = float(diameter)
    eta1 = math.sqrt(8.0 / n) * D / G_2
    log_eta2 = (
        -math.log(n)
        + (k - 1) / (2 * k) * (2 * math.log(n) + math.log(rho) - math.log(32 * d))
        + (k + 1) / (2 * k) * math.log(2.0)
        + math.log(D / G_k)
    )
    eta = min(eta1, math.exp(log_eta2))
    log_C = (k * math.log(G_k) + math.log(D * rho * n) - math.log(32 * eta * d)) / (
        k + 1
    )
    return eta, math.exp(log_C)


def onepass_schedule(
    plan, n, d, curvature, *, step_size=None, G_k=None, G_2=None, k=4, radius=math.inf
):
    """Public step and clip schedule of :func:`onepass_clipped_dp_sgd`.

    - ``G_k`` given: Algorithm 8 verbatim (:func:`paper_onepass_parameters`
      with ``rho`` of the first phase's output and diameter ``2 radius``):
      ``eta_i = eta / 16**i``, ``C_i = 2**i C``, uniform averages;
    - else ``step_size`` (if given) or ``min(0.5, PRACTICAL_STEP / sqrt(n)) /
      curvature``, halved per phase, each phase releasing the average of its
      last half of iterates, and a private clip level.

    Parameters
    ----------
    plan : OnePassPlan
    n, d : int
        Rows and coefficients (with the intercept).
    curvature : float
        The loss's curvature bound.
    step_size : float, optional
        Public first-phase step (ignored with ``G_k``).
    G_k, G_2 : float, optional
        Public moment bounds (``G_2`` defaults to ``G_k``).
    k : int, default=4
    radius : float, default=inf
        Domain radius (finite with ``G_k``).

    Returns
    -------
    dict
        Keyword arguments ``step_size``, ``clip``, ``step_decay`` and
        ``tail_average`` of :func:`onepass_clipped_dp_sgd`.

    Examples
    --------
    >>> plan = make_onepass_plan(1.0, 10_000, 3, n_scales=0)
    >>> onepass_schedule(plan, 10_000, 3, 1.0)["step_decay"]
    2.0
    """
    clip = None
    decay, tail = PRACTICAL_DECAY, PRACTICAL_TAIL
    if G_k is not None:
        rho = 0.5 / plan.z_out[0] ** 2 if plan.z_out[0] > 0 else math.inf
        G_2 = G_2 if G_2 is not None else G_k
        eta, C = paper_onepass_parameters(n, d, rho, k, G_2, G_k, 2 * radius)
        # the paper's Algorithm 8 verbatim: eta_i = eta / 16**i,
        # C_i = 2**i C, uniform averages
        step, clip = eta / STEP_DECAY, C * CLIP_GROWTH
        decay, tail = STEP_DECAY, 0.0
    elif step_size is not None:
        step = float(step_size)
    else:
        step = min(0.5, PRACTICAL_STEP / math.sqrt(n)) / float(curvature)
    return {
        "step_size": step,
        "clip": clip,
        "step_decay": decay,
        "tail_average": tail,
    }


def onepass_clipped_dp_sgd(
    X,
    y,
    loss,
    plan,
    rng,
    *,
    step_size,
    clip=None,
    feature_norm=math.inf,
    radius=math.inf,
    row_norms=None,
    order=None,
    step_decay=STEP_DECAY,
    tail_average=0.0,
    return_phase_averages=False,
    fit_intercept=False,
    scaled_intercept=True,
):
    """Algorithm 8 (OnePass-Clipped-DP-SGD) for a GLM loss.

    If ``plan.feature_scale``, the private feature scale ``s`` of
    :mod:`~skdp.solvers.heavy_tailed.units` is released first (else
    ``s = 1``): the first-phase step is ``step_size / s**2``, so the
    smoothness-guard row cap grows like ``s``, and the intercept column is
    ``s``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features, without an intercept column.
    y : ndarray of shape (n,)
    loss : _GLMLoss
        Smooth GLM loss (``curvature_bound`` finite).
    plan : OnePassPlan
    rng : numpy.random.Generator
    step_size : float
        ``eta_1 s**2``, the step of the first phase (public) for features
        of unit scale.
    clip : float, optional
        Public first-phase clip level ``C_1`` (then ``C_i = 2**(i-1) C_1``).
        ``None``: a private row-norm bound (and target scale) over all
        records sets the search range; ``C_i`` is the private
        ``1 - plan.clip_fractions[i]`` quantile of the gradient norms of
        phase ``i``'s batch at its starting point, or the previous phase's
        level when ``plan.searches[i]`` is False.
    feature_norm : float, default=inf
        Public bound: rows are also scaled to norm at most this.
    radius : float, default=inf
        Domain ``B(0, radius)``; iterates and outputs are projected on it.
    row_norms : ndarray of shape (n,), optional
    order : ndarray of shape (n,), optional
        Public permutation (default: drawn from ``rng``). Tests pass one to
        couple runs on neighbouring datasets.
    return_phase_averages : bool, default=False
        Also return the pre-noise phase averages (for coupled-run tests).
    fit_intercept : bool, default=False
        Append a constant intercept column (its coefficient, in the units of
        ``y``, is the last entry of ``coef``).
    scaled_intercept : bool, default=True
        The intercept column is ``s`` rather than 1.

    Returns
    -------
    HeavyTailedResult
        ``clip_levels``, ``step_sizes``, ``row_caps`` (smoothness-guard row
        norm) per phase, ``phase_sizes``, ``n_iter`` (= n) and
        ``feature_scale``. And, if requested, the list of pre-noise phase averages.

    References
    ----------
    Asi, Liu and Tian, NeurIPS 2024, Algorithm 8 and Theorem 4.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20000, 2)); y = X @ np.array([1.0, -1.0])
    >>> plan = make_onepass_plan(np.inf, 20000, 2, n_scales=2)
    >>> res = onepass_clipped_dp_sgd(X, y, SquaredLoss(), plan, rng, step_size=0.01)
    >>> np.round(res.coef, 2)
    array([ 1., -1.])
    """
    y = np.ascontiguousarray(y, dtype=float)
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
    order = np.ascontiguousarray(order, dtype=np.int64)
    code, tau = loss.kernel_args()
    center = np.zeros(d)
    sizes = plan.sizes
    curv = float(loss.curvature_bound)
    step_size = float(step_size) / design.curvature_scale
    row_bound = target_bound = None
    if clip is None and plan.default_scales:
        # too few records for private scales: public ones (standardized data)
        row_bound, target_bound = default_scales(d, loss)
    elif clip is None:
        row_bound, target_bound = private_scales(row_norms, y, loss, plan.z_scale, rng)
    w = np.zeros(d)
    etas, clips, caps, averages = [], [], [], []
    C = None
    start = 0
    # Each phase reads only its own records: a record lies in one part.
    phases = parallel_scope(len(sizes))
    for i, m in enumerate(sizes):
        with phases.part(i):
            eta = float(step_size) / float(step_decay) ** i
            # smoothness guard: eta * curv * ||a||**2 <= 2 for every row
            row_cap = min(float(feature_norm), math.sqrt(2.0 / (curv * eta)))
            idx = order[start : start + m]
            if clip is not None:
                C = float(clip) * CLIP_GROWTH**i
            else:
                search = clip_search_range(loss, min(row_bound, row_cap), target_bound)
                if plan.searches[i]:
                    norms_i = np.minimum(row_norms[idx], row_cap)
                    with np.errstate(all="ignore"):
                        scale = np.where(
                            row_norms[idx] > row_cap, row_cap / row_norms[idx], 1.0
                        )
                        z = (X[idx] * scale[:, None]) @ w
                    g = safe_derivatives(loss, z, y[idx])
                    C = noisy_log_quantile(
                        np.abs(g) * norms_i,
                        1.0 - plan.clip_fractions[i],
                        plan.z_count,
                        rng,
                        log2_range=search,
                        steps=plan.bisection_steps,
                    )
                elif C is None:
                    # too few records for a reliable search: heavy clipping
                    C = 2.0 ** (search[1] - _FALLBACK_OCTAVES)
            # average of the phase's last ``tail_average`` iterates (0: all)
            avg_start = start
            if tail_average:
                avg_start = min(start + int((1.0 - tail_average) * m), start + m - 1)
            avg = onepass_phase(
                X,
                y,
                order,
                start,
                start + m,
                w,
                eta,
                C,
                row_cap,
                row_norms,
                code,
                tau,
                center,
                float(radius),
                avg_start,
            )
            if return_phase_averages:
                averages.append(avg.copy())
            # Gaussian mechanism on the phase average: sensitivity 2 eta C
            w = avg + gaussian_noise(
                rng,
                noise_std(2.0 * eta * C, plan.z_out[i]),
                d,
                sensitivity=2.0 * eta * C,
                label="phase average",
            )
            if not math.isinf(radius):
                nrm = float(np.linalg.norm(w))
                if nrm > radius:
                    w = w * (radius / nrm)
            etas.append(eta)
            clips.append(C)
            caps.append(row_cap)
            start += m
    res = HeavyTailedResult(
        design.to_original(w),
        np.array(clips),
        np.array(etas),
        int(n),
        feature_scale=design.scale,
        row_caps=np.array(caps),
        phase_sizes=tuple(sizes),
        fit_intercept=bool(fit_intercept),
        plan=plan,
    )
    return (res, averages) if return_phase_averages else res
