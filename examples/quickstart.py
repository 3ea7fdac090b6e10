"""Quickstart: fit skdp's private estimators on bundled and synthetic data.

Each private model is printed next to scikit-learn's non-private one on the
same train/test split. Runs offline in well under a minute.
"""

import numpy as np
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import train_test_split

from skdp import HeavyTailedLinearRegression, HeavyTailedLogisticRegression
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
    _quickstart_bilevel_ridge()
    _quickstart_heavy_tailed()
    _quickstart_minimax_fair()


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


def _quickstart_minimax_fair():
    """Private minimax group-fair classifier on three synthetic groups."""
    from scipy.special import expit

    from skdp import MinimaxFairClassifier
    from skdp.fairness import worst_group_accuracy, worst_group_loss

    rng = np.random.default_rng(0)
    n = 40_000
    groups = rng.choice(["a", "b", "c"], size=2 * n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(2 * n, 3)) * 0.7
    direction = {"a": [3, 0, 0], "b": [2, 2, 0], "c": [0, 2, 2]}
    margin = np.einsum("ij,ij->i", X, np.array([direction[g] for g in groups]))
    y = (rng.random(2 * n) < expit(margin)).astype(int)
    Xtr, ytr, gtr, Xte, yte, gte = X[:n], y[:n], groups[:n], X[n:], y[n:], groups[n:]

    erm = LogisticRegression().fit(Xtr, ytr)
    fair = MinimaxFairClassifier(
        epsilon=1.0,
        groups=["a", "b", "c"],
        group_priors=[0.6, 0.3, 0.1],
        feature_norm=2.5,
        random_state=0,
    ).fit(Xtr, ytr, sensitive_features=gtr)

    def report(name, model):
        wgl = worst_group_loss(yte, model.predict_proba(Xte), sensitive_features=gte)
        wga = worst_group_accuracy(yte, model.predict(Xte), sensitive_features=gte)
        print(f"  {name:<44} worst-group log-loss {wgl:.3f}, accuracy {wga:.3f}")

    print("Minimax group fairness (3 groups, priors 0.6/0.3/0.1, n=40,000):")
    report("scikit-learn LogisticRegression (non-private)", erm)
    report("MinimaxFairClassifier, epsilon=1", fair)
    eps, delta = fair.privacy_spent_
    print(
        f"  privacy spent: epsilon={eps:.3f}, delta={delta:.2g}; group weights "
        f"{np.round(fair.group_weights_, 2)}"
    )


if __name__ == "__main__":
    main()
