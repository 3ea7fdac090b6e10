"""DP bilevel tuning of a ridge penalty (Kornowski, Sec. 7, sign corrected).

Everything here works in *normalized units*: the caller divides the features
by the public ``feature_norm`` and the targets by the public ``target_bound``
(this module then clips rows to norm 1 and targets to ``[-1, 1]``). The
penalty ``alpha`` is on the *sum* of squared errors of the training part
(scikit-learn's ``Ridge(alpha)`` convention); the paper's weight on the mean
loss is ``omega = alpha / n_train``.

Bilevel problem: ``F(omega) = mean validation loss of theta*(omega)``,
``theta*(omega) = argmin mean training loss + omega / 2 ||w||**2`` (the
intercept is never penalized). The outer variable is ``u = log(alpha)`` in
``[log alpha_min, log alpha_max]``: this is Alg. 1 on the reparametrized
problem ``g(u, theta) = loss + e^u / n_train R(theta)``, whose hypergradient
estimate is ``omega * lam * (R(theta^lam) - R(theta))`` with ``R = ||w||**2/2``.
The update is projected *descent*,

``u_{t+1} = clip(u_t - eta_t * omega_t * lam (R(theta^lam_t) - R(theta_t)), ...)``

(the paper's printed closed form has the opposite sign, notes §5.4). The
outer quantity depends on the data only through the private inner solutions,
so it is post-processing; ``outer_noise=True`` adds the paper's Gaussian noise
anyway (with a clipped, budgeted hypergradient).

Inner solvers:

- ``"sufficient_statistics"``: the training and validation parts release
  their Gram matrix and moment vector once (parallel composition: one record
  lies in one part); every inner solve and the final model are then closed
  form. The two releases may use negatively correlated noise, which makes
  their sum (the final model) more accurate at no privacy cost. The upper
  level is by default two-fold (each part validates the model trained on
  the other), and the released validation loss gets a public correction
  (exact removal of the bias the noise correlation adds, plus a margin of its
  noise standard deviation unless a chi-square test on the pooled release
  finds signal, :mod:`.bilevel_ridge_signal`) whose ``log(alpha)``-derivative
  is the ``grad_x f`` term of the step (:mod:`.bilevel_ridge_validation`).
  The final model is ridge on the pooled statistics at the tuned penalty
  times :func:`final_penalty_factor` (``1 + rho`` by default).
- ``"output_perturbation"``: each inner solve is an exact ridge solution plus
  Gaussian noise (:mod:`.bilevel_ridge_output`).
- ``"loc_gd"``: the paper's DP-Loc-GD (:mod:`.bilevel`, :mod:`.bilevel_inner`).

For the last two the intercept comes from privately released training means
(a stated share of the budget): both parts are centred at them, which at
``epsilon = inf`` is exactly scikit-learn's unpenalized, centred intercept.
"""

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ....privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    NoOpDpEvent,
    ParallelDpEvent,
    SelfComposedDpEvent,
    gaussian_noise,
    parallel_scope,
    private_row_mean,
)
from ....utils import clip_rows, clip_targets
from ..hypergradient import (
    BilevelOracles,
    InnerSettings,
    bilevel_outer_loop,
    clipped_sum,
    dp_bilevel,
)
from ..inner import localization_radii, localized_noisy_gd
from ..plan import BilevelDesign, calibrate_bilevel_noise
from .output import (
    output_sensitivities,
    perturbed_ridge,
    project_on_ball,
    ridge_ball_radius,
    shrink_noisy,
)
from .signal import signal_test
from .stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
    release_shared_gram,
    release_statistics,
)
from .validation import ValidationNoise, ValidationObjective

__all__ = [
    "INNER_SOLVERS",
    "BilevelRidgeSettings",
    "BilevelRidgePlan",
    "BilevelRidgeResult",
    "plan_bilevel_ridge",
    "bilevel_ridge",
    "bilevel_ridge_from_statistics",
    "final_penalty_factor",
    "gram_noise_ratio",
    "pooled_noise_variances",
    "signal_found",
    "validation_objective",
]

INNER_SOLVERS = ("sufficient_statistics", "output_perturbation", "loc_gd")
OUTER_SHARE = 1.0 / 3.0  # the paper's split when the outer step is noised
CENTERING_SHARE = 0.05
NOISY_PENALTY = 100.0  # lambda of the noisy inner solvers
# Largest Gram noise (against the Gram matrix, see gram_noise_ratio) at which
# a detected signal switches the validation margin off.
MAX_GRAM_NOISE_RATIO = 1.5


