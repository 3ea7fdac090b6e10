"""Sparse (CSR/CSC) input for BilevelRidge, MinimaxFairClassifier and the
preprocessing steps (issue 17): same model as dense input for the same
``random_state``, coupled-run sensitivity of the new sparse statistics, clear
errors where a path needs dense rows, and no densification of a large matrix.
(HeavyTailed* and StandardScaler: ``tests/test_sparse.py``.)
"""

import math
import tracemalloc
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.base import is_classifier
from sklearn.impute import SimpleImputer as SkSimpleImputer
from sklearn.pipeline import make_pipeline

import skdp
from skdp import BilevelRidge, MinimaxFairClassifier, PrivacyAccountant
from skdp.linear_model._bilevel_ridge import _sparse_statistics
from skdp.losses import SquaredLoss
from skdp.model_selection import PrivateSearchCV
from skdp.preprocessing import MinMaxScaler, OneHotEncoder, SimpleImputer
from skdp.preprocessing._imputer import private_observed_mean
from skdp.privacy import gdp_mu
from skdp.solvers.bilevel.ridge import gd as ridge_gd_module
from skdp.solvers.bilevel.ridge.stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
)
from skdp.solvers.heavy_tailed import gd as ht_gd
from skdp.solvers.saddle_point import gda as gda_module
from skdp.solvers.saddle_point.gda import (
    group_dro_gda,
    stacked_sensitivity,
    stacked_statistic,
)
from skdp.utils import _sparse as sparse_module
from skdp.utils import clip_rows
from skdp.utils._sparse import MAX_GRAM_FEATURES, augmented_gram, matvec, rmatvec

FORMATS = {"csr": sp.csr_matrix, "csc": sp.csc_matrix}


def _sparse_data(n=2000, d=20, density=0.2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, d)) * (rng.random((n, d)) < density)
    coef = rng.normal(size=d)
    y = X @ coef + 0.5 * rng.normal(size=n) + 1.0
    g = rng.integers(0, 2, size=n)
    labels = (X @ coef + 0.5 * g + rng.normal(size=n) > 0).astype(int)
    return X, y, labels, g


def _quiet_fit(est, *args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return est.fit(*args, **kw)


# -- BilevelRidge ---------------------------------------------------------------


BILEVEL_PARAMS = [
    ({}, 1e-12),
    ({"tuning": "path"}, 1e-12),
    ({"feature_norm": 3.0, "target_bound": 10.0}, 1e-12),
    ({"fit_intercept": False}, 1e-12),
    # the outer loop's 100 projected steps amplify summation-order rounding
    # (3.1e-6 in alpha_ at epsilon=inf without intercept since the private
    # bounds are the Gaussian norm bound, 2.0e-5 with the split drawn from
    # the data-derived stream of issue 32; the bounds themselves are equal,
    # and dense and sparse input get the same stream)
    ({"inner_solver": "sufficient_statistics"}, 1e-5),
    ({"inner_solver": "sufficient_statistics", "fit_intercept": False}, 1e-4),
    ({"inner_solver": "sufficient_statistics", "tuning": "risk_estimate"}, 1e-9),
]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("epsilon", [np.inf, 1.0])
@pytest.mark.parametrize("params, rtol", BILEVEL_PARAMS)
def test_bilevel_ridge_sparse_equals_dense(fmt, epsilon, params, rtol):
    X, y, _, _ = _sparse_data()
    kw = dict(epsilon=epsilon, random_state=3, **params)
    dense = _quiet_fit(BilevelRidge(**kw), X, y)
    sparse = _quiet_fit(BilevelRidge(**kw), FORMATS[fmt](X), y)
    scale = np.max(np.abs(dense.coef_))
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=rtol, atol=rtol * scale)
    assert sparse.intercept_ == pytest.approx(dense.intercept_, rel=rtol, abs=rtol)
    assert sparse.alpha_ == pytest.approx(dense.alpha_, rel=rtol, abs=1e-300)
    assert sparse.privacy_spent_ == dense.privacy_spent_
    assert (sparse.feature_norm_, sparse.target_bound_) == pytest.approx(
        (dense.feature_norm_, dense.target_bound_), nan_ok=True, rel=1e-15
    )
    np.testing.assert_allclose(
        sparse.predict(FORMATS[fmt](X)), dense.predict(X), rtol=1e-6, atol=1e-6
    )


