"""skdp.preprocessing: sensitivity (coupled runs), accounting, epsilon=inf against scikit-learn."""

import math
import warnings

import numpy as np
import pytest
from sklearn import impute as sk_impute
from sklearn import preprocessing as sk
from sklearn.base import clone
from sklearn.exceptions import NotFittedError

from skdp import BudgetExceededError, PrivacyAccountant
from skdp.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
)
from skdp.preprocessing._bounds import bounds_event, estimate_bounds
from skdp.preprocessing._imputer import private_observed_mean
from skdp.preprocessing._moments import moments_sensitivity, private_moments
from skdp.privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    PureDpEvent,
    certify_epsilon,
    gdp_epsilon,
    reachable_quantile_level,
)


def _data(n=400, d=3, seed=0):
    rng = np.random.default_rng(seed)
    lower = np.array([-3.0, 0.0, 100.0])[:d]
    upper = np.array([5.0, 10.0, 1000.0])[:d]
    return rng.uniform(lower, upper, size=(n, d)), lower, upper


# --- coupled runs: the pre-noise statistic moves by at most its sensitivity ------


@pytest.mark.parametrize("with_var", [False, True])
def test_moments_coupled_runs_sensitivity(with_var):
    X, lower, upper = _data()
    n, d = X.shape
    sens = moments_sensitivity(n, d)
    rng = np.random.default_rng(1)
    worst = 0.0
    candidates = [lower - 50, upper + 50, 0.5 * (lower + upper)]
    candidates += list(rng.uniform(lower - 5, upper + 5, size=(200, d)))
    for row in candidates:
        for i in (0, 7):
            X2 = X.copy()
            X2[i] = row
            # Same seed on both sides: the noise cancels in the difference.
            a = private_moments(
                X, lower, upper, 3.0, with_var=with_var, rng=np.random.default_rng(5)
            )
            b = private_moments(
                X2, lower, upper, 3.0, with_var=with_var, rng=np.random.default_rng(5)
            )
            worst = max(worst, np.linalg.norm(a[2] - b[2]))
    assert worst <= sens * (1 + 1e-12)
    # Nearly attained: one row from the lower corner to the upper corner.
    X1, X2 = X.copy(), X.copy()
    X1[0], X2[0] = lower, upper
    a = private_moments(X1, lower, upper, 0.0, with_var=with_var, rng=None)[2]
    b = private_moments(X2, lower, upper, 0.0, with_var=with_var, rng=None)[2]
    assert np.linalg.norm(a - b) >= 0.999 * sens


def test_moments_noise_is_calibrated_to_the_sensitivity():
    X, lower, upper = _data(n=200, d=2)
    z, sens = 2.0, moments_sensitivity(200, 2)
    draws = np.array(
        [
            private_moments(
                X, lower, upper, z, with_var=False, rng=np.random.default_rng(s)
            )[0]
            for s in range(400)
        ]
    )
    exact = private_moments(X, lower, upper, 0.0, with_var=False, rng=None)[0]
    # In original units the noise std of column j is z * sens * width_j.
    std = (draws - exact).std(axis=0) / (upper - lower)
    np.testing.assert_allclose(std, z * sens, rtol=0.15)


def test_observed_mean_coupled_runs_sensitivity():
    X, lower, upper = _data(n=300)
    X[::5, 1] = np.nan
    n, d = X.shape
    sens = moments_sensitivity(n, d)
    rng = np.random.default_rng(2)
    worst = 0.0
    rows = [np.full(d, np.nan), lower, upper, np.array([np.nan, 20.0, -1e9])]
    rows += list(rng.uniform(lower, upper, size=(100, d)))
    for row in rows:
        for i in (0, 5):  # row 5 has a missing value
            X2 = X.copy()
            X2[i] = row
            a = private_observed_mean(
                X, lower, upper, 1.0, rng=np.random.default_rng(3)
            )[1]
            b = private_observed_mean(
                X2, lower, upper, 1.0, rng=np.random.default_rng(3)
            )[1]
            worst = max(worst, np.linalg.norm(a - b))
    assert worst <= sens * (1 + 1e-12)
    # Attained: an observed extreme row against an all-missing row... and
    # lower against upper corners (|du| = 1 per column).
    X1, X2 = X.copy(), X.copy()
    X1[1], X2[1] = lower, upper
    a = private_observed_mean(X1, lower, upper, 0.0, rng=None)[1]
    b = private_observed_mean(X2, lower, upper, 0.0, rng=None)[1]
    assert np.linalg.norm(a - b) >= 0.999 * sens


