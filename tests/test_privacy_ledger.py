"""The privacy ledger: every draw recorded where it is drawn, and verified.

``verify(privacy_ledger_)`` recomputes epsilon from the draws alone; it must
equal ``privacy_spent_`` (computed from the plan) for every public class and
option, and disagree when the noise is not what the plan said.
"""

import json
import math
import warnings

import dp_accounting
import numpy as np
import pytest

import skdp
from skdp._testing.all_estimators import fast_estimators
from skdp.privacy import (
    GaussianDpEvent,
    LedgerEntry,
    PrivacyLedger,
    certify_epsilon,
    gaussian_noise,
    hidden_from_ledgers,
    parallel_scope,
    recording,
    verify,
)
from skdp.privacy._mechanisms import _scaled_noise

RTOL = 1e-6


def _data(n=400, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=n)
    groups = (rng.random(n) < 0.4).astype(int)
    return X, y, (y > 0).astype(int), groups


# Options the fast list does not reach: every solver and tuning path.
_MORE = [
    ("BilevelRidge", dict(inner_solver="output_perturbation", max_iter=3)),
    ("BilevelRidge", dict(inner_solver="loc_gd", max_iter=2, inner_max_iter=4)),
    (
        "BilevelRidge",
        dict(inner_solver="sufficient_statistics", refit_share=0.3, outer_noise=True),
    ),
    ("BilevelRidge", dict(inner_solver="sufficient_statistics", noise_correlation=0)),
    ("BilevelRidge", dict(delta=1e-8)),  # the curvature release
    ("MinimaxFairClassifier", dict(classes=[0, 1], groups=[0, 1])),
    ("MinimaxFairClassifier", dict(classes=[0, 1, 2], groups=[0, 1], max_iter=5)),
    (
        "MinimaxFairClassifier",
        dict(
            classes=[0, 1],
            groups=[0, 1],
            solver="nispp",
            sampling="poisson",
            batch_size=50,
            max_iter=3,
        ),
    ),
    (
        "MinimaxFairClassifier",
        dict(
            classes=[0, 1],
            groups=[0, 1],
            solver="nseg",
            sampling="without_replacement",
            batch_size=50,
            max_iter=4,
        ),
    ),
    ("HeavyTailedLogisticRegression", dict(classes=[0, 1])),
    ("HeavyTailedLinearRegression", dict()),
]


def _cases():
    cases = [(type(e).__name__, e) for e in fast_estimators()]
    cases += [(name, getattr(skdp, name)(**params)) for name, params in _MORE]
    return cases


def _fit(name, est):
    X, y, labels, groups = _data()
    est.set_params(random_state=0)
    if name == "OneHotEncoder":
        return est.fit((X[:, :1] > 0).astype(float))
    if not hasattr(est, "predict"):
        return est.fit(X)
    if name == "MinimaxFairClassifier":
        return est.fit(X, labels, sensitive_features=groups)
    classifier = "Classifier" in name or "Logistic" in name
    return est.fit(X, labels if classifier else y)


def _ids():
    return [f"{name}-{i}" for i, (name, _) in enumerate(_cases())]


@pytest.mark.parametrize("case", range(len(_cases())), ids=_ids())
def test_ledger_verifies_to_privacy_spent(case):
    name, est = _cases()[case]
    est = _fit(name, est)
    eps, delta = est.privacy_spent_
    ledger = est.privacy_ledger_
    got = verify(ledger, delta if delta > 0 else 1e-6)
    if math.isinf(eps):
        assert math.isinf(got)
    else:
        assert got == pytest.approx(eps, rel=RTOL, abs=1e-12)
    # The record alone suffices: its JSON form verifies to the same value.
    record = json.loads(json.dumps(ledger.to_dict()))
    assert verify(record, delta if delta > 0 else 1e-6) == pytest.approx(got, rel=1e-12)


@pytest.mark.parametrize(
    "name, params",
    [
        ("HeavyTailedLinearRegression", dict(max_iter=5)),
        ("HeavyTailedLogisticRegression", dict(classes=[0, 1], max_iter=5)),
        ("BilevelRidge", dict()),
        ("MinimaxFairClassifier", dict(classes=[0, 1], groups=[0, 1], max_iter=5)),
        ("StandardScaler", dict(epsilon=5.0)),
    ],
)
def test_under_noised_fit_fails_verification(name, params):
    """Less noise than planned (the audit's negative control) is caught."""
    est = getattr(skdp, name, None) or getattr(skdp.preprocessing, name)
    est = est(**params)
    with _scaled_noise(0.5):
        est = _fit(name, est)
    eps, delta = est.privacy_spent_
    assert verify(est.privacy_ledger_, delta) > 1.2 * eps


