"""Walk the steps of a Pipeline, ColumnTransformer or FeatureUnion, recursively."""

import numpy as np
from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline

__all__ = ["iter_leaf_steps"]


def _is_empty_selection(columns):
    """Whether a ColumnTransformer column selection selects nothing.

    Such a transformer is never fitted (scikit-learn keeps the unfitted
    original in ``transformers_``), so it read nothing.
    """
    if isinstance(columns, str) or callable(columns):
        return False
    if hasattr(columns, "dtype") and np.issubdtype(columns.dtype, np.bool_):
        return not np.any(columns)
    if hasattr(columns, "__len__"):
        if len(columns) == 0:
            return True
        return all(isinstance(c, (bool, np.bool_)) for c in columns) and not any(
            columns
        )
    return False


def iter_leaf_steps(estimator, *, fitted=False, path=""):
    """Yield ``(path, step)`` for every leaf step of a (nested) composite.

    Parameters
    ----------
    estimator : estimator, ``"passthrough"``, ``"drop"`` or None
    fitted : bool, default=False
        Read a fitted ``ColumnTransformer``'s ``transformers_`` (the fitted
        clones) instead of its ``transformers``, without the transformers of
        an empty column selection (never fitted, they read nothing).
    path : str, default=""
        Prefix of the yielded paths (``"outer__inner"`` as in ``get_params``).

    Yields
    ------
    path : str
    step : estimator
        Never ``"passthrough"``, ``"drop"`` or None.
    """

    def join(name):
        return f"{path}__{name}" if path else str(name)

    if estimator is None or isinstance(estimator, str):
        return
    if isinstance(estimator, Pipeline):
        children = [(name, step) for name, step in estimator.steps]
    elif isinstance(estimator, ColumnTransformer):
        if fitted and hasattr(estimator, "transformers_"):
            items = [
                item
                for item in estimator.transformers_
                if not _is_empty_selection(item[2])
            ]
        else:
            items = list(estimator.transformers)
            items.append(("remainder", estimator.remainder, None))
        children = [(name, step) for name, step, _ in items]
    elif isinstance(estimator, FeatureUnion):
        children = list(estimator.transformer_list)
    else:
        yield path, estimator
        return
    for name, step in children:
        yield from iter_leaf_steps(step, fitted=fitted, path=join(name))