def test_bound_quantiles_are_the_declared_event():
    X, _, _ = _data(n=5000)
    sc = StandardScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    # default estimation_share=0.3 of mu**2, over 2 d = 6 quantiles
    eps_q = Budget.from_target(1.0, 1e-6, margin=False).mu * math.sqrt(0.3 / 6)
    plan = sc.privacy_plan_
    assert plan.events[0] == bounds_event(eps_q, 3)
    assert plan.events[0].events == [PureDpEvent(eps_q)] * 6
    # The releases are usable: each column's bounds bracket the planned
    # central share of its data (levels a public function of n, epsilon_q).
    level = reachable_quantile_level(5000, eps_q, 0.995)
    lo, hi = sc.bounds_
    inside = np.mean((X >= lo) & (X <= hi), axis=0)
    assert np.all(inside > 2 * level - 1 - 0.03)


def test_estimated_bounds_use_only_their_stream():
    X, _, _ = _data(n=2000)
    a = estimate_bounds(X, 0.5, np.random.default_rng(0))
    b = estimate_bounds(X, 0.5, np.random.default_rng(0))
    np.testing.assert_array_equal(a[0], b[0])
    assert np.all(a[0] < a[1])


# --- accounting --------------------------------------------------------------------


@pytest.mark.parametrize("epsilon", [0.3, 1.0, 4.0])
def test_standard_scaler_declared_bounds_is_one_exact_gaussian(epsilon):
    X, lower, upper = _data()
    sc = StandardScaler(
        bounds=(lower, upper), epsilon=epsilon, delta=1e-5, random_state=0
    )
    sc.fit(X)
    plan = sc.privacy_plan_
    assert isinstance(plan, GaussianDpEvent)
    # Closed-form GDP curve: a full-batch Gaussian with multiplier z is 1/z-GDP.
    closed = gdp_epsilon(1.0 / plan.noise_multiplier, 1e-5)
    assert closed <= epsilon * (1 + 1e-9)
    assert closed >= 0.999 * epsilon  # calibrated tightly, not loosely
    assert sc.privacy_spent_[0] == pytest.approx(closed, rel=1e-3)


def test_standard_scaler_estimated_bounds_accounting():
    X, _, _ = _data(n=3000)
    sc = StandardScaler(epsilon=1.0, delta=1e-6, random_state=0).fit(X)
    eps = certify_epsilon(sc.privacy_plan_, 1e-6)
    assert eps <= 1.0 + 1e-9
    assert eps >= 0.99
    # Spending on the bounds costs noise: the Gaussian needs more than alone.
    alone = StandardScaler(bounds=(-1e3, 1e3), epsilon=1.0, delta=1e-6).fit(X)
    assert (
        sc.privacy_plan_.events[1].noise_multiplier
        > alone.privacy_plan_.noise_multiplier
    )


@pytest.mark.parametrize("share", [0.05, 0.3, 0.8])
def test_standard_scaler_estimation_share_is_a_share_of_mu_squared(share):
    # The unit of every skdp estimator (issue 19): the 2 d quantiles take
    # ``share`` of the GDP budget's mu**2, each at mu sqrt(share / (2 d)) (the
    # same zCDP cost), and the Gaussian is calibrated exactly to the rest.
    X, _, _ = _data(n=20_000)
    d = X.shape[1]
    sc = StandardScaler(
        epsilon=4.0, delta=1e-6, estimation_share=share, random_state=0
    ).fit(X)
    quantiles, gaussian = sc.privacy_plan_.events
    mu = Budget.from_target(4.0, 1e-6, margin=False).mu
    assert len(quantiles.events) == 2 * d
    for q in quantiles.events:
        assert isinstance(q, PureDpEvent)
        assert q.epsilon == pytest.approx(mu * math.sqrt(share / (2 * d)), rel=1e-12)
    assert sum(q.epsilon**2 for q in quantiles.events) == pytest.approx(
        share * mu**2, rel=1e-12
    )
    eps = certify_epsilon(sc.privacy_plan_, 1e-6)
    assert 0.99 * 4.0 <= eps <= 4.0 + 1e-9
    # a larger share leaves the Gaussian less: more noise on the moments
    other = StandardScaler(
        epsilon=4.0, delta=1e-6, estimation_share=share / 2, random_state=0
    ).fit(X)
    assert gaussian.noise_multiplier > other.privacy_plan_.events[1].noise_multiplier


