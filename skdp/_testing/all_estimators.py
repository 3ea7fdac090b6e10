"""Every skdp estimator and transformer, found by walking the package.

Tests that must cover all mechanisms (for example the extreme-rows test) take
their list from :func:`fast_estimators`, so that an estimator or transformer
added later in any subpackage (``skdp.preprocessing``, ``skdp.model_selection``,
...) is picked up without editing the test. A class without an entry in
:data:`FAST_PARAMS` is tested with its defaults.
"""

import importlib
import inspect
import pkgutil

from sklearn.base import BaseEstimator

__all__ = ["FAST_PARAMS", "all_estimator_classes", "fast_estimators"]

# {class name: [parameter dicts]}: small, fast configurations per class; one
# instance per dict. Several dicts cover paths that defaults do not reach.
# Classifiers declare their classes (and groups) so that no set is read from
# the data; ``random_state=0`` is added to every instance. MinimaxFairClassifier
# gets epsilon=10 so that its bound shares are large enough at a few hundred
# rows (otherwise it warns, publicly, that the bounds should be passed).
FAST_PARAMS = {
    "BilevelRidge": [
        {},
        {"tuning": "path"},
        {"inner_solver": "sufficient_statistics"},
        {"inner_solver": "sufficient_statistics", "tuning": "risk_estimate"},
    ],
    "HeavyTailedLinearRegression": [
        {"max_iter": 5},
        {"loss": "huber", "max_iter": 5, "center": True, "feature_norm": 10.0},
        {"solver": "onepass"},
        {"solver": "localized", "max_iter": 5},
    ],
    "HeavyTailedLogisticRegression": [
        {"classes": [0, 1], "max_iter": 5},
        {
            "epsilon": 10.0,
            "classes": [0, 1, 2],
            "max_iter": 5,
            "center": True,
            "feature_norm": 10.0,
        },
        {"classes": [0, 1], "solver": "onepass"},
        {"classes": [0, 1], "solver": "localized", "max_iter": 5},
    ],
    "MinimaxFairClassifier": [
        {"epsilon": 10.0, "classes": [0, 1], "groups": [0, 1], "max_iter": 5},
        {
            "epsilon": 10.0,
            "classes": [0, 1],
            "groups": [0, 1],
            "max_iter": 5,
            "center": True,
        },
        {
            "epsilon": 10.0,
            "classes": [0, 1],
            "groups": [0, 1],
            "solver": "nseg",
            "max_iter": 5,
        },
        {
            "epsilon": 10.0,
            "classes": [0, 1],
            "groups": [0, 1],
            "sampling": "disjoint",
            "batch_size": 50,
        },
    ],
    "MinMaxScaler": [{"bounds": (-3.0, 3.0)}, {"epsilon": 50.0}],
    # A factory: the searched estimator is an instance (a fresh one per call).
    "PrivateSearchCV": lambda: [
        {
            "estimator": _skdp().HeavyTailedLinearRegression(max_iter=5),
            "param_grid": {"max_iter": [3, 5]},
            "mean_trials": 10.0,  # no trial at all has probability exp(-10)
            "epsilon": 5.0,
            "loss_bound": 4.0,
        }
    ],
    "OneHotEncoder": [{"categories": [[0.0, 1.0]]}],
    "SimpleImputer": [{}, {"strategy": "mean", "bounds": (-3.0, 3.0)}],
    "StandardScaler": [{"bounds": (-3.0, 3.0)}, {"epsilon": 50.0}],
}


def _skdp():
    import skdp

    return skdp


def all_estimator_classes():
    """Public estimator and transformer classes defined anywhere in skdp.

    Returns
    -------
    list of type
        Sorted by name; classes whose name starts with ``_`` and abstract
        classes are left out.

    Examples
    --------
    >>> names = [c.__name__ for c in all_estimator_classes()]
    >>> "BilevelRidge" in names
    True
    """
    import skdp

    found = {}
    for info in pkgutil.walk_packages(skdp.__path__, "skdp."):
        module = importlib.import_module(info.name)
        for name, obj in vars(module).items():
            if (
                inspect.isclass(obj)
                and issubclass(obj, BaseEstimator)
                and obj.__module__.startswith("skdp")
                and not name.startswith("_")
                and not inspect.isabstract(obj)
            ):
                found[name] = obj
    return [found[name] for name in sorted(found)]


def fast_estimators():
    """Small, fast instances of every skdp estimator and transformer.

    Returns
    -------
    list of estimator instances
        One per entry of :data:`FAST_PARAMS` (defaults for classes without
        one), each with ``random_state=0``.

    Examples
    --------
    >>> len(fast_estimators()) >= len(all_estimator_classes())
    True
    """
    out = []
    for cls in all_estimator_classes():
        entries = FAST_PARAMS.get(cls.__name__, [{}])
        for params in entries() if callable(entries) else entries:
            est = cls(**params)
            if "random_state" in est.get_params():
                est.set_params(random_state=0)
            out.append(est)
    return out
