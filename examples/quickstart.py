"""Quickstart: fit skdp's private estimators on bundled data.

Each private model is printed next to scikit-learn's non-private one on the
same train/test split. Runs offline in a few seconds.
"""

import numpy as np

from skdp.privacy import PrivacyAccountant, calibrate_gaussian, gdp_mu


def _quickstart_bilevel_ridge():
    """BilevelRidge: private ridge whose penalty is tuned privately."""
    from sklearn.linear_model import RidgeCV
    from sklearn.model_selection import train_test_split

    from skdp import BilevelRidge

    rng = np.random.default_rng(0)
    n, d = 50_000, 10
    X = rng.normal(size=(n, d))
    y = X @ rng.normal(size=d) / np.sqrt(d) + 1.0 + 2.0 * rng.normal(size=n)
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    # Public bounds: rows are clipped to norm 6 and targets to [-10, 10].
    private = BilevelRidge(epsilon=1.0, feature_norm=6.0, target_bound=10.0)
    private.fit(X_tr, y_tr)
    public = RidgeCV(alphas=np.logspace(-2, 5, 15)).fit(X_tr, y_tr)
    eps, delta = private.privacy_spent_
    print("BilevelRidge (penalty tuned privately, no grid search)")
    print(
        f"  private  R^2 = {private.score(X_te, y_te):.3f}  alpha_ = {private.alpha_:.3g}"
    )
    print(
        f"  RidgeCV  R^2 = {public.score(X_te, y_te):.3f}  alpha_ = {public.alpha_:.3g}"
    )
    print(f"  privacy spent: epsilon = {eps:.3f}, delta = {delta:.2g}")


def main():
    print("skdp quickstart")
    print("---------------")
    # The privacy core: noise for 100 full-batch Gaussian steps at (1, 1e-6).
    z = calibrate_gaussian(1.0, 1e-6, steps=100)
    print(f"100 Gaussian steps at epsilon=1, delta=1e-6: noise multiplier {z:.2f}")
    print(f"(the composition is exactly {gdp_mu(1.0, 1e-6):.3f}-GDP)")
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-5)
    print(f"A shared budget: {acc}")
    print()
    _quickstart_bilevel_ridge()


if __name__ == "__main__":
    main()