def test_bilevel_ridge_sparse_without_noise_matches_ridge():
    # epsilon=inf, public bounds that clip nothing, sufficient statistics
    # with a risk-estimate penalty: the model is Ridge at the chosen alpha_.
    from sklearn.linear_model import Ridge

    X, y, _, _ = _sparse_data(seed=1)
    bound = float(np.max(np.linalg.norm(X, axis=1))) * 1.01
    est = BilevelRidge(
        epsilon=np.inf,
        inner_solver="sufficient_statistics",
        tuning="risk_estimate",
        feature_norm=bound,
        target_bound=float(np.max(np.abs(y))) * 1.01,
        random_state=0,
    ).fit(sp.csr_matrix(X), y)
    ref = Ridge(alpha=est.alpha_).fit(X, y)
    np.testing.assert_allclose(est.coef_, ref.coef_, rtol=1e-6, atol=1e-8)
    assert est.intercept_ == pytest.approx(ref.intercept_, rel=1e-6)


@pytest.mark.parametrize("intercept_scaling", [None, 1.0, 0.5])
def test_sparse_statistics_equal_dense(intercept_scaling):
    X, y, _, _ = _sparse_data(n=500, d=8)
    X[3] *= 100.0  # clipped
    y[4] = 1e6  # clipped
    stats = _sparse_statistics(sp.csr_matrix(X), y, 2.0, 5.0, intercept_scaling)
    Xn = clip_rows(clip_rows(X, 2.0) / 2.0, 1.0)
    yn = np.clip(np.clip(y, -5.0, 5.0) / 5.0, -1.0, 1.0)
    ref = exact_statistics(Xn, yn, intercept_scaling)
    np.testing.assert_allclose(stats.gram, ref.gram, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(stats.moment, ref.moment, rtol=1e-12, atol=1e-12)
    assert stats.target_sq == pytest.approx(ref.target_sq, rel=1e-12)
    assert stats.n_samples == ref.n_samples


def _replace_first(X, y, row, target):
    X2, y2 = X.copy(), y.copy()
    X2[0], y2[0] = row, target
    return X2, y2


@pytest.mark.parametrize("intercept_scaling", [None, 1.0])
def test_sparse_gram_moves_by_at_most_and_nearly_its_sensitivity(intercept_scaling):
    """Coupled runs on neighbouring sparse datasets: the clipped, scaled
    statistics of the sparse path move by at most the declared sensitivities
    of :mod:`skdp.solvers.bilevel.ridge.stats`, and nearly attain them."""
    rng = np.random.default_rng(0)
    n, d, A, B = 300, 6, 2.0, 5.0
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.3)
    y = rng.normal(size=n)
    c = intercept_scaling
    # Gram: the worst angle t between the rows (t = 0 without intercept;
    # for c = A = 1 after scaling, t = -0.366 maximizes the upper triangle's
    # change (1 - t**2)(2 - t**2) + 2 (1 - t), 98.3% of the declared bound,
    # which is an upper bound on it); the rows are far outside A.
    t = 0.0 if c is None else -0.366
    x = np.zeros(d)
    x[0] = 10.0
    x2 = np.zeros(d)
    x2[0], x2[1] = 7.0 * t, 7.0 * math.sqrt(1 - t * t)
    X[0], y[0] = x, 0.0
    Xa, ya = _replace_first(X, y, x2, 0.0)
    s1 = _sparse_statistics(sp.csr_matrix(X), y, A, B, c)
    s2 = _sparse_statistics(sp.csr_matrix(Xa), ya, A, B, c)
    moved = np.linalg.norm(np.triu(s1.gram - s2.gram))
    declared = gram_sensitivity(1.0, c)  # units of the scaled rows (norm <= 1)
    assert moved <= declared * (1 + 1e-12)
    assert moved >= 0.98 * declared
    # Moment: the same row with targets far outside +-B of opposite signs.
    Xb, yb = _replace_first(X, y, x, 1e3)
    Xc, yc = _replace_first(X, y, x, -1e3)
    s1 = _sparse_statistics(sp.csr_matrix(Xb), yb, A, B, c)
    s2 = _sparse_statistics(sp.csr_matrix(Xc), yc, A, B, c)
    moved = np.linalg.norm(s1.moment - s2.moment)
    declared = moment_sensitivity(1.0, 1.0, c)
    assert moved <= declared * (1 + 1e-12)
    assert moved >= 0.99 * declared