@dataclass(frozen=True)
class BilevelRidgeSettings:
    """Public hyperparameters of a bilevel ridge fit (normalized units).

    Parameters
    ----------
    inner_solver : str
        One of :data:`INNER_SOLVERS`.
    fit_intercept : bool
    alpha_min, alpha_max, alpha_init : float
        Penalty range and start (sum units over the training part).
    n_iter : int
        Outer iterations ``T``.
    step_size : float
        Outer step (in ``log(alpha)`` units; AdaGrad's ``eta_0`` if adaptive).
    adaptive : bool
        Adaptive outer steps (post-processing) instead of a constant step:
        sign-based (Rprop) with sufficient statistics, AdaGrad-norm with the
        noisy inner solvers.
    penalty : float or None
        ``lambda``; ``None`` picks the default of the inner solver.
    outer_noise : bool
        Add the paper's outer Gaussian noise (spends :data:`OUTER_SHARE`).
    outer_clip : float
        Clip norm of the outer hypergradient when ``outer_noise``.
    refit_share : float
        Share of ``mu**2`` reserved for the final model on all rows.
    correlation : float
        Noise correlation between the two statistics releases (``<= 0``).
    intercept_scaling : float
        Constant column of the sufficient statistics (normalized units).
    inner_steps, inner_rounds : int
        ``K`` and ``M`` of DP-Loc-GD.
    cross_validate : bool
        Sufficient statistics only: two-fold objective (each part is the
        validation part of the model trained on the other).
    validation_margin : float
        Sufficient statistics only: standard deviations of the released
        objective's privacy noise added to it (see
        :mod:`.bilevel_ridge_validation`).
    bias_correction : bool
        Sufficient statistics only: remove the noise-correlation bias of the
        released objective (``False`` only for ablation studies).
    rescale_final : bool
        Sufficient statistics only: the final model on all rows uses the
        tuned penalty times :func:`final_penalty_factor` (the pooled
        statistics are less noisy per row than a part's); ``False`` only for
        ablation studies.
    gram_share : float
        Sufficient statistics only: share of the statistics budget (of
        ``mu**2``) spent on the Gram matrices; the moment vectors get the
        rest. The Gram noise reaches the coefficients multiplied by the
        coefficients themselves (in units of the public bounds), the moment
        noise directly, so the Gram matrix deserves the smaller share unless
        the signal is large against the bounds (study at f9c3d36:
        ``python -m benchmarks.bilevel_ridge.main --design``).
    shared_gram : bool
        Sufficient statistics only, ablation studies: release one Gram
        matrix of all rows, shared by the parts, and a moment vector per part
        (:func:`~.bilevel_ridge_stats.release_shared_gram`) instead of each
        part's own Gram matrix. The final model's Gram matrix is then less
        noisy, but the validation loss no longer sees the Gram noise; it
        measured worse (study at f9c3d36:
        ``python -m benchmarks.bilevel_ridge.paired``).
    signal_test_level : float or None
        Sufficient statistics only: level of the chi-square test of "no
        signal" on the pooled release (:mod:`.bilevel_ridge_signal`). If it
        rejects and the Gram noise is not larger than the Gram matrix
        (:func:`gram_noise_ratio`), the outer loop uses ``signal_margin``
        instead of ``validation_margin``. ``None``: no test (nor its
        release).
    signal_margin : float
        Margin used when the test finds signal.
    signal_test_share : float
        Share of the statistics budget (of ``mu**2``) spent on each part's
        ``y^T y``, which the test needs.
    """

    inner_solver: str = "sufficient_statistics"
    fit_intercept: bool = True
    alpha_min: float = 1e-3
    alpha_max: float = 1e6
    alpha_init: float = None
    n_iter: int = 100
    step_size: float = 1.0
    adaptive: bool = True
    penalty: float = None
    outer_noise: bool = False
    outer_clip: float = 1.0
    refit_share: float = 0.0
    correlation: float = -0.6
    intercept_scaling: float = 1.0
    inner_steps: int = 100
    inner_rounds: int = 2
    cross_validate: bool = True
    validation_margin: float = 1.5
    bias_correction: bool = True
    rescale_final: bool = True
    gram_share: float = 0.4
    shared_gram: bool = False
    signal_test_level: float = 0.001
    signal_margin: float = 0.0
    signal_test_share: float = 0.01

    def __post_init__(self):
        if self.inner_solver not in INNER_SOLVERS:
            raise ValueError(f"inner_solver must be one of {INNER_SOLVERS}.")
        if not 0.0 < self.alpha_min <= self.alpha_max < math.inf:
            raise ValueError("Need 0 < alpha_min <= alpha_max < inf.")
        if not 0.0 <= self.refit_share < 1.0:
            raise ValueError("refit_share must be in [0, 1).")
        if not -1.0 < self.correlation <= 0.0:
            raise ValueError("correlation must be in (-1, 0].")
        if not self.validation_margin >= 0.0:
            raise ValueError("validation_margin must be >= 0.")
        if not 0.0 < self.gram_share < 1.0:
            raise ValueError("gram_share must be in (0, 1).")
        level = self.signal_test_level
        if level is not None and not 0.0 < level < 1.0:
            raise ValueError("signal_test_level must be in (0, 1) or None.")
        if not self.signal_margin >= 0.0:
            raise ValueError("signal_margin must be >= 0.")
        if not 0.0 < self.signal_test_share < 0.5:
            raise ValueError("signal_test_share must be in (0, 0.5).")

    @property
    def start(self):
        """``alpha_init``, or the geometric middle of the range."""
        if self.alpha_init is not None:
            return float(np.clip(self.alpha_init, self.alpha_min, self.alpha_max))
        return math.sqrt(self.alpha_min * self.alpha_max)


