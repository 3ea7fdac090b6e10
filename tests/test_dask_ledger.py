"""Dask fits record the same privacy ledger as numpy fits: every draw is made
in the driver, so ``verify(privacy_ledger_)`` equals ``privacy_spent_``."""

import numpy as np
import pytest

import skdp
from skdp.privacy import verify

da = pytest.importorskip("dask.array")

CASES = [
    ("BilevelRidge", {}),
    (
        "BilevelRidge",
        {
            "inner_solver": "sufficient_statistics",
            "feature_norm": 3.0,
            "target_bound": 4.0,
        },
    ),
    ("HeavyTailedLinearRegression", {"max_iter": 5}),
    ("HeavyTailedLogisticRegression", {"classes": [0, 1], "max_iter": 5}),
    ("MinimaxFairClassifier", {"classes": [0, 1], "groups": [0, 1], "max_iter": 5}),
]


@pytest.mark.parametrize("name, params", CASES)
def test_dask_ledger_verifies_to_privacy_spent(client, name, params):
    rng = np.random.default_rng(0)
    n = 2000
    X = rng.normal(size=(n, 3))
    y = X @ [1.0, -1.0, 0.5] + rng.normal(size=n)
    kwargs = {}
    if name in ("HeavyTailedLogisticRegression", "MinimaxFairClassifier"):
        y = (y > 0).astype(int)
    if name == "MinimaxFairClassifier":
        kwargs["sensitive_features"] = da.from_array(
            (X[:, 2] > 0).astype(int), chunks=500
        )
    est = getattr(skdp, name)(random_state=0, **params)
    est.fit(da.from_array(X, chunks=(500, -1)), da.from_array(y, chunks=500), **kwargs)
    eps, delta = est.privacy_spent_
    assert est.privacy_ledger_.entries
    assert verify(est.privacy_ledger_, delta) == pytest.approx(eps, rel=1e-6)
