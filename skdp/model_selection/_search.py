"""PrivateSearchCV: accounted hyperparameter search for any skdp estimator."""

import contextlib
import io
import math
import warnings
from copy import deepcopy
from numbers import Integral, Real

import numpy as np
from sklearn.base import (
    BaseEstimator,
    MetaEstimatorMixin,
    _fit_context,
    clone,
    is_classifier,
)
from sklearn.model_selection import ParameterGrid, ParameterSampler
from sklearn.utils import _safe_indexing, get_tags
from sklearn.utils._param_validation import HasMethods, Interval
from sklearn.utils.metaestimators import available_if
from sklearn.utils.validation import _num_samples, check_is_fitted, indexable

from ..base import PrivateEstimatorMixin
from ..privacy import LedgerEntry, certify_epsilon, hidden_from_ledgers
from ..privacy._ledger import record
from ..utils._validation import unechoed
from ._plan import RecordingAccountant, plan_search, probe_plan
from ._scoring import noisy_validation_loss
from ._selection import select_best

__all__ = ["PrivateSearchCV"]

_RESERVED = ("epsilon", "delta", "accountant", "random_state")
_DEFAULT_LOSS_BOUND = {"classifier": math.log(10.0), "regressor": 4.0}


def _delegate(name):
    def check(self):
        if hasattr(self, "best_estimator_"):
            return hasattr(self.best_estimator_, name)
        return hasattr(self.estimator, name)

    return check


