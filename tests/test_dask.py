"""Private fits on dask input, on a local 2-process cluster (loopback only).

The dask path only distributes the exact sums of clipped rows; the plan, the
accountant and every noise draw are the numpy path's, so the same data and
the same ``random_state`` give the same model (up to the order in which the
partial sums are added) and the same ``privacy_spent_``.
"""

import numpy as np
import pytest

from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
)
from skdp.losses import LogisticLoss, SquaredLoss
from skdp.privacy import PrivacyAccountant
from skdp.solvers._distributed import (
    _bisection_midpoints,
    bisection_counter,
    clipped_statistics,
    gradient_sum_on_workers,
)
from skdp.solvers.bilevel.ridge.stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
)
from skdp.solvers.heavy_tailed.kernels import clipped_gradient_sum
from skdp.utils import clip_rows, clip_targets

distributed = pytest.importorskip("distributed")
da = pytest.importorskip("dask.array")

CHUNKS = 700  # uneven last chunk on purpose


pytestmark = pytest.mark.usefixtures("dask_input_shares_the_numpy_stream")


def _data(n=3000, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, d))
    y = X @ np.linspace(1.0, -1.0, d) + 0.5 + rng.normal(size=n)
    return X, y


def _dask(X, y):
    return da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=CHUNKS)


def _ridge(**kw):
    params = dict(
        inner_solver="sufficient_statistics",
        feature_norm=3.0,
        target_bound=5.0,
        epsilon=1.0,
        delta=1e-6,
        max_iter=20,
        random_state=3,
    )
    params.update(kw)
    return BilevelRidge(**params)


def _assert_same_model(a, b):
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-7, atol=1e-9)
    np.testing.assert_allclose(a.alpha_, b.alpha_, rtol=1e-7)
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.n_features_in_ == b.n_features_in_


@pytest.mark.parametrize("tuning", ["bilevel", "risk_estimate"])
@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_bilevel_ridge_dask_matches_numpy(client, tuning, epsilon):
    X, y = _data()
    est_np = _ridge(tuning=tuning, epsilon=epsilon).fit(X, y)
    est_dk = _ridge(tuning=tuning, epsilon=epsilon).fit(*_dask(X, y))
    _assert_same_model(est_np, est_dk)
    if np.isfinite(epsilon):
        # the noise matters: another seed gives another model
        other = _ridge(tuning=tuning, random_state=4).fit(*_dask(X, y))
        assert not np.allclose(other.coef_, est_dk.coef_)


def test_bilevel_ridge_dask_refit_and_no_intercept(client):
    X, y = _data(seed=1)
    kw = dict(refit_share=0.3, fit_intercept=False)
    _assert_same_model(_ridge(**kw).fit(X, y), _ridge(**kw).fit(*_dask(X, y)))


def test_dask_dataframe_input(client):
    dd = pytest.importorskip("dask.dataframe")
    pd = pytest.importorskip("pandas")
    X, y = _data(seed=2)
    frame = pd.DataFrame(X, columns=[f"x{j}" for j in range(X.shape[1])])
    ddf = dd.from_pandas(frame, npartitions=3)
    dy = dd.from_pandas(pd.Series(y), npartitions=3)
    _assert_same_model(_ridge().fit(X, y), _ridge().fit(ddf, dy))


def test_predict_on_dask_is_lazy(client):
    X, y = _data()
    Xd, yd = _dask(X, y)
    est = _ridge().fit(Xd, yd)
    pred = est.predict(Xd)
    assert isinstance(pred, da.Array)
    np.testing.assert_allclose(pred.compute(), est.predict(X), rtol=1e-12)


def test_shared_accountant_counts_dask_and_numpy_fits(client):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    _ridge(accountant=acc, delta=None).fit(*_dask(X, y))
    assert len(acc.ledger) == 1
    one = acc.spent_epsilon
    _ridge(accountant=acc, delta=None).fit(X, y)
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon > one * 1.2  # both fits are composed


def test_gathered_clipped_sums_move_by_at_most_sensitivity(client):
    """Coupled run: replace one record by an extreme one; the gathered
    pre-noise sums move by at most their sensitivities, nearly attained."""
    X, y = _data(n=2000, d=3)
    A, B, c = 2.0, 3.0, 1.0
    X2, y2 = X.copy(), y.copy()
    # record 1234 (in the second chunk): a row of norm A along e0 with y = B,
    # replaced by 100x a row along e1 with y = -100 B (clipped on the worker)
    X[1234], y[1234] = [A, 0.0, 0.0], B
    X2[1234], y2[1234] = [0.0, 100 * A, 0.0], -100 * B
    (s1,) = clipped_statistics(*_dask(X, y), A, B, c)
    (s2,) = clipped_statistics(*_dask(X2, y2), A, B, c)
    assert s1.n_samples == s2.n_samples == 2000
    dg = np.triu(s1.gram - s2.gram)
    dg[-1, -1] = 0.0  # public corner n c**2
    gram_move, gram_sens = np.linalg.norm(dg), gram_sensitivity(1.0, c)
    mom_move, mom_sens = (
        np.linalg.norm(s1.moment - s2.moment),
        moment_sensitivity(1.0, 1.0, c),
    )
    assert gram_move <= gram_sens * (1 + 1e-12)
    assert mom_move <= mom_sens * (1 + 1e-12)
    assert gram_move >= 0.9 * gram_sens
    assert mom_move >= 0.85 * mom_sens
    assert abs(s1.target_sq - s2.target_sq) <= 1.0 + 1e-12  # B**2 in units of B
    # and the gathered sums are the one-process sums of the clipped rows
    ref = exact_statistics(
        clip_rows(X, A) / A, clip_targets(y, B) / B, intercept_scaling=c
    )
    np.testing.assert_allclose(s1.gram, ref.gram, rtol=1e-12)
    np.testing.assert_allclose(s1.moment, ref.moment, rtol=1e-12)