def test_one_under_noised_draw_is_caught():
    rng = np.random.default_rng(0)
    with recording() as ledger:
        for _ in range(9):
            gaussian_noise(rng, 4.0, 3, sensitivity=1.0)
        gaussian_noise(rng, 2.0, 3, sensitivity=1.0)  # half the planned noise
    planned = certify_epsilon(
        dp_accounting.SelfComposedDpEvent(GaussianDpEvent(4.0), 10), 1e-6
    )
    assert verify(ledger, 1e-6) > 1.05 * planned
    # Identical draws are merged, the odd one is kept apart.
    assert [e.repetitions for e in ledger.entries] == [9, 1]
    assert len(ledger) == 10


def test_verify_matches_dp_accounting_pld():
    """A ledger of Gaussian draws against dp-accounting's own PLD accountant."""
    rng = np.random.default_rng(0)
    with recording() as ledger:
        for _ in range(20):
            gaussian_noise(rng, 3.0, 5, sensitivity=0.5)  # z = 6
    # skdp's multiplier is sigma over the replace-one L2 sensitivity Delta:
    # the pair N(0, sigma^2) against N(Delta, sigma^2), which is
    # dp-accounting's add-or-remove Gaussian of multiplier sigma / Delta.
    pld = dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE
    )
    pld.compose(dp_accounting.GaussianDpEvent(6.0), 20)
    assert verify(ledger, 1e-6) == pytest.approx(pld.get_epsilon(1e-6), rel=1e-3)


def test_scopes_compose_as_the_plan():
    rng = np.random.default_rng(0)
    with recording() as ledger:
        parts = parallel_scope(3)
        for i in range(2):
            with parts.part(i):
                gaussian_noise(rng, 2.0, 2, sensitivity=1.0)
        # one release reading two parts, with a sensitivity per part
        gaussian_noise(rng, 1.0, 2, sensitivity=parts.sensitivities({0: 0.25, 2: 0.5}))
    event = ledger.event()
    # Part 0 holds z = 2 and z = 4, part 1 z = 2, part 2 z = 2: the worst is 0.
    worst = dp_accounting.ComposedDpEvent([GaussianDpEvent(2.0), GaussianDpEvent(4.0)])
    assert verify(ledger, 1e-6) == pytest.approx(certify_epsilon(worst, 1e-6), rel=1e-9)
    assert type(event).__name__ == "ParallelDpEvent"


def test_nested_ledgers_and_hidden_draws():
    rng = np.random.default_rng(0)
    with recording() as outer:
        parts = parallel_scope(2)
        with parts.part(1), recording() as inner:
            gaussian_noise(rng, 4.0, sensitivity=1.0)
        # a nested ledger has no path into the scopes opened before it
        assert inner.entries[0].path == ()
        with hidden_from_ledgers(), recording() as trial:
            gaussian_noise(rng, 2.0, sensitivity=1.0)
    assert [e.path for e in outer.entries] == [((0, 1),)]  # not the hidden draw
    assert len(trial) == 1


def test_search_ledger_hides_its_trials_and_certifies_all_candidates():
    """The search's ledger lists neither the number of trials nor their draws
    (secret under private selection): one entry, the selection's certified
    pair over every candidate, so it verifies to privacy_spent_ even when the
    costliest candidate never ran (or no trial did)."""
    X, y, labels, groups = _data(n=1000)
    grid = [
        {"solver": ["gda"]},
        {"solver": ["nispp"], "sampling": ["poisson"], "batch_size": [50], "max_iter": [3]},
    ]
    for seed, mean, shape in ((1, 2.0, 1.0), (7, 1.0, np.inf), (3, 4.0, 1.0)):
        search = skdp.model_selection.PrivateSearchCV(
            skdp.MinimaxFairClassifier(classes=[0, 1], groups=[0, 1]),
            param_grid=grid,
            epsilon=1.0,
            delta=1e-6,
            mean_trials=mean,
            trials_shape=shape,
            random_state=seed,
        )
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            search.fit(X, labels, sensitive_features=groups)
        entries = search.privacy_ledger_.entries
        assert [e.mechanism for e in entries] == ["selection"]
        eps, delta = search.privacy_spent_
        assert verify(search.privacy_ledger_, delta) == pytest.approx(eps, rel=RTOL)
        assert skdp.spent(search)[0] == pytest.approx(eps, rel=RTOL)