def test_free_steps_cost_nothing():
    X, lower, upper = _data()
    acc = PrivacyAccountant(epsilon=0.5, delta=1e-6)
    steps = [
        MinMaxScaler(bounds=(lower, upper), accountant=acc),
        OneHotEncoder(categories=[[0.0, 1.0]] * 3, accountant=acc),
        SimpleImputer(accountant=acc),
        StandardScaler(with_mean=False, with_std=False, accountant=acc),
    ]
    for step in steps:
        step.fit(X)
        assert step.privacy_spent_ == (0.0, 0.0)
        assert isinstance(step.privacy_plan_, NoOpDpEvent)
    assert acc.spent_epsilon == 0.0
    assert len(acc.ledger) == 4


def test_minmax_estimated_bounds_and_imputer_mean_accounting():
    X, lower, upper = _data(n=3000)
    mm = MinMaxScaler(epsilon=0.5, delta=1e-6, random_state=0).fit(X)
    assert mm.privacy_plan_ == bounds_event(0.5 / 6, 3)
    assert mm.privacy_spent_[0] <= 0.5 + 1e-9
    imp = SimpleImputer(strategy="mean", bounds=(lower, upper), epsilon=0.5, delta=1e-6)
    imp.fit(X)
    assert isinstance(imp.privacy_plan_, GaussianDpEvent)
    closed = gdp_epsilon(1.0 / imp.privacy_plan_.noise_multiplier, 1e-6)
    assert 0.499 <= closed <= 0.5 * (1 + 1e-9)


def test_epsilon_inf_is_not_private_and_refused_by_a_finite_budget():
    X, lower, upper = _data()
    sc = StandardScaler(bounds=(lower, upper), epsilon=np.inf).fit(X)
    assert isinstance(sc.privacy_plan_, NonPrivateDpEvent)
    assert math.isinf(sc.privacy_spent_[0])
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    with pytest.raises(BudgetExceededError):
        StandardScaler(bounds=(lower, upper), epsilon=np.inf, accountant=acc).fit(X)


# --- epsilon = inf reproduces scikit-learn ------------------------------------------


@pytest.mark.parametrize(
    "with_mean, with_std", [(True, True), (False, True), (True, False), (False, False)]
)
def test_standard_scaler_inf_equals_sklearn(with_mean, with_std):
    X, lower, upper = _data()
    X[:, 1] = 4.0  # a constant column: scale 1 as in scikit-learn
    ours = StandardScaler(
        bounds=(lower, upper), with_mean=with_mean, with_std=with_std, epsilon=np.inf
    ).fit(X)
    ref = sk.StandardScaler(with_mean=with_mean, with_std=with_std).fit(X)
    for name in ("mean_", "var_", "scale_"):
        a, b = getattr(ours, name), getattr(ref, name)
        if b is None:
            assert a is None
        else:
            np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(
        ours.transform(X), ref.transform(X), rtol=1e-9, atol=1e-9
    )
    np.testing.assert_allclose(ours.inverse_transform(ours.transform(X)), X, rtol=1e-12)
    assert ours.n_samples_seen_ == ref.n_samples_seen_


def test_minmax_scaler_inf_equals_sklearn():
    X, _, _ = _data()
    ours = MinMaxScaler(
        bounds=(X.min(axis=0), X.max(axis=0)), feature_range=(-1, 2)
    ).fit(X)
    ref = sk.MinMaxScaler(feature_range=(-1, 2)).fit(X)
    np.testing.assert_allclose(
        ours.transform(X), ref.transform(X), rtol=1e-12, atol=1e-12
    )
    for name in ("data_min_", "data_max_", "data_range_", "scale_", "min_"):
        np.testing.assert_allclose(getattr(ours, name), getattr(ref, name), rtol=1e-12)


