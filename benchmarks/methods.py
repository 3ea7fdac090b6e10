"""skdp's estimators at their defaults, the private pipeline, and the metrics.

The runner passes an estimator only ``epsilon``, ``delta``, ``random_state``,
``classes`` (binary ``[0, 1]``, multiclass the manifest's labels) and
``groups`` (:class:`~skdp.MinimaxFairClassifier`: the manifest's categories
of the sensitive column, plus a declared missing level when the column has
missing values); everything else is the default under test.
"""

import numpy as np
import sklearn
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import Pipeline, make_pipeline

import skdp
from skdp import preprocessing
from skdp.privacy import BudgetExceededError, split_epsilon

SKDP_METHODS = {
    "regression": ("BilevelRidge", "HeavyTailedLinearRegression"),
    "binary": ("HeavyTailedLogisticRegression", "MinimaxFairClassifier"),
    "multiclass": ("HeavyTailedLogisticRegression", "MinimaxFairClassifier"),
}
#: Share of the pipeline's ``mu**2`` given to the private scaler
#: (doc/user_guide/private_pipelines.rst: ``s = 0.05``).
PREPROCESSING_SHARE = 0.05
#: Shares of ``mu**2`` offered to the model, largest first. The scaler
#: estimates its bounds with pure-epsilon quantiles, which do not compose
#: exactly in GDP shares, so the model may have to take a little less than
#: ``1 - PREPROCESSING_SHARE`` (the guide measured about 2% less). Whether a
#: share fits is decided by the accountant from the plans alone (public: n,
#: d, epsilon, delta), before the model reads any data.
MODEL_SHARES = (0.95, 0.93, 0.90, 0.85, 0.75)
#: Probabilities are clipped to [LOG_LOSS_EPS, 1 - LOG_LOSS_EPS] (scikit-learn's convention).
LOG_LOSS_EPS = 1e-15
#: Smallest number of test rows of a group counted by worst_group_log_loss.
MIN_GROUP_TEST_ROWS = 30


def methods_for(split):
    """skdp methods run on a split (MinimaxFairClassifier only on tables with groups)."""
    return [
        m
        for m in SKDP_METHODS[split.task]
        if m != "MinimaxFairClassifier" or split.groups
    ]


def make_estimator(method, split, epsilon, delta, random_state, accountant=None):
    """An skdp estimator at its defaults plus the runner's arguments."""
    kwargs = {"epsilon": epsilon, "delta": delta, "random_state": random_state}
    if accountant is not None:
        kwargs["accountant"] = accountant
    if method in ("HeavyTailedLogisticRegression", "MinimaxFairClassifier"):
        kwargs["classes"] = split.classes
    if method == "MinimaxFairClassifier":
        kwargs["groups"] = split.groups
    return getattr(skdp, method)(**kwargs)


def fit_labels(split, codes):
    """Targets as the estimator sees them: class labels for classification."""
    if split.task == "multiclass":
        return np.asarray(split.classes, dtype=object)[codes]
    return codes


def predict(model, split, X_test):
    """Regression predictions, or probabilities with columns in class-code order."""
    if split.task == "regression":
        return np.asarray(model.predict(X_test), dtype=float)
    proba = np.asarray(model.predict_proba(X_test), dtype=float)
    order = [list(model.classes_).index(c) for c in split.classes]
    return proba[:, order]


def fit_skdp(method, split, view, epsilon, random_state):
    """Fit an skdp estimator on the standardised or raw view; test predictions."""
    X_train, X_test, y_train, _ = split.view(view)
    model = make_estimator(method, split, epsilon, split.delta, random_state)
    fit_params = {}
    if method == "MinimaxFairClassifier":
        fit_params["sensitive_features"] = split.groups_train
    model.fit(X_train, fit_labels(split, y_train), **fit_params)
    return predict(model, split, X_test)


