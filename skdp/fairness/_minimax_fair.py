"""MinimaxFairClassifier: private group-DRO logistic regression."""

import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval, StrOptions
from sklearn.utils.validation import check_is_fitted, column_or_1d

from ..base import PrivateClassifierMixin, PrivateEstimatorMixin
from ..exceptions import warn_inferred_set
from ..solvers._distributed import is_dask_collection, lazy_rows
from ..solvers.calibration import (
    private_logit_calibration,
    private_softmax_shrinkage,
)
from ..solvers.saddle_point.plan import plan_minimax
from ..solvers.saddle_point.run import release_inputs, run_minimax
from ..utils import check_declared_classes, uncenter_intercept
from ..utils._sparse import is_sparse, reject_sparse
from ..utils._validation import (  # errors quote no data
    check_classification_targets,
    validate_data,
)
from ._dask_fit import fit_minimax_on_dask
from ._groups import encode_groups, inferred_group_labels, normalise_label

__all__ = ["MinimaxFairClassifier"]


class MinimaxFairClassifier(
    PrivateClassifierMixin, PrivateEstimatorMixin, ClassifierMixin, BaseEstimator
):
    """Differentially private minimax group-fair (group DRO) logistic classifier.

    Fits a linear classifier that minimises the *worst group's* logistic
    loss, ``min_{||w|| <= radius} max_g R_g(w)``, written as the saddle point
    ``min_w max_{q in simplex} sum_g q_g R_g(w)``. The default solver is a
    full-batch noisy gradient descent-ascent (``solver="gda"``); the DP
    saddle-point algorithms of Boob and Guzmán (NSEG, NISPP) are available
    under ``solver=``. Groups come
    from ``sensitive_features`` passed to :meth:`fit` (fairlearn's
    convention); they are not needed to predict. Without
    ``sensitive_features`` there is one group and the model is a private
    logistic regression. With more than two classes the group risks use the
    multinomial (softmax) loss, the coefficients form a ``(n_features + 1)
    x n_classes`` matrix in a Frobenius ball of ``radius``, and each record's
    whole gradient matrix is clipped at once (``solver="gda"`` only; at 0.7
    row bounds when noisy, a public rule of the noise multiplier, and 0.7
    typical rows ``sqrt(d / 3 + 1)`` under the public default feature norm
    ``sqrt(d)``; both times
    :func:`~skdp.solvers.saddle_point.plan.multinomial_clip_scale` where the
    noise dominates each step; see the user guide).

    Privacy: ``(epsilon, delta)``-DP for replacing one record (features,
    label and group together), ``n`` public. The released outputs are the
    coefficients, the group weights, and, when they are estimated, the
    feature-norm bound and the group priors.

    Each record of group ``g`` is importance-weighted by ``1 / pi_g`` with
    public priors ``pi`` (implementation note, section 4.2); ``min_group_prior``
    floors ``pi``. NSEG and NISPP calibrate their noise to the worst case
    ``1 / min_g pi_g``. ``"gda"`` releases, at each of ``max_iter`` steps, the
    sum of the clipped per-record gradients weighted by ``q_g / pi_g`` at the
    current group weights ``q``, stacked with the per-group sums of clipped
    losses, as one Gaussian release whose sensitivity covers a record moving
    from one group to another with the current weights; it starts at ``q =
    pi`` (every weight 1: private ERM) and its noise grows only as far as the
    weights actually move towards small groups. The steps compose exactly in
    Gaussian DP.

    Parameters
    ----------
    epsilon : float, default=1.0
        Privacy budget of the whole fit; ``np.inf`` runs the same code
        without noise.
    delta : float or None, default=None
        ``None`` means ``n ** -1.1`` (stored in ``delta_``).
    groups : array-like or None, default=None
        Declared (public) group labels. If ``None`` they are read from
        ``sensitive_features``; this reveals which groups occur in the data
        (a leak not covered by ``epsilon``), so declare them when that
        matters. A declared group with no records gets zero risk and its
        weight drifts to 0; nothing else about it is revealed. A record whose
        group is not declared is an error (raised before any noise).
    group_priors : array-like, dict or None, default=None
        Public group shares ``pi_g`` (aligned with ``groups``, or a dict from
        label to share; a dict also declares the groups). Normalised to sum to
        one. ``None`` estimates them with a noisy histogram from a share of
        the budget (see ``estimation_share``).
    min_group_prior : float, default=0.05
        Floor applied to the priors: ``pi_g = max(pi_g, min_group_prior)``.
        Smaller groups are down-weighted by ``pi_g / min_group_prior`` in the
        objective, in exchange for noise proportional to ``1 /
        min_group_prior`` rather than ``1 / pi_g``.
    radius : float or None, default=None
        Public bound on ``||(coef, intercept / intercept_scaling)||``
        (Frobenius norm with more than two classes). ``None`` means 5, except
        for the multinomial ``"gda"`` fit when its public per-step
        noise-to-signal ratio ``r = z sqrt(p K) / n`` is above 0.05 (``z``
        the steps' noise multiplier, ``p`` the columns with the intercept):
        then ``5 * 4**s`` with ``s`` rising linearly in ``log r`` from 0 at
        ``r = 0.05`` to 1 at ``r = 0.3`` (20 above), where the noise
        dominates each step (see the user guide). ``constants_["radius"]``
        holds the value used.
    feature_norm : float or None, default=None
        Public bound on the row norm of ``X``; rows (with the intercept column
        appended) are clipped to ``sqrt(feature_norm**2 +
        intercept_scaling**2)`` during fit, which never changes the sign of
        a prediction. ``None`` estimates the 0.95-quantile of the row norms
        (:func:`~skdp.privacy.private_norm_bound`, a noisy bisection
        searched in ``[2**-30, 2**30]``) from a share of the budget (a lower
        quantile when ``n`` is small for that share). When ``n`` is too
        small for even the median at that share (``n < 8 z`` with ``z`` the
        bisection's count noise, a public rule of ``n`` and the budget, see
        :func:`~skdp.solvers.saddle_point.plan.norm_quantile_reachable`),
        nothing is estimated: the public default ``sqrt(n_features)``
        (features scaled to ``[-1, 1]``) is used, with a ``UserWarning``. Scale
        features with public constants first: the noise grows with
        ``radius * feature_norm``.
    center : bool, default=False
        Centre the features at a private mean before fitting: rows clipped to
        ``feature_norm`` (given or estimated) are averaged and released with
        Gaussian noise (sensitivity ``2 feature_norm / n``) from a share of
        the budget (see ``estimation_share``). Helps when the features share
        a large offset. Needs ``fit_intercept=True``; ``coef_`` and
        ``intercept_`` are reported for the uncentred features
        (post-processing), and ``radius`` then bounds the centred problem.
    fit_intercept : bool, default=True
        Append a public constant column ``intercept_scaling``, whose
        coefficient times ``intercept_scaling`` is ``intercept_`` (the
        intercept is inside the ``radius`` ball; no data-dependent centring
        unless ``center=True``).
    intercept_scaling : float, default=1.0
        Value of the constant column.
    classes : array-like of shape (n_classes,) or None, default=None
        Declared class labels (two or more; more than two fit the
        multinomial loss, ``solver="gda"`` only). ``None`` reads them from ``y`` (standard in
        scikit-learn, but it reveals which labels occur and makes a
        single-class ``y`` an error, so it emits
        :class:`~skdp.PrivacyLeakWarning`); declared classes avoid both.
    solver : {"gda", "nispp", "nseg"}, default="gda"
        ``"gda"``: full-batch noisy gradient descent-ascent
        (:func:`skdp.solvers.saddle_point.gda.group_dro_gda`): projected
        Nesterov steps on the coefficients, exponentiated ascent on the group
        weights after a warm-up of private ERM steps, each weight moving only
        on evidence above its own noise. With two classes each record's
        gradient is clipped at 0.3 row bounds where the public per-step
        noise ratio ``z sqrt(p) / n`` is at least 0.3, at one row bound (it
        never binds) below 0.05 and as ``z -> 0``, log-linear between; the
        step is divided by the same factor. ``"nispp"`` (noisy inexact stochastic
        proximal point) and ``"nseg"`` (noisy stochastic extragradient) are
        the papers' minibatch solvers. ``"gda"`` is the default because on
        Adult it had the lowest worst-group log-loss of the three at every
        epsilon measured, and at epsilon = 1 it beat the group-blind
        :class:`~skdp.HeavyTailedLogisticRegression` on both groupings
        (study at f9c3d36: ``python -m benchmarks.minimax_fair.main``).
    sampling : {"poisson", "without_replacement", "disjoint"}, default="poisson"
        Batch sampling. ``"disjoint"`` is the paper's single-pass variant
        (parallel composition); the multi-pass variants use Poisson sampling
        (accounted exactly with privacy loss distributions) or fixed-size
        sampling without replacement (RDP, looser: about twice the noise at
        the same budget).
    batch_size : int or None, default=None
        (Expected) batch size; ``None`` picks the paper's rule (see
        :func:`skdp.solvers.saddle_point.dispatch.saddle_point_schedule`).
    max_iter : int or None, default=None
        Number of full-batch steps of ``"gda"`` (``None``: 100), or cap on
        NSEG steps or NISPP subproblems; the noise is calibrated to the
        iterations run.
    step_scale : float, default=1.0
        Multiplier of the theory step size (``gamma`` of NSEG, ``1/lambda``
        of NISPP, ``4 / bound**2`` of ``"gda"``, itself times 1 to 3 by the
        schedule rule as ``z`` falls from 1 to 0; ``3 / (0.5 bound**2)`` for
        the multinomial loss). Choosing it on the private data costs privacy.
    dual_scale : float or None, default=None
        Rescaling ``c`` of the group weights (``q = c r``): the dual step is
        ``c**2`` times the primal one. ``None`` uses ``feature_bound /
        loss_bound``, which balances the two blocks of the operator bound.
        NSEG and NISPP only.
    dual_step : float or None, default=None
        Step of the exponentiated ascent on the group weights
        (``"gda"`` only; ``None``: 0.3 when the per-step noise multiplier
        ``z`` is at least 1, rising continuously to 1 at ``z = 0``, the
        public schedule rule of the user guide). ``0`` keeps the weights at the
        priors: a private logistic regression on the importance-weighted
        records.
    estimation_share : float, default=0.1
        Share of the budget (of ``mu**2`` in GDP units, the same name and
        unit in every skdp estimator) spent on estimating ``feature_norm``,
        the group priors when they are not given, and the mean when
        ``center=True`` (split equally; each is a Gaussian release, the norm
        bound's noisy bisection with share ``s`` at GDP ``mu sqrt(s)``); the
        solver's noise is then calibrated so that the whole fit meets
        ``(epsilon, delta)``. With more than two classes (``solver="gda"``),
        when the norm bound is the only estimate (one group, or given
        ``group_priors``, and ``center=False``) it takes a fifth of this
        share where its quantile stays reachable there
        (:func:`~skdp.solvers.saddle_point.plan.multinomial_bound_share`, a
        public rule of ``n`` and the budget; else the whole share): the bound
        barely moves with its budget, the steps gain the rest.
    calibration_share : float, default=0.1
        Share of the budget (of ``mu**2``) for recalibrating the solver's
        scores (:mod:`skdp.solvers.calibration`), the same methods as
        :class:`~skdp.HeavyTailedLogisticRegression`'s. Two classes: a private
        Platt scaling (one noisy histogram of the fitted logits split by
        label, then a refit of their scale and shift that is kept only when
        its gain beats the histogram's noise; it can fall back to the base
        rate; a refit of the group-weighted objective on one histogram per
        group was worse). More classes: a private shrinkage of the scores
        toward private base rates (noisy class counts, then the noisy
        training Brier score of six shrinkage levels; the lowest is kept;
        level 0 is the constant predictor). Nothing is spent (and
        ``logit_calibration_`` is ``None``) with ``fit_intercept=False`` or
        at ``epsilon=np.inf`` (there the fit is at its optimum). ``0`` turns
        it off; like every parameter, it still enters the seeded stream of a
        fit with an integer ``random_state``. Chosen on the development half
        of the benchmark suite (``python -m benchmarks.run --tasks binary
        multiclass``).
    verbose : int, default=0
        Print the fit's phases (records, plan, solver stages, privacy spent)
        when positive; ``2`` also prints the privacy plan. Only public
        quantities are printed, never anything computed from the data.
    accountant : PrivacyAccountant or None, default=None
        Shared budget to spend from.
    random_state : int, Generator or None, default=None
        Seeds batches and noise. Keep it secret: a known seed lets anyone
        subtract the noise. ``None`` draws from OS entropy. With a shared
        ``accountant``, each fit on its ledger draws from its own stream (folds
        of a cross-validation do not share noise).

    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
        One row for two classes; one row per class (softmax) for more.
    intercept_ : ndarray of shape (1,) or (n_classes,)
    groups_ : ndarray of shape (n_groups,)
        Group labels (``["all"]`` when fitted without sensitive features).
    group_priors_ : ndarray of shape (n_groups,)
        Priors used: the given ones normalised to sum to one, or the noisy
        shares ``max(count, 0) / n``; then floored at ``min_group_prior``.
    group_weights_ : ndarray of shape (n_groups,)
        Private group weights ``q`` of the saddle point (large for the
        groups with the highest risk).
    feature_norm_ : float
        Clipping bound on ``||x||`` used (given, privately estimated, or the
        public default when ``n`` is too small to estimate it).
    radius_ : float
        Radius of the coefficient ball used (``radius``, or its default rule).
    center_ : ndarray of shape (`n_features_in_`,) or None
        Private mean the features were centred at (``center=True``), else
        ``None``.
    logit_calibration_ : tuple (scale, shift) or None
        The recalibration applied to the solver's scores, ``scale * scores +
        shift`` (``calibration_share``): the Platt scaling's floats for two
        classes, the shrinkage level and the vector ``(1 - t) log(prior)``
        for more; ``scale = 1`` with a zero shift keeps the fit. ``None`` when
        none was run. ``coef_`` and ``intercept_`` include it.
    n_iter_ : int
        Iterations of the solver.
    noise_std_ : float
        Standard deviation of the solver's Gaussian draws (the largest, if
        NISPP had to relax its accuracy target on some steps, see the
        warning it then emits, or over the steps of ``"gda"``).
    constants_ : dict
        Public constants of the run. NSEG and NISPP: ``M``, ``L``, ``D`` and
        ``dim`` of the operator, and ``dual_scale``, ``step_size``,
        ``batch_size``, ``sampling`` and ``noise_multiplier``. ``"gda"``:
        ``clip``, ``loss_bound``, ``loss_factor``, ``step_size``,
        ``dual_step``, ``momentum``, ``radius`` and ``noise_multiplier`` (per step, relative
        to that step's sensitivity).
    delta_ : float
    privacy_spent_ : tuple of (float, float)
        Certified ``(epsilon, delta)`` of the fit.
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.

    See Also
    --------
    skdp.fairness.worst_group_loss : Evaluate the worst group's log-loss.

    Notes
    -----
    - The paper's multi-pass algorithms sample with replacement, which no
      accountant supports under replace-one; skdp samples as stated by
      ``sampling`` and accounts for exactly that. Its noise formulas for
      those variants do not certify the claimed epsilon and are not used.
    - NISPP's privacy rests on solving each proximal subproblem to a
      certified accuracy; the inner solver checks an exact duality
      certificate and raises rather than release an uncertified iterate.
      Its iteration cap is a count proven to suffice on every batch, from
      public constants, so stopping is not itself a data-dependent release.
    - The step rule (and NISPP's ``lambda``) uses public constants only;
      the default ``step_scale``, ``dual_scale``, ``batch_size``, ``max_iter``
      and solver were chosen by measurement on synthetic data and Adult
      (study at f9c3d36: ``python -m benchmarks.minimax_fair.main``), never on
      the data being fitted.
    - Every solver: the estimates take ``estimation_share`` of the
      Gaussian-DP budget ``mu**2`` (:class:`skdp.privacy.Budget`; a fifth of
      it for the multinomial norm bound alone, see ``estimation_share``); the
      noisy histogram, the mean and the feature norm bound's noisy bisection
      (:func:`~skdp.privacy.private_norm_bound`) are Gaussian releases at
      their share, composed exactly with the solver's steps. A two-class fit
      with an intercept and a finite ``epsilon`` also releases the logit
      histogram of its calibration at ``calibration_share`` of ``mu**2``
      (sensitivity ``sqrt(2)``), composed with the rest.
    - The number of inner iterations of NISPP, hence the running time,
      depends on the data; timing side channels are outside the guarantee.
    - Floating-point Gaussian sampling is not exactly DP (Mironov 2012).

    References
    ----------
    D. Boob and C. Guzmán, "Optimal algorithms for differentially private
    stochastic monotone variational inequalities and saddle-point problems",
    Math. Program. 204 (2024). S. Sagawa, P. W. Koh, T. Hashimoto and P.
    Liang, "Distributionally robust neural networks", ICLR 2020 (group DRO).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import MinimaxFairClassifier
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 2))
    >>> group = rng.choice(["a", "b"], size=2000, p=[0.7, 0.3])
    >>> y = (X[:, 0] + np.where(group == "a", 0.5, -0.5) > 0).astype(int)
    >>> clf = MinimaxFairClassifier(epsilon=2.0, groups=["a", "b"],
    ...                             group_priors=[0.7, 0.3], feature_norm=3.0,
    ...                             random_state=0)
    >>> clf = clf.fit(X, y, sensitive_features=group)
    >>> clf.privacy_spent_[0] <= 2.0
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    _softmax = True  # K > 2: multinomial scores

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "groups": ["array-like", None],
        "group_priors": ["array-like", dict, None],
        "min_group_prior": [Interval(Real, 0, 1, closed="both")],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
        "feature_norm": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["boolean"],
        "fit_intercept": ["boolean"],
        "intercept_scaling": [Interval(Real, 0, None, closed="neither")],
        "classes": ["array-like", None],
        "solver": [StrOptions({"gda", "nseg", "nispp"})],
        "sampling": [StrOptions({"poisson", "without_replacement", "disjoint"})],
        "batch_size": [Interval(Integral, 1, None, closed="left"), None],
        "max_iter": [Interval(Integral, 1, None, closed="left"), None],
        "step_scale": [Interval(Real, 0, None, closed="neither")],
        "dual_scale": [Interval(Real, 0, None, closed="neither"), None],
        "dual_step": [Interval(Real, 0, None, closed="left"), None],
        "estimation_share": [Interval(Real, 0, 1, closed="neither")],
        "calibration_share": [Interval(Real, 0, 1, closed="left")],
        "verbose": ["verbose"],
    }

    def __init__(
        self,
        *,
        epsilon=1.0,
        delta=None,
        groups=None,
        group_priors=None,
        min_group_prior=0.05,
        radius=None,
        feature_norm=None,
        center=False,
        fit_intercept=True,
        intercept_scaling=1.0,
        classes=None,
        solver="gda",
        sampling="poisson",
        batch_size=None,
        max_iter=None,
        step_scale=1.0,
        dual_scale=None,
        dual_step=None,
        estimation_share=0.1,
        calibration_share=0.1,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.epsilon = epsilon
        self.delta = delta
        self.groups = groups
        self.group_priors = group_priors
        self.min_group_prior = min_group_prior
        self.radius = radius
        self.feature_norm = feature_norm
        self.center = center
        self.fit_intercept = fit_intercept
        self.intercept_scaling = intercept_scaling
        self.classes = classes
        self.solver = solver
        self.sampling = sampling
        self.batch_size = batch_size
        self.max_iter = max_iter
        self.step_scale = step_scale
        self.dual_scale = dual_scale
        self.dual_step = dual_step
        self.estimation_share = estimation_share
        self.calibration_share = calibration_share
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        tags.classifier_tags.multi_class = True
        tags.input_tags.sparse = self.solver == "gda" and not self.center
        return tags

    # -- validation (everything that can fail does so before any noise) --------
    def _validate_labels(self, y):
        check_classification_targets(y)
        if self.classes is not None:
            classes = check_declared_classes(self.classes)
            unknown = ~np.isin(y, classes)
            if np.any(unknown):
                # The offending values are not echoed (a further release).
                raise ValueError(
                    f"y contains labels not in the declared classes {classes.tolist()}."
                )
        else:
            # Reading the classes from y is scikit-learn's convention; it
            # reveals which labels occur (documented; declare classes= to avoid).
            # The warning depends on the parameters only, not on y.
            warn_inferred_set(
                type(self).__name__,
                "classes",
                "classes=[...]",
                "an error when y has a single class",
                stacklevel=5,
            )
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError(
                    "MinimaxFairClassifier needs at least two classes, but y "
                    f"contains {classes.size} class ({classes.tolist()}). Declare "
                    "classes=[...] to fit data in which a class may be missing."
                )
        if classes.size > 2 and self.solver != "gda":
            raise ValueError(
                f'solver="{self.solver}" supports two classes only; '
                f'{classes.size} classes need solver="gda" (multinomial loss).'
            )
        if classes.size > 2:
            return classes, np.searchsorted(classes, y).astype(np.intp)
        return classes, np.where(y == classes[1], 1.0, -1.0)

    def _validate_groups(self, sensitive_features, n_samples):
        declared = self.groups
        priors = self.group_priors
        if isinstance(priors, dict):
            if declared is not None:
                raise ValueError(
                    "Pass the groups either as groups= or as the keys of a "
                    "group_priors dict, not both."
                )
            declared = list(priors.keys())
            priors = [priors[k] for k in declared]
        if sensitive_features is None:
            if declared is not None and len(declared) > 1:
                raise ValueError(
                    f"{len(declared)} groups are declared but fit received no "
                    "sensitive_features. Pass fit(X, y, sensitive_features=...) "
                    "(in a Pipeline: enable metadata routing and call "
                    "set_fit_request(sensitive_features=True))."
                )
            labels = list(declared) if declared is not None else ["all"]
            codes = np.zeros(n_samples, dtype=np.intp)
        else:
            if declared is None:
                # Inferred group set: reveals which groups occur (documented).
                labels = inferred_group_labels(sensitive_features, type(self).__name__)
            else:
                labels = [normalise_label(v) for v in declared]
                if len(set(labels)) != len(labels):
                    raise ValueError(f"groups contains duplicates: {labels!r}.")
            if len(labels) == 0:
                raise ValueError("groups must contain at least one label.")
            codes = encode_groups(sensitive_features, labels, n_samples)
        m = len(labels)
        if priors is not None:
            priors = np.asarray(priors, dtype=float).ravel()
            if priors.size != m:
                raise ValueError(
                    f"group_priors has {priors.size} entries for {m} groups."
                )
            if not np.all(np.isfinite(priors)) or np.any(priors <= 0):
                raise ValueError("group_priors must be positive and finite.")
            priors = priors / priors.sum()
        return labels, codes, priors

    # -- fit ----------------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y, *, sensitive_features=None):
        """Fit the private minimax-fair classifier.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            CSR/CSC input: ``solver="gda"`` without ``center``, never densified.
        y : array-like of shape (n_samples,)
            Class labels (two or more classes).
        sensitive_features : array-like of shape (n_samples,) or (n_samples, k), default=None
            Group of each record (several columns are combined into one group
            per distinct row). ``None`` fits a single group.

        Returns
        -------
        self : MinimaxFairClassifier
        """
        if self.center and not self.fit_intercept:
            raise ValueError(
                "center=True needs fit_intercept=True: the offset removed from the "
                "features moves into the intercept."
            )
        if is_dask_collection(X):  # sums on the workers (skdp/fairness/_dask_fit)
            return fit_minimax_on_dask(self, X, y, sensitive_features)
        X, y = validate_data(
            self, X, y, dtype=np.float64, y_numeric=False, accept_sparse=["csr", "csc"]
        )
        _check_sparse(X, self.solver, self.center)
        y = column_or_1d(y, warn=True)
        n = X.shape[0]
        classes, y_code = self._validate_labels(y)
        labels, codes, priors = self._validate_groups(sensitive_features, n)
        m = len(labels)

        # Public plan: what is estimated, the solver's schedule, the noise.
        delta, rng = self._begin_private_fit(n)
        if priors is None and m > 1 and self.min_group_prior <= 0:
            # A noisy count can be <= 0: without a floor the prior could be 0.
            raise ValueError(
                "min_group_prior must be positive when the group priors are "
                "estimated (group_priors=None)."
            )
        plan = self._plan(n, X.shape[1], m, classes.size, delta, priors is None)
        self._warn_default_norm(plan)
        self._progress(
            f"solver={self.solver!r}: {plan.n_releases} noisy releases"
            + (f", {len(plan.estimates)} private estimate(s)" if plan.estimates else "")
        )
        self._spend(plan.event)
        inputs = release_inputs(
            X, codes, plan, rng, feature_norm=self.feature_norm, priors=priors
        )
        result = run_minimax(
            inputs.rows, y_code, codes, inputs.priors, inputs.bound, plan, rng
        )
        self._record_privacy(plan.event)
        self._set_fitted(
            result,
            plan,
            labels,
            classes,
            inputs.priors,
            inputs.feature_norm,
            inputs.center,
        )
        self._calibrate(inputs.rows, y_code, result.coef, plan, rng)
        if result.relaxed_steps:
            # A function of public inputs only: the public batch-size bound and
            # the released iterates, never a realised batch size.
            warnings.warn(
                f"NISPP raised its accuracy target, and the noise with it, on "
                f"{result.relaxed_steps} of {result.n_iter} steps: float64 cannot "
                f"certify it for batches of up to {result.batch_size_bound} "
                "records (a public bound on the batch size). Privacy is "
                "unchanged; a smaller batch_size avoids it.",
                UserWarning,
                stacklevel=2,
            )
        return self

    def _plan(self, n, n_features, n_groups, n_classes, delta, estimate_priors):
        """The fit's public plan (:func:`~skdp.solvers.saddle_point.plan.plan_minimax`)."""
        return plan_minimax(
            self.epsilon,
            delta,
            n,
            n_features,
            n_groups,
            n_classes,
            solver=self.solver,
            estimate_norm=self.feature_norm is None,
            estimate_priors=estimate_priors,
            center=self.center,
            estimation_share=self.estimation_share,
            calibration_share=self.calibration_share,
            max_iter=self.max_iter,
            sampling=self.sampling,
            batch_size=self.batch_size,
            radius=self.radius,
            step_scale=self.step_scale,
            dual_scale=self.dual_scale,
            dual_step=self.dual_step,
            min_group_prior=self.min_group_prior,
            fit_intercept=self.fit_intercept,
            intercept_scaling=self.intercept_scaling,
        )

    def _calibrate(self, rows, y_code, coef, plan, rng):
        """Private Platt scaling of a two-class fit (the plan's histogram),
        or private shrinkage toward the base rates of a multiclass one.

        The logits are the solver's, ``rows @ coef`` on the clipped rows it
        was fitted on (intercept column included), as in
        :class:`~skdp.HeavyTailedLogisticRegression`: on raw rows far outside
        the public bound the logits would all fall in the histogram's open
        tails, whose centres misstate them. Each record falls in one cell, so
        the sensitivity does not depend on how the logits are computed. The
        refit minimises the pooled binned log-loss: a refit of the group-
        weighted objective (one histogram per group, weights ``q_g / pi_g``)
        was worse on the suite's dev half (its cells are smaller, so more of
        them drown in the noise).
        """
        self.logit_calibration_ = None
        z = plan.calibration_noise_multiplier
        if plan.shrinkage_mu:  # more than two classes: coef is (p, K)
            k = coef.shape[1]
            scale, shift = private_softmax_shrinkage(
                rows, y_code, coef, np.zeros(k), k, plan.shrinkage_mu, rng=rng
            )
        elif z:
            scale, shift = private_logit_calibration(
                rows, y_code, coef, 0.0, z, rng=rng
            )
        else:
            return
        self.logit_calibration_ = (scale, shift)
        self.coef_ = scale * self.coef_
        self.intercept_ = scale * self.intercept_ + shift

    def _warn_default_norm(self, plan):
        """Warn that the plan uses the public default row bound (public rule)."""
        if plan.default_feature_norm is None:
            return
        warnings.warn(
            f"feature_norm=None: {plan.n_samples} rows at this budget are too few "
            "to estimate the feature-norm bound privately, so the public default "
            f"sqrt(n_features) = {plan.default_feature_norm:.4g} (features scaled "
            "to [-1, 1]) is used and its share of the budget goes to the solver. "
            "Pass feature_norm from public knowledge.",
            UserWarning,
            stacklevel=3,
        )

    def _set_fitted(self, result, plan, labels, classes, priors, feature_norm, center):
        """Fitted attributes from a :class:`~skdp.solvers.saddle_point.run.MinimaxResult`."""
        w, c0 = result.coef, plan.intercept_scaling
        if w.ndim == 2:  # multinomial: (p, K) -> coef_ (K, d), intercept_ (K,)
            if self.fit_intercept:
                self.coef_ = w[:-1].T.copy()
                self.intercept_ = w[-1] * c0
                if center is not None:
                    self.intercept_ = self.intercept_ - self.coef_ @ center
            else:
                self.coef_ = w.T.copy()
                self.intercept_ = np.zeros(w.shape[1])
        elif self.fit_intercept:
            self.coef_ = w[None, :-1].copy()
            self.intercept_ = np.array([w[-1] * c0])
            if center is not None:
                self.intercept_ = uncenter_intercept(
                    self.intercept_, self.coef_[0], center
                )
        else:
            self.coef_ = w[None, :].copy()
            self.intercept_ = np.zeros(1)
        self.classes_ = classes
        self.groups_ = np.empty(len(labels), dtype=object)
        self.groups_[:] = labels
        self.group_priors_ = priors
        self.group_weights_ = result.weights
        self.feature_norm_ = float(feature_norm)
        self.radius_ = float(plan.radius)
        self.center_ = center
        self.n_iter_ = result.n_iter
        self.noise_std_ = result.noise_std
        self.constants_ = result.constants

    # -- prediction (no noise) -----------------------------------------------------
    def decision_function(self, X):
        """Scores ``X @ coef_.T + intercept_``.

        Two classes: one signed score per row (positive: ``classes_[1]``).
        More classes: one score per class (the softmax logits).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) or (n_samples, n_classes)
        """
        if is_dask_collection(X):  # lazy, per chunk on the workers
            k = self.coef_.shape[0]
            return lazy_rows(self.decision_function, X, None if k == 1 else k)
        check_is_fitted(self)
        X = validate_data(
            self, X, reset=False, dtype=np.float64, accept_sparse=["csr", "csc"]
        )
        if self.coef_.shape[0] > 1:
            with np.errstate(over="ignore", invalid="ignore"):
                scores = X @ self.coef_.T + self.intercept_
            bad = ~np.all(np.isfinite(scores), axis=1)
            if np.any(bad):
                # Huge rows: the ranking of the classes is what matters;
                # compute it on rescaled rows.
                rows = X[bad]
                rows = rows.toarray() if is_sparse(rows) else rows
                scale = np.max(np.abs(rows), axis=1, keepdims=True)
                scale[~(scale > 0) | ~np.isfinite(scale)] = 1.0
                with np.errstate(over="ignore", invalid="ignore"):
                    rescaled = np.nan_to_num(rows / scale) @ self.coef_.T
                scores[bad] = np.where(np.isfinite(rescaled), rescaled, 0.0)
            return scores
        coef = self.coef_[0]
        with np.errstate(over="ignore", invalid="ignore"):
            scores = np.asarray(X @ coef).ravel() + self.intercept_[0]
        bad = ~np.isfinite(scores)
        if np.any(bad):
            # Huge rows: the sign is what matters; compute it on rescaled rows.
            rows = X[bad]
            rows = rows.toarray() if is_sparse(rows) else rows  # the few bad rows
            scale = np.max(np.abs(rows), axis=1, keepdims=True)
            scale[scale == 0] = 1.0
            scores[bad] = np.sign(rows / scale @ coef) * np.inf
            scores[bad & np.isnan(scores)] = self.intercept_[0]
        return scores


def _check_sparse(X, solver, center):
    """Sparse input: ``solver="gda"`` without centring (public rules)."""
    if solver != "gda":
        reject_sparse(X, f"MinimaxFairClassifier(solver={solver!r})", 'solver="gda"')
    if center:
        reject_sparse(
            X,
            "MinimaxFairClassifier(center=True) (centring makes the matrix dense)",
            'center=False with solver="gda"',
        )
