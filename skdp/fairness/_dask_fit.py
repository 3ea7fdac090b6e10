"""``MinimaxFairClassifier(solver="gda")`` fits on dask input.

The numpy path's plan, accountant and optimiser run unchanged: the rows are
clipped per chunk on the workers (and persisted there once), the per-step
stacked statistic (per-group weighted clipped gradient sums and per-group
clipped loss sums) is summed chunk by chunk on the workers
(:func:`~skdp.solvers._distributed.record_sum`), and the group counts of the
prior estimate likewise; only those sums reach the driver, where all noise is
drawn from the estimator's generator. A private ``feature_norm`` estimate
(the noisy bisection of :func:`~skdp.privacy.private_norm_bound` on the row
norms) counts per chunk likewise. Needs declared ``classes`` and declared groups
(reading a set from the data is not distributed), and ``center=False``.
"""

import math

import numpy as np

from ..privacy import (
    gaussian_noise,
    private_norm_bound,
)
from ..privacy._norm_bound import LOG2_RANGE, RANGE_STEPS
from ..solvers._distributed import (
    as_dask_xy,
    bisection_counter,
    log2_records,
    map_rows,
    persist_records,
    reject_dask,
)
from ..utils import check_declared_classes
from ..utils._sparse import append_constant_column, clip_rows_any, row_norms
from ._groups import encode_groups

__all__ = ["fit_minimax_on_dask"]


def _check_supported(est, X, sensitive_features):
    """Refuse what does not run distributed, before anything is read or spent."""
    if est.solver != "gda":
        reject_dask(X, f"MinimaxFairClassifier(solver={est.solver!r})")
    if est.center:
        reject_dask(X, "MinimaxFairClassifier(center=True)")
    if est.feature_norm is None and np.isinf(est.epsilon):
        # the exact quantile (no noise) is not distributed
        reject_dask(X, "MinimaxFairClassifier(feature_norm=None, epsilon=inf)")
    if est.classes is None:
        raise ValueError(
            "MinimaxFairClassifier on dask input needs the public `classes=[...]`: "
            "reading the labels from y is not distributed."
        )
    declared = est.groups is not None or isinstance(est.group_priors, dict)
    if sensitive_features is not None and not declared:
        raise ValueError(
            "MinimaxFairClassifier on dask input needs the public `groups=[...]` "
            "(or a group_priors dict): reading the groups from the data is not "
            "distributed."
        )


def _label_codes(block, classes, binary):
    # one flag per chunk reaches the driver, not one per record
    known = bool(np.isin(block, classes).all())
    if binary:
        return np.where(block == classes[1], 1.0, -1.0), known
    return np.searchsorted(classes, block).astype(np.intp), known


def _group_codes(block, labels):
    # encode_groups raises on an undeclared label; report it as a flag instead
    # (checked before anything is spent, not echoed)
    try:
        return encode_groups(block, labels), True
    except ValueError:
        return np.zeros(len(block), dtype=np.intp), False


def _clipped_rows(block, c0, bound, fit_intercept):
    # the numpy path's clipping of the augmented rows, row by row
    with np.errstate(all="ignore"):
        norms = row_norms(block)
        if fit_intercept:
            Xa = append_constant_column(block, c0)
            return np.ascontiguousarray(clip_rows_any(Xa, bound, np.hypot(norms, c0)))
        return np.ascontiguousarray(clip_rows_any(block, bound, norms))


def _validated_records(est, X, y, sensitive_features, labels, classes):
    """Labels and group codes per chunk, checked in one pass before spending."""
    import dask
    import dask.array as da

    X, y = as_dask_xy(X, y, y_dtype=None)
    binary = classes.size == 2
    dtype = np.float64 if binary else np.intp
    parts = [
        dask.delayed(_label_codes, pure=True)(b, classes, binary)
        for b in y.to_delayed().ravel()
    ]
    rows = X.chunks[0]
    y_code = da.concatenate(
        [da.from_delayed(p[0], shape=(r,), dtype=dtype) for p, r in zip(parts, rows)]
    )
    known = [p[1] for p in parts]
    if sensitive_features is None:
        codes = da.zeros(X.shape[0], chunks=(rows,), dtype=np.intp)
        in_groups = []
    else:
        _, sf = as_dask_xy(X, sensitive_features, y_dtype=None)
        gparts = [
            dask.delayed(_group_codes, pure=True)(b, labels)
            for b in sf.to_delayed().ravel()
        ]
        codes = da.concatenate(
            [
                da.from_delayed(p[0], shape=(r,), dtype=np.intp)
                for p, r in zip(gparts, rows)
            ]
        )
        in_groups = [p[1] for p in gparts]
    finite = da.isfinite(X).all()
    y_code, codes = persist_records(y_code, codes)
    flags = dask.compute(finite, known, in_groups)
    if not flags[0]:
        raise ValueError("Input X contains NaN or infinity.")
    if not all(flags[1]):
        raise ValueError(
            f"y contains labels not in the declared classes {classes.tolist()}."
        )
    if not all(flags[2]):
        raise ValueError("sensitive_features contains a group not in `groups`.")
    return X, y_code, codes