def test_unsupported_fits_reject_dask_before_spending(client):
    X, y = _data(n=500)
    Xd, yd = _dask(X, y)
    for est in (
        HeavyTailedLinearRegression(solver="onepass", epsilon=1.0, delta=1e-6),
        HeavyTailedLinearRegression(center=True, feature_norm=3.0, delta=1e-6),
        HeavyTailedLogisticRegression(solver="localized", classes=[0, 1]),
        HeavyTailedLogisticRegression(classes=[0, 1, 2], multi_class="ovr", delta=1e-6),
        _ridge(inner_solver="output_perturbation"),
    ):
        with pytest.raises(TypeError, match="sufficient_statistics"):
            est.fit(
                Xd, (yd > 0).astype(int) if "Logistic" in type(est).__name__ else yd
            )
    with pytest.raises(ValueError, match="classes="):
        HeavyTailedLogisticRegression(accountant=PrivacyAccountant(1.0, 1e-5)).fit(
            Xd, (yd > 0).astype(int)
        )
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="public `feature_norm`"):
        _ridge(feature_norm=None, accountant=acc, delta=None).fit(Xd, yd)
    assert acc.ledger == []


@pytest.mark.parametrize("tuning", ["bilevel", "risk_estimate"])
@pytest.mark.parametrize("where", ["X", "y"])
def test_non_finite_input_is_refused_before_charging(client, tuning, where):
    """As on the numpy path (threat_model.rst): nan/inf is refused before
    anything is charged to the accountant (from flags of the one statistics
    pass) and nothing is released."""
    X, y = _data(n=1500)
    if where == "X":
        X[1000, 1] = np.nan
    else:
        y[1200] = np.inf
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="NaN"):
        _ridge(tuning=tuning, accountant=acc, delta=None).fit(*_dask(X, y))
    assert acc.ledger == []
    with pytest.raises(ValueError, match="NaN|infinity"):
        _ridge(tuning=tuning, accountant=acc, delta=None).fit(X, y)
    assert acc.ledger == []


@pytest.mark.parametrize("tuning", ["bilevel", "risk_estimate"])
def test_sufficient_statistics_fit_reads_the_data_once(client, graph_runs, tuning):
    """The finiteness flags are computed in the same per-chunk pass as the
    exact sums: one graph run per fit, the same model and charge as numpy."""
    X, y = _data(n=2000)
    runs = graph_runs
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    b = _ridge(tuning=tuning, accountant=acc, delta=None).fit(*_dask(X, y))
    assert len(runs) == 1
    assert len(acc.ledger) == 1
    other = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    a = _ridge(tuning=tuning, accountant=other, delta=None).fit(X, y)
    _assert_same_model(a, b)
    assert a.privacy_spent_ == b.privacy_spent_
    assert acc.ledger[0][1] == other.ledger[0][1]


@pytest.mark.parametrize("tuning", ["bilevel", "risk_estimate"])
def test_over_budget_dask_fit_reads_nothing(client, graph_runs, tuning):
    """The one-pass fit charges after its pass, so an over-budget fit is
    refused before the pass (as on numpy): no graph runs, nothing charged."""
    from skdp import BudgetExceededError

    X, y = _data(n=1500)
    Xd, yd = _dask(X, y)
    runs = graph_runs
    acc = PrivacyAccountant(epsilon=0.5, delta=1e-5)
    with pytest.raises(BudgetExceededError, match="No data was used"):
        _ridge(tuning=tuning, accountant=acc, delta=None).fit(Xd, yd)
    assert runs == [] and acc.ledger == []
    finite = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(BudgetExceededError, match="not private"):
        _ridge(tuning=tuning, epsilon=np.inf, accountant=finite).fit(Xd, yd)
    assert runs == [] and finite.ledger == []


def test_fit_never_gathers_rows_on_the_driver(client, monkeypatch):
    """Converting the dask input to numpy on the driver would gather raw rows
    (e.g. to hash the fit's inputs): the fit must only gather sums."""
    X, y = _data(n=1500)
    Xd, yd = _dask(X, y)

    class Gathered(BaseException):  # not swallowed by `except Exception`
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)  # the guard is active
    for tuning in ("bilevel", "risk_estimate"):
        est = _ridge(tuning=tuning).fit(Xd, yd)
        assert np.all(np.isfinite(est.coef_))


# -- heavy-tailed GLMs (full-batch solver, every reduction on the workers) ----