@dataclass(frozen=True)
class BilevelRidgeNoise:
    """Noise scales of a bilevel ridge plan, one named field per release.

    Every field is a float in the normalized units of the release it scales
    (0.0: the release is not planned or carries no noise), except
    ``target_sq`` (``None`` when no signal test is planned) and ``loc_gd``
    (the calibrated noise of the DP-Loc-GD inner solver, ``None`` otherwise).
    Read access by name (``noise["gram"]``, ``"target_sq" in noise``) gives
    the planned releases only, as the former dict did.

    Attributes
    ----------
    outer : float
        Standard deviation of the outer (hypergradient) noise.
    target_sq : float or None
        Standard deviation of each part's released ``y^T y``.
    moment, gram : float
        Standard deviations of a part's moment and Gram releases.
    correlation : float
        Correlation of the two parts' noise (not a scale).
    refit_gram, refit_moment : float
        Standard deviations of the pooled refit releases.
    centering : float
        Standard deviation of the released training sums.
    multiplier, refit_multiplier : float
        Noise multipliers of the output-perturbation solves and refit.
    loc_gd : object or None
        Calibrated DP-Loc-GD noise (:func:`calibrate_bilevel_noise`).
    refit_std : float
        Standard deviation of the DP-Loc-GD refit steps.
    planned : frozenset of str
        Names of the releases the plan makes.
    """

    outer: float = 0.0
    target_sq: float = None
    moment: float = 0.0
    gram: float = 0.0
    correlation: float = 0.0
    refit_gram: float = 0.0
    refit_moment: float = 0.0
    centering: float = 0.0
    multiplier: float = 0.0
    refit_multiplier: float = 0.0
    loc_gd: object = None
    refit_std: float = 0.0
    planned: frozenset = field(default=frozenset(), repr=False)

    def __contains__(self, name):
        return name in self.planned

    def __getitem__(self, name):
        if name not in self.planned:
            raise KeyError(name)
        return getattr(self, name)

    def get(self, name, default=None):
        """The named release's scale if planned, else ``default``."""
        return getattr(self, name) if name in self.planned else default


@dataclass(frozen=True)
class BilevelRidgePlan:
    """The public privacy plan: noise scales and the matching event.

    Attributes
    ----------
    settings : BilevelRidgeSettings
    n_train, n_val, n_features : int
    mu : float
        GDP budget the plan spends (``inf``: no noise).
    event : DpEvent
    stds : BilevelRidgeNoise
        Noise standard deviations and multipliers of each release.
    """

    settings: BilevelRidgeSettings
    n_train: int
    n_val: int
    n_features: int
    mu: float
    event: object = field(repr=False)
    stds: BilevelRidgeNoise = field(default_factory=BilevelRidgeNoise)


@dataclass
class BilevelRidgeResult:
    """Fitted model in normalized units.

    Attributes
    ----------
    coef : ndarray of shape (d,)
    intercept : float
    alpha : float
        Penalty of the returned model (sum units over the rows it is fitted
        on): the tuned one, times :func:`final_penalty_factor` with the
        sufficient-statistics solver.
    alpha_path : ndarray of shape (T + 1,)
    t_out : int
    hypergradients : ndarray of shape (T,)
    tuned_alpha : float
        Penalty selected by the outer loop (for the part models).
    signal_pvalue : float
        p-value of the signal test (NaN when it is not run).
    """

    coef: np.ndarray
    intercept: float
    alpha: float
    alpha_path: np.ndarray
    t_out: int
    hypergradients: np.ndarray = field(repr=False)
    tuned_alpha: float = None
    signal_pvalue: float = math.nan


# --------------------------------------------------------------------------
# Privacy plans (public: n, d, settings and the GDP budget only)
# --------------------------------------------------------------------------


def _gaussian(sigma, sensitivity):
    """Event of one Gaussian release; ``sigma = 0`` is non-private."""
    return GaussianDpEvent(sigma / sensitivity if sensitivity > 0 else math.inf)


def _data_bounds(settings):
    """Bounds of the rows the inner problems see (centred rows double them)."""
    centred = (
        settings.fit_intercept and settings.inner_solver != "sufficient_statistics"
    )
    return (2.0, 2.0) if centred else (1.0, 1.0)


def default_penalty(settings, omega):
    """``lambda`` of the penalized inner problem ``f / lambda + g``.

    Exact inner solves (sufficient statistics) use a large ``lambda`` so the
    first-order estimate's bias ``O(||H_val|| / (lambda omega))`` is negligible;
    noisy inner solves use the public ``settings.penalty`` or 100, because the
    inner noise is multiplied by ``lambda`` in the hypergradient.
    """
    if settings.penalty is not None:
        return float(settings.penalty)
    if settings.inner_solver == "sufficient_statistics":
        h = 1.0 + settings.intercept_scaling**2  # bound on ||Z^T Z|| / n
        return 1e4 * (1.0 + h / omega)
    return NOISY_PENALTY


