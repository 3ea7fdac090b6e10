"""Multinomial (softmax) logistic regression by full-batch clipped DP-GD.

One record touches every class's coefficients: the per-sample gradient of the
softmax cross-entropy at ``W`` (shape ``(d, K)``) is the outer product
``x_i (p_i - e_{y_i})^T`` with ``p_i = softmax(W^T x_i)``. It is clipped as
a whole, in Frobenius norm ``||x_i|| ||p_i - e_{y_i}||``, never per class,
so a replaced record moves the clipped sum by at most ``2 C``
(:func:`clipped_multinomial_gradient_sum`). Each step releases that sum plus
``N(0, (2 C z)**2)`` on each of the ``d K`` entries: one Gaussian event of
multiplier ``z`` per step, the same accounting as the binary full-batch
solver (:class:`~skdp.solvers.heavy_tailed.gd.FullBatchPlan`).

The plan is Algorithm 4's (:func:`~skdp.solvers.heavy_tailed.known_lipschitz.
make_known_lipschitz_plan` with noise dimension ``d K``): the feature scale
``s`` and the truncation level are released once for all classes (the
one-vs-rest fits released one of each per class, from ``1 / K`` of the
budget each), then clip levels at the checkpoints, then the gradient steps.

A noisy scale must never wreck a fit. The feature scale ``s`` sets the step
(``/ s**2``) and the truncation level ``T`` (a high quantile of the row
norms) sets which rows count; both are private releases, and their public
relations are enforced by post-processing: the median row RMS cannot exceed
the row-norm quantile (``s <= T / r_d``, ``r_d`` the Gaussian reference of
:func:`~skdp.solvers.heavy_tailed.units.feature_scale`), and ``s`` is floored
at ``T / (F sqrt(d))`` (a row's RMS over its non-zero entries is at least its
norm over ``sqrt(d)``). A collapsed ``s`` (a huge step) is thus cut back to
the scale of the row norms.

The floor's factor ``F`` (:func:`scale_floor_factor`) is a public function of
``n`` and the scale counts' noise ``z``: a collapse needs the bisection to
take a wrong turn far from the median, where the count's margin is a fair
fraction of ``n``, so its probability falls like ``Phi(-c n / z)``. Where
that is not negligible (``n <= 64 z``) the floor is tight,
``F = SCALE_FLOOR_FACTOR``; above, ``F`` grows like ``n / z`` and is
infinite without noise. A tight floor on reliable releases cost accuracy on
heavy-tailed rows, whose high norm quantile ``T`` is far above ``8 sqrt(d)
s`` (Student-t(3), d = 20: ``T / (sqrt(d) s)`` about 26 at ``epsilon = inf``,
where ``T`` is the largest norm; the floor set ``s`` 3x too large, a 10x too
small step, and cost 0.013 accuracy at n = 1e5; study at f9c3d36:
``python -m benchmarks.heavy_tailed.multiclass --part rules``).

The truncation level can go astray as well (digits at ``epsilon = 0.25``:
``T`` = 754, 136505 or 0.297 for row norms of 3.2 to 4.8); always trusting
it inflated ``s`` or truncated every row. When the two released values
disagree, :func:`reconcile_scales` therefore replaces the one that went
astray. That is the one that ended where a coarser wrong turn of its
bisection lands, or, failing that evidence, the one farther from the
public default scale (study at f9c3d36:
``python -m benchmarks.heavy_tailed.multiclass_truncation``).
"""

import math
from dataclasses import dataclass

import numpy as np

from ...losses import LogisticLoss
from ...privacy import ComposedDpEvent, gaussian_noise, gaussian_steps
from ...utils._sparse import append_constant_column, as_float_rows, row_nnz, row_norms
from .._distributed import is_dask_collection
from .bounds import (
    LOG2_RANGE,
    RANGE_STEPS,
    SEARCH_OCTAVES,
    UNRELIABLE_SLACK,
    default_scales,
    noisy_log_quantile,
    scale_level,
    scale_quantile,
    scales_estimable,
)
from .bounds import scale_share as bound_scale_share
from .common import noise_std, split_gdp
from .gd import (
    FullBatchPlan,
    clipped_dp_gd,
    make_full_batch_plan,
    practical_step_size,
)
from .result import HeavyTailedResult
from .units import feature_scale, gaussian_norm_median

__all__ = [
    "MULTINOMIAL_CURVATURE",
    "CLIP_COLLAPSE_FRACTION",
    "NO_SEARCH_OCTAVES",
    "SCALE_FLOOR_FACTOR",
    "scale_floor_factor",
    "reconcile_scales",
    "EARLY_STEPS",
    "MULTINOMIAL_STEP_BOOST",
    "multinomial_step_size",
    "multiclass_step",
    "AUTO_STEPS",
    "auto_multinomial_steps",
    "NOISE_CAP_SCORE",
    "noise_capped_clip",
    "softmax_residuals",
    "clipped_multinomial_gradient_sum",
    "multinomial_dp_gd",
    "SharedOvRPlan",
    "make_shared_ovr_plan",
    "ovr_dp_gd",
]

