"""Every public class and function has a complete numpydoc docstring.

Enforced for the user-facing API: Parameters documented (no missing or unknown
ones), a Returns section for functions, an Examples section, a References
section, and an Attributes section for estimators. Developer utilities in
``skdp.utils`` need Parameters and Examples. Examples are run by pytest's
doctest collection of ``skdp/``.
"""

import inspect

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")
from numpydoc.docscrape import ClassDoc, FunctionDoc  # noqa: E402
from sklearn.base import BaseEstimator  # noqa: E402

import skdp  # noqa: E402
import skdp.fairness  # noqa: E402
import skdp.linear_model  # noqa: E402
import skdp.losses  # noqa: E402
import skdp.model_selection  # noqa: E402
import skdp.preprocessing  # noqa: E402
import skdp.privacy  # noqa: E402
import skdp.privacy.audit  # noqa: E402
import skdp.utils  # noqa: E402

USER_MODULES = [
    skdp,
    skdp.privacy,
    skdp.privacy.audit,
    skdp.linear_model,
    skdp.fairness,
    skdp.losses,
    skdp.preprocessing,
    skdp.model_selection,
]
DEV_MODULES = [skdp.utils]
# Re-exported dp-accounting event classes are documented upstream.
UPSTREAM = {
    "ComposedDpEvent",
    "DpEvent",
    "GaussianDpEvent",
    "NoOpDpEvent",
    "NonPrivateDpEvent",
    "PoissonSampledDpEvent",
    "SampledWithoutReplacementDpEvent",
    "SelfComposedDpEvent",
}
ALWAYS = {"GL08", "PR01", "PR02", "EX01"}


def _public(modules):
    seen = {}
    for mod in modules:
        for name in mod.__all__:
            obj = getattr(mod, name)
            if name in UPSTREAM or not (
                inspect.isclass(obj) or inspect.isfunction(obj)
            ):
                continue
            seen.setdefault(f"{obj.__module__}.{obj.__qualname__}", obj)
    return sorted(seen.items())


def _errors(qualname, obj, user_facing):
    result = numpydoc_validate.validate(qualname)
    codes = {code for code, _ in result["errors"]}
    required = set(ALWAYS)
    if inspect.isfunction(obj):
        required.add("RT01")
    problems = sorted(codes & required)
    if user_facing:
        doc = ClassDoc(obj) if inspect.isclass(obj) else FunctionDoc(obj)
        if not doc["References"]:
            problems.append("no References section")
        if (
            inspect.isclass(obj)
            and issubclass(obj, BaseEstimator)
            and not doc["Attributes"]
        ):
            problems.append("no Attributes section")
    return problems


@pytest.mark.parametrize("qualname, obj", _public(USER_MODULES))
def test_user_facing_docstring(qualname, obj):
    assert _errors(qualname, obj, True) == []


@pytest.mark.parametrize("qualname, obj", _public(DEV_MODULES))
def test_developer_docstring(qualname, obj):
    assert _errors(qualname, obj, False) == []