def plan_bilevel_ridge(settings, n_train, n_val, n_features, mu):
    """Noise scales and privacy event of a bilevel ridge fit.

    The plan does not depend on the penalty range (``alpha_min``,
    ``alpha_max``, ``alpha_init``): noise scales are fixed multiples of
    sensitivities that are either range-free or evaluated at the (public)
    current penalty. The GDP budget ``mu`` (see
    :func:`~skdp.solvers.bilevel.plan.gdp_budget`) is split by shares of
    ``mu**2``: ``refit_share`` for the final model,
    :data:`OUTER_SHARE` of the rest for the outer noise if any, a small
    :data:`CENTERING_SHARE` for the training means (iterative solvers with an
    intercept), and the rest for the inner solves.

    Parameters
    ----------
    settings : BilevelRidgeSettings
    n_train, n_val, n_features : int
    mu : float
        GDP budget; ``inf`` for no noise.

    Returns
    -------
    BilevelRidgePlan
    """
    s = settings
    stds = {}
    if math.isinf(mu):
        return BilevelRidgePlan(
            s, n_train, n_val, n_features, mu, NoOpDpEvent(), _noise(stds)
        )
    # Shares of mu**2 (skdp.privacy.Budget): refit, then outer, signal test,
    # centring and Gram/moment out of the rest.
    budget = Budget(mu)
    refit = budget.share(s.refit_share) if s.refit_share > 0 else None
    rest = budget.share(1.0 - s.refit_share)
    if s.outer_noise and s.inner_solver != "loc_gd":
        outer, rest = rest.split([OUTER_SHARE, 1.0 - OUTER_SHARE])
        # T Gaussian steps on the training part's clipped mean hypergradient.
        sens = 2.0 * s.outer_clip / n_train
        stds["outer"] = sens * outer.noise_multiplier(s.n_iter)
    train_events, val_events, all_events = [], [], []
    if s.outer_noise and s.inner_solver != "loc_gd":
        train_events.append(
            SelfComposedDpEvent(_gaussian(stds["outer"], sens), s.n_iter)
        )

    if s.inner_solver == "sufficient_statistics":
        c = s.intercept_scaling if s.fit_intercept else None
        dg, dm = gram_sensitivity(1.0, c), moment_sensitivity(1.0, 1.0, c)
        rho = s.correlation
        if s.signal_test_level is not None:
            # Each part's y^T y for the signal test: sensitivity B**2 = 1.
            share, rest = rest.split([s.signal_test_share, 1 - s.signal_test_share])
            stds["target_sq"] = share.noise_multiplier()
            train_events.append(_gaussian(stds["target_sq"], 1.0))
            val_events.append(_gaussian(stds["target_sq"], 1.0))
        # Gram and moment split mu^2 by gram_share. With correlation rho the
        # marginal noise of a part's release is 1/sqrt(1 - rho^2) larger for
        # the same privacy; a shared Gram matrix (all rows, one release) is
        # not correlated with anything.
        scale = 1.0 / math.sqrt(1.0 - rho * rho)
        gram, moment = rest.split([s.gram_share, 1.0 - s.gram_share])
        stds["moment"] = dm * moment.noise_multiplier() * scale
        stds["correlation"] = rho
        moment = _gaussian(stds["moment"] / scale, dm)
        train_events.append(moment)
        val_events.append(moment)
        if s.shared_gram:
            stds["gram"] = dg * gram.noise_multiplier()
            all_events.append(_gaussian(stds["gram"], dg))
        else:
            stds["gram"] = dg * gram.noise_multiplier() * scale
            train_events.append(_gaussian(stds["gram"] / scale, dg))
            val_events.append(_gaussian(stds["gram"] / scale, dg))
        if refit is not None:
            refit_gram, refit_moment = refit.split([s.gram_share, 1 - s.gram_share])
            stds["refit_gram"] = dg * refit_gram.noise_multiplier()
            stds["refit_moment"] = dm * refit_moment.noise_multiplier()
            all_events += [
                _gaussian(stds["refit_gram"], dg),
                _gaussian(stds["refit_moment"], dm),
            ]
    else:
        a, b = _data_bounds(s)
        if s.fit_intercept:
            centering, rest = rest.split([CENTERING_SHARE, 1.0 - CENTERING_SHARE])
            # (sum x, sum y) of the training part: sensitivity sqrt((2A)^2 + (2B)^2).
            sens_c = 2.0 * math.sqrt(2.0)
            stds["centering"] = sens_c * centering.noise_multiplier()
            train_events.append(_gaussian(stds["centering"], sens_c))
        if s.inner_solver == "output_perturbation":
            # 2T solves, each 1/z-GDP for a training record.
            z = rest.noise_multiplier(2 * s.n_iter)
            stds["multiplier"] = z
            train_events.append(SelfComposedDpEvent(GaussianDpEvent(z), 2 * s.n_iter))
            # Validation records enter the T penalized solves with a smaller
            # sensitivity; the noise is set by the larger one, so their
            # multiplier is at least z.
            val_events.append(SelfComposedDpEvent(GaussianDpEvent(z), s.n_iter))
            if refit is not None:
                stds["refit_multiplier"] = refit.noise_multiplier()
                all_events.append(GaussianDpEvent(stds["refit_multiplier"]))
        else:
            design = loc_gd_design(s, n_train, n_val)
            noise = calibrate_bilevel_noise(design, None, None, mu=rest.mu)
            stds["loc_gd"] = noise
            train_events.append(noise.event.events[1])
            val_events.append(noise.event.events[0])
            if refit is not None:
                steps = s.inner_rounds * s.inner_steps
                sens = 2.0 * loc_gd_clip(s) / (n_train + n_val)
                stds["refit_std"] = sens * refit.noise_multiplier(steps)
                all_events.append(
                    SelfComposedDpEvent(_gaussian(stds["refit_std"], sens), steps)
                )
    parts = ParallelDpEvent(
        [ComposedDpEvent(train_events), ComposedDpEvent(val_events)]
    )
    event = ComposedDpEvent([parts] + all_events) if all_events else parts
    return BilevelRidgePlan(s, n_train, n_val, n_features, mu, event, _noise(stds))


def _noise(stds):
    """The planned scales as a :class:`BilevelRidgeNoise`."""
    return BilevelRidgeNoise(**stds, planned=frozenset(stds))


def loc_gd_clip(settings):
    """Per-record clip norm of the inner gradients: ``A B`` of the centred data."""
    a, b = _data_bounds(settings)
    return a * b


def loc_gd_design(settings, n_train, n_val):
    """Public :class:`BilevelDesign` of the DP-Loc-GD inner solver."""
    s = settings
    clip = loc_gd_clip(s)
    return BilevelDesign(
        n_upper=n_val,
        n_lower=n_train,
        shared=False,
        n_outer=s.n_iter,
        inner_rounds=s.inner_rounds,
        inner_steps=s.inner_steps,
        penalty=NOISY_PENALTY if s.penalty is None else float(s.penalty),
        clip_upper=clip,
        clip_lower=clip,
        clip_outer=s.outer_clip,
        upper_in_outer=False,
        lower_in_outer=s.outer_noise,
    )


# --------------------------------------------------------------------------
# The fit
# --------------------------------------------------------------------------


def _ridge_norm(coef):
    return 0.5 * float(coef @ coef)