class PrivateSearchCV(PrivateEstimatorMixin, MetaEstimatorMixin, BaseEstimator):
    """Differentially private hyperparameter search (private selection).

    A drop-in for ``GridSearchCV`` / ``RandomizedSearchCV`` over any skdp
    estimator, whose choice is a private release paid from the budget.

    The data are split once, at random, into a training part and a disjoint
    validation part. The search then runs a random number ``K`` of trials
    (``K`` drawn from the search's generator, independently of the data,
    with mean ``mean_trials``). Each trial picks a candidate uniformly at
    random, fits it privately on the training part with the per-trial budget
    ``trial_epsilon_``, and scores it on the validation part by a clipped
    loss plus Gaussian noise (:mod:`skdp.model_selection._scoring`). Only the
    trial with the smallest noisy loss is released: its hyperparameters, its
    noisy loss and its model. ``K`` and the other trials are not.

    **Guarantee.** ``(epsilon, delta_)``-DP under the replace-one relation
    (``n`` public), for the released trial. The Renyi-DP bound of Papernot
    and Steinke (2022) covers the whole search; it is converted to
    ``(epsilon, delta_)`` and charged to ``accountant`` as one
    ``(epsilon, delta_)`` entry (:class:`skdp.privacy.PrivateSelectionDpEvent`),
    before any noise is drawn. The per-trial budget is the largest one that
    certifies the total.

    **Refit.** There is no refit on the whole data: ``best_estimator_`` is the
    released trial's model, fitted on the training part, so the refit costs
    nothing beyond the search. Refitting on all rows would need a budget of
    its own.

    **Randomness.** The split, ``K``, the candidate of every trial, every
    trial's ``random_state`` and the score noise all come from one generator
    made from ``random_state``; nothing is derived from the data.

    **What is not covered.** The wall time of ``fit`` grows with ``K``; the
    guarantee assumes an observer sees only the returned object. Warnings
    are those of the estimator's validation and planning for each candidate
    (data-independent), emitted once; warnings raised inside trials are
    suppressed.

    Parameters
    ----------
    estimator : skdp estimator
        A private estimator that charges its plan to ``accountant`` (every
        skdp estimator does). Its ``epsilon``, ``delta``, ``accountant`` and
        ``random_state`` are set by the search.
    param_grid : dict or list of dict, default=None
        Candidates as in ``GridSearchCV``. Exactly one of ``param_grid`` and
        ``param_distributions`` must be given.
    param_distributions : dict or list of dict, default=None
        As in ``RandomizedSearchCV``: ``n_candidates`` candidates are drawn
        from it with the search's generator, then searched as a grid.
    n_candidates : int, default=20
        Number of candidates drawn from ``param_distributions``.
    epsilon : float, default=1.0
        Total privacy budget of the search. ``np.inf`` runs the same search
        with non-private trials and exact scores.
    delta : float or None, default=None
        ``None`` resolves to ``n_samples ** -1.1`` (at most half the
        accountant's delta when one is shared).
    mean_trials : float, default=10.0
        Expected number of trials ``E[K]``.
    trials_shape : float, default=np.inf
        Distribution of ``K``: ``inf`` Poisson (``K`` may then be 0, with
        probability ``exp(-mean_trials)``: nothing is released), ``0``
        logarithmic, ``1`` geometric, any other value the truncated negative
        binomial of that shape. The default was chosen by measurement
        (study at f9c3d36:
        ``python -m benchmarks.model_selection.private_search --summarize``):
        with Poisson
        trials the search beat the even budget split on average for all three
        benchmarked estimators at every epsilon; logarithmic trials (the
        largest per-trial budget) did better on flat grids but missed the few
        good settings of a peaked one.
    validation_fraction : float, default=0.25
        Share of the rows in the validation part.
    loss_bound : float or None, default=None
        Public clipping level of the per-record validation loss (log-loss
        for classifiers, squared error for regressors). ``None``: ``log(10)``
        for classifiers (probabilities below 0.1 cost as much as 0.1) and
        ``4`` for regressors (residuals up to 2, for standardized targets).
    refit : bool, default=True
        Keep the released trial's model as ``best_estimator_``.
    verbose : int, default=0
        Print the fit's phases (records, plan, solver stages, privacy spent)
        when positive; ``2`` also prints the privacy plan. Only public
        quantities are printed, never anything computed from the data. The
        searched estimator's own output (its ``verbose``) is silenced during
        the trials, like its warnings: one block per trial would reveal the
        secret number of trials.
    accountant : PrivacyAccountant or None, default=None
        Shared budget; the search is one entry.
    random_state : int, Generator or None, default=None
        Seed of the search's generator. ``None`` draws from OS entropy (a
        published seed lets anyone subtract the noise).

    Attributes
    ----------
    best_estimator_ : estimator
        The released trial's model (only if ``refit=True``). Its
        ``random_state`` is ``None``: the trial's generator is secret.
    best_params_ : dict
        Hyperparameters of the released trial.
    best_index_ : int
        Index of the released candidate in ``cv_results_["params"]``.
    best_score_ : float
        Minus the released trial's noisy clipped validation loss.
    cv_results_ : dict
        ``params`` (the public candidates), ``selected`` (boolean mask of the
        released candidate) and ``noisy_validation_loss`` (NaN except for the
        released candidate). Nothing else is a private release.
    trial_epsilon_, trial_delta_ : float
        Budget of each trial's estimator.
    score_noise_multiplier_ : float
        ``sigma / Delta`` of the noisy validation loss.
    loss_bound_ : float
        Clipping level used.
    privacy_event_ : PrivateSelectionDpEvent
        The plan charged to the ledger.
    privacy_spent_ : tuple of float
        Certified ``(epsilon, delta_)``.
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.
    delta_ : float
        Resolved delta.
    n_features_in_ : int
        Number of features.
    classes_ : ndarray
        Class labels of ``best_estimator_`` (classifiers with ``refit=True``).

    References
    ----------
    - Liu and Talwar, "Private selection from private candidates", STOC 2019.
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.
    - Mironov, "Renyi differential privacy", CSF 2017.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import HeavyTailedLogisticRegression
    >>> from skdp.model_selection import PrivateSearchCV
    >>> rng = np.random.default_rng(0)
    >>> X = rng.normal(size=(2000, 3)); y = (X[:, 0] > 0).astype(int)
    >>> search = PrivateSearchCV(
    ...     HeavyTailedLogisticRegression(feature_norm=3.0, classes=[0, 1]),
    ...     param_grid={"feature_norm": [1.0, 3.0, 10.0]},
    ...     epsilon=2.0, random_state=0,
    ... ).fit(X, y)
    >>> search.privacy_spent_[0] <= 2.0
    True
    >>> sorted(search.best_params_)
    ['feature_norm']
    """

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "estimator": [HasMethods(["fit"])],
        "verbose": ["verbose"],
        "param_grid": [dict, list, None],
        "param_distributions": [dict, list, None],
        "n_candidates": [Interval(Integral, 1, None, closed="left")],
        "mean_trials": [Interval(Real, 1, None, closed="left")],
        "trials_shape": [Interval(Real, 0, None, closed="both")],  # inf: Poisson
        "validation_fraction": [Interval(Real, 0, 1, closed="neither")],
        "loss_bound": [Interval(Real, 0, None, closed="neither"), None],
        "refit": ["boolean"],
    }

    def __init__(
        self,
        estimator,
        *,
        param_grid=None,
        param_distributions=None,
        n_candidates=20,
        epsilon=1.0,
        delta=None,
        mean_trials=10.0,
        trials_shape=np.inf,
        validation_fraction=0.25,
        loss_bound=None,
        refit=True,
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.estimator = estimator
        self.param_grid = param_grid
        self.param_distributions = param_distributions
        self.n_candidates = n_candidates
        self.epsilon = epsilon
        self.delta = delta
        self.mean_trials = mean_trials
        self.trials_shape = trials_shape
        self.validation_fraction = validation_fraction
        self.loss_bound = loss_bound
        self.refit = refit
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        sub = get_tags(self.estimator)
        tags.estimator_type = sub.estimator_type
        tags.classifier_tags = deepcopy(sub.classifier_tags)
        tags.regressor_tags = deepcopy(sub.regressor_tags)
        tags.input_tags.sparse = sub.input_tags.sparse
        tags.target_tags.required = sub.target_tags.required
        return tags

    # -- public inputs ------------------------------------------------------------
    def _candidates(self, rng):
        missing = [p for p in _RESERVED if p not in self.estimator.get_params()]
        if missing:
            raise TypeError(
                f"{type(self.estimator).__name__} has no {missing} parameters: "
                "PrivateSearchCV needs an skdp private estimator."
            )
        if (self.param_grid is None) == (self.param_distributions is None):
            raise ValueError("Pass exactly one of param_grid and param_distributions.")
        if self.param_grid is not None:
            candidates = list(ParameterGrid(self.param_grid))
        else:
            seed = int(rng.integers(np.iinfo(np.int32).max))
            candidates = list(
                ParameterSampler(
                    self.param_distributions, self.n_candidates, random_state=seed
                )
            )
        for params in candidates:
            reserved = sorted(set(params) & set(_RESERVED))
            if reserved:
                raise ValueError(
                    f"The search sets {reserved} itself; remove them from the "
                    "candidates."
                )
        return candidates

    def _loss_bound(self):
        if self.loss_bound is not None:
            return float(self.loss_bound)
        kind = "classifier" if is_classifier(self.estimator) else "regressor"
        return _DEFAULT_LOSS_BOUND[kind]

    def _resolve_delta(self, n):
        delta = self.delta_
        if self.delta is None and self.accountant is not None:
            # The ledger composes at its own delta: leave it room.
            delta = min(delta, self.accountant.delta / 2.0)
        return delta

    # -- fit ------------------------------------------------------------------------
    # the searched estimator validates its own parameters when it is fitted
    @_fit_context(prefer_skip_nested_validation=False)
    def fit(self, X, y=None, **fit_params):
        """Run the private search.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)
        **fit_params : dict
            Passed to the estimator's ``fit`` (for example
            ``sensitive_features``); arrays of length ``n_samples`` are split
            with the rows.

        Returns
        -------
        self : PrivateSearchCV
        """
        if y is None:
            raise ValueError(
                f"{type(self).__name__} requires y to be passed, but the target y "
                "is None."
            )
        X, y = unechoed(indexable, X, y)  # errors quote no data
        n = unechoed(_num_samples, X)
        if n < 2:
            raise ValueError(
                f"PrivateSearchCV needs at least 2 samples (a training and a "
                f"validation part); got n_samples = {n}."
            )
        # A refit forgets the attributes that only some fits set: a search
        # that selects nothing (K = 0) must not keep an earlier fit's model.
        for name in ("best_estimator_", "classes_", "feature_names_in_"):
            self.__dict__.pop(name, None)
        # The search's generator (its own stream on a shared ledger).
        _, rng = self._begin_private_fit(n)
        self.delta_ = self._resolve_delta(n)
        candidates = self._candidates(rng)
        loss_bound = self._loss_bound()

        # Public split: sizes from n, rows from the generator.
        n_val = min(max(1, int(math.ceil(self.validation_fraction * n))), n - 1)
        perm = rng.permutation(n)
        val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
        X_tr, y_tr = _safe_indexing(X, train_idx), _safe_indexing(y, train_idx)
        X_val, y_val = _safe_indexing(X, val_idx), _safe_indexing(y, val_idx)
        fit_tr = {k: _split_param(v, n, train_idx) for k, v in fit_params.items()}

        # Bad input anywhere (the validation part included) fails here, before
        # any noise: the estimator's own validation runs on every row, and its
        # probe stops before the fit uses the data.
        probe_plan(
            self.estimator,
            candidates[0],
            float(self.epsilon),
            self.delta_,
            X,
            y,
            fit_params,
        )

        def probe(c, eps_t, delta_t):
            return probe_plan(
                self.estimator, candidates[c], eps_t, delta_t, X_tr, y_tr, fit_tr
            )

        plan, caught = plan_search(
            float(self.epsilon),
            self.delta_,
            probe,
            len(candidates),
            float(self.mean_trials),
            float(self.trials_shape),
        )
        self._spend(plan.event)
        _reemit(caught)

        def run_trial(c, rng):
            model = fit_trial(c, rng)
            loss = noisy_validation_loss(
                model, X_val, y_val, loss_bound, plan.score_noise_multiplier, rng
            )
            return loss, model

        def fit_trial(c, rng):
            ledger = RecordingAccountant()
            model = clone(self.estimator).set_params(
                **candidates[c],
                epsilon=plan.trial_epsilon,
                delta=plan.trial_delta,
                accountant=ledger,
                random_state=rng.spawn(1)[0],  # the trial's own stream
            )
            model.fit(X_tr, y_tr, **fit_tr)
            if [e for _, e in ledger.ledger] != [plan.fit_events[c]]:
                raise RuntimeError(
                    "A trial charged another plan than the one the search was "
                    "calibrated for; this is a bug in the estimator's planning."
                )
            # The released model must not hold the trial's generator: its
            # SeedSequence carries the search's root entropy, from which every
            # noise draw of the search can be replayed and subtracted.
            model.set_params(accountant=None, random_state=None)
            return model

        with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
            # A warning or a progress line (the searched estimator's own
            # ``verbose``) per trial would reveal the number of trials.
            warnings.simplefilter("ignore")
            with hidden_from_ledgers():
                # K, the trials' candidates and their releases are secret:
                # the search's ledger does not list them (each trial's
                # estimator keeps its own; only the released one is kept).
                best = select_best(
                    rng,
                    len(candidates),
                    float(self.mean_trials),
                    float(self.trials_shape),
                    run_trial,
                )
        # The selection as a whole: the (epsilon, delta) its analysis
        # certifies over every candidate (a property of the plan: which
        # candidates ran is secret).
        selection = plan.event
        record(
            LedgerEntry(
                "selection",
                epsilon=certify_epsilon(selection, selection.delta),
                probability=selection.delta,
                label="private selection",
            )
        )
        self._record_privacy(plan.event)
        self.trial_epsilon_ = float(plan.trial_epsilon)
        self.trial_delta_ = float(plan.trial_delta)
        self.score_noise_multiplier_ = float(plan.score_noise_multiplier)
        self.loss_bound_ = loss_bound
        self.privacy_event_ = plan.event
        self.n_features_in_ = _num_features(X)
        if hasattr(X, "columns"):
            self.feature_names_in_ = np.asarray(X.columns, dtype=object)
        selected = np.zeros(len(candidates), dtype=bool)
        noisy = np.full(len(candidates), np.nan)
        if best.payload is None:  # Poisson K = 0: a data-independent event
            warnings.warn(
                "The random number of trials was 0 (probability "
                f"exp(-{self.mean_trials:g})): nothing was selected.",
                UserWarning,
                stacklevel=2,
            )
            self.best_index_, self.best_params_, self.best_score_ = None, None, np.nan
        else:
            c, model = best.payload
            selected[c], noisy[c] = True, best.loss
            self.best_index_ = c
            self.best_params_ = dict(candidates[c])
            self.best_score_ = -best.loss
            if self.refit:
                self.best_estimator_ = model
                if hasattr(model, "classes_"):
                    self.classes_ = model.classes_
        self.cv_results_ = {
            "params": candidates,
            "selected": selected,
            "noisy_validation_loss": noisy,
        }
        return self

    # -- prediction: the released model -------------------------------------------
    def _check_refit(self):
        check_is_fitted(self, "cv_results_")
        if not hasattr(self, "best_estimator_"):
            raise AttributeError(
                "No model was released: refit=False, or no trial was run."
            )
        return self.best_estimator_

    @available_if(_delegate("predict"))
    def predict(self, X):
        """Predict with ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        y_pred : ndarray of shape (n_samples,)
        """
        return self._check_refit().predict(X)

    @available_if(_delegate("predict_proba"))
    def predict_proba(self, X):
        """Class probabilities of ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        proba : ndarray of shape (n_samples, n_classes)
        """
        return self._check_refit().predict_proba(X)

    @available_if(_delegate("predict_log_proba"))
    def predict_log_proba(self, X):
        """Log class probabilities of ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        log_proba : ndarray of shape (n_samples, n_classes)
        """
        return self._check_refit().predict_log_proba(X)

    @available_if(_delegate("decision_function"))
    def decision_function(self, X):
        """Decision function of ``best_estimator_``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        scores : ndarray of shape (n_samples,)
        """
        return self._check_refit().decision_function(X)

    @available_if(_delegate("score"))
    def score(self, X, y):
        """``best_estimator_.score(X, y)`` (not a private release: test data only).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        score : float
        """
        return self._check_refit().score(X, y)


def _split_param(value, n, idx):
    if hasattr(value, "__len__") and not isinstance(value, (str, dict)):
        try:
            if _num_samples(value) == n:
                return _safe_indexing(value, idx)
        except TypeError:
            pass
    return value


def _num_features(X):
    shape = getattr(X, "shape", None)
    if shape is not None and len(shape) == 2:
        return int(shape[1])
    return int(np.asarray(X).shape[1])


def _reemit(caught):
    seen = set()
    for w in caught:
        key = (w.category, str(w.message))
        if key in seen:
            continue
        seen.add(key)
        warnings.warn(w.message, w.category, stacklevel=3)