#: Bound on the largest eigenvalue of the softmax cross-entropy's Hessian
#: in the scores (``diag(p) - p p^T``): at most 1/2.
MULTINOMIAL_CURVATURE = 0.5
#: Public slack of the feature-scale floor ``T / (factor sqrt(d))`` where
#: the scale release can go astray (:func:`scale_floor_factor`).
SCALE_FLOOR_FACTOR = 8.0
#: ``n / z`` of the scale counts up to which the floor is tight.
FLOOR_RELIABLE_RATIO = 64.0
#: The multinomial default step is this multiple of the binary rule
#: (:func:`~skdp.solvers.heavy_tailed.gd.practical_step_size`), at most
#: ``1 / L`` (:func:`multinomial_step_size`).
MULTINOMIAL_STEP_BOOST = 4.0

#: ``max_iter="auto"`` of the softmax fit: ``(threshold, steps)`` pairs on
#: the squared signal-to-noise ratio ``(n mu)**2 / (d K)`` of one release of
#: the mean clipped gradient with the whole GDP budget ``mu``
#: (:func:`auto_multinomial_steps`). Below 1e4 30 steps: more steps at the
#: same step size walked the noise further (digits at ``epsilon = 1``, ratio
#: 343: 100 steps -0.06, 300 steps -0.17; the held-out synthetic K = 3 task at
#: ratio 3464: 300 steps -0.032), although nearly separable sets gained
#: (iris at ``epsilon = 5``, ratio 2310: +0.17). From 1e4 on (synthetic
#: tasks, and no noise) 300 steps, or 100 where 300 would exceed
#: :data:`AUTO_WORK`: without noise 30 steps stopped short of the optimum
#: (iris, wine, digits test accuracy 0.71 / 0.93 / 0.93 against sklearn's
#: 1.00 / 0.96 / 0.96; 300 steps reach it). Measured in
#: benchmarks/results/multiclass_small_n.md.
AUTO_STEPS = ((0.0, 30), (1e4, 100), (1e4, 300))
#: ... and a count above the first only while ``n d K`` times it stays below
#: this work (entries of the score matrix computed over the run): the sparse
#: bag-of-words fit (``n d K = 5e9``) keeps 30 steps and its time.
AUTO_WORK = 3e9

#: A clip level released at a checkpoint below this fraction of the level
#: in use marks an overshoot and is discarded (:func:`multinomial_dp_gd`).
#: Uncentred, all-positive rows (breast_cancer with K = 2 at ``epsilon = 2,
#: 5``) made the large first step overshoot along the mean row: most rows
#: fitted the majority class with tiny residuals, the released clip level fell
#: 60 to 800x, the other class's gradients were clipped to nothing and the fit
#: stayed on one class (accuracy 0.629). Keeping the previous level let the
#: fit recover (0.904 / 0.910); cutting the step instead did not
#: (benchmarks/results/multiclass_overshoot.md).
CLIP_COLLAPSE_FRACTION = 0.25
_GUARD_GROWTH = 1.5
_GUARD_NOISE_FLOOR = 3.0
_FALLBACK_OCTAVES = 8.0
#: Without any private clip search (too few records for one), the clip level
#: is fixed for the whole run at this many octaves below the ceiling
#: ``sqrt(2) T`` (about the public default row norm over 8 with the public
#: default scales): heavy clipping at ``2**-8`` of the ceiling made 30 steps
#: move the coefficients by less than one unit (iris and wine near chance,
#: benchmarks/results/multiclass_real.md).
NO_SEARCH_OCTAVES = 4.5
#: Largest accumulated noise of a class score over the run (in units of
#: the feature scale, rows of norm ``s sqrt(d)``) that the fixed (no-search)
#: clip level may cause (:func:`noise_capped_clip`). The fixed level
#: ``NO_SEARCH_OCTAVES`` below the ceiling grows like ``sqrt(d)`` and does not
#: see the noise: on wine (133 rows, ``epsilon = 1``) its 30 steps moved a
#: class score by about 13, and the fit lost 0.048 to the best fixed-clip
#: DP-GD; capped at 7, -0.002 (+0.046 +- 0.006 paired, 40 runs), iris
#: untouched at ``epsilon = 1, 2`` (score noise 5 and 3). Held-out small
#: tasks (digits with 150 / 500 rows, synthetic K = 3 / 4 with 200 / 300
#: rows, breast_cancer through the softmax path) gained up to 0.11 and
#: lost nowhere. Measured in benchmarks/results/multiclass_travel.md.
NOISE_CAP_SCORE = 7.0
#: The returned coefficients average the iterates from this fraction of the
#: steps on (the second half).
AVERAGE_FROM = 0.5


