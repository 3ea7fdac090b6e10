"""The one place where expected scikit-learn check failures are declared.

Each reason must be a property of differential privacy that a generic check
cannot allow for, never a bug. ``tests/test_common.py`` passes
:func:`expected_failed_checks` to ``parametrize_with_checks``.
"""

import inspect

from sklearn.base import BaseEstimator

__all__ = ["expected_failed_checks", "public_estimators", "public_transformers"]

# {estimator class name: {check name: reason}}
_EXPECTED_FAILED_CHECKS = {}


def expected_failed_checks(estimator):
    """Checks that ``estimator`` is expected to fail, with the reason for each.

    Parameters
    ----------
    estimator : estimator instance

    Returns
    -------
    dict of {str: str}
        ``{check_name: reason}``.

    Examples
    --------
    >>> from sklearn.linear_model import Ridge
    >>> expected_failed_checks(Ridge())
    {}
    """
    return dict(_EXPECTED_FAILED_CHECKS.get(type(estimator).__name__, {}))


def public_estimators():
    """Default instances of every public estimator listed in ``skdp.__all__``.

    Returns
    -------
    list of estimator instances

    Examples
    --------
    >>> isinstance(public_estimators(), list)
    True
    """
    import skdp

    out = []
    for name in skdp.__all__:
        obj = getattr(skdp, name)
        if inspect.isclass(obj) and issubclass(obj, BaseEstimator):
            out.append(obj())
    return out


def public_transformers():
    """Instances of every transformer in ``skdp.preprocessing`` for the checks.

    The encoder gets declared categories (it refuses to infer them); the
    others keep their defaults, ``bounds=None`` included (private bounds).

    Returns
    -------
    list of estimator instances

    Examples
    --------
    >>> len(public_transformers()) >= 4
    True
    """
    from skdp import preprocessing

    out = []
    for name in preprocessing.__all__:
        cls = getattr(preprocessing, name)
        if name == "OneHotEncoder":
            out.append(cls(categories=[[-1.0, 0.0, 1.0, 2.0]]))
        else:
            out.append(cls())
        if name == "SimpleImputer":
            out.append(cls(strategy="mean", bounds=(-10, 10)))
        if name == "StandardScaler":
            out.append(cls(with_mean=False))  # the sparse-input path
    return out
