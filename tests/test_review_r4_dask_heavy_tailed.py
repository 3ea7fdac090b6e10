"""Review R4: the large-n intercept correction and the scale floor on dask
input keep every row on the workers (DESIGN: distributed fits release only
sums) and give the numpy path's model."""

import numpy as np
import pytest

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

import skdp.solvers.heavy_tailed.known_lipschitz as kl  # noqa: E402
from skdp.linear_model import HeavyTailedLinearRegression  # noqa: E402

# dask and numpy fits compared noise for noise (see conftest.py)
pytestmark = pytest.mark.usefixtures("dask_input_shares_the_numpy_stream")


class Gathered(BaseException):  # not swallowed by `except Exception`
    pass


def _no_gather(monkeypatch, Xd):
    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)


def _fit_both(monkeypatch, X, y, chunk, seed=0):
    est_np = HeavyTailedLinearRegression(epsilon=1.0, random_state=seed).fit(X, y)
    Xd = da.from_array(X, chunks=(chunk, X.shape[1]))
    yd = da.from_array(y, chunks=chunk)
    _no_gather(monkeypatch, Xd)
    with dask.config.set(scheduler="synchronous"):
        est_da = HeavyTailedLinearRegression(epsilon=1.0, random_state=seed).fit(Xd, yd)
    np.testing.assert_allclose(est_da.coef_, est_np.coef_, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(
        est_da.intercept_, est_np.intercept_, rtol=1e-8, atol=1e-10
    )
    assert est_da.feature_scale_ == est_np.feature_scale_
    assert est_da.privacy_spent_ == est_np.privacy_spent_


def test_large_n_intercept_correction_stays_on_the_workers(monkeypatch):
    # n >= 1e4, max_iter="auto": the private intercept correction runs; its
    # residuals must not be gathered on the driver
    rng = np.random.default_rng(0)
    n = 10_000
    X = rng.normal(size=(n, 3))
    y = X @ np.ones(3) + rng.exponential(1.0, size=n)
    _fit_both(monkeypatch, X, y, 2500)


def test_scale_floor_on_dask_stays_on_the_workers(monkeypatch):
    # most rows tiny: the private feature scale collapses and the public
    # floor T / (16 sqrt d) raises it; on dask this gathered the rows and
    # then failed (numba kernel given a dask y) after the budget was spent
    rng = np.random.default_rng(0)
    n = 400
    X = rng.normal(size=(n, 5)) * np.where(rng.random((n, 1)) < 0.6, 1e-3, 1.0)
    y = X @ np.ones(5) + rng.exponential(1.0, size=n)
    hits = []
    orig = kl.floored_design

    def spy(*args):
        hits.append(1)
        return orig(*args)

    monkeypatch.setattr(kl, "floored_design", spy)
    # the floor fires on a draw of the private scale's noise: seed 4 is one
    # (seed 0 was, before issue 32 mixed the data into the stream)
    _fit_both(monkeypatch, X, y, 100, seed=4)
    assert len(hits) == 2  # the floor fired on both paths
