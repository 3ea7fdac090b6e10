"""What every skdp estimator shares: privacy parameters, budget and randomness.

An estimator's ``fit`` reads like this::

    X, y = validate_data(self, X, y, ...)          # errors before any noise
    delta, rng = self._begin_private_fit(n)        # resolve delta_, fresh Generator
    plan = <public privacy plan: a DpEvent, data-independent>
    self._spend(plan)                              # shared budget, may raise
    result = solvers.<algorithm>(X, y, ..., rng)   # the only place noise is drawn
    self._record_privacy(plan)                     # privacy_spent_
"""

import functools
import hashlib
import inspect
import secrets
import warnings
from numbers import Real

import numpy as np
import scipy.sparse as sp
from scipy.special import expit, logsumexp
from sklearn.base import _clone_parametrized
from sklearn.utils._param_validation import Interval

from .privacy import BudgetExceededError, PrivacyAccountant, certify_epsilon
from .solvers._distributed import (
    is_dask_collection,
    lazy_rows,
    refuse_undistributed_dask,
)
from .utils._validation import check_generator, resolve_delta, unechoed

__all__ = ["PrivateClassifierMixin", "PrivateEstimatorMixin"]

# First spawn-key entry of clone streams: keeps them apart from ledger streams
# (spawn keys of length one) and from the parent's own stream (no spawn key).
_CLONE_STREAM_TAG = 0x5EED_C10E


