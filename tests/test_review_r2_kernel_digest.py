"""Review R2: the branch-free clip of the numba gradient kernel and the
memoryview fit digest.

- ``clipped_gradient_sum``: replacing one record (finite, subnormal,
  near-overflow rows, huge targets, derivatives exactly at the cap) moves the
  sum by at most ``2 C``, compiled and as plain Python (what
  ``NUMBA_DISABLE_JIT=1`` runs), and the compiled result equals the
  two-comparison clip it replaced bit for bit.
- ``base._fit_digest`` hashes the same bytes as ``tobytes()`` for every
  layout and dtype (so inherited-seed clone streams are unchanged).
"""

import numpy as np
import pytest
import scipy.sparse as sp

from skdp.base import _fit_digest, _raw
from skdp.linear_model import HeavyTailedLinearRegression
from skdp.losses import HuberLoss, LogisticLoss, SquaredLoss
from skdp.solvers.heavy_tailed import kernels
from skdp.utils._sparse import row_norms

_BIG, _TINY = 1.7e308, 5e-324
_ROWS = [
    ([0.0, 0.0, 0.0], 1e300),
    ([_TINY, 0.0, 0.0], 1e308),
    ([1e-310, 1e-310, 0.0], -_BIG),
    ([1e-200, 0.0, 0.0], _BIG),
    ([_BIG, _BIG, 0.0], -_BIG),
    ([_BIG, 1.0, 1.0], 5.0),
    ([1e154, 1e154, 1e154], 1e300),
    ([2.2e-308, 0.0, 0.0], -_BIG),
    ([1.0, 2.0, 3.0], 1e300),
]


def _inv_norms(X):
    # as clipped_dp_gd builds them: 0 skips a row (zero or subnormal norm)
    norms = row_norms(X)
    with np.errstate(all="ignore"):
        inv = np.where(norms > 0, 1.0 / norms, 0.0)
    inv[~np.isfinite(inv)] = 0.0
    return inv


def _branching_reference(X, y, w, inv_norms, clip, code, tau):
    # the kernel before the branch-free clip (two comparisons)
    out = np.zeros(X.shape[1])
    for i in range(X.shape[0]):
        if inv_norms[i] == 0.0:
            continue
        z = 0.0
        for j in range(X.shape[1]):
            z += X[i, j] * w[j]
        g = _plain(kernels.glm_derivative)(z, y[i], code, tau)
        if g != g:
            continue
        cap = clip * inv_norms[i]
        if g > cap:
            g = cap
        elif g < -cap:
            g = -cap
        for j in range(X.shape[1]):
            out[j] += g * X[i, j]
    return out


def _plain(func):
    # the Python function numba compiled (what NUMBA_DISABLE_JIT=1 runs)
    return getattr(func, "py_func", func)


def _kernels():
    compiled = kernels._clipped_gradient_sum_numba
    return {"compiled": compiled, "plain": _plain(compiled)}


@pytest.mark.skipif(not kernels.HAVE_NUMBA, reason="numba kernel only")
@pytest.mark.parametrize("kind", ["compiled", "plain"])
@pytest.mark.parametrize("loss", [SquaredLoss(), HuberLoss(1.0), LogisticLoss()])
def test_branch_free_clip_keeps_the_replace_one_sensitivity(kind, loss):
    kernel = _kernels()[kind]
    code, tau = loss.kernel_args()
    rng = np.random.default_rng(0)
    for clip in (1e-12, 1e-3, 1.0, 1e6):
        for wscale in (0.0, 1.0, 1e100):
            X = rng.normal(size=(20, 3))
            y = rng.normal(size=20)
            if isinstance(loss, LogisticLoss):
                y = np.sign(y)
            w = rng.normal(size=3) * wscale
            with np.errstate(all="ignore"):
                base = kernel(X, y, w, _inv_norms(X), clip, code, tau)
            for row, target in _ROWS:
                if isinstance(loss, LogisticLoss):
                    target = 1.0 if target > 0 else -1.0
                X2, y2 = X.copy(), y.copy()
                X2[3], y2[3] = row, target
                with np.errstate(all="ignore"):
                    out = kernel(X2, y2, w, _inv_norms(X2), clip, code, tau)
                    moved = np.linalg.norm(out / clip - base / clip)
                    ref = _branching_reference(
                        X2, y2, w, _inv_norms(X2), clip, code, tau
                    )
                assert moved <= 2.0 * (1.0 + 1e-12)
                if kind == "compiled":
                    np.testing.assert_array_equal(out, ref)


@pytest.mark.skipif(not kernels.HAVE_NUMBA, reason="numba kernel only")
@pytest.mark.parametrize("kind", ["compiled", "plain"])
def test_derivatives_at_the_cap_are_kept_exactly(kind):
    # boundary: |loss'| equal to the cap, one ulp above and below
    kernel = _kernels()[kind]
    code, tau = SquaredLoss().kernel_args()
    clip = 0.75
    X = np.array([[0.6, 0.8]] * 6)  # unit rows: cap == clip
    y = np.array([clip, -clip, np.nextafter(clip, 2), -np.nextafter(clip, 2),
                  np.nextafter(clip, 0), -np.nextafter(clip, 0)])  # fmt: skip
    for i in range(6):
        out = kernel(
            X[i : i + 1], y[i : i + 1], np.zeros(2), np.ones(1), clip, code, tau
        )
        assert np.linalg.norm(out) <= clip * (1.0 + 1e-15)
        ref = _branching_reference(X[i : i + 1], y[i : i + 1], np.zeros(2), np.ones(1),
                                   clip, code, tau)  # fmt: skip
        np.testing.assert_array_equal(out, ref)


_ARRAYS = {
    "C": np.arange(35.0).reshape(7, 5),
    "F": np.asfortranarray(np.arange(35.0).reshape(7, 5)),
    "strided": np.arange(70.0).reshape(7, 10)[::2, 1::3],
    "reversed": np.arange(35.0).reshape(7, 5)[::-1],
    "float32": np.arange(10, dtype=np.float32),
    "big-endian": np.arange(10.0).astype(">f8"),
    "bool": np.arange(10) % 3 == 0,
    "unicode": np.array(["a", "bcd"]),
    "datetime": np.array(["2020-01-01", "2021-02-03"], dtype="datetime64[D]"),
    "structured": np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]),
    "empty": np.zeros((0, 3)),
    "0-d": np.asarray(3.0),
}


@pytest.mark.parametrize("name", sorted(_ARRAYS))
def test_memoryview_digest_hashes_the_tobytes_bytes(name):
    part = np.ascontiguousarray(_ARRAYS[name])
    assert bytes(_raw(part)) == part.tobytes()


def test_fit_digest_is_layout_and_sparse_format_independent():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(30, 4))
    y = rng.normal(size=30)
    est = HeavyTailedLinearRegression(random_state=0)
    assert _fit_digest(est, [X, y]) == _fit_digest(est, [np.asfortranarray(X), y])
    S = sp.random(30, 4, density=0.3, random_state=0, format="csc")
    assert _fit_digest(est, [S, y]) == _fit_digest(est, [S.tocsr(), y])
    assert _fit_digest(est, [X, y]) != _fit_digest(est, [X, y + 1e-12])
