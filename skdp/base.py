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
from sklearn.utils._param_validation import Interval

from .privacy import (
    BudgetExceededError,
    PrivacyAccountant,
    certify_epsilon,
    recording,
)
from .solvers._distributed import (
    is_dask_collection,
    lazy_rows,
    refuse_undistributed_dask,
)
from .utils._validation import check_generator, resolve_delta, unechoed

__all__ = ["PrivateClassifierMixin", "PrivateEstimatorMixin"]

# First spawn-key entry of data-derived streams: keeps them apart from ledger
# streams (spawn keys of length one) and from a plain seed (no spawn key).
_STREAM_TAG = 0x5EED_D16E

# Instance attribute holding the running fit's digest (words of SHA-256), set
# by the fit wrapper on entry and deleted on exit: it is never left on a
# fitted object, so a pickled model holds nothing derived from the data.
_FIT_DIGEST = "_skdp_running_fit_digest"


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
        # Every fit draws from its own stream. On a shared ledger, its position
        # (clones share the accountant but copy random_state: CV folds).
        # Otherwise a seeded fit mixes a digest of its class, parameters and
        # data into the seed (computed by the fit's wrapper, held only while
        # the fit runs): pipeline steps sharing a seed, CV folds and grid
        # candidates draw independent noise, and the same fit repeated (a
        # clone refitted like its parent) gives the same model.
        if self.accountant is not None:
            stream = self.accountant.claim_stream()
        elif self.random_state is None:
            stream = None  # fresh OS entropy
        else:
            digest = self.__dict__.get(_FIT_DIGEST)
            if digest is None:  # a fit outside the wrapper: parameters only
                digest = _fit_digest(self, [])
            stream = _seeded_stream(digest)
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
        outermost = not self.__dict__.get("_skdp_in_fit", False)
        if outermost:  # dask input: a distributed fit, or a clear error
            refuse_undistributed_dask(self, args, kwargs)
        with np.errstate(all="ignore"):
            if not outermost:  # fit_transform calls fit: one digest, the outer
                return method(self, *args, **kwargs)
            if (
                getattr(self, "random_state", None) is not None
                and getattr(self, "accountant", None) is None
            ):
                bound = signature.bind(self, *args, **kwargs).arguments
                self.__dict__[_FIT_DIGEST] = _fit_digest(self, list(bound.values())[1:])
            self._skdp_in_fit = True
            try:
                with recording() as ledger:
                    out = method(self, *args, **kwargs)
                # Every draw of the fit, written where it was drawn (public).
                self.privacy_ledger_ = ledger
                return out
            finally:
                # Nothing of the call stays on the object (see _FIT_DIGEST).
                self.__dict__.pop("_skdp_in_fit", None)
                self.__dict__.pop(_FIT_DIGEST, None)

    silent._skdp_silent = True
    return silent


#: Parameters left out of the digest: the seed and the ledger choose the
#: stream by themselves, and ``verbose`` does not change what a fit computes.
_NOT_IN_DIGEST = ("random_state", "accountant", "verbose")


