"""Private preprocessing (and a private Pipeline) on dask input, 2-process cluster.

The transformers' plan, accountant and noise are the numpy path's: the
workers only compute per-column sums of clipped values, so the same data and
``random_state`` give the same fitted statistics (up to the order of the
additions) and the same ``privacy_spent_``; ``transform`` is lazy.
"""

import numpy as np
import pytest
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler as SkStandardScaler

from skdp import HeavyTailedLogisticRegression, PrivacyAccountant, spent
from skdp.preprocessing import (
    MinMaxScaler,
    OneHotEncoder,
    SimpleImputer,
    StandardScaler,
)
from skdp.preprocessing._dask_fit import (
    observed_sums_on_workers,
    unit_moments_on_workers,
)
from skdp.preprocessing._imputer import _COUNT_WEIGHT
from skdp.preprocessing._moments import moments_sensitivity

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

CHUNKS = 700  # uneven last chunk on purpose
BOUNDS = ([-8.0, -6.0, -10.0], [8.0, 12.0, 10.0])


def _data(n=3000, seed=0, missing=0.0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, 3)) * [2.0, 3.0, 1.0] + [0.0, 3.0, -1.0]
    if missing:
        X[rng.random(X.shape) < missing] = np.nan
    return X


def _dask(X):
    return da.from_array(X, chunks=(CHUNKS, -1))


def _step(cls, **kw):
    params = dict(epsilon=1.0, delta=1e-6, random_state=3)
    if cls is not OneHotEncoder:
        params["bounds"] = BOUNDS
    params.update(kw)
    return cls(**params)


@pytest.mark.parametrize(
    "cls, kw, missing",
    [
        (StandardScaler, {}, 0.0),
        (StandardScaler, {"epsilon": np.inf}, 0.0),
        (StandardScaler, {"with_std": False, "clip": False}, 0.0),
        (SimpleImputer, {"strategy": "mean"}, 0.1),
        (SimpleImputer, {"strategy": "mean", "epsilon": np.inf}, 0.1),
        (SimpleImputer, {"fill_value": -1.0}, 0.1),
        (MinMaxScaler, {"feature_range": (-1, 1)}, 0.0),
        # private bounds: the quantiles' cell counts summed per chunk
        (StandardScaler, {"bounds": None}, 0.0),
        (MinMaxScaler, {"bounds": None, "clip": False}, 0.0),
    ],
)
def test_dask_fit_matches_numpy(client, cls, kw, missing):
    X = _data(missing=missing)
    # A fresh ledger per fit gives both the same stream: without one, a
    # seeded stream mixes in the data, and a dask collection enters by its
    # graph token (it is never computed on the driver to be hashed).
    a = _step(cls, **kw, accountant=PrivacyAccountant(np.inf, 0.5)).fit(X)
    b = _step(cls, **kw, accountant=PrivacyAccountant(np.inf, 0.5)).fit(_dask(X))
    attrs = {
        StandardScaler: ["mean_", "var_", "scale_"],
        SimpleImputer: ["statistics_"],
        MinMaxScaler: ["scale_", "min_", "data_min_", "data_max_"],
    }[cls]
    for name in attrs:
        if getattr(a, name) is None:
            assert getattr(b, name) is None
        else:
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-12)
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.privacy_plan_ == b.privacy_plan_
    assert b.n_features_in_ == 3
    out = b.transform(_dask(X))
    assert isinstance(out, da.Array)  # lazy
    np.testing.assert_allclose(out.compute(), a.transform(X), rtol=1e-12, atol=1e-14)
    if hasattr(b, "inverse_transform"):
        back = b.inverse_transform(out)
        assert isinstance(back, da.Array)
        np.testing.assert_allclose(
            back.compute(), a.inverse_transform(a.transform(X)), rtol=1e-12, atol=1e-12
        )
    if np.isfinite(b.epsilon) and not a._fit_is_free():
        # the noise matters: another seed gives other statistics
        c = _step(cls, random_state=4, **kw).fit(_dask(X))
        assert not np.allclose(getattr(c, attrs[0]), getattr(b, attrs[0]))


