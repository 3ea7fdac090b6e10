"""MinimaxFairClassifier: privacy, non-private limits, routing, bad input."""

import numpy as np
import pytest
import sklearn
from scipy import sparse
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.model_selection import cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer, StandardScaler

from skdp import BudgetExceededError, MinimaxFairClassifier, PrivacyAccountant
from skdp.privacy import certify_epsilon, gdp_mu, private_norm_bound_event
from skdp.solvers.saddle_point.group_dro import GroupDROLogistic


def _groups_data(n=600, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, 3))
    w = {"a": [2.0, 0, 0], "b": [1.0, 1.0, 0], "c": [0, 1.0, 1.5]}
    margin = np.einsum("ij,ij->i", X, np.array([w[v] for v in g]))
    y = (rng.random(n) < expit(margin)).astype(int)
    return X, y, g


def _simple(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = (X[:, 0] + 0.5 * rng.normal(size=n) > 0).astype(int)
    return X, y


# --- privacy accounting ----------------------------------------------------------------


@pytest.mark.parametrize(
    "params",
    [
        {},
        {"solver": "nispp", "max_iter": 50},
        {"sampling": "disjoint"},
        {"sampling": "without_replacement", "max_iter": 40},
        {"solver": "nispp", "sampling": "disjoint"},
    ],
    ids=["default", "nispp", "nseg-single-pass", "nseg-wor", "nispp-single-pass"],
)
def test_privacy_spent_is_at_most_and_close_to_the_request(params):
    X, y, g = _groups_data()
    clf = MinimaxFairClassifier(epsilon=1.0, random_state=0, **params)
    clf.fit(X, y, sensitive_features=g)
    eps, delta = clf.privacy_spent_
    assert delta == clf.delta_ == pytest.approx(600**-1.1)
    assert 0.97 <= eps <= 1.0
    assert clf.noise_std_ > 0


def test_estimates_take_their_share_and_the_plan_is_what_is_charged():
    X, y, g = _groups_data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = MinimaxFairClassifier(
        epsilon=4.0,
        delta=1e-4,
        estimation_share=0.5,
        solver="nseg",
        accountant=acc,
        random_state=0,
    )
    clf.fit(X, y, sensitive_features=g)
    label, plan = acc.ledger[0]
    assert label == "MinimaxFairClassifier"
    assert certify_epsilon(plan, 1e-4) == pytest.approx(clf.privacy_spent_[0])
    # The plan holds the norm bound (10 Gaussian counts, half of
    # estimation_share of mu**2: mu_b = mu sqrt(0.5 / 2)) and the histogram.
    names = repr(plan)
    mu_bound = float(gdp_mu(4.0, 1e-4)) * float(np.sqrt(0.5 / 2))
    assert repr(private_norm_bound_event(mu_bound)) in names
    assert "PoissonSampledDpEvent" in names
    # Group priors and feature norm are released estimates: close, not exact.
    codes = np.searchsorted(["a", "b", "c"], g)
    np.testing.assert_allclose(clf.group_priors_, np.bincount(codes) / 600, atol=0.05)
    assert 1.5 < clf.feature_norm_ < 3.5


def test_budget_exceeded_before_any_noise():
    X, y, g = _groups_data()
    acc = PrivacyAccountant(epsilon=1.05, delta=1e-4)
    clf = MinimaxFairClassifier(epsilon=1.0, delta=1e-4, accountant=acc, random_state=0)
    clf.fit(X, y, sensitive_features=g)
    with pytest.raises(BudgetExceededError):
        MinimaxFairClassifier(epsilon=1.0, delta=1e-4, accountant=acc).fit(
            X, y, sensitive_features=g
        )
    assert len(acc.ledger) == 1


def test_shared_accountant_counts_cross_validation_folds():
    X, y = _simple(200)
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    clf = MinimaxFairClassifier(epsilon=1.0, delta=1e-4, accountant=acc, random_state=0)
    cross_val_score(clf, X, y, cv=3, error_score="raise")
    assert len(acc.ledger) == 3


# --- non-private limits ------------------------------------------------------------------


def test_one_group_without_noise_is_logistic_regression():
    X, y = _simple(300, seed=1)
    bound = np.linalg.norm(X, axis=1).max()  # nothing is clipped
    clf = MinimaxFairClassifier(
        epsilon=np.inf,
        radius=20.0,
        feature_norm=bound,
        batch_size=300,
        sampling="without_replacement",
        max_iter=1000,
        step_scale=10.0,  # times the noiseless schedule factor 3
        random_state=0,
    ).fit(X, y)
    ref = LogisticRegression(C=np.inf, tol=1e-10).fit(X, y)
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=0.02)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=0.02)
    assert clf.privacy_spent_[0] == np.inf


