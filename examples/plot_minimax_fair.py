"""
Worst-group loss of a private minimax-fair classifier
=====================================================

A classifier trained to minimize the *average* loss can serve small groups
badly. :class:`skdp.MinimaxFairClassifier` minimizes the *worst group's*
logistic loss (group distributionally robust optimization) with the
differentially private full-batch noisy descent-ascent (the default) or the
saddle-point solvers of Boob and Guzmán.

Three synthetic groups with priors (0.6, 0.3, 0.1) have different optimal
classifiers. We compare the worst-group test log-loss of scikit-learn's
(non-private) logistic regression with the private minimax classifier at
several privacy levels.
"""

import matplotlib.pyplot as plt
import numpy as np
from scipy.special import expit
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

from skdp import MinimaxFairClassifier
from skdp.fairness import group_scores, worst_group_loss

rng = np.random.default_rng(0)
n = 40_000
priors = {"a": 0.6, "b": 0.3, "c": 0.1}
direction = {"a": [3, 0, 0], "b": [2, 2, 0], "c": [0, 2, 2]}


def sample(n):
    g = rng.choice(list(priors), size=n, p=list(priors.values()))
    X = rng.normal(size=(n, 3)) * 0.7
    margin = np.einsum("ij,ij->i", X, np.array([direction[k] for k in g]))
    return X, (rng.random(n) < expit(margin)).astype(int), g


X, y, g = sample(n)
X_te, y_te, g_te = sample(n)

erm = LogisticRegression().fit(X, y)
results = {"LogisticRegression\n(non-private)": erm}
for eps in (0.5, 1.0, 5.0, np.inf):
    clf = MinimaxFairClassifier(
        epsilon=eps,
        classes=[0, 1],
        groups=list(priors),
        group_priors=list(priors.values()),
        feature_norm=2.5,
        random_state=0,
    )
    results[f"minimax\neps = {eps:g}"] = clf.fit(X, y, sensitive_features=g)


def per_group_log_loss(model):
    def metric(y_true, proba):
        return log_loss(y_true, proba, labels=[0, 1])

    return group_scores(
        y_te, model.predict_proba(X_te), sensitive_features=g_te, metric=metric
    )


fig, ax = plt.subplots(figsize=(7, 4))
width = 0.25
for k, group in enumerate(priors):
    values = [per_group_log_loss(m)[group] for m in results.values()]
    ax.bar(
        np.arange(len(results)) + (k - 1) * width, values, width, label=f"group {group}"
    )
worst = [
    worst_group_loss(y_te, m.predict_proba(X_te), sensitive_features=g_te)
    for m in results.values()
]
ax.plot(np.arange(len(results)), worst, "k_", markersize=30, mew=2, label="worst group")
ax.set_xticks(np.arange(len(results)), list(results), fontsize=8)
ax.set_ylabel("test log-loss")
ax.set_title("Per-group log-loss (lower is better)")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()