def _heavy(cls, **kw):
    params = dict(epsilon=1.0, delta=1e-6, max_iter=8, random_state=5)
    if cls is HeavyTailedLogisticRegression:
        params["classes"] = [0, 1]
    params.update(kw)
    return cls(**params)


def _assert_same_glm(a, b):
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(a.clip_thresholds_, b.clip_thresholds_, rtol=1e-12)
    assert a.feature_scale_ == b.feature_scale_
    assert a.truncation_threshold_ == b.truncation_threshold_
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.n_features_in_ == b.n_features_in_


@pytest.mark.parametrize(
    "kw",
    [
        {},  # private feature scale, truncation, target scale and median
        {"loss": "huber", "fit_intercept": False},
        {"feature_norm": 4.0, "epsilon": np.inf},
    ],
)
def test_heavy_tailed_regression_dask_matches_numpy(client, kw):
    X, y = _data()
    est_np = _heavy(HeavyTailedLinearRegression, **kw).fit(X, y)
    est_dk = _heavy(HeavyTailedLinearRegression, **kw).fit(*_dask(X, y))
    _assert_same_glm(est_np, est_dk)
    pred = est_dk.predict(_dask(X, y)[0])
    assert isinstance(pred, da.Array)  # lazy
    np.testing.assert_allclose(pred.compute(), est_np.predict(X), rtol=1e-9)
    if np.isfinite(est_np.epsilon):
        other = _heavy(HeavyTailedLinearRegression, random_state=6, **kw)
        assert not np.allclose(other.fit(*_dask(X, y)).coef_, est_dk.coef_)


def test_heavy_tailed_logistic_dask_matches_numpy(client):
    X, y = _data(seed=3)
    labels = np.where(y > 0.5, 1, 0)
    Xd, _ = _dask(X, y)
    yd = da.from_array(labels, chunks=CHUNKS)
    est_np = _heavy(HeavyTailedLogisticRegression).fit(X, labels)
    est_dk = _heavy(HeavyTailedLogisticRegression).fit(Xd, yd)
    _assert_same_glm(est_np, est_dk)
    for method in ("predict", "predict_proba", "decision_function"):
        out = getattr(est_dk, method)(Xd)
        assert isinstance(out, da.Array)
        np.testing.assert_allclose(out.compute(), getattr(est_np, method)(X))


def test_heavy_tailed_shared_accountant_counts_dask_and_numpy_fits(client):
    X, y = _data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    _heavy(HeavyTailedLinearRegression, accountant=acc, delta=None).fit(*_dask(X, y))
    assert len(acc.ledger) == 1
    one = acc.spent_epsilon
    _heavy(HeavyTailedLinearRegression, accountant=acc, delta=None).fit(X, y)
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon > one * 1.2


@pytest.mark.parametrize("loss", [SquaredLoss(), LogisticLoss()])
def test_gathered_gradient_sum_moves_by_at_most_2C(client, loss):
    """Coupled run on dask input: replacing one record moves the gathered
    clipped gradient sum by at most 2 C (nearly attained), and a gathered
    count by at most 1; both equal the one-process values."""
    X, y = _data(n=2000, d=3)
    y = np.sign(y) if isinstance(loss, LogisticLoss) else y
    w, C = np.array([0.5, -0.2, 0.1]), 0.7
    X2, y2 = X.copy(), y.copy()
    # record 1234 (second chunk): a large row orthogonal to w (<x, w> = 0),
    # so flipping its label flips its gradient; both are clipped to C on the
    # worker
    X[1234], y[1234] = [10.0, 25.0, 0.0], -1.0
    X2[1234], y2[1234] = [10.0, 25.0, 0.0], 1.0
    inv = 1.0 / np.linalg.norm(X, axis=1)
    inv2 = 1.0 / np.linalg.norm(X2, axis=1)
    Xd, yd = _dask(X, y)
    Xd2, yd2 = _dask(X2, y2)
    ind, ind2 = da.from_array(inv, chunks=CHUNKS), da.from_array(inv2, chunks=CHUNKS)
    g1 = gradient_sum_on_workers(Xd, yd, w, ind, C, loss)
    g2 = gradient_sum_on_workers(Xd2, yd2, w, ind2, C, loss)
    move = np.linalg.norm(g1 - g2)
    assert move <= 2 * C * (1 + 1e-12)
    assert move >= 0.99 * 2 * C
    np.testing.assert_allclose(g1, clipped_gradient_sum(X, y, w, inv, C, loss))
    # the counts of the private quantiles: one record's value moves across
    # the search range; every gathered count moves by at most 1 (attained)
    v1, v2 = da.from_array(inv, chunks=CHUNKS), da.from_array(inv2, chunks=CHUNKS)
    v2[1234] = 1e9
    count1 = bisection_counter(v1, (0.0, 2.0), 6)
    count2 = bisection_counter(v2, (0.0, 2.0), 6)
    local = bisection_counter(inv, (0.0, 2.0), 6)
    mids = _bisection_midpoints(0.0, 2.0, 6)
    assert max(abs(count1(m) - count2(m)) for m in mids) == 1
    assert all(count1(m) == local(m) for m in mids)


