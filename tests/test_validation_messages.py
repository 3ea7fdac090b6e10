"""Input errors name the problem, never a private value.

Issue 32, "Also": scikit-learn's validation quotes the data in some errors (a
1-D ``X`` is printed whole, a complex one too, ``could not convert string to
float: 'x'``, unknown label types print the labels). Inputs are private at
``fit`` and at ``predict`` / ``transform`` alike, so skdp re-raises them
without the values, and with no chained exception that holds them.
"""

import warnings

import numpy as np
import pytest

from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
)
from skdp.model_selection import PrivateSearchCV
from skdp.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
)

NUMBER = 123456.789
TEXT = "SECRET"
SENTINELS = ("123456", "1.23456", TEXT)

REGRESSORS = [
    lambda: BilevelRidge(epsilon=np.inf, feature_norm=2.0, target_bound=2.0),
    lambda: HeavyTailedLinearRegression(epsilon=np.inf, max_iter=5),
    lambda: PrivateSearchCV(
        HeavyTailedLinearRegression(max_iter=5),
        param_grid={"feature_norm": [1.0, 2.0]},
        epsilon=np.inf,
    ),
]
CLASSIFIERS = [
    lambda: HeavyTailedLogisticRegression(epsilon=np.inf, max_iter=5),
    lambda: MinimaxFairClassifier(epsilon=np.inf, groups=[0, 1], classes=[0, 1]),
]
TRANSFORMERS = [
    lambda: StandardScaler(epsilon=np.inf, bounds=(-3, 3)),
    lambda: MinMaxScaler(bounds=(-3, 3)),
    lambda: SimpleImputer(strategy="mean", bounds=(-3, 3), epsilon=np.inf),
    lambda: OneHotEncoder(categories=[[0, 1]]),
]
ALL = REGRESSORS + CLASSIFIERS + TRANSFORMERS


def _name(make):
    return type(make()).__name__


def _data(n=40):
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(n, 2)).astype(float)
    y = (rng.random(n) < 0.5).astype(int)
    groups = np.arange(n) % 2
    return X, y, groups


def _fit(est, X, y, groups):
    if isinstance(est, MinimaxFairClassifier):
        return est.fit(X, y, sensitive_features=groups)
    if isinstance(est, (HeavyTailedLogisticRegression,)) or not hasattr(
        est, "transform"
    ):
        return est.fit(X, y)
    return est.fit(X)


def _chain(exc):
    seen = []
    while exc is not None and exc not in seen:
        seen.append(exc)
        exc = exc.__cause__ or exc.__context__
    return seen


def _assert_quiet(info):
    for exc in _chain(info.value):
        text = str(exc) + repr(exc.args)
        for sentinel in SENTINELS:
            assert sentinel not in text, f"{type(exc).__name__}: {text}"
    # the message still names the problem
    assert str(info.value)


def _bad_inputs(n_features=2):
    column = np.full(20, 0.0)
    column[3] = NUMBER
    strings = np.zeros((20, n_features), dtype=object)
    strings[3, 0] = TEXT
    complex_rows = np.zeros((20, n_features), dtype=complex)
    complex_rows[3, 0] = NUMBER + 1j
    return {
        "1-D": column,
        "scalar": np.float64(NUMBER),
        "complex": complex_rows,
        "inf": np.where(np.eye(20, n_features) > 0, np.inf, NUMBER),
    } | ({} if n_features == 1 else {"string": strings})


@pytest.mark.parametrize("make", ALL, ids=_name)
@pytest.mark.parametrize("kind", ["1-D", "scalar", "complex", "string", "inf"])
def test_fit_errors_on_x_quote_no_value(make, kind):
    X, y, groups = _data(20)
    est = make()
    bad = _bad_inputs().get(kind)
    if isinstance(est, OneHotEncoder) and kind == "string":
        pytest.skip("the encoder takes strings (an undeclared one is unknown)")
    if isinstance(est, SimpleImputer) and kind == "inf":
        pytest.skip("covered by the other transformers")
    with warnings.catch_warnings(), pytest.raises((ValueError, TypeError)) as info:
        warnings.simplefilter("ignore")
        _fit(est, bad, y, groups)
    _assert_quiet(info)


