"""skdp.fairness metrics: values, signatures and MetricFrame-style use."""

import numpy as np
import pytest
from sklearn.metrics import accuracy_score, log_loss

from skdp.fairness import (
    group_scores,
    largest_group_gap,
    worst_group_accuracy,
    worst_group_loss,
)

Y = np.array([0, 1, 1, 0, 1, 0, 1, 1])
P = np.array([0.2, 0.7, 0.9, 0.6, 0.4, 0.1, 0.8, 0.3])
SF = np.array(["a", "a", "a", "b", "b", "c", "c", "c"])


def _by_group(metric):
    return {g: metric(Y[SF == g], P[SF == g]) for g in ["a", "b", "c"]}


def test_worst_group_loss_is_the_largest_group_log_loss():
    per_group = _by_group(lambda y, p: log_loss(y, p, labels=[0, 1]))
    assert worst_group_loss(Y, P, sensitive_features=SF) == pytest.approx(
        max(per_group.values())
    )
    proba = np.column_stack([1 - P, P])
    assert worst_group_loss(Y, proba, sensitive_features=SF) == pytest.approx(
        max(per_group.values())
    )


def test_worst_group_accuracy_and_gap():
    pred = (P > 0.5).astype(int)
    acc = {g: accuracy_score(Y[SF == g], pred[SF == g]) for g in ["a", "b", "c"]}
    assert worst_group_accuracy(Y, pred, sensitive_features=SF) == min(acc.values())
    gap = largest_group_gap(Y, pred, sensitive_features=SF)
    assert gap == pytest.approx(max(acc.values()) - min(acc.values()))
    loss_gap = largest_group_gap(Y, P, sensitive_features=SF, metric="log_loss")
    losses = _by_group(lambda y, p: log_loss(y, p, labels=[0, 1]))
    assert loss_gap == pytest.approx(max(losses.values()) - min(losses.values()))
    assert largest_group_gap(Y, pred, sensitive_features=np.zeros(8)) == 0.0
    with pytest.raises(ValueError, match="metric"):
        largest_group_gap(Y, pred, sensitive_features=SF, metric="auc")


def test_metricframe_style_use_gives_group_values_and_worst_overall():
    # fairlearn's MetricFrame calls metric(y_true[g], y_pred[g], **params[g])
    # per group and metric(y_true, y_pred, **params) overall; emulated here
    # because fairlearn is optional.
    params = {"sensitive_features": SF}
    by_group = {
        g: worst_group_loss(Y[SF == g], P[SF == g], sensitive_features=SF[SF == g])
        for g in ["a", "b", "c"]
    }
    overall = worst_group_loss(Y, P, **params)
    expected = _by_group(lambda y, p: log_loss(y, p, labels=[0, 1]))
    for g in by_group:
        assert by_group[g] == pytest.approx(expected[g])
    assert overall == pytest.approx(max(by_group.values()))
    # A group holding a single (string) class needs the labels.
    ys = np.where(Y == 1, "yes", "no")
    one = SF == "b"
    with pytest.raises(ValueError, match="labels"):
        worst_group_loss(ys[one][:1], P[one][:1], sensitive_features=SF[one][:1])
    v = worst_group_loss(
        ys[one][:1], P[one][:1], sensitive_features=SF[one][:1], labels=["no", "yes"]
    )
    assert v == pytest.approx(-np.log(1 - P[one][0]))


def test_fairlearn_is_optional():
    import inspect

    import skdp.fairness._metrics as m

    assert "import fairlearn" not in inspect.getsource(m)


def test_multi_column_sensitive_features_and_group_scores():
    sf = np.column_stack([SF, np.where(np.arange(8) % 2, "x", "y")])
    scores = group_scores(
        Y, (P > 0.5).astype(int), sensitive_features=sf, metric=accuracy_score
    )
    assert all(isinstance(k, tuple) for k in scores)
    assert sum(1 for _ in scores) == len({tuple(r) for r in sf.tolist()})
    with pytest.raises(ValueError, match="rows"):
        group_scores(Y, P[:3], sensitive_features=SF, metric=accuracy_score)
