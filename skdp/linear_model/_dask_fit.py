"""Heavy-tailed GLM fits and predictions on dask input.

The estimators' own plan, accountant and solver run unchanged: the dask rows
flow through the solver's per-record maps lazily (they stay on the workers)
and its reductions -- the private counts, the feature-scale release and the
clipped gradient sum of every step -- are computed chunk by chunk on the
workers by :mod:`skdp.solvers._distributed`; only those sums reach the
driver, where all noise is drawn from the estimator's generator. Only the
full-batch solver (``solver="known_lipschitz"``) without centring, and
classification with declared ``classes`` (binary, or multinomial with the
``d x K`` clipped softmax gradient sums taken per chunk), run distributed.
"""

import numpy as np

from ..losses import LogisticLoss
from ..solvers._distributed import as_dask_xy, check_budget_before_pass, reject_dask
from ..utils import check_declared_classes

__all__ = [
    "check_budget_before_pass",  # from solvers._distributed
    "dask_rows_for_one_pass",
    "fit_heavy_tailed_on_dask",
    "validate_dask_rows",
]


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
        n_classes = check_declared_classes(est.classes).size
        if n_classes > 2 and est.multi_class != "multinomial":
            reject_dask(X, "HeavyTailedLogisticRegression(multi_class='ovr')")


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
        classes = check_declared_classes(est.classes)
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


def dask_rows_for_one_pass(est, X, y):
    """Dask rows for a fit that reads them once (no validation pass).

    Only the public shapes and chunk sizes are read; ``nan``/``inf`` are
    refused from flags computed in the same per-chunk pass as the exact sums
    (:func:`~skdp.solvers._distributed.clipped_statistics`), before the plan
    is charged (:func:`check_budget_before_pass`). Sets ``n_features_in_``.

    Parameters
    ----------
    est : estimator
    X : dask array or DataFrame of shape (n, d)
    y : dask array or Series of shape (n,)

    Returns
    -------
    X, y : dask.array.Array
    """
    X, y = as_dask_xy(X, y)
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
        (res,) = est._fit_problems(X, [y], est._glm_loss())
        est.coef_, est.intercept_ = est._split_coef(res)
        est._set_info([res])
        return est
    X, y = validate_dask_rows(est, X, y, labels=True)
    est.classes_ = check_declared_classes(est.classes)
    est._softmax = False
    est.logit_calibration_ = None
    if est.classes_.size > 2:
        return _fit_multinomial(est, X, y)
    positive = est.classes_[1]
    target = y.map_blocks(
        lambda b: np.where(b == positive, 1.0, -1.0), dtype=np.float64
    )
    results = est._fit_problems(X, [target], LogisticLoss())
    est._set_stacked(results)
    est._set_info(results)
    return est


def _class_codes(block, classes):
    return np.searchsorted(classes, block).astype(np.int64)


def _fit_multinomial(est, X, y):
    """The numpy path's multinomial fit (one softmax model) on dask rows.

    The labels become class indices per chunk (declared classes, checked
    before anything was spent); the solver's releases (feature scale,
    truncation level, clip levels) count per chunk and every step's
    ``d x K`` clipped gradient sum is summed per chunk on the workers
    (:func:`~skdp.solvers._distributed.multinomial_gradient_sum_on_workers`).
    """
    labels = y.map_blocks(_class_codes, est.classes_, dtype=np.int64)
    res = est._fit_multinomial(X, labels, est.classes_.size)
    coef, est.intercept_ = est._split_coef(res)
    est.coef_ = np.ascontiguousarray(coef)
    est._softmax = True
    est._set_info([res])
    return est
