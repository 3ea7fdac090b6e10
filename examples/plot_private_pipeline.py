"""
A private pipeline end to end on a raw census table
===================================================

A real table has numeric columns in their own units (ages, dollars, hours)
and categorical columns as strings. scikit-learn's ``StandardScaler`` and
``OneHotEncoder`` fitted on the private rows publish exact means, variances
and every category that occurs, so a pipeline built from them is not private,
whatever its final estimator promises. Here every step is private:

- :class:`skdp.preprocessing.StandardScaler` releases private means and
  standard deviations of the numeric columns, clipped to public bounds;
- :class:`skdp.preprocessing.OneHotEncoder` encodes the categories of the
  published schema (free: it learns nothing from the data);
- :class:`skdp.MinimaxFairClassifier` receives ``sensitive_features``
  through scikit-learn's metadata routing.

One :class:`skdp.PrivacyAccountant` holds the budget of the whole pipeline,
:func:`skdp.privacy.split_epsilon` splits it (5% of the GDP budget to the
scaler, a share measured on UCI Adult; study at f9c3d36:
``python -m benchmarks.pipeline.main``), and
:func:`skdp.spent` reads the exact total back. :func:`skdp.check_pipeline`
finds the leaking steps of the scikit-learn version before anything is fitted.

The example runs on UCI Adult (raw ``adult.data`` / ``adult.test``) when the
environment variable ``SKDP_ADULT_DIR`` names their folder, and otherwise on
a synthetic table with the same columns, built below (the documentation and
the tests use the synthetic one).
"""

import os

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import sklearn
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder as SkOneHotEncoder
from sklearn.preprocessing import StandardScaler as SkStandardScaler

import skdp
from skdp import spent
from skdp.fairness import worst_group_loss
from skdp.preprocessing import OneHotEncoder, StandardScaler
from skdp.privacy import split_epsilon

sklearn.set_config(enable_metadata_routing=True)

# %%
# The public schema
# -----------------
# Bounds and categories come from the data's documentation, not from the
# rows: ages 17-90 and hours 1-99 as the census top-codes them, the
# capital-gain top-code 99999, and the category lists of ``adult.names``.
NUMERIC_BOUNDS = {
    "age": (17, 90),
    "education-num": (1, 16),
    "capital-gain": (0, 99_999),
    "hours-per-week": (1, 99),
}
CATEGORIES = {
    "workclass": [
        "Private", "Self-emp-not-inc", "Self-emp-inc", "Federal-gov",
        "Local-gov", "State-gov", "Without-pay", "Never-worked",
    ],
    "marital-status": [
        "Married-civ-spouse", "Divorced", "Never-married", "Separated",
        "Widowed", "Married-spouse-absent", "Married-AF-spouse",
    ],
    "race": ["White", "Asian-Pac-Islander", "Amer-Indian-Eskimo", "Other", "Black"],
    "sex": ["Female", "Male"],
}  # fmt: skip
NUMERIC, CATEGORICAL = list(NUMERIC_BOUNDS), list(CATEGORIES)
ADULT_COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]  # fmt: skip


def read_adult(folder, name):
    df = pd.read_csv(
        os.path.join(folder, name),
        names=ADULT_COLUMNS,
        skipinitialspace=True,
        comment="|",
    )
    y = df["income"].str.rstrip(".").eq(">50K").astype(int).to_numpy()
    return df[NUMERIC + CATEGORICAL].astype({c: float for c in NUMERIC}), y


def synthetic_adult(n, seed):
    """A table with Adult's columns, units and a similar label model."""
    rng = np.random.default_rng(seed)
    X = pd.DataFrame(
        {
            "age": rng.integers(17, 91, n).astype(float),
            "education-num": rng.integers(1, 17, n).astype(float),
            "capital-gain": np.where(
                rng.random(n) < 0.08, rng.lognormal(8.5, 1.0, n).clip(0, 99_999), 0.0
            ),
            "hours-per-week": rng.normal(40, 12, n).clip(1, 99).round(),
        }
    )
    for col, cats in CATEGORIES.items():
        p = np.linspace(2.0, 0.2, len(cats)) ** 2
        X[col] = rng.choice(cats, size=n, p=p / p.sum())
    logit = (
        0.04 * (X["age"] - 38)
        + 0.35 * (X["education-num"] - 10)
        + 2.5 * (X["capital-gain"] > 7000)
        + 0.03 * (X["hours-per-week"] - 40)
        + 1.8 * (X["marital-status"] == "Married-civ-spouse")
        + 0.4 * (X["sex"] == "Male")
        - 1.8
    )
    y = (rng.random(n) < 1.0 / (1.0 + np.exp(-logit))).astype(int)
    return X, y


