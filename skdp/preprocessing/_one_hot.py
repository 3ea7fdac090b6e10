"""One-hot encoding of declared (public) categories, at no privacy cost."""

import numpy as np
from sklearn.base import _fit_context
from sklearn.preprocessing import OneHotEncoder as _SklearnOneHotEncoder
from sklearn.utils._param_validation import StrOptions
from sklearn.utils.validation import _num_samples

from ..privacy import NoOpDpEvent
from ._base import PrivateTransformerMixin

__all__ = ["OneHotEncoder"]


class OneHotEncoder(PrivateTransformerMixin, _SklearnOneHotEncoder):
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
        sorted). Required: ``None`` raises with a message that says what to
        pass.
    handle_unknown : {"ignore", "error"}, default="ignore"
        A value outside the declared categories is encoded as all zeros
        (``"ignore"``) or raises (``"error"``). ``"error"`` at ``fit`` reveals
        that some record holds an undeclared value: use it to validate a
        schema, not on data whose contents must stay private.
    drop : {"first", "if_binary"}, array-like or None, default=None
        As in scikit-learn (only the declared categories are involved).
    sparse_output : bool, default=False
        Return a sparse matrix (skdp's estimators take dense input for now).
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
    n_features_in_ : int
    feature_names_in_ : ndarray of str
        Defined when ``X`` has string column names.
    delta_ : float
    privacy_plan_ : DpEvent
        ``NoOpDpEvent()``.
    privacy_spent_ : tuple (epsilon, delta)
        ``(0.0, 0.0)``.

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

    # scikit-learn parameters fixed here: frequencies are read from the data.
    min_frequency = None
    max_categories = None
    feature_name_combiner = "concat"

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
        self.delta_, _ = self._begin_private_fit(_num_samples(X))
        plan = NoOpDpEvent()
        self._spend(plan)
        super().fit(X)  # declared categories: reads the values only to check them
        self._record_privacy(plan)
        return self
