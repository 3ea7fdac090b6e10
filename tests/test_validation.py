"""Clipping helpers and privacy-parameter resolution."""

import numpy as np
import pytest

from skdp.utils import (
    add_intercept_column,
    check_generator,
    clip_rows,
    clip_targets,
    resolve_delta,
    safe_row_norms,
)


def test_clip_rows_bounds_norms_and_keeps_small_rows():
    rng = np.random.default_rng(0)
    X = rng.standard_t(1.5, size=(500, 3))
    Xc = clip_rows(X, 2.0)
    norms = np.linalg.norm(X, axis=1)
    assert np.all(np.linalg.norm(Xc, axis=1) <= 2.0 + 1e-12)
    np.testing.assert_array_equal(Xc[norms <= 2.0], X[norms <= 2.0])
    # Direction is kept.
    big = norms > 2.0
    np.testing.assert_allclose(
        Xc[big] / np.linalg.norm(Xc[big], axis=1)[:, None], X[big] / norms[big][:, None]
    )
    assert X is not Xc


def test_clip_rows_handles_huge_values():
    X = np.array([[1e300, -1e300], [0.0, 0.0]])
    assert np.isfinite(safe_row_norms(X)).all()
    Xc = clip_rows(X, 1.0)
    np.testing.assert_allclose(np.linalg.norm(Xc[0]), 1.0)
    np.testing.assert_array_equal(Xc[1], 0.0)


def test_clip_targets():
    np.testing.assert_array_equal(clip_targets([-3, 0.5, 3], 1.0), [-1, 0.5, 1])
    with pytest.raises(ValueError):
        clip_targets([1.0], -1)


def test_resolve_delta():
    assert resolve_delta(None, 10_000) == pytest.approx(10_000**-1.1)
    assert resolve_delta(1e-6, 100) == 1e-6
    with pytest.warns(UserWarning, match="1/n_samples"):
        resolve_delta(0.1, 100)
    with pytest.raises(ValueError, match="delta=0"):
        resolve_delta(0.0, 100, epsilon=1.0)
    assert resolve_delta(0.0, 100, epsilon=np.inf) == 0.0


def test_check_generator_is_fresh_and_reproducible():
    a, b = check_generator(3), check_generator(3)
    assert a is not b and a.integers(1 << 30) == b.integers(1 << 30)
    assert check_generator(None).integers(1 << 30) != check_generator(None).integers(
        1 << 30
    )
    rs = np.random.RandomState(0)
    assert isinstance(check_generator(rs), np.random.Generator)
    with pytest.raises(ValueError):
        check_generator("seed")


def test_add_intercept_column():
    np.testing.assert_array_equal(
        add_intercept_column(np.zeros((2, 1)), 0.5)[:, 1], 0.5
    )
