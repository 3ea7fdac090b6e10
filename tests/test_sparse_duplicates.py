"""Sparse input with duplicate stored entries (non-canonical CSR/CSC).

scipy gives a duplicated ``(i, j)`` the *sum* of its stored values (as
``toarray`` does). The sparse statistics read the stored entries directly, so
they must sum duplicates first: otherwise one record with many stored entries
in a column moves the released statistic by far more than its declared
sensitivity (and the statistic differs from the dense one).
"""

import numpy as np
import scipy.sparse as sp

import skdp
from skdp.preprocessing._imputer import _sparse_observed_statistic
from skdp.preprocessing._moments import _sparse_unit_moments, moments_sensitivity


def _with_duplicates(dense, row, col, values):
    """CSR equal to ``dense`` except that ``(row, col)`` is stored as
    ``values`` (duplicates summed by scipy); not in canonical format."""
    base = sp.coo_matrix(dense)
    keep = ~((base.row == row) & (base.col == col))
    rows = np.concatenate([base.row[keep], np.full(len(values), row)])
    cols = np.concatenate([base.col[keep], np.full(len(values), col)])
    data = np.concatenate([base.data[keep], values])
    order = np.lexsort((cols, rows))
    per_row = np.bincount(rows, minlength=dense.shape[0])
    indptr = np.concatenate([[0], np.cumsum(per_row)])
    X = sp.csr_matrix((data[order], cols[order], indptr), shape=dense.shape)
    assert not X.has_canonical_format
    return X


def _neighbours():
    rng = np.random.default_rng(0)
    dense = np.where(rng.random((40, 2)) < 0.5, 0.0, rng.uniform(0, 1, (40, 2)))
    dense[0] = 0.0
    # record 0 stores 200 entries of 1.0 in column 0 (its value is 200)
    dup = _with_duplicates(dense, 0, 0, np.full(200, 1.0))
    other = dense.copy()
    other[0] = [0.0, 0.0]  # the neighbour: record 0 replaced by a zero row
    return dup, sp.csr_matrix(other), dup.toarray()


def test_imputer_statistic_sums_duplicates_and_keeps_its_sensitivity():
    X, X_other, dense = _neighbours()
    lo, hi = np.zeros(2), np.ones(2)
    stat = _sparse_observed_statistic(X, lo, hi)
    np.testing.assert_allclose(
        stat, _sparse_observed_statistic(sp.csr_matrix(dense), lo, hi)
    )
    moved = np.linalg.norm(stat - _sparse_observed_statistic(X_other, lo, hi))
    assert moved <= moments_sensitivity(*X.shape) * (1 + 1e-12)


def test_scaler_statistic_sums_duplicates_and_keeps_its_sensitivity():
    X, X_other, dense = _neighbours()
    lo, hi = np.zeros(2), np.ones(2)
    stat = _sparse_unit_moments(X, lo, hi, True)
    dense_stat = _sparse_unit_moments(sp.csr_matrix(dense), lo, hi, True)
    np.testing.assert_allclose(stat, dense_stat)
    moved = np.linalg.norm(stat - _sparse_unit_moments(X_other, lo, hi, True))
    assert moved <= moments_sensitivity(*X.shape) * (1 + 1e-12)


def test_imputer_on_duplicates_equals_dense():
    X, _, dense = _neighbours()
    X = X.copy()
    X.data[0] = np.nan  # one of record 0's duplicates is missing: record 0 is NaN
    dense = X.toarray()
    kw = dict(strategy="mean", epsilon=np.inf, bounds=(0.0, 1.0))
    a = skdp.preprocessing.SimpleImputer(**kw).fit(X)
    b = skdp.preprocessing.SimpleImputer(**kw).fit(dense)
    np.testing.assert_allclose(a.statistics_, b.statistics_)
    np.testing.assert_allclose(a.transform(X).toarray(), b.transform(dense))
