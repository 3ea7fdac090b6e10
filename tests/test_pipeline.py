"""One budget for a pipeline (skdp.spent), leak detection (check_pipeline), routing."""

import math
import warnings

import numpy as np
import pandas as pd
import pytest
import sklearn
from sklearn.compose import ColumnTransformer, make_column_selector
from sklearn.decomposition import PCA
from sklearn.feature_selection import SelectKBest
from sklearn.impute import SimpleImputer as SkSimpleImputer
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import FeatureUnion, Pipeline, make_pipeline
from sklearn.preprocessing import FunctionTransformer
from sklearn.preprocessing import OneHotEncoder as SkOneHotEncoder
from sklearn.preprocessing import StandardScaler as SkStandardScaler

import skdp
from skdp import (
    BudgetExceededError,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
    PrivacyAccountant,
    UnscaledDataWarning,
    check_pipeline,
    spent,
)
from skdp.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
    _standard_scaler,
)
from skdp.privacy import ComposedDpEvent, certify_epsilon

NUMERIC = ["age", "hours"]
CATEGORICAL = ["sex", "work"]
CATEGORIES = [["F", "M"], ["private", "public", "self"]]


def _frame(n=3000, seed=0):
    """A small Adult-like table: raw numeric units and string categories."""
    rng = np.random.default_rng(seed)
    sex = rng.choice(["F", "M"], size=n)
    work = rng.choice(["private", "public", "self"], size=n, p=[0.7, 0.2, 0.1])
    age = rng.integers(17, 91, size=n).astype(float)
    hours = np.clip(rng.normal(40, 12, size=n), 1, 99)
    logit = 0.05 * (age - 40) + 0.06 * (hours - 40) + 0.8 * (sex == "M") - 1.0
    y = (rng.random(n) < 1 / (1 + np.exp(-logit))).astype(int)
    X = pd.DataFrame({"age": age, "hours": hours, "sex": sex, "work": work})
    return X, y, sex


def _private_pipeline(acc=None, eps_scaler=0.3, model=None):
    pre = ColumnTransformer(
        [
            (
                "num",
                StandardScaler(
                    bounds=([17, 1], [90, 99]),
                    epsilon=eps_scaler,
                    accountant=acc,
                    random_state=0,
                ),
                NUMERIC,
            ),
            ("cat", OneHotEncoder(categories=CATEGORIES, accountant=acc), CATEGORICAL),
        ]
    )
    if model is None:
        model = HeavyTailedLogisticRegression(
            classes=[0, 1], epsilon=1.0, accountant=acc, random_state=0
        )
    return make_pipeline(pre, model)


# --- check_pipeline --------------------------------------------------------------------


@pytest.mark.parametrize(
    "step, name",
    [
        (SkStandardScaler(), "standardscaler"),
        (SkOneHotEncoder(), "onehotencoder"),
        (SkSimpleImputer(), "simpleimputer"),
        (PCA(n_components=2), "pca"),
        (SelectKBest(k=2), "selectkbest"),
    ],
)
def test_check_pipeline_flags_sklearn_steps_that_learn(step, name):
    pipe = make_pipeline(
        FunctionTransformer(np.log1p), step, HeavyTailedLogisticRegression()
    )
    leaks = check_pipeline(pipe)
    assert [leak.path for leak in leaks] == [name]
    assert leaks[0].step is step
    assert leaks[0].reason and leaks[0].replacement


def test_check_pipeline_recurses_and_names_replacements():
    inner = ColumnTransformer(
        [
            ("num", SkStandardScaler(), NUMERIC),
            ("cat", SkOneHotEncoder(), CATEGORICAL),
        ],
        remainder=SkSimpleImputer(),
    )
    union = FeatureUnion([("pca", PCA(1)), ("id", FunctionTransformer())])
    pipe = Pipeline([("pre", inner), ("union", union), ("clf", LogisticRegression())])
    leaks = {leak.path: leak.replacement for leak in check_pipeline(pipe)}
    assert set(leaks) == {
        "pre__num",
        "pre__cat",
        "pre__remainder",
        "union__pca",
        "clf",
    }
    assert leaks["pre__num"].startswith("skdp.preprocessing.StandardScaler")
    assert leaks["pre__cat"].startswith("skdp.preprocessing.OneHotEncoder")
    assert "SimpleImputer" in leaks["pre__remainder"]
    assert "skdp." in leaks["clf"]


