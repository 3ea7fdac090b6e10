"""MinMaxScaler from public bounds (free) or privately estimated ones."""

from functools import partial
from numbers import Real

import numpy as np
import scipy.sparse as sp
from sklearn.base import (
    BaseEstimator,
    OneToOneFeatureMixin,
    TransformerMixin,
    _fit_context,
)

from ..privacy import NoOpDpEvent
from ..solvers._distributed import check_budget_before_pass, is_dask_collection
from ..utils._validation import validate_data  # errors quote no data
from ._base import PrivateTransformerMixin
from ._bounds import (
    BOUNDS_CONSTRAINT,
    bounds_event,
    estimate_bounds,
    quantile_epsilon,
    saturate,
)
from ._dask_fit import lazy_transform, validate_dask_rows

__all__ = ["MinMaxScaler"]


class MinMaxScaler(
    PrivateTransformerMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Scale each column from its public range to ``feature_range``.

    With declared ``bounds`` the fit reads nothing from the data (only its
    shape) and costs no privacy: ``privacy_spent_ == (0, 0)``. With
    ``bounds=None`` the range is estimated privately from the whole
    ``epsilon``: a low and a high quantile per column (see
    :class:`StandardScaler`). ``transform`` clips to the bounds by default,
    so its output stays in ``feature_range``.

    With ``epsilon=np.inf`` and bounds equal to each column's minimum and
    maximum, the result is scikit-learn's
    :class:`~sklearn.preprocessing.MinMaxScaler`.

    Parameters
    ----------
    bounds : tuple (lower, upper), array of shape (2, n_features) or None, default=None
        Public range of each column (scalars or arrays of shape
        ``(n_features,)``). ``None`` estimates it privately.
    feature_range : tuple (min, max), default=(0, 1)
        Output range.
    clip : bool, default=True
        Clip transformed values to ``feature_range`` (values outside the
        bounds then map to its ends). Without it, a result that overflows
        saturates at the largest float, never ``inf``.
    epsilon : float, default=1.0
        Budget of the bound estimation (unused with declared bounds).
    delta : float or None, default=None
        ``None`` resolves to ``n ** -1.1`` at fit (``delta_``).
    accountant : PrivacyAccountant or None, default=None
        Shared budget to spend from.
    random_state : int, Generator or None, default=None
        Seed of the noise.

    Attributes
    ----------
    data_min_ : ndarray of shape (n_features,)
        Lower bound used (declared or private), not the data's minimum.
    data_max_ : ndarray of shape (n_features,)
        Upper bound used.
    data_range_ : ndarray of shape (n_features,)
        ``data_max_ - data_min_``.
    scale_ : ndarray of shape (n_features,)
        Per-column factor of the affine map.
    min_ : ndarray of shape (n_features,)
        Per-column offset of the affine map.
    n_samples_seen_ : int
        Number of rows (public).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    delta_ : float
    privacy_plan_ : DpEvent
    privacy_spent_ : tuple (epsilon, delta)
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.

    See Also
    --------
    StandardScaler : private means and standard deviations.

    References
    ----------
    - Holohan et al., "Diffprivlib: the IBM differential privacy library", 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import MinMaxScaler
    >>> X = np.array([[20.0, 0.0], [90.0, 5000.0]])
    >>> sc = MinMaxScaler(bounds=([17, 0], [90, 99999])).fit(X)
    >>> sc.privacy_spent_
    (0.0, 0.0)
    >>> sc.transform([[17.0, 200_000.0]])
    array([[0., 1.]])
    """

    _parameter_constraints = {
        **PrivateTransformerMixin._privacy_parameter_constraints,
        "bounds": BOUNDS_CONSTRAINT,
        "feature_range": [tuple],
        "clip": ["boolean"],
    }

    def __init__(
        self,
        *,
        bounds=None,
        feature_range=(0, 1),
        clip=True,
        epsilon=1.0,
        delta=None,
        accountant=None,
        random_state=None,
    ):
        self.bounds = bounds
        self.feature_range = feature_range
        self.clip = clip
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data (see ``_base``)."""
        return self.bounds is not None

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set the affine map from the bounds (estimated privately if ``None``).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : MinMaxScaler
        """
        lo_out, hi_out = self.feature_range
        if not (
            isinstance(lo_out, Real) and isinstance(hi_out, Real) and lo_out < hi_out
        ):
            raise ValueError(
                f"feature_range must be (min, max) with min < max, got {self.feature_range!r}."
            )
        _reject_sparse(X)
        if is_dask_collection(X):  # bounds=None: refused in the counts' pass
            X = validate_dask_rows(self, X, read=self.bounds is not None)
        else:
            X = validate_data(self, X, dtype=np.float64)
        n, d = X.shape
        declared = self._declared_bounds(d)
        self.delta_, rng = self._begin_private_fit(n)
        if declared is not None:
            plan = NoOpDpEvent()
        else:
            eps_q = quantile_epsilon(self.epsilon, 1.0, d)
            plan = self._plan_or_free(bounds_event(eps_q, d))
        charge = None
        if is_dask_collection(X) and declared is None:  # charged after the pass
            check_budget_before_pass(self, plan)
            charge = partial(self._spend, plan)
        else:
            self._spend(plan)  # before any data is read
        # inline: a helper frame would shift estimate_bounds' stacklevel=3 warning
        lower, upper = (
            declared
            if declared is not None
            else estimate_bounds(X, eps_q, rng, before_noise=charge)
        )
        self.n_samples_seen_ = n
        self.data_min_, self.data_max_ = lower, upper
        self.data_range_ = upper - lower
        self.scale_ = (hi_out - lo_out) / self.data_range_
        self.min_ = lo_out - lower * self.scale_
        self._record_privacy(plan)
        return self

    def transform(self, X):
        """Map each column's bounds to ``feature_range``.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        _reject_sparse(X)
        if is_dask_collection(X):  # lazy, per chunk on the workers
            return lazy_transform(self.transform, X)
        X = self._validate_for_transform(X, "n_samples_seen_")
        # Rows may be private (a Pipeline's fit transforms its training data):
        # an overflow on an extreme value must not warn (a warning that one
        # record triggers is a release); clipping then maps it to the end.
        with np.errstate(all="ignore"):
            X *= self.scale_
            X += self.min_
        if self.clip:
            np.clip(X, self.feature_range[0], self.feature_range[1], out=X)
        else:
            # An overflow to inf would make the next step raise on one record.
            saturate(X)
        return X

    def inverse_transform(self, X):
        """Undo :meth:`transform` (clipped values stay at the bounds).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        _reject_sparse(X)
        if is_dask_collection(X):  # lazy, per chunk on the workers
            return lazy_transform(self.inverse_transform, X)
        X = self._validate_for_transform(X, "n_samples_seen_")
        with np.errstate(all="ignore"):
            X -= self.min_
            X /= self.scale_
        return X


def _reject_sparse(X):
    """Sparse input is refused, as by scikit-learn's ``MinMaxScaler``.

    The map ``x -> x * scale + min`` sends zeros to ``min``, which would make
    the matrix dense.
    """
    if sp.issparse(X):
        raise TypeError(
            "MinMaxScaler does not support sparse input: it maps zeros to "
            "feature_range[0], which makes the matrix dense. Consider "
            "StandardScaler(with_mean=False), which scales sparse input "
            "without densifying it."
        )
