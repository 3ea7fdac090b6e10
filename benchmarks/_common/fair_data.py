"""Data and non-private references for ``benchmarks.minimax_fair``."""

import math
import os

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from benchmarks._common import adult_dir

SHARED = adult_dir()

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


# --- Adult ----------------------------------------------------------------------------
ADULT_COLUMNS = [
    "age",
    "workclass",
    "fnlwgt",
    "education",
    "education-num",
    "marital-status",
    "occupation",
    "relationship",
    "race",
    "sex",
    "capital-gain",
    "capital-loss",
    "hours-per-week",
    "native-country",
    "income",
]
# Public scalings of the numeric columns (ranges documented with the data set),
# so that no statistic of the private data is used for preprocessing.
_ADULT_NUMERIC = {
    "age": lambda v: (v - 17.0) / (90.0 - 17.0),
    "education-num": lambda v: (v - 1.0) / 15.0,
    "capital-gain": lambda v: np.log1p(v) / np.log1p(99999.0),
    "capital-loss": lambda v: np.log1p(v) / np.log1p(4356.0),
    "hours-per-week": lambda v: (v - 1.0) / 98.0,
}


def _adult_categories():
    """Category lists of the categorical columns, read from adult.names."""
    cats = {}
    with open(os.path.join(SHARED, "adult.names")) as fh:
        for line in fh:
            if ":" not in line or line.startswith("|"):
                continue
            name, values = line.split(":", 1)
            values = values.strip().rstrip(".")
            if name in ADULT_COLUMNS and values != "continuous":
                cats[name] = [v.strip() for v in values.split(",")] + ["?"]
    return cats


def _read_adult(filename):
    rows = []
    with open(os.path.join(SHARED, filename)) as fh:
        for line in fh:
            if line.startswith("|") or not line.strip():
                continue
            parts = [p.strip() for p in line.strip().rstrip(".").split(",")]
            if len(parts) == len(ADULT_COLUMNS):
                rows.append(parts)
    return rows


def adult():
    """Adult train/test with public one-hot encoding and public scalings.

    Returns ``(X_train, y_train, sf_train, X_test, y_test, sf_test,
    feature_names)`` where ``sf`` holds the columns sex and race. Every row
    has eight one-hot ones and five numeric values in [0, 1], so its norm is
    at most ``sqrt(13)``: a public bound, nothing is clipped.
    """
    cats = _adult_categories()
    cats["income"] = [">50K", "<=50K"]
    names = []
    for col in ADULT_COLUMNS[:-1]:
        if col == "fnlwgt":
            continue  # a sampling weight, not a feature
        if col in _ADULT_NUMERIC:
            names.append(col)
        else:
            names.extend(f"{col}={v}" for v in cats[col])
    index = {n: i for i, n in enumerate(names)}

    def encode(rows):
        X = np.zeros((len(rows), len(names)))
        y = np.zeros(len(rows), dtype=int)
        sf = np.empty((len(rows), 2), dtype=object)
        for r, parts in enumerate(rows):
            rec = dict(zip(ADULT_COLUMNS, parts))
            for col, value in rec.items():
                if col in ("fnlwgt", "income"):
                    continue
                if col in _ADULT_NUMERIC:
                    X[r, index[col]] = _ADULT_NUMERIC[col](float(value))
                else:
                    X[r, index[f"{col}={value}"]] = 1.0
            y[r] = int(rec["income"] == ">50K")
            sf[r] = (rec["sex"], rec["race"])
        return X, y, sf

    Xtr, ytr, sftr = encode(_read_adult("adult.data"))
    Xte, yte, sfte = encode(_read_adult("adult.test"))
    return Xtr, ytr, sftr, Xte, yte, sfte, names
