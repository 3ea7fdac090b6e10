"""HeavyTailedLinearRegression and HeavyTailedLogisticRegression."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.linear_model import HuberRegressor, LinearRegression, LogisticRegression
from sklearn.model_selection import cross_val_score

from skdp import (
    BudgetExceededError,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    PrivacyAccountant,
)
from skdp.losses import HuberLoss, SquaredLoss
from skdp.privacy import ComposedDpEvent

SOLVERS = ["known_lipschitz", "onepass", "localized"]
ESTIMATORS = [HeavyTailedLinearRegression, HeavyTailedLogisticRegression]


def _linear(n, d=4, seed=0, noise="t", offset=3.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(5, size=(n, d)) * np.sqrt(3 / 5)
    w = np.linspace(-1, 1, d)
    e = rng.standard_t(3, size=n) if noise == "t" else 0.3 * rng.normal(size=n)
    return X, X @ w + offset + e, w


def _binary(n, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(5, size=(n, d)) * np.sqrt(3 / 5)
    w = np.linspace(-1, 1, d)
    y = (X @ w - 0.3 + rng.logistic(size=n) > 0).astype(int)
    return X, y, w


# -- non-private limit ----------------------------------------------------------
def test_inf_epsilon_matches_linear_regression():
    X, y, _ = _linear(3000, noise="gauss")
    ref = LinearRegression().fit(X, y)
    model = HeavyTailedLinearRegression(
        epsilon=np.inf, max_iter=200, random_state=0
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=1e-3)
    assert model.intercept_ == pytest.approx(ref.intercept_, abs=1e-3)
    assert model.privacy_spent_[0] == np.inf


def test_inf_epsilon_matches_huber_at_the_same_fixed_scale():
    # scikit-learn's HuberRegressor also fits a scale sigma; at its solution
    # the coefficients minimise the fixed-threshold Huber loss with
    # tau = epsilon * sigma, which is our objective.
    X, y, _ = _linear(3000)
    hub = HuberRegressor(alpha=0.0, epsilon=1.35, max_iter=1000).fit(X, y)
    tau = hub.epsilon * hub.scale_
    model = HeavyTailedLinearRegression(
        loss="huber", tau=tau, epsilon=np.inf, max_iter=400, random_state=0
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, hub.coef_, atol=2e-3)
    assert model.intercept_ == pytest.approx(hub.intercept_, abs=2e-3)

    # and directly against the same objective minimised with scipy
    Xa = np.hstack([X, np.ones((len(X), 1))])
    loss = HuberLoss(tau)
    res = minimize(
        lambda w: loss.mean_value(Xa, y, w),
        np.zeros(Xa.shape[1]),
        jac=lambda w: loss.gradient(Xa, y, w),
        method="L-BFGS-B",
        options={"gtol": 1e-10, "maxiter": 1000},
    )
    np.testing.assert_allclose(model.coef_, res.x[:-1], atol=2e-3)


def test_inf_epsilon_matches_logistic_regression():
    X, y, _ = _binary(4000)
    ref = LogisticRegression(C=1e8, tol=1e-10, max_iter=1000).fit(X, y)
    model = HeavyTailedLogisticRegression(
        epsilon=np.inf, max_iter=300, random_state=0
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=2e-3)
    np.testing.assert_allclose(model.intercept_, ref.intercept_, atol=2e-3)


@pytest.mark.parametrize("solver", ["onepass", "localized"])
def test_inf_epsilon_other_solvers_approach_the_solution(solver):
    X, y, _ = _linear(20_000, noise="gauss")
    ref = LinearRegression().fit(X, y)
    model = HeavyTailedLinearRegression(
        solver=solver, epsilon=np.inf, max_iter=60, random_state=0
    ).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=0.1)
    assert model.intercept_ == pytest.approx(ref.intercept_, abs=0.1)


# -- privacy accounting ----------------------------------------------------------
@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_privacy_spent_is_at_most_and_close_to_the_request(Est, solver):
    X, y = (
        (_linear(2000)[:2]) if Est is HeavyTailedLinearRegression else _binary(2000)[:2]
    )
    model = Est(solver=solver, epsilon=0.7, delta=1e-6, random_state=0).fit(X, y)
    eps, delta = model.privacy_spent_
    assert delta == 1e-6
    assert 0.97 * 0.7 <= eps <= 0.7
    assert np.all(np.isfinite(model.coef_))


def test_default_delta_is_resolved():
    X, y, _ = _linear(1000)
    model = HeavyTailedLinearRegression(random_state=0).fit(X, y)
    assert model.delta is None
    assert model.delta_ == pytest.approx(1000**-1.1)


def test_multiclass_splits_the_budget_over_classes():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3000, 3))
    y = np.argmax(X @ rng.normal(size=(3, 3)) + rng.gumbel(size=(3000, 3)), axis=1)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    clf = HeavyTailedLogisticRegression(
        epsilon=1.0, random_state=0, accountant=acc, multi_class="ovr"
    )
    clf.fit(X, y)
    assert clf.coef_.shape == (3, 3) and clf.intercept_.shape == (3,)
    assert 0.97 <= clf.privacy_spent_[0] <= 1.0
    event = acc.ledger[0][1]
    # scale quantiles once (shared by the classes), then one run per class
    assert isinstance(event, ComposedDpEvent) and len(event.events) == 1 + 3
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.mean(clf.predict(X) == y) > 0.5
    big = HeavyTailedLogisticRegression(epsilon=np.inf, max_iter=100).fit(X, y)
    ref = LogisticRegression(C=1e8, max_iter=1000).fit(X, y)
    assert np.mean(big.predict(X) == ref.predict(X)) > 0.95


# -- accountant ------------------------------------------------------------------
def test_accountant_is_shared_across_cross_validation():
    X, y, _ = _linear(1500)
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    model = HeavyTailedLinearRegression(
        epsilon=1.0, delta=1e-7, accountant=acc, random_state=0
    )
    cross_val_score(model, X, y, cv=3, error_score="raise")
    assert len(acc.ledger) == 3
    assert 1.0 < acc.spent_epsilon <= 2.0
    with pytest.raises(BudgetExceededError):
        cross_val_score(model, X, y, cv=20, error_score="raise")


def test_budget_exceeded_before_any_fit():
    X, y, _ = _binary(500)
    acc = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    clf = HeavyTailedLogisticRegression(epsilon=1.0, delta=1e-7, accountant=acc)
    with pytest.raises(BudgetExceededError):
        clf.fit(X, y)
    assert not hasattr(clf, "coef_") and acc.ledger == []


# -- reproducibility and utility ------------------------------------------------
@pytest.mark.parametrize("solver", SOLVERS)
def test_fixed_random_state_reproduces(solver):
    X, y, _ = _linear(2000)
    a = HeavyTailedLinearRegression(solver=solver, random_state=3).fit(X, y)
    b = HeavyTailedLinearRegression(solver=solver, random_state=3).fit(X, y)
    c = HeavyTailedLinearRegression(solver=solver, random_state=4).fit(X, y)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


def test_excess_risk_falls_with_n_on_heavy_tailed_data():
    # features t(5), skewed heavy-tailed noise; excess risk = ||w - w*||^2 + b^2 error
    def risk(n, seed):
        rng = np.random.default_rng(seed)
        X = rng.standard_t(5, size=(n, 8)) * np.sqrt(3 / 5)
        w = np.linspace(-1, 1, 8)
        e = np.exp(rng.normal(size=n)) - np.exp(0.5) + rng.standard_t(2.1, size=n)
        y = X @ w + 1.0 + 0.5 * e
        m = HeavyTailedLinearRegression(random_state=seed).fit(X, y)
        return np.sum((m.coef_ - w) ** 2) + (m.intercept_ - 1.0) ** 2

    small = np.median([risk(2000, s) for s in range(3)])
    large = np.median([risk(40_000, s) for s in range(3)])
    assert large < small / 5  # n grows 20x; the rate is between 1/n and 1/n^2


def test_private_model_is_useful():
    X, y, w = _linear(20_000)
    model = HeavyTailedLinearRegression(epsilon=1.0, random_state=0).fit(X, y)
    np.testing.assert_allclose(model.coef_, w, atol=0.1)
    assert model.intercept_ == pytest.approx(3.0, abs=0.1)
    Xb, yb, _ = _binary(20_000)
    clf = HeavyTailedLogisticRegression(epsilon=1.0, random_state=0).fit(Xb, yb)
    ref = LogisticRegression().fit(Xb, yb)
    assert clf.score(Xb, yb) > ref.score(Xb, yb) - 0.02


def test_public_g_k_uses_the_paper_formulas():
    X, y, _ = _linear(2000)
    with pytest.raises(ValueError, match="radius"):
        HeavyTailedLinearRegression(G_k=5.0).fit(X, y)
    model = HeavyTailedLinearRegression(G_k=5.0, radius=10.0, random_state=0).fit(X, y)
    assert np.all(model.clip_thresholds_ == model.truncation_threshold_)
    assert (
        model.truncation_threshold_ > 5.0
    )  # C = G_k (n sqrt(rho)/sqrt(d))^(1/k) >= G_k
    assert np.linalg.norm(np.append(model.coef_, model.intercept_)) <= 10.0 + 1e-9
    for solver in ["onepass", "localized"]:
        HeavyTailedLinearRegression(solver=solver, G_k=5.0, radius=10.0).fit(X, y)


# -- intercept -------------------------------------------------------------------
def test_intercept_through_a_public_constant_column():
    X, y, _ = _linear(5000, noise="gauss", offset=50.0)
    m = HeavyTailedLinearRegression(epsilon=np.inf, max_iter=200).fit(X, y)
    assert m.intercept_ == pytest.approx(
        LinearRegression().fit(X, y).intercept_, abs=1e-2
    )
    m = HeavyTailedLinearRegression(epsilon=1.0, random_state=0).fit(X, y)
    assert m.intercept_ == pytest.approx(50.0, rel=0.02)
    m = HeavyTailedLinearRegression(fit_intercept=False, epsilon=np.inf).fit(
        X, y - 50.0
    )
    assert m.intercept_ == 0.0


# -- bad input -------------------------------------------------------------------
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_nan_and_inf_raise_before_spending(Est):
    X, y = _linear(100)[:2] if Est is HeavyTailedLinearRegression else _binary(100)[:2]
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    for bad in (np.nan, np.inf):
        Xb = X.copy()
        Xb[3, 1] = bad
        with pytest.raises(ValueError):
            Est(accountant=acc).fit(Xb, y)
    if Est is HeavyTailedLinearRegression:
        yb = y.copy()
        yb[0] = np.nan
        with pytest.raises(ValueError):
            Est(accountant=acc).fit(X, yb)
    assert acc.ledger == []


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_huge_values_are_clipped_not_propagated(Est, solver):
    X, y = _linear(500)[:2] if Est is HeavyTailedLinearRegression else _binary(500)[:2]
    X = X.copy()
    X[0] = 1e300
    X[1, 0] = -1e300
    if Est is HeavyTailedLinearRegression:
        y = y.copy()
        y[2] = 1e300
    for eps in (1.0, np.inf):
        model = Est(solver=solver, epsilon=eps, random_state=0).fit(X, y)
        assert np.all(np.isfinite(model.coef_)) and np.all(
            np.isfinite(model.intercept_)
        )
        assert np.all(np.isfinite(model.predict(X[5:])))


@pytest.mark.parametrize("Est", ESTIMATORS)
def test_input_validation(Est):
    X, y = _linear(60)[:2] if Est is HeavyTailedLinearRegression else _binary(60)[:2]
    with pytest.raises(ValueError):
        Est().fit(np.array([["a", "b"], ["c", "d"]]), [0, 1])
    with pytest.raises(ValueError):
        Est().fit(np.empty((0, 3)), [])
    # sparse input: the full-batch solver only (tests/test_sparse.py)
    with pytest.raises(ValueError, match="[Ss]parse"):
        Est(solver="onepass").fit(sp.csr_matrix(X), y)
    with pytest.raises(TypeError):
        Est().fit(X, y, sample_weight=np.ones(len(y)))
    model = Est(random_state=0).fit(X, y)
    with pytest.raises(ValueError, match="features"):
        model.predict(X[:, :2])
    # lists, float32, a constant feature and a single row all work
    Est(random_state=0).fit(X.tolist(), list(y))
    Est(random_state=0).fit(X.astype(np.float32), y)
    Xc = X.copy()
    Xc[:, 1] = 7.0
    assert np.all(np.isfinite(Est(random_state=0).fit(Xc, y).coef_))


def test_single_row_and_single_class():
    # One row needs an explicit delta (the default n ** -1.1 = 0.5 is refused).
    HeavyTailedLinearRegression(random_state=0, delta=1e-6).fit([[1.0, 2.0]], [3.0])
    with pytest.raises(ValueError, match="delta=None"):
        HeavyTailedLinearRegression(random_state=0).fit([[1.0, 2.0]], [3.0])
    X, y, _ = _binary(50)
    with pytest.raises(ValueError, match="classes="):
        HeavyTailedLogisticRegression().fit(X, np.ones(50))
    clf = HeavyTailedLogisticRegression(classes=[0, 1], random_state=0).fit(
        X, np.ones(50)
    )
    np.testing.assert_array_equal(clf.classes_, [0, 1])
    with pytest.raises(ValueError, match="not in `classes`"):
        HeavyTailedLogisticRegression(classes=[0, 1]).fit(X, y + 1)


def test_pandas_feature_names_and_string_labels():
    pd = pytest.importorskip("pandas")
    X, y, _ = _binary(300)
    df = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    labels = np.where(y == 1, "yes", "no")
    clf = HeavyTailedLogisticRegression(random_state=0).fit(df, labels)
    np.testing.assert_array_equal(clf.feature_names_in_, ["a", "b", "c", "d"])
    np.testing.assert_array_equal(clf.classes_, ["no", "yes"])
    assert set(clf.predict(df)) <= {"no", "yes"}
    proba = clf.predict_proba(df)
    np.testing.assert_allclose(
        proba[:, 1], 1 / (1 + np.exp(-clf.decision_function(df)))
    )


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("Est", ESTIMATORS)
def test_tiny_datasets_fit_with_every_solver(Est, solver):
    # too few records for private scales: public defaults, full budget spent
    X, y = _linear(25)[:2] if Est is HeavyTailedLinearRegression else _binary(25)[:2]
    model = Est(solver=solver, epsilon=1.0, random_state=0).fit(X, y)
    assert np.all(np.isfinite(model.coef_))
    assert 0.97 <= model.privacy_spent_[0] <= 1.0


def test_predict_log_proba_is_finite_and_matches_proba():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 3))
    for y in ((X[:, 0] > 0).astype(int), np.digitize(X[:, 0], [-0.5, 0.5])):
        clf = HeavyTailedLogisticRegression(epsilon=np.inf, random_state=0).fit(X, y)
        big = X * 1e6  # saturated scores
        assert np.all(np.isfinite(clf.predict_log_proba(big)))
        np.testing.assert_allclose(
            np.exp(clf.predict_log_proba(X)),
            clf.predict_proba(X),
            rtol=1e-8,
            atol=1e-15,
        )


def test_default_scales_warn_at_small_n():
    # Too few rows to estimate the scales privately: the public defaults for
    # standardized data are used, which must not happen silently. (Regression
    # spends up to half the budget on the scales at small n, so a few hundred
    # rows no longer need the defaults: see the small-n test below.)
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = X @ np.ones(3)
    with pytest.warns(UserWarning, match="assumes standardized data"):
        HeavyTailedLinearRegression(random_state=0).fit(X, y)


def test_small_n_regression_estimates_scales_in_natural_units():
    # n = 330, targets in the hundreds (like diabetes): the default share of
    # the scale quantiles is too small at delta=1e-6, so the fit used to
    # assume |y| <= 3 and predicted about 0 (MSE ~ mean(y**2)). Regression
    # now pays the scales from up to half the budget instead.
    rng = np.random.default_rng(3)
    n, d = 330, 10
    X = rng.normal(size=(n, d)) * 0.05
    y = 150.0 + X @ np.full(d, 300.0) + 50.0 * rng.normal(size=n)
    Xt = rng.normal(size=(2000, d)) * 0.05
    yt = 150.0 + Xt @ np.full(d, 300.0) + 50.0 * rng.normal(size=2000)
    mse = []
    for seed in range(3):
        with warnings.catch_warnings():
            warnings.simplefilter("error", UserWarning)
            m = HeavyTailedLinearRegression(
                epsilon=1.0, delta=1e-6, random_state=seed
            ).fit(X, y)
        mse.append(np.mean((m.predict(Xt) - yt) ** 2))
    assert np.median(mse) < 2.0 * np.var(yt)  # was ~ 10 var(yt)
    eps, delta = m.privacy_spent_
    assert delta == 1e-6 and 0.97 <= eps <= 1.0
    # logistic regression keeps the public defaults at the same n (unchanged)
    with pytest.warns(UserWarning, match="assumes standardized data"):
        HeavyTailedLogisticRegression(
            epsilon=1.0, delta=1e-6, classes=[0, 1], random_state=0
        ).fit(X, (y > 150.0).astype(int))
    X, y = np.tile(X, (5, 1)), np.tile(y, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        HeavyTailedLinearRegression(random_state=0).fit(X, y)


def test_auto_steps_rule_is_public_in_n():
    # max_iter="auto": 30 steps below n = 1e4, 100 steps from n = 1e4 on; the
    # clipped fraction is the default rule's on both sides (it follows the
    # noise, so it vanishes with it); an explicit max_iter is used as given.
    rng = np.random.default_rng(4)
    d = 3
    for n, steps in ((9_999, 30), (10_000, 100)):
        X = rng.standard_t(3, size=(n, d))
        y = X @ np.ones(d) + rng.standard_t(3, size=n)
        m = HeavyTailedLinearRegression(epsilon=1.0, delta=1e-8, random_state=0)
        m.fit(X, y)
        assert m.n_iter_ == steps and len(m.step_sizes_) == steps
        eps, _ = m.privacy_spent_
        assert 0.97 <= eps <= 1.0
        plan = m._make_plan(n, d + 1, m._budget(1), SquaredLoss())
        z = plan.gd.z_grad
        assert plan.gd.clip_fraction == pytest.approx(
            min(0.7, 6.0 * z * np.sqrt(d + 1) / n)
        )
        fixed = HeavyTailedLinearRegression(
            epsilon=1.0, delta=1e-8, max_iter=30, random_state=0
        ).fit(X, y)
        assert fixed.n_iter_ == 30
        ref = fixed._make_plan(n, d + 1, fixed._budget(1), SquaredLoss())
        assert ref.gd.n_steps == 30
        assert ref.gd.clip_fraction == pytest.approx(
            min(0.7, 6.0 * ref.gd.z_grad * np.sqrt(d + 1) / n)
        )
    # the classifier's "auto" (its default) keeps 30 steps for a binary fit
    clf = HeavyTailedLogisticRegression(max_iter="auto", classes=[False, True])
    assert clf.fit(X, y > 0).n_iter_ == 30


# -- intercept correction of the large-n rule ------------------------------------
def test_large_n_rule_corrects_the_intercept_and_pays_for_it():
    from skdp.privacy import gdp_mu, gdp_mu_of
    from skdp.solvers.heavy_tailed.intercept import make_intercept_plan

    X, y, w = _linear(20_000, noise="t")
    y = y + np.exp(np.random.default_rng(1).normal(size=y.size)) - np.exp(0.5)
    m = HeavyTailedLinearRegression(epsilon=1.0, delta=1e-9, random_state=0)
    m.fit(X, y)
    eps, _ = m.privacy_spent_
    assert 0.97 <= eps <= 1.0
    mu = gdp_mu(1.0, 1e-9)
    plan = m._make_plan(20_000, 5, m._budget(1, 1 - 0.04), SquaredLoss())
    corr = make_intercept_plan(m._budget(1, 0.04))
    total = gdp_mu_of(ComposedDpEvent([plan.event, corr.event]))
    assert total == pytest.approx(mu)
    # skewed noise (mean 0): where the noise makes the run clip heavily
    # (epsilon = 0.3: about 20% of the gradients), its intercept is a robust
    # location; the correction moves it toward the least-squares one (3)
    errors = {True: [], False: []}
    for seed in range(5):
        for corrected in (True, False):
            est = HeavyTailedLinearRegression(
                epsilon=0.3, delta=1e-9, random_state=seed
            )
            if not corrected:
                est._intercept_share = lambda n, loss: 0.0
            errors[corrected].append(abs(est.fit(X, y).intercept_ - 3.0))
    assert np.median(errors[True]) < 0.8 * np.median(errors[False])
    # no correction below n = 1e4, for the Huber loss, or a given max_iter
    small = HeavyTailedLinearRegression(random_state=0)
    assert small._intercept_share(9_999, SquaredLoss()) == 0.0
    assert small._intercept_share(10_000, HuberLoss(1.0)) == 0.0
    assert small._intercept_share(10_000, SquaredLoss()) == 0.04
    fixed = HeavyTailedLinearRegression(max_iter=100)
    assert fixed._intercept_share(10_000, SquaredLoss()) == 0.0


def test_large_n_rule_step_floor_and_averaging_are_public_in_n(monkeypatch):
    # from n = 1e4 on (max_iter="auto", default step): the step is at least
    # 0.4 / s**2 and the iterates from step 25 of 100 on are averaged; below
    # n = 1e4, with a given max_iter or a given step_size: as before
    from skdp.solvers.heavy_tailed import known_lipschitz as kl
    from skdp.solvers.heavy_tailed.gd import practical_step_size

    seen = []
    orig = kl.clipped_dp_gd

    def spy(*args, **kwargs):
        seen.append(kwargs["average_from"])
        return orig(*args, **kwargs)

    monkeypatch.setattr(kl, "clipped_dp_gd", spy)
    rng = np.random.default_rng(5)
    for n, avg, floor in ((10_000, 0.25, 0.4), (9_999, 0.5, 0.25)):
        X = rng.standard_t(3, size=(n, 3))
        y = X @ np.ones(3) + rng.standard_t(3, size=n)
        m = HeavyTailedLinearRegression(epsilon=1.0, delta=1e-8, random_state=0)
        m.fit(X, y)
        assert seen[-1] == avg
        s2 = m.feature_scale_**2
        p = m._make_plan(n, 4, m._budget(1), SquaredLoss()).gd.clip_fraction
        base = practical_step_size(1.0, p)
        assert m.step_sizes_[0] == pytest.approx(max(base, floor) / s2)
        fixed = HeavyTailedLinearRegression(
            epsilon=1.0, delta=1e-8, max_iter=100, random_state=0
        ).fit(X, y)
        assert seen[-1] == 0.5
        pf = fixed._make_plan(n, 4, fixed._budget(1), SquaredLoss()).gd.clip_fraction
        assert fixed.step_sizes_[0] == pytest.approx(
            practical_step_size(1.0, pf) / fixed.feature_scale_**2
        )
        given = HeavyTailedLinearRegression(
            epsilon=1.0, delta=1e-8, step_size=0.3, random_state=0
        ).fit(X, y)
        assert given.step_sizes_[0] == 0.3


def test_inf_epsilon_matches_linear_regression_with_the_large_n_rule():
    X, y, _ = _linear(10_000, noise="gauss")
    ref = LinearRegression().fit(X, y)
    model = HeavyTailedLinearRegression(epsilon=np.inf, random_state=0).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, atol=2e-3)
    assert model.intercept_ == pytest.approx(ref.intercept_, abs=2e-3)


def test_small_n_rule_step_growth_is_public_and_costs_nothing(monkeypatch):
    # max_iter="auto" below n = 1e4 with at least half of the gradients
    # clipped: the step may grow up to 1 / (1 - p); nowhere else, and the
    # privacy plan (and spend) is the same with or without the growth
    m = HeavyTailedLinearRegression()
    assert m._step_growth(9_999, 0.6) == pytest.approx(1.0 / 0.4)
    assert m._step_growth(9_999, 0.49) == 1.0
    assert m._step_growth(10_000, 0.6) == 1.0
    assert HeavyTailedLinearRegression(max_iter=30)._step_growth(1000, 0.6) == 1.0
    assert HeavyTailedLinearRegression(step_size=0.1)._step_growth(1000, 0.6) == 1.0
    assert HeavyTailedLogisticRegression()._step_growth(1000, 0.6) == 1.0
    rng = np.random.default_rng(3)
    n, d = 1000, 20
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(n, d))
    y = X @ theta + 1.0 + 0.3 * rng.normal(size=n)
    fits = {}
    for grow in (True, False):
        m = HeavyTailedLinearRegression(epsilon=1.0, delta=1e-6, random_state=0)
        if not grow:
            m._step_growth = lambda n, p: 1.0
        fits[grow] = m.fit(X, y)
    p = m._make_plan(n, d + 1, m._budget(1), SquaredLoss()).gd.clip_fraction
    assert p >= 0.5
    g, f = fits[True], fits[False]
    assert g.privacy_spent_ == f.privacy_spent_
    assert np.all(f.step_sizes_ == f.step_sizes_[0])
    assert g.step_sizes_[0] == f.step_sizes_[0]
    assert (
        f.step_sizes_[0]
        < g.step_sizes_.max()
        <= f.step_sizes_[0] / (1 - p) * (1 + 1e-12)
    )
    err = {k: np.sum((v.coef_ - theta) ** 2) for k, v in fits.items()}
    assert err[True] < err[False]
