"""No module in skdp imports from a layer above its own.

The layers, lowest first::

    exceptions  <  utils  <  privacy  <  losses  <  solvers  <  base
                <  estimators (linear_model, fairness, preprocessing, model_selection, ...)
                <  skdp/__init__  <  _testing

``privacy`` and ``losses`` know nothing of models, solvers import no estimator,
and test support lives in ``skdp._testing``, which may import anything. Imports
inside functions count too.
"""

import ast
import re
import sys
from pathlib import Path

import pytest

import skdp

PACKAGE_ROOT = Path(skdp.__file__).parent

LAYERS = {
    "exceptions": 0,
    "utils": 1,
    "privacy": 2,
    "losses": 3,
    "solvers": 4,
    "base": 5,
    "__init__": 7,
    "_testing": 8,
}
ESTIMATOR_LAYER = 6  # every other top-level module or subpackage


def _layer(module):
    """Layer of a dotted module name inside skdp (``skdp.solvers.saddle_point.nseg`` -> 4)."""
    parts = module.split(".")
    if len(parts) == 1:
        return LAYERS["__init__"]
    return LAYERS.get(parts[1], ESTIMATOR_LAYER)


def _module_name(path):
    rel = path.relative_to(PACKAGE_ROOT.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imported_skdp_modules(path):
    """Absolute skdp module names that ``path`` imports, with their line numbers."""
    module = _module_name(path)
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == "skdp":
                    yield alias.name, node.lineno
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "skdp":
                continue
            if target == "skdp" or (node.module is None and node.level):
                # ``from . import x`` / ``from skdp import x``: x may be a submodule.
                for alias in node.names:
                    yield f"{target}.{alias.name}", node.lineno
            else:
                yield target, node.lineno


def _module_paths():
    return sorted(PACKAGE_ROOT.rglob("*.py"))


def _upward_imports(path):
    own = _layer(_module_name(path))
    for target, line in _imported_skdp_modules(path):
        layer = _layer(target)
        if target == "skdp":
            layer = LAYERS["__init__"]
        if layer > own:
            yield f"{path.relative_to(PACKAGE_ROOT.parent)}:{line} imports {target}"


@pytest.mark.parametrize(
    "path", _module_paths(), ids=lambda p: str(p.relative_to(PACKAGE_ROOT))
)
def test_no_module_imports_a_layer_above_it(path):
    assert list(_upward_imports(path)) == []


def test_the_layer_check_sees_an_upward_import(tmp_path, monkeypatch):
    """The check is not vacuous: a solver importing an estimator is caught."""
    fake_root = tmp_path / "skdp"
    (fake_root / "solvers").mkdir(parents=True)
    bad = fake_root / "solvers" / "bad.py"
    bad.write_text(
        "def f():\n    from ..linear_model import BilevelRidge\n    return BilevelRidge\n"
        "from skdp.privacy import certify_epsilon\n"
    )
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_ROOT", fake_root)
    found = list(_upward_imports(bad))
    assert found == ["skdp/solvers/bad.py:2 imports skdp.linear_model"]


# -- benchmarks: the public API or skdp._testing --------------------------------------

BENCHMARKS_ROOT = PACKAGE_ROOT.parent / "benchmarks"


_MODULE_STRING = re.compile(r"skdp(\.[A-Za-z_][A-Za-z0-9_]*)+")


def _private_skdp_imports(path):
    """skdp modules ``path`` imports that are neither public nor ``skdp._testing``.

    A string that is a dotted skdp module name counts as an import too
    (``importlib.import_module("skdp...")``, ``find_spec``, ``client.run``,
    ``mock.patch`` targets).
    """
    tree = ast.parse(path.read_text(), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names = [node.module or ""]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if not _MODULE_STRING.fullmatch(node.value):
                continue
            names = [node.value]
        else:
            continue
        for name in names:
            parts = name.split(".")
            if parts[0] != "skdp" or parts[1:2] == ["_testing"]:
                continue
            if parts[1:2] == ["solvers"] or any(p.startswith("_") for p in parts[1:]):
                yield f"{path.name}:{node.lineno} imports {name}"


def _benchmark_paths():
    """Every script in ``benchmarks/`` (issue 19: all folders held to the rule)."""
    return sorted(BENCHMARKS_ROOT.rglob("*.py"))


@pytest.mark.skipif(
    not BENCHMARKS_ROOT.is_dir(), reason="benchmarks/ not in this checkout"
)
@pytest.mark.parametrize(
    "path", _benchmark_paths(), ids=lambda p: str(p.relative_to(BENCHMARKS_ROOT))
)
def test_benchmarks_use_the_public_api_or_testing(path):
    assert list(_private_skdp_imports(path)) == []


def test_the_benchmark_check_sees_a_private_import(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from skdp.privacy._mechanisms import _scaled_noise\n"
        "import skdp.solvers.sampling\n"
        "from skdp._testing.internals import scaled_noise\n"
        "from skdp.privacy import Budget\n"
        "importlib.import_module('skdp.solvers._distributed')\n"
        "importlib.util.find_spec('skdp.privacy')\n"
    )
    found = sorted(line.split(" imports ")[1] for line in _private_skdp_imports(bad))
    assert found == [
        "skdp.privacy._mechanisms",
        "skdp.solvers._distributed",
        "skdp.solvers.sampling",
    ]