def softmax_residuals(scores, labels):
    """``p_i - e_{y_i}`` for every row, finite (a row with non-finite scores gives 0).

    Parameters
    ----------
    scores : ndarray of shape (n, K)
    labels : int ndarray of shape (n,)
        Class index in ``[0, K)``.

    Returns
    -------
    ndarray of shape (n, K)

    Examples
    --------
    >>> import numpy as np
    >>> softmax_residuals(np.zeros((1, 2)), np.array([1]))
    array([[ 0.5, -0.5]])
    """
    n = scores.shape[0]
    with np.errstate(all="ignore"):
        Z = scores - np.max(scores, axis=1, keepdims=True)
        P = np.exp(Z)
        P /= np.sum(P, axis=1, keepdims=True)
    P[np.arange(n), labels] -= 1.0
    bad = ~np.all(np.isfinite(P), axis=1)
    P[bad] = 0.0  # a per-record map: no direction, no contribution
    return P


def clipped_multinomial_gradient_sum(X, labels, W, norms, clip):
    """Sum of per-sample softmax gradients, each clipped in Frobenius norm.

    ``sum_i min(1, clip / (||x_i|| ||r_i||)) x_i r_i^T`` with
    ``r_i = softmax(W^T x_i) - e_{y_i}``. Rows with ``norms == 0`` (zero or
    truncated rows) contribute nothing. Every term has Frobenius norm at
    most ``clip``, so replacing one record moves the sum by at most
    ``2 clip``. ``X`` may be sparse (never densified).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    labels : int ndarray of shape (n,)
    W : ndarray of shape (d, K)
    norms : ndarray of shape (n,)
        Row norms of ``X`` (0 to skip a row).
    clip : float

    Returns
    -------
    sum : ndarray of shape (d, K)
    norms : ndarray of shape (n,)
        Unclipped per-sample gradient norms (0 for skipped rows).

    Examples
    --------
    >>> import numpy as np
    >>> X = np.array([[3.0, 4.0]])
    >>> g, nrm = clipped_multinomial_gradient_sum(X, np.array([0]), np.zeros((2, 2)),
    ...                                           np.array([5.0]), 1.0)
    >>> round(float(np.linalg.norm(g)), 6), round(float(nrm[0]), 4)
    (1.0, 3.5355)
    """
    if is_dask_collection(X):  # the same kernel per chunk, on the workers
        from .._distributed import multinomial_gradient_sum_on_workers as on_workers

        return on_workers(X, labels, W, norms, clip)
    with np.errstate(all="ignore"):
        scores = np.asarray(X @ W)
    R = softmax_residuals(scores, labels)
    with np.errstate(all="ignore"):
        gnorm = norms * np.sqrt(np.einsum("ij,ij->i", R, R))
        factor = np.where(gnorm > clip, clip / gnorm, 1.0)
    factor = np.where((norms > 0) & np.isfinite(factor), factor, 0.0)
    gnorm = np.where(norms > 0, gnorm, 0.0)
    with np.errstate(all="ignore"):
        # a subnormal probability times a clip factor underflows: silently
        R *= factor[:, None]
    return np.asarray(X.T @ R), gnorm


def scale_floor_factor(n, z):
    """Factor ``F`` of the feature-scale floor ``T / (F sqrt(d))`` (public).

    ``SCALE_FLOOR_FACTOR * max(1, n / (FLOOR_RELIABLE_RATIO z))``: tight where
    a noisy scale count can send the bisection astray, looser as the counts'
    noise ``z`` becomes negligible against ``n``, infinite (no floor) without
    noise. A function of the public ``n`` and noise multiplier only.

    Parameters
    ----------
    n : int
        Records.
    z : float
        Noise multiplier of the scale counts (sensitivity 1; 0: no noise).

    Returns
    -------
    float

    Examples
    --------
    >>> scale_floor_factor(1347, 90.0), scale_floor_factor(100_000, 125.0)
    (8.0, 100.0)
    >>> scale_floor_factor(10, 0.0)
    inf
    """
    if z == 0:
        return math.inf
    return SCALE_FLOOR_FACTOR * max(1.0, float(n) / (FLOOR_RELIABLE_RATIO * float(z)))


def multinomial_step_size(clip_fraction):
    """Default multinomial step for features of unit scale (public rule).

    ``min(1 / L, MULTINOMIAL_STEP_BOOST * practical_step_size(L, p))`` with
    ``L = MULTINOMIAL_CURVATURE``: the full ``1 / L`` step up to a planned
    clipped fraction ``p`` of about 0.1, then ``sqrt(0.096 / p) / L``, never
    below ``1``. The binary rule's smaller steps under heavy clipping (down
    to ``1 / (8 L)``) stopped the softmax fits short of their optimum in 30
    steps (K = 10: -0.02 to -0.03 accuracy), while the full step for every
    ``p`` lost accuracy on wine at ``epsilon = 5`` (133 rows, ``p = 0.7``);
    study at f9c3d36:
    ``python -m benchmarks.heavy_tailed.multiclass --part rules``.

    Parameters
    ----------
    clip_fraction : float
        Planned clipped fraction (0 without a private clip search).

    Returns
    -------
    float

    Examples
    --------
    >>> multinomial_step_size(0.0), multinomial_step_size(0.7)
    (2.0, 1.0)
    """
    full = 1.0 / MULTINOMIAL_CURVATURE
    rule = practical_step_size(MULTINOMIAL_CURVATURE, clip_fraction)
    return float(min(full, MULTINOMIAL_STEP_BOOST * rule))


