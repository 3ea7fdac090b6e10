"""Find the steps of a pipeline that learn from the private data without privacy."""

from collections import namedtuple
from numbers import Integral

import numpy as np
from sklearn.base import is_classifier, is_regressor
from sklearn.utils import get_tags

from .utils._pipeline_walk import iter_leaf_steps

__all__ = ["check_pipeline", "LeakingStep"]

LeakingStep = namedtuple("LeakingStep", ["path", "step", "reason", "replacement"])
LeakingStep.__doc__ = """A step of a pipeline that learns from the private data without privacy.

Attributes
----------
path : str
    Where the step sits (``"outer__inner"`` as in ``get_params``).
step : estimator
    The step itself.
reason : str
    What it publishes.
replacement : str
    What to use instead.
"""

_SCALE = "skdp.preprocessing.StandardScaler(bounds=(lower, upper))"
_MINMAX = "skdp.preprocessing.MinMaxScaler(bounds=(lower, upper))"
_ONE_HOT = (
    "skdp.preprocessing.OneHotEncoder(categories=[...]) (or scikit-learn's with "
    'declared categories, handle_unknown="ignore" and no drop)'
)
_IMPUTE = (
    'skdp.preprocessing.SimpleImputer(strategy="constant") or '
    'SimpleImputer(strategy="mean", bounds=(lower, upper))'
)
_NONE_PROJECTION = (
    "none in skdp yet: drop the step, or fit it on public data and freeze it"
)
_NONE_SELECTION = (
    "select columns from public knowledge (a ColumnTransformer's column list)"
)

#: scikit-learn class name -> (what it publishes, private replacement)
_KNOWN = {
    "StandardScaler": ("exact per-column means and variances", _SCALE),
    "RobustScaler": ("exact per-column medians and quartiles", _SCALE),
    "MaxAbsScaler": ("each column's exact largest absolute value", _MINMAX),
    "MinMaxScaler": ("each column's exact minimum and maximum", _MINMAX),
    "QuantileTransformer": ("exact quantiles of every column", _MINMAX),
    "PowerTransformer": ("parameters fitted to the exact data", _SCALE),
    "KBinsDiscretizer": ("bin edges from the exact data", _MINMAX),
    "SplineTransformer": ("knots from the exact data (unless declared)", _MINMAX),
    "OneHotEncoder": ("every category that occurs, even once", _ONE_HOT),
    "OrdinalEncoder": (
        "every category that occurs, even once",
        "declared categories=[...] with handle_unknown='use_encoded_value'",
    ),
    "TargetEncoder": ("exact per-category target means", _ONE_HOT),
    "SimpleImputer": ("exact per-column means/medians/modes", _IMPUTE),
    "KNNImputer": ("the training rows themselves", _IMPUTE),
    "IterativeImputer": ("models fitted to the exact data", _IMPUTE),
    "MissingIndicator": ("which columns have missing values", "features='all'"),
    "PCA": ("exact principal directions of the data", _NONE_PROJECTION),
    "IncrementalPCA": ("exact principal directions of the data", _NONE_PROJECTION),
    "KernelPCA": ("the training rows and their kernel", _NONE_PROJECTION),
    "TruncatedSVD": ("exact singular vectors of the data", _NONE_PROJECTION),
    "SelectKBest": ("which columns score best on the exact data", _NONE_SELECTION),
    "SelectPercentile": ("which columns score best on the exact data", _NONE_SELECTION),
    "VarianceThreshold": ("which columns are constant in the data", _NONE_SELECTION),
    "SelectFromModel": ("a model fitted to the exact data", _NONE_SELECTION),
    "RFE": ("models fitted to the exact data", _NONE_SELECTION),
    "RFECV": ("models fitted to the exact data", _NONE_SELECTION),
}


#: Steps whose fit reads only the shape of the data (public) and whose
#: transform is a fixed random map.
_SHAPE_ONLY = {
    "GaussianRandomProjection",
    "SparseRandomProjection",
    "PolynomialCountSketch",
}


