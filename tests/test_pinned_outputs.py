"""Pinned outputs: the same numbers for the same ``random_state``.

Every estimator and transformer, with every ``solver=`` / ``inner_solver=`` /
``tuning=`` / ``multi_class=`` / ``loss=`` / ``sampling=`` option, is fitted
at finite epsilon with ``random_state=0`` on small synthetic data
(:data:`skdp._testing.pin.PINNED_CONFIGS`) and compared with
``tests/pinned_outputs.json`` at ``rtol=1e-9``. A restructuring must keep them;
a deliberate change of numbers regenerates them in its own commit::

    python -m skdp._testing.pin --write [--only NAME]
"""

import os
import subprocess
import sys

import pytest

from skdp._testing import pin

PINS = pin.load()


def test_every_configuration_is_pinned():
    missing = sorted(set(pin.PINNED_CONFIGS) - set(PINS))
    assert not missing, (
        f"configurations without pins: {missing}; "
        "run `python -m skdp._testing.pin --write`"
    )


def test_every_estimator_class_is_pinned():
    from skdp._testing.all_estimators import all_estimator_classes

    pinned = {name.split("[")[0] for name in pin.PINNED_CONFIGS}
    classes = {cls.__name__ for cls in all_estimator_classes()}
    assert classes <= pinned, f"no pinned configuration for {classes - pinned}"


@pytest.mark.parametrize("name", sorted(pin.PINNED_CONFIGS))
def test_pinned_output(name):
    expected = PINS[name]
    assert expected, f"{name}: empty pin"
    problems = pin.compare(expected, pin.compute_pins(name))
    assert not problems, (
        f"{name} moved from its pinned outputs:\n  "
        + "\n  ".join(problems)
        + "\nIf the change of numbers is intended, regenerate in its own commit "
        f"with:\n  python -m skdp._testing.pin --write --only '{name}'"
    )


def test_compare_detects_a_change():
    name = "HeavyTailedLinearRegression[known_lipschitz,squared]"
    actual = pin.compute_pins(name)
    moved = {k: dict(v) for k, v in actual.items()}
    coef = list(moved["coef_"]["values"])
    coef[0] *= 1 + 1e-7
    moved["coef_"]["values"] = coef
    assert pin.compare(PINS[name], actual) == []
    assert pin.compare(PINS[name], moved)[0].startswith("coef_")


def test_pins_hold_without_numba():
    """The compiled kernels and their numpy fallbacks give the pinned numbers."""
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "skdp._testing.pin", "--only", "HeavyTailed"],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