def test_check_pipeline_passes_the_all_skdp_pipeline_and_public_steps():
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    assert check_pipeline(_private_pipeline(acc)) == []
    # Without an accountant its scaler and model share random_state=0: one
    # seed replays both steps' noise (issue 32), so both are listed.
    shared = check_pipeline(_private_pipeline())
    assert [leak.path for leak in shared] == [
        "columntransformer__num",
        "heavytailedlogisticregression",
    ]
    assert all("random_state" in leak.reason for leak in shared)
    fair = _private_pipeline(model=MinimaxFairClassifier(classes=[0, 1]))
    assert check_pipeline(fair) == []
    public = ColumnTransformer(
        [
            ("log", FunctionTransformer(np.log1p), NUMERIC),
            (
                "cat",
                SkOneHotEncoder(categories=CATEGORIES, handle_unknown="ignore"),
                CATEGORICAL,
            ),
            ("sel", "passthrough", make_column_selector(dtype_include=np.number)),
        ],
        remainder="drop",
    )
    assert check_pipeline(make_pipeline(public, HeavyTailedLogisticRegression())) == []


def test_check_pipeline_flags_declared_encoder_that_errors_and_inf_epsilon():
    enc = SkOneHotEncoder(categories=CATEGORIES)  # handle_unknown="error"
    leaks = check_pipeline(make_pipeline(enc, StandardScaler(epsilon=np.inf)))
    assert [leak.path for leak in leaks] == ["onehotencoder", "standardscaler"]
    assert "handle_unknown" in leaks[0].reason
    assert "epsilon=inf" in leaks[1].reason


# --- one budget: skdp.spent ---------------------------------------------------


def test_three_steps_under_one_accountant_report_exactly_their_composition():
    rng = np.random.default_rng(0)
    X = np.column_stack([rng.uniform(0, 10, 2000), rng.uniform(-1, 1, 2000)])
    X[rng.random(X.shape) < 0.1] = np.nan
    acc = PrivacyAccountant(epsilon=1.5, delta=1e-6)
    pipe = make_pipeline(
        SimpleImputer(
            strategy="mean",
            bounds=([0, -1], [10, 1]),
            epsilon=0.5,
            delta=1e-6,
            accountant=acc,
            random_state=0,
        ),
        StandardScaler(
            bounds=([0, -1], [10, 1]),
            epsilon=0.5,
            delta=1e-6,
            accountant=acc,
            random_state=1,
        ),
        MinMaxScaler(epsilon=0.5, delta=1e-6, accountant=acc, random_state=2),
    )
    pipe.fit(X)
    plans = [step.privacy_plan_ for step in pipe]
    exact = certify_epsilon(ComposedDpEvent(plans), 1e-6)
    eps, delta = spent(pipe)
    assert delta == 1e-6
    assert eps == pytest.approx(exact, rel=1e-9)
    assert eps == pytest.approx(acc.spent_epsilon, rel=1e-12)
    assert eps < sum(step.privacy_spent_[0] for step in pipe)  # not a sum of epsilons
    # The same total without an accountant: read from the steps' own plans.
    free = make_pipeline(
        *[sklearn.clone(step).set_params(accountant=None) for step in pipe]
    )
    free.fit(X)
    assert spent(free)[0] == pytest.approx(
        certify_epsilon(ComposedDpEvent([s.privacy_plan_ for s in free]), 3e-6),
        rel=1e-9,
    )

    # A fourth step that would overspend is refused before it reads the data.
    calls = []
    original = _standard_scaler.private_moments

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    Xt = pipe.transform(X)
    before = list(acc.ledger)
    fourth = StandardScaler(bounds=(-5, 5), epsilon=1.0, delta=1e-6, accountant=acc)
    _standard_scaler.private_moments = spy
    try:
        with pytest.raises(BudgetExceededError, match="No data was used"):
            fourth.fit(Xt)
    finally:
        _standard_scaler.private_moments = original
    assert calls == []
    assert acc.ledger == before
    assert not hasattr(fourth, "mean_")
    assert spent(pipe)[0] == pytest.approx(exact, rel=1e-9)


