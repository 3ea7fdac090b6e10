"""BilevelRidge: private ridge regression with a privately tuned penalty."""

import math
import warnings
from dataclasses import replace
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import PrivateEstimatorMixin
from ..privacy import (
    Budget,
    ComposedDpEvent,
    private_norm_bound,
    private_norm_bound_event,
)
from ..solvers._distributed import (
    as_dask_xy,
    clipped_statistics,
    is_dask_collection,
    lazy_decision,
    reject_dask,
)
from ..solvers.bilevel.ridge.gd_defaults import default_ridge_gd_plan, ridge_gd_in_units
from ..solvers.bilevel.ridge.risk import (
    plan_risk_estimate,
    release_exact,
    risk_estimate_from_release,
    risk_estimate_ridge,
)
from ..solvers.bilevel.ridge.stats import RawStatistics
from ..solvers.bilevel.ridge.tuning import (
    INNER_SOLVERS,
    BilevelRidgeSettings,
    bilevel_ridge,
    bilevel_ridge_from_statistics,
    plan_bilevel_ridge,
)
from ..utils import clip_rows, clip_targets
from ..utils._scale_checks import warn_if_unscaled
from ..utils._sparse import (
    augmented_gram,
    check_gram_size,
    clip_rows_any,
    is_sparse,
    reject_sparse,
    row_norms,
)
from ..utils._validation import (
    resolve_delta,
    validate_data,  # errors quote no data
)
from ._dask_fit import (
    check_budget_before_pass,
    dask_rows_for_one_pass,
    validate_dask_rows,
)

__all__ = ["BilevelRidge"]

# Private bound estimation: the public search range and the target quantile.
_BOUND_QUANTILE = 0.95
_BOUND_RANGE = (1e-6, 1e6)
# Smallest ``n * epsilon`` of one private bound. Chosen for the exponential-
# mechanism quantile these bounds used before the norm bounds merged (below it
# its weight on the empty log-range around the data could make the bound,
# hence the noise, blow up; measured on load_diabetes); kept for the Gaussian
# bisection, whose committed numbers it fixes (issue 19: one allowed change).
_BOUND_MIN_N_EPSILON = 64.0
_BOUND_MAX_SHARE = 0.5
#: The small-n floor is capped at _BOUND_MAX_SHARE of mu**2 when it would
#: take at least this share of mu**2 (the bounds' Gaussian counts would then
#: leave nothing, or almost nothing, for the fit).
_BOUND_FLOOR_CAP = 0.99
#: Deprecated inner solvers and the measured reason (a public parameter: the
#: warning reveals nothing about the data).
_RETIRED_SOLVERS = {
    "loc_gd": (
        "its 2 max_iter inner solves of inner_rounds * inner_max_iter noisy "
        "steps (40,000 with the defaults) share the budget, so each mean "
        "gradient carries about 40 times the noise of one 100-step DP-GD run "
        "at the same clip norm, which the penalized problem's lambda "
        "multiplies again"
    ),
    "output_perturbation": (
        "the sensitivity of an exact ridge solution grows like 1 / omega**2 "
        "(the public Lipschitz bound grows with the ball radius ~ 1 / omega), "
        "so its released models carry noise orders of magnitude above the "
        "signal except at very large penalties, and 2 max_iter of them share "
        "the budget"
    ),
}