def test_heavy_tailed_fits_never_gather_rows_on_the_driver(client, monkeypatch):
    X, y = _data(n=1500)
    Xd, yd = _dask(X, y)
    labels = da.from_array(np.where(y > 0.5, 1, 0), chunks=CHUNKS)

    class Gathered(BaseException):
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)
    for kw in ({}, {"feature_norm": 3.0, "loss": "huber"}):
        est = _heavy(HeavyTailedLinearRegression, **kw).fit(Xd, yd)
        assert np.all(np.isfinite(est.coef_))
    est = _heavy(HeavyTailedLogisticRegression).fit(Xd, labels)
    assert np.all(np.isfinite(est.coef_))
    est = _ridge(inner_solver="gd", tuning="path", inner_max_iter=12).fit(Xd, yd)
    assert np.all(np.isfinite(est.coef_))


def test_heavy_tailed_non_finite_and_unknown_labels_refused(client):
    X, y = _data(n=1500)
    X[1000, 1] = np.inf
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    with pytest.raises(ValueError, match="NaN"):
        _heavy(HeavyTailedLinearRegression, accountant=acc, delta=None).fit(
            *_dask(X, y)
        )
    X[1000, 1] = 0.0
    labels = da.from_array(np.where(y > 0.5, 1, 2), chunks=CHUNKS)
    with pytest.raises(ValueError, match="not in `classes`"):
        _heavy(HeavyTailedLogisticRegression, accountant=acc, delta=None).fit(
            _dask(X, y)[0], labels
        )
    assert acc.ledger == []


def test_other_private_estimators_refuse_dask_instead_of_gathering(client):
    """Their input validation would gather the rows: a clear error instead,
    naming the fits that run distributed, before anything is spent."""
    from skdp import MinimaxFairClassifier
    from skdp.model_selection import PrivateSearchCV
    from skdp.preprocessing import MinMaxScaler, StandardScaler

    X, y = _data(n=1000)
    Xd, yd = _dask(X, y)
    labels = (yd > 0).astype(int)
    groups = da.from_array(np.arange(1000) % 2, chunks=CHUNKS)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    fits = [
        (MinimaxFairClassifier(solver="nispp", accountant=acc), (Xd, labels), {}),
        (MinimaxFairClassifier(), (X, y > 0), {"sensitive_features": groups}),
        (StandardScaler(epsilon=np.inf, accountant=acc), (Xd,), {}),
        (MinMaxScaler(epsilon=np.inf, accountant=acc), (Xd,), {}),
        (
            PrivateSearchCV(
                HeavyTailedLinearRegression(), param_grid={"k": [2, 4]}, accountant=acc
            ),
            (Xd, yd),
            {},
        ),
    ]
    fits.append((_heavy(HeavyTailedLinearRegression, accountant=acc), (X, yd), {}))
    for est, args, kwargs in fits:
        with pytest.raises(TypeError, match="Distributed fits: BilevelRidge"):
            est.fit(*args, **kwargs)
    assert acc.ledger == []
    # a fitted scaler transforms dask rows lazily (tests/test_dask_preprocessing.py)
    scaler = StandardScaler(epsilon=np.inf).fit(X)
    assert isinstance(scaler.transform(Xd), da.Array)


def test_refusal_message_names_every_distributed_fit(client):
    """The refusal's list of distributed fits is true: it names every
    estimator whose fit handles dask input, multinomial logistic regression
    and the preprocessing steps, and the named configurations do fit on dask
    rows (nothing refused)."""
    from skdp.preprocessing import (
        MinMaxScaler,
        OneHotEncoder,
        SimpleImputer,
        StandardScaler,
    )
    from skdp.solvers._distributed import DASK_ESTIMATORS

    X, y = _three_classes(n=1500)
    Xd, yd = da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=CHUNKS)
    ovr = _heavy(HeavyTailedLogisticRegression, classes=[0, 1, 2], multi_class="ovr")
    with pytest.raises(TypeError, match="Distributed fits") as info:
        ovr.fit(Xd, yd)
    message = str(info.value)
    for name in DASK_ESTIMATORS:
        assert name in message
    assert "multinomial" in message
    assert "binary HeavyTailedLogisticRegression" not in message
    assert "preprocessing" in message
    # the configurations it names run on dask
    multi = _heavy(HeavyTailedLogisticRegression, classes=[0, 1, 2]).fit(Xd, yd)
    assert multi.coef_.shape == (3, 3)
    bounds = ([-10.0] * 3, [10.0] * 3)
    steps = [
        StandardScaler(bounds=bounds, epsilon=1.0, delta=1e-6, random_state=0),
        MinMaxScaler(bounds=bounds, epsilon=1.0, delta=1e-6, random_state=0),
        SimpleImputer(strategy="constant"),
        SimpleImputer(strategy="mean", bounds=bounds, epsilon=1.0, delta=1e-6),
    ]
    for step in steps:
        assert isinstance(step.fit(Xd).transform(Xd), da.Array)
    codes = da.from_array((y[:, None] == 1).astype(float), chunks=(CHUNKS, -1))
    enc = OneHotEncoder(categories=[[0.0, 1.0]], sparse_output=False).fit(codes)
    assert enc.transform(codes).shape == (1500, 2)


