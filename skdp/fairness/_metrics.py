"""Group-fairness metrics: worst-group loss and accuracy, largest group gap.

Every metric has fairlearn's signature ``metric(y_true, y_pred, *,
sensitive_features)`` (like ``fairlearn.metrics.demographic_parity_difference``).
They also compose with ``fairlearn.metrics.MetricFrame`` when fairlearn is
installed (it is optional; nothing here imports it): passing
``sample_params={"sensitive_features": sf}`` makes MetricFrame split
``sensitive_features`` with the rows, so ``by_group`` holds each group's own
loss (the worst group of one group is itself) and ``overall`` the worst
group's.

These metrics read the data without noise: they are evaluation tools, not
private releases.
"""

import numpy as np
from sklearn.metrics import accuracy_score

from ._groups import encode_groups, group_labels_of

__all__ = [
    "group_scores",
    "worst_group_loss",
    "worst_group_accuracy",
    "largest_group_gap",
]


def _log_loss_per_row(y_true, y_pred, labels=None):
    """Negative log-likelihood of each row (binary or multiclass)."""
    y_true = np.asarray(y_true)
    proba = np.asarray(y_pred, dtype=float)
    if proba.ndim == 1:
        proba = np.column_stack([1.0 - proba, proba])
    if labels is None:
        labels = np.unique(y_true)
        if labels.size < proba.shape[1]:
            labels = _binary_guess(labels)
    labels = np.sort(np.asarray(labels))
    if labels.size != proba.shape[1]:
        raise ValueError(
            f"y_pred has {proba.shape[1]} columns but the classes are "
            f"{labels.tolist()}; pass labels= with every class."
        )
    columns = np.searchsorted(labels, y_true)
    columns = np.minimum(columns, labels.size - 1)
    if y_true.size and not np.all(labels[columns] == y_true):
        raise ValueError("y_true contains labels that are not in labels.")
    eps = np.finfo(float).eps
    p = np.clip(proba[np.arange(y_true.size), columns], eps, 1.0)
    return -np.log(p)


def _binary_guess(labels):
    """The conventional other class when only one 0/1 or -1/+1 class is present."""
    if labels.size == 1 and labels[0] in (0, 1):
        return np.array([0, 1])
    if labels.size == 1 and labels[0] == -1:
        return np.array([-1, 1])
    return labels


def group_scores(y_true, y_pred, *, sensitive_features, metric):
    """``metric`` evaluated on each group's rows.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred : array-like of shape (n,) or (n, k)
    sensitive_features : array-like of shape (n,) or (n, k)
        Several columns are combined into one group per distinct row.
    metric : callable
        ``metric(y_true_group, y_pred_group) -> float``.

    Returns
    -------
    scores : dict
        ``{group label: score}``.

    References
    ----------
    - Sagawa, Koh, Hashimoto and Liang, "Distributionally robust neural networks for group
      shifts", ICLR 2020.
    - Diana, Gill, Kearns, Kenthapadi and Roth, "Minimax group fairness: algorithms and
      experiments", AIES 2021.
    - Bird et al., "Fairlearn: a toolkit for assessing and improving fairness in AI",
      Microsoft Tech. Report 2020.

    Examples
    --------
    >>> from sklearn.metrics import accuracy_score
    >>> group_scores([1, 0, 1, 1], [1, 1, 1, 0], sensitive_features=["a", "a", "b", "b"],
    ...              metric=accuracy_score)
    {'a': 0.5, 'b': 0.5}
    """
    y_true = np.asarray(y_true)
    y_pred = np.asarray(y_pred)
    if y_true.shape[0] != y_pred.shape[0]:
        raise ValueError("y_true and y_pred have different numbers of rows.")
    labels = group_labels_of(sensitive_features)
    codes = encode_groups(sensitive_features, labels, y_true.shape[0])
    return {
        label: float(metric(y_true[codes == k], y_pred[codes == k]))
        for k, label in enumerate(labels)
    }


