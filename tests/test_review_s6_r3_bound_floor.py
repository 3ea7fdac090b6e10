"""Review R3 (session 6): BilevelRidge's small-n floor on its private bounds.

Since the noisy bisection replaced the pure-DP quantile (branch D), each
private bound is ``mu``-GDP with ``mu`` the old pure ``epsilon``; the small-n
floor ``min(epsilon / (2 k), 64 / n)``, written in units of epsilon, can then
exceed the whole GDP budget at a small ``delta``, and the fit raised "No
noise multiplier meets the target" where it fit before. The floor is now
capped at half of ``mu**2`` when it would leave (almost) nothing for the fit;
fits where it leaves room are unchanged.
"""

import math
import warnings

import numpy as np
import pytest

from skdp import BilevelRidge
from skdp.privacy import Budget

SS = "sufficient_statistics"


def _data(n, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 3))
    return X, X @ np.ones(3) + rng.normal(size=n)


@pytest.mark.parametrize(
    "n, delta, epsilon, kw",
    [
        (100, 1e-10, 1.0, {}),
        (100, 1e-10, 1.0, {"feature_norm": 3.0}),
        (100, 1e-6, 0.5, {}),
        (1000, 1e-10, 0.2, {"feature_norm": 3.0}),
    ],
)
@pytest.mark.parametrize("tuning", ["risk_estimate", "bilevel"])
def test_small_n_floor_never_exceeds_the_budget(n, delta, epsilon, kw, tuning):
    X, y = _data(n)
    est = BilevelRidge(
        inner_solver=SS, tuning=tuning, epsilon=epsilon, delta=delta,
        random_state=0, **kw,
    )  # fmt: skip
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est.fit(X, y)
    assert est.privacy_spent_[0] <= epsilon
    mu = Budget.from_target(epsilon, delta, margin=False).mu
    each = [e for e in est._bound_epsilons(n, delta) if e > 0]
    assert sum(e**2 for e in each) <= 0.5 * mu**2 * (1 + 1e-9)


def test_floor_unchanged_where_it_leaves_room():
    # default delta: the floor (64 / n, at most epsilon / 2k) is kept as is
    model = BilevelRidge(inner_solver=SS, epsilon=1.0)
    assert model._bound_epsilons(250) == pytest.approx((0.25, 0.25))
    assert BilevelRidge(inner_solver=SS, epsilon=1.0, target_bound=1.0)._bound_epsilons(
        500
    ) == (pytest.approx(64 / 500), 0.0)
    assert math.isinf(
        BilevelRidge(inner_solver=SS, epsilon=np.inf)._bound_epsilons(50)[0]
    )
