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
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import _clone_parametrized
from sklearn.utils._param_validation import Interval

from .privacy import BudgetExceededError, PrivacyAccountant, certify_epsilon
from .solvers._distributed import refuse_undistributed_dask
from .utils._validation import check_generator, resolve_delta

__all__ = ["PrivateEstimatorMixin"]

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

    _privacy_parameter_constraints = {
        "epsilon": [Interval(Real, 0, None, closed="right")],  # np.inf allowed
        # Exactly what fits accept: Gaussian noise needs delta > 0. A None
        # resolves to n ** -1.1, refused above 0.0794 (n < 10; resolve_delta).
        "delta": [Interval(Real, 0, 1, closed="neither"), None],
        "accountant": [PrivacyAccountant, None],
        "random_state": ["random_state", np.random.Generator],
    }

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
        epsilon = np.inf if self._fit_is_free() else self.epsilon
        self.delta_ = resolve_delta(self.delta, n_samples, epsilon)
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
            return
        eps = certify_epsilon(plan, self.delta_) if self.delta_ > 0 else np.inf
        self.privacy_spent_ = (float(eps), float(self.delta_))


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
    params = repr(sorted(estimator.get_params(deep=False).items()))
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
                repr(part.tolist()).encode() if part.dtype == object else part.tobytes()
            )
    words = h.digest()[:16]
    return tuple(int.from_bytes(words[i : i + 4], "little") for i in range(0, 16, 4))
