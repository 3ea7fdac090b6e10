"""Missing-value imputation by a constant (free) or a private mean."""

import math
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
from sklearn.utils._param_validation import StrOptions

from ..privacy import (
    GaussianDpEvent,
    NoOpDpEvent,
    calibrate_noise_multiplier,
    gaussian_mechanism,
)
from ..solvers._distributed import check_budget_before_pass, is_dask_collection
from ..utils._validation import validate_data  # errors quote no data
from ._base import PrivateTransformerMixin
from ._bounds import BOUNDS_CONSTRAINT
from ._dask_fit import lazy_transform, validate_dask_rows
from ._moments import clipped_unit_values, moments_sensitivity, sparse_columns

__all__ = ["SimpleImputer", "private_observed_mean"]

#: Weight of the observed indicator in the released pair: with it, the pair
#: ``(u o, c o)`` moves by at most 1 in L2 norm when a row is replaced.
_COUNT_WEIGHT = math.sqrt(0.75)


def private_observed_mean(X, lower, upper, noise_multiplier, *, rng, before_noise=None):
    """Private mean of each column's observed (non-NaN) values, clipped to bounds.

    With ``u`` the clipped value mapped to ``[-1/2, 1/2]`` and ``o`` the
    observed indicator, the release is the mean over rows of
    ``(u_j o_j, c o_j)`` for every column, ``c = sqrt(3)/2``: a replaced row
    moves each pair by at most 1 (``(u, c)`` against ``(0, 0)``: ``1/4 +
    3/4``; two observed values: ``|u - u'| <= 1``), so the vector has
    replace-one sensitivity ``sqrt(d) / n`` and one ``GaussianDpEvent``
    covers it. The mean is the ratio (post-processing), at the middle of the
    range where the noisy count is not positive.

    Sparse input: an implicit zero is an observed ``0`` (as in
    scikit-learn's imputer with ``missing_values=np.nan``); only stored NaN
    entries are missing, and the statistic is computed from the stored
    entries (equal to the dense one up to summation order).

    Parameters
    ----------
    X : ndarray or sparse matrix of shape (n_samples, n_features)
        May contain NaN.
    lower, upper : ndarray of shape (n_features,)
        Public bounds.
    noise_multiplier : float
    rng : numpy.random.Generator

    Returns
    -------
    mean : ndarray of shape (n_features,)
    pre_noise : ndarray of shape (2 n_features,)
        The released statistic before noise.
    """
    n, d = X.shape
    if sp.issparse(X):
        stat = _sparse_observed_statistic(X, lower, upper)
    elif is_dask_collection(X):  # clipped and summed per chunk on the workers
        from ._dask_fit import observed_sums_on_workers

        stat = observed_sums_on_workers(X, lower, upper, _COUNT_WEIGHT)
    else:
        observed = ~np.isnan(X)
        U = np.where(observed, clipped_unit_values(np.nan_to_num(X), lower, upper), 0.0)
        stat = np.empty(2 * d)
        stat[0::2] = U.mean(axis=0)
        stat[1::2] = _COUNT_WEIGHT * observed.mean(axis=0)
    if before_noise is not None:
        before_noise()
    sens = moments_sensitivity(n, d)
    noisy = np.atleast_1d(gaussian_mechanism(stat, sens, noise_multiplier, rng=rng))
    frac = noisy[1::2] / _COUNT_WEIGHT
    with np.errstate(all="ignore"):
        m_u = np.where(frac > 0, noisy[0::2] / frac, 0.0)
    m_u = np.clip(np.nan_to_num(m_u), -0.5, 0.5)
    return lower + (upper - lower) * (m_u + 0.5), stat


def _sparse_observed_statistic(X, lower, upper):
    """The pre-noise statistic of :func:`private_observed_mean`, sparse ``X``.

    Column sums over the stored entries plus ``n - nnz_j`` implicit zeros,
    each with the unit value of ``0`` clipped to the column's bounds.
    """
    X, cols, lower, upper, implicit, u_zero = sparse_columns(X, lower, upper)
    n, d = X.shape
    missing = np.isnan(X.data)
    u_data = np.where(
        missing,
        0.0,
        clipped_unit_values(np.nan_to_num(X.data), lower[cols], upper[cols]),
    )
    stat = np.empty(2 * d)
    with np.errstate(all="ignore"):
        stat[0::2] = (np.bincount(cols, u_data, minlength=d) + implicit * u_zero) / n
        n_missing = np.bincount(cols, missing.astype(float), minlength=d)
        stat[1::2] = _COUNT_WEIGHT * (n - n_missing) / n
    return stat


