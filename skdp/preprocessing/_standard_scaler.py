"""StandardScaler with private means and standard deviations."""

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
from sklearn.utils._param_validation import Hidden, Interval, StrOptions

from ..privacy import (
    ComposedDpEvent,
    GaussianDpEvent,
    NoOpDpEvent,
    calibrate_noise_multiplier,
)
from ..solvers._distributed import check_budget_before_pass, is_dask_collection
from ..utils._validation import validate_data  # errors quote no data
from ._base import PrivateTransformerMixin
from ._bounds import (
    BOUNDS_CONSTRAINT,
    bounds_event,
    estimate_bounds,
    saturate,
    share_quantile_epsilon,
)
from ._dask_fit import lazy_transform, validate_dask_rows
from ._moments import private_moments

__all__ = ["StandardScaler"]

#: Default ``estimation_share`` (of ``mu**2``) of the private bounds.
ESTIMATION_SHARE = 0.3


class StandardScaler(
    PrivateTransformerMixin, OneToOneFeatureMixin, TransformerMixin, BaseEstimator
):
    """Standardize features by a private mean and standard deviation.

    Every value is clipped to its column's public range ``bounds``; the
    per-column means and second moments of the clipped values are released
    together by one Gaussian mechanism (replace-one L2 sensitivity
    ``sqrt(n_features) / n`` after mapping each range to ``[-1/2, 1/2]``;
    see Notes). ``transform`` then clips to the same bounds (``clip=True``)
    and computes ``(x - mean_) / scale_`` as scikit-learn's
    :class:`~sklearn.preprocessing.StandardScaler` does.

    With ``epsilon=np.inf`` and bounds that contain the data, the fitted
    ``mean_``, ``var_`` and ``scale_`` are scikit-learn's (up to rounding).

    Sparse input (CSR/CSC) needs ``with_mean=False``, as in scikit-learn:
    the statistic adds each column's implicit zeros in closed form (equal
    to the dense statistic), and ``transform`` clips and scales only the
    stored entries, so it stays sparse; with ``clip=True`` the bounds must
    contain 0 (else implicit zeros would change, and a clear error is
    raised).

    Parameters
    ----------
    bounds : tuple (lower, upper), array of shape (2, n_features) or None, default=None
        Public range of each column: scalars or arrays of shape
        ``(n_features,)`` (the name diffprivlib uses). Values outside are
        clipped before the statistics are computed. ``None`` estimates them
        privately: a low and a high quantile per column (levels
        ``0.005``/``0.995`` when ``n`` and the budget allow, lower otherwise)
        by the exponential mechanism of :func:`skdp.privacy.private_quantile`,
        from ``estimation_share`` of the budget. Declared bounds cost nothing
        and are more accurate: prefer them (a schema's documented ranges).
    with_mean : bool, default=True
        Centre the data at the private mean.
    with_std : bool, default=True
        Scale the data to unit private variance. Needs the mean as well (it
        is released even if ``with_mean=False``, as scikit-learn computes it).
    clip : bool, default=True
        ``transform`` clips each column to ``bounds_`` first, the range the
        statistics describe (no change for data inside declared bounds). A
        value far outside estimated bounds would otherwise be scaled by a
        standard deviation that never saw it. With ``clip=False`` a result
        that overflows saturates at the largest float, never ``inf``.
    epsilon : float, default=1.0
        Privacy budget of the fit, in (0, inf]. ``inf`` is not private.
    delta : float or None, default=None
        ``None`` resolves to ``n ** -1.1`` at fit (``delta_``).
    estimation_share : float, default=0.3
        Share of the budget spent on the bounds when ``bounds=None``, in the
        unit of every skdp estimator: a share of ``mu**2``, the GDP budget
        of ``(epsilon, delta)`` (:class:`skdp.privacy.Budget`). It is split
        evenly over the ``2 n_features`` pure-DP quantiles, each at
        ``epsilon_q = mu sqrt(estimation_share / (2 n_features))`` (the same
        zCDP cost). The Gaussian release is calibrated to what remains by
        the exact accountant, so the pair is ``(epsilon, delta)``-DP.
        Ignored with declared bounds.
    bounds_share : float, default="deprecated"
        Deprecated old name of ``estimation_share`` (renamed in 0.2, removed
        in 0.3); its value is now read as a share of ``mu**2``, not of
        ``epsilon``.
    accountant : PrivacyAccountant or None, default=None
        Shared budget to spend from.
    random_state : int, Generator or None, default=None
        Seed of the noise; ``None`` (OS entropy) is the secure default.

    Attributes
    ----------
    mean_ : ndarray of shape (n_features,) or None
        Private per-column mean (``None`` if neither ``with_mean`` nor
        ``with_std``).
    var_ : ndarray of shape (n_features,) or None
        Private per-column variance (``None`` if ``with_std=False``).
    scale_ : ndarray of shape (n_features,) or None
        ``sqrt(var_)``, with ``1`` where it is zero (only possible without
        noise).
    bounds_ : tuple of ndarray
        The public or privately estimated ``(lower, upper)`` used.
    n_samples_seen_ : int
        Number of rows (public).
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    delta_ : float
    privacy_plan_ : DpEvent
        What the fit released.
    privacy_spent_ : tuple (epsilon, delta)
        Certified guarantee of the fit.
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.

    See Also
    --------
    MinMaxScaler : scaling by declared bounds, at no privacy cost.

    Notes
    -----
    Neighbouring datasets differ by replacing one row; ``n`` is public.
    With ``u = (clip(x) - mid) / width`` in ``[-1/2, 1/2]``, the release is
    the mean over rows of ``(u_j, 2 u_j**2)`` for every column ``j``; one
    row moves each pair by at most ``1 / n`` in L2 norm, so the vector has
    sensitivity ``sqrt(d) / n`` and one ``GaussianDpEvent`` covers it. The
    variance is ``E[u**2] - E[u]**2``, floored at the noise level of
    ``E[u**2]``; a variance below ``2 n eps`` times the second moment about
    the middle of the range, ``width**2 E[u**2]`` (a constant column up to
    rounding, only possible without noise), gets ``scale_ = 1`` as in
    scikit-learn. This one-pass variance has a relative rounding error of
    up to about ``n eps E[u**2] / var(u)``: without noise it matches
    scikit-learn to that precision (worse for a column far from the middle
    of bounds much wider than its spread). With estimated bounds the plan is the composition of the
    ``2 d`` pure-epsilon quantiles and the Gaussian release, certified
    exactly (privacy loss distributions). Floating-point Gaussian
    sampling is not exactly DP (Mironov 2012).

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.
    - Holohan et al., "Diffprivlib: the IBM differential privacy library", 2019
      (the ``bounds`` convention).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.preprocessing import StandardScaler
    >>> rng = np.random.default_rng(0)
    >>> X = rng.uniform(0, 100, size=(10_000, 2))
    >>> sc = StandardScaler(bounds=(0, 100), epsilon=1.0, random_state=0).fit(X)
    >>> np.round(sc.mean_)
    array([50., 50.])
    >>> sc.privacy_spent_[0] <= 1.0
    True
    """

    _parameter_constraints = {
        **PrivateTransformerMixin._privacy_parameter_constraints,
        "bounds": BOUNDS_CONSTRAINT,
        "with_mean": ["boolean"],
        "with_std": ["boolean"],
        "clip": ["boolean"],
        "estimation_share": [Interval(Real, 0, 1, closed="neither")],
        "bounds_share": [
            Interval(Real, 0, 1, closed="neither"),
            Hidden(StrOptions({"deprecated"})),
        ],
    }

    _renamed_parameters = {"bounds_share": "estimation_share"}

    def __init__(
        self,
        *,
        bounds=None,
        with_mean=True,
        with_std=True,
        clip=True,
        epsilon=1.0,
        delta=None,
        estimation_share=ESTIMATION_SHARE,
        bounds_share="deprecated",
        accountant=None,
        random_state=None,
    ):
        self.bounds = bounds
        self.with_mean = with_mean
        self.with_std = with_std
        self.clip = clip
        self.epsilon = epsilon
        self.delta = delta
        self.estimation_share = estimation_share
        self.bounds_share = bounds_share
        self.accountant = accountant
        self.random_state = random_state

    def _plan(self, n, d, delta):
        """Public plan: ``(event, epsilon_q or None, z)``."""
        if not (self.with_mean or self.with_std):
            return NoOpDpEvent(), None, 0.0
        eps_q = None
        if self.bounds is None:
            eps_q = share_quantile_epsilon(
                self.epsilon, delta, self._estimation_share(), d
            )
        if np.isinf(self.epsilon):
            return self._plan_or_free(None), eps_q, 0.0
        other = None if eps_q is None else bounds_event(eps_q, d)

        def make(z):
            g = GaussianDpEvent(z)
            return g if other is None else ComposedDpEvent([other, g])

        z = calibrate_noise_multiplier(make, self.epsilon, delta)
        return make(z), eps_q, z

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data (see ``_base``)."""
        return not (self.with_mean or self.with_std)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        # sparse input keeps its zeros: no centring (as in scikit-learn)
        tags.input_tags.sparse = not self.with_mean
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Release the private means and standard deviations.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : StandardScaler
        """
        # dask: nan/inf refused from flags of the first statistics pass
        one_pass = self.with_mean or self.with_std
        if is_dask_collection(X):  # sums per chunk on the workers (._dask_fit)
            X = validate_dask_rows(
                self, X, needs_bounds=self.with_mean or self.with_std, read=not one_pass
            )
        else:
            X = validate_data(self, X, dtype=np.float64, accept_sparse=["csr", "csc"])
        _check_sparse_centring(X, self.with_mean)
        n, d = X.shape
        declared = self._declared_bounds(d)
        delta, rng = self._begin_private_fit(n)
        plan, eps_q, z = self._plan(n, d, delta)
        one_pass = one_pass and is_dask_collection(X)
        if one_pass:  # charged after the pass, before the noise
            check_budget_before_pass(self, plan)
        else:
            self._spend(plan)  # before any data is read
        self.n_samples_seen_ = n
        self.mean_ = self.var_ = self.scale_ = None
        if isinstance(plan, NoOpDpEvent):
            self.bounds_ = declared
            self._record_privacy(plan)
            return self
        # inline: a helper frame would shift estimate_bounds' stacklevel=3 warning
        charge = partial(self._spend, plan) if one_pass else None
        lower, upper = (
            declared
            if declared is not None
            else estimate_bounds(X, eps_q, rng, before_noise=charge)
        )
        self.bounds_ = (lower, upper)
        mean, var, _ = private_moments(
            X,
            lower,
            upper,
            z,
            with_var=self.with_std,
            rng=rng,
            before_noise=charge if declared is not None else None,
        )
        self.mean_ = mean
        if self.with_std:
            self.var_ = var
            # Constant up to rounding (only possible without noise): scale 1,
            # as scikit-learn does. The rounding error of E[u**2] - E[u]**2
            # is relative to E[u**2], the released second moment about the
            # middle of the range (post-processing), and grows like n eps
            # (row-wise sums): scikit-learn's own rule has the same n eps.
            # A fixed 10 eps width**2 gave scale 1 to a column with a small
            # real spread in wide bounds, and a tiny scale to a constant
            # column far from the middle when n is large.
            mid = lower + 0.5 * (upper - lower)
            with np.errstate(all="ignore"):
                second = var + (mean - mid) ** 2
            tiny = 2 * n * np.finfo(np.float64).eps * second
            self.scale_ = np.where(var <= tiny, 1.0, np.sqrt(var))
        self._record_privacy(plan)
        return self

    def transform(self, X):
        """Standardize ``X`` with the released statistics (no noise).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        return self._scale(X, inverse=False)

    def inverse_transform(self, X):
        """Undo :meth:`transform`.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        return self._scale(X, inverse=True)

    def _scale(self, X, *, inverse):
        """Shared body of :meth:`transform` and :meth:`inverse_transform`."""
        if is_dask_collection(X):  # lazy, per chunk on the workers
            method = self.inverse_transform if inverse else self.transform
            return lazy_transform(method, X)
        X = self._validate_for_transform(
            X, "n_samples_seen_", accept_sparse=["csr", "csc"]
        )
        # inverse_transform neither clips nor saturates (dense), as before
        clip = self.clip and not inverse and self.bounds_ is not None
        if sp.issparse(X):
            _check_sparse_centring(X, self.with_mean)
            lower, upper = self.bounds_ if clip else (None, None)
            return _scale_sparse(X, self.scale_, clip, lower, upper, inverse=inverse)
        if clip:
            np.clip(X, *self.bounds_, out=X)
        # Rows may be private (a Pipeline's fit transforms its training data):
        # with clip=False an extreme value can overflow, and that must not
        # warn (a warning that one record triggers is a release).
        with np.errstate(all="ignore"):
            if inverse:
                if self.with_std:
                    X *= self.scale_
                if self.with_mean:
                    X += self.mean_
                return X
            if self.with_mean:
                X -= self.mean_
            if self.with_std:
                X /= self.scale_
        # An overflow to inf (clip=False) would make the next step raise on
        # one record.
        saturate(X)
        return X