def _outer_noise(plan, rng, parts):
    """The outer noise of one step: a training-part release (sensitivity 2 C / n)."""
    with parts.part(0):
        return gaussian_noise(
            rng,
            plan.stds.outer,
            sensitivity=2.0 * plan.settings.outer_clip / plan.n_train,
            label="outer hypergradient",
        )


def _outer_hypergradient(plan, rng, parts):
    """Hypergradient in ``u = log(alpha)``; noised when ``outer_noise``."""
    s = plan.settings

    def hypergradient(u, omega, lam, w_low, w_pen):
        g = omega * lam * (_ridge_norm(w_pen) - _ridge_norm(w_low))
        if s.outer_noise:
            # Every training record carries the same per-record value
            # omega * lam * (R(w_pen) - R(w_low)); clipped as a whole.
            g = float(np.clip(g, -s.outer_clip, s.outer_clip))
            g += _outer_noise(plan, rng, parts)
        return np.array([g])

    return hypergradient


def _tune(plan, rng, solve, parts):
    """Outer loop on ``u = log(alpha)`` around private inner solves.

    ``solve(u) -> (w_low, w_pen)`` returns the two private inner solutions
    (coefficients) at ``omega = e^u / n_train`` with penalty
    :func:`default_penalty`.
    """
    s = plan.settings
    hyper = _outer_hypergradient(plan, rng, parts)

    def hypergradient(u, w_low, w_pen):
        omega = math.exp(u[0]) / plan.n_train
        return hyper(u, omega, default_penalty(s, omega), w_low, w_pen)

    return bilevel_outer_loop(
        np.array([math.log(s.start)]),
        lambda u, t: solve(u),
        hypergradient,
        _project(s),
        n_iter=s.n_iter,
        step_size=s.step_size,
        adaptive=s.adaptive,
    )


def bilevel_ridge(X, y, train_idx, val_idx, plan, rng):
    """Fit a ridge model whose penalty is tuned by DP bilevel optimization.

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Features divided by the public feature norm (clipped here to 1).
    y : ndarray of shape (n,)
        Targets divided by the public target bound (clipped here to 1).
    train_idx, val_idx : ndarray of int
        Public, data-independent split.
    plan : BilevelRidgePlan
        From :func:`plan_bilevel_ridge` with the same sizes.
    rng : numpy.random.Generator

    Returns
    -------
    BilevelRidgeResult
    """
    X = clip_rows(X, 1.0)
    y = clip_targets(y, 1.0)
    solver = {
        "sufficient_statistics": _fit_statistics,
        "output_perturbation": _fit_output,
        "loc_gd": _fit_loc_gd,
    }[plan.settings.inner_solver]
    # The plan's parallel parts: part 0 the training rows, part 1 the
    # validation rows (releases of all rows lie outside the scope).
    parts = parallel_scope(2)
    return solver(
        X[train_idx], y[train_idx], X[val_idx], y[val_idx], plan, rng, parts
    )


def _project(settings):
    lo, hi = math.log(settings.alpha_min), math.log(settings.alpha_max)
    return lambda u: np.clip(u, lo, hi)


def _result(res, coef, intercept):
    alpha_path = np.exp(res.x_path[:, 0])
    return BilevelRidgeResult(
        coef=np.asarray(coef, dtype=float),
        intercept=float(intercept),
        alpha=float(np.exp(res.x[0])),
        alpha_path=alpha_path,
        t_out=res.t_out,
        hypergradients=res.hypergradients[:, 0],
        tuned_alpha=float(np.exp(res.x[0])),
    )


def validation_objective(train, val, plan):
    """The released bilevel objective of the sufficient-statistics solver.

    Parameters
    ----------
    train, val : RawStatistics
        The two released parts.
    plan : BilevelRidgePlan

    Returns
    -------
    ValidationObjective
    """
    s = plan.settings
    parts = [train.centered(), val.centered()]
    n = train.n_samples + val.n_samples
    if s.cross_validate:
        pairs = [(0, 1, val.n_samples / n), (1, 0, train.n_samples / n)]
    else:
        pairs = [(0, 1, 1.0)]
    noise = ValidationNoise(
        moment_std=plan.stds.moment,
        correlation=plan.stds.correlation,
    )
    return ValidationObjective(
        parts,
        pairs,
        noise,
        s.validation_margin,
        s.intercept_scaling,
        bias_correction=s.bias_correction,
    )


def _fit_statistics(Xt, yt, Xv, yv, plan, rng, parts):
    s = plan.settings
    c = s.intercept_scaling if s.fit_intercept else None
    return bilevel_ridge_from_statistics(
        exact_statistics(Xt, yt, c),
        exact_statistics(Xv, yv, c),
        plan,
        rng,
        exact_all=lambda: exact_statistics(np.vstack([Xt, Xv]), np.r_[yt, yv], c),
        parts=parts,
    )