def test_augmented_gram_keeps_the_input_and_is_exact():
    X, y, _, _ = _sparse_data(n=200, d=5)
    S = sp.csr_matrix(X)
    before = S.copy()
    gram, moment, n, target_sq = augmented_gram(S, y, 2.0)
    Z = np.hstack([X, np.full((200, 1), 2.0)])
    np.testing.assert_allclose(gram, Z.T @ Z, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(moment, Z.T @ y, rtol=1e-12, atol=1e-12)
    assert (n, target_sq) == (200, pytest.approx(y @ y))
    assert (S != before).nnz == 0


def test_sufficient_statistics_refuses_wide_sparse_input_before_spending(monkeypatch):
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    # the default limit: one column above it with the intercept column
    S = sp.random(50, MAX_GRAM_FEATURES, density=0.01, format="csr", random_state=0)
    with pytest.raises(ValueError, match=f"up to {MAX_GRAM_FEATURES} columns"):
        BilevelRidge(inner_solver="sufficient_statistics", accountant=acc).fit(
            S, np.zeros(50)
        )
    assert acc.ledger == []
    # a rule of the public shape only: at a lowered limit, the same data fit
    # without the intercept column and are refused with it
    monkeypatch.setattr(sparse_module, "MAX_GRAM_FEATURES", 20)
    X, y, _, _ = _sparse_data(n=300, d=20)
    kw = dict(inner_solver="sufficient_statistics", random_state=0)
    with pytest.raises(ValueError, match="up to 20 columns"):
        BilevelRidge(accountant=acc, **kw).fit(sp.csr_matrix(X), y)
    assert acc.ledger == []
    est = BilevelRidge(fit_intercept=False, **kw).fit(sp.csr_matrix(X), y)
    assert est.coef_.shape == (20,)


@pytest.mark.parametrize("solver", ["loc_gd", "output_perturbation"])
def test_bilevel_retired_solvers_refuse_sparse_clearly(solver):
    X, y, _, _ = _sparse_data(n=100, d=3)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(TypeError, match='inner_solver="gd"'):
        BilevelRidge(inner_solver=solver, accountant=acc).fit(sp.csr_matrix(X), y)
    assert acc.ledger == []


# -- MinimaxFairClassifier --------------------------------------------------------

MINIMAX_PARAMS = [
    {},
    {"feature_norm": 3.0},
    {"group_priors": [0.5, 0.5]},
    {"fit_intercept": False},
    {"max_iter": 30, "radius": 2.0},
]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("epsilon", [np.inf, 1.0])
@pytest.mark.parametrize("params", MINIMAX_PARAMS)
def test_minimax_fair_gda_sparse_equals_dense(fmt, epsilon, params):
    X, _, labels, g = _sparse_data()
    kw = dict(epsilon=epsilon, classes=[0, 1], groups=[0, 1], random_state=3)
    kw.update(params)
    dense = _quiet_fit(MinimaxFairClassifier(**kw), X, labels, sensitive_features=g)
    Xs = FORMATS[fmt](X)
    sparse = _quiet_fit(MinimaxFairClassifier(**kw), Xs, labels, sensitive_features=g)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(sparse.intercept_, dense.intercept_, atol=1e-12)
    np.testing.assert_allclose(sparse.group_weights_, dense.group_weights_, atol=1e-12)
    assert sparse.privacy_spent_ == dense.privacy_spent_
    np.testing.assert_allclose(
        sparse.predict_proba(Xs), dense.predict_proba(X), rtol=1e-9, atol=1e-12
    )
    np.testing.assert_array_equal(sparse.predict(Xs), dense.predict(X))


@pytest.mark.parametrize("solver", ["nseg", "nispp"])
def test_minimax_fair_other_solvers_refuse_sparse_naming_gda(solver):
    X, _, labels, g = _sparse_data(n=200, d=3)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(TypeError, match='solver="gda"'):
        MinimaxFairClassifier(solver=solver, accountant=acc).fit(
            sp.csr_matrix(X), labels, sensitive_features=g
        )
    with pytest.raises(TypeError, match="centring"):
        MinimaxFairClassifier(center=True, accountant=acc).fit(
            sp.csr_matrix(X), labels, sensitive_features=g
        )
    assert acc.ledger == []


def _adversarial_rows(p, C):
    # two rows of norm C nearly along +-e_2, slightly negative along e_1,
    # with the same label, and a point w far along e_1: both margins are very
    # negative (|l'| ~ 1, losses above any cap) and the gradients point along
    # +-e_2 (difference ~ 2C)
    alpha = 0.01
    beta = math.sqrt(1 - alpha**2)
    x = np.zeros(p)
    x[0], x[1] = -alpha * C, beta * C
    x2 = x.copy()
    x2[1] = -beta * C
    w = np.zeros(p)
    w[0] = 1e5
    return x, x2, w


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("weights", [np.array([1.0]), np.array([3.0, 0.5])])
def test_sparse_stacked_statistic_moves_by_at_most_and_nearly_its_sensitivity(
    fmt, weights
):
    rng = np.random.default_rng(0)
    m, p, C, B, n = weights.size, 5, 1.5, 2.0, 60
    lam = 0.0 if m == 1 else 0.6 * C / B
    X = clip_rows(rng.normal(size=(n, p)) * (rng.random((n, p)) < 0.4), C)
    y = rng.choice([-1.0, 1.0], size=n)
    g = rng.integers(0, m, size=n)
    x, x2, w = _adversarial_rows(p, C)
    X[0], y[0], g[0] = x, 1.0, 0  # group 0 has the largest weight
    Xb = X.copy()
    Xb[0] = x2
    s1 = stacked_statistic(FORMATS[fmt](X), y, g, m, w, weights, C, B, lam)
    s2 = stacked_statistic(FORMATS[fmt](Xb), y, g, m, w, weights, C, B, lam)
    # the sparse statistic is the dense one
    np.testing.assert_allclose(
        s1, stacked_statistic(X, y, g, m, w, weights, C, B, lam), rtol=1e-12, atol=1e-12
    )
    moved = np.linalg.norm(s1 - s2)
    declared = stacked_sensitivity(weights, C, lam * B)
    assert moved <= declared * (1 + 1e-12)
    # same group: the gradient part attains 2 a C (the loss part cancels)
    assert moved >= 0.98 * 2 * weights.max() * C
    if m == 1:
        assert moved >= 0.98 * declared


def test_sparse_coupled_runs_along_a_noisy_trajectory(monkeypatch):
    """Same random stream; at every step of a sparse run the pre-noise
    statistic of a neighbouring sparse dataset differs by at most that step's
    declared sensitivity."""
    rng = np.random.default_rng(1)
    n, p, m, C = 300, 8, 2, 2.0
    X = clip_rows(rng.normal(size=(n, p)) * 2.0 * (rng.random((n, p)) < 0.3), C)
    y = rng.choice([-1.0, 1.0], size=n)
    g = rng.choice(m, size=n, p=[0.7, 0.3])
    X2, g2 = X.copy(), g.copy()
    X2[0] = -X[0]
    g2[0] = 1 - g[0]
    S2 = sp.csr_matrix(X2)
    original = gda_module.stacked_statistic
    ratios = []

    def coupled(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=None):
        assert sp.issparse(Xc)  # the solver keeps the sparse matrix
        s1 = original(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=row_norms)
        s2 = original(S2, yc, g2, m_, v, a, clip, B, lam)
        ratios.append(np.linalg.norm(s1 - s2) / stacked_sensitivity(a, clip, lam * B))
        return s1

    monkeypatch.setattr(gda_module, "stacked_statistic", coupled)
    priors = np.bincount(g, minlength=m) / n
    group_dro_gda(
        sp.csc_matrix(X),
        y,
        g,
        priors,
        radius=3.0,
        clip=C,
        loss_bound=2.0,
        loss_factor=0.5 * C / 2.0,
        n_steps=30,
        noise_multiplier=0.5,
        primal_step=1.0 / C**2,
        dual_step=2.0,
        rng=np.random.default_rng(5),
        momentum=0.9,
        optimistic=True,
    )
    assert len(ratios) == 30
    assert max(ratios) <= 1.0 + 1e-12
    assert max(ratios) > 0.2


def test_matvec_helpers_match_dense():
    X, _, _, _ = _sparse_data(n=50, d=7)
    v, w = np.arange(50.0), np.arange(7.0)
    for fmt in FORMATS.values():
        np.testing.assert_allclose(matvec(fmt(X), w), X @ w, rtol=1e-12)
        np.testing.assert_allclose(rmatvec(fmt(X), v), X.T @ v, rtol=1e-12)


# -- no densification of a large sparse matrix ----------------------------------


def _forbid_densifying(monkeypatch):
    def refuse(self, *args, **kwargs):
        raise AssertionError("a large sparse matrix was densified")

    for cls in (sp.csr_matrix, sp.csc_matrix, sp.coo_matrix):
        monkeypatch.setattr(cls, "toarray", refuse)
        monkeypatch.setattr(cls, "todense", refuse)


@pytest.mark.parametrize(
    "make",
    [
        lambda: (BilevelRidge(random_state=0), "regression"),
        lambda: (BilevelRidge(tuning="path", random_state=0), "regression"),
        lambda: (
            MinimaxFairClassifier(classes=[0, 1], groups=[0, 1], random_state=0),
            "fair",
        ),
    ],
    ids=["bilevel_gd", "bilevel_gd_path", "minimax_gda"],
)
def test_large_sparse_input_is_never_densified(monkeypatch, make):
    # 2e4 x 2e5 would need 32 GB dense; no toarray/todense, and the peak of
    # the Python-level allocations stays far below one dense copy
    rng = np.random.default_rng(0)
    n, d, nnz = 20_000, 200_000, 60_000
    S = sp.csr_matrix(
        (rng.random(nnz) + 0.5, (rng.integers(0, n, nnz), rng.integers(0, d, nnz))),
        shape=(n, d),
    )
    est, kind = make()
    _forbid_densifying(monkeypatch)
    tracemalloc.start()
    try:
        if kind == "regression":
            _quiet_fit(est, S, rng.normal(size=n))
        else:
            _quiet_fit(
                est, S, rng.integers(0, 2, n), sensitive_features=rng.integers(0, 2, n)
            )
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 300e6  # bytes; a dense copy is 32e9
    assert est.coef_.shape[-1] == d
    assert est.predict(S[:5]).shape == (5,)


# -- preprocessing ------------------------------------------------------------------


def _imputer_data(n=600, d=5, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) * 3 * (rng.random((n, d)) < 0.3)
    X[rng.random((n, d)) < 0.05] = np.nan  # stored NaN entries
    X[:, 4] = np.nan  # a column with no observed value (kept)
    X[:, 4][rng.random(n) < 0.5] = 0.0  # ... or only zeros
    return X


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("epsilon", [np.inf, 1.0])
def test_simple_imputer_sparse_equals_dense(fmt, epsilon):
    X = _imputer_data()
    kw = dict(strategy="mean", bounds=(-4.0, 6.0), epsilon=epsilon, random_state=0)
    dense = SimpleImputer(**kw).fit(X)
    sparse = SimpleImputer(**kw).fit(FORMATS[fmt](X))
    np.testing.assert_allclose(
        sparse.statistics_, dense.statistics_, rtol=1e-12, atol=1e-12
    )
    assert sparse.privacy_spent_ == dense.privacy_spent_
    S = FORMATS[fmt](X)
    out = sparse.transform(S)
    assert sp.issparse(out) and out.format == fmt
    assert out.nnz == S.nnz  # only stored NaN entries are filled
    assert not np.isnan(out.data).any()
    np.testing.assert_allclose(
        out.toarray(), dense.transform(X), rtol=1e-12, atol=1e-12
    )
    assert np.isnan(S.data).sum() == np.isnan(X).sum()  # the input is untouched


def test_simple_imputer_sparse_matches_sklearn_without_noise():
    X = _imputer_data()[:, :4]
    S = sp.csc_matrix(X)
    ours = SimpleImputer(strategy="mean", bounds=(-50.0, 50.0), epsilon=np.inf).fit(S)
    ref = SkSimpleImputer(strategy="mean").fit(S)
    np.testing.assert_allclose(ours.statistics_, ref.statistics_, rtol=1e-9)
    np.testing.assert_allclose(
        ours.transform(S).toarray(), ref.transform(S).toarray(), rtol=1e-9
    )


def test_sparse_imputer_statistic_moves_by_at_most_and_nearly_its_sensitivity():
    """Coupled runs: a row with every value observed at a bound against a row
    of stored NaN entries moves the pre-noise statistic by sqrt(d) / n."""
    X = _imputer_data()
    n, d = X.shape
    lower, upper = np.full(d, -4.0), np.full(d, 6.0)
    X1, X2 = X.copy(), X.copy()
    X1[0] = 100.0  # clipped to the upper bound: u = 1/2
    X2[0] = np.nan  # stored as NaN: missing
    _, s1 = private_observed_mean(sp.csr_matrix(X1), lower, upper, 0.0, rng=None)
    _, s2 = private_observed_mean(sp.csr_matrix(X2), lower, upper, 0.0, rng=None)
    moved = np.linalg.norm(s1 - s2)
    declared = math.sqrt(d) / n
    assert moved <= declared * (1 + 1e-12)
    assert moved >= 0.999 * declared
    # an implicit zero against a stored value: within the bound as well
    X3 = X.copy()
    X3[0] = 0.0
    _, s3 = private_observed_mean(sp.csr_matrix(X3), lower, upper, 0.0, rng=None)
    assert np.linalg.norm(s1 - s3) <= declared * (1 + 1e-12)


def test_min_max_scaler_refuses_sparse_as_sklearn_does():
    S = sp.csr_matrix(np.eye(3))
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    with pytest.raises(TypeError, match="does not support sparse input"):
        MinMaxScaler(accountant=acc).fit(S)
    assert acc.ledger == []
    scaler = MinMaxScaler(bounds=(0.0, 1.0)).fit(np.eye(3))
    for method in (scaler.transform, scaler.inverse_transform):
        with pytest.raises(TypeError, match="StandardScaler"):
            method(S)


@pytest.mark.parametrize(
    "make_model",
    [
        lambda: BilevelRidge(random_state=0),
        lambda: MinimaxFairClassifier(classes=[0, 1], feature_norm=2.0, random_state=0),
        lambda: skdp.HeavyTailedLogisticRegression(classes=[0, 1], random_state=0),
    ],
    ids=["bilevel", "minimax", "heavy_tailed_logistic"],
)
def test_sparse_one_hot_output_goes_through_a_pipeline(make_model):
    rng = np.random.default_rng(0)
    n = 2000
    C = rng.integers(0, 5, size=(n, 3))
    y = C[:, 0] + rng.normal(size=n)
    if is_classifier(make_model()):
        y = (y > 2).astype(int)
    encoder_kw = dict(categories=[list(range(5))] * 3, handle_unknown="ignore")
    # fresh instances, not clones: a clone draws its own noise stream
    sparse_pipe = make_pipeline(
        OneHotEncoder(sparse_output=True, **encoder_kw), make_model()
    )
    assert skdp.check_pipeline(sparse_pipe) == []
    dense_pipe = make_pipeline(
        OneHotEncoder(sparse_output=False, **encoder_kw), make_model()
    )
    _quiet_fit(sparse_pipe, C, y)
    _quiet_fit(dense_pipe, C, y)
    assert sp.issparse(sparse_pipe[0].transform(C[:3]))
    np.testing.assert_allclose(
        sparse_pipe.predict(C), dense_pipe.predict(C), rtol=1e-9, atol=1e-9
    )


@pytest.mark.parametrize(
    "estimator, param_grid",
    [
        (BilevelRidge(), {"inner_max_iter": [50, 100]}),
        (
            MinimaxFairClassifier(classes=[0, 1], groups=[0, 1]),
            {"max_iter": [50, 100]},
        ),
    ],
    ids=["bilevel", "minimax"],
)
def test_private_search_passes_sparse_input_through(estimator, param_grid):
    X, y, labels, g = _sparse_data(n=3000, d=10)
    fit = {}
    if isinstance(estimator, MinimaxFairClassifier):
        y, fit = labels, {"sensitive_features": g}
    results = []
    for Xf in (X, sp.csr_matrix(X), sp.csc_matrix(X)):
        search = PrivateSearchCV(
            estimator, param_grid=param_grid, epsilon=2.0, random_state=0
        )
        _quiet_fit(search, Xf, y, **fit)
        results.append((search.best_index_, search.best_score_, search.predict(Xf)))
    for index, score, pred in results[1:]:
        assert index == results[0][0]
        assert score == pytest.approx(results[0][1], rel=1e-9)
        np.testing.assert_allclose(pred, results[0][2], rtol=1e-9, atol=1e-9)


# -- BilevelRidge gd on sparse rows: coupled runs ------------------------------------


def _sparse_linear(rng, n, d):
    X = rng.normal(size=(n, d)) * (rng.random((n, d)) < 0.5)
    coef = rng.normal(size=d)
    return X, X @ coef + 0.5 * rng.normal(size=n) + 3.0, coef


def test_sparse_ridge_gd_steps_move_by_at_most_and_nearly_their_sensitivity(
    monkeypatch,
):
    """Every step of a staged run on CSR rows releases a clipped sum whose
    value on a neighbouring sparse dataset, at the same iterate and clip
    level, differs by at most 2 C_t; an extreme replaced record nearly
    attains it. The sparse sums equal the dense ones."""
    rng = np.random.default_rng(0)
    n, d = 400, 6
    X, y, _ = _sparse_linear(rng, n, d)
    X2, y2 = X.copy(), y.copy()
    # the replaced record's clipped gradient opposes record 7's (both at C)
    X2[7], y2[7] = -40.0 * X[7] / np.linalg.norm(X[7]), 500.0
    S, S2 = sp.csr_matrix(X), sp.csr_matrix(X2)
    seen = []
    real = ht_gd.clipped_gradient_sum

    def record(Xa, ya, w, inv, C, loss):
        assert sp.issparse(Xa)  # the solver keeps the rows sparse
        out = real(Xa, ya, w, inv, C, loss)
        seen.append((w.copy(), C, out))
        return out

    monkeypatch.setattr(ht_gd, "clipped_gradient_sum", record)
    plan = ht_gd.make_full_batch_plan(gdp_mu(1.0, 1e-6), n, d, 12, adaptive_clip=False)
    stages = [(4, 10.0), (4, 1.0), (4, 0.0)]
    ht_gd.clipped_dp_gd(
        S, y, SquaredLoss(), plan, rng, step_size=0.5, clip=2.0, stages=stages
    )
    assert len(seen) == 12
    inv = 1.0 / np.linalg.norm(X, axis=1)
    inv2 = 1.0 / np.linalg.norm(X2, axis=1)
    ratios = []
    for w, C, s1 in seen:
        dense = real(X, y, w, inv, C, SquaredLoss())
        np.testing.assert_allclose(s1, dense, rtol=1e-10, atol=1e-10)
        s2 = real(S2, y2, w, inv2, C, SquaredLoss())
        gap = float(np.linalg.norm(s1 - s2))
        assert gap <= 2 * C * (1 + 1e-9)
        ratios.append(gap / (2 * C))
    assert max(ratios) > 0.9


def test_sparse_selection_release_moves_by_at_most_and_nearly_its_sensitivity():
    # tuning="path": the K - 1 normalized clipped sums of loss differences on
    # CSR rows move by at most 2 sqrt(K - 1) between neighbours, equal the
    # dense ones, and an extreme record nearly attains the bound.
    rng = np.random.default_rng(1)
    n, d = 500, 4
    X, y, coef = _sparse_linear(rng, n, d)
    cands = [np.append(c * coef, 3.0) for c in (0.0, 0.3, 0.7, 1.0)]
    K = len(cands)
    s, Y = 1.0, 8.0

    def normalized(Xa, ya):
        diffs, _ = ridge_gd_module.loss_differences(
            sp.csr_matrix(Xa), ya, cands, s, Y, 0.0, rng, True
        )
        dense, _ = ridge_gd_module.loss_differences(Xa, ya, cands, s, Y, 0.0, rng, True)
        np.testing.assert_allclose(diffs, dense, rtol=1e-10, atol=1e-12)
        ref = cands[-1]
        out = []
        for w, dk in zip(cands[:-1], diffs[:-1]):
            diff = w - ref
            P = 3.0 * s * np.linalg.norm(diff[:-1]) + abs(diff[-1])
            out.append(dk * n / (P * 2.0 * Y))
        return np.array(out)

    worst = 0.0
    for i in range(10):
        row = rng.normal(size=d) * 50 * (rng.random(d) < 0.7)
        Xa, ya = _replace_first(np.roll(X, -i, axis=0), np.roll(y, -i), row, 1e4)
        Xb, yb = _replace_first(np.roll(X, -i, axis=0), np.roll(y, -i), row, -1e4)
        gap = float(np.linalg.norm(normalized(Xa, ya) - normalized(Xb, yb)))
        assert gap <= 2 * math.sqrt(K - 1) * (1 + 1e-9)
        worst = max(worst, gap / (2 * math.sqrt(K - 1)))
    assert worst > 0.8