def private_pipeline(method, split, epsilon, random_state, model_share):
    """Raw frame -> skdp preprocessing -> skdp estimator, on one shared budget.

    Numeric columns: skdp ``SimpleImputer(strategy="constant")`` (fill 0: its
    private mean needs public bounds the manifest does not give) then skdp
    ``StandardScaler()`` with its private bound estimation, given
    ``PREPROCESSING_SHARE`` of ``mu**2``. Categorical columns: skdp
    ``OneHotEncoder`` with the manifest's categories (free). The model gets
    ``model_share``. Every step spends from one
    ``PrivacyAccountant(epsilon, delta)``. The scaler's noise stream is
    seeded apart from the model's.
    """
    entry, delta = split.entry, split.delta
    accountant = skdp.PrivacyAccountant(epsilon, delta)
    slack = max(0.0, 1.0 - PREPROCESSING_SHARE - model_share)  # unspent share of mu**2
    eps_scaler, eps_model, _ = split_epsilon(
        epsilon, delta, [PREPROCESSING_SHARE, model_share, slack]
    )
    scaler_seed = int(np.random.SeedSequence([random_state, 1]).generate_state(1)[0])
    transformers = []
    if entry["numeric"]:
        numeric = make_pipeline(
            preprocessing.SimpleImputer(strategy="constant", fill_value=0.0),
            preprocessing.StandardScaler(
                epsilon=eps_scaler,
                delta=delta,
                accountant=accountant,
                random_state=scaler_seed,
            ),
        )
        transformers.append(("num", numeric, list(entry["numeric"])))
    if entry["categorical"]:
        categories = [entry["categories"][c] for c in entry["categorical"]]
        encoder = preprocessing.OneHotEncoder(
            categories=categories, drop="if_binary", accountant=accountant
        )
        transformers.append(("cat", encoder, list(entry["categorical"])))
    model = make_estimator(method, split, eps_model, delta, random_state, accountant)
    if method == "MinimaxFairClassifier":
        model.set_fit_request(sensitive_features=True)
    pipeline = Pipeline(
        [
            ("preprocess", ColumnTransformer(transformers, sparse_threshold=0)),
            ("model", model),
        ]
    )
    return pipeline, accountant


def fit_pipeline(method, split, epsilon, random_state):
    """Fit the private pipeline under one total ``(epsilon, split.delta)``; test predictions.

    The regression target is standardised with training constants (not
    private, as in the standardised view). Asserts that
    ``skdp.spent(pipeline)`` is within the total.
    """
    y_train = (
        split.standardise_target()[0] if split.task == "regression" else split.y_train
    )
    frame_train = split.X_train_frame.astype(
        {c: object for c in split.entry["categorical"]}
    )
    frame_test = split.X_test_frame.astype(
        {c: object for c in split.entry["categorical"]}
    )
    with sklearn.config_context(enable_metadata_routing=True):
        for model_share in MODEL_SHARES:
            pipeline, accountant = private_pipeline(
                method, split, epsilon, random_state, model_share
            )
            fit_params = {}
            if method == "MinimaxFairClassifier":
                fit_params["sensitive_features"] = split.groups_train
            try:
                pipeline.fit(frame_train, fit_labels(split, y_train), **fit_params)
            except BudgetExceededError:
                continue
            break
        else:
            raise BudgetExceededError(
                "no model share in MODEL_SHARES fits the pipeline's budget"
            )
        total_epsilon, total_delta = skdp.spent(pipeline)
        assert total_epsilon <= epsilon * (1 + 1e-9) and total_delta <= split.delta * (
            1 + 1e-9
        ), (
            f"pipeline spent ({total_epsilon}, {total_delta}) above ({epsilon}, {split.delta})"
        )
        return predict(pipeline, split, frame_test)


def metrics(task, prediction, y_test, groups_test=None):
    """Test metrics: ``mse``; or ``log_loss``, ``accuracy`` (+ ``worst_group_log_loss``).

    ``worst_group_log_loss`` is the largest log-loss over the groups with at
    least ``MIN_GROUP_TEST_ROWS`` test rows (NaN if there is none).
    """
    prediction = np.asarray(prediction, dtype=float)
    if task == "regression":
        return {"mse": float(np.mean((prediction - y_test) ** 2))}
    with np.errstate(all="ignore"):
        proba = prediction / prediction.sum(axis=1, keepdims=True)
    proba = np.clip(proba, LOG_LOSS_EPS, 1 - LOG_LOSS_EPS)
    row_loss = -np.log(proba[np.arange(len(y_test)), y_test])
    out = {
        "log_loss": float(np.mean(row_loss)),
        "accuracy": float(np.mean(np.argmax(prediction, axis=1) == y_test)),
    }
    if groups_test is not None:
        losses = [
            row_loss[groups_test == g].mean()
            for g in np.unique(groups_test)
            if np.sum(groups_test == g) >= MIN_GROUP_TEST_ROWS
        ]
        out["worst_group_log_loss"] = float(max(losses)) if losses else float("nan")
    return out


def metric_names(task, grouped):
    """Metric names of a task, in CSV order."""
    if task == "regression":
        return ["mse"]
    return ["log_loss", "accuracy"] + (["worst_group_log_loss"] if grouped else [])