@pytest.mark.parametrize(
    "kw",
    [
        {"feature_norm": None, "target_bound": None},  # private scales
        {"tuning": "risk_estimate"},  # public bounds
    ],
)
def test_bilevel_ridge_gd_dask_matches_numpy(client, kw):
    """inner_solver="gd" runs the heavy-tailed solver's distributed path (and
    the selection's clipped loss differences are summed per chunk)."""
    X, y = _data(seed=4)
    params = dict(inner_solver="gd", inner_max_iter=12, **kw)
    params.setdefault("tuning", "path")
    est_np = _ridge(**params).fit(X, y)
    est_dk = _ridge(**params).fit(*_dask(X, y))
    _assert_same_model(est_np, est_dk)


# -- multinomial HeavyTailedLogisticRegression: d x K clipped sums per chunk ----


def _three_classes(n=3000, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(4, size=(n, 3))
    score = X[:, 0] + 0.5 * X[:, 1] + 0.5 * rng.normal(size=n)
    return X, np.digitize(score, [-0.5, 0.8])


@pytest.mark.parametrize(
    "kw",
    [
        {},  # private feature scale, truncation and clip levels
        {"epsilon": np.inf, "feature_norm": 4.0},
        {"fit_intercept": False, "classes": ["a", "b", "c"]},
    ],
)
def test_multinomial_logistic_dask_matches_numpy(client, kw):
    X, y = _three_classes()
    if "classes" in kw:
        y = np.asarray(kw["classes"])[y]
    kw = {"classes": [0, 1, 2], **kw}
    est_np = _heavy(HeavyTailedLogisticRegression, **kw).fit(X, y)
    Xd = da.from_array(X, chunks=(CHUNKS, -1))
    est_dk = _heavy(HeavyTailedLogisticRegression, **kw).fit(
        Xd, da.from_array(y, chunks=CHUNKS)
    )
    _assert_same_glm(est_np, est_dk)
    assert est_dk.coef_.shape == (3, 3)
    for method in ("predict", "predict_proba", "decision_function"):
        out = getattr(est_dk, method)(Xd)
        assert isinstance(out, da.Array)
        ref = getattr(est_np, method)(X)
        if method == "predict":
            np.testing.assert_array_equal(out.compute(), ref)
        else:
            np.testing.assert_allclose(out.compute(), ref, rtol=1e-9, atol=1e-12)
    if np.isfinite(est_np.epsilon):
        other = _heavy(HeavyTailedLogisticRegression, random_state=6, **kw)
        other.fit(Xd, da.from_array(y, chunks=CHUNKS))
        assert not np.allclose(other.coef_, est_dk.coef_)


def test_multinomial_shared_accountant_and_no_gather(client, monkeypatch):
    X, y = _three_classes(n=1500)
    Xd, yd = da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=CHUNKS)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    kw = dict(classes=[0, 1, 2], accountant=acc, delta=None)
    _heavy(HeavyTailedLogisticRegression, **kw).fit(X, y)
    one = acc.spent_epsilon

    class Gathered(BaseException):
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)
    est = _heavy(HeavyTailedLogisticRegression, **kw).fit(Xd, yd)
    assert np.all(np.isfinite(est.coef_))
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon > one * 1.2
    with pytest.raises(ValueError, match="not in `classes`"):
        _heavy(HeavyTailedLogisticRegression, **kw).fit(Xd, yd + 1)
    assert len(acc.ledger) == 2  # refused before anything was charged


