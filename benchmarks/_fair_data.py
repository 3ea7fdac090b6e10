"""Data and non-private references for benchmarks/minimax_fair.py."""

import math
import os

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

SHARED = os.path.join(
    os.path.dirname(__file__), "..", "..", "shared", "datasets", "adult"
)

# --- synthetic 3-group problem ----------------------------------------------------
PRIORS = (0.6, 0.3, 0.1)
N_FEATURES = 5
_DIRECTIONS = np.array(
    [
        [1.0, 0.0, 0.0, 0.0, 0.0],
        [math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0, 0.0],
        [0.0, math.sqrt(0.5), math.sqrt(0.5), 0.0, 0.0],
    ]
)
_SCALES = np.array([5.0, 5.0, 5.0])
_OFFSETS = np.array([0.0, 0.5, -0.5])


def synthetic(n, seed):
    """Three groups (priors 0.6, 0.3, 0.1) whose optimal classifiers differ.

    Features are standard normal in 5 dimensions; group ``g`` draws labels
    from a logistic model with its own direction and offset; the minority
    group's direction conflicts with the majority's on the first feature.
    """
    rng = np.random.default_rng(seed)
    g = rng.choice(3, size=n, p=PRIORS)
    X = rng.normal(size=(n, N_FEATURES)) / math.sqrt(N_FEATURES) * 1.5
    margin = _SCALES[g] * np.einsum("ij,ij->i", X, _DIRECTIONS[g]) + _OFFSETS[g]
    y = (rng.random(n) < expit(margin)).astype(int)
    return X, y, g


# --- non-private references ----------------------------------------------------------
def group_dro_reference(X, y, groups, m, radius, fit_intercept=True, tol=1e-10):
    """Accurate non-private group DRO: min_{||w||<=radius} max_g mean loss of group g.

    Epigraph form ``min t s.t. R_g(w) <= t, ||w||^2 <= radius^2`` solved by
    SLSQP with exact gradients (smooth, convex, few variables).
    """
    Xa = np.hstack([X, np.ones((X.shape[0], 1))]) if fit_intercept else X
    ypm = np.where(y == 1, 1.0, -1.0)
    p = Xa.shape[1]
    idx = [np.flatnonzero(groups == k) for k in range(m)]
    idx = [i for i in idx if i.size]

    def risk(w, i):
        margin = ypm[i] * (Xa[i] @ w)
        return np.mean(np.logaddexp(0.0, -margin))

    def risk_grad(w, i):
        margin = ypm[i] * (Xa[i] @ w)
        return Xa[i].T @ (-expit(-margin) * ypm[i]) / i.size

    cons = [
        {
            "type": "ineq",
            "fun": (lambda v, i=i: v[-1] - risk(v[:-1], i)),
            "jac": (lambda v, i=i: np.r_[-risk_grad(v[:-1], i), 1.0]),
        }
        for i in idx
    ]
    cons.append(
        {
            "type": "ineq",
            "fun": lambda v: radius**2 - v[:-1] @ v[:-1],
            "jac": lambda v: np.r_[-2 * v[:-1], 0.0],
        }
    )
    v0 = np.r_[np.zeros(p), math.log(2.0) + 1.0]
    res = minimize(
        lambda v: v[-1],
        v0,
        jac=lambda v: np.r_[np.zeros(p), 1.0],
        constraints=cons,
        method="SLSQP",
        options={"maxiter": 2000, "ftol": tol},
    )
    w = res.x[:-1]
    if fit_intercept:
        return w[:-1], w[-1]
    return w, 0.0
