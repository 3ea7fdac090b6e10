"""Private minimax group-fair classification and group-fairness metrics.

- :class:`MinimaxFairClassifier`: DP group-DRO logistic regression,
  ``fit(X, y, sensitive_features=...)``.
- :func:`worst_group_loss`, :func:`worst_group_accuracy`,
  :func:`largest_group_gap`, :func:`group_scores`: evaluation metrics with
  fairlearn's ``metric(y_true, y_pred, *, sensitive_features)`` signature
  (fairlearn itself is optional and never imported here).
"""

from ._metrics import (
    group_scores,
    largest_group_gap,
    worst_group_accuracy,
    worst_group_loss,
)
from ._minimax_fair import MinimaxFairClassifier

__all__ = [
    "MinimaxFairClassifier",
    "group_scores",
    "largest_group_gap",
    "worst_group_accuracy",
    "worst_group_loss",
]