def test_gathered_multinomial_gradient_sum_moves_by_at_most_2C(client):
    """Coupled run: one record's label changed (same large row); the d x K
    clipped gradient sum gathered from the workers moves by at most 2 C,
    nearly attains it, and equals the one-process sum."""
    from skdp.solvers._distributed import multinomial_gradient_sum_on_workers
    from skdp.solvers.heavy_tailed.multinomial import (
        clipped_multinomial_gradient_sum,
    )

    X, y = _three_classes(n=2000)
    W, C = np.zeros((3, 3)), 0.8
    X[1234], y[1234] = [30.0, 40.0, 0.0], 0
    y2 = y.copy()
    y2[1234] = 1
    norms = np.linalg.norm(X, axis=1)

    def gathered(labels):
        return multinomial_gradient_sum_on_workers(
            da.from_array(X, chunks=(CHUNKS, -1)),
            da.from_array(labels, chunks=CHUNKS),
            W,
            da.from_array(norms, chunks=CHUNKS),
            C,
        )

    (g1, n1), (g2, _) = gathered(y), gathered(y2)
    move = np.linalg.norm(g1 - g2)
    assert move <= 2 * C * (1 + 1e-12)
    # at W = 0 the two residuals are 120 degrees apart: sqrt(3) C
    assert move >= 0.99 * np.sqrt(3) * C
    ref, ref_norms = clipped_multinomial_gradient_sum(X, y, W, norms, C)
    np.testing.assert_allclose(g1, ref, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(n1.compute(), ref_norms, rtol=1e-12)


# -- MinimaxFairClassifier(solver="gda"): per-step stacked sums on the workers --


def _fair_data(n=1600, classes=2, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    g = rng.integers(0, 2, n)
    score = X[:, 0] + 0.7 * g + rng.normal(size=n)
    y = np.digitize(score, [0.0] if classes == 2 else [-0.5, 0.8])
    return X, y, g


def _fair(**kw):
    from skdp import MinimaxFairClassifier

    params = dict(
        solver="gda",
        feature_norm=3.0,
        classes=[0, 1],
        groups=[0, 1],
        epsilon=1.0,
        delta=1e-6,
        max_iter=12,
        random_state=5,
    )
    params.update(kw)
    return MinimaxFairClassifier(**params)


def _fair_dask(X, y, g):
    return (
        da.from_array(X, chunks=(CHUNKS, -1)),
        da.from_array(y, chunks=CHUNKS),
        da.from_array(g, chunks=CHUNKS),
    )


@pytest.mark.parametrize(
    "classes, kw",
    [
        (2, {}),  # priors estimated (noisy group counts summed over chunks)
        (2, {"epsilon": np.inf, "fit_intercept": False}),
        (3, {"classes": [0, 1, 2], "group_priors": [0.6, 0.4]}),  # multinomial
    ],
)
def test_minimax_fair_gda_dask_matches_numpy(client, classes, kw):
    X, y, g = _fair_data(classes=classes)
    a = _fair(**kw).fit(X, y, sensitive_features=g)
    Xd, yd, gd = _fair_dask(X, y, g)
    b = _fair(**kw).fit(Xd, yd, sensitive_features=gd)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(a.group_weights_, b.group_weights_, rtol=1e-7)
    np.testing.assert_allclose(a.group_priors_, b.group_priors_, rtol=1e-12)
    assert a.privacy_spent_ == b.privacy_spent_
    assert a.n_features_in_ == b.n_features_in_ == 3
    np.testing.assert_array_equal(a.predict(X), b.predict(X))


@pytest.mark.parametrize("classes", [2, 3])
def test_minimax_fair_private_feature_norm_on_dask_matches_numpy(client, classes):
    """feature_norm=None: the norm bound's noisy bisection on the row norms
    counts per chunk; the same release, the same model."""
    kw = {"feature_norm": None}
    if classes == 3:
        kw.update(classes=[0, 1, 2], group_priors=[0.6, 0.4])
    X, y, g = _fair_data(classes=classes, seed=2)
    a = _fair(**kw).fit(X, y, sensitive_features=g)
    Xd, yd, gd = _fair_dask(X, y, g)
    b = _fair(**kw).fit(Xd, yd, sensitive_features=gd)
    assert a.feature_norm_ == b.feature_norm_
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10)
    np.testing.assert_allclose(a.intercept_, b.intercept_, rtol=1e-7, atol=1e-10)
    assert a.privacy_spent_ == b.privacy_spent_
    other = _fair(random_state=9, **kw).fit(Xd, yd, sensitive_features=gd)
    assert other.feature_norm_ != b.feature_norm_


@pytest.mark.parametrize("classes", [2, 3])
def test_minimax_fair_small_n_default_norm_on_dask_matches_numpy(client, classes):
    """Too few rows for the norm quantile: the dask path follows the plan
    (public default sqrt(d), the histogram gets the whole estimation share)."""
    kw = {"feature_norm": None, "epsilon": 1.0}
    if classes == 3:
        kw.update(classes=[0, 1, 2])
    X, y, g = _fair_data(n=120, classes=classes, seed=3)
    with pytest.warns(UserWarning, match="sqrt"):
        a = _fair(**kw).fit(X, y, sensitive_features=g)
    Xd, yd, gd = _fair_dask(X, y, g)
    with pytest.warns(UserWarning, match="sqrt"):
        b = _fair(**kw).fit(Xd, yd, sensitive_features=gd)
    assert a.feature_norm_ == b.feature_norm_ == np.sqrt(3)
    np.testing.assert_allclose(a.group_priors_, b.group_priors_, rtol=1e-12)
    np.testing.assert_allclose(a.coef_, b.coef_, rtol=1e-7, atol=1e-10)
    assert a.privacy_spent_ == b.privacy_spent_


def test_distributed_edge_counts_move_by_one(client):
    """One replaced record moves each gathered cell count of the chunked
    quantile counts by at most one (attained): the utility's sensitivity 1."""
    from skdp.solvers._distributed import _edge_counts

    rng = np.random.default_rng(0)
    v = np.abs(rng.standard_t(3, size=2500)) + 1e-3
    edges = np.linspace(np.log(1e-6), np.log(1e6), 2049)
    v2 = v.copy()
    v2[1234] = 1e5  # from the bulk to the top of the range

    def gathered(values):
        import dask

        blocks = da.from_array(values, chunks=CHUNKS).to_delayed().ravel()
        count = dask.delayed(_edge_counts)
        return sum(dask.compute(*[count(b, edges, 1e-6, 1e6, True) for b in blocks]))

    c1, c2 = gathered(v), gathered(v2)
    assert np.max(np.abs(c1 - c2)) == 1


def test_minimax_fair_shared_accountant_counts_dask_and_numpy_fits(client):
    X, y, g = _fair_data()
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    _fair(accountant=acc, delta=None).fit(
        *_fair_dask(X, y, g)[:2], sensitive_features=_fair_dask(X, y, g)[2]
    )
    assert len(acc.ledger) == 1
    one = acc.spent_epsilon
    _fair(accountant=acc, delta=None).fit(X, y, sensitive_features=g)
    assert len(acc.ledger) == 2
    assert acc.spent_epsilon > one * 1.2


@pytest.mark.parametrize("n_classes", [None, 3])
def test_gathered_stacked_statistic_moves_by_at_most_its_sensitivity(client, n_classes):
    """Coupled run on dask input: one record replaced (new row, label and
    group), the same coefficients and weights; the statistic summed over the
    workers moves by at most ``stacked_sensitivity`` and nearly attains it."""
    from skdp.solvers._distributed import record_sum
    from skdp.solvers.saddle_point.gda import (
        stacked_sensitivity,
        stacked_statistic,
        stacked_statistic_multinomial,
    )

    rng = np.random.default_rng(1)
    n, p, m = 1500, 4, 2
    X = rng.normal(size=(n, p))
    g = (np.arange(n) % m).astype(np.intp)
    a = np.array([0.5, 2.0])  # record weights q_g / pi_g
    clip, loss_bound, lam = 1.0, 2.0, 0.7
    coef = np.zeros(p) if n_classes is None else np.zeros((p, n_classes))
    if n_classes is None:
        y = np.where(rng.random(n) < 0.5, 1.0, -1.0)
        func = stacked_statistic
        # opposite clipped gradients a_g C of the heaviest group: 2 a_max C
        attained = 0.9
    else:
        y = rng.integers(0, n_classes, n).astype(np.intp)
        func = stacked_statistic_multinomial
        # at W = 0 two labels' residuals are at 120 degrees: sqrt(3) a_max C
        attained = 0.8
    X[0], y[0], g[0] = 40.0, 1 if n_classes else 1.0, 1
    X2, y2, g2 = X.copy(), y.copy(), g.copy()
    y2[0] = 0 if n_classes else -1.0  # same row and group, another label

    def released(X, y, g):
        Xd = da.from_array(X, chunks=(CHUNKS, -1))
        norms = da.from_array(np.linalg.norm(X, axis=1), chunks=CHUNKS)
        return record_sum(
            func,
            (Xd, da.from_array(y, chunks=CHUNKS), da.from_array(g, chunks=CHUNKS)),
            m,
            coef,
            a,
            clip,
            loss_bound,
            lam,
            chunked={"row_norms": norms},
        )

    s1, s2 = released(X, y, g), released(X2, y2, g2)
    np.testing.assert_allclose(
        s1, func(X, y, g, m, coef, a, clip, loss_bound, lam), rtol=1e-10
    )
    move = np.linalg.norm(s1 - s2)
    bound = stacked_sensitivity(a, clip, lam * loss_bound)
    assert move <= bound * (1 + 1e-12)
    assert move >= attained * bound


def test_minimax_fair_never_gathers_rows_on_the_driver(client, monkeypatch):
    X, y, g = _fair_data(n=1000)
    Xd, yd, gd = _fair_dask(X, y, g)

    class Gathered(BaseException):
        pass

    def gather(self, *args, **kwargs):
        raise Gathered("a dask input was converted to numpy on the driver")

    monkeypatch.setattr(type(Xd), "__array__", gather)
    with pytest.raises(Gathered):
        np.asarray(Xd)
    for kw in ({}, {"feature_norm": None}):
        est = _fair(**kw).fit(Xd, yd, sensitive_features=gd)
        assert np.all(np.isfinite(est.coef_))


def test_minimax_fair_dask_refusals_before_spending(client):
    X, y, g = _fair_data(n=1000)
    Xd, yd, gd = _fair_dask(X, y, g)
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
    for kw in (
        {"solver": "nseg"},
        {"feature_norm": None, "epsilon": np.inf},
        {"center": True},
    ):
        with pytest.raises(TypeError, match="Distributed fits"):
            _fair(accountant=acc, delta=None, **kw).fit(Xd, yd, sensitive_features=gd)
    with pytest.raises(ValueError, match="classes"):
        _fair(accountant=acc, delta=None, classes=None).fit(
            Xd, yd, sensitive_features=gd
        )
    with pytest.raises(ValueError, match="groups"):
        _fair(accountant=acc, delta=None, groups=None).fit(
            Xd, yd, sensitive_features=gd
        )
    with pytest.raises(ValueError, match="declared classes"):
        _fair(accountant=acc, delta=None).fit(Xd, yd + 5, sensitive_features=gd)
    with pytest.raises(ValueError, match="group not in"):
        _fair(accountant=acc, delta=None).fit(Xd, yd, sensitive_features=gd + 7)
    assert acc.ledger == []


def test_per_chunk_maps_are_silent_on_the_workers():
    """The per-chunk functions run later, on a worker, outside the driver's
    ``np.errstate``: they must silence floating point themselves."""
    from skdp.solvers._distributed import map_rows, record_sum

    X = da.from_array(np.array([[0.0, 1e308], [1.0, -1.0]]), chunks=(1, -1))
    lazy = [
        map_rows(np.log, X),  # divide by zero
        map_rows(lambda b: b * 10.0, X),  # overflow
        map_rows(lambda b: b - b * np.inf, X),  # invalid
    ]
    with np.errstate(all="raise"):
        with pytest.raises(FloatingPointError):
            np.log(np.zeros(1))  # the guard is active
        for arr in lazy:
            arr.compute(scheduler="sync")
        record_sum(lambda b: np.sum(np.log(b), axis=0), (X,))


def test_log_quantiles_of_dask_values_are_silent_on_the_workers():
    """A zero value (a truncated row's gradient norm, in every multinomial
    and binary dask fit) has log2 = -inf: that lazy map runs later on a
    worker, outside the driver's ``np.errstate``, and must not warn there."""
    import dask

    from skdp.solvers.heavy_tailed.bounds import noisy_log_quantile
    from skdp.solvers.heavy_tailed.units import feature_scale

    v = np.r_[np.zeros(5), np.arange(1.0, 200.0)]
    vd = da.from_array(v, chunks=50)
    with dask.config.set(scheduler="sync"), np.errstate(all="raise"):
        a = noisy_log_quantile(vd, 0.9, 1.0, np.random.default_rng(0))
        b = feature_scale(vd, 4, 1.0, np.random.default_rng(0))
    with np.errstate(all="ignore"):  # the same releases as on numpy input
        assert a == noisy_log_quantile(v, 0.9, 1.0, np.random.default_rng(0))
        assert b == feature_scale(v, 4, 1.0, np.random.default_rng(0))


@pytest.mark.parametrize("classes", [2, 3])
def test_minimax_fair_validation_gathers_one_flag_per_chunk(
    client, monkeypatch, classes
):
    """The checks before spending (finite X, declared labels and groups)
    bring one flag per chunk to the driver, never one value per record."""
    import dask

    from skdp.fairness._dask_fit import _validated_records

    X, y, g = _fair_data(n=2000, classes=classes)
    gathered = []
    compute = dask.compute

    def recording(*args, **kwargs):
        out = compute(*args, **kwargs)
        gathered.append(out)
        return out

    monkeypatch.setattr(dask, "compute", recording)
    labels = np.array([0, 1])
    _validated_records(_fair(), *_fair_dask(X, y, g), labels, np.unique(y))
    monkeypatch.undo()
    (flags,) = gathered  # the one validation pass
    finite, known, in_groups = flags
    assert len(known) == len(in_groups) == -(-2000 // CHUNKS)
    assert all(np.ndim(f) == 0 for f in [finite, *known, *in_groups])


def _strict_worker():
    import warnings

    saved = (list(warnings.filters), np.geterr())
    warnings.simplefilter("error")  # a warning fails the task
    np.seterr(all="warn", under="ignore")
    return saved


def _restore_worker(saved):
    import warnings

    warnings.filters[:] = saved[0]
    np.seterr(**saved[1])


@pytest.mark.parametrize("classes", [[0, 1], [0, 1, 2]])
def test_logistic_fit_on_dask_never_warns_on_the_workers(client, classes):
    """End to end on the cluster: every row above the private truncation
    level has a zero gradient norm, so the per-chunk maps meet ``1/0`` and
    ``log2(0)``; a warning on a worker (its log) would tell which chunk holds
    such a row. Workers turn warnings into errors here."""
    X, y = _three_classes(n=2000, seed=3)
    X[17] = 0.0  # a zero row too
    y = np.minimum(y, len(classes) - 1)
    Xd, yd = da.from_array(X, chunks=(CHUNKS, -1)), da.from_array(y, chunks=CHUNKS)
    saved = client.run(_strict_worker)
    try:
        est = _heavy(HeavyTailedLogisticRegression, classes=classes).fit(Xd, yd)
    finally:
        for worker, state in saved.items():
            client.run(_restore_worker, state, workers=[worker])
    ref = _heavy(HeavyTailedLogisticRegression, classes=classes).fit(X, y)
    _assert_same_glm(ref, est)


@pytest.mark.parametrize("classes", [2, 3])
def test_minimax_fair_predict_on_dask_is_lazy(client, classes):
    kw = {} if classes == 2 else {"classes": [0, 1, 2]}
    X, y, g = _fair_data(n=1000, classes=classes)
    est = _fair(**kw).fit(X, y, sensitive_features=g)
    Xd = da.from_array(X, chunks=(CHUNKS, -1))
    for method in ("predict", "predict_proba", "decision_function"):
        out = getattr(est, method)(Xd)
        assert isinstance(out, da.Array)
        np.testing.assert_allclose(out.compute(), getattr(est, method)(X), rtol=1e-12)


def test_declared_classes_checked_alike_on_numpy_and_dask(client):
    # A duplicate or a single declared label is refused on both paths, before
    # any spending, with the same message (it reads only the parameter).
    from skdp import MinimaxFairClassifier

    X, y = _data(n=500)
    yc = (y > 0).astype(int)
    Xd, yd = _dask(X, yc)
    for classes in ([0, 1, 1], [1]):
        for make in (
            lambda c, a: HeavyTailedLogisticRegression(
                classes=c, accountant=a, delta=1e-6
            ),
            lambda c, a: MinimaxFairClassifier(
                classes=c, accountant=a, delta=1e-6, feature_norm=3.0
            ),
        ):
            for data in ((X, yc), (Xd, yd)):
                acc = PrivacyAccountant(epsilon=10.0, delta=1e-5)
                with pytest.raises(ValueError, match="at least two distinct labels"):
                    make(classes, acc).fit(*data)
                assert acc.ledger == []