def test_dask_standard_scaler_at_infinite_epsilon_is_sklearns(client):
    X = _data()
    ours = _step(StandardScaler, bounds=(-1e3, 1e3), epsilon=np.inf).fit(_dask(X))
    ref = SkStandardScaler().fit(X)
    np.testing.assert_allclose(ours.mean_, ref.mean_, rtol=1e-10)
    np.testing.assert_allclose(ours.scale_, ref.scale_, rtol=1e-8)
    np.testing.assert_allclose(
        ours.transform(_dask(X)).compute(), ref.transform(X), rtol=1e-8, atol=1e-9
    )


def test_dask_one_hot_encoder_matches_numpy(client):
    rng = np.random.default_rng(0)
    C = np.column_stack(
        [rng.choice(["F", "M"], 2000), rng.choice(["a", "b", "c", "zz"], 2000)]
    )
    cats = [["F", "M"], ["a", "b", "c"]]  # "zz" is undeclared
    for kw in ({}, {"drop": "first"}):
        a = OneHotEncoder(categories=cats, **kw).fit(C)
        b = OneHotEncoder(categories=cats, **kw).fit(da.from_array(C, chunks=CHUNKS))
        assert b.privacy_spent_ == (0.0, 0.0) and b.n_features_in_ == 2
        out = b.transform(da.from_array(C, chunks=CHUNKS))
        assert isinstance(out, da.Array)
        np.testing.assert_array_equal(out.compute(), a.transform(C))
    with pytest.raises(ValueError, match="outside the declared categories"):
        OneHotEncoder(categories=cats, handle_unknown="error").fit(
            da.from_array(C, chunks=CHUNKS)
        )
    ok = C[C[:, 1] != "zz"]
    OneHotEncoder(categories=cats, handle_unknown="error").fit(
        da.from_array(ok, chunks=CHUNKS)
    )


def test_shared_accountant_counts_dask_and_numpy_fits(client):
    X = _data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    _step(StandardScaler, accountant=acc, delta=None).fit(_dask(X))
    assert len(acc.ledger) == 1
    one = acc.spent_epsilon
    _step(StandardScaler, accountant=acc, delta=None).fit(X)
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon > one * 1.2  # both releases are composed


def test_gathered_unit_moments_move_by_at_most_sensitivity(client):
    """Coupled run: one row moved from every lower bound to every upper bound
    (and beyond: clipped on its worker); the gathered pre-noise statistic moves
    by at most sqrt(d) / n, and attains it."""
    X = _data(n=2000)
    lower, upper = (np.asarray(b) for b in BOUNDS)
    X1, X2 = X.copy(), X.copy()
    X1[1234], X2[1234] = lower, upper * 100.0
    n, d = X.shape
    sens = moments_sensitivity(n, d)
    for with_var in (True, False):
        s1 = unit_moments_on_workers(_dask(X1), lower, upper, with_var)
        s2 = unit_moments_on_workers(_dask(X2), lower, upper, with_var)
        move = np.linalg.norm(s1 - s2)
        assert move <= sens * (1 + 1e-9)
        assert move >= 0.999 * sens
    # the gathered statistic is the one-process statistic
    from skdp.preprocessing._moments import private_moments

    *_, ref = private_moments(
        X1, lower, upper, 0.0, with_var=True, rng=np.random.default_rng(0)
    )
    got = unit_moments_on_workers(_dask(X1), lower, upper, True)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)