def bilevel_ridge_from_statistics(
    exact_tr, exact_va, plan, rng, exact_all=None, parts=None
):
    """``inner_solver="sufficient_statistics"`` from the pre-noise sums.

    The data enter only through the exact statistics of the clipped rows of
    the two parts (computed in one process or summed over dask chunks, see
    :mod:`._distributed`); every noise draw and everything after is the same.

    Parameters
    ----------
    exact_tr, exact_va : RawStatistics
        Noise-free statistics of the clipped training and validation rows.
    plan : BilevelRidgePlan
    rng : numpy.random.Generator
    exact_all : callable, optional
        Returns the statistics of all rows (for the refit); default
        ``exact_tr + exact_va``.
    parts : parallel scope, optional
        The ledger's scope of the two parts (opened here by default).

    Returns
    -------
    BilevelRidgeResult
    """
    s = plan.settings
    parts = parallel_scope(2) if parts is None else parts
    c = s.intercept_scaling if s.fit_intercept else None
    sensitivities = (gram_sensitivity(1.0, c), moment_sensitivity(1.0, 1.0, c))
    release = release_shared_gram if s.shared_gram else release_statistics
    raw_tr, raw_va = release(
        [exact_tr, exact_va],
        gram_std=plan.stds.gram,
        moment_std=plan.stds.moment,
        correlation=plan.stds.correlation,
        target_sq_std=plan.stds.target_sq,
        rng=rng,
        sensitivities=sensitivities,
        scope=parts,
    )
    # Everything below is post-processing of the two releases.
    objective = validation_objective(raw_tr, raw_va, plan)
    found, pvalue = signal_found([raw_tr, raw_va], plan)
    if found:
        objective.margin = s.signal_margin

    def penalty(omega):
        return default_penalty(s, omega)

    def solve(u, t):
        alpha = math.exp(u[0])
        return objective.models(alpha), objective.penalized_models(alpha, penalty)

    def hypergradient(u, low, pen):
        g = objective.hypergradient(math.exp(u[0]), penalty, low, pen)
        if s.outer_noise:
            # The paper's outer noise on the data-dependent estimate (clipped
            # as a whole); post-processing here, kept for fidelity.
            g = float(np.clip(g, -s.outer_clip, s.outer_clip))
            g += _outer_noise(plan, rng, parts)
        # grad_x f: the public correction of the released objective.
        return np.array([g + objective.correction_gradient(u[0])])

    res = bilevel_outer_loop(
        np.array([math.log(s.start)]),
        solve,
        hypergradient,
        _project(s),
        n_iter=s.n_iter,
        step_size=s.step_size,
        # Exact (post-processed) hypergradients whose scale varies by orders
        # of magnitude along log(alpha): a sign-based adaptive step.
        step_rule="rprop" if s.adaptive else "constant",
    )
    alpha = float(np.exp(res.x[0]))
    final = raw_tr + raw_va
    v_gram, v_moment = pooled_noise_variances(plan)
    if s.refit_share > 0:
        (raw_all,) = release_statistics(
            [exact_all() if exact_all is not None else exact_tr + exact_va],
            gram_std=plan.stds.refit_gram,
            moment_std=plan.stds.refit_moment,
            rng=rng,
            sensitivities=sensitivities,
        )
        # Inverse-variance combination of two releases of the same rows.
        weights, pooled = [], []
        for v, key in ((v_gram, "refit_gram"), (v_moment, "refit_moment")):
            v_all = getattr(plan.stds, key) ** 2
            weights.append(v_all / (v + v_all) if v + v_all > 0 else 0.5)
            pooled.append(v * v_all / (v + v_all) if v + v_all > 0 else 0.0)
        final = final.combine(raw_all, *weights)
        v_gram, v_moment = pooled
    if s.rescale_final:
        # Kept in the public range, so a user's fixed or bounded penalty holds.
        factor = final_penalty_factor(plan, v_moment)
        alpha = float(np.clip(alpha * factor, s.alpha_min, s.alpha_max))
    coef, intercept = final.centered().solve(alpha)
    return replace(_result(res, coef, intercept), alpha=alpha, signal_pvalue=pvalue)


def pooled_noise_variances(plan):
    """Noise variances per entry of the pooled (summed) parts' statistics.

    Parameters
    ----------
    plan : BilevelRidgePlan
        A sufficient-statistics plan.

    Returns
    -------
    gram_var, moment_var : float
        Per upper-triangle Gram entry and per moment entry.
    """
    rho = plan.stds.correlation
    parts = 2.0 * (1.0 + rho)  # two correlated releases summed
    gram = plan.stds.gram**2
    moment = plan.stds.moment**2
    return gram * (1.0 if plan.settings.shared_gram else parts), moment * parts


def signal_found(parts, plan):
    """Does the release show signal clearly enough to drop the margin?

    Runs the signal test (:mod:`.bilevel_ridge_signal`) on the pooled parts
    and checks that their Gram noise is not too large
    (:func:`gram_noise_ratio`). Post-processing of the release.

    Parameters
    ----------
    parts : list of RawStatistics
        The two released parts.
    plan : BilevelRidgePlan

    Returns
    -------
    found : bool
        The test rejects at ``signal_test_level`` and the Gram noise ratio is
        at most :data:`MAX_GRAM_NOISE_RATIO`.
    pvalue : float
        The test's p-value; NaN when the plan releases no ``y^T y`` (no
        test, or no noise).
    """
    if plan.stds.target_sq is None:
        return False, math.nan
    first, second = parts
    gram_var, moment_var = pooled_noise_variances(plan)
    pvalue = signal_test(
        first + second,
        moment_var=moment_var,
        gram_var=gram_var,
        target_sq_var=2.0 * plan.stds.target_sq**2,  # independent per part
    ).pvalue
    clear = gram_noise_ratio(parts, plan) <= MAX_GRAM_NOISE_RATIO
    return bool(pvalue < plan.settings.signal_test_level and clear), pvalue


