"""Walk the steps of a Pipeline, ColumnTransformer or FeatureUnion, recursively."""

from sklearn.compose import ColumnTransformer
from sklearn.pipeline import FeatureUnion, Pipeline

__all__ = ["iter_leaf_steps"]


def iter_leaf_steps(estimator, *, fitted=False, path=""):
    """Yield ``(path, step)`` for every leaf step of a (nested) composite.

    Parameters
    ----------
    estimator : estimator, ``"passthrough"``, ``"drop"`` or None
    fitted : bool, default=False
        Read a fitted ``ColumnTransformer``'s ``transformers_`` (the fitted
        clones) instead of its ``transformers``.
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
            items = estimator.transformers_
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