def test_overspending_fourth_step_alone_is_refused_before_reading():
    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(500, 2))
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    steps = [
        StandardScaler(bounds=(0, 1), epsilon=0.5, delta=1e-6, accountant=acc)
        for _ in range(3)
    ]
    Xt = X
    for step in steps:
        Xt = step.fit_transform(Xt)
    before = list(acc.ledger)
    calls = []
    original = _standard_scaler.private_moments
    _standard_scaler.private_moments = lambda *a, **k: (
        calls.append(1) or original(*a, **k)
    )
    try:
        with pytest.raises(BudgetExceededError):
            StandardScaler(bounds=(0, 1), epsilon=0.5, delta=1e-6, accountant=acc).fit(
                Xt
            )
    finally:
        _standard_scaler.private_moments = original
    assert calls == []
    assert acc.ledger == before


def test_spent_of_a_column_transformer_pipeline_and_cross_validation():
    X, y, _ = _frame()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    pipe = _private_pipeline(acc, eps_scaler=0.3)
    scores = cross_val_score(pipe, X, y, cv=3, error_score="raise")
    assert scores.shape == (3,)
    labels = [label for label, _ in acc.ledger]
    # Every fold's every step is on the ledger.
    assert labels.count("StandardScaler") == 3
    assert labels.count("OneHotEncoder") == 3
    assert labels.count("HeavyTailedLogisticRegression") == 3
    pipe.fit(X, y)
    eps, delta = spent(pipe)
    assert delta == 1e-5
    assert eps == pytest.approx(acc.spent_epsilon)
    assert eps == pytest.approx(
        certify_epsilon(ComposedDpEvent([e for _, e in acc.ledger]), 1e-5)
    )


def test_spent_is_infinite_with_a_leaking_step_and_needs_a_fit():
    X, y, _ = _frame(n=500)
    leaky = make_pipeline(
        ColumnTransformer([("num", SkStandardScaler(), NUMERIC)], remainder="drop"),
        HeavyTailedLogisticRegression(classes=[0, 1], random_state=0),
    ).fit(X, y)
    assert math.isinf(spent(leaky)[0])
    with pytest.raises(sklearn.exceptions.NotFittedError):
        spent(_private_pipeline())


def test_spent_composes_the_steps_ledgers_exactly():
    """Steps without a shared accountant count by their privacy ledgers: the
    exact composition of their draws, tighter than adding epsilons."""
    from skdp.privacy import ComposedDpEvent, certify_epsilon

    X, y, _ = _frame(n=2000)
    pipe = _private_pipeline().fit(X, y)
    scaler = pipe[0].named_transformers_["num"]
    model = pipe[-1]
    eps, delta = spent(pipe)
    assert delta == pytest.approx(scaler.privacy_spent_[1] + model.privacy_spent_[1])
    events = [scaler.privacy_ledger_.event(), model.privacy_ledger_.event()]
    assert eps == pytest.approx(certify_epsilon(ComposedDpEvent(events), delta))
    assert eps < scaler.privacy_spent_[0] + model.privacy_spent_[0]


# --- routing ------------------------------------------------------------------------