def test_gathered_observed_sums_move_by_at_most_sensitivity(client):
    X = _data(n=2000, missing=0.1)
    lower, upper = (np.asarray(b) for b in BOUNDS)
    n, d = X.shape
    sens = moments_sensitivity(n, d)
    base = X.copy()
    base[1234] = upper * 50.0  # clipped to the upper bound: u = 1/2
    for other in (lower - 1.0, np.full(d, np.nan)):  # u = -1/2, or missing
        X2 = base.copy()
        X2[1234] = other
        s1 = observed_sums_on_workers(_dask(base), lower, upper, _COUNT_WEIGHT)
        s2 = observed_sums_on_workers(_dask(X2), lower, upper, _COUNT_WEIGHT)
        move = np.linalg.norm(s1 - s2)
        assert move <= sens * (1 + 1e-9)
        assert move >= 0.999 * sens
    from skdp.preprocessing._imputer import private_observed_mean

    _, ref = private_observed_mean(
        base, lower, upper, 0.0, rng=np.random.default_rng(0)
    )
    got = observed_sums_on_workers(_dask(base), lower, upper, _COUNT_WEIGHT)
    np.testing.assert_allclose(got, ref, rtol=1e-12, atol=1e-15)


def test_gathered_column_counts_move_by_at_most_one(client):
    """Coupled run for the private bounds: one record replaced (from the
    bulk to far outside the range, clipped on its worker); every gathered
    cell count of every column moves by at most one (the utility's
    sensitivity), attained, and the counts are the one-process ones."""
    from skdp.preprocessing._bounds import QUANTILE_RANGE
    from skdp.solvers._distributed import _edge_counts, column_edge_counts_on_workers

    X = _data(n=2000)
    X2 = X.copy()
    X2[1234] = [1e300, -1e300, 5e12]
    c1 = column_edge_counts_on_workers(_dask(X), QUANTILE_RANGE, transform=np.arcsinh)
    c2 = column_edge_counts_on_workers(_dask(X2), QUANTILE_RANGE, transform=np.arcsinh)
    assert np.max(np.abs(c1 - c2)) == 1
    edges = np.linspace(*QUANTILE_RANGE, 2049)
    ref = _edge_counts(np.arcsinh(X[:, 1]), edges, *QUANTILE_RANGE, False)
    np.testing.assert_array_equal(c1[1], ref)


def test_refusals_before_anything_is_charged(client):
    X = _data(n=1500)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    for est in (
        StandardScaler(epsilon=np.inf, accountant=acc),  # exact quantiles
        MinMaxScaler(epsilon=np.inf, accountant=acc),
        OneHotEncoder(categories=[[0.0, 1.0]], sparse_output=True, accountant=acc),
    ):
        with pytest.raises(TypeError, match="Distributed fits"):
            est.fit(_dask(X if not isinstance(est, OneHotEncoder) else X[:, :1]))
    bad = X.copy()
    bad[1000, 2] = np.inf
    for est in (
        _step(StandardScaler, accountant=acc, delta=None),
        _step(SimpleImputer, strategy="mean", accountant=acc, delta=None),
    ):
        with pytest.raises(ValueError, match="infinity"):
            est.fit(_dask(bad))
    with pytest.raises(ValueError, match="bounds"):
        SimpleImputer(strategy="mean", accountant=acc).fit(_dask(X))
    assert acc.ledger == []