def test_groups_without_noise_reach_the_minimax_solution():
    X, y, g = _groups_data(n=400)
    codes = np.searchsorted(["a", "b", "c"], g)
    shares = np.bincount(codes) / 400  # exact priors: plain group means
    bound = np.linalg.norm(X, axis=1).max()  # nothing is clipped
    clf = MinimaxFairClassifier(
        epsilon=np.inf,
        groups=["a", "b", "c"],
        group_priors=shares,
        min_group_prior=0.0,
        radius=3.0,
        feature_norm=bound,
        solver="nseg",
        batch_size=400,
        sampling="without_replacement",
        max_iter=1000,
        step_scale=30.0,
        random_state=0,
    ).fit(X, y, sensitive_features=g)
    Xa = np.hstack([X, np.ones((400, 1))])
    op = GroupDROLogistic(
        Xa, np.where(y == 1, 1.0, -1.0), codes, shares, radius=3.0, feature_bound=20.0
    )
    w = np.r_[clf.coef_[0], clf.intercept_]
    worst = op.group_risks(w).max()
    best, _ = op.best_response_value(clf.group_weights_)
    assert clf.group_weights_.sum() == pytest.approx(1.0)
    assert 0 <= worst - best < 2e-3  # saddle-point gap
    # Complementary slackness: weight only on groups at the worst risk.
    risks = op.group_risks(w)
    assert np.all(risks[clf.group_weights_ > 0.1] > worst - 0.01)
    # ERM serves its worst group worse.
    erm = LogisticRegression(C=np.inf).fit(X, y)
    erm_worst = op.group_risks(np.r_[erm.coef_[0], erm.intercept_]).max()
    assert worst < erm_worst - 0.02


def test_fixed_random_state_is_reproducible_and_seeds_differ():
    X, y, g = _groups_data()
    a = MinimaxFairClassifier(random_state=3).fit(X, y, sensitive_features=g)
    b = MinimaxFairClassifier(random_state=3).fit(X, y, sensitive_features=g)
    c = MinimaxFairClassifier(random_state=4).fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


# --- scikit-learn integration -------------------------------------------------------------


def test_metadata_routing_in_a_pipeline():
    X, y, g = _groups_data()
    with sklearn.config_context(enable_metadata_routing=True):
        clf = MinimaxFairClassifier(
            groups=["a", "b", "c"],
            group_priors=[0.6, 0.3, 0.1],
            feature_norm=3.0,
            random_state=0,
        ).set_fit_request(sensitive_features=True)
        pipe = make_pipeline(StandardScaler(), clf)
        pipe.fit(X, y, sensitive_features=g)
        fitted = pipe[-1]
        assert list(fitted.groups_) == ["a", "b", "c"]
        assert fitted.group_weights_.shape == (3,)
        assert pipe.predict(X).shape == (600,)
        # Without the request the routing refuses the metadata.
        bare = make_pipeline(StandardScaler(), MinimaxFairClassifier(random_state=0))
        with pytest.raises(Exception, match="sensitive_features"):
            bare.fit(X, y, sensitive_features=g)


def test_fit_signature_follows_fairlearn():
    X, y, g = _groups_data()
    with pytest.raises(TypeError):
        MinimaxFairClassifier(sensitive_features=g)
    clf = MinimaxFairClassifier(random_state=0).fit(X, y, sensitive_features=list(g))
    assert clf.predict_proba(X).shape == (600, 2)
    np.testing.assert_allclose(clf.predict_proba(X).sum(axis=1), 1.0)
    d = clf.decision_function(X)
    np.testing.assert_array_equal(clf.predict(X), clf.classes_[(d > 0).astype(int)])
    np.testing.assert_allclose(d, X @ clf.coef_[0] + clf.intercept_[0])


def test_multi_column_sensitive_features_and_dict_priors():
    X, y, g = _groups_data()
    sex = np.where(np.arange(600) % 2, "f", "m")
    sf = np.column_stack([g, sex])
    clf = MinimaxFairClassifier(random_state=0).fit(X, y, sensitive_features=sf)
    assert len(clf.groups_) == 6 and isinstance(clf.groups_[0], tuple)
    clf = MinimaxFairClassifier(
        group_priors={"a": 6, "b": 3, "c": 1}, random_state=0
    ).fit(X, y, sensitive_features=g)
    np.testing.assert_allclose(clf.group_priors_, [0.6, 0.3, 0.1])


# --- bad input ----------------------------------------------------------------------------


def _refused(X, y, exc=ValueError, match=None, **fit):
    acc = PrivacyAccountant(epsilon=100.0, delta=1e-3)
    params = fit.pop("params", {})
    with pytest.raises(exc, match=match) as info:
        MinimaxFairClassifier(accountant=acc, random_state=0, **params).fit(X, y, **fit)
    assert len(acc.ledger) == 0
    return info.value