def gram_noise_ratio(parts, plan):
    """Size of a part's Gram noise against its Gram matrix (post-processing).

    ``2 sqrt(p) s_G`` (about the spectral norm of a part's symmetric Gram
    noise, ``s_G`` per entry) over the mean eigenvalue of the part's released
    centred scatter, the larger over the parts. The released validation loss
    is corrected for the moment noise only; where this ratio exceeds
    :data:`MAX_GRAM_NOISE_RATIO`, the part models at small penalties are
    dominated by Gram noise the loss does not account for, and the margin
    stays even when the signal test finds signal (measured: on
    ``load_diabetes``, n = 331, the margin-free choice lost most of the
    signal at ``epsilon = 5``).

    Parameters
    ----------
    parts : list of RawStatistics
        The released parts.
    plan : BilevelRidgePlan

    Returns
    -------
    float
        ``inf`` if a part's scatter is zero.
    """
    std = plan.stds.gram
    n = sum(part.n_samples for part in parts)
    worst = 0.0
    for part in parts:
        centred = part.centered()
        # A shared Gram matrix reaches each part scaled by its share of rows.
        noise = std * (part.n_samples / n if plan.settings.shared_gram else 1.0)
        p = part.moment.size
        scale = float(np.trace(centred.scatter)) / max(centred.cross.size, 1)
        ratio = 2.0 * math.sqrt(p) * noise / scale if scale > 0 else math.inf
        worst = max(worst, ratio)
    return worst


def final_penalty_factor(plan, final_variance):
    """Factor from the tuned part-model penalty to the final model's.

    ``alpha`` is tuned for models fitted on one part (``n_fit`` rows: half
    of the rows with the two-fold objective, the training part otherwise),
    whose moment vector carries privacy noise of variance ``v`` per entry;
    the final model is fitted on all ``n`` rows, whose moment vector carries
    variance ``v_final`` (``2 (1 + rho) v`` for the pooled parts). For ridge
    with isotropic noise the optimal penalty (sum units) is
    ``d (sigma**2 + v / lambda_min) / ||theta||**2``-like: its statistical
    part ``d sigma**2 / ||theta||**2`` does not depend on the number of rows,
    its privacy part scales with ``v / n_rows`` (noise variance over the
    eigenvalues of the Gram matrix, which grow with the rows). The factor is
    the privacy part's, ``(v_final / n) / (v / n_fit)``: the regime in which
    the penalty matters, and ``1`` without noise. It is a public function of
    the plan (post-processing). With the defaults it is ``1 + rho``; the
    rescaled penalty is then clipped to ``[alpha_min, alpha_max]``. (With the
    shared Gram matrix, its noise is the same relative to the part models'
    and the final model's Gram matrices, so the moment noise sets the
    factor.)

    Parameters
    ----------
    plan : BilevelRidgePlan
    final_variance : float
        Noise variance per entry of the final model's moment vector.

    Returns
    -------
    float

    Examples
    --------
    >>> s = BilevelRidgeSettings(alpha_max=1e4)
    >>> plan = plan_bilevel_ridge(s, 500, 500, 3, 1.0)
    >>> pooled = 2.0 * (1.0 + s.correlation) * plan.stds.moment ** 2
    >>> round(final_penalty_factor(plan, pooled), 6)
    0.4
    """
    v = plan.stds.moment**2
    if v == 0.0 or final_variance == 0.0:
        return 1.0
    n = plan.n_train + plan.n_val
    n_fit = 0.5 * n if plan.settings.cross_validate else plan.n_train
    return (final_variance / n) / (v / n_fit)


def _centering(Xt, yt, plan, rng, parts):
    """Private training means of the rows and targets (clipped to the unit ball).

    One :func:`~skdp.privacy.private_row_mean` of the records ``[x, y]``
    (``||x|| <= 1``, ``|y| <= 1``, so norm at most ``sqrt(2)``: the
    ``sqrt((2A)**2 + (2B)**2)`` sensitivity of the planned release).
    """
    if not plan.settings.fit_intercept:
        return np.zeros(Xt.shape[1]), 0.0
    bound = math.sqrt(2.0)
    z = plan.stds.centering / (2.0 * bound)
    with parts.part(0):
        mean = private_row_mean(np.column_stack([Xt, yt]), bound, z, rng=rng)
    mean_x = clip_rows(mean[None, :-1], 1.0)[0]
    return mean_x, float(np.clip(mean[-1], -1.0, 1.0))


def _fit_output(Xt, yt, Xv, yv, plan, rng, parts):
    s = plan.settings
    n_tr, n_va = Xt.shape[0], Xv.shape[0]
    a, b = _data_bounds(s)
    mx, my = _centering(Xt, yt, plan, rng, parts)
    Xt_c, yt_c, Xv_c, yv_c = Xt - mx, yt - my, Xv - mx, yv - my
    # Exact (not released) per-part statistics of the centred rows.
    st, ct = Xt_c.T @ Xt_c, Xt_c.T @ yt_c
    sv, cv = Xv_c.T @ Xv_c, Xv_c.T @ yv_c
    z = plan.stds.multiplier

    def noise_stds(u):
        omega = math.exp(u[0]) / n_tr
        lam = default_penalty(s, omega)
        low = output_sensitivities({"train": (1.0 / n_tr, n_tr)}, omega, a, b)
        pen = output_sensitivities(
            {"train": (1.0 / n_tr, n_tr), "val": (1.0 / (lam * n_va), n_va)},
            omega,
            a,
            b,
        )
        return omega, lam, z * low["train"], z * max(pen.values()), low, pen

    def solve(u):
        omega, lam, std_low, std_pen, low, pen = noise_stds(u)
        w_low = perturbed_ridge(
            st / n_tr,
            ct / n_tr,
            omega,
            std_low,
            rng,
            sensitivity=parts.sensitivities({0: low["train"]}),
        )
        # The noise follows the larger of the two parts' sensitivities,
        # which bounds both (the plan's multiplier z for each part).
        worst = max(pen.values())
        w_pen = perturbed_ridge(
            st / n_tr + sv / (lam * n_va),
            ct / n_tr + cv / (lam * n_va),
            omega,
            std_pen,
            rng,
            sensitivity=parts.sensitivities({0: worst, 1: worst}),
        )
        return w_low, w_pen

    res = _tune(plan, rng, solve, parts)
    alpha = float(np.exp(res.x[0]))
    # Post-processing of the released model with its public noise level:
    # James-Stein shrinkage, then projection on the public ball that holds
    # the exact minimizer (both bound the damage where the noise dominates).
    std_low = noise_stds(res.x)[2]
    coef = project_on_ball(
        shrink_noisy(res.y_lower, std_low), ridge_ball_radius(1.0, alpha / n_tr, b)
    )
    if s.refit_share > 0:
        n = n_tr + n_va
        omega = alpha / n
        sens = output_sensitivities({"all": (1.0 / n, n)}, omega, a, b)["all"]
        std = plan.stds.refit_multiplier * sens
        coef = perturbed_ridge(
            (st + sv) / n, (ct + cv) / n, omega, std, rng, sensitivity=sens
        )
        coef = project_on_ball(
            shrink_noisy(coef, std), ridge_ball_radius(1.0, omega, b)
        )
    return _result(res, coef, my - mx @ coef)