def noise_capped_clip(s, step, z, n_steps, n, d):
    """Largest fixed clip level of the no-search run (public rule).

    ``T`` steps of ``N(0, (2 C z)**2)`` noise on the clipped sum, at step
    ``step / s**2``, move a class score of a row of norm ``s sqrt(d)`` by
    about ``2 step (C / s) z sqrt(T d) / n`` standard deviations; the cap
    keeps this at :data:`NOISE_CAP_SCORE`. Reads the public ``n``, ``d``,
    plan (``z``, ``T``), step and the released (or public default) scale.

    Parameters
    ----------
    s : float
        Feature scale.
    step : float
        Step for features of unit scale.
    z : float
        Noise multiplier of one gradient release.
    n_steps, n, d : int
        Steps, records and coefficients per class (intercept included).

    Returns
    -------
    float
        ``inf`` without noise.

    Examples
    --------
    >>> round(noise_capped_clip(1.0, 2.0, 11.6, 30, 133, 14), 3)
    0.979
    """
    denom = 2.0 * float(step) * float(z) * math.sqrt(float(n_steps) * d)
    if not denom > 0:  # no noise: no cap
        return math.inf
    return NOISE_CAP_SCORE * float(s) * float(n) / denom


def auto_multinomial_steps(n, dim, mu):
    """Full-batch steps of the softmax fit for ``max_iter="auto"`` (public rule).

    A function of the public ``n``, noise dimension ``dim = d K`` and GDP
    budget ``mu`` only: the largest :data:`AUTO_STEPS` count whose threshold
    the squared signal-to-noise ratio ``(n mu)**2 / dim`` reaches (infinite
    without noise) and whose work ``n dim T`` stays within
    :data:`AUTO_WORK` (the first count always qualifies). The GDP accounting
    of ``T`` full-batch steps is exact for any ``T``; the rule only decides
    how the budget is spread.

    Parameters
    ----------
    n : int
        Records.
    dim : int
        Noise dimension ``(d + fit_intercept) K``.
    mu : float
        GDP budget of the fit (``inf``: no noise).

    Returns
    -------
    int

    Examples
    --------
    >>> auto_multinomial_steps(133, 42, 0.47), auto_multinomial_steps(10_000, 105, 0.29)
    (30, 300)
    >>> auto_multinomial_steps(10, 10, float("inf")), auto_multinomial_steps(
    ...     100_000, 105, float("inf"))
    (300, 100)
    """
    with np.errstate(all="ignore"):
        snr2 = math.inf if math.isinf(mu) else (float(n) * float(mu)) ** 2 / max(dim, 1)
    work = float(n) * float(max(dim, 1))
    steps = AUTO_STEPS[0][1]
    for threshold, count in AUTO_STEPS[1:]:
        if snr2 >= threshold and work * count <= AUTO_WORK:
            steps = count
    return int(steps)


def _project(W, radius):
    if math.isinf(radius):
        return W
    dist = float(np.linalg.norm(W))
    return W if dist <= radius else W * (radius / dist)


def _scales(X, norms, plan, rng, truncation):
    """Private feature scale ``s`` and truncation level ``T``, made consistent."""
    d = X.shape[1]
    ref = gaussian_norm_median(d) / math.sqrt(max(d, 1))
    if plan.default_scales:
        B, _ = default_scales(d, LogisticLoss())
        T = B * UNRELIABLE_SLACK if truncation is None else truncation
        return 1.0, float(T)
    s = 1.0
    if plan.feature_scale:
        nnz = row_nnz(X)
        with np.errstate(all="ignore"):
            rms = np.where(nnz > 0, norms / np.sqrt(np.maximum(nnz, 1)), np.inf)
        s = feature_scale(rms, d, plan.z_scale, rng)
    released = truncation is None
    if released:
        tail = 0.0 if plan.z_scale == 0 else plan.trunc_fraction
        truncation = scale_quantile(norms, tail, plan.z_scale, rng)
    T = float(truncation)
    if plan.feature_scale and T > 0:
        # post-processing of two releases: s in [T / (F sqrt(d)), T / ref]
        factor = scale_floor_factor(X.shape[0], plan.z_scale)
        if released:
            tail = 0.0 if plan.z_scale == 0 else plan.trunc_fraction
            lowered = scale_level(X.shape[0], plan.z_scale, tail) < 1.0 - tail
            slack = UNRELIABLE_SLACK if plan.z_scale > 0 and lowered else 1.0
            steps = (
                _wrong_turn_step(math.log2(T / slack))
                if T > 0 and math.isfinite(T)
                else 0,
                _wrong_turn_step(math.log2(s * ref) + _FINAL_WIDTH / 2.0)
                if s > 0 and math.isfinite(s)
                else 0,
            )
            if steps[1] == 1:
                # s next to 1, the first midpoint: also where standardized
                # data's true scale lies, so no evidence either way
                steps = (steps[0], EARLY_STEPS + 1)
            return reconcile_scales(s, T, d, factor, wrong_turns=steps)
        s = min(max(s, T / (factor * math.sqrt(max(d, 1)))), T / ref)
    return float(s), T