def test_input_errors_come_before_any_noise():
    X, y, g = _groups_data(n=100)
    Xn = X.copy()
    Xn[0, 0] = np.nan
    _refused(Xn, y, match="NaN")
    Xs = X.astype(object)
    Xs[0, 0] = "a"
    _refused(Xs, y)
    _refused(np.empty((0, 3)), np.empty(0))
    _refused(X, np.ones(100), match="class")
    for solver in ("nseg", "nispp"):
        # the papers' solvers are binary: the error names the multiclass one
        _refused(X, np.arange(100) % 3, match='solver="gda"', params={"solver": solver})
        _refused(
            X, y, match='solver="gda"', params={"solver": solver, "classes": [0, 1, 2]}
        )
    err = _refused(
        X,
        y,
        match="not among the declared",
        sensitive_features=g,
        params={"groups": ["a", "b"]},
    )
    assert "'c'" not in str(err)  # the undeclared value is not echoed
    _refused(X, y, match="rows", sensitive_features=g[:50])
    for missing in (None, np.nan, np.float32("nan")):
        gn = g.astype(object)
        gn[3] = missing
        _refused(X, y, match="missing", sensitive_features=gn)
    pd = pytest.importorskip("pandas")
    for missing in (pd.NA, pd.NaT):
        gn = g.astype(object)
        gn[3] = missing
        _refused(X, y, match="missing", sensitive_features=gn)
    # pandas' string dtype turns a masked entry into pd.NA (review finding:
    # it became a one-record group of its own).
    gs = pd.Series(g).mask(np.arange(100) == 5).astype("string")
    _refused(X, y, match="missing", sensitive_features=gs)
    _refused(
        X,
        y,
        match="group_priors",
        sensitive_features=g,
        params={"group_priors": [0.5, 0.5]},
    )
    _refused(X, y, match="sensitive_features", params={"groups": ["a", "b", "c"]})
    _refused(
        sparse.csr_matrix(X),
        y,
        (TypeError, ValueError),
        match="[Ss]parse",
        params={"solver": "nseg"},  # sparse input: solver="gda" only
    )
    with pytest.raises(TypeError, match="sample_weight"):
        MinimaxFairClassifier().fit(X, y, sample_weight=np.ones(100))


def test_declared_classes_allow_a_single_class_and_a_single_row():
    X, y = _simple()
    clf = MinimaxFairClassifier(classes=[0, 1], random_state=0).fit(X, np.ones(120))
    assert list(clf.classes_) == [0, 1]
    clf = MinimaxFairClassifier(classes=[0, 1], random_state=0, delta=1e-6)
    clf = clf.fit(X[:1], [1])  # one row: an explicit delta (issue 15)
    assert clf.predict(X).shape == (120,)
    _refused(X, y, match="declared classes", params={"classes": [1, 2]})


def test_declared_group_without_members_is_harmless():
    X, y, g = _groups_data()
    clf = MinimaxFairClassifier(
        groups=["a", "b", "c", "empty"],
        group_priors=[0.6, 0.3, 0.05, 0.05],
        epsilon=np.inf,
        random_state=0,
        max_iter=300,
    ).fit(X, y, sensitive_features=g)
    assert clf.group_weights_.shape == (4,)
    assert clf.group_weights_[3] < 0.25  # no risk, so its weight drifts down
    assert np.all(np.isfinite(clf.coef_))
    # With estimated priors the empty group gets the floor, not an error.
    clf = MinimaxFairClassifier(groups=["a", "b", "c", "empty"], random_state=0)
    clf.fit(X, y, sensitive_features=g)
    assert clf.group_priors_[3] >= clf.min_group_prior


def test_huge_values_are_clipped_and_predictions_stay_finite():
    X, y = _simple()
    X[0] = 1e300
    X[1, 0] = -1e300
    clf = MinimaxFairClassifier(random_state=0).fit(X, y)
    assert np.all(np.isfinite(clf.coef_)) and clf.feature_norm_ < 1e6
    proba = clf.predict_proba(X)
    assert np.all(np.isfinite(proba)) and np.all((proba >= 0) & (proba <= 1))
    assert np.all(np.isin(clf.predict(X), [0, 1]))


