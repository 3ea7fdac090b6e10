"""Quickstart: fit skdp's private estimators on bundled data.

Each private model is printed next to scikit-learn's non-private one on the
same train/test split. Runs offline in a few seconds.
"""

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import HeavyTailedLinearRegression, HeavyTailedLogisticRegression
from skdp.privacy import PrivacyAccountant, calibrate_gaussian, gdp_mu


def main():
    print("skdp quickstart")
    print("---------------")
    # The privacy core: noise for 100 full-batch Gaussian steps at (1, 1e-6).
    z = calibrate_gaussian(1.0, 1e-6, steps=100)
    print(f"100 Gaussian steps at epsilon=1, delta=1e-6: noise multiplier {z:.2f}")
    print(f"(the composition is exactly {gdp_mu(1.0, 1e-6):.3f}-GDP)")
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    print(f"A shared budget: {acc}")
    _quickstart_heavy_tailed()


def _quickstart_heavy_tailed():
    """Heavy-tailed linear and logistic regression at epsilon = 1."""
    print()
    print("HeavyTailedLinearRegression / HeavyTailedLogisticRegression (epsilon=1)")
    rng = np.random.default_rng(0)
    n, d = 20_000, 10
    # Student-t(5) features (unit variance), skewed heavy-tailed noise
    X = rng.standard_t(5, size=(n, d)) * np.sqrt(3 / 5)
    w = rng.normal(size=d) / np.sqrt(d)
    noise = np.exp(rng.normal(size=n)) - np.exp(0.5) + rng.standard_t(2.1, size=n)
    y = X @ w + 1.0 + 0.5 * noise
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    private = HeavyTailedLinearRegression(epsilon=1.0).fit(X_tr, y_tr)
    public = LinearRegression().fit(X_tr, y_tr)
    print(
        f"  linear   R^2 private {private.score(X_te, y_te):.3f}  "
        f"non-private {public.score(X_te, y_te):.3f}  "
        f"(spent epsilon {private.privacy_spent_[0]:.3f})"
    )
    labels = (X @ w * 2 - 0.5 + rng.logistic(size=n) > 0).astype(int)
    X_tr, X_te, y_tr, y_te = train_test_split(X, labels, random_state=0)
    clf = HeavyTailedLogisticRegression(epsilon=1.0, classes=[0, 1]).fit(X_tr, y_tr)
    ref = LogisticRegression().fit(X_tr, y_tr)
    print(
        f"  logistic accuracy private {clf.score(X_te, y_te):.3f}  "
        f"non-private {ref.score(X_te, y_te):.3f}"
    )


if __name__ == "__main__":
    main()