#: Bisection steps whose wrong turn sends a scale release astray by more than
#: a few octaves (the first five halve the 60-octave range down to 1.9).
EARLY_STEPS = 5
_FINAL_WIDTH = (LOG2_RANGE[1] - LOG2_RANGE[0]) / 2.0**RANGE_STEPS


def _wrong_turn_step(hi):
    """First bisection step whose wrong turn lands on ``hi`` (public arithmetic).

    After a wrong turn at an early midpoint every later count is saturated,
    so the final bracket ends next to that midpoint: ``hi`` (the release's
    upper end in ``log2``) within one final width of it. Returns the first
    of the :data:`EARLY_STEPS` steps with such a midpoint (1: the coarsest,
    the largest error), or ``EARLY_STEPS + 1`` when none.
    """
    lo, top = LOG2_RANGE
    for j in range(1, EARLY_STEPS + 1):
        half = (top - lo) / 2.0**j
        k = round((hi - lo - half) / (2.0 * half))
        if 0 <= k < 2 ** (j - 1) and abs(hi - lo - half - 2.0 * half * k) <= (
            _FINAL_WIDTH * (1 + 1e-9)
        ):
            return j
    return EARLY_STEPS + 1


def reconcile_scales(s, T, d, factor, *, wrong_turns=(0, 0)):
    """Make a released feature scale and truncation level consistent (public rule).

    Post-processing of two independent releases. Consistent pairs satisfy
    ``T / (factor sqrt(d)) <= s <= T / ref`` (``ref`` the Gaussian reference
    of :func:`~skdp.solvers.heavy_tailed.units.feature_scale`) and are
    returned unchanged. Outside that band one of the two noisy bisections
    took a wrong turn far from its quantile; two repairs are possible:

    - trust ``T``: clamp ``s`` into the band (the floor that undoes a
      collapsed ``s``);
    - trust ``s``: replace ``T`` by the public default truncation level in
      units of ``s`` (``UNRELIABLE_SLACK`` times the default row norm
      ``2 sqrt(d)``, :func:`~skdp.solvers.heavy_tailed.bounds.default_scales`),
      kept inside the band.

    The release whose bisection ended where a wrong turn at an earlier
    (coarser) step lands (``wrong_turns``) is the one replaced; when both
    point to the same step, the repair whose feature scale is closer (in
    octaves) to the public default scale 1 is kept (ties: trust ``T``).
    A wrong turn lands many octaves away, so the astray release is the one
    that is replaced: a truncation level astray upwards no longer inflates
    ``s`` (a step ``/ s**2`` too small to move), one astray downwards no
    longer truncates every row.

    Parameters
    ----------
    s : float
        Released feature scale.
    T : float
        Released truncation level (positive).
    d : int
        Number of features.
    factor : float
        Floor factor ``F`` (:func:`scale_floor_factor`).
    wrong_turns : tuple of int, default=(0, 0)
        For the release of ``T`` and of ``s``: the first bisection step whose
        wrong turn lands where the release ended (``EARLY_STEPS + 1``: none;
        equal values leave the choice to the default scale).

    Returns
    -------
    s, T : float

    Examples
    --------
    >>> s, T = reconcile_scales(0.7, 750.0, 64, 8.0)  # T astray upwards
    >>> round(s, 2), round(T, 1)
    (0.7, 44.8)
    >>> s, T = reconcile_scales(0.005, 16.0, 64, 8.0)  # s collapsed
    >>> round(s, 2), T
    (0.25, 16.0)
    """
    root = math.sqrt(max(int(d), 1))
    ref = gaussian_norm_median(d) / root
    lo, hi = T / (factor * root), T / ref
    s_T = min(max(s, lo), hi)
    if s_T == s or not (math.isfinite(s) and s > 0):
        return float(s_T), float(T)
    default_T = UNRELIABLE_SLACK * default_scales(d, LogisticLoss())[0]
    T_s = min(max(default_T * s, ref * s), factor * root * s)
    step_T, step_s = wrong_turns
    if step_T != step_s:
        trust_s = step_T < step_s
    else:
        trust_s = abs(math.log2(s)) < abs(math.log2(s_T))
    if trust_s:
        return float(s), float(T_s)
    return float(s_T), float(T)