class BilevelRidge(PrivateEstimatorMixin, RegressorMixin, BaseEstimator):
    """Differentially private ridge regression with a privately tuned penalty.

    The penalty is tuned privately as a bilevel problem: the upper level
    minimizes a private estimate of the out-of-sample risk over the penalty,
    the lower level fits the ridge model (mean squared loss ``/ 2`` plus
    ``omega / 2 ||coef||**2``, intercept unpenalized).

    **Default** (``inner_solver="gd"``, ``tuning="risk_estimate"``): the
    lower level is clipped full-batch DP gradient descent on all rows, the
    solver of :class:`~skdp.HeavyTailedLinearRegression` (private scales,
    per-sample clipping at private adaptive levels, exact GDP accounting), and
    the upper level a plug-in risk estimate: the first half of the steps runs
    without penalty, and the second half at the penalty that minimizes the
    prediction risk of a ridge model given the first model's noise level
    (from its iterates and the public noise of the steps) and its
    James-Stein signal. The tuning is post-processing: no split, no grid, no
    extra privacy cost. Chosen by measurement against the best private linear
    regressors a user could pick instead
    (study at f9c3d36: ``python -m benchmarks.bilevel_ridge.vs_baselines``).

    **The paper's algorithm** (Kornowski, Sec. 7) is
    ``inner_solver="sufficient_statistics"`` with ``tuning="bilevel"``: a
    public random split into two parts, and projected descent on
    ``log(alpha)`` driven by the first-order hypergradient estimate
    ``lambda (R(theta^lambda) - R(theta))``, ``R(theta) = ||coef||**2 / 2``,
    computed from private inner solutions (the paper's printed update has the
    wrong sign; this is the corrected *descent* step). The upper level is
    two-fold: the model trained on each part is validated on the other. Every
    inner problem, the outer loop and the final model are post-processing of
    one private release of sufficient statistics.

    The outer variable of the bilevel loop is ``log(alpha)``: the update is
    ``log alpha <- clip(log alpha - eta_t * alpha d F / d alpha, log alpha_min,
    log alpha_max)``, the paper's projected step on the reparametrized
    problem (a good penalty ranges over orders of magnitude, which a step on
    ``alpha`` itself cannot traverse with one step size).

    Neighbouring datasets differ by replacing one record; ``n`` is public.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget; ``np.inf`` runs the same code without noise (clipping
        and bounds still apply).
    delta : float, default=None
        ``None`` uses ``n ** -1.1`` (stored in ``delta_``).
    feature_norm : float, default=None
        Public bound on the Euclidean norm of a row of ``X``; larger rows are
        scaled down to it. ``None`` estimates a quantile of the row norms
        privately (:func:`~skdp.privacy.private_norm_bound`, Gaussian) from
        ``estimation_share`` of the budget, searched in ``[1e-6, 1e6]``:
        the 95% quantile, or a lower one (down to the median) when
        ``n * epsilon`` is too small for the 95% quantile to be estimated
        reliably. Passing a public bound is better, and **needed for good
        accuracy at small** ``n`` (a few hundred rows): there the private
        bounds take a large share of the budget and clip a lot (measured on
        ``load_diabetes``; study at f9c3d36:
        ``python -m benchmarks.bilevel_ridge.main``).
    target_bound : float, default=None
        Public bound on ``|y|``; targets are clipped to ``[-B, B]``. ``None``
        estimates a quantile of ``|y|`` privately, as above.
    estimation_share : float, default=0.1
        Share of the budget (of ``mu**2`` in GDP units, the same name and
        unit in every skdp estimator) spent on estimating public quantities:
        the bounds estimated privately (half of it each when both are; a
        pure-DP quantile with share ``s`` gets ``epsilon = mu sqrt(s)``, the
        same zCDP cost), and with ``inner_solver="gd"`` the solver's private
        scales and clip levels. Raised for small ``n`` so that each
        bound gets ``n * epsilon_bound >= 64`` (at most half of ``epsilon``
        in total): with less, the estimate lands far above the data with a
        non-negligible probability, and the noise (which grows with the
        bounds) blows up. Ignored when both bounds are given.
    bounds_epsilon_share : float, default="deprecated"
        Deprecated old name of ``estimation_share`` (renamed in 0.2, removed
        in 0.3); its value is now read as a share of ``mu**2``, not of
        ``epsilon``.
    fit_intercept : bool, default=True
        Fit an unpenalized intercept, as scikit-learn's ``Ridge`` does.
        Centring is not free under DP: with ``"sufficient_statistics"`` the
        released statistics include a public constant column (value
        ``feature_norm``), so the means come out of the same release; the other
        inner solvers release the training means privately (5% of the
        budget, in GDP ``mu**2``) and centre both parts at them.
    alpha_min, alpha_max : float, default=None
        Public range of the penalty, in **scikit-learn units**: ``alpha`` of
        ``Ridge(alpha)``, the penalty on the *sum* of squared errors over the
        rows it is fitted on. The paper's weight on the mean training loss is
        ``omega = alpha / n_train``. Defaults: ``1e-3 * feature_norm**2`` and
        ``10 * n_train * feature_norm**2`` (beyond which the model is ~0),
        widened if needed to contain a given other end. With
        ``inner_solver="gd"`` they clip the plug-in penalty of
        ``tuning="risk_estimate"`` (no defaults: unbounded) and are not used
        by ``tuning="path"``, whose penalties are a fixed public grid.
    alpha_init : float, default=None
        Start of the outer loop; default the geometric middle of the range.
    validation_fraction : float, default=0.5
        Size of the public, random validation part (drawn from
        ``random_state``, independently of the data). With
        ``"sufficient_statistics"`` the final model still uses all rows, and
        with ``cross_validate`` both parts are validation parts, and equal
        halves weigh both directions alike. The fraction was not tuned by
        measurement.
    inner_solver : {"gd", "sufficient_statistics", "output_perturbation", \
            "loc_gd"}, default="gd"
        How the inner ridge problems are solved privately:

        - ``"gd"``: clipped full-batch DP gradient descent on all rows, the
          solver of :class:`~skdp.HeavyTailedLinearRegression` (private
          feature and target scales, Algorithm 4's truncation, per-sample
          gradients clipped at private adaptive levels, exact GDP
          accounting), ``inner_max_iter`` steps with the ridge penalty
          (intercept unpenalized) in the proximal step. Needs no bounds;
          ``feature_norm`` and ``target_bound``, if given, clip; where ``n``
          is too small for this budget to estimate the scales privately
          (a few hundred rows at ``delta = 1e-6``), they also set the units
          (rows scaled to norm ``sqrt(n_features)``, targets to
          ``|y| <= 3``), since standardized data is then assumed.
          With ``tuning="risk_estimate"`` (recommended) the first half of
          the steps runs without penalty; the penalty of the second half
          minimizes a plug-in prediction risk of that first model (noise
          level from its iterates and the public noise of the steps,
          signal by James-Stein), so tuning costs no privacy. With
          ``fit_intercept`` a last release (5% of the budget) corrects the
          intercept by the clipped mean of the residuals, which the heavily
          clipped steps get wrong when the noise is skewed. With
          ``tuning="path"`` one run walks down a public penalty path and a
          private release of clipped in-sample loss differences (10% of
          the budget) selects a stage, keeping the least penalized unless
          another is better by 2 noise standard deviations (study at
          f9c3d36: ``python -m benchmarks.bilevel_ridge.vs_baselines``).

        - ``"sufficient_statistics"``: each part releases its Gram matrix and
          moment vector once, with the whole budget (the parts are disjoint,
          so parallel composition applies). All inner solves, the outer loop
          and the final model are then closed-form post-processing. The noisy
          Gram matrix is projected on the PSD cone, so every inner problem is
          ``omega``-strongly convex for any ``omega > 0``; without the
          projection ``alpha_min`` would have to exceed the noise level of the
          released ``X^T X`` (stored in ``noise_level_``).
        - ``"output_perturbation"``: every inner solve is an exact ridge
          solution plus Gaussian noise calibrated to its replace-one
          sensitivity (Chaudhuri et al. 2011); ``2 max_iter`` solves share
          the budget. The returned model is shrunk (James-Stein, with its
          public noise level) and projected on the public ball that holds
          every ridge solution (post-processing).
        - ``"loc_gd"``: the paper's DP-Loc-GD (Alg. 2), ``inner_rounds``
          rounds of ``inner_max_iter`` noisy projected gradient steps with
          per-record clipping, noise calibrated to the steps actually run.

        ``"output_perturbation"`` and ``"loc_gd"`` are **deprecated** (a
        ``FutureWarning`` at fit gives the measured reason). They are there
        for comparison with the paper and are **not** recommended: in a study
        at n = 1e4, d = 20 (``python -m benchmarks.bilevel_ridge.main`` at
        f9c3d36) their mean excess
        risk is 79 to 38,000 times the sufficient statistics', because each
        of their many releases gets a small share of the budget and the
        output-perturbation sensitivity grows like ``1 / omega**2``
        (study at f9c3d36: ``python -m benchmarks.bilevel_ridge.inner_noise``);
        single fits
        can have a strongly negative R^2.
    tuning : {"bilevel", "risk_estimate", "path"} or None, default=None
        Upper level of the tuning problem; ``None``: ``"risk_estimate"``
        with ``inner_solver="gd"``, ``"bilevel"`` otherwise. With
        ``inner_solver="gd"``: ``"risk_estimate"`` or ``"path"`` (see
        ``inner_solver``; the parameters of the other solvers do not apply).
        Otherwise:

        - ``"bilevel"``: the paper's bilevel optimization on a held-out
          validation loss (the parameters above and below).
        - ``"risk_estimate"``: no split. All rows release their statistics
          once (``"sufficient_statistics"`` only), and the penalty minimizes
          Mallows' Cp of the released ridge path, corrected for the privacy
          noise (:mod:`skdp.solvers.bilevel.ridge.risk`); the signal test
          decides a margin as above. Everything after the release is
          post-processing. It relies on a linear model with homoscedastic
          noise, which a held-out loss does not, and it is not the paper's
          algorithm. Measured against ``"bilevel"`` (study at f9c3d36:
          ``python -m benchmarks.bilevel_ridge.risk_estimate``): at
          ``epsilon = 1``, ``n >= 1e4``, 0.74-0.94 times its excess risk on
          synthetic linear data (0.99-1.17 times the hindsight oracle's) and
          0.37-0.48 times where there is no signal; on ``load_diabetes``
          1.03 times its test MSE at ``epsilon = 1``, 0.95 at 5.
          ``validation_fraction``, ``max_iter``, ``step_size``,
          ``adaptive_step``, ``penalty``, ``noise_correlation``,
          ``cross_validate`` and ``alpha_init`` do not apply.
    max_iter : int, default=100
        Outer iterations ``T``.
    step_size : float, default=1.0
        Outer step on ``log(alpha)``: the first step of the adaptive rule, or
        the constant step if ``adaptive_step=False``.
    adaptive_step : bool, default=True
        Use an adaptive step (a function of the private hypergradients only,
        so post-processing) instead of the paper's constant step. With
        ``"sufficient_statistics"`` the rule is sign-based (Rprop: the step
        grows by 1.2 while the hypergradient keeps its sign, up to 2, and
        halves when it flips): the hypergradient on ``log(alpha)`` varies by
        orders of magnitude along the path, and the scale-dependent
        AdaGrad-norm rule stalled far from the minimizer after the first
        large gradients. The noisy inner solvers use AdaGrad-norm
        (``eta_t = step_size / sqrt(sum_s g_s**2)``), which damps their noise.
    penalty : float, default=None
        ``lambda`` of the penalized inner problem ``f / lambda + g``. Default:
        large (``1e4 (1 + 2 / omega)``) for exact statistics, ``100`` for
        the noisy inner solvers (whose noise ``lambda`` multiplies).
    outer_noise : bool, default=False
        Add the paper's Gaussian noise to the outer hypergradient. For ridge
        the outer step reads the data only through the private inner
        solutions, so it is post-processing and needs no noise; ``True``
        reproduces Alg. 1 literally and spends a third of the budget on it
        (the hypergradient is clipped to 1 in normalized units).
    refit_share : float, default=0.0
        Share of the budget (GDP ``mu**2``) reserved for the final model on
        all rows. ``0`` (default): the final model is free post-processing.
        With ``"sufficient_statistics"`` it is the ridge solution at
        ``alpha_`` on the pooled training and validation statistics, i.e. on
        all rows (``alpha_`` is the tuned penalty rescaled for them, see
        ``alpha_``); with the other solvers it is the private training model at
        ``alpha_``. With ``refit_share > 0``, statistics of all rows are
        released again and combined with the pooled ones by inverse variance
        (or, for the other solvers, a fresh private solve on all rows).
    noise_correlation : float, default=-0.6
        Correlation ``rho`` in ``(-1, 0]`` between the noises of the two
        parts' statistics (``"sufficient_statistics"`` only). A record lies in
        one part, and the release is exactly as private as with independent
        noise of standard deviation ``sigma sqrt(1 - rho**2)`` (``sigma`` the
        marginal one). A negative ``rho`` makes the pooled statistics, hence
        the final model, more accurate (noise variance ``2 / (1 - rho)``
        times a single full-data release's instead of ``2``), at the price of
        noisier parts for tuning. The bias this correlation adds to the
        released validation loss is removed exactly (see Notes). In the
        design ablation (study at f9c3d36:
        ``python -m benchmarks.bilevel_ridge.main --design``) -0.6 and -0.7 are
        level (mean 1.57 and 1.56 times the oracle) and -0.5 is worse
        (1.64); -0.8 lowers the release's floor but raises the excess risk
        where the choice of penalty is the limit
        (study at f9c3d36: ``python -m benchmarks.bilevel_ridge.frontier``).
    cross_validate : bool, default=True
        ``"sufficient_statistics"`` only: the upper-level objective is the
        two-fold validation loss (the model trained on each part scored on
        the other, weighted by part size); the lower level is the pair of
        part models. ``False``: the paper's single split (train on the first
        part, validate on the second). Two-fold halves the relative noise of
        the tuning signal at no privacy cost (post-processing).
    validation_margin : float, default=1.5
        ``"sufficient_statistics"`` only: the outer loop minimizes the
        released validation loss, corrected for the noise correlation, plus
        ``validation_margin`` standard deviations of its noise-times-noise
        term (an upper confidence bound, a public function of ``alpha``; see
        Notes), unless the signal test (``signal_test_level``) finds signal.
        ``0`` trusts the noisy loss fully, which where the data hold no
        detectable signal picks penalties where the models are mostly noise
        (a too small penalty costs far more than a too large one, which
        costs at most the constant model's risk). With
        ``tuning="risk_estimate"``: standard deviations of the risk
        estimate's noise, added on the same condition.
    signal_test_level : float or None, default=0.001
        ``"sufficient_statistics"`` only: level of a chi-square test of "the
        target does not depend on the features" on the pooled release (post-
        processing, plus each part's sum of squared targets, released with 1%
        of the statistics budget). If the test rejects, the outer loop trusts
        the corrected validation loss (no margin); otherwise it adds
        ``validation_margin``. The margin guards against noise dips where
        there is nothing to find, and costs accuracy where there is
        (study at f9c3d36: ``python -m benchmarks.bilevel_ridge.main --design``).
        The margin also
        stays where the released Gram matrices are dominated by their
        noise (a public ratio of the noise level to the mean eigenvalue
        above 1.5, e.g. a few hundred rows), since the corrected loss does
        not account for Gram noise. ``None`` always uses the margin. With
        ``tuning="risk_estimate"`` the test runs on the one release of all
        rows (its ``y^T y`` takes 1% of the budget).
    inner_max_iter : int, default=100
        Steps per localization round of ``"loc_gd"``; gradient steps of
        ``"gd"`` (noise calibrated to them).
    inner_rounds : int, default=2
        Localization rounds of ``"loc_gd"``.
    verbose : int, default=0
        Print the fit's phases (records, plan, solver stages, privacy spent)
        when positive; ``2`` also prints the privacy plan. Only public
        quantities are printed, never anything computed from the data.
    accountant : PrivacyAccountant, default=None
        Shared budget to spend from (kept across ``clone``).
    random_state : int, Generator or None, default=None
        Seed of the split, the bound estimation and all noise. Keep it secret: a
        published seed lets anyone subtract the noise. With a shared
        ``accountant``, each fit on its ledger draws from its own stream (folds
        of a cross-validation do not share noise).

    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
        Coefficients (original units).
    intercept_ : float
    alpha_ : float
        Penalty of the returned model in scikit-learn units (the penalty of
        ``Ridge(alpha_)``, same units as ``alpha_min``/``alpha_max``). With
        ``"sufficient_statistics"`` and noise it is the tuned penalty
        (``alpha_path_[output_iteration_]``) times ``(v_final / n) /
        (v_part / n_part)``, the change of the privacy part of the best
        penalty from a part's statistics (noise variance ``v_part`` per entry,
        ``n_part`` rows) to the final ones (``1 + noise_correlation`` with the
        defaults), clipped to ``[alpha_min, alpha_max]``; otherwise the tuned
        penalty.
    alpha_path_ : ndarray of shape (max_iter + 1,)
        Penalties visited by the outer loop for the part models
        (scikit-learn units); ``[alpha_]`` with ``tuning="risk_estimate"``.
    n_iter_ : int
        Outer iterations run (``max_iter``; the noise is calibrated to them);
        ``1`` with ``tuning="risk_estimate"`` (one pass over its penalty grid).
    output_iteration_ : int
        Index ``t_out`` of the returned iterate: the one with the smallest
        step ``|log alpha_{t+1} - log alpha_t|`` (the paper's output rule).
    feature_norm_, target_bound_ : float
        Bounds used (given, or privately estimated).
    noise_level_ : float
        Standard deviation of the noise on each entry of the released
        Gram matrices, in scikit-learn units (``0`` without noise or for the
        other solvers).
    signal_pvalue_ : float
        p-value of the signal test (see ``signal_test_level``); below the
        level, the outer loop ran without margin. NaN when the test is not
        run (other solvers, ``signal_test_level=None``, no noise).
    delta_ : float
    privacy_spent_ : tuple of (float, float)
        Certified ``(epsilon, delta_)`` of the whole fit.
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined when ``X`` has string column names.

    Notes
    -----
    ``inner_solver="gd"`` (default): ``alpha_ = n omega`` with ``omega`` the
    penalty of the returned model's stage on the mean loss; with
    ``epsilon=np.inf`` the plug-in rule reads the residual scale from the
    residuals (nothing is clipped, so no clip level gives it), which puts
    ``alpha_`` near ``RidgeCV``'s, and the model is
    ``Ridge(alpha=alpha_).fit(X, y)`` once
    gradient descent has converged (``inner_max_iter`` steps; true on
    well-conditioned data, not e.g. on ``load_diabetes``'s correlated
    columns). ``alpha_path_`` holds the stages' penalties,
    ``feature_norm_``/``target_bound_`` the given bounds (NaN if none),
    ``noise_level_`` is 0 and ``signal_pvalue_`` NaN.

    ``inner_solver="sufficient_statistics"``, ``tuning="bilevel"``. Lower
    level: each part's model minimizes its mean squared loss ``/ 2``
    plus ``omega / 2 ||coef||**2``, ``omega = alpha / n_part``; the intercept
    is not penalized. Upper level: the two-fold validation
    loss ``F(alpha)`` computed from the released statistics, plus a public
    correction. Two facts about the released loss drive the correction
    (derivations in :mod:`skdp.solvers.bilevel.ridge.validation`):

    - with correlated noise (``noise_correlation < 0``) a part's model and the
      other part's statistics share noise, which biases the released
      validation loss upward by ``-rho s**2 tr(K(alpha))`` (``s`` the moment
      noise, ``K`` a sum of the parts' inverse regularized Gram matrices). The
      bias is largest at small ``alpha``; uncorrected it pushed ``alpha_``
      10-200 times too high at ``n = 1e5``. It is subtracted exactly;
    - the noise-times-noise term keeps a standard deviation
      ``s**2 sqrt((1 + rho**2) tr(K**2))``; ``validation_margin`` of it is
      added, so ``alpha`` moves below the region where the part models are
      mostly noise only on clear evidence, unless a chi-square test on the
      pooled statistics finds that the target depends on the features
      (``signal_test_level``; :mod:`skdp.solvers.bilevel.ridge.signal`).
      Without signal the loss has only noise dips to offer; with signal,
      the margin mostly costs accuracy.

    The derivative of the correction enters the outer step as the paper's
    ``grad_x f`` term; the rest of the step is the F2BA estimate. At
    ``epsilon=np.inf`` both vanish (and so does the rescaling of the final
    penalty), ``alpha_`` is the minimizer of the two-fold
    validation loss and ``coef_``/``intercept_`` equal
    ``Ridge(alpha=alpha_).fit(X, y)`` (bounds that clip nothing). With
    privacy noise the tuned penalty errs on the side of more regularization:
    the margin is conservative, and the part models (half the rows each)
    are noisier per row than the final model on all rows.
    The second effect is undone for the final model: for ridge with noisy
    statistics the best penalty is a statistical part that does not depend
    on the number of rows plus a privacy part proportional to the noise
    variance divided by the number of rows, which for the pooled statistics is ``1 + rho``
    times a part's; the final penalty is the tuned one times that factor
    (the privacy-dominated limit, where the penalty matters most; the study
    ``python -m benchmarks.bilevel_ridge.main`` at f9c3d36 measured ratios to
    the best fixed penalty chosen in hindsight). Predictions add no noise.
    ``sample_weight`` is not supported.

    References
    ----------
    Kornowski, "Differentially Private Bilevel Optimization" (Sec. 7, with
    the sign of the update corrected). Chaudhuri, Monteleoni and Sarwate,
    "Differentially private empirical risk minimization", JMLR 2011.
    Sheffet, "Private approximations of the 2nd-moment matrix using existing
    techniques in linear regression", 2015. Wang, "Revisiting differentially
    private linear regression", NeurIPS 2018.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import BilevelRidge
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(20000, 5))
    >>> y = X @ np.ones(5) + 2.0 + rng.normal(size=20000)
    >>> model = BilevelRidge(epsilon=1.0, feature_norm=5.0, target_bound=10.0,
    ...                      random_state=0).fit(X, y)
    >>> bool(model.score(X, y) > 0.8)  # non-private Ridge: 0.83
    True
    >>> bool(model.privacy_spent_[0] <= 1.0)
    True
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "feature_norm": [Interval(Real, 0, None, closed="neither"), None],
        "target_bound": [Interval(Real, 0, None, closed="neither"), None],
        "estimation_share": [Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
        "bounds_epsilon_share": [
            Interval(Real, 0, 1, closed="neither"),
            Hidden(StrOptions({"deprecated"})),
        ],
        "fit_intercept": ["boolean"],
        "alpha_min": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_max": [Interval(Real, 0, None, closed="neither"), None],
        "alpha_init": [Interval(Real, 0, None, closed="neither"), None],
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "inner_solver": [StrOptions(set(INNER_SOLVERS) | {"gd"})],
        "tuning": [StrOptions({"bilevel", "risk_estimate", "path"}), None],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither")],
        "adaptive_step": ["boolean"],
        "penalty": [Interval(Real, 0, None, closed="neither"), None],
        "outer_noise": ["boolean"],
        "refit_share": [Interval(Real, 0, 1, closed="left")],
        "noise_correlation": [Interval(Real, -1, 0, closed="right")],
        "cross_validate": ["boolean"],
        "validation_margin": [Interval(Real, 0, None, closed="left")],
        "signal_test_level": [Interval(Real, 0, 1, closed="neither"), None],
        "inner_max_iter": [Interval(Integral, 1, None, closed="left")],
        "inner_rounds": [Interval(Integral, 1, None, closed="left")],
    }
    _renamed_parameters = {"bounds_epsilon_share": "estimation_share"}

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=None,
        feature_norm=None,
        target_bound=None,
        estimation_share=0.1,
        bounds_epsilon_share="deprecated",
        fit_intercept=True,
        alpha_min=None,
        alpha_max=None,
        alpha_init=None,
        validation_fraction=0.5,
        inner_solver="gd",
        tuning=None,
        max_iter=100,
        step_size=1.0,
        adaptive_step=True,
        penalty=None,
        outer_noise=False,
        refit_share=0.0,
        noise_correlation=-0.6,
        cross_validate=True,
        validation_margin=1.5,
        signal_test_level=0.001,
        inner_max_iter=100,
        inner_rounds=2,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.feature_norm = feature_norm
        self.target_bound = target_bound
        self.estimation_share = estimation_share
        self.bounds_epsilon_share = bounds_epsilon_share
        self.fit_intercept = fit_intercept
        self.alpha_min = alpha_min
        self.alpha_max = alpha_max
        self.alpha_init = alpha_init
        self.validation_fraction = validation_fraction
        self.inner_solver = inner_solver
        self.tuning = tuning
        self.max_iter = max_iter
        self.step_size = step_size
        self.adaptive_step = adaptive_step
        self.penalty = penalty
        self.outer_noise = outer_noise
        self.refit_share = refit_share
        self.noise_correlation = noise_correlation
        self.cross_validate = cross_validate
        self.validation_margin = validation_margin
        self.signal_test_level = signal_test_level
        self.inner_max_iter = inner_max_iter
        self.inner_rounds = inner_rounds
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        # CSR/CSC input: the gd and sufficient-statistics solvers
        tags.input_tags.sparse = self.inner_solver not in _RETIRED_SOLVERS
        return tags

    # -- fit ----------------------------------------------------------------
    def _tuning(self):
        """``tuning``, with ``None`` resolved: ``"risk_estimate"`` for the
        ``"gd"`` inner solver, ``"bilevel"`` for the others."""
        if self.tuning is not None:
            return self.tuning
        return "risk_estimate" if self.inner_solver == "gd" else "bilevel"

    def _split_sizes(self, n):
        n_val = min(n - 1, max(1, int(round(self.validation_fraction * n))))
        return n - n_val, n_val

    def _bound_epsilons(self, n, delta=None):
        """Pure-DP budget of each privately estimated bound.

        ``estimation_share`` of ``mu**2`` split over the missing bounds (a
        pure step gets ``epsilon_b = mu sqrt(share / k)``: its zCDP cost
        ``epsilon_b**2 / 2`` is that share of the GDP budget's ``mu**2 / 2``),
        raised to ``64 / n`` each when ``n`` is small (at most half of
        ``epsilon`` in total; at most half of ``mu**2`` where that floor
        would take 99% of it or more): a public function of ``n``,
        ``epsilon`` and ``delta``.
        """
        missing = [b is None for b in (self.feature_norm, self.target_bound)]
        k = sum(missing)
        if k == 0:
            return 0.0, 0.0
        if delta is None:
            delta = resolve_delta(self.delta, n, self.epsilon)
        budget = Budget.from_target(self.epsilon, delta, margin=False)
        share_mu = budget.share(self._estimation_share(), k).mu
        floor = min(_BOUND_MAX_SHARE * self.epsilon / k, _BOUND_MIN_N_EPSILON / n)
        each = max(share_mu, floor)
        if not budget.is_infinite and k * each**2 >= _BOUND_FLOOR_CAP * budget.mu**2:
            # Each bound is ``each``-GDP (a Gaussian bisection, no longer a
            # pure-DP quantile): at a small delta the floor, written in units
            # of epsilon, can leave nothing for the fit (no noise would meet
            # the target). It then takes half of mu**2 (public arithmetic);
            # where it leaves room it is unchanged.
            cap = budget.share(_BOUND_MAX_SHARE, k).mu
            each = max(share_mu, cap)
        return tuple(each if m else 0.0 for m in missing)

    def _settings(self, n_train, feature_norm):
        """Public solver settings in normalized units (features / feature_norm).

        A default end of the penalty range never crosses a given one, so only
        an inconsistent pair given by the user is an error (raised before
        any data is used).
        """
        a2 = feature_norm**2
        alpha_min = None if self.alpha_min is None else self.alpha_min / a2
        alpha_max = None if self.alpha_max is None else self.alpha_max / a2
        if alpha_max is None:
            alpha_max = max(10.0 * n_train, alpha_min or 0.0)
        if alpha_min is None:
            alpha_min = min(1e-3, alpha_max)
        alpha_init = None if self.alpha_init is None else self.alpha_init / a2
        return BilevelRidgeSettings(
            inner_solver=self.inner_solver,
            fit_intercept=self.fit_intercept,
            alpha_min=alpha_min,
            alpha_max=alpha_max,
            alpha_init=alpha_init,
            n_iter=self.max_iter,
            step_size=self.step_size,
            adaptive=self.adaptive_step,
            penalty=self.penalty,
            outer_noise=self.outer_noise,
            refit_share=self.refit_share,
            correlation=self.noise_correlation,
            cross_validate=self.cross_validate,
            validation_margin=self.validation_margin,
            signal_test_level=self.signal_test_level,
            inner_steps=self.inner_max_iter,
            inner_rounds=self.inner_rounds,
        )

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the private model and tune its penalty privately.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR/CSC input: ``inner_solver="gd"`` or ``"sufficient_statistics"``
            (up to 2,048 columns with the intercept), never densified.
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : BilevelRidge
        """
        if is_dask_collection(X):
            X, y = self._validate_dask(X, y)
        else:
            X, y = validate_data(
                self,
                X,
                y,
                dtype=np.float64,
                y_numeric=True,
                accept_sparse=["csr", "csc"],
            )
            self._check_sparse(X)
        n, d = X.shape
        if n < 2:
            raise ValueError(
                f"BilevelRidge needs at least 2 samples (a training and a "
                f"validation part); got {n} sample."
            )
        n_train, n_val = self._split_sizes(n)
        tuning = self._check_solver_params()
        delta, rng = self._begin_private_fit(n)
        self._progress(
            f"inner_solver={self.inner_solver!r}, tuning={tuning!r}"
            + ("" if self.inner_solver == "gd" else f", split {n_train} / {n_val}")
        )
        if self.inner_solver == "gd":
            return self._fit_gd(X, y, delta, rng)
        eps_a, eps_b = self._bound_epsilons(n, delta)
        bound_events = [private_norm_bound_event(e) for e in (eps_a, eps_b) if e > 0]
        bounds_event = ComposedDpEvent(bound_events) if bound_events else None
        mu = Budget.from_target(self.epsilon, delta, bounds_event).mu
        if tuning == "risk_estimate":
            return self._fit_risk_estimate(X, y, mu, bounds_event, eps_a, eps_b, rng)
        return self._fit_split(X, y, mu, bounds_event, eps_a, eps_b, rng)

    def _check_solver_params(self):
        """Public checks of the parameters' combination (before any data is
        read); returns the resolved ``tuning``."""
        if (
            self.alpha_min is not None
            and self.alpha_max is not None
            and self.alpha_min > self.alpha_max
        ):
            raise ValueError(
                f"alpha_min={self.alpha_min:g} must not exceed "
                f"alpha_max={self.alpha_max:g}."
            )
        tuning = self._tuning()
        if (tuning == "path") != (self.inner_solver == "gd") and (
            tuning != "risk_estimate"
        ):
            raise ValueError(
                'inner_solver="gd" supports tuning="risk_estimate" or "path", and '
                'tuning="path" needs inner_solver="gd"; got '
                f"inner_solver={self.inner_solver!r}, tuning={tuning!r}."
            )
        if self.inner_solver in _RETIRED_SOLVERS:
            warnings.warn(
                f"inner_solver={self.inner_solver!r} is deprecated and will be "
                f"removed: {_RETIRED_SOLVERS[self.inner_solver]} "
                "(benchmarks/results/bilevel_ridge_inner_noise.md). Use "
                'inner_solver="gd".',
                FutureWarning,
                stacklevel=3,  # the frame fit warned from before (its wrapper)
            )
        return tuning

    def _fit_split(self, X, y, mu, bounds_event, eps_a, eps_b, rng):
        """The paper's bilevel loop on a public train/validation split of
        released sufficient statistics (``inner_solver`` other than "gd")."""
        n, d = X.shape
        n_train, n_val = self._split_sizes(n)
        # Everything above and the plan below depend on public inputs only, so
        # the whole plan is charged before any data is read. The penalty range
        # does not enter the plan; when the feature norm is estimated, the
        # range is re-expressed with it afterwards.
        settings = self._settings(n_train, self.feature_norm or 1.0)
        ridge_plan = plan_bilevel_ridge(settings, n_train, n_val, d, mu)
        if is_dask_collection(X):  # charged after its one pass (nan/inf flags)
            check_budget_before_pass(self, ridge_plan.event)  # public bounds
        else:
            plan = self._spend_with_bounds(bounds_event, ridge_plan.event)

        feature_norm, target_bound = self._bounds(X, y, eps_a, eps_b, rng)
        if self.feature_norm is None:
            ridge_plan = replace(
                ridge_plan, settings=self._settings(n_train, feature_norm)
            )
        perm = rng.permutation(n)
        val_idx, train_idx = perm[:n_val], perm[n_val:]
        if is_dask_collection(X):
            # the same public split as labels; the sums are taken per chunk
            labels = np.zeros(n, dtype=np.int8)
            labels[val_idx] = 1
            s = ridge_plan.settings
            exact_tr, exact_va = clipped_statistics(
                X,
                y,
                feature_norm,
                target_bound,
                s.intercept_scaling if s.fit_intercept else None,
                labels=labels,
            )
            plan = self._spend_with_bounds(bounds_event, ridge_plan.event)
            result = bilevel_ridge_from_statistics(exact_tr, exact_va, ridge_plan, rng)
        elif is_sparse(X):
            s = ridge_plan.settings
            c = s.intercept_scaling if s.fit_intercept else None
            stats = [
                _sparse_statistics(X[idx], y[idx], feature_norm, target_bound, c)
                for idx in (train_idx, val_idx)
            ]
            result = bilevel_ridge_from_statistics(*stats, ridge_plan, rng)
        else:
            Xn = clip_rows(X, feature_norm) / feature_norm
            yn = clip_targets(y, target_bound) / target_bound
            result = bilevel_ridge(Xn, yn, train_idx, val_idx, ridge_plan, rng)
        self._record_privacy(plan)
        self._store_model(result, feature_norm, target_bound, ridge_plan.stds.gram)
        self.alpha_path_ = result.alpha_path * feature_norm**2
        self.n_iter_ = int(self.max_iter)
        self.output_iteration_ = int(result.t_out)
        return self

    def _spend_with_bounds(self, bounds_event, event):
        """Charge the bounds' releases and the fit's plan together; return it."""
        plan = event if bounds_event is None else ComposedDpEvent([bounds_event, event])
        self._spend(plan)
        return plan

    def _store_model(self, result, feature_norm, target_bound, gram_std):
        """Fitted attributes shared by both upper levels, in original units."""
        a2 = feature_norm**2
        self.feature_norm_ = float(feature_norm)
        # Post-processing of the released (or public) norm bound: no privacy cost.
        d = self.n_features_in_
        warn_if_unscaled("BilevelRidge", row_norm=feature_norm, n_features=d)
        self.target_bound_ = float(target_bound)
        self.coef_ = result.coef * (target_bound / feature_norm)
        self.intercept_ = float(result.intercept * target_bound)
        self.alpha_ = float(result.alpha * a2)
        self.noise_level_ = float(gram_std * a2)
        self.signal_pvalue_ = float(result.signal_pvalue)

    def _risk_plan(self, n, d, mu, feature_norm):
        settings = self._settings(n, feature_norm)  # the final model uses all rows
        return plan_risk_estimate(
            n,
            d,
            mu,
            alpha_min=settings.alpha_min,
            alpha_max=settings.alpha_max,
            fit_intercept=self.fit_intercept,
            signal_test_level=self.signal_test_level,
            margin=self.validation_margin,
        )

    def _fit_risk_estimate(self, X, y, mu, bounds_event, eps_a, eps_b, rng):
        """``tuning="risk_estimate"``: one release of all rows, Cp on its path."""
        if self.inner_solver != "sufficient_statistics":
            raise ValueError(
                'tuning="risk_estimate" needs inner_solver="sufficient_statistics" '
                f"(got {self.inner_solver!r}): the risk estimate reads the released "
                "statistics."
            )
        if self.refit_share > 0 or self.outer_noise:
            raise ValueError(
                'tuning="risk_estimate" releases all rows once and has no outer '
                "loop: refit_share and outer_noise do not apply."
            )
        n, d = X.shape
        risk_plan = self._risk_plan(n, d, mu, self.feature_norm or 1.0)
        if is_dask_collection(X):  # charged after its one pass (nan/inf flags)
            check_budget_before_pass(self, risk_plan.event)  # public bounds
        else:
            plan = self._spend_with_bounds(bounds_event, risk_plan.event)

        feature_norm, target_bound = self._bounds(X, y, eps_a, eps_b, rng)
        if self.feature_norm is None:
            # Same noise, penalty grid re-expressed with the private norm.
            risk_plan = self._risk_plan(n, d, mu, feature_norm)
        if is_dask_collection(X):
            c = 1.0 if self.fit_intercept else None
            (exact,) = clipped_statistics(X, y, feature_norm, target_bound, c)
            plan = self._spend_with_bounds(bounds_event, risk_plan.event)
            raw = release_exact(exact, risk_plan, rng)
            result = risk_estimate_from_release(raw, risk_plan, rng)
        elif is_sparse(X):
            c = 1.0 if self.fit_intercept else None
            exact = _sparse_statistics(X, y, feature_norm, target_bound, c)
            raw = release_exact(exact, risk_plan, rng)
            result = risk_estimate_from_release(raw, risk_plan, rng)
        else:
            Xn = clip_rows(X, feature_norm) / feature_norm
            yn = clip_targets(y, target_bound) / target_bound
            result = risk_estimate_ridge(Xn, yn, risk_plan, rng)
        self._record_privacy(plan)
        self._store_model(result, feature_norm, target_bound, risk_plan.stds["gram"])
        self.alpha_path_ = np.array([self.alpha_])
        self.n_iter_ = 1  # one pass over the public penalty grid
        self.output_iteration_ = 0
        return self

    def _fit_gd(self, X, y, delta, rng):
        """``inner_solver="gd"``: clipped full-batch DP-GD on all rows.

        Public bounds, if given, clip the rows and targets (per-record maps);
        otherwise the solver's private scales do
        (:mod:`skdp.solvers.bilevel.ridge.gd`). The plan depends on ``n``,
        ``d`` and the parameters only, and is charged before any data is read.
        """
        n, d = X.shape
        public = self.feature_norm is not None, self.target_bound is not None
        plan = default_ridge_gd_plan(
            self.epsilon,
            delta,
            n,
            d,
            n_steps=self.inner_max_iter,
            fit_intercept=self.fit_intercept,
            tuning=self._tuning(),
            estimation_share=self._estimation_share(),
            public_feature_norm=public[0],
            public_target_bound=public[1],
        )
        if plan.fit.default_scales and not all(public):
            # a public rule of n and the budget: the warning costs no privacy
            warnings.warn(
                f"n_samples={n} is too small for this budget to estimate the "
                "data's scales privately: the fit assumes standardized data (row "
                "norms about sqrt(n_features), |y| <= 3). Pass public "
                "feature_norm and target_bound: they then set the units.",
                UserWarning,
                stacklevel=3,
            )
        self._spend(plan.event)
        fit = ridge_gd_in_units(
            X,
            y,
            plan,
            rng,
            feature_norm=self.feature_norm,
            target_bound=self.target_bound,
            alpha_min=self.alpha_min,
            alpha_max=self.alpha_max,
        )
        if fit.feature_scale is not None:
            # Post-processing of the released feature scale: no privacy cost.
            warn_if_unscaled("BilevelRidge", feature_scale=fit.feature_scale)
        self._record_privacy(plan.event)
        nan = float("nan")
        self.feature_norm_ = nan if self.feature_norm is None else self.feature_norm
        self.target_bound_ = nan if self.target_bound is None else self.target_bound
        self.coef_ = fit.coef
        self.intercept_ = fit.intercept
        self.alpha_ = float(fit.omega * n)
        self.alpha_path_ = fit.omegas * n
        self.noise_level_ = 0.0
        self.signal_pvalue_ = nan
        self.n_iter_ = int(self.inner_max_iter)
        self.output_iteration_ = fit.index
        return self

    def _bounds(self, X, y, eps_a, eps_b, rng):
        """Public bounds, or private quantiles from their budget shares."""
        feature_norm = self.feature_norm
        if feature_norm is None:
            feature_norm = private_norm_bound(
                row_norms(X),
                eps_a if not math.isinf(self.epsilon) else math.inf,
                rng=rng,
                quantile=_BOUND_QUANTILE,
                bounds=_BOUND_RANGE,
            )
        target_bound = self.target_bound
        if target_bound is None:
            target_bound = private_norm_bound(
                np.abs(y),
                eps_b if not math.isinf(self.epsilon) else math.inf,
                rng=rng,
                quantile=_BOUND_QUANTILE,
                bounds=_BOUND_RANGE,
            )
        return float(feature_norm), float(target_bound)

    # -- predict ------------------------------------------------------------
    def predict(self, X):
        """Predict with the private linear model (no noise is added).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        check_is_fitted(self)
        if is_dask_collection(X):  # lazy, as dask-ml does
            X, _ = as_dask_xy(X, n_features=self.n_features_in_)
            return lazy_decision(X, self.coef_, self.intercept_)
        X = validate_data(
            self, X, dtype=np.float64, reset=False, accept_sparse=["csr", "csc"]
        )
        return np.asarray(X @ self.coef_).ravel() + self.intercept_

    def _check_sparse(self, X):
        """Sparse input: the gd and sufficient-statistics solvers (public rules).

        ``"sufficient_statistics"`` forms the dense Gram matrix, so it takes
        sparse input up to :data:`~skdp.utils._sparse.MAX_GRAM_FEATURES`
        columns (intercept included).
        """
        if not is_sparse(X):
            return
        if self.inner_solver in _RETIRED_SOLVERS:
            reject_sparse(
                X,
                f"BilevelRidge(inner_solver={self.inner_solver!r})",
                'inner_solver="gd" or "sufficient_statistics"',
            )
        if self.inner_solver == "sufficient_statistics":
            check_gram_size(
                X.shape[1] + int(self.fit_intercept),
                'BilevelRidge(inner_solver="sufficient_statistics")',
            )

    def _validate_dask(self, X, y):
        """Dask input: the sufficient-statistics fit with public bounds only.

        Checked before anything is spent or read. The private bound
        estimates need all values in one process, so they are not offered.
        """
        if self.inner_solver == "gd":  # the heavy-tailed solver's distributed path
            return validate_dask_rows(self, X, y)
        if self.inner_solver != "sufficient_statistics":
            reject_dask(X, f"BilevelRidge(inner_solver={self.inner_solver!r})")
        if self.feature_norm is None or self.target_bound is None:
            raise ValueError(
                "BilevelRidge on dask input needs public `feature_norm` and "
                "`target_bound`: the private bound estimates are not distributed."
            )
        # nan/inf refused from flags of the statistics pass, before the charge
        return dask_rows_for_one_pass(self, X, y)


def _sparse_statistics(X, y, feature_norm, target_bound, intercept_scaling):
    """Exact statistics of sparse rows, clipped and scaled as the dense path.

    Rows are clipped to ``feature_norm`` and divided by it (then clipped to
    norm 1, as :func:`bilevel_ridge` does), targets clipped to
    ``target_bound`` and divided by it: the per-record maps of the dense
    path, on the stored entries only. ``X^T X`` is formed by a sparse product
    (``d`` was checked against ``MAX_GRAM_FEATURES``).
    """
    Xn = clip_rows_any(clip_rows_any(X, feature_norm) / feature_norm, 1.0)
    yn = clip_targets(clip_targets(y, target_bound) / target_bound, 1.0)
    gram, moment, n, target_sq = augmented_gram(Xn, yn, intercept_scaling)
    return RawStatistics(gram, moment, n, intercept_scaling, target_sq)