def _declared_encoder_problem(step):
    """Why a scikit-learn encoder still learns from the data, or None."""
    if isinstance(step.categories, str):  # "auto"
        return "categories inferred from the data (every value that occurs)"
    if getattr(step, "min_frequency", None) is not None or (
        getattr(step, "max_categories", None) is not None
    ):
        return "category frequencies read from the data (min_frequency/max_categories)"
    ok = {"OneHotEncoder": "ignore", "OrdinalEncoder": "use_encoded_value"}
    if step.handle_unknown != ok[type(step).__name__]:
        return (
            f"handle_unknown={step.handle_unknown!r}: an undeclared value in the "
            "private data raises an error, which reveals it"
        )
    if type(step).__name__ == "OneHotEncoder" and step.drop is not None:
        return (
            f"drop={step.drop!r} with handle_unknown='ignore': transform warns "
            "'Found unknown categories' when a private record holds an "
            "undeclared value, which reveals it"
        )
    return None


def _diagnose(step):
    """``(reason, replacement)`` if ``step`` learns without privacy, else None."""
    module = type(step).__module__ or ""
    name = type(step).__name__
    if module == "skdp" or module.startswith("skdp."):
        if getattr(step, "handle_unknown", None) == "error":
            return (
                "handle_unknown='error': an undeclared value in the private data "
                "raises an error at fit, which reveals it",
                "handle_unknown='ignore'",
            )
        free = getattr(step, "_fit_is_free", None)
        if np.isinf(getattr(step, "epsilon", 1.0)) and not (free and free()):
            return (
                "epsilon=inf: this skdp step runs without noise",
                "a finite epsilon",
            )
        return None
    if name in ("OneHotEncoder", "OrdinalEncoder") and hasattr(step, "categories"):
        problem = _declared_encoder_problem(step)
        return None if problem is None else (problem, _KNOWN[name][1])
    if name == "SplineTransformer" and not isinstance(step.knots, str):
        if step.extrapolation == "error":
            return (
                "extrapolation='error': a private value beyond the declared "
                "knots raises an error, which reveals it",
                "declared knots with extrapolation='constant' (or clip first)",
            )
        return None
    if name == "MissingIndicator" and step.features == "all":
        return None
    if (
        name == "FunctionTransformer"
        and getattr(step, "inverse_func", None) is not None
        and getattr(step, "check_inverse", False)
    ):
        return (
            "check_inverse=True: fit applies func and inverse_func to a sample "
            "of the private rows and warns when a row does not round-trip, "
            "which reveals it",
            "FunctionTransformer(..., check_inverse=False)",
        )
    if name == "PolynomialFeatures":
        return None  # learns only the number of columns (public)
    if (
        name == "SimpleImputer"
        and getattr(step, "strategy", None) == "constant"
        and not getattr(step, "add_indicator", True)
    ):
        return None  # fills a public constant (an indicator would learn columns)
    if name in _SHAPE_ONLY or (name == "RBFSampler" and step.gamma != "scale"):
        return None  # random features drawn from the shape (public) alone
    if name == "RBFSampler":
        return (
            "gamma='scale' is computed from the exact variance of the data",
            "RBFSampler(gamma=<a number>)",
        )
    if name == "AdditiveChi2Sampler":
        return (
            "transform raises on a negative value, which reveals that a "
            "private record holds one",
            "clip to non-negative public bounds first, e.g. "
            "skdp.preprocessing.MinMaxScaler(bounds=(lower, upper))",
        )
    if name in _KNOWN:
        return _KNOWN[name]
    try:
        classifier, regressor = is_classifier(step), is_regressor(step)
    except (AttributeError, TypeError, ValueError):
        classifier = regressor = False
    try:
        # A model is never stateless: GaussianProcessRegressor says it needs
        # no fit (it predicts from its prior), yet fit stores the training rows.
        stateless = not (classifier or regressor) and not get_tags(step).requires_fit
    except (AttributeError, TypeError, ValueError):
        stateless = False
    if stateless:
        return None
    if classifier:
        replacement = "skdp.HeavyTailedLogisticRegression or skdp.MinimaxFairClassifier"
    elif regressor:
        replacement = "skdp.HeavyTailedLinearRegression or skdp.BilevelRidge"
    else:
        replacement = "an skdp step, or a step that learns nothing from the data"
    return ("a model or statistics fitted to the exact data", replacement)