def _design(X, labels, plan, rng, truncation, fit_intercept, scaled_intercept):
    """Release the scales, append the intercept column and zero truncated norms.

    Shared by the multinomial and one-vs-rest runs (same draws, same order).

    Returns
    -------
    X, labels, norms_t, s, T, value
        Rows (with the intercept column), labels, the norms of kept rows (0 for
        truncated ones), the feature scale, the truncation level and the
        intercept column's value (``None`` without intercept).
    """
    if is_dask_collection(X):  # the same releases; rows kept on the workers
        from .._distributed import multinomial_design_on_workers as on_workers

        return on_workers(X, labels, plan, rng, truncation, fit_intercept,
                          scaled_intercept, _scales)  # fmt: skip
    X = as_float_rows(X)
    labels = np.asarray(labels, dtype=np.int64)
    norms = row_norms(X)
    needed = int(truncation is None and not plan.default_scales) + int(
        plan.feature_scale
    )
    if not plan.default_scales and plan.n_scales != needed:
        raise ValueError(
            "The plan does not pay for the scale quantiles this run needs."
        )
    s, T = _scales(X, norms, plan, rng, truncation)
    keep = norms <= T
    value = None
    if fit_intercept:
        value = s if scaled_intercept else 1.0
        X = append_constant_column(X, value)
        with np.errstate(all="ignore"):
            norms = np.hypot(norms, value)
    norms_t = np.where(keep, norms, 0.0)
    return X, labels, norms_t, s, T, value


def multinomial_dp_gd(
    X,
    labels,
    n_classes,
    plan,
    rng,
    *,
    step_size,
    truncation=None,
    clip=None,
    radius=math.inf,
    fit_intercept=False,
    scaled_intercept=True,
):
    """Algorithm 4 + full-batch clipped DP-GD for the softmax cross-entropy.

    1. Private feature scale ``s`` and truncation level ``T`` of the feature
       row norms, released once for all classes and made consistent (see the
       module docstring); ``T`` may be public (``truncation``).
    2. Rows with feature norm above ``T`` become the zero function.
    3. With an intercept, the constant column ``s`` (or 1) is appended.
    4. ``plan.gd.n_steps`` steps ``W <- P(W - eta (S_t / n))`` with
       ``S_t`` the clipped sum plus ``N(0, (2 C_t z)**2)`` per entry; ``C_t``
       is public (``clip``) or the private ``1 - p`` quantile of the
       per-sample gradient norms at the checkpoints, searched in the
       ``SEARCH_OCTAVES`` below the Lipschitz ceiling ``sqrt(2) ||x||``
       (without checkpoints: fixed :data:`NO_SEARCH_OCTAVES` below it, at
       most :func:`noise_capped_clip`). A
       released level below :data:`CLIP_COLLAPSE_FRACTION` of the level in
       use marks an overshoot and is discarded (the level in use stays). This
       overshoot guard, the divergence guard and the averaging of the second
       half are post-processing, as in the binary solver.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
        Features (already clipped to any public feature norm).
    labels : int ndarray of shape (n,)
        Class indices in ``[0, n_classes)``.
    n_classes : int
    plan : KnownLipschitzPlan
        From ``make_known_lipschitz_plan(mu, n, (d + fit_intercept) * K, ...)``
        with ``n_scales = (truncation is None)``.
    rng : numpy.random.Generator
    step_size : float
        Step for features of unit scale; divided by ``s**2``.
    truncation, clip : float, optional
        Public truncation / clip levels.
    radius : float, default=inf
        Frobenius radius of the domain of ``W``.
    fit_intercept : bool, default=False
    scaled_intercept : bool, default=True

    Returns
    -------
    HeavyTailedResult
        ``coef`` of shape ``(d + fit_intercept, K)``, the intercept row last
        in the data's units; also the ``truncation`` level and the
        ``feature_scale``.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.heavy_tailed.known_lipschitz import make_known_lipschitz_plan
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 2)); y = np.digitize(X[:, 0], [-0.5, 0.5])
    >>> plan = make_known_lipschitz_plan(np.inf, 3000, 9, 50, feature_scale=True)
    >>> res = multinomial_dp_gd(X, y, 3, plan, rng, step_size=2.0, fit_intercept=True)
    >>> pred = np.argmax(np.c_[X, np.ones(3000)] @ res.coef, axis=1)
    >>> bool(np.mean(pred == y) > 0.9)
    True
    """
    n, d_feat = X.shape
    K = int(n_classes)
    X, labels, norms_t, s, T, value = _design(
        X, labels, plan, rng, truncation, fit_intercept, scaled_intercept
    )
    d = X.shape[1]
    ceiling = math.sqrt(2.0) * (math.hypot(T, value) if value is not None else T)
    gd = plan.gd
    T_steps = int(gd.n_steps)
    q = 1.0 - gd.clip_fraction
    if clip is None:
        clip_range = (math.log2(ceiling) - SEARCH_OCTAVES, math.log2(ceiling))
        checkpoints = set(gd.checkpoints)
        octaves = _FALLBACK_OCTAVES if checkpoints else NO_SEARCH_OCTAVES
        C = 2.0 ** (clip_range[1] - octaves)
        if not checkpoints:
            C = min(C, noise_capped_clip(s, step_size, gd.z_grad, T_steps, n, d))
    else:
        checkpoints, C = set(), float(clip)
    lr = float(step_size) / (s * s)
    W = np.zeros((d, K))
    clip_levels = np.empty(T_steps)
    step_sizes = np.empty(T_steps)
    acc = np.zeros((d, K))
    n_avg, first_avg = 0, int(T_steps * AVERAGE_FROM)
    prev = best = kept = None  # kept: the clip level in use
    for t in range(T_steps):
        if t in checkpoints:
            best = None
            _, gnorms = clipped_multinomial_gradient_sum(
                X, labels, W, norms_t, math.inf
            )
            C_new = min(
                ceiling,
                noisy_log_quantile(
                    gnorms,
                    q,
                    gd.z_count,
                    rng,
                    log2_range=clip_range,
                    steps=gd.bisection_steps,
                ),
            )
            # post-processing of public releases: a release that falls below
            # a public fraction of the kept level marks an overshoot; it is
            # discarded and the kept level stays
            if kept is None or C_new >= CLIP_COLLAPSE_FRACTION * kept:
                C = kept = C_new
        clipped, _ = clipped_multinomial_gradient_sum(X, labels, W, norms_t, C)
        std = noise_std(2.0 * C, gd.z_grad)
        noise = gaussian_noise(
            rng, std, d * K, sensitivity=2.0 * C, label="clipped gradient sum"
        )
        grad = (clipped + np.reshape(noise, (d, K))) / n
        clip_levels[t] = C
        gnorm = float(np.linalg.norm(grad))
        noise_norm = std * math.sqrt(d * K) / n
        diverging = prev is not None and gnorm > _GUARD_NOISE_FLOOR * noise_norm
        diverging = diverging and (
            gnorm > _GUARD_GROWTH * prev[2]
            or (best is not None and gnorm > _GUARD_GROWTH * best[2])
        )
        if diverging:
            lr *= min(0.5, prev[2] / gnorm)
            back = best if best is not None else prev
            W = _project(back[0] - lr * back[1], radius)
            prev = back
        else:
            prev = (W, grad, gnorm)
            if best is None or gnorm < best[2]:
                best = prev
            W = _project(W - lr * grad, radius)
        step_sizes[t] = lr
        if t >= first_avg:
            acc += W
            n_avg += 1
    coef = acc / n_avg if n_avg else W
    if value is not None:
        coef[-1] *= value
    return HeavyTailedResult(
        coef,
        clip_levels,
        step_sizes,
        T_steps,
        feature_scale=float(s),
        truncation=float(T),
        fit_intercept=bool(fit_intercept),
        plan=plan,
    )