def test_float32_lists_dataframes_and_wrong_width():
    pd = pytest.importorskip("pandas")
    X, y = _simple()
    ref = MinimaxFairClassifier(random_state=0).fit(X, y)
    # float32 rows are other data: a fresh ledger per side gives one stream
    f32 = MinimaxFairClassifier(
        random_state=0, accountant=PrivacyAccountant(np.inf, 0.5)
    ).fit(X.astype(np.float32), y)
    ref32 = MinimaxFairClassifier(
        random_state=0, accountant=PrivacyAccountant(np.inf, 0.5)
    ).fit(X, y)
    np.testing.assert_allclose(f32.coef_, ref32.coef_, rtol=1e-4, atol=1e-6)
    lst = MinimaxFairClassifier(random_state=0).fit(X.tolist(), y.tolist())
    np.testing.assert_array_equal(lst.predict(X.tolist()), ref.predict(X))
    df = pd.DataFrame(X, columns=["age", "income", "score"])
    fdf = MinimaxFairClassifier(random_state=0).fit(df, pd.Series(y))
    assert list(fdf.feature_names_in_) == ["age", "income", "score"]
    with pytest.raises(ValueError, match="features"):
        ref.predict(X[:, :2])


def test_constant_feature_and_string_labels():
    X, y = _simple()
    X[:, 1] = 3.0
    labels = np.where(y == 1, "yes", "no")
    clf = MinimaxFairClassifier(random_state=0).fit(X, labels)
    assert set(clf.predict(X)) <= {"yes", "no"}
    assert np.all(np.isfinite(clf.coef_))


def test_inferred_groups_pipeline_without_routing_uses_one_group():
    X, y = _simple()
    pipe = make_pipeline(FunctionTransformer(), MinimaxFairClassifier(random_state=0))
    pipe.fit(X, y)
    assert list(pipe[-1].groups_) == ["all"]


# --- private centring --------------------------------------------------------------------


@pytest.mark.parametrize(
    "feature_norm", [10.0, None], ids=["public-norm", "private-norm"]
)
def test_center_is_paid_for(feature_norm):
    X, y, g = _groups_data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    clf = MinimaxFairClassifier(
        epsilon=1.0,
        feature_norm=feature_norm,
        center=True,
        accountant=acc,
        random_state=0,
    ).fit(X + 3.0, y, sensitive_features=g)
    eps, _ = clf.privacy_spent_
    assert 0.97 <= eps <= 1.0
    assert clf.center_.shape == (3,)
    # the mean's Gaussian release is in the charged plan
    _, plan = acc.ledger[0]
    assert "GaussianDpEvent" in repr(plan)


def test_center_mean_moves_by_at_most_its_sensitivity():
    """Coupled run: same random stream, neighbouring datasets; the released
    means differ by the pre-noise shift, at most 2 feature_norm / n."""
    X, y = _simple(200, seed=2)
    X = X + 3.0
    X_prime = X.copy()
    X_prime[0] = -1e9  # clipped to feature_norm in the opposite direction
    C = 8.0
    centers = [
        # a fresh ledger per side: the same stream on both (issue 32 mixes
        # the data into the stream of a seeded fit without an accountant)
        MinimaxFairClassifier(
            feature_norm=C,
            center=True,
            max_iter=1,
            random_state=3,
            accountant=PrivacyAccountant(epsilon=np.inf, delta=0.5),
        )
        .fit(Z, y)
        .center_
        for Z in (X, X_prime)
    ]
    shift = np.linalg.norm(centers[0] - centers[1])
    assert C / 200 < shift <= 2 * C / 200 + 1e-12


def test_center_without_noise_equals_fitting_centred_features():
    X, y = _simple(300, seed=1)
    X = X + 4.0
    params = dict(
        epsilon=np.inf,
        radius=20.0,
        feature_norm=20.0,
        batch_size=300,
        sampling="without_replacement",
        max_iter=300,
        random_state=0,
    )
    clf = MinimaxFairClassifier(center=True, **params).fit(X, y)
    mean = X.mean(axis=0)
    np.testing.assert_allclose(clf.center_, mean)
    pre = MinimaxFairClassifier(**params).fit(X - mean, y)
    np.testing.assert_allclose(clf.coef_, pre.coef_, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(
        clf.intercept_, pre.intercept_ - mean @ pre.coef_[0], atol=1e-6
    )


def test_center_helps_on_offset_features():
    # offset 5: the intercept the raw features need is outside the radius
    # ball; after centring it is not
    X, y, g = _groups_data(n=10_000, seed=5)
    X_test, y_test, _ = _groups_data(n=4000, seed=6)

    def accuracy(center):
        return np.mean(
            [
                MinimaxFairClassifier(
                    epsilon=1.0, feature_norm=10.0, center=center, random_state=seed
                )
                .fit(X + 5.0, y, sensitive_features=g)
                .score(X_test + 5.0, y_test)
                for seed in (1, 2)
            ]
        )

    assert accuracy(True) > accuracy(False) + 0.03


def test_center_needs_an_intercept():
    X, y = _simple()
    with pytest.raises(ValueError, match="fit_intercept"):
        MinimaxFairClassifier(center=True, fit_intercept=False).fit(X, y)