_SHARED_SEED_REPLACEMENT = (
    "random_state=None in every step (secret OS entropy), or one shared "
    "skdp.PrivacyAccountant (each fit on its ledger gets its own stream)"
)


def _seed_key(random_state):
    """What makes two ``random_state`` values one seed: equal integers, or one object."""
    if random_state is None:
        return None
    if isinstance(random_state, Integral):
        return ("int", int(random_state))
    return ("object", id(random_state))


def _shared_seed_steps(estimator, *, fitted=False):
    """The skdp steps that share a ``random_state`` with another step, without an accountant.

    Two steps share a seed when their ``random_state`` is the same integer or
    the same ``Generator`` or ``RandomState`` object. skdp derives each seeded
    fit's stream from the seed, the step's class, its parameters and its
    data, so such steps draw different noise; but one seed then stands for
    all of them: whoever learns it (a released fitted object carries its
    ``random_state``; an integer has at most 32 bits) replays every step's
    noise. Reads only the parameters (public).

    Parameters
    ----------
    estimator : estimator
        A pipeline, a column transformer, a feature union or a single step.
    fitted : bool, default=False
        Walk a fitted ``ColumnTransformer``'s fitted transformers.

    Returns
    -------
    list of (path, step, other_paths)
        Each flagged skdp step (one with ``epsilon``, a seeded
        ``random_state`` and no ``accountant``), with the paths of the steps
        it shares its seed with.
    """
    groups = {}
    for path, step in iter_leaf_steps(estimator, fitted=fitted):
        try:
            random_state = step.get_params(deep=False).get("random_state")
        except (AttributeError, TypeError):
            continue
        key = _seed_key(random_state)
        if key is not None:
            groups.setdefault(key, []).append((path, step))
    flagged = []
    for members in groups.values():
        if len(members) < 2:
            continue
        for path, step in members:
            private = hasattr(step, "epsilon")
            if private and getattr(step, "accountant", None) is None:
                others = [p for p, _ in members if p != path]
                flagged.append((path, step, others))
    return flagged


def _stream_seed_key(random_state):
    """What makes two seeded fits on separate ledgers draw one stream.

    A fit with an accountant draws from ``SeedSequence(entropy,
    spawn_key=(position,))``: the entropy is the integer itself, or 128 bits
    drawn from the ``Generator`` or ``RandomState``, so equal integers, or
    generators in one state (one object, or copies that ``clone`` made),
    give the same stream at the same position of their ledgers.
    """
    if random_state is None:
        return None
    if isinstance(random_state, Integral):
        return ("int", int(random_state))
    if isinstance(random_state, np.random.Generator):
        return ("state", repr(random_state.bit_generator.state))
    if isinstance(random_state, np.random.RandomState):
        return ("state", repr(random_state.get_state(legacy=False)))
    return ("object", id(random_state))


def _shared_ledger_seed_steps(estimator, *, fitted=False):
    """The skdp steps that share a seed with a step on another accountant.

    Each fit on a ledger mixes its position into the seed
    (:meth:`~skdp.privacy.PrivacyAccountant.claim_stream`), so steps on one
    shared accountant draw independent noise. Steps on *separate*
    accountants with one seed (the same integer, or generators in the same
    state) draw the same noise whenever their ledgers are at the same
    position, two fresh ledgers for example: the difference of their
    releases is then noise-free. Reads only the parameters (public).

    Parameters
    ----------
    estimator : estimator
        A pipeline, a column transformer, a feature union or a single step.
    fitted : bool, default=False
        Walk a fitted ``ColumnTransformer``'s fitted transformers.

    Returns
    -------
    list of (path, step, other_paths)
    """
    groups = {}
    for path, step in iter_leaf_steps(estimator, fitted=fitted):
        try:
            params = step.get_params(deep=False)
        except (AttributeError, TypeError):
            continue
        if not hasattr(step, "epsilon") or params.get("accountant") is None:
            continue
        key = _stream_seed_key(params.get("random_state"))
        if key is not None:
            groups.setdefault(key, []).append((path, step, params["accountant"]))
    flagged = []
    for members in groups.values():
        for path, step, accountant in members:
            others = [p for p, _, a in members if a is not accountant]
            if others:
                flagged.append((path, step, others))
    return flagged