def _check_sparse_centring(X, with_mean):
    # a public parameter, checked before anything is spent or read
    if sp.issparse(X) and with_mean:
        raise ValueError(
            "Cannot center sparse matrices: pass `with_mean=False` (sparse input "
            "keeps its zeros), or pass a dense array."
        )


def _scale_sparse(X, scale, clip, lower, upper, *, inverse):
    """Clip the stored entries to the bounds and scale columns, staying sparse."""
    X = X.tocsr() if X.format != "csr" else X
    if not X.has_canonical_format:  # clip each entry's summed value
        X = X.copy()
        X.sum_duplicates()
    cols = X.indices
    with np.errstate(all="ignore"):  # private values: overflow must stay silent
        return _scale_sparse_entries(X, cols, scale, clip, lower, upper, inverse)


def _scale_sparse_entries(X, cols, scale, clip, lower, upper, inverse):
    if clip and lower is not None:
        lower = np.broadcast_to(lower, (X.shape[1],))
        upper = np.broadcast_to(upper, (X.shape[1],))
        if np.any(lower > 0) or np.any(upper < 0):
            # implicit zeros would be clipped to non-zero values (bounds are public)
            raise ValueError(
                "Sparse input with clip=True needs bounds that contain 0 in every "
                "column (implicit zeros would change); pass clip=False or dense input."
            )
        np.clip(X.data, lower[cols], upper[cols], out=X.data)
    if scale is not None:
        if inverse:
            X.data *= scale[cols]
        else:
            X.data /= scale[cols]
    saturate(X.data)  # an overflow to inf would make the next step raise
    return X
