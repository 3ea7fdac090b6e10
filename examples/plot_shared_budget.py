"""
One privacy budget across cross-validation
==========================================

Every fit on the same records spends privacy, including each fold of a
cross-validation. A :class:`skdp.PrivacyAccountant` passed to an estimator
keeps one ledger: ``clone`` returns the accountant itself, so the copies
that :func:`~sklearn.model_selection.cross_val_score` makes all spend from
it. The ledger composes the fits tightly, much better than adding epsilons,
and refuses a fit that would overspend.

Note that the cross-validation *scores* are not private: they are computed
from the data without noise.
"""

import matplotlib.pyplot as plt
import numpy as np
from sklearn.model_selection import cross_val_score

from skdp import BudgetExceededError, HeavyTailedLinearRegression, PrivacyAccountant

rng = np.random.default_rng(0)
X = rng.normal(size=(5_000, 5))
y = X @ np.arange(1.0, 6.0) + rng.normal(size=5_000)

accountant = PrivacyAccountant(epsilon=3.0, delta=1e-5)
model = HeavyTailedLinearRegression(epsilon=0.5, delta=1e-6, accountant=accountant)

spent = [0.0]
for _ in range(4):
    try:
        cross_val_score(model, X, y, cv=3, error_score="raise")
    except BudgetExceededError as exc:
        print("Refused:", exc)
        break
    spent.append(accountant.spent_epsilon)

fits = 3 * np.arange(len(spent))
fig, ax = plt.subplots(figsize=(6, 4))
ax.plot(fits, spent, "o-", label="PrivacyAccountant (tight composition)")
ax.plot(fits, 0.5 * fits, "s--", label="adding epsilons (basic composition)")
ax.axhline(accountant.epsilon, color="k", lw=1, label="budget")
ax.set_xlabel("number of fits (3 folds per cross-validation)")
ax.set_ylabel("epsilon spent")
ax.legend(fontsize=8)
fig.tight_layout()
plt.show()

print(
    f"{len(accountant.ledger)} fits recorded, epsilon spent {accountant.spent_epsilon:.3f}"
)