class PrivateEstimatorMixin:
    """Mixin for DP estimators: parameters ``epsilon``, ``delta``, ``accountant``, ``random_state``.

    Neighbouring datasets differ by replacing one record; ``n`` is public.

    Every ``fit``, ``partial_fit`` and ``fit_transform`` that a subclass defines
    runs under ``np.errstate(all="ignore")``: a floating-point warning that one
    record raises and its neighbour does not (an overflow in input validation,
    a subnormal norm) would be a release outside the privacy plan. The shared
    helpers (:func:`skdp.utils.safe_row_norms`, :func:`skdp.utils.clip_rows`)
    also compute their values so that none is discarded; this guard covers
    every other operation, including scikit-learn's input validation.
    """

    def __sklearn_clone__(self):
        """``clone`` that lets the copy derive its own random stream.

        A clone that fits with the ``random_state`` it inherited (not set
        again with ``set_params``) and without an accountant draws from a
        stream derived from that seed, its parameters and a digest of the data
        it is fitted on. The folds of ``cross_val_score`` and the candidates
        of ``GridSearchCV`` therefore draw independent noise, while two clones
        fitted on the same data with the same parameters give the same model,
        and so does a clone refitted exactly like its fitted parent
        (scikit-learn's clone-consistency; a repeated release tells nothing
        new).
        """
        new = _clone_parametrized(self)
        new._skdp_inherited_seed = True
        if "_skdp_stream_key" in vars(self):
            # A clone refitted like its (fitted) parent repeats its parent.
            parent_digest = getattr(self, "_skdp_fit_digest", None)
            new._skdp_parent_fit = (parent_digest, self._skdp_stream_key)
        return new

    def set_params(self, **params):
        """Set parameters; an explicit ``random_state`` ends stream inheritance.

        Parameters
        ----------
        **params : dict
            Estimator parameters.

        Returns
        -------
        self : estimator instance
        """
        if "random_state" in params:
            self.__dict__.pop("_skdp_inherited_seed", None)
            self.__dict__.pop("_skdp_parent_fit", None)
        return super().set_params(**params)

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for name in ("fit", "partial_fit", "fit_transform"):
            method = cls.__dict__.get(name)
            if method is not None and not getattr(method, "_skdp_silent", False):
                setattr(cls, name, _silent_floating_point(method))
        # scikit-learn's score (RegressorMixin, ClassifierMixin) validates y
        # in its metric, whose errors quote labels or values: re-raised
        # without them (skdp's own score methods are left as they are).
        score = getattr(cls, "score", None)
        if score is not None and getattr(score, "__module__", "").startswith(
            "sklearn."
        ):
            cls.score = _unechoed_score(score)

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="right")],  # np.inf allowed
        # Exactly what fits accept: Gaussian noise needs delta > 0. A None
        # resolves to n ** -1.1, refused above 0.0794 (n < 10; resolve_delta).
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
    }

    #: ``{old parameter name: new name}``: renamed parameters kept for one
    #: release. The old parameter's default is the string ``"deprecated"``;
    #: a fit with any other value warns (FutureWarning) and uses it.
    _renamed_parameters = {}

    def _warn_renamed_parameters(self):
        """FutureWarning for every renamed parameter that was set (public).

        Raises
        ------
        ValueError
            If both the old name and its new name were set to other than
            the new name's default: the two could disagree, and neither
            silently wins.
        """
        defaults = {
            name: parameter.default
            for name, parameter in inspect.signature(
                type(self).__init__
            ).parameters.items()
        }
        for old, new in self._renamed_parameters.items():
            if not _is_deprecated_default(getattr(self, old, "deprecated")):
                value, default = getattr(self, new, None), defaults.get(new)
                if value is not None and value != default:
                    raise ValueError(
                        f"Both `{old}` (renamed) and `{new}` were set: pass "
                        f"only `{new}`."
                    )
                warnings.warn(
                    f"`{old}` was renamed `{new}` in skdp 0.2 and will be removed "
                    f"in 0.3; its value is used as `{new}` (a share of the GDP "
                    f"budget mu**2). Pass `{new}` instead.",
                    FutureWarning,
                    stacklevel=4,
                )

    def _estimation_share(self):
        """Share of ``mu**2`` spent on estimating public quantities.

        ``estimation_share``, or the value of its deprecated old name if that
        was set.
        """
        for old, new in self._renamed_parameters.items():
            value = getattr(self, old, "deprecated")
            if new == "estimation_share" and not _is_deprecated_default(value):
                return float(value)
        return float(self.estimation_share)

    def _progress(self, message, level=1):
        """Print one progress line when ``verbose >= level``.

        Only public quantities may be printed: counters, the parameters,
        ``n``, the plan and its noise multipliers, ``privacy_spent_``; never
        a value, time or count computed from the private data (scikit-learn's
        ``verbose`` convention, under DP).
        """
        if getattr(self, "verbose", 0) >= level:
            print(f"[{type(self).__name__}] {message}", flush=True)

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data but its shape (public)."""
        return False

    def _begin_private_fit(self, n_samples):
        """Resolve ``delta_`` and build the fit's random generator.

        Parameters
        ----------
        n_samples : int
            Public number of records.

        Returns
        -------
        delta : float
        rng : numpy.random.Generator
        """
        # A fit that releases nothing (declared bounds or categories) has no
        # delta at stake: the cap on the default delta does not apply to it.
        self._warn_renamed_parameters()
        epsilon = np.inf if self._fit_is_free() else self.epsilon
        self.delta_ = resolve_delta(self.delta, n_samples, epsilon)
        self._progress(
            f"fit on {n_samples} records: epsilon={self.epsilon:g}, "
            f"delta_={self.delta_:.3g}"
        )
        # Clones share the accountant but copy random_state: give each fit on
        # the ledger its own stream, or CV folds would reuse the same noise.
        # Without an accountant, a clone that kept its parent's random_state
        # derives its stream from its parameters and data (``_fit_digest``).
        if self.accountant is not None:
            stream = self.accountant.claim_stream()
        else:
            stream = None
            digest = getattr(self, "_skdp_fit_digest", None)
            if getattr(self, "_skdp_inherited_seed", False) and digest is not None:
                parent = getattr(self, "_skdp_parent_fit", None)
                if parent is not None and parent[0] == digest:
                    stream = parent[1]  # same data and parameters: same model
                else:
                    stream = (_CLONE_STREAM_TAG, *digest)
            self._skdp_stream_key = stream
        return self.delta_, check_generator(self.random_state, stream)

    def _spend(self, plan):
        """Charge ``plan`` to the shared accountant, if any, before any noise."""
        self._progress(
            "privacy plan fixed before reading the data"
            + (", charged to the shared accountant" if self.accountant else "")
        )
        self._progress(f"plan: {plan!r}", level=2)
        if self.accountant is None:
            return
        # A non-private fit releases its statistics exactly: no finite budget
        # pays for it, whatever the plan says its noise costs (none at all).
        try:
            if np.isinf(self.epsilon) and not np.isinf(self.accountant.epsilon):
                raise BudgetExceededError(
                    f"{type(self).__name__}(epsilon=inf) is not private, so a "
                    f"finite budget (epsilon={self.accountant.epsilon:g}) cannot "
                    "pay for it. No data was used."
                )
            self.accountant.spend(plan, label=type(self).__name__)
        except (BudgetExceededError, RuntimeError):
            # A refused refit (over budget, or a ledger copied to another
            # process or pickled) must not leave a mix of the new input's
            # attributes (n_features_in_) and the old model: forget the fit.
            for name in [k for k in vars(self) if k.endswith("_") and k[0] != "_"]:
                delattr(self, name)
            raise

    def _record_privacy(self, plan):
        """Set ``privacy_spent_`` to the certified ``(epsilon, delta_)`` of ``plan``."""
        if np.isinf(self.epsilon):
            self.privacy_spent_ = (np.inf, self.delta_)
            self._progress("done: epsilon=inf, no noise")
            return
        eps = certify_epsilon(plan, self.delta_) if self.delta_ > 0 else np.inf
        self.privacy_spent_ = (float(eps), float(self.delta_))
        self._progress(
            f"done: privacy_spent_=({self.privacy_spent_[0]:.4g}, "
            f"{self.privacy_spent_[1]:.3g})"
        )


class PrivateClassifierMixin:
    """Probabilities and labels of a linear classifier from its scores.

    A classifier defines ``decision_function`` (no noise: predictions are
    post-processing of the released model) and ``classes_``; this mixin
    derives ``predict_proba``, ``predict_log_proba`` and ``predict`` from it,
    the same way for every skdp classifier. Scores of shape ``(n,)`` are
    binary (``p = expit(score)``); scores of shape ``(n, K)`` are a softmax
    when ``_softmax`` is true, else one-vs-rest probabilities normalised to
    sum to one.
    """

    _softmax = False

    def predict_proba(self, X):
        """Class probabilities (one-vs-rest scores normalised if more than two classes).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if is_dask_collection(X):  # lazy, per chunk
            return lazy_rows(self.predict_proba, X, len(self.classes_))
        scores = self.decision_function(X)
        if scores.ndim == 1:
            p = expit(scores)
            return np.column_stack([1.0 - p, p])
        if self._softmax:
            return np.exp(scores - logsumexp(scores, axis=1, keepdims=True))
        p = expit(scores)
        total = p.sum(axis=1, keepdims=True)
        return np.divide(
            p, total, out=np.full_like(p, 1.0 / p.shape[1]), where=total > 0
        )

    def predict_log_proba(self, X):
        """Logarithm of :meth:`predict_proba`.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_classes)
        """
        if is_dask_collection(X):  # lazy, per chunk
            return lazy_rows(self.predict_log_proba, X, len(self.classes_))
        scores = self.decision_function(X)
        # In log space, so that confident predictions stay finite.
        if scores.ndim == 1:
            return -np.column_stack(
                [np.logaddexp(0.0, scores), np.logaddexp(0.0, -scores)]
            )
        if self._softmax:
            return scores - logsumexp(scores, axis=1, keepdims=True)
        log_p = -np.logaddexp(0.0, -scores)
        return log_p - logsumexp(log_p, axis=1, keepdims=True)

    def predict(self, X):
        """Predicted class labels.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        if is_dask_collection(X):  # lazy, per chunk on the workers
            return lazy_rows(self.predict, X, dtype=self.classes_.dtype)
        scores = self.decision_function(X)  # checks fitted first
        if scores.ndim == 1:
            return self.classes_[(scores > 0).astype(int)]
        return self.classes_[np.argmax(scores, axis=1)]


def _unechoed_score(score):
    """``score`` whose input errors quote no data (:func:`~.utils._validation.unechoed`)."""

    @functools.wraps(score)
    def unechoed_score(self, X, y, **kwargs):
        return unechoed(score, self, X, y, **kwargs)

    unechoed_score.__module__ = __name__
    return unechoed_score


def _is_deprecated_default(value):
    return isinstance(value, str) and value == "deprecated"


def _silent_floating_point(method):
    """Run ``method`` with all numpy floating-point warnings silenced."""

    signature = inspect.signature(method)

    @functools.wraps(method)
    def silent(self, *args, **kwargs):
        outermost = not getattr(self, "_skdp_in_fit", False)
        if outermost:  # dask input: a distributed fit, or a clear error
            refuse_undistributed_dask(self, args, kwargs)
        with np.errstate(all="ignore"):
            if (
                outermost
                and getattr(self, "random_state", None) is not None
                and getattr(self, "accountant", None) is None
            ):
                # fit_transform calls fit: one digest, from the outer call.
                bound = signature.bind(self, *args, **kwargs).arguments
                self._skdp_fit_digest = _fit_digest(self, list(bound.values())[1:])
            self._skdp_in_fit = True
            try:
                return method(self, *args, **kwargs)
            finally:
                if outermost:
                    self._skdp_in_fit = False

    silent._skdp_silent = True
    return silent


#: Parameters that do not change what a fit computes: left out of the digest,
#: so that adding them keeps every clone's random stream.
_NOT_IN_DIGEST = ("verbose",)


def _stream_params(estimator):
    """Parameters that name a clone's stream, as they were before renames.

    A renamed parameter enters under its old name with its effective value,
    and ``verbose`` not at all, so a renaming or a new ``verbose`` leaves the
    random streams of inherited-seed clones (hence every cross-validated
    number) unchanged.
    """
    params = dict(estimator.get_params(deep=False))
    for old, new in getattr(estimator, "_renamed_parameters", {}).items():
        if old in params and new in params:
            value = params.pop(new)
            if _is_deprecated_default(params[old]):
                params[old] = value
    for name in _NOT_IN_DIGEST:
        params.pop(name, None)
    return params


def _raw(part):
    """The bytes of a C-contiguous array, without copying them if possible."""
    try:
        return memoryview(part).cast("B")
    except (TypeError, ValueError):
        return part.tobytes()


def _fit_digest(estimator, values):
    """Spawn-key words from an estimator's parameters and its fit's inputs.

    ``values`` are the fit's arguments in declaration order (a ``**kwargs``
    dict is taken in key order; ``None`` is skipped), so ``fit_transform(X,
    y=y)`` and ``fit(X, y)`` agree. Only the random stream of an
    inherited-seed clone depends on it: with a secret seed the derived
    streams of different folds or candidates look independent, and with a
    published seed the noise was recoverable anyway (see the threat model).
    Nothing of it is released.
    """
    params = repr(sorted(_stream_params(estimator).items()))
    h = hashlib.sha256(params.encode())
    flat = []
    for value in values:
        if isinstance(value, dict) and not sp.issparse(value):  # dok is a dict
            flat.extend(value[k] for k in sorted(value))
        else:
            flat.append(value)
    for value in flat:
        if value is None:
            continue
        if sp.issparse(value):
            value = value.tocsr()
            parts = [value.data, value.indices, value.indptr, np.asarray(value.shape)]
        elif (type(value).__module__ or "").split(".")[0] in ("dask", "dask_expr"):
            # a dask collection is never computed here (that would gather its
            # rows on the driver): its deterministic graph token stands in
            from dask.base import tokenize

            parts = [np.frombuffer(tokenize(value).encode(), dtype=np.uint8)]
        else:
            try:
                parts = [np.asarray(value)]
            except Exception:
                # An input numpy cannot read (the fit will refuse it): fresh
                # entropy keeps the streams independent, at no reproducibility
                # cost worth keeping.
                parts = [np.frombuffer(secrets.token_bytes(16), dtype=np.uint8)]
        for part in parts:
            part = np.ascontiguousarray(part)
            h.update(f"{part.dtype}{part.shape}".encode())
            h.update(
                repr(part.tolist()).encode() if part.dtype == object else _raw(part)
            )
    words = h.digest()[:16]
    return tuple(int.from_bytes(words[i : i + 4], "little") for i in range(0, 16, 4))
