"""Sparse (CSR/CSC) input: row helpers and the heavy-tailed estimators."""

import warnings

import numpy as np
import pytest
import scipy.sparse as sp

from skdp import HeavyTailedLinearRegression, HeavyTailedLogisticRegression
from skdp.utils import clip_rows, safe_row_norms
from skdp.utils._sparse import (
    append_constant_column,
    as_float_rows,
    clip_rows_any,
    row_nnz,
    row_norms,
)


def _sparse_rows(n=3000, d=8, density=0.3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, d)) * (rng.random((n, d)) < density)
    return X


# -- helpers ----------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["csr", "csc"])
def test_row_helpers_match_dense(fmt):
    X = _sparse_rows(200)
    X[3] = 0.0
    X[4, :2] = [1e300, 1e300]  # overflow-safe norms
    X[5] = 0.0
    X[5, :2] = [1e-200, 1e-200]  # underflow-safe norms
    S = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    np.testing.assert_allclose(row_norms(S), safe_row_norms(X), rtol=1e-12)
    np.testing.assert_array_equal(row_nnz(S), np.count_nonzero(X, axis=1))
    np.testing.assert_allclose(
        clip_rows_any(S, 1.5).toarray(), clip_rows(X, 1.5), rtol=1e-12
    )
    np.testing.assert_array_equal(
        append_constant_column(S, 2.5).toarray(), np.c_[X, np.full(200, 2.5)]
    )
    assert as_float_rows(S).format == "csr"


def test_stored_zeros_do_not_count():
    S = sp.csr_matrix((np.array([0.0, 3.0]), np.array([0, 1]), np.array([0, 2])))
    assert row_nnz(S)[0] == 1
    assert row_norms(S)[0] == 3.0


def test_duplicate_entries_are_summed_on_a_copy():
    S = sp.csr_matrix(
        (np.array([1.0, 2.0]), np.array([0, 0]), np.array([0, 2])), shape=(1, 2)
    )
    assert not S.has_canonical_format
    assert row_norms(S)[0] == 3.0
    assert S.nnz == 2  # the caller's matrix is untouched


def test_clip_rows_any_does_not_modify_input():
    S = sp.csr_matrix(_sparse_rows(50))
    before = S.toarray().copy()
    clip_rows_any(S, 0.1)
    np.testing.assert_array_equal(S.toarray(), before)