@pytest.mark.parametrize(
    "cls, kw, missing, passes",
    [
        (StandardScaler, {}, 0.0, 1),
        (StandardScaler, {"with_std": False}, 0.0, 1),
        (SimpleImputer, {"strategy": "mean"}, 0.1, 1),
        # private bounds: the cell counts' pass, then the moments' pass
        (StandardScaler, {"bounds": None}, 0.0, 2),
        (MinMaxScaler, {"bounds": None}, 0.0, 1),
    ],
)
def test_fits_refuse_bad_values_in_their_statistics_pass(
    client, graph_runs, cls, kw, missing, passes
):
    """The nan/inf flags come from the first statistics pass (no validation
    pass of its own), the plan is charged after it; same model and charge
    as numpy. A bad value is refused with nothing charged; an over-budget
    fit runs no graph."""
    from skdp import BudgetExceededError

    X = _data(missing=missing)
    runs = graph_runs
    acc, other = (PrivacyAccountant(epsilon=10.0, delta=1e-5) for _ in range(2))
    b = _step(cls, accountant=acc, delta=None, **kw).fit(_dask(X))
    assert len(runs) == passes and len(acc.ledger) == 1
    a = _step(cls, accountant=other, delta=None, **kw).fit(X)
    for name in ("mean_", "scale_", "statistics_", "data_min_", "data_max_"):
        if getattr(a, name, None) is not None:
            np.testing.assert_allclose(getattr(b, name), getattr(a, name), rtol=1e-9)
    assert a.privacy_spent_ == b.privacy_spent_
    assert acc.ledger[0][1] == other.ledger[0][1]
    bad = X.copy()
    bad[1200, 1] = np.inf if cls is SimpleImputer else np.nan
    fresh = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="NaN|infinity"):
        _step(cls, accountant=fresh, delta=None, **kw).fit(_dask(bad))
    assert len(runs) == passes + 1 and fresh.ledger == []
    small = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    with pytest.raises(BudgetExceededError, match="No data was used"):
        _step(cls, accountant=small, delta=None, **kw).fit(_dask(X))
    assert len(runs) == passes + 1 and small.ledger == []


def test_fits_never_gather_rows_on_the_driver(client, monkeypatch):
    X = _data(n=1500, missing=0.05)
    Xd = _dask(X)

    class Gathered(BaseException):  # not swallowed by `except Exception`
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)
    imp = _step(SimpleImputer, strategy="mean").fit(Xd)
    filled = imp.transform(Xd)
    for cls in (StandardScaler, MinMaxScaler):
        for bounds in (BOUNDS, None):  # declared, or private (cell counts)
            est = _step(cls, bounds=bounds).fit(filled)
            assert isinstance(est.transform(filled), da.Array)
    assert np.all(np.isfinite(imp.statistics_))


def _pipeline(acc=None):
    return make_pipeline(
        _step(SimpleImputer, strategy="mean", epsilon=0.2, accountant=acc),
        _step(StandardScaler, epsilon=0.3, accountant=acc),
        HeavyTailedLogisticRegression(
            classes=[0, 1],
            epsilon=1.0,
            delta=1e-6,
            max_iter=8,
            accountant=acc,
            random_state=5,
        ),
    )


def test_private_pipeline_on_dask_matches_numpy(client):
    """Imputer, scaler and classifier fitted end to end on dask input: every
    step's sums are taken on the workers, the model is the numpy pipeline's,
    the shared accountant counts every step, and predict is lazy."""
    X = _data(n=3000, seed=1, missing=0.05)
    rng = np.random.default_rng(2)
    y = (np.nan_to_num(X[:, 0]) + rng.normal(size=X.shape[0]) > 0).astype(int)
    acc_np = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    acc_dk = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    a = _pipeline(acc_np).fit(X, y)
    b = _pipeline(acc_dk).fit(_dask(X), da.from_array(y, chunks=CHUNKS))
    fa, fb = a[-1], b[-1]
    np.testing.assert_allclose(fb.coef_, fa.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(fb.intercept_, fa.intercept_, rtol=1e-9, atol=1e-12)
    assert len(acc_dk.ledger) == len(acc_np.ledger) == 3
    assert acc_dk.spent_epsilon == acc_np.spent_epsilon
    assert spent(b) == spent(a)
    for method in ("predict", "predict_proba"):
        out = getattr(b, method)(_dask(X))
        assert isinstance(out, da.Array)
        np.testing.assert_allclose(out.compute(), getattr(a, method)(X))


def test_private_pipeline_never_gathers_rows_on_the_driver(client, monkeypatch):
    X = _data(n=1500, seed=1, missing=0.05)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int)
    Xd, yd = _dask(X), da.from_array(y, chunks=CHUNKS)

    class Gathered(BaseException):
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)
    pipe = _pipeline().fit(Xd, yd)
    assert np.all(np.isfinite(pipe[-1].coef_))
    assert isinstance(pipe.predict(Xd), da.Array)
