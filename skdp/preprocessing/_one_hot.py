"""One-hot encoding of declared (public) categories, at no privacy cost."""

import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.preprocessing import OneHotEncoder as _SklearnOneHotEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _num_features, _num_samples, check_is_fitted

from ..privacy import NonPrivateDpEvent, NoOpDpEvent
from ..solvers._distributed import is_dask_collection
from ._base import PrivateTransformerMixin
from ._dask_fit import check_categories_on_workers, declared_row, lazy_transform

__all__ = ["OneHotEncoder"]


class OneHotEncoder(PrivateTransformerMixin, TransformerMixin, BaseEstimator):
    """One-hot encode columns whose categories are declared (a public schema).

    scikit-learn's :class:`~sklearn.preprocessing.OneHotEncoder` with
    ``categories="auto"`` publishes, in ``categories_`` and in the output's
    columns, every category that occurs in the private data, even one seen
    once. This encoder refuses to infer them: ``categories`` must list, per
    column, the public set of values. The fit then reads nothing from the
    data beyond its shape, and costs no privacy (``privacy_spent_ == (0,
    0)``); ``epsilon`` and ``delta`` are accepted for a uniform API.

    Parameters
    ----------
    categories : list of array-like
        ``categories[j]`` lists the public values of column ``j`` (numbers
        sorted). A list of one list applies to every column. Required:
        ``None`` raises with a message that says what to pass.
    handle_unknown : {"ignore", "error"}, default="ignore"
        A value outside the declared categories is encoded as all zeros
        (``"ignore"``, silently: scikit-learn's warning about it when ``drop``
        is set is suppressed, since it would reveal that some private record
        holds an undeclared value) or raises (``"error"``). ``"error"`` at ``fit`` reveals
        whether some record holds an undeclared value, a release without
        noise: the fit's plan is then ``NonPrivateDpEvent()``
        (``privacy_spent_`` has ``epsilon=inf``, and a shared accountant with
        a finite budget refuses it before any value is read). Use it to
        validate a schema, not on data whose contents must stay private.
    drop : {"first", "if_binary"}, array-like or None, default=None
        As in scikit-learn (only the declared categories are involved).
    sparse_output : bool, default=False
        Return a CSR matrix. skdp's gradient-based estimators take it
        without densifying (``HeavyTailed*`` with the default solver,
        ``BilevelRidge``, ``MinimaxFairClassifier(solver="gda")``).
    dtype : number type, default=np.float64
        Output dtype.
    epsilon : float, default=1.0
        Unused (the fit is free); kept for a uniform API.
    delta : float or None, default=None
        Unused; resolves to ``delta_`` as for every skdp step.
    accountant : PrivacyAccountant or None, default=None
        Shared budget; the fit is listed on its ledger at no cost.
    random_state : int, Generator or None, default=None
        Unused.

    Attributes
    ----------
    categories_ : list of ndarray
        The declared categories.
    drop_idx_ : ndarray or None
        As in scikit-learn.
    encoder_ : sklearn.preprocessing.OneHotEncoder
        The scikit-learn encoder of the declared categories that does the work.
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    delta_ : float
    privacy_plan_ : DpEvent
        ``NoOpDpEvent()`` (``NonPrivateDpEvent()`` with
        ``handle_unknown="error"``).
    privacy_spent_ : tuple (epsilon, delta)
        ``(0.0, 0.0)`` (``epsilon=inf`` with ``handle_unknown="error"``).

    See Also
    --------
    sklearn.preprocessing.OneHotEncoder : the encoder this one restricts.

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> from skdp.preprocessing import OneHotEncoder
    >>> enc = OneHotEncoder(categories=[["a", "b", "c"]]).fit([["a"], ["b"]])
    >>> enc.transform([["c"], ["z"]])
    array([[0., 0., 1.],
           [0., 0., 0.]])
    >>> enc.privacy_spent_
    (0.0, 0.0)
    """

    _parameter_constraints = {
        **PrivateTransformerMixin._privacy_parameter_constraints,
        "categories": [list, None],
        "handle_unknown": [StrOptions({"ignore", "error"})],
        "drop": _SklearnOneHotEncoder._parameter_constraints["drop"],
        "sparse_output": ["boolean"],
        "dtype": "no_validation",
    }

    def __init__(
        self,
        categories=None,
        *,
        handle_unknown="ignore",
        drop=None,
        sparse_output=False,
        dtype=np.float64,
        epsilon=1.0,
        delta=None,
        accountant=None,
        random_state=None,
    ):
        self.categories = categories
        self.handle_unknown = handle_unknown
        self.drop = drop
        self.sparse_output = sparse_output
        self.dtype = dtype
        self.epsilon = epsilon
        self.delta = delta
        self.accountant = accountant
        self.random_state = random_state

    def _fit_is_free(self):
        """Whether ``fit`` reads nothing from the data (see ``_base``)."""
        return self.handle_unknown != "error"  # "error" checks every value

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y=None):
        """Set up the encoding of the declared categories (reads no values).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)
        y : None
            Ignored.

        Returns
        -------
        self : OneHotEncoder

        Raises
        ------
        ValueError
            If ``categories`` is not declared.
        """
        if self.categories is None:
            raise ValueError(
                "skdp.preprocessing.OneHotEncoder needs the public categories: "
                "pass categories=[[values of column 0], [values of column 1], ...] "
                "from the data's schema. Inferring them from the private data "
                "would publish every value that occurs (even one held by a "
                "single record)."
            )
        # dask input: checked, and the encoder set up on a declared row
        row = declared_row(self, X) if is_dask_collection(X) else None
        self.delta_, _ = self._begin_private_fit(_num_samples(X))
        # "error" releases, without noise, whether every value is declared
        plan = NonPrivateDpEvent() if self.handle_unknown == "error" else NoOpDpEvent()
        self._spend(plan)  # before any value is read
        try:
            n_features = _num_features(X)
        except TypeError:  # not 2D: the encoder below raises the usual error
            n_features = 1
        categories = list(self.categories)
        if len(categories) == 1 and n_features != 1:
            categories = categories * n_features
        encoder = _SklearnOneHotEncoder(
            categories=categories,
            handle_unknown=self.handle_unknown,
            drop=self.drop,
            sparse_output=self.sparse_output,
            dtype=self.dtype,
        )
        # declared categories: values only checked
        self.encoder_ = _unechoed(encoder.fit, X if row is None else row)
        if row is not None and self.handle_unknown == "error":
            check_categories_on_workers(self.encoder_, X)
        self.categories_ = self.encoder_.categories_
        self.drop_idx_ = self.encoder_.drop_idx_
        self.n_features_in_ = self.encoder_.n_features_in_
        if hasattr(self.encoder_, "feature_names_in_"):
            self.feature_names_in_ = self.encoder_.feature_names_in_
        self._record_privacy(plan)
        return self

    def transform(self, X):
        """One-hot encode ``X`` with the declared categories.

        Parameters
        ----------
        X : array-like of shape (n_samples, n_features)

        Returns
        -------
        ndarray or sparse matrix of shape (n_samples, n_encoded_features)
        """
        check_is_fitted(self, "encoder_")
        if is_dask_collection(X):  # lazy, per chunk on the workers
            width = len(self.encoder_.get_feature_names_out())
            return lazy_transform(self.transform, X, width=width, numeric=False)
        with warnings.catch_warnings():
            # With ``drop`` set, scikit-learn warns when a value is not among
            # the categories. In a Pipeline's fit the rows are private: that
            # warning would reveal that some record holds an undeclared value.
            warnings.filterwarnings(
                "ignore", message="Found unknown categories", category=UserWarning
            )
            return _unechoed(self.encoder_.transform, X)

    def inverse_transform(self, X):
        """Back to categories (``None`` for all-zero rows of ignored unknowns).

        Parameters
        ----------
        X : array-like of shape (n_samples, n_encoded_features)

        Returns
        -------
        ndarray of shape (n_samples, n_features)
        """
        check_is_fitted(self, "encoder_")
        return self.encoder_.inverse_transform(X)

    def get_feature_names_out(self, input_features=None):
        """Output feature names, ``"<column>_<category>"``.

        Parameters
        ----------
        input_features : array-like of str or None, default=None

        Returns
        -------
        ndarray of str
        """
        check_is_fitted(self, "encoder_")
        return self.encoder_.get_feature_names_out(input_features)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.categorical = True
        tags.input_tags.string = True
        tags.input_tags.allow_nan = True
        return tags


def _unechoed(method, X):
    """``method(X)``, refusing an undeclared value without naming it.

    scikit-learn's ``handle_unknown="error"`` message lists the undeclared
    values it found: private values (possibly one record's). The error keeps
    only the fact that some value is undeclared (as on dask input), and is
    raised outside the ``except`` block so that no chained exception holds
    the original message.
    """
    try:
        return method(X)
    except ValueError as exc:
        if not str(exc).startswith("Found unknown categories"):
            raise
    raise ValueError("X contains a value outside the declared categories.")