def test_one_hot_encoder_equals_sklearn_with_declared_categories():
    X = np.array([["a", "x"], ["b", "y"], ["a", "y"]], dtype=object)
    cats = [["a", "b", "c"], ["x", "y"]]
    ours = OneHotEncoder(categories=cats).fit(X)
    ref = sk.OneHotEncoder(
        categories=cats, handle_unknown="ignore", sparse_output=False
    )
    ref.fit(X)
    Xt = np.array([["c", "x"], ["zzz", "y"]], dtype=object)
    np.testing.assert_array_equal(ours.transform(Xt), ref.transform(Xt))
    np.testing.assert_array_equal(
        ours.get_feature_names_out(), ref.get_feature_names_out()
    )
    # A category seen in no row is still a column (the schema, not the data).
    assert ours.transform(Xt).shape == (2, 5)


def test_one_hot_encoder_one_list_applies_to_every_column():
    enc = OneHotEncoder(categories=[[0, 1]]).fit(np.array([[0, 1, 1], [1, 0, 5]]))
    assert len(enc.categories_) == 3
    np.testing.assert_array_equal(enc.transform([[1, 1, 5]]), [[0, 1, 0, 1, 0, 0]])


def test_one_hot_encoder_refuses_to_infer_categories():
    with pytest.raises(ValueError, match=r"pass categories=\[\[values of column 0\]"):
        OneHotEncoder().fit([["a"], ["b"]])
    with pytest.raises(ValueError):
        OneHotEncoder(categories=[["a"]], handle_unknown="error").fit([["b"]])


def test_one_hot_encoder_error_does_not_echo_the_undeclared_value():
    # handle_unknown="error" reveals that some record holds an undeclared
    # value (documented); scikit-learn's message would also publish the value
    X = np.array([["a"]] * 20 + [["secret-42"]])
    enc = OneHotEncoder(categories=[["a", "b"]], handle_unknown="error")
    with pytest.raises(ValueError, match="outside the declared categories") as info:
        enc.fit(X)
    for exc in (info.value, info.value.__cause__, info.value.__context__):
        assert exc is None or "secret" not in str(exc)
    enc.fit(X[:20])
    with pytest.raises(ValueError, match="outside the declared categories") as info:
        enc.transform(X)
    for exc in (info.value, info.value.__cause__, info.value.__context__):
        assert exc is None or "secret" not in str(exc)


def test_one_hot_encoder_error_check_is_accounted_as_non_private():
    # The fit's success or its error tells whether some record holds an
    # undeclared value (no noise): neighbouring datasets that differ in that
    # one record are told apart with certainty, so no finite epsilon holds.
    X = np.array([["a"]] * 20 + [["b"]])
    enc = OneHotEncoder(categories=[["a", "b"]], handle_unknown="error").fit(X)
    assert enc.privacy_spent_[0] == math.inf
    ignore = OneHotEncoder(categories=[["a", "b"]]).fit(X)
    assert ignore.privacy_spent_ == (0.0, 0.0)
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-5)
    with pytest.raises(BudgetExceededError):
        OneHotEncoder(
            categories=[["a", "b"]], handle_unknown="error", accountant=acc
        ).fit(X)
    assert acc.spent_epsilon == 0.0  # refused before anything was read
    OneHotEncoder(categories=[["a", "b"]], accountant=acc).fit(X)
    assert acc.spent_epsilon == 0.0


@pytest.mark.parametrize("strategy", ["mean", "constant"])
def test_simple_imputer_inf_equals_sklearn(strategy):
    X, lower, upper = _data()
    X[np.random.default_rng(1).random(X.shape) < 0.2] = np.nan
    ours = SimpleImputer(
        strategy=strategy, fill_value=-7.0, bounds=(lower, upper), epsilon=np.inf
    ).fit(X)
    ref = sk_impute.SimpleImputer(strategy=strategy, fill_value=-7.0).fit(X)
    np.testing.assert_allclose(
        ours.statistics_, ref.statistics_.astype(float), rtol=1e-10
    )
    np.testing.assert_allclose(ours.transform(X), ref.transform(X), rtol=1e-10)


def test_simple_imputer_mean_needs_bounds():
    with pytest.raises(ValueError, match="bounds"):
        SimpleImputer(strategy="mean").fit([[1.0], [np.nan]])


# --- behaviour under noise ------------------------------------------------------------


def test_standard_scaler_is_accurate_with_many_rows_and_reproducible():
    X, lower, upper = _data(n=20_000)
    a = StandardScaler(bounds=(lower, upper), epsilon=1.0, random_state=3).fit(X)
    b = StandardScaler(bounds=(lower, upper), epsilon=1.0, random_state=3).fit(X)
    np.testing.assert_array_equal(a.mean_, b.mean_)
    ref = sk.StandardScaler().fit(X)
    np.testing.assert_allclose(a.mean_, ref.mean_, atol=0.01 * (upper - lower).max())
    np.testing.assert_allclose(a.scale_, ref.scale_, rtol=0.05)
    assert np.all(a.scale_ > 0)


