"""One-hot encoding of declared (public) categories, at no privacy cost."""

import numbers
import warnings

import numpy as np
from sklearn.base import BaseEstimator, TransformerMixin, _fit_context
from sklearn.preprocessing import OneHotEncoder as _SklearnOneHotEncoder
from sklearn.utils._encode import _unique
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _get_feature_names, _num_samples, check_is_fitted

from ..privacy import NonPrivateDpEvent, NoOpDpEvent
from ..solvers._distributed import is_dask_collection
from ..utils._validation import check_array, unechoed
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
    data beyond its shape (and the input check every skdp fit makes: no
    ``inf``, no complex values), and costs no privacy (``privacy_spent_ == (0,
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
        The declared categories, with the declaration's dtype: a column of
        numbers keeps its numpy dtype (``[0, 1]`` is ``int64`` whatever
        ``X`` holds), any other column is ``object``. Nothing in the fitted
        state depends on the values of ``X``.
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
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.

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
        if is_dask_collection(X):  # shape checked (rows stay on the workers)
            n_features = declared_row(self, X).shape[1]
        else:
            n_features = _check_shape(X)
        self.delta_, _ = self._begin_private_fit(_num_samples(X))
        # "error" releases, without noise, whether every value is declared
        plan = NonPrivateDpEvent() if self.handle_unknown == "error" else NoOpDpEvent()
        self._spend(plan)  # before any value is read
        categories = declared_categories(self.categories, n_features)
        # Set up on one row of declared values: nothing of X's values (nor of
        # the dtype a list of them converts to) reaches the fitted state.
        self.encoder_ = encoder_of_declared(
            categories,
            handle_unknown=self.handle_unknown,
            drop=self.drop,
            sparse_output=self.sparse_output,
            dtype=self.dtype,
        )
        self.n_features_in_ = n_features
        # column names: the public schema (dask chunks are transformed as
        # arrays, so a dask frame's names are not kept, as before)
        names = None if is_dask_collection(X) else _get_feature_names(X)
        if names is not None:
            self.feature_names_in_ = self.encoder_.feature_names_in_ = names
        if self.handle_unknown == "error":  # the documented non-private check
            if is_dask_collection(X):
                check_categories_on_workers(self.encoder_, X)
            else:
                _unechoed(self.encoder_.transform, _as_declared_kinds(X, categories))
        self.categories_ = self.encoder_.categories_
        self.drop_idx_ = self.encoder_.drop_idx_
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
            X = _as_declared_kinds(X, self.categories_)
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
        return unechoed(self.encoder_.inverse_transform, X)

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
        return unechoed(method, X)  # input errors without data, too
    except ValueError as exc:
        if not str(exc).startswith("Found unknown categories"):
            raise
    raise ValueError("X contains a value outside the declared categories.")


def _check_shape(X):
    """The number of columns of ``X``, checked as scikit-learn's encoder does.

    ``X`` must be 2-D, non-empty and free of ``inf`` (``nan`` is a value like
    any other); errors name no value (:func:`~skdp.utils._validation.unechoed`).
    """
    checked = unechoed(
        _SklearnOneHotEncoder()._check_X, X, ensure_all_finite="allow-nan"
    )
    return checked[2]


def declared_categories(declared, n_features):
    """The declared categories, one array per column, typed by the declaration.

    A column of numbers gets their numpy dtype (``[0, 1]`` is ``int64``
    whatever the data holds: scikit-learn would take ``X``'s dtype, which a
    list of values takes from the values, so one private ``2.5`` would make
    it ``float64`` and the feature names ``c_0.0, ...``); any other column is
    ``object``. Sortedness (numbers), a ``nan`` other than last, and
    duplicates are refused from the declaration alone.

    Parameters
    ----------
    declared : list of array-like
        ``categories``; a list of one list applies to every column.
    n_features : int

    Returns
    -------
    list of ndarray
    """
    declared = list(declared)
    if len(declared) == 1 and n_features != 1:
        declared = declared * n_features
    if len(declared) != n_features:
        raise ValueError(
            f"X has {n_features} columns; categories declares {len(declared)}."
        )
    categories = []
    for j, values in enumerate(declared):
        cats = np.asarray(values)
        if cats.dtype.kind not in "biuf":  # strings, or mixed: the values as given
            cats = np.array(values, dtype=object)
        if cats.ndim != 1 or cats.size == 0:
            raise ValueError(f"categories[{j}] must be a non-empty list of values.")
        is_nan = [isinstance(c, numbers.Real) and c != c for c in cats]
        if any(is_nan[:-1]):
            raise ValueError(f"In column {j}, nan must be the last declared category.")
        if cats.size != len(_unique(cats)):
            raise ValueError(
                f"In column {j}, the declared categories contain duplicates."
            )
        if cats.dtype != object:
            stop = -1 if is_nan[-1] else None
            if np.any(np.sort(cats)[:stop] != cats[:stop]):
                raise ValueError(
                    f"In column {j}, the declared categories are numbers and "
                    "must be sorted (as scikit-learn requires)."
                )
        categories.append(cats)
    return categories


def encoder_of_declared(categories, **params):
    """scikit-learn's encoder set up on the declared categories alone.

    It is fitted on one row of declared values (``object``, so that
    scikit-learn keeps every column's declared values as they are), then its
    ``categories_`` are the declared arrays with their declared dtypes.

    Parameters
    ----------
    categories : list of ndarray
        From :func:`declared_categories`.
    **params
        Further parameters of :class:`sklearn.preprocessing.OneHotEncoder`.

    Returns
    -------
    sklearn.preprocessing.OneHotEncoder
    """
    row = np.empty((1, len(categories)), dtype=object)
    for j, cats in enumerate(categories):
        row[0, j] = cats[0]
    encoder = _SklearnOneHotEncoder(
        categories=[cats.astype(object) for cats in categories], **params
    )
    encoder.fit(row)
    encoder.categories_ = list(categories)  # only their dtype differs
    return encoder


def _as_declared_kinds(X, categories):
    """``X`` with a column of object dtype where its categories are not numbers.

    scikit-learn compares a column with its categories by kind: numbers with
    numbers, objects with objects. The categories' kinds are declared; ``X``'s
    are not (a list of values takes its dtype from the values), so columns
    are made ``object`` where the kinds differ: an undeclared value is then an
    unknown value, whatever its type, and never an error.
    """
    declared_objects = [cats.dtype == object for cats in categories]
    if hasattr(X, "iloc") and getattr(X, "ndim", 0) == 2:  # DataFrame: per column
        cast = {
            column: object
            for column, objects in zip(X.columns, declared_objects)
            # any non-object column: numbers, and pandas categorical or
            # string dtypes, whose values numpy would convert by their own
            # (data-dependent) kind
            if objects and X[column].dtype != object
        }
        return X.astype(cast) if cast else X
    checked = check_array(X, dtype=None, ensure_all_finite="allow-nan")
    if not hasattr(X, "dtype"):
        # a list: numpy would turn [0, 1, "x"] into strings, "0" and "1" then
        # unknown; as objects every value keeps its own type
        return check_array(X, dtype=object, ensure_all_finite=False)
    X = checked
    if X.dtype.kind in "US" or (X.dtype.kind != "O" and any(declared_objects)):
        X = X.astype(object)
    return X