def fit_minimax_on_dask(est, X, y, sensitive_features=None):
    """``est.fit(X, y, sensitive_features=...)`` for dask input (``solver="gda"``).

    The plan (estimates, steps, noise multiplier) is the numpy path's; see
    :class:`~skdp.fairness.MinimaxFairClassifier`.

    Parameters
    ----------
    est : MinimaxFairClassifier
    X : dask array or DataFrame of shape (n, d)
    y : dask array or Series of shape (n,)
    sensitive_features : dask array or Series of shape (n,), optional

    Returns
    -------
    est
    """
    from ..solvers.saddle_point.run import run_minimax

    _check_supported(est, X, sensitive_features)
    if sensitive_features is not None and not hasattr(
        sensitive_features, "__dask_graph__"
    ):
        raise TypeError("With a dask X, sensitive_features must be a dask array too.")
    classes = check_declared_classes(est.classes)
    n = int(X.shape[0])
    # declared groups and priors (public): the numpy path's validation
    labels, _, priors = est._validate_groups(None if sensitive_features is None
                                             else [], 0)  # fmt: skip
    X, y_code, codes = _validated_records(
        est, X, y, sensitive_features, labels, classes
    )
    est.n_features_in_ = int(X.shape[1])
    if hasattr(est, "feature_names_in_"):
        del est.feature_names_in_
    m = len(labels)

    # Public plan: the numpy path's (skdp/fairness/_minimax_fair.py).
    delta, rng = est._begin_private_fit(n)
    needs_priors = priors is None and m > 1
    if needs_priors and est.min_group_prior <= 0:
        raise ValueError(
            "min_group_prior must be positive when the group priors are "
            "estimated (group_priors=None)."
        )
    plan = est._plan(n, int(X.shape[1]), m, classes.size, delta, needs_priors)
    # the plan drops a norm quantile that n cannot support (public rule)
    needs_norm = "feature_norm" in plan.estimates
    n_estimates = len(plan.estimates)
    share, z_hist = plan.estimate_mu, plan.estimate_noise_multiplier
    est._warn_default_norm(plan)
    n_steps = plan.n_releases
    est._progress(
        f"solver='gda' on dask: {n_steps} noisy releases"
        + (f", {n_estimates} private estimate(s)" if n_estimates else "")
    )
    est._spend(plan.event)

    if needs_norm:
        # the numpy path's private_norm_bound: its bisection's counts summed
        # over chunks in one pass, the noise drawn on the driver
        norms = map_rows(row_norms, X, width=0)
        count_le = bisection_counter(log2_records(norms), LOG2_RANGE, RANGE_STEPS)
        feature_norm = private_norm_bound(n, share, rng=rng, count_le=count_le)
    elif est.feature_norm is None:
        feature_norm = float(plan.default_feature_norm)
    else:
        feature_norm = float(est.feature_norm)
    if needs_priors:
        # exact counts summed over chunks; the noise of noisy_histogram, drawn
        # on the driver from the same generator
        import dask.array as da

        counts = da.bincount(codes, minlength=m).compute().astype(float)
        counts = counts + gaussian_noise(
            rng,
            z_hist * math.sqrt(2.0),
            counts.shape,
            sensitivity=math.sqrt(2.0),
            label="histogram",
        )
        priors = np.maximum(counts, 0.0) / n
    elif priors is None:
        priors = np.ones(1)
    priors = np.maximum(priors, est.min_group_prior)

    c0 = float(est.intercept_scaling) if est.fit_intercept else 0.0
    bound = math.hypot(feature_norm, c0)
    width = X.shape[1] + int(est.fit_intercept)
    Xa = X.map_blocks(
        _clipped_rows,
        c0,
        bound,
        est.fit_intercept,
        chunks=(X.chunks[0], (width,)),
        dtype=np.float64,
    )
    Xa = persist_records(Xa)  # clipped once, kept on the workers
    result = run_minimax(Xa, y_code, codes, priors, bound, plan, rng)
    est._record_privacy(plan.event)
    est._set_fitted(result, plan, labels, classes, priors, feature_norm, None)
    est._calibrate(Xa, y_code, result.coef, plan, rng)
    return est
