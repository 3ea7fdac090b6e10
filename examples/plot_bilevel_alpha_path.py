"""
Private tuning of the ridge penalty with BilevelRidge
=====================================================

Choosing a ridge penalty by grid search on private data leaks: each score is
computed from the data, and so is the choice. :class:`skdp.BilevelRidge`
tunes the penalty inside one private fit, by the differentially private
bilevel optimization of Kornowski: the validation loss is minimized over the
penalty, with the ridge model trained on the training part. With the default
solver, the training and validation statistics are released once, privately,
and the whole outer loop is post-processing.

The plot shows the non-private validation curve and the penalties the
private outer loop visits (``alpha_path_``).
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.linear_model import Ridge
from sklearn.model_selection import train_test_split

from skdp import BilevelRidge

rng = np.random.default_rng(0)
n, d = 50_000, 20
X = rng.normal(size=(n, d))
coef = rng.normal(size=d) * 0.05  # a weak signal: a large penalty is best
y = X @ coef + 2.0 * rng.normal(size=n)

# The alpha path is that of the paper's bilevel loop (sufficient statistics).
model = BilevelRidge(
    epsilon=1.0,
    feature_norm=8.0,
    target_bound=8.0,
    inner_solver="sufficient_statistics",
    random_state=0,
)
model.fit(X, y)

# Non-private validation curve on a split of the same size (for reference only).
X_tr, X_val, y_tr, y_val = train_test_split(X, y, test_size=0.5, random_state=0)
alphas = np.logspace(0, 6, 40)
curve = [
    np.mean((Ridge(alpha=a).fit(X_tr, y_tr).predict(X_val) - y_val) ** 2)
    for a in alphas
]

fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(alphas, curve, "k-", label="validation MSE (non-private)")
path = np.asarray(model.alpha_path_)
path_mse = np.interp(np.log(path), np.log(alphas), curve)
ax.plot(path, path_mse, ".", color="tab:orange", alpha=0.6, label="private alpha path")
ax.axvline(model.alpha_, color="tab:red", ls="--", label=f"alpha_ = {model.alpha_:.3g}")
ax.axvline(alphas[int(np.argmin(curve))], color="tab:blue", ls=":", label="best alpha")
ax.set_xscale("log")
ax.set_xlabel("alpha (scikit-learn units)")
ax.set_ylabel("validation MSE")
ax.set_title("BilevelRidge at epsilon = 1")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

print(f"alpha_ = {model.alpha_:.4g}, privacy spent = {model.privacy_spent_}")