folder = os.environ.get("SKDP_ADULT_DIR")
if folder and os.path.exists(os.path.join(folder, "adult.data")):
    X_train, y_train = read_adult(folder, "adult.data")
    X_test, y_test = read_adult(folder, "adult.test")
    print("UCI Adult:", X_train.shape, X_test.shape)
else:
    X_train, y_train = synthetic_adult(20_000, seed=0)
    X_test, y_test = synthetic_adult(4_000, seed=1)
    print("Synthetic Adult-like table:", X_train.shape, X_test.shape)
sex_train, sex_test = X_train["sex"].to_numpy(), X_test["sex"].to_numpy()

# %%
# Two pipelines: private steps, and scikit-learn's steps
# ------------------------------------------------------
EPSILON, DELTA = 1.0, 1e-6
accountant = skdp.PrivacyAccountant(epsilon=EPSILON, delta=DELTA)
# Every release of both steps is Gaussian (the model's private feature-norm
# bound too), so the split of the budget is exact.
eps_scaler, eps_model = split_epsilon(EPSILON, DELTA, [0.05, 0.95])
lower = [b[0] for b in NUMERIC_BOUNDS.values()]
upper = [b[1] for b in NUMERIC_BOUNDS.values()]


def fair_model(epsilon, accountant=None):
    return skdp.MinimaxFairClassifier(
        groups=CATEGORIES["sex"],
        classes=[0, 1],
        epsilon=epsilon,
        delta=DELTA,
        accountant=accountant,
        random_state=0,
    ).set_fit_request(sensitive_features=True)


private = make_pipeline(
    ColumnTransformer(
        [
            (
                "num",
                StandardScaler(
                    bounds=(lower, upper),
                    epsilon=eps_scaler,
                    delta=DELTA,
                    accountant=accountant,
                    random_state=0,
                ),
                NUMERIC,
            ),
            (
                "cat",
                OneHotEncoder(
                    categories=list(CATEGORIES.values()), accountant=accountant
                ),
                CATEGORICAL,
            ),
        ]
    ),
    fair_model(eps_model, accountant),
)
plain = make_pipeline(
    ColumnTransformer(
        [
            ("num", SkStandardScaler(), NUMERIC),
            ("cat", SkOneHotEncoder(sparse_output=False), CATEGORICAL),
        ]
    ),
    fair_model(EPSILON),
)

# %%
# Leak check before training
# --------------------------
print("Leaks in the private pipeline:", skdp.check_pipeline(private))
for leak in skdp.check_pipeline(plain):
    print(f"  {leak.path}: publishes {leak.reason}; use {leak.replacement}")

# %%
# Fit both and compare
# --------------------
private.fit(X_train, y_train, sensitive_features=sex_train)
plain.fit(X_train, y_train, sensitive_features=sex_train)
total_eps, total_delta = spent(private)
print(f"Private pipeline spent epsilon={total_eps:.3f} at delta={total_delta:g}")
for label, _ in accountant.ledger:
    print("  ledger:", label)
print(f"scikit-learn steps: spent epsilon={spent(plain)[0]} (not private)")

results = {}
for name, pipe in [("private steps", private), ("scikit-learn steps", plain)]:
    acc = float(np.mean(pipe.predict(X_test) == y_test))
    wgl = worst_group_loss(
        y_test, pipe.predict_proba(X_test), sensitive_features=sex_test
    )
    results[name] = (acc, wgl)
    print(f"{name:>20}: accuracy {acc:.3f}, worst-group log-loss {wgl:.3f}")

fig, axes = plt.subplots(1, 2, figsize=(8, 3.5))
for ax, k, title in zip(axes, (0, 1), ("test accuracy", "worst-group log-loss")):
    ax.bar(list(results), [v[k] for v in results.values()], color=["C0", "C7"])
    ax.set_title(title)
fig.suptitle(
    f"MinimaxFairClassifier, epsilon={EPSILON:g} for the whole private pipeline"
)
fig.tight_layout()
plt.show()

# Leave scikit-learn's global configuration as it was.
sklearn.set_config(enable_metadata_routing=False)