@dataclass(frozen=True)
class SharedOvRPlan:
    """Noise of :func:`ovr_dp_gd`: shared scales, then ``K`` binary GD runs.

    Parameters
    ----------
    gd : FullBatchPlan
        Plan of each of the ``n_classes`` binary runs (same noise).
    n_classes : int
    n_scales, z_scale, trunc_fraction, default_scales, feature_scale
        As in :class:`~skdp.solvers.heavy_tailed.known_lipschitz.KnownLipschitzPlan`;
        the scale quantiles are released once, for all classes.
    """

    gd: FullBatchPlan
    n_classes: int
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
        parts.extend(self.gd.event for _ in range(self.n_classes))
        return ComposedDpEvent(parts)


def make_shared_ovr_plan(
    mu,
    n,
    d,
    n_steps,
    n_classes,
    *,
    n_scales=1,
    feature_scale=False,
    adaptive_clip=True,
    bound_share=0.1,
):
    """Budget split of one-vs-rest with scales shared by the classes.

    The scale quantiles (feature scale, truncation level) take their share
    of ``mu**2`` once; the rest is split evenly over the ``K`` binary runs
    (each touches every record), each with its clip levels and gradients.
    The composition is exactly ``mu``-GDP.

    Parameters
    ----------
    mu : float
    n, d : int
        Records and dimension of each binary problem (intercept included).
    n_steps, n_classes : int
    n_scales : int, default=1
        Truncation quantile (0 if public).
    feature_scale : bool, default=False
    adaptive_clip : bool, default=True
    bound_share : float, default=0.1

    Returns
    -------
    SharedOvRPlan

    Examples
    --------
    >>> from skdp.privacy import gdp_mu_of
    >>> plan = make_shared_ovr_plan(0.5, 10_000, 6, 30, 4, feature_scale=True)
    >>> round(gdp_mu_of(plan.event), 6)
    0.5
    """
    K = int(n_classes)
    n_sc = int(n_scales) + bool(feature_scale)
    scale_sh = bound_scale_share(bound_share, n_sc)
    use_defaults = False
    z_scale = math.inf
    if n_sc:
        (z_scale,) = split_gdp(mu, [(n_sc * RANGE_STEPS, scale_sh)])
        if not scales_estimable(n, z_scale):
            use_defaults, n_sc, scale_sh, feature_scale = True, 0, 0.0, False
    rest = 1.0 - scale_sh
    mu_k = mu if math.isinf(mu) else mu * math.sqrt(rest / K)
    gd = make_full_batch_plan(
        mu_k,
        n,
        d,
        n_steps,
        adaptive_clip=adaptive_clip,
        clip_share=(bound_share - scale_sh) / rest,
    )
    if not n_sc:
        return SharedOvRPlan(gd, K, default_scales=use_defaults)
    trunc = min(0.01, gd.clip_fraction / 4.0)
    return SharedOvRPlan(gd, K, n_sc, z_scale, trunc, feature_scale=bool(feature_scale))