# -- estimators: sparse == dense for the same random_state ---------------------------
def _fit_pair(Est, X, y, fmt, **kw):
    S = sp.csr_matrix(X) if fmt == "csr" else sp.csc_matrix(X)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = Est(random_state=7, **kw).fit(X, y)
        sparse = Est(random_state=7, **kw).fit(S, y)
    np.testing.assert_allclose(sparse.coef_, dense.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(
        sparse.intercept_, dense.intercept_, rtol=1e-7, atol=1e-9
    )
    assert sparse.privacy_spent_ == dense.privacy_spent_
    np.testing.assert_allclose(sparse.predict(S), dense.predict(X), rtol=1e-7)
    return dense, sparse


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize(
    "kw",
    [
        {},
        {"loss": "huber"},
        {"feature_norm": 2.0},
        {"fit_intercept": False},
        {"epsilon": np.inf, "max_iter": 50},
    ],
)
def test_linear_regression_sparse_equals_dense(fmt, kw):
    X = _sparse_rows()
    y = (
        X @ np.linspace(-1, 1, X.shape[1])
        + 1.0
        + np.random.default_rng(1).normal(size=len(X))
    )
    _fit_pair(HeavyTailedLinearRegression, X, y, fmt, **kw)


@pytest.mark.parametrize("fmt", ["csr", "csc"])
@pytest.mark.parametrize("K", [2, 3, 5])
@pytest.mark.parametrize("kw", [{}, {"feature_norm": 2.0}, {"multi_class": "ovr"}])
def test_logistic_regression_sparse_equals_dense(fmt, K, kw):
    X = _sparse_rows(seed=K)
    rng = np.random.default_rng(K)
    y = np.argmax(
        X @ rng.normal(size=(X.shape[1], K)) + rng.gumbel(size=(len(X), K)), 1
    )
    dense, sparse = _fit_pair(
        HeavyTailedLogisticRegression, X, y, fmt, classes=range(K), **kw
    )
    S = sp.csr_matrix(X)
    np.testing.assert_allclose(
        sparse.predict_proba(S), dense.predict_proba(X), rtol=1e-7, atol=1e-12
    )


@pytest.mark.parametrize(
    "Est", [HeavyTailedLinearRegression, HeavyTailedLogisticRegression]
)
def test_sparse_limits_are_clear_errors(Est):
    X = _sparse_rows(500)
    y = (X[:, 0] > 0).astype(int)
    S = sp.csr_matrix(X)
    for kw in ({"solver": "onepass"}, {"solver": "localized"}):
        with pytest.raises(ValueError, match="known_lipschitz"):
            Est(**kw).fit(S, y)
    with pytest.raises(ValueError, match="sparse"):
        Est(center=True, feature_norm=5.0).fit(S, y)


def test_large_sparse_input_is_never_densified():
    # 2e4 x 2e5 would need 32 GB dense; the fit stays in sparse form
    rng = np.random.default_rng(0)
    n, d, nnz = 20_000, 200_000, 60_000
    S = sp.csr_matrix(
        (rng.random(nnz) + 0.5, (rng.integers(0, n, nnz), rng.integers(0, d, nnz))),
        shape=(n, d),
    )
    y = rng.integers(0, 3, size=n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf = HeavyTailedLogisticRegression(classes=range(3), random_state=0).fit(S, y)
    assert clf.coef_.shape == (3, d)
    assert clf.predict_proba(S[:5]).shape == (5, 3)


# -- skdp.preprocessing.StandardScaler(with_mean=False) ----------------------------------
def _scaler_data(seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(2.0, 3.0, size=(2000, 5)) * (rng.random((2000, 5)) < 0.3)
    return X


@pytest.mark.parametrize("bounds", [(-20.0, 20.0), (-3.0, 5.0), None])
def test_sparse_moments_statistic_equals_dense(bounds):
    from skdp.preprocessing._moments import private_moments

    X = _scaler_data()
    lo, hi = bounds if bounds is not None else (-1.0, 0.5)  # some entries clipped
    lo, hi = np.full(5, lo), np.full(5, hi)
    for with_var in (True, False):
        *_, dense = private_moments(X, lo, hi, 0.0, with_var=with_var, rng=None)
        *_, sparse = private_moments(
            sp.csr_matrix(X), lo, hi, 0.0, with_var=with_var, rng=None
        )
        np.testing.assert_allclose(sparse, dense, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("bounds", [(-20.0, 20.0), None])
@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_standard_scaler_sparse_equals_dense(bounds, epsilon):
    from skdp.preprocessing import StandardScaler

    X = _scaler_data(1)
    kw = dict(with_mean=False, bounds=bounds, epsilon=epsilon, random_state=3)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dense = StandardScaler(**kw).fit(X)
        sparse = StandardScaler(**kw).fit(sp.csc_matrix(X))
    np.testing.assert_allclose(sparse.scale_, dense.scale_, rtol=1e-9)
    np.testing.assert_allclose(sparse.mean_, dense.mean_, rtol=1e-9)
    S = sp.csr_matrix(X)
    if bounds is None and (
        np.any(dense.bounds_[0] > 0) or np.any(dense.bounds_[1] < 0)
    ):
        return
    out = sparse.transform(S)
    assert sp.issparse(out)
    np.testing.assert_allclose(out.toarray(), dense.transform(X), rtol=1e-12)
    np.testing.assert_allclose(
        sparse.inverse_transform(out).toarray(),
        dense.inverse_transform(dense.transform(X)),
        rtol=1e-12,
    )
    assert S.nnz == out.nnz  # no zero became non-zero


def test_standard_scaler_sparse_matches_sklearn_without_noise():
    from sklearn.preprocessing import StandardScaler as SkScaler

    from skdp.preprocessing import StandardScaler

    S = sp.csr_matrix(_scaler_data(2))
    ours = StandardScaler(with_mean=False, bounds=(-50, 50), epsilon=np.inf).fit(S)
    ref = SkScaler(with_mean=False).fit(S)
    np.testing.assert_allclose(ours.scale_, ref.scale_, rtol=1e-10)
    np.testing.assert_allclose(
        ours.transform(S).toarray(), ref.transform(S).toarray(), rtol=1e-10
    )


def test_standard_scaler_sparse_errors_are_public():
    from skdp.preprocessing import StandardScaler

    S = sp.csr_matrix(_scaler_data())
    with pytest.raises(ValueError, match="Cannot center sparse"):
        StandardScaler(bounds=(-20, 20)).fit(S)
    fitted = StandardScaler(with_mean=False, bounds=(1.0, 20.0), random_state=0)
    fitted.fit(S)
    with pytest.raises(ValueError, match="contain 0"):
        fitted.transform(S)
    # clip=False keeps the zeros whatever the bounds
    out = StandardScaler(with_mean=False, bounds=(1.0, 20.0), clip=False).fit(S)
    assert out.transform(S).nnz == S.nnz


@pytest.mark.parametrize("bound", [1.0, 1e-300, 1e300])
def test_sparse_clip_is_silent_and_equals_dense_on_extreme_rows(bound):
    # Private rows: no floating-point exception under errstate(all="raise"),
    # and a row whose norm overflows keeps its direction as in clip_rows
    # (it was zeroed, and tiny clip factors raised an underflow).
    big = np.finfo(float).max / 4
    rows = np.array(
        [
            [1.3e308, 1.3e308, 0.0],
            [big, -big, big],
            [1e308, -1e308, 1e308],
            [1e-310, 0.0, 0.0],
            [1e308, 1e-310, -5e-324],
            [1e308, 1.0, 0.0],
            [3.0, 4.0, 0.0],
        ]
    )
    with np.errstate(all="raise"):
        clipped = clip_rows_any(sp.csr_matrix(rows), bound).toarray()
    np.testing.assert_array_equal(clipped, clip_rows(rows, bound))