def test_values_outside_the_bounds_are_clipped_not_an_error():
    X, lower, upper = _data()
    X[0] = 1e12
    sc = StandardScaler(bounds=(lower, upper), epsilon=np.inf).fit(X)
    assert np.all(sc.mean_ <= upper) and np.all(np.isfinite(sc.scale_))
    # transform clips to the bounds the statistics describe (clip=True).
    np.testing.assert_allclose(sc.transform(X[:1]), sc.transform(upper[None, :]))
    far = StandardScaler(bounds=(lower, upper), epsilon=np.inf, clip=False).fit(X)
    assert far.transform(X[:1]).max() > 1e6


def test_bad_bounds_are_rejected_before_any_spending():
    X, _, _ = _data()
    acc = PrivacyAccountant(epsilon=1.0, delta=1e-6)
    with pytest.raises(ValueError, match="below its upper"):
        StandardScaler(bounds=(1.0, 0.0), accountant=acc).fit(X)
    with pytest.raises(ValueError, match="shape"):
        StandardScaler(bounds=([0, 1], [2, 3]), accountant=acc).fit(X)
    # Finite bounds whose width overflows made every statistic NaN (review 16).
    for step in (StandardScaler, SimpleImputer, MinMaxScaler):
        kwargs = {"strategy": "mean"} if step is SimpleImputer else {}
        with pytest.raises(ValueError, match="upper - lower"):
            step(bounds=(-1e308, 1e308), accountant=acc, **kwargs).fit(X)
    assert acc.ledger == []
    with pytest.raises(NotFittedError):
        StandardScaler().transform(X)


def test_composition_matches_the_accountant():
    X, lower, upper = _data()
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-6)
    s1 = StandardScaler(
        bounds=(lower, upper), epsilon=0.5, delta=1e-6, accountant=acc
    ).fit(X)
    s2 = SimpleImputer(
        strategy="mean", bounds=(lower, upper), epsilon=0.5, delta=1e-6, accountant=acc
    ).fit(X)
    composed = certify_epsilon(
        ComposedDpEvent([s1.privacy_plan_, s2.privacy_plan_]), 1e-6
    )
    assert acc.spent_epsilon == pytest.approx(composed)
    assert composed < 1.0  # tighter than adding the epsilons


def test_bound_quantile_utility_coupled_runs_sensitivity():
    # The private bounds are exponential-mechanism quantiles of asinh(x) over
    # public cells; each cell's utility (a rank distance) moves by at most 1
    # when one row is replaced, which is what the pure-epsilon event assumes.
    from skdp.preprocessing._bounds import QUANTILE_RANGE
    from skdp.privacy._mechanisms import _quantile_intervals

    X, lower, upper = _data(n=500, d=1)
    eps = 2.0
    rng = np.random.default_rng(0)

    def utility(col, q):
        edges, logw, _ = _quantile_intervals(
            np.arcsinh(col), q, eps, QUANTILE_RANGE, False
        )
        return (logw - np.log(np.diff(edges))) / (0.5 * eps)

    worst = 0.0
    for q in (0.005, 0.995):
        base = utility(X[:, 0], q)
        for value in [-1e15, 1e15, 0.0, *rng.uniform(-10, 1e4, 50)]:
            X2 = X[:, 0].copy()
            X2[3] = value
            worst = max(worst, np.max(np.abs(utility(X2, q) - base)))
    assert worst <= 1.0 + 1e-9
    assert worst >= 0.999


# --- empirical audit: neighbouring datasets, many fits --------------------------------


def _audit_scaler(epsilon, factor, runs=600):
    from skdp.privacy._mechanisms import _scaled_noise
    from skdp.privacy.audit import epsilon_lower_bound

    rng = np.random.default_rng(0)
    X = rng.uniform(0, 1, size=(40, 1))
    X_out, X_in = X.copy(), X.copy()
    X_out[0], X_in[0] = 0.0, 1.0  # the canary row at either end of the bounds
    delta = 1e-5
    scores = []
    with _scaled_noise(factor):
        for data in (X_out, X_in):
            scores.append(
                [
                    StandardScaler(
                        bounds=(0, 1),
                        with_std=False,
                        epsilon=epsilon,
                        delta=delta,
                        random_state=s,
                    )
                    .fit(data)
                    .mean_[0]
                    for s in range(runs)
                ]
            )
    threshold = 0.5 * (X_out.mean() + X_in.mean())
    return epsilon_lower_bound(scores[0], scores[1], threshold, +1, delta=delta)