def _ridge_oracles(Xt_c, yt_c, Xv_c, yv_c, outer_noise):
    """Per-record gradients of the squared loss on centred rows (u = log alpha)."""
    n_tr = Xt_c.shape[0]

    def grad_y(Xp, yp):
        return lambda u, w, idx: (Xp[idx] @ w - yp[idx])[:, None] * Xp[idx]

    def lower_reg(u, w):
        omega = math.exp(u[0]) / n_tr
        gx = np.zeros(1) if outer_noise else np.array([omega * _ridge_norm(w)])
        return gx, omega * w

    lower_grad_x = None
    if outer_noise:

        def lower_grad_x(u, w, idx):
            omega = math.exp(u[0]) / n_tr
            count = np.arange(n_tr)[idx].size
            return np.full((count, 1), omega * _ridge_norm(w))

    return BilevelOracles(
        n_upper=Xv_c.shape[0],
        n_lower=n_tr,
        shared=False,
        upper_grad_y=grad_y(Xv_c, yv_c),
        lower_grad_y=grad_y(Xt_c, yt_c),
        lower_grad_x=lower_grad_x,
        lower_regularizer=lower_reg,
    )


def _loc_gd_settings(s, n_tr, n_features, noise_std):
    """Public DP-Loc-GD settings at the current (public) ``u``."""
    a, b = _data_bounds(s)

    def settings(u):
        omega = math.exp(u[0]) / n_tr
        radius = b * math.sqrt(2.0 / omega)  # ridge ball of f / lam + g
        radii = localization_radii(
            2.0 * radius,
            n_rounds=s.inner_rounds,
            n_steps=s.inner_steps,
            noise_std=noise_std,
            gradient_bound=loc_gd_clip(s) + omega * radius,
            strong_convexity=omega,
            n_features=n_features,
            smoothness=a * a + omega,
        )
        return InnerSettings(tuple(radii), s.inner_steps, omega, a * a + omega)

    return settings


def _fit_loc_gd(Xt, yt, Xv, yv, plan, rng, parts):
    s = plan.settings
    n_tr, n_va = Xt.shape[0], Xv.shape[0]
    d = Xt.shape[1]
    mx, my = _centering(Xt, yt, plan, rng, parts)
    Xt_c, yt_c, Xv_c, yv_c = Xt - mx, yt - my, Xv - mx, yv - my
    design = loc_gd_design(s, n_tr, n_va)
    noise = plan.stds.loc_gd or calibrate_bilevel_noise(design, None, None, mu=math.inf)
    clip = loc_gd_clip(s)
    res = dp_bilevel(
        _ridge_oracles(Xt_c, yt_c, Xv_c, yv_c, s.outer_noise),
        np.array([math.log(s.start)]),
        np.zeros(d),
        penalty=design.penalty,
        n_iter=s.n_iter,
        step_size=s.step_size,
        project=_project(s),
        inner=_loc_gd_settings(s, n_tr, d, max(noise.lower_std, noise.penalized_std)),
        clip_upper=clip,
        clip_lower=clip,
        clip_outer=s.outer_clip,
        noise=noise,
        rng=rng,
        adaptive=s.adaptive,
        # The design's upper part is the validation rows, its lower part the
        # training rows (the plan's parts 1 and 0).
        ledger_parts=(parts, {"upper": 1, "lower": 0}),
    )
    alpha = float(np.exp(res.x[0]))
    coef = res.y_lower
    if s.refit_share > 0:
        X_all, y_all = np.vstack([Xt_c, Xv_c]), np.r_[yt_c, yv_c]
        n = X_all.shape[0]
        omega = alpha / n
        a, b = _data_bounds(s)
        radius = b * math.sqrt(1.0 / omega)

        def grad(w):
            g = clipped_sum((X_all @ w - y_all)[:, None] * X_all, clip)
            return g / n + omega * w

        radii = localization_radii(
            2.0 * radius,
            n_rounds=s.inner_rounds,
            n_steps=s.inner_steps,
            noise_std=plan.stds.refit_std,
            gradient_bound=clip + omega * radius,
            strong_convexity=omega,
            n_features=d,
            smoothness=a * a + omega,
        )
        coef = localized_noisy_gd(
            grad,
            coef,
            radii=radii,
            n_steps=s.inner_steps,
            noise_std=plan.stds.refit_std,
            strong_convexity=omega,
            smoothness=a * a + omega,
            rng=rng,
            sensitivity=2.0 * clip / n,
        )
    return _result(res, coef, my - mx @ coef)