def _stream_params(estimator):
    """Parameters that name a fit's stream, as they were before renames.

    A renamed parameter enters under its old name with its effective value,
    and ``random_state``, ``accountant`` and ``verbose`` not at all, so a
    renaming or a new ``verbose`` leaves every seeded stream unchanged.
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


def _class_name(obj):
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


def _update_canonical(h, value):
    """Feed ``value`` to the hash ``h`` canonically, with its type.

    Arrays enter by dtype, shape and raw bytes (``repr`` elides arrays above
    1,000 entries, so two parameters differing in the middle would collide),
    containers recursively, estimators by class and their own parameters,
    functions and classes by qualified name. Every item is framed by its type
    and length, so no two different values feed the same bytes.
    """

    def put(tag, payload=b""):
        payload = payload if isinstance(payload, bytes) else str(payload).encode()
        h.update(f"{tag}:{len(payload)}:".encode())
        h.update(payload)

    if value is None or isinstance(value, (bool, int, float, complex, str)):
        put(type(value).__name__, repr(value))
    elif isinstance(value, bytes):
        put("bytes", value)
    elif isinstance(value, (np.ndarray, np.generic)):
        array = np.ascontiguousarray(value)
        put("ndarray", f"{array.dtype.str}{array.shape}")
        if array.dtype.hasobject:
            for item in array.ravel():
                _update_canonical(h, item)
        else:
            put("bytes", array.tobytes())
    elif isinstance(value, (list, tuple)):
        put(type(value).__name__, len(value))
        for item in value:
            _update_canonical(h, item)
    elif isinstance(value, (set, frozenset)):
        items = []
        for item in value:
            sub = hashlib.sha256()
            _update_canonical(sub, item)
            items.append(sub.digest())
        put("set", b"".join(sorted(items)))
    elif isinstance(value, dict):
        put("dict", len(value))
        items = []
        for key, item in value.items():
            sub = hashlib.sha256()
            _update_canonical(sub, key)
            _update_canonical(sub, item)
            items.append(sub.digest())
        h.update(b"".join(sorted(items)))  # key order is not a parameter
    elif hasattr(value, "get_params") and not isinstance(value, type):
        put("estimator", _class_name(value))
        _update_canonical(h, _stream_params(value))
    elif isinstance(value, type) or callable(value):
        name = getattr(value, "__qualname__", None) or _class_name(value)
        put("callable", f"{getattr(value, '__module__', '')}.{name}")
    elif sp.issparse(value):
        value = value.tocsr()
        put("sparse", f"{value.shape}")
        for part in (value.data, value.indices, value.indptr):
            _update_canonical(h, part)
    elif all(hasattr(value, name) for name in ("dist", "args", "kwds")):
        # a frozen scipy distribution (PrivateSearchCV's param_distributions):
        # its repr is its address, which changes from run to run
        put("distribution", _class_name(value.dist))
        _update_canonical(h, (tuple(value.args), dict(value.kwds)))
    else:
        try:  # pandas and other array-likes: their values
            array = np.asarray(value)
        except Exception:
            array = None
        if array is not None and (array.dtype != object or array.ndim > 0):
            # object columns (strings) item by item: pandas elides their repr
            put("array-like", _class_name(value))
            _update_canonical(h, array)
        else:
            put(_class_name(value), repr(value))


def _raw(part):
    """The bytes of a C-contiguous array, without copying them if possible."""
    try:
        return memoryview(part).cast("B")
    except (TypeError, ValueError):
        return part.tobytes()


def _update_data(h, value):
    """Feed one fit input to ``h`` as the fit reads it, whatever its container.

    Numbers enter as float64 (what input validation makes of them), arrays as
    a matrix (a vector is one column), dense and sparse rows alike as their
    non-zero values, their columns and their count per row, block by block:
    so ``y`` and ``y[:, None]``, integer and float ``X``, C and Fortran order,
    dense and sparse rows of the same matrix give the same digest
    (scikit-learn's checks compare such fits), and different data a
    different one.
    """
    if sp.issparse(value):
        kind = value.dtype.kind
        # integers stay exact until hashed (beyond 2**53 float64 merges them)
        exact = sp.csr_array(
            value, dtype=value.dtype if kind in "iu" else _hash_dtype(value.dtype)
        )
        exact.sum_duplicates()
        exact.eliminate_zeros()
        exact.sort_indices()
        h.update(f"matrix{exact.shape}".encode())
        for start, stop in _row_blocks(exact.shape[0]):
            block = exact[start:stop]
            values = block.data
            _update_block(
                h,
                values.astype(_hash_dtype(values.dtype)),
                block.indices,
                np.diff(block.indptr),
            )
            _update_inexact_integers(h, values)
        return
    if (type(value).__module__ or "").split(".")[0] in ("dask", "dask_expr"):
        # a dask collection is never computed here (that would gather its
        # rows on the driver): its deterministic graph token stands in. The
        # token is the collection's name, so two collections with one name
        # (from_array(name=...), a store whose content changed) collide: the
        # threat model tells dask users to fit with None or an accountant.
        from dask.base import tokenize

        h.update(b"dask" + tokenize(value).encode())
        return
    if hasattr(value, "iloc") and getattr(value, "ndim", 1) == 2:
        # a frame of integer and float columns becomes float64 as a whole:
        # its integer columns' values beyond 2**53 enter exactly first
        for j, column_dtype in enumerate(value.dtypes):
            if isinstance(column_dtype, np.dtype) and column_dtype.kind in "iu":
                column = np.asarray(value.iloc[:, j])
                _update_inexact_integers(h, column, label=f"column{j}")
    try:
        array = np.asarray(value)
    except Exception:
        # An input numpy cannot read (the fit will refuse it): fresh entropy
        # keeps the streams independent, at no reproducibility cost worth
        # keeping.
        h.update(secrets.token_bytes(16))
        return
    array = array.reshape(-1, 1) if array.ndim <= 1 else array.reshape(len(array), -1)
    dtype = _hash_dtype(array.dtype)
    h.update(f"matrix{array.shape}".encode())
    if dtype is None:  # strings, objects: by value
        h.update(repr(array.tolist()).encode())
        return
    for start, stop in _row_blocks(array.shape[0]):
        exact = np.asarray(array[start:stop])
        block = exact.astype(dtype)
        nonzero = exact != 0
        rows, columns = np.nonzero(nonzero)
        _update_block(
            h, block[rows, columns], columns, np.count_nonzero(nonzero, axis=1)
        )
        _update_inexact_integers(h, exact[rows, columns])


def _update_inexact_integers(h, values, label=""):
    """Feed ``h`` the integers among ``values`` that float64 cannot hold exactly.

    Beyond 2**53, float64 merges neighbouring integers (2**53 and 2**53 + 1),
    and a fit need not read them as floats: labels, group identifiers and
    categories are compared exactly. Such values enter by position and exact
    value, so two inputs that differ only there get different digests, while
    integers that float64 holds exactly add nothing (an integer ``X`` and its
    float copy keep one digest).
    """
    if values.dtype.kind not in "iu":
        return
    kind = np.int64 if values.dtype.kind == "i" else np.uint64
    exact = values.astype(kind)
    limit = kind(2**53)
    beyond = exact > limit
    if kind is np.int64:
        beyond |= exact < -limit
    inexact = np.flatnonzero(beyond)
    if inexact.size:
        h.update(f"exact{label}-{values.dtype.kind}{inexact.size}".encode())
        h.update(_raw(np.ascontiguousarray(inexact.astype(np.int64))))
        h.update(_raw(np.ascontiguousarray(exact[inexact])))


def _row_blocks(n_rows):
    """``(start, stop)`` of the row blocks hashed in turn (the same for dense
    and sparse input; 4096 rows bound the memory of one block's copy)."""
    return [(i, min(i + 4096, n_rows)) for i in range(0, n_rows, 4096)]


def _hash_dtype(dtype):
    """float64 for real numbers (as validation reads them), else None or complex."""
    if dtype.kind in "biuf":
        return np.float64
    if dtype.kind == "c":
        return np.complex128
    return None


def _update_block(h, values, columns, counts):
    for part, kind in ((values, None), (columns, np.int64), (counts, np.int64)):
        part = np.ascontiguousarray(part if kind is None else part.astype(kind))
        h.update(_raw(part))


def _seeded_stream(digest):
    """Spawn key of a seeded fit without an accountant, from its digest.

    ``check_generator(random_state, stream=_seeded_stream(_fit_digest(
    estimator, [X, y])))`` is the generator of ``estimator.fit(X, y)``.
    """
    return (_STREAM_TAG, *digest)


def _fit_digest(estimator, values):
    """Spawn-key words from an estimator's class, parameters and fit inputs.

    ``values`` are the fit's arguments in declaration order (a ``**kwargs``
    dict is taken in key order; ``None`` is skipped), so ``fit_transform(X,
    y=y)`` and ``fit(X, y)`` agree. Parameters are hashed canonically
    (:func:`_update_canonical`), without ``random_state``, ``accountant``
    and ``verbose``. A seeded fit without an accountant mixes the eight
    32-bit words into its seed's :class:`numpy.random.SeedSequence` as a
    spawn key. The digest is a function of the data, so it is never stored:
    the fit wrapper computes it on entry and deletes it on exit.
    """
    h = hashlib.sha256()
    _update_canonical(h, _class_name(estimator))
    _update_canonical(h, _stream_params(estimator))
    flat = []
    for value in values:
        if isinstance(value, dict) and not sp.issparse(value):  # dok is a dict
            flat.extend(value[k] for k in sorted(value))
        else:
            flat.append(value)
    for value in flat:
        if value is not None:
            _update_data(h, value)
    words = h.digest()
    return tuple(int.from_bytes(words[i : i + 4], "little") for i in range(0, 32, 4))