def ovr_dp_gd(
    X,
    labels,
    n_classes,
    plan,
    rng,
    *,
    step_size,
    truncation=None,
    clip=None,
    radius=math.inf,
    fit_intercept=False,
    scaled_intercept=True,
):
    """One-vs-rest Algorithm 4 + clipped DP-GD with scales shared by the classes.

    The feature scale ``s`` and the truncation level ``T`` are released once
    (and made consistent, as in :func:`multinomial_dp_gd`); then each class
    ``k`` runs :func:`~skdp.solvers.heavy_tailed.gd.clipped_dp_gd` on the
    same truncated design with targets ``+1`` (class ``k``) / ``-1``, its
    clip levels searched below the logistic Lipschitz ceiling ``||x||``.

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n, d)
    labels : int ndarray of shape (n,)
    n_classes : int
    plan : SharedOvRPlan
    rng : numpy.random.Generator
    step_size : float
        Binary step for features of unit scale; divided by ``s**2``.
    truncation, clip : float, optional
    radius : float, default=inf
    fit_intercept : bool, default=False
    scaled_intercept : bool, default=True

    Returns
    -------
    list of HeavyTailedResult
        One per class (sharing ``truncation`` and ``feature_scale``);
        ``coef`` has the intercept last, in the data's units.

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(3000, 2)); y = np.digitize(X[:, 0], [-0.5, 0.5])
    >>> plan = make_shared_ovr_plan(np.inf, 3000, 3, 50, 3, feature_scale=True)
    >>> res = ovr_dp_gd(X, y, 3, plan, rng, step_size=4.0, fit_intercept=True)
    >>> W = np.stack([r.coef for r in res], axis=1)
    >>> bool(np.mean(np.argmax(np.c_[X, np.ones(3000)] @ W, axis=1) == y) > 0.8)
    True
    """
    X, labels, norms_t, s, T, value = _design(
        X, labels, plan, rng, truncation, fit_intercept, scaled_intercept
    )
    ceiling = math.hypot(T, value) if value is not None else T
    clip_range = None
    if clip is None:
        clip_range = (math.log2(ceiling) - SEARCH_OCTAVES, math.log2(ceiling))
    out = []
    for k in range(int(n_classes)):
        yk = np.where(labels == k, 1.0, -1.0)
        res = clipped_dp_gd(
            X,
            yk,
            LogisticLoss(),
            plan.gd,
            rng,
            step_size=float(step_size) / (s * s),
            clip=clip,
            clip_range=clip_range,
            clip_cap=ceiling,
            radius=radius,
            row_norms=norms_t,
        )
        if value is not None:
            res.coef = np.array(res.coef, dtype=float)
            res.coef[-1] *= value
        res.truncation = float(T)
        res.feature_scale = float(s)
        res.fit_intercept = bool(fit_intercept)
        res.plan = plan
        out.append(res)
    return out


def multiclass_step(plan, step_size=None, *, shared_ovr=False, public_clip=False):
    """Step of :func:`multinomial_dp_gd` or :func:`ovr_dp_gd` (public rule).

    ``step_size`` if given; else, for one-vs-rest or a public clip level
    (``public_clip``: the paper's Theorem 2), :func:`practical_step_size`
    of the binary logistic loss or of :data:`MULTINOMIAL_CURVATURE`; for the
    softmax model with a private clip level, :func:`multinomial_step_size`.
    Without a private clip search (no checkpoints, small ``n``) the softmax
    clip level is fixed near the gradient scale (:data:`NO_SEARCH_OCTAVES`),
    not a heavy clip, so the step is the one for a small clipped fraction.

    Parameters
    ----------
    plan : KnownLipschitzPlan or SharedOvRPlan
    step_size : float, optional
        Public step for features of unit scale.
    shared_ovr : bool, default=False
    public_clip : bool, default=False

    Returns
    -------
    float

    Examples
    --------
    >>> plan = make_shared_ovr_plan(1.0, 3000, 3, 30, 3)
    >>> multiclass_step(plan, 0.5, shared_ovr=True)
    0.5
    """
    fixed = not shared_ovr and not public_clip and not plan.gd.checkpoints
    curvature = LogisticLoss().curvature_bound if shared_ovr else MULTINOMIAL_CURVATURE
    step = (
        float(step_size)
        if step_size is not None
        else practical_step_size(curvature, 0.0 if fixed else plan.gd.clip_fraction)
    )
    if step_size is None and not shared_ovr and not public_clip:
        step = multinomial_step_size(0.0 if fixed else plan.gd.clip_fraction)
    return step