def worst_group_loss(y_true, y_pred, *, sensitive_features, labels=None):
    """Largest mean log-loss over the groups.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred : array-like of shape (n,) or (n, n_classes)
        Predicted probabilities: of the larger label (binary, 1-D) or the
        output of ``predict_proba``.
    sensitive_features : array-like of shape (n,) or (n, k)
    labels : array-like, optional
        All class labels (sorted as in ``classes_``); needed only when
        ``y_true`` misses a class that is neither 0/1 nor -1/+1, as when
        MetricFrame passes one group's rows.

    Returns
    -------
    loss : float

    References
    ----------
    - Sagawa, Koh, Hashimoto and Liang, "Distributionally robust neural networks for group
      shifts", ICLR 2020.
    - Diana, Gill, Kearns, Kenthapadi and Roth, "Minimax group fairness: algorithms and
      experiments", AIES 2021.
    - Bird et al., "Fairlearn: a toolkit for assessing and improving fairness in AI",
      Microsoft Tech. Report 2020.

    Examples
    --------
    >>> import numpy as np
    >>> y = [0, 1, 0, 1]
    >>> p = [0.5, 0.5, 0.1, 0.9]
    >>> round(worst_group_loss(y, p, sensitive_features=["a", "a", "b", "b"]), 4)
    0.6931
    """
    losses = _log_loss_per_row(y_true, y_pred, labels)
    scores = group_scores(
        losses,
        losses,
        sensitive_features=sensitive_features,
        metric=lambda a, _: np.mean(a),
    )
    return max(scores.values())


def worst_group_accuracy(y_true, y_pred, *, sensitive_features):
    """Smallest accuracy over the groups.

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred : array-like of shape (n,)
        Predicted labels.
    sensitive_features : array-like of shape (n,) or (n, k)

    Returns
    -------
    accuracy : float

    References
    ----------
    - Sagawa, Koh, Hashimoto and Liang, "Distributionally robust neural networks for group
      shifts", ICLR 2020.
    - Diana, Gill, Kearns, Kenthapadi and Roth, "Minimax group fairness: algorithms and
      experiments", AIES 2021.
    - Bird et al., "Fairlearn: a toolkit for assessing and improving fairness in AI",
      Microsoft Tech. Report 2020.

    Examples
    --------
    >>> worst_group_accuracy([1, 0, 1, 1], [1, 0, 1, 0], sensitive_features=[0, 0, 1, 1])
    0.5
    """
    scores = group_scores(
        y_true, y_pred, sensitive_features=sensitive_features, metric=accuracy_score
    )
    return min(scores.values())


def largest_group_gap(y_true, y_pred, *, sensitive_features, metric="accuracy"):
    """Largest difference of a metric between two groups (max minus min).

    Parameters
    ----------
    y_true : array-like of shape (n,)
    y_pred : array-like
        Labels for ``"accuracy"``, probabilities for ``"log_loss"``, whatever
        a callable ``metric`` expects otherwise.
    sensitive_features : array-like of shape (n,) or (n, k)
    metric : {"accuracy", "log_loss"} or callable, default="accuracy"

    Returns
    -------
    gap : float
        Non-negative; 0 with a single group.

    References
    ----------
    - Sagawa, Koh, Hashimoto and Liang, "Distributionally robust neural networks for group
      shifts", ICLR 2020.
    - Diana, Gill, Kearns, Kenthapadi and Roth, "Minimax group fairness: algorithms and
      experiments", AIES 2021.
    - Bird et al., "Fairlearn: a toolkit for assessing and improving fairness in AI",
      Microsoft Tech. Report 2020.

    Examples
    --------
    >>> largest_group_gap([1, 0, 1, 1], [1, 0, 1, 0], sensitive_features=[0, 0, 1, 1])
    0.5
    """
    if metric == "accuracy":
        scores = group_scores(
            y_true, y_pred, sensitive_features=sensitive_features, metric=accuracy_score
        )
    elif metric == "log_loss":
        losses = _log_loss_per_row(np.asarray(y_true), y_pred)
        scores = group_scores(
            losses,
            losses,
            sensitive_features=sensitive_features,
            metric=lambda a, _: np.mean(a),
        )
    elif callable(metric):
        scores = group_scores(
            y_true, y_pred, sensitive_features=sensitive_features, metric=metric
        )
    else:
        raise ValueError(
            f"metric must be 'accuracy', 'log_loss' or a callable, got {metric!r}."
        )
    values = list(scores.values())
    return float(max(values) - min(values))