@pytest.mark.parametrize("make", ALL, ids=_name)
@pytest.mark.parametrize("kind", ["1-D", "scalar", "complex", "string"])
def test_predict_and_transform_errors_quote_no_value(make, kind):
    X, y, groups = _data()
    est = make()
    if isinstance(est, OneHotEncoder) and kind == "string":
        pytest.skip("the encoder takes strings (an undeclared one is unknown)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(est, X, y, groups)
    bad = _bad_inputs()[kind]
    method = est.transform if hasattr(est, "transform") else est.predict
    with warnings.catch_warnings(), pytest.raises((ValueError, TypeError)) as info:
        warnings.simplefilter("ignore")
        method(bad)
    _assert_quiet(info)


@pytest.mark.parametrize("make", REGRESSORS, ids=_name)
def test_regression_target_errors_quote_no_value(make):
    X, _, groups = _data(20)
    y = np.zeros(20, dtype=object)
    y[3] = TEXT
    with warnings.catch_warnings(), pytest.raises((ValueError, TypeError)) as info:
        warnings.simplefilter("ignore")
        make().fit(X, y)
    _assert_quiet(info)


@pytest.mark.parametrize("make", CLASSIFIERS, ids=_name)
def test_classification_target_errors_quote_no_value(make):
    X, _, groups = _data(20)
    for y in (
        np.where(np.arange(20) == 3, NUMBER, 0.0),  # continuous: unknown type
        [[0, 1]] * 19 + [[0, [TEXT]]],  # not a label array at all
    ):
        with warnings.catch_warnings(), pytest.raises((ValueError, TypeError)) as info:
            warnings.simplefilter("ignore")
            _fit(make(), X, y, groups)
        _assert_quiet(info)


def test_undeclared_group_is_not_in_the_chained_exception():
    X, y, _ = _data(20)
    groups = np.array([0, 1] * 9 + [0, TEXT], dtype=object)
    est = MinimaxFairClassifier(epsilon=np.inf, groups=[0, 1], classes=[0, 1])
    with pytest.raises(ValueError, match="not among the declared groups") as info:
        est.fit(X, y, sensitive_features=groups)
    _assert_quiet(info)


def test_many_distinct_labels_warn_nothing():
    # scikit-learn warns when over half the labels are distinct: whether it
    # does depends on the data (one record can tip it).
    X = np.random.default_rng(0).standard_normal((21, 2))
    y = np.r_[np.arange(11), np.zeros(10, int)]
    est = HeavyTailedLogisticRegression(
        epsilon=np.inf, max_iter=2, classes=list(range(11))
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        est.fit(X, y)
    assert not [w for w in caught if "unique classes" in str(w.message)]


@pytest.mark.parametrize("make", REGRESSORS + CLASSIFIERS, ids=_name)
@pytest.mark.parametrize("kind", ["object", "strings"])
def test_score_errors_on_y_quote_no_value(make, kind):
    # score's metric validates y itself (r2_score, accuracy_score): its
    # errors quoted 'SECRET' ("could not convert string to float",
    # "Mix of label input types ...; Got [...]").
    X, y, groups = _data()
    est = make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _fit(est, X, y, groups)
    bad = np.array(["a"] * 39 + [TEXT])
    if kind == "object":
        bad = np.array([0] * 39 + [TEXT], dtype=object)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est.score(X, bad)
    except (ValueError, TypeError) as exc:
        for link in _chain(exc):
            assert TEXT not in str(link) + repr(link.args)


def test_transformers_still_have_no_score():
    assert not hasattr(StandardScaler(), "score")
    assert not hasattr(OneHotEncoder(), "score")