class SimpleImputer(
    PrivateTransformerMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Replace missing values (NaN) by a constant or by a private column mean.

    ``strategy="constant"`` reads nothing from the data and is free.
    ``strategy="mean"`` releases, per column, the private mean of the
    observed values clipped to the public ``bounds`` (one Gaussian release of
    the clipped sums and the observed counts, see
    :func:`private_observed_mean`). Every column is kept, also one with no
    observed value (scikit-learn's ``keep_empty_features=True``): dropping
    it would reveal that it is empty.

    Sparse input (CSR/CSC) is accepted as by scikit-learn's imputer with
    ``missing_values=np.nan``: implicit zeros are observed zeros, stored NaN
    entries are filled, and the output stays sparse.

    With ``epsilon=np.inf`` and bounds that contain the data, the means are
    scikit-learn's :class:`~sklearn.impute.SimpleImputer`'s (up to
    rounding).

    Parameters
    ----------
    strategy : {"mean", "constant"}, default="constant"
        Fill value source.
    fill_value : float, default=0.0
        Fill value of ``strategy="constant"``.
    bounds : tuple (lower, upper), array of shape (2, n_features) or None, default=None
        Public range of each column; required by ``strategy="mean"``.
    epsilon : float, default=1.0
        Budget of the private mean (unused by ``"constant"``).
    delta : float or None, default=None
        ``None`` resolves to ``n ** -1.1`` at fit (``delta_``).
    accountant : PrivacyAccountant or None, default=None
        Shared budget to spend from.
    random_state : int, Generator or None, default=None
        Seed of the noise.

    Attributes
    ----------
    statistics_ : ndarray of shape (n_features,)
        Fill value of each column.
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

    Notes
    -----
    Neighbouring datasets differ by replacing one row (values and missing
    pattern); ``n`` is public. Floating-point Gaussian sampling is not
    exactly DP (Mironov 2012).

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import SimpleImputer
    >>> X = np.array([[1.0, np.nan], [np.nan, 3.0]])
    >>> SimpleImputer(fill_value=-1.0).fit_transform(X)
    array([[ 1., -1.],
           [-1.,  3.]])
    """

    _parameter_constraints = {
        **PrivateTransformerMixin._privacy_parameter_constraints,
        "strategy": [StrOptions({"mean", "constant"})],
        "fill_value": [Real],
        "bounds": BOUNDS_CONSTRAINT,
    }

    def __init__(
        self,
        *,
        strategy="constant",
        fill_value=0.0,
        bounds=None,
        epsilon=1.0,
        delta=None,
        accountant=None,
        random_state=None,
    ):
        self.strategy = strategy
        self.fill_value = fill_value
        self.bounds = bounds
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data (see ``_base``)."""
        return self.strategy == "constant"

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set the fill values (privately for ``strategy="mean"``).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : SimpleImputer
        """
        if is_dask_collection(X):  # sums per chunk on the workers (._dask_fit)
            # mean: inf refused from flags of the sums' pass, then charged
            one_pass = self.strategy == "mean"
            X = validate_dask_rows(
                self, X, allow_nan=True, needs_bounds=False, read=not one_pass
            )
        else:
            X = validate_data(
                self,
                X,
                dtype=np.float64,
                ensure_all_finite="allow-nan",
                accept_sparse=["csr", "csc"],
            )
        n, d = X.shape
        if self.strategy == "mean" and self.bounds is None:
            raise ValueError(
                'strategy="mean" needs public bounds=(lower, upper) per column: '
                'the private mean clips to them. Or use strategy="constant".'
            )
        declared = self._declared_bounds(d)
        delta, rng = self._begin_private_fit(n)
        if self.strategy == "constant":
            plan, z = NoOpDpEvent(), 0.0
        else:
            z = calibrate_noise_multiplier(GaussianDpEvent, self.epsilon, delta)
            plan = self._plan_or_free(GaussianDpEvent(z))
        charge = None
        if is_dask_collection(X) and one_pass:
            check_budget_before_pass(self, plan)
            charge = partial(self._spend, plan)
        else:
            self._spend(plan)  # before any data is read
        if self.strategy == "constant":
            self.statistics_ = np.full(d, float(self.fill_value))
        else:
            self.statistics_, _ = private_observed_mean(
                X, *declared, z, rng=rng, before_noise=charge
            )
        self._record_privacy(plan)
        return self

    def transform(self, X):
        """Fill the NaN entries of ``X`` with ``statistics_``.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray or sparse matrix of shape (n_samples, n_features)
            Sparse (the input's format) for sparse input.
        """
        if is_dask_collection(X):  # lazy, per chunk on the workers
            return lazy_transform(self.transform, X)
        X = self._validate_for_transform(
            X,
            "statistics_",
            ensure_all_finite="allow-nan",
            accept_sparse=["csr", "csc"],
        )
        if sp.issparse(X):
            # a copy: only the stored NaN entries change, zeros stay implicit
            if not X.has_canonical_format:  # a duplicated NaN entry is one NaN
                X = X.copy()
                X.sum_duplicates()
            missing = np.isnan(X.data)
            if X.format == "csr":
                cols = X.indices
            else:
                cols = np.repeat(np.arange(X.shape[1]), np.diff(X.indptr))
            X.data[missing] = self.statistics_[cols[missing]]
            return X
        missing = np.isnan(X)
        X[missing] = np.broadcast_to(self.statistics_, X.shape)[missing]
        return X

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.allow_nan = True
        tags.input_tags.sparse = True
        return tags