def test_ledger_entry_events():
    assert LedgerEntry("gaussian", sensitivity=2.0, scale=6.0).event == GaussianDpEvent(
        3.0
    )
    assert LedgerEntry("gaussian", sensitivity=1.0, scale=0.0).event == (
        dp_accounting.NonPrivateDpEvent()
    )
    assert LedgerEntry("gaussian", sensitivity=0.0, scale=1.0).event == (
        dp_accounting.NoOpDpEvent()
    )
    sampled = LedgerEntry(
        "gaussian", sensitivity=1.0, scale=2.0, sampling=("poisson", 0.1), repetitions=5
    ).event
    assert sampled == dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(0.1, GaussianDpEvent(2.0)), 5
    )
    assert LedgerEntry("exponential", sensitivity=1.0, scale=4.0).event.epsilon == 0.5
    assert verify(PrivacyLedger(), 1e-6) == 0.0


def test_verify_refuses_other_objects():
    with pytest.raises(TypeError, match="verify takes"):
        verify(object(), 1e-6)


def test_correlated_pair_is_recorded_at_its_privacy_scale():
    rng = np.random.default_rng(0)
    with recording() as ledger:
        gaussian_noise(rng, 2.0, 3, sensitivity=1.0, correlation=-0.6)
    assert ledger.entries[0].scale == pytest.approx(2.0 * math.sqrt(1 - 0.36))


def _pipeline_fit():
    from sklearn.pipeline import make_pipeline

    X, y, _, _ = _data(n=2000)
    return make_pipeline(
        skdp.preprocessing.StandardScaler(bounds=(-4.0, 4.0), epsilon=0.3),
        skdp.HeavyTailedLinearRegression(epsilon=1.0, random_state=0),
    ).fit(X, y)


def test_receipt_verifies_to_spent(tmp_path):
    from skdp.verify import main

    pipe = _pipeline_fit()
    record = json.loads(json.dumps(skdp.receipt(pipe)))
    eps, delta = skdp.spent(pipe)
    assert record["epsilon"] == pytest.approx(eps) and record["delta"] == delta
    assert [s["estimator"] for s in record["steps"]] == [
        "StandardScaler",
        "HeavyTailedLinearRegression",
    ]
    assert verify(record) == pytest.approx(eps, rel=RTOL)
    path = tmp_path / "receipt.json"
    path.write_text(json.dumps(record))
    assert main([str(path)]) == 0
    # A receipt whose draws were smaller than stated fails the check.
    entry = record["steps"][1]["ledger"]["entries"][-1]
    entry["scale"] /= 2.0
    path.write_text(json.dumps(record))
    assert verify(record) > eps
    assert main([str(path)]) == 1


def test_receipt_of_a_nonprivate_pipeline_is_infinite():
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    X, y, _, _ = _data()
    pipe = make_pipeline(
        StandardScaler(), skdp.HeavyTailedLinearRegression(random_state=0)
    ).fit(X, y)
    record = skdp.receipt(pipe)
    assert record["nonprivate_steps"] == ["standardscaler"]
    assert record["epsilon"] is None and verify(record) == math.inf


@pytest.mark.parametrize(
    "kind, n, d",
    [
        ("linear", 12_000, 4),  # large-n rule + intercept correction
        ("linear", 300, 5),  # scale margin bought with budget
        ("binary", 400, 5),  # with the logit calibration
        ("multinomial", 400, 20),  # no clip search at the cap
    ],
)
def test_heavy_tailed_draws_compose_to_the_budget(kind, n, d):
    """The draws of a heavy-tailed fit, read from its ledger, are exactly its
    GDP budget (replaces review R4's spies on every drawing module)."""
    from skdp.privacy import Budget, gdp_mu_of

    rng = np.random.default_rng(0)
    X = rng.standard_t(3, size=(n, d)) * 50
    kw = dict(epsilon=1.0, delta=1e-5, random_state=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # raw units: the scale warnings
        if kind == "linear":
            y = X @ np.ones(d) + rng.exponential(30, size=n)
            est = skdp.HeavyTailedLinearRegression(**kw).fit(X, y)
        elif kind == "binary":
            est = skdp.HeavyTailedLogisticRegression(**kw).fit(X, (X[:, 0] > 0) * 1)
        else:
            y = np.digitize(X[:, 0], [-20, 0, 20])
            est = skdp.HeavyTailedLogisticRegression(**kw).fit(X, y)
    labels = {e.label for e in est.privacy_ledger_.entries}
    assert ("clipped residual sum" in labels) == (n > 10_000)
    assert ("logit histogram" in labels) == (kind == "binary")
    mu = Budget.from_target(1.0, 1e-5, margin=False).mu
    drawn = gdp_mu_of(est.privacy_ledger_.event())
    assert drawn == pytest.approx(mu, rel=1e-8) and drawn <= mu
    assert verify(est.privacy_ledger_, 1e-5) == pytest.approx(
        est.privacy_spent_[0], rel=RTOL
    )