def check_pipeline(estimator):
    """List the steps of a pipeline that learn from the private data without privacy.

    Recurses into :class:`~sklearn.pipeline.Pipeline`,
    :class:`~sklearn.compose.ColumnTransformer` (its remainder included) and
    :class:`~sklearn.pipeline.FeatureUnion`. A step is fine if it is an skdp
    step with a finite ``epsilon`` (or one whose fit reads nothing, such as
    ``MinMaxScaler`` with declared bounds, whatever its ``epsilon``), or
    learns nothing but public facts: stateless transformers
    (``FunctionTransformer``, ``Normalizer``, any transformer whose tags say
    it needs no fit), encoders with declared categories (scikit-learn's
    ``OneHotEncoder(categories=[...], handle_unknown="ignore")`` without
    ``drop``, which would warn about an undeclared value),
    ``PolynomialFeatures``, scikit-learn's
    ``SimpleImputer(strategy="constant")`` without ``add_indicator``, column
    selection, ``"passthrough"`` and ``"drop"``. Everything else is listed,
    with what it publishes and the private replacement: scikit-learn's
    scalers, encoders that infer categories, imputers (but a constant fill),
    PCA, feature selection, target encoders, encoders
    that raise on an undeclared value (``handle_unknown="error"``, skdp's
    included), a ``FunctionTransformer`` that checks its ``inverse_func`` on
    the private rows (``check_inverse=True``, which warns when one fails to
    round-trip), and any non-private model (also one whose tags say it needs
    no fit, as ``GaussianProcessRegressor``'s). Unknown steps are listed too
    (a check that cannot see inside a step must not vouch for it). Random
    projections and random features with a numeric ``gamma`` read only the
    data's shape and are not listed; ``AdditiveChi2Sampler``, which raises on
    a negative value, is.

    skdp steps that share a ``random_state`` with another step (the same
    integer, or the same ``Generator`` or ``RandomState`` object) and have no
    accountant are listed too: their noise streams differ (each is derived
    from the seed, the step's class, its parameters and its data), but one
    seed stands for all of them, so whoever learns it replays every step's
    noise (see the threat model). So are steps that share a seed (the same
    integer, or generators in one state) with a step on *another*
    accountant: a ledger stream is the seed and the fit's position on its
    ledger, so two fresh ledgers give both steps the same noise.

    Call it before fitting: it reads only the pipeline's parameters.

    Parameters
    ----------
    estimator : estimator
        A pipeline, a column transformer, a feature union or a single step.

    Returns
    -------
    leaks : list of LeakingStep
        ``(path, step, reason, replacement)`` for each leaking step; empty if
        none.

    See Also
    --------
    skdp.spent : what a fitted pipeline spent in total.

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> from sklearn.pipeline import make_pipeline
    >>> from sklearn.preprocessing import StandardScaler
    >>> import skdp
    >>> from skdp.preprocessing import StandardScaler as PrivateScaler
    >>> leaks = skdp.check_pipeline(
    ...     make_pipeline(StandardScaler(), skdp.HeavyTailedLogisticRegression())
    ... )
    >>> [(leak.path, leak.replacement) for leak in leaks]
    [('standardscaler', 'skdp.preprocessing.StandardScaler(bounds=(lower, upper))')]
    >>> skdp.check_pipeline(
    ...     make_pipeline(PrivateScaler(), skdp.HeavyTailedLogisticRegression())
    ... )
    []
    """
    leaks = []
    for path, step in iter_leaf_steps(estimator):
        found = _diagnose(step)
        if found is not None:
            leaks.append(LeakingStep(path, step, *found))
    for path, step, others in _shared_seed_steps(estimator):
        reason = (
            f"shares its random_state with {', '.join(map(repr, others))} and "
            "has no accountant: one seed replays the noise of every step"
        )
        leaks.append(LeakingStep(path, step, reason, _SHARED_SEED_REPLACEMENT))
    for path, step, others in _shared_ledger_seed_steps(estimator):
        reason = (
            f"shares its random_state with {', '.join(map(repr, others))} on "
            "another accountant: fits at the same position of their ledgers "
            "draw the same noise"
        )
        leaks.append(LeakingStep(path, step, reason, _SHARED_SEED_REPLACEMENT))
    return leaks