def test_audit_of_the_private_mean_stays_below_epsilon_and_catches_less_noise():
    assert _audit_scaler(2.0, 1.0) <= 2.0
    # Negative control: a tenth of the noise is detected as a privacy violation.
    assert _audit_scaler(2.0, 0.1) > 2.0


# --- floating point on private rows is silent (review 16) ------------------------------


@pytest.mark.parametrize(
    "step",
    [
        MinMaxScaler(bounds=(0.0, 0.5)),
        MinMaxScaler(bounds=(0.0, 1e10)),
        StandardScaler(bounds=(0.0, 1.0), clip=False, random_state=0),
        MinMaxScaler(bounds=(0.0, 0.5), clip=False),
        StandardScaler(bounds=(0.0, 1.0), random_state=0),
        SimpleImputer(strategy="mean", bounds=(0.0, 1.0), random_state=0),
    ],
    ids=[
        "minmax",
        "minmax-wide",
        "standard-noclip",
        "minmax-noclip",
        "standard",
        "imputer",
    ],
)
@pytest.mark.parametrize("extreme", [1e308, -1e308, 1e-310])
def test_extreme_private_values_raise_no_floating_point_warning(step, extreme):
    # In a Pipeline's fit, transform runs on the private training rows: a
    # warning (or FloatingPointError) that one extreme record triggers is a
    # release. MinMaxScaler multiplied before it clipped (overflow warning).
    X = np.array([[0.1], [0.2], [0.3], [extreme]])
    with warnings.catch_warnings(), np.errstate(all="raise"):
        warnings.simplefilter("error")
        # Four rows: the default delta would be refused (issue 15), pass one.
        Xt = clone(step).set_params(delta=1e-6).fit_transform(X)
    assert Xt.shape == X.shape
    # Never inf either: the next step of the pipeline would raise on it.
    assert np.all(np.isfinite(Xt))


@pytest.mark.parametrize("drop", [None, "first", "if_binary"])
def test_one_hot_encoder_ignores_undeclared_values_silently(drop):
    # scikit-learn warns "Found unknown categories" in transform when drop is
    # set: in a Pipeline's fit that warning would tell that a private record
    # holds an undeclared value.
    enc = OneHotEncoder(categories=[["a", "b"]], drop=drop)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        Xt = enc.fit_transform([["a"], ["b"], ["zzz"]])
    assert not Xt[2].any()


def test_standard_scaler_inf_keeps_a_small_spread_inside_wide_bounds():
    # The constant-column threshold was 10 eps width**2: a column with std
    # 0.01 inside bounds (0, 1e6) got scale_ = 1 instead of scikit-learn's
    # 0.01 (review 16). Constant columns still get 1, wherever they sit. (Far
    # from the middle, the one-pass variance loses eps E[u**2] / var(u).)
    rng = np.random.default_rng(0)
    X = np.column_stack(
        [
            5e5 + 0.01 * rng.standard_normal(1000),
            3e5 + 1.0 * rng.standard_normal(1000),
            np.full(1000, 7e5),
            np.full(1000, 1e6),
            np.full(1000, 5e5),
        ]
    )
    ours = StandardScaler(bounds=(0.0, 1e6), epsilon=np.inf).fit(X)
    ref = sk.StandardScaler().fit(X)
    np.testing.assert_allclose(ours.scale_[:2], ref.scale_[:2], rtol=1e-3)
    np.testing.assert_array_equal(ours.scale_[2:], 1.0)
    np.testing.assert_array_equal(ref.scale_[2:], 1.0)
    # Constant columns far from the middle with many rows: the rounding error
    # of the one-pass variance grows like n eps (scale_ was about 2).
    X = np.full((100_000, 3), [0.93e6, -0.77e6, 0.31e6])
    ours = StandardScaler(bounds=(-1e6, 1e6), epsilon=np.inf).fit(X)
    np.testing.assert_array_equal(ours.scale_, 1.0)