def test_sensitive_features_route_through_a_private_pipeline():
    X, y, sex = _frame(n=1500)
    acc = PrivacyAccountant(epsilon=3.0, delta=1e-5)
    with sklearn.config_context(enable_metadata_routing=True):
        clf = MinimaxFairClassifier(
            groups=["F", "M"],
            classes=[0, 1],
            epsilon=1.0,
            accountant=acc,
            random_state=0,
        ).set_fit_request(sensitive_features=True)
        pipe = _private_pipeline(acc, model=clf)
        pipe.fit(X, y, sensitive_features=sex)
        assert list(pipe[-1].groups_) == ["F", "M"]
        assert pipe.predict(X).shape == (1500,)
    assert [label for label, _ in acc.ledger] == [
        "StandardScaler",
        "OneHotEncoder",
        "MinimaxFairClassifier",
    ]


# --- raw units warn -------------------------------------------------------------------


def test_heavy_tailed_warns_on_raw_units_not_on_standardized():
    rng = np.random.default_rng(0)
    n = 4000
    Z = rng.normal(size=(n, 3))
    y = (Z @ [1.0, -1.0, 0.5] + rng.logistic(size=n) > 0).astype(int)
    raw = Z * [1.0, 1.0, 1e5] + [0, 0, 2e5]
    with pytest.warns(UserWarning, match="skdp.preprocessing.StandardScaler"):
        HeavyTailedLogisticRegression(classes=[0, 1], random_state=0).fit(raw, y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HeavyTailedLogisticRegression(classes=[0, 1], random_state=0).fit(Z, y)
    pipe = make_pipeline(
        StandardScaler(bounds=([-5, -5, -3e5], [5, 5, 7e5]), random_state=0),
        HeavyTailedLogisticRegression(classes=[0, 1], random_state=0),
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pipe.fit(raw, y)


def test_bilevel_ridge_warns_on_raw_diabetes():
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    with pytest.warns(UserWarning, match="raw units"):
        skdp.BilevelRidge(random_state=0).fit(X, y)
    Xs, ys = load_diabetes(return_X_y=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        skdp.BilevelRidge(random_state=0).fit(Xs, ys)


def test_raw_units_warning_points_at_the_users_line():
    # The warning names the caller's file, not a frame inside skdp or
    # scikit-learn, whether the estimator is fitted alone or in a Pipeline.
    from sklearn.datasets import load_diabetes

    X, y = load_diabetes(return_X_y=True, scaled=False)
    rng = np.random.default_rng(0)
    Z = rng.normal(size=(4000, 3))
    yc = (Z[:, 0] + rng.logistic(size=4000) > 0).astype(int)
    raw = Z * [1.0, 1.0, 1e5] + [0, 0, 2e5]
    fits = [
        lambda: skdp.BilevelRidge(random_state=0).fit(X, y),
        lambda: HeavyTailedLogisticRegression(classes=[0, 1], random_state=0).fit(
            raw, yc
        ),
        lambda: make_pipeline(
            HeavyTailedLogisticRegression(classes=[0, 1], random_state=0)
        ).fit(raw, yc),
        lambda: cross_val_score(  # fits through joblib
            HeavyTailedLogisticRegression(classes=[0, 1], random_state=0),
            raw,
            yc,
            cv=2,
            error_score="raise",
        ),
    ]
    for fit in fits:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            fit()
        unscaled = [w for w in caught if issubclass(w.category, UnscaledDataWarning)]
        assert unscaled
        assert {w.filename for w in unscaled} == {__file__}


def test_warn_if_unscaled_rules():
    from skdp.utils._scale_checks import warn_if_unscaled

    with pytest.warns(UserWarning, match="100 times the median"):
        assert warn_if_unscaled("M", column_scales=[1.0, 1.0, 100.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not warn_if_unscaled("M", column_scales=[1.0, 2.0, 20.0])
        assert not warn_if_unscaled("M", feature_scale=1.0)
        assert not warn_if_unscaled("M", row_norm=3.0, n_features=10)
    with pytest.warns(UserWarning):
        assert warn_if_unscaled("M", feature_scale=1e-3)
    with pytest.warns(UserWarning):
        assert warn_if_unscaled("M", row_norm=500.0, n_features=10)


def test_split_epsilon_composes_to_the_total():
    from skdp.privacy import GaussianDpEvent, calibrate_noise_multiplier, split_epsilon

    eps = split_epsilon(1.0, 1e-6, [0.05, 0.25, 0.7])
    assert all(0 < e < 1.0 for e in eps)
    zs = [calibrate_noise_multiplier(GaussianDpEvent, e, 1e-6) for e in eps]
    total = certify_epsilon(ComposedDpEvent([GaussianDpEvent(z) for z in zs]), 1e-6)
    assert 0.999 <= total <= 1.0 + 1e-9
    assert sum(eps) > 1.2  # the shares are of mu**2, not of epsilon
    assert split_epsilon(np.inf, 1e-6, [1, 1]) == [np.inf, np.inf]
    with pytest.raises(ValueError):
        split_epsilon(1.0, 1e-6, [-1, 2])


# --- review 16: check_pipeline false negatives and positives ---------------------------


def test_check_pipeline_flags_models_whose_tags_need_no_fit():
    # GaussianProcessRegressor's tags say requires_fit=False (it can predict
    # from its prior), yet its fit stores the private training rows.
    from sklearn.gaussian_process import GaussianProcessRegressor

    leaks = check_pipeline(
        make_pipeline(FunctionTransformer(), GaussianProcessRegressor())
    )
    assert [leak.path for leak in leaks] == ["gaussianprocessregressor"]
    assert "skdp." in leaks[0].replacement


def test_check_pipeline_flags_encoders_that_reveal_undeclared_values():
    # skdp's encoder with handle_unknown="error" raises at fit on an
    # undeclared private value, as scikit-learn's does (which is flagged);
    # scikit-learn's with drop warns in transform on one.
    ours = OneHotEncoder(categories=CATEGORIES, handle_unknown="error")
    theirs = SkOneHotEncoder(
        categories=CATEGORIES, handle_unknown="ignore", drop="if_binary"
    )
    leaks = check_pipeline(make_pipeline(ours, theirs))
    assert [leak.path for leak in leaks] == ["onehotencoder-1", "onehotencoder-2"]
    assert "handle_unknown" in leaks[0].reason
    assert "drop" in leaks[1].reason
    with pytest.warns(UserWarning, match="unknown categories"):
        theirs.fit_transform(pd.DataFrame({"sex": ["F", "X"], "work": ["self"] * 2}))


def test_check_pipeline_passes_free_skdp_steps_at_any_epsilon():
    free = make_pipeline(
        SimpleImputer(epsilon=np.inf),
        MinMaxScaler(bounds=(0, 1), epsilon=np.inf),
        StandardScaler(with_mean=False, with_std=False, epsilon=np.inf),
    )
    assert check_pipeline(free) == []
    X = np.random.default_rng(0).uniform(size=(50, 2))
    assert spent(free.fit(X)) == (0.0, 0.0)
    costly = [
        SimpleImputer(strategy="mean", bounds=(0, 1), epsilon=np.inf),
        MinMaxScaler(epsilon=np.inf),
        StandardScaler(bounds=(0, 1), with_std=False, epsilon=np.inf),
    ]
    assert len(check_pipeline(make_pipeline(*costly))) == 3


@pytest.mark.parametrize("empty", [[], np.zeros(4, dtype=bool)])
def test_spent_skips_column_transformer_steps_that_select_no_column(empty):
    # scikit-learn never fits a transformer on an empty column selection and
    # keeps the unfitted original in transformers_: it read nothing, so it
    # costs nothing (spent() raised NotFittedError).
    X, _, _ = _frame(n=300)
    ct = ColumnTransformer(
        [
            (
                "num",
                StandardScaler(bounds=([17, 1], [90, 99]), random_state=0),
                NUMERIC,
            ),
            ("none", StandardScaler(bounds=(0, 1), random_state=0), empty),
        ]
    ).fit(X)
    num = ct.named_transformers_["num"]
    assert spent(ct) == pytest.approx(num.privacy_spent_)


def test_check_pipeline_flags_function_transformer_checking_its_inverse():
    # check_inverse=True (the default) round-trips a sample of the private
    # rows at fit and warns when one fails: a value below -1 here.
    checked = FunctionTransformer(np.log1p, inverse_func=np.expm1)
    with warnings.catch_warnings(record=True) as caught, np.errstate(all="ignore"):
        warnings.simplefilter("always")
        checked.fit(np.array([[-5.0], [1.0], [2.0]]))
    assert any("inverse" in str(w.message) for w in caught)
    leaks = check_pipeline(make_pipeline(checked))
    assert [leak.path for leak in leaks] == ["functiontransformer"]
    assert "check_inverse=False" in leaks[0].replacement
    unchecked = FunctionTransformer(
        np.log1p, inverse_func=np.expm1, check_inverse=False
    )
    assert check_pipeline(make_pipeline(unchecked, FunctionTransformer(np.log1p))) == []


def test_check_pipeline_flags_declared_splines_that_raise_beyond_the_knots():
    from sklearn.preprocessing import SplineTransformer

    knots = np.array([[0.0], [0.5], [1.0]])
    raising = SplineTransformer(knots=knots, extrapolation="error")
    with pytest.raises(ValueError, match="beyond the limits"):
        raising.fit_transform(np.array([[0.2], [7.0]]))  # one private value
    leaks = check_pipeline(make_pipeline(raising))
    assert [leak.path for leak in leaks] == ["splinetransformer"]
    assert "extrapolation" in leaks[0].reason
    assert check_pipeline(make_pipeline(SplineTransformer(knots=knots))) == []


def test_spent_of_a_model_is_certified_at_any_delta():
    # A model counts by its privacy ledger, so spent() certifies it at any
    # delta; basic composition of (epsilon, delta) would certify nothing
    # below the model's own delta (review 16).
    X, y, _ = _frame(n=600)
    model = HeavyTailedLogisticRegression(classes=[0, 1], random_state=0)
    model.fit(X[NUMERIC].to_numpy() / 100.0, y)
    eps, delta = model.privacy_spent_
    assert spent(model) == pytest.approx((eps, delta), rel=1e-6)
    looser, _ = spent(model, delta=2 * delta)
    stricter, _ = spent(model, delta=delta / 1000)
    assert looser < eps < stricter < math.inf


def test_check_pipeline_random_features_by_what_they_read():
    from sklearn.kernel_approximation import (
        AdditiveChi2Sampler,
        PolynomialCountSketch,
        RBFSampler,
    )
    from sklearn.random_projection import (
        GaussianRandomProjection,
        SparseRandomProjection,
    )

    public = make_pipeline(
        GaussianRandomProjection(n_components=2),
        SparseRandomProjection(n_components=2),
        PolynomialCountSketch(n_components=4),
        RBFSampler(n_components=4),
    )
    assert check_pipeline(public) == []
    # gamma="scale" reads the exact variance; the chi2 sampler raises on a
    # negative private value (stateless by its tags, so it was not listed).
    with pytest.raises(ValueError, match="[Nn]egative"):
        AdditiveChi2Sampler().fit_transform(np.array([[1.0], [-1.0]]))
    leaks = check_pipeline(
        make_pipeline(RBFSampler(gamma="scale"), AdditiveChi2Sampler())
    )
    assert [leak.path for leak in leaks] == ["rbfsampler", "additivechi2sampler"]


def test_check_pipeline_passes_sklearn_constant_imputer_without_indicator():
    # A constant fill learns nothing (false positive); the mean, or an
    # indicator of the columns that have missing values, does.
    const = SkSimpleImputer(strategy="constant", fill_value=0.0)
    assert check_pipeline(make_pipeline(const)) == []
    leaks = check_pipeline(
        make_pipeline(
            SkSimpleImputer(strategy="constant", add_indicator=True),
            SkSimpleImputer(),
        )
    )
    assert len(leaks) == 2
