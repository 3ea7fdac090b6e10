"""Ridge penalty chosen on a noise-corrected risk estimate (no split).

An alternative upper level for :class:`skdp.BilevelRidge`
(``tuning="risk_estimate"``). The default upper level is a held-out
validation loss, which needs two released parts; their pooled statistics
are noisier than one release of all rows, and half the rows make a noisy
guide (study at f9c3d36: ``python -m benchmarks.bilevel_ridge.frontier``).
Here all rows
release their statistics once, and the penalty minimizes an estimate of the
in-sample prediction risk ``||X (coef_alpha - theta)||**2`` of the released
ridge path: Mallows' Cp (Stein's unbiased risk estimate for ridge), with the
privacy noise's optimism removed,

``Cp(alpha) = c^T G c - 2 c^T b + 2 sigma^2 tr(A G) + 2 s_b^2 tr(A)
+ 2 s_G^2 (c^T A c + tr(A) ||c||^2 - sum_i A_ii c_i^2) + (centring terms)``,

where ``G, b`` are the released centred scatter and cross-moment, ``A = (G +
alpha I)^{-1}``, ``c = A b`` the ridge coefficients, ``s_G, s_b`` the public
noise scales per entry and ``sigma^2`` the noise variance of the targets,
estimated from the released ``y^T y``. Up to a constant that does not depend
on ``alpha``, ``||X (c - theta)||**2 = c^T G_0 c - 2 c^T b_0 + 2 c^T X^T e``
for the exact statistics ``G_0, b_0`` and target noise ``e``; replacing them
by the released ones and taking expectations over ``e`` and the privacy
noise gives the corrections. The ``tr(A G)`` term (ridge's degrees of
freedom) is exact for a linear model with homoscedastic noise; the privacy
terms are the second-order expansion of ``E[c^T E' c - 2 c^T N']`` in the
noise ``E'``, ``N'`` of the centred statistics: the symmetric Gram noise
(variance ``s_G^2`` on every upper-triangle entry, the diagonal included,
hence the ``A_ii`` term), the moment noise, and, with an intercept, the
noise of the released means, which centring passes into both statistics
(:func:`risk_path`). A test against theory checks that the estimate is
unbiased, with and without intercept.

As in the bilevel solver, a margin protects against noise dips where the
data hold no signal: unless the chi-square signal test
(:mod:`.bilevel_ridge_signal`) rejects "no signal" on the release, the
penalty minimizes ``Cp + margin * sd``, ``sd`` the standard deviation of
``Cp(alpha) - Cp(alpha_max)`` under fresh release and target noise (a
parametric bootstrap around the release). Everything after the release is
post-processing.

This is not the paper's bilevel algorithm: the upper level is an estimate
of the risk instead of a held-out loss, and it relies on the linear model
(homoscedastic noise) that a held-out loss does not need. It was measured
against the default (study at f9c3d36:
``python -m benchmarks.bilevel_ridge.risk_estimate``).
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ....privacy import Budget, ComposedDpEvent, GaussianDpEvent
from ....utils import clip_rows, clip_targets
from .signal import signal_test
from .stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
    release_statistics,
)

__all__ = [
    "RiskEstimatePlan",
    "plan_risk_estimate",
    "release_all_rows",
    "release_exact",
    "risk_estimate_from_release",
    "risk_path",
    "risk_estimate_ridge",
]

# Share of the GDP budget (mu**2) of y^T y, which sets sigma^2 and the test.
TARGET_SQ_SHARE = 0.01
# Fresh-noise draws of the parametric bootstrap of the margin.
BOOTSTRAP_DRAWS = 40


@dataclass(frozen=True)
class RiskEstimatePlan:
    """Public plan of one release of all rows (normalized units).

    Attributes
    ----------
    n_samples, n_features : int
    mu : float
        GDP budget of the release.
    penalties : ndarray
        Public grid of penalties (sum units) the estimate is minimized over.
    fit_intercept : bool
    gram_share : float
        Share of ``mu**2`` (after ``y^T y``'s) of the Gram matrix.
    signal_test_level : float or None
        ``None``: always the margin.
    margin : float
        Noise standard deviations added where the test finds no signal.
    stds : dict
        Noise standard deviation per entry: ``gram``, ``moment``, ``target_sq``
        (all ``0`` without privacy).
    event : DpEvent
    """

    n_samples: int
    n_features: int
    mu: float
    penalties: np.ndarray = field(repr=False)
    fit_intercept: bool
    gram_share: float
    signal_test_level: object
    margin: float
    stds: dict
    event: object = field(repr=False)


@dataclass(frozen=True)
class RiskEstimateResult:
    """Output of :func:`risk_estimate_ridge` (normalized units).

    Attributes
    ----------
    coef : ndarray of shape (n_features,)
    intercept : float
    alpha : float
        Chosen penalty (sum units).
    risk : ndarray
        The estimate on ``plan.penalties`` (without the margin).
    signal_pvalue : float
        NaN without privacy noise.
    """

    coef: np.ndarray
    intercept: float
    alpha: float
    risk: np.ndarray = field(repr=False)
    signal_pvalue: float


def plan_risk_estimate(
    n_samples,
    n_features,
    mu,
    *,
    alpha_min,
    alpha_max,
    fit_intercept=True,
    gram_share=0.5,
    signal_test_level=0.001,
    margin=1.5,
    n_alphas=161,
):
    """Noise scales and privacy event of the release (data-independent).

    The Gram matrix, the moment vector and ``y^T y`` of the clipped rows
    (``||x|| <= 1``, ``|y| <= 1``) get Gaussian noise; the three composed
    are exactly ``mu``-GDP (``y^T y`` takes :data:`TARGET_SQ_SHARE` of
    ``mu**2``, the Gram matrix ``gram_share`` of the rest).

    Parameters
    ----------
    n_samples, n_features : int
    mu : float
        GDP budget, ``inf`` for no noise.
    alpha_min, alpha_max : float
        Public penalty range (sum units, normalized features).
    fit_intercept : bool, default=True
    gram_share : float, default=0.5
    signal_test_level : float or None, default=0.001
    margin : float, default=1.5
    n_alphas : int, default=161
        Size of the public log grid over ``[alpha_min, alpha_max]``.

    Returns
    -------
    RiskEstimatePlan

    Examples
    --------
    >>> from skdp.privacy import GaussianDpEvent, certify_epsilon
    >>> plan = plan_risk_estimate(1000, 3, 1.0, alpha_min=1e-3, alpha_max=1e4)
    >>> round(certify_epsilon(plan.event, 1e-5), 6) == round(
    ...     certify_epsilon(GaussianDpEvent(1.0), 1e-5), 6)
    True
    """
    c = 1.0 if fit_intercept else None
    penalties = np.geomspace(alpha_min, alpha_max, int(n_alphas))
    common = dict(
        n_samples=int(n_samples),
        n_features=int(n_features),
        mu=float(mu),
        penalties=penalties,
        fit_intercept=bool(fit_intercept),
        gram_share=float(gram_share),
        signal_test_level=signal_test_level,
        margin=float(margin),
    )
    if math.isinf(mu):
        stds = {"gram": 0.0, "moment": 0.0, "target_sq": 0.0}
        return RiskEstimatePlan(**common, stds=stds, event=ComposedDpEvent([]))
    target_sq, rest = Budget(mu).split([TARGET_SQ_SHARE, 1.0 - TARGET_SQ_SHARE])
    gram, moment = rest.split([gram_share, 1.0 - gram_share])
    sens = {
        "gram": gram_sensitivity(1.0, c),
        "moment": moment_sensitivity(1.0, 1.0, c),
        "target_sq": 1.0,  # y**2 in [0, 1]
    }
    budgets = {"gram": gram, "moment": moment, "target_sq": target_sq}
    stds = {k: sens[k] * budgets[k].noise_multiplier() for k in sens}
    event = ComposedDpEvent(
        [GaussianDpEvent(stds[k] / sens[k]) for k in ("gram", "moment", "target_sq")]
    )
    return RiskEstimatePlan(**common, stds=stds, event=event)


def risk_path(
    stats, gram_var, moment_var, noise_var, penalties, intercept_scaling=None
):
    """Noise-corrected Cp of the ridge path (see the module docstring).

    With an intercept, the released means carry the noise of the constant
    column (``delta`` on the Gram matrix's column, ``e`` on the moment's), and
    centring passes it on: the centred scatter gets ``-(xbar delta^T + delta
    xbar^T) / c`` and the centred cross-moment ``-(xbar e + ybar delta) / c``,
    correlated with each other. The corrections below are the second-order
    expansion of ``E[c^T E' c - 2 c^T N']`` for that noise (``E'``, ``N'`` the
    noise of the centred statistics, symmetric Gram noise with variance
    ``s_G**2`` on every upper-triangle entry, diagonal included), evaluated at
    the released statistics and means.

    Parameters
    ----------
    stats : RidgeStatistics
        Released statistics, centred (PSD scatter).
    gram_var, moment_var : float
        Privacy noise variance per released entry of the Gram matrix and of
        the moment vector.
    noise_var : float
        Variance of the targets' noise, ``sigma**2``.
    penalties : ndarray
        Penalties (sum units).
    intercept_scaling : float or None, default=None
        Value ``c`` of the constant column when the means were released
        with the statistics (``None``: no intercept, no centring noise).

    Returns
    -------
    ndarray
        The estimate at each penalty, up to a constant.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.solvers.bilevel.ridge.stats import exact_statistics
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 5))
    >>> stats = exact_statistics(X, X @ np.ones(5) + rng.normal(size=2000), 1.0)
    >>> path = risk_path(stats.centered(), 0.0, 0.0, 1.0, np.geomspace(1e-2, 1e5, 8))
    >>> int(np.argmin(path)) < 4  # a strong signal wants a small penalty
    True
    """
    vals, vecs = np.linalg.eigh(stats.scatter)
    vals = np.maximum(vals, 0.0)
    b = vecs.T @ stats.cross
    # Centring noise, scaled to the means: none without an intercept.
    if intercept_scaling is None or not stats.fit_intercept:
        xbar, ybar, cent_g, cent_m = np.zeros_like(b), 0.0, 0.0, 0.0
    else:
        xbar = vecs.T @ stats.mean_x
        ybar = float(stats.mean_y)
        cent_g = gram_var / intercept_scaling**2
        cent_m = moment_var / intercept_scaling**2
    # One row per penalty: the whole path in a few matrix products.
    inv = 1.0 / (vals[None, :] + np.asarray(penalties, dtype=float)[:, None])
    c = inv * b  # ridge coefficients, eigenbasis
    tr_a, c2 = inv.sum(axis=1), np.sum(c**2, axis=1)
    c_a_c = np.sum(inv * c**2, axis=1)
    c_orig = c @ vecs.T
    a_diag = inv @ (vecs**2).T  # diagonal of A in the original basis
    x_a_x, c_a_x, c_x = inv @ xbar**2, (inv * c) @ xbar, c @ xbar
    fit = (c**2) @ vals - 2.0 * (c @ b)
    dof = 2.0 * noise_var * (inv @ vals)
    # 2 tr(A cov(N')): moment noise, the moment's constant entry, delta.
    moment = 2.0 * (moment_var * tr_a + cent_m * x_a_x + cent_g * ybar**2 * tr_a)
    # 2 E[c^T E' A E' c]: the Gram block (diagonal variance s_G**2) ...
    gram = 2.0 * gram_var * (c_a_c + tr_a * c2 - np.sum(a_diag * c_orig**2, axis=1))
    # ... and the centring term -(xbar delta^T + delta xbar^T).
    gram += 2.0 * cent_g * (2.0 * c_x * c_a_x + tr_a * c_x**2 + x_a_x * c2)
    # -4 E[c^T E' A N']: delta is in both the scatter and the cross-moment.
    cross = -4.0 * cent_g * ybar * (c_x * tr_a + c_a_x)
    return fit + dof + moment + gram + cross


def _noise_variance(raw, stats, gram_std):
    """``sigma^2`` from the released ``y^T y`` and a lightly penalized fit.

    The residual sum of squares of the fit at a penalty of three times the
    Gram noise's spectral scale, over ``n - d``, clipped to ``[0, 1]`` (the
    targets are in ``[-1, 1]``). Post-processing of the release.
    """
    n, d = stats.weight, stats.cross.size
    centred_sq = raw.target_sq - (n * stats.mean_y**2 if stats.fit_intercept else 0.0)
    coef, _ = stats.solve(max(3.0 * gram_std * math.sqrt(d), 1e-8))
    rss = centred_sq - 2.0 * coef @ stats.cross + coef @ stats.scatter @ coef
    return float(np.clip(rss / max(n - d, 1.0), 0.0, 1.0))


def _path_noise_sd(stats, plan, noise_var, rng):
    """Bootstrap sd of ``Cp(alpha) - Cp(alpha_max)`` over fresh noise."""
    d = stats.cross.size
    gram_var, moment_var = plan.stds["gram"] ** 2, plan.stds["moment"] ** 2
    cov = moment_var * np.eye(d) + noise_var * stats.scatter
    root = np.linalg.cholesky(cov + 1e-12 * np.eye(d))
    diffs = []
    for _ in range(BOOTSTRAP_DRAWS):
        e = rng.normal(scale=plan.stds["gram"], size=(d, d))
        vals, vecs = np.linalg.eigh(stats.scatter + np.triu(e) + np.triu(e, 1).T)
        scatter = (vecs * np.maximum(vals, 0.0)) @ vecs.T
        cross = stats.cross + root @ rng.normal(size=d)
        path = risk_path(
            replace(stats, scatter=scatter, cross=cross),
            gram_var,
            moment_var,
            noise_var,
            plan.penalties,
            _intercept_scaling(plan),
        )
        diffs.append(path - path[-1])
    return np.std(diffs, axis=0)


def _intercept_scaling(plan):
    return 1.0 if plan.fit_intercept else None


def release_all_rows(X, y, plan, rng):
    """The plan's one release: noisy statistics of all clipped rows.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Scaled features; rows are clipped to norm 1 here (the sensitivity).
    y : ndarray of shape (n,)
        Scaled targets; clipped to ``[-1, 1]`` here.
    plan : RiskEstimatePlan
    rng : numpy.random.Generator

    Returns
    -------
    RawStatistics
        With ``target_sq`` (released with noise, exact only without privacy).
    """
    X = clip_rows(np.asarray(X, dtype=float), 1.0)
    y = clip_targets(np.asarray(y, dtype=float), 1.0)
    return release_exact(exact_statistics(X, y, _intercept_scaling(plan)), plan, rng)


def release_exact(exact, plan, rng):
    """Add the plan's noise to the exact statistics of all clipped rows.

    Parameters
    ----------
    exact : RawStatistics
        Noise-free statistics (one process, or summed over dask chunks).
    plan : RiskEstimatePlan
    rng : numpy.random.Generator

    Returns
    -------
    RawStatistics
    """
    c = 1.0 if plan.fit_intercept else None
    (raw,) = release_statistics(
        [exact],
        gram_std=plan.stds["gram"],
        moment_std=plan.stds["moment"],
        target_sq_std=plan.stds["target_sq"],
        rng=rng,
        sensitivities=(gram_sensitivity(1.0, c), moment_sensitivity(1.0, 1.0, c)),
    )
    return raw


def risk_estimate_ridge(X, y, plan, rng):
    """Release all rows' statistics once and pick the penalty on Cp.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features scaled by the public feature norm (rows are clipped to 1).
    y : ndarray of shape (n,)
        Targets scaled by the public target bound (clipped to ``[-1, 1]``).
    plan : RiskEstimatePlan
    rng : numpy.random.Generator

    Returns
    -------
    RiskEstimateResult

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(5000, 3)) / 3
    >>> y = np.clip(X @ [1.0, -1.0, 0.5] + 0.1 * rng.normal(size=5000), -1, 1)
    >>> plan = plan_risk_estimate(5000, 3, np.inf, alpha_min=1e-3, alpha_max=5e4)
    >>> res = risk_estimate_ridge(X, y, plan, rng)
    >>> bool(np.allclose(res.coef, [1.0, -1.0, 0.5], atol=0.05))
    True
    """
    return risk_estimate_from_release(release_all_rows(X, y, plan, rng), plan, rng)


def risk_estimate_from_release(raw, plan, rng):
    """Pick the penalty on Cp from the released statistics (post-processing).

    Parameters
    ----------
    raw : RawStatistics
        From :func:`release_all_rows` or :func:`release_exact`.
    plan : RiskEstimatePlan
    rng : numpy.random.Generator

    Returns
    -------
    RiskEstimateResult
    """
    stats = raw.centered()
    noise_var = _noise_variance(raw, stats, plan.stds["gram"])
    gram_var, moment_var = plan.stds["gram"] ** 2, plan.stds["moment"] ** 2
    path = risk_path(
        stats, gram_var, moment_var, noise_var, plan.penalties, _intercept_scaling(plan)
    )
    pvalue, found = math.nan, False
    objective = path
    if plan.stds["moment"] > 0:
        if plan.signal_test_level is not None:
            pvalue = signal_test(
                raw,
                moment_var=moment_var,
                gram_var=gram_var,
                target_sq_var=plan.stds["target_sq"] ** 2,
            ).pvalue
            found = pvalue < plan.signal_test_level
        if not found and plan.margin > 0:
            objective = path + plan.margin * _path_noise_sd(stats, plan, noise_var, rng)
    alpha = float(plan.penalties[int(np.argmin(objective))])
    coef, intercept = stats.solve(alpha)
    return RiskEstimateResult(coef, intercept, alpha, path, float(pvalue))
