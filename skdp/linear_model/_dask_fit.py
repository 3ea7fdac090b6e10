"""Heavy-tailed GLM fits and predictions on dask input.

The estimators' own plan, accountant and solver run unchanged: the dask rows
flow through the solver's per-record maps lazily (they stay on the workers)
and its reductions -- the private counts, the feature-scale release and the
clipped gradient sum of every step -- are computed chunk by chunk on the
workers by :mod:`skdp.solvers._distributed`; only those sums reach the
driver, where all noise is drawn from the estimator's generator. Only the
full-batch solver (``solver="known_lipschitz"``) without centring, and binary
classification with declared ``classes``, run distributed.
"""

import numpy as np

from ..losses import HuberLoss, LogisticLoss, SquaredLoss
from ..solvers._distributed import as_dask_xy, reject_dask

__all__ = ["fit_heavy_tailed_on_dask", "validate_dask_rows"]


def _check_supported(est, X):
    """Refuse what does not run distributed, before anything is read or spent."""
    name = type(est).__name__
    if est.solver != "known_lipschitz":
        reject_dask(X, f"{name}(solver={est.solver!r})")
    if est.center:
        reject_dask(X, f"{name}(center=True)")
    if name == "HeavyTailedLogisticRegression":
        if est.classes is None:
            raise ValueError(
                "HeavyTailedLogisticRegression on dask input needs the public "
                "`classes=[...]`: reading the labels from y is not distributed."
            )
        if np.unique(np.asarray(est.classes)).size != 2:
            reject_dask(X, "HeavyTailedLogisticRegression with more than two classes")


def validate_dask_rows(est, X, y, labels=False):
    """Dask rows with the numpy path's input checks (one pass, no noise yet).

    ``nan``/``inf`` in ``X`` (and in ``y`` unless ``labels``) or labels
    outside the declared ``est.classes`` raise the numpy path's errors
    before anything is spent; sets ``n_features_in_``.

    Parameters
    ----------
    est : estimator
    X : dask array or DataFrame of shape (n, d)
    y : dask array or Series of shape (n,)
    labels : bool, default=False
        ``y`` holds class labels (kept in their dtype).

    Returns
    -------
    X, y : dask.array.Array
    """
    import dask
    import dask.array as da

    X, y = as_dask_xy(X, y, y_dtype=None if labels else np.float64)
    checks = [da.isfinite(X).all()]
    if labels:
        classes = np.unique(np.asarray(est.classes))
        checks.append(da.isin(y, classes).all())
    else:
        checks.append(da.isfinite(y).all())
    finite, known = dask.compute(*checks)
    if not finite or not (known or labels):
        raise ValueError("Input X or y contains NaN or infinity.")
    if not known:
        # Not echoed: the offending values would be a further release.
        raise ValueError("y contains labels that are not in `classes`.")
    est.n_features_in_ = int(X.shape[1])
    if hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    return X, y


def fit_heavy_tailed_on_dask(est, X, y):
    """``est.fit(X, y)`` for dask ``X`` and ``y`` (the numpy path's plan and noise).

    Parameters
    ----------
    est : HeavyTailedLinearRegression or HeavyTailedLogisticRegression
    X : dask array or DataFrame of shape (n, d)
    y : dask array or Series of shape (n,)

    Returns
    -------
    est
    """
    _check_supported(est, X)
    if type(est).__name__ == "HeavyTailedLinearRegression":
        X, y = validate_dask_rows(est, X, y)
        loss = SquaredLoss() if est.loss == "squared" else HuberLoss(est.tau)
        ((w, info),) = est._fit_problems(X, [y], loss, est.loss)
        est.coef_, est.intercept_ = est._split_coef(w)
        est._set_info([info])
        return est
    X, y = validate_dask_rows(est, X, y, labels=True)
    est.classes_ = np.unique(np.asarray(est.classes))
    est._softmax = False
    positive = est.classes_[1]
    target = y.map_blocks(
        lambda b: np.where(b == positive, 1.0, -1.0), dtype=np.float64
    )
    ((w, info),) = est._fit_problems(X, [target], LogisticLoss(), "logistic")
    coef, intercept = est._split_coef(w)
    est.coef_ = np.vstack([coef])
    est.intercept_ = np.asarray([intercept], dtype=np.float64)
    est._set_info([info])
    return est
