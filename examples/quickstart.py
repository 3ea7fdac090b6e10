"""Quickstart: fit skdp's private estimators on bundled data.

Each private model is printed next to scikit-learn's non-private one on the
same train/test split. Runs offline in a few seconds.
"""

import numpy as np

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
    _quickstart_minimax_fair()


def _quickstart_minimax_fair():
    """Private minimax group-fair classifier on three synthetic groups."""
    from scipy.special import expit
    from sklearn.linear_model import LogisticRegression

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
