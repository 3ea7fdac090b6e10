"""Pinned outputs: every estimator and option, fitted on small synthetic data.

``tests/test_pinned_outputs.py`` refits every configuration in
:data:`PINNED_CONFIGS` (finite epsilon, ``random_state=0``, a few hundred
synthetic rows) and compares the fitted numbers (``coef_``, ``intercept_``,
``alpha_``, ``privacy_spent_``, transformed values, predictions, ...) with the
values stored in ``tests/pinned_outputs.json`` at ``rtol=1e-9``. A
behaviour-preserving change keeps them; a deliberate change of numbers
regenerates them, in its own commit, with::

    python -m skdp._testing.pin --write               # every configuration
    python -m skdp._testing.pin --write --only BilevelRidge   # names containing a string

``python -m skdp._testing.pin`` (no ``--write``) only reports which
configurations moved. The pins hold with numba's compiled kernels on and off
(``NUMBA_DISABLE_JIT=1``): the test suite runs in both modes against one file.
"""

import argparse
import json
import math
import sys
import time
import warnings
from pathlib import Path

import numpy as np

__all__ = [
    "PINNED_CONFIGS",
    "PIN_FILE",
    "RTOL",
    "compare",
    "compute_all",
    "compute_pins",
]

RTOL = 1e-9
ATOL = 1e-12
PIN_FILE = Path(__file__).resolve().parents[2] / "tests" / "pinned_outputs.json"

# Fitted attributes pinned when present (numbers only). An attribute listed here
# and absent after a fit is reported as moved.
_ATTRIBUTES = (
    "coef_",
    "intercept_",
    "alpha_",
    "alphas_",
    "privacy_spent_",
    "delta_",
    "n_iter_",
    "feature_norm_",
    "target_bound_",
    "scale_",
    "mean_",
    "var_",
    "data_min_",
    "data_max_",
    "statistics_",
    "best_index_",
    "dual_",
    "group_weights_",
)


def _regression(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(df=5, size=(n, d))
    y = X @ np.linspace(1.0, -0.5, d) + 0.5 + rng.standard_t(df=4, size=n)
    return X, y


def _classification(n=300, d=4, n_classes=2, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    W = rng.normal(size=(d, n_classes))
    y = np.argmax(X @ W + rng.gumbel(size=(n, n_classes)), axis=1)
    groups = rng.choice([0, 1], size=n, p=[0.6, 0.4])
    return X, y, groups


def _skdp():
    import skdp
    from skdp import preprocessing
    from skdp.model_selection import PrivateSearchCV

    return skdp, preprocessing, PrivateSearchCV


def _bilevel(**params):
    def make():
        skdp, _, _ = _skdp()
        base = {"epsilon": 2.0, "feature_norm": 4.0, "target_bound": 6.0}
        return skdp.BilevelRidge(**{**base, **params})

    return make, "regression"


def _heavy(cls_name, data, **params):
    def make():
        skdp, _, _ = _skdp()
        return getattr(skdp, cls_name)(**{"epsilon": 2.0, **params})

    return make, data


def _minimax(**params):
    def make():
        skdp, _, _ = _skdp()
        base = {
            "epsilon": 10.0,
            "classes": [0, 1],
            "groups": [0, 1],
            "max_iter": 5,
        }
        return skdp.MinimaxFairClassifier(**{**base, **params})

    return make, "groups"


def _minimax_multinomial(data, classes=(0, 1, 2), **params):
    def make():
        skdp, _, _ = _skdp()
        return skdp.MinimaxFairClassifier(classes=list(classes), **params)

    return make, data


_SUBSAMPLED = {
    "solver": "nseg",
    "epsilon": 1.0,
    "feature_norm": 3.0,
    "batch_size": 150,
    "max_iter": 2,
}


def _transformer(name, data="transform", **params):
    def make():
        _, preprocessing, _ = _skdp()
        return getattr(preprocessing, name)(**params)

    return make, data


def _search():
    def make():
        skdp, _, PrivateSearchCV = _skdp()
        return PrivateSearchCV(
            skdp.HeavyTailedLinearRegression(max_iter=5),
            param_grid={"max_iter": [3, 5]},
            mean_trials=3.0,
            epsilon=5.0,
            loss_bound=4.0,
        )

    return make, "regression"


# {name: (factory, data kind)}: every estimator and transformer, every
# ``solver=`` / ``inner_solver=`` / ``tuning=`` / ``multi_class=`` / ``loss=``
# / ``sampling=`` option. ``random_state=0`` is set on every instance.
PINNED_CONFIGS = {
    # BilevelRidge: each valid (inner_solver, tuning) pair, plus the noisy outer step.
    "BilevelRidge[gd,risk_estimate]": _bilevel(),
    "BilevelRidge[gd,path]": _bilevel(tuning="path"),
    "BilevelRidge[sufficient_statistics,bilevel]": _bilevel(
        inner_solver="sufficient_statistics", max_iter=20
    ),
    "BilevelRidge[sufficient_statistics,bilevel,outer_noise]": _bilevel(
        inner_solver="sufficient_statistics", max_iter=20, outer_noise=True
    ),
    "BilevelRidge[sufficient_statistics,risk_estimate]": _bilevel(
        inner_solver="sufficient_statistics", tuning="risk_estimate"
    ),
    "BilevelRidge[output_perturbation,bilevel]": _bilevel(
        inner_solver="output_perturbation", max_iter=20
    ),
    "BilevelRidge[loc_gd,bilevel]": _bilevel(
        inner_solver="loc_gd", max_iter=5, inner_max_iter=20
    ),
    "BilevelRidge[sufficient_statistics,estimated_bounds]": (
        lambda: _skdp()[0].BilevelRidge(
            epsilon=2.0, inner_solver="sufficient_statistics", max_iter=20
        ),
        "regression",
    ),
    "BilevelRidge[gd,estimated_bounds]": (
        lambda: _skdp()[0].BilevelRidge(epsilon=2.0),
        "regression",
    ),
    # HeavyTailedLinearRegression: solver x loss, estimated and given bounds.
    "HeavyTailedLinearRegression[known_lipschitz,squared]": _heavy(
        "HeavyTailedLinearRegression", "regression", max_iter=20
    ),
    "HeavyTailedLinearRegression[known_lipschitz,huber,center]": _heavy(
        "HeavyTailedLinearRegression",
        "regression",
        loss="huber",
        max_iter=20,
        center=True,
        feature_norm=5.0,
    ),
    "HeavyTailedLinearRegression[onepass,squared]": _heavy(
        "HeavyTailedLinearRegression", "regression", solver="onepass"
    ),
    "HeavyTailedLinearRegression[onepass,huber]": _heavy(
        "HeavyTailedLinearRegression", "regression", solver="onepass", loss="huber"
    ),
    "HeavyTailedLinearRegression[localized,squared]": _heavy(
        "HeavyTailedLinearRegression", "regression", solver="localized", max_iter=10
    ),
    "HeavyTailedLinearRegression[localized,huber]": _heavy(
        "HeavyTailedLinearRegression",
        "regression",
        solver="localized",
        loss="huber",
        max_iter=10,
    ),
    # HeavyTailedLogisticRegression: solver x (binary, multinomial, ovr).
    "HeavyTailedLogisticRegression[known_lipschitz,binary]": _heavy(
        "HeavyTailedLogisticRegression", "binary", classes=[0, 1], max_iter=20
    ),
    "HeavyTailedLogisticRegression[known_lipschitz,multinomial,center]": _heavy(
        "HeavyTailedLogisticRegression",
        "multiclass",
        epsilon=10.0,
        classes=[0, 1, 2],
        max_iter=20,
        center=True,
        feature_norm=5.0,
    ),
    "HeavyTailedLogisticRegression[known_lipschitz,ovr]": _heavy(
        "HeavyTailedLogisticRegression",
        "multiclass",
        epsilon=10.0,
        classes=[0, 1, 2],
        multi_class="ovr",
        max_iter=20,
        feature_norm=5.0,
    ),
    "HeavyTailedLogisticRegression[onepass,binary]": _heavy(
        "HeavyTailedLogisticRegression", "binary", classes=[0, 1], solver="onepass"
    ),
    "HeavyTailedLogisticRegression[onepass,ovr]": _heavy(
        "HeavyTailedLogisticRegression",
        "multiclass",
        epsilon=10.0,
        classes=[0, 1, 2],
        solver="onepass",
        multi_class="ovr",
        feature_norm=5.0,
    ),
    "HeavyTailedLogisticRegression[localized,binary]": _heavy(
        "HeavyTailedLogisticRegression",
        "binary",
        classes=[0, 1],
        solver="localized",
        max_iter=10,
    ),
    "HeavyTailedLogisticRegression[localized,ovr]": _heavy(
        "HeavyTailedLogisticRegression",
        "multiclass",
        epsilon=10.0,
        classes=[0, 1, 2],
        solver="localized",
        multi_class="ovr",
        max_iter=10,
        feature_norm=5.0,
    ),
    # MinimaxFairClassifier: solver x sampling, estimated and given bounds.
    "MinimaxFairClassifier[gda]": _minimax(),
    "MinimaxFairClassifier[gda,center]": _minimax(center=True),
    "MinimaxFairClassifier[gda,feature_norm]": _minimax(feature_norm=3.0),
    # Multinomial gda (K = 3): one group, where the bound-share and the
    # one-group averaging rules act; three groups at a noise ratio above 0.4,
    # where the clip rule acts (saddle_point/plan.py).
    "MinimaxFairClassifier[gda,multinomial]": _minimax_multinomial(
        "multiclass", epsilon=2.0, max_iter=5
    ),
    "MinimaxFairClassifier[gda,multinomial,groups]": _minimax_multinomial(
        "multiclass_groups", epsilon=0.5, max_iter=60, groups=[0, 1]
    ),
    # One group, p K = 310 coefficients: the averaging start grows with p K.
    "MinimaxFairClassifier[gda,multinomial,wide]": _minimax_multinomial(
        "multiclass_wide", classes=range(10), epsilon=1.0, max_iter=20
    ),
    # The subsampled solvers calibrate with PLD / RDP, which is slow at large
    # epsilon: epsilon=1, two steps of 150 rows keep each fit ~2 s.
    "MinimaxFairClassifier[nseg,poisson]": _minimax(**_SUBSAMPLED),
    "MinimaxFairClassifier[nseg,without_replacement]": _minimax(
        **_SUBSAMPLED, sampling="without_replacement"
    ),
    "MinimaxFairClassifier[nseg,disjoint]": _minimax(
        solver="nseg", sampling="disjoint", batch_size=50, max_iter=None
    ),
    "MinimaxFairClassifier[nispp,poisson]": _minimax(
        **{**_SUBSAMPLED, "solver": "nispp"}
    ),
    "MinimaxFairClassifier[nispp,disjoint]": _minimax(
        solver="nispp", sampling="disjoint", batch_size=50, max_iter=None
    ),
    # Transformers.
    "MinMaxScaler[bounds]": _transformer("MinMaxScaler", bounds=(-3.0, 3.0)),
    "MinMaxScaler[estimated]": _transformer("MinMaxScaler", epsilon=50.0),
    "StandardScaler[bounds]": _transformer("StandardScaler", bounds=(-3.0, 3.0)),
    "StandardScaler[estimated]": _transformer("StandardScaler", epsilon=50.0),
    "SimpleImputer[constant]": _transformer("SimpleImputer", "missing"),
    "SimpleImputer[mean]": _transformer(
        "SimpleImputer", "missing", strategy="mean", bounds=(-3.0, 3.0)
    ),
    "OneHotEncoder": (
        lambda: _skdp()[1].OneHotEncoder(categories=[[0.0, 1.0, 2.0]]),
        "categorical",
    ),
    # Model selection.
    "PrivateSearchCV": _search(),
    # Inherited-seed clones (cross_val_score): their streams derive from the
    # parameters, so renaming or adding one must not move these.
    "cross_val_score[HeavyTailedLinearRegression]": _heavy(
        "HeavyTailedLinearRegression", "cv", max_iter=5
    ),
    "cross_val_score[BilevelRidge]": _bilevel(),
    "cross_val_score[BilevelRidge,sufficient_statistics]": _bilevel(
        inner_solver="sufficient_statistics", max_iter=5
    ),
    "cross_val_score[MinimaxFairClassifier]": _minimax(),
}


def _data(kind):
    if kind in ("regression", "cv"):
        X, y = _regression()
        return X, y, {}
    if kind == "binary":
        X, y, _ = _classification()
        return X, y, {}
    if kind == "multiclass":
        X, y, _ = _classification(n_classes=3)
        return X, y, {}
    if kind == "groups":
        X, y, groups = _classification()
        return X, y, {"sensitive_features": groups}
    if kind == "multiclass_wide":
        X, y, _ = _classification(d=30, n_classes=10)
        return X, y, {}
    if kind == "multiclass_groups":
        X, y, groups = _classification(n_classes=3)
        return X, y, {"sensitive_features": groups}
    if kind == "transform":
        X, _ = _regression()
        return X, None, {}
    if kind == "missing":
        X, _ = _regression()
        X = X.copy()
        X[::7, 1] = np.nan
        return X, None, {}
    if kind == "categorical":
        rng = np.random.default_rng(2)
        return rng.integers(0, 3, size=(200, 1)).astype(float), None, {}
    raise ValueError(kind)


def _to_list(value):
    """JSON form of a numeric attribute, or ``None`` if it is not numeric."""
    if isinstance(value, (tuple, list)):
        try:
            arr = np.asarray(value, dtype=float)
        except (TypeError, ValueError):
            return None
    else:
        arr = np.asarray(value)
        if arr.dtype == object or not (
            np.issubdtype(arr.dtype, np.number) or arr.dtype == bool
        ):
            return None
        arr = arr.astype(float)
    # JSON has no inf/nan: store them as strings.
    return [x if math.isfinite(x) else repr(x) for x in arr.ravel().tolist()], list(
        arr.shape
    )


def compute_pins(name):
    """Fit one configuration of :data:`PINNED_CONFIGS` and return its numbers.

    Parameters
    ----------
    name : str
        A key of :data:`PINNED_CONFIGS`.

    Returns
    -------
    dict
        ``{output name: {"values": [...], "shape": [...]}}``: the pinned
        attributes present after the fit, plus ``predict``,
        ``predict_proba`` or ``transform`` on the first 20 training rows.

    Examples
    --------
    >>> pins = compute_pins("SimpleImputer[constant]")
    >>> "transform" in pins
    True
    """
    factory, kind = PINNED_CONFIGS[name]
    est = factory()
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    X, y, fit_params = _data(kind)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if name.startswith("cross_val_score"):
            from sklearn.model_selection import cross_val_score

            scores = cross_val_score(est, X, y, cv=3, params=fit_params)
            return {"cv_scores": {"values": scores.tolist(), "shape": [3]}}
        if y is None:
            est.fit(X, **fit_params)
        else:
            est.fit(X, y, **fit_params)
        out = {}
        for attr in _ATTRIBUTES:
            if hasattr(est, attr):
                stored = _to_list(getattr(est, attr))
                if stored is not None:
                    out[attr] = stored
        head = X[:20]
        for method in ("predict", "predict_proba", "transform"):
            if hasattr(est, method):
                result = getattr(est, method)(head)
                if hasattr(result, "toarray"):
                    result = result.toarray()
                stored = _to_list(result)
                if stored is not None:
                    out[method] = stored
    return {k: {"values": v[0], "shape": v[1]} for k, v in out.items()}


def compute_all(only=None):
    """Compute the pins of every configuration whose name contains ``only``.

    Parameters
    ----------
    only : str or None, default=None
        Substring filter on configuration names; ``None``: all.

    Returns
    -------
    dict
        ``{configuration name: compute_pins(name)}``.

    Examples
    --------
    >>> sorted(compute_all("OneHotEncoder"))
    ['OneHotEncoder']
    """
    return {
        name: compute_pins(name)
        for name in PINNED_CONFIGS
        if only is None or only in name
    }


def _as_array(values):
    return np.array([float(v) for v in values], dtype=float)


def compare(expected, actual, rtol=RTOL, atol=ATOL):
    """Differences between two pin dictionaries of one configuration.

    Parameters
    ----------
    expected, actual : dict
        Outputs of :func:`compute_pins` (``actual`` may hold more outputs).
    rtol, atol : float
        Tolerances of :func:`numpy.allclose` (NaN equals NaN).

    Returns
    -------
    list of str
        One line per output that moved; empty if all agree.

    Examples
    --------
    >>> a = {"coef_": {"values": [1.0], "shape": [1]}}
    >>> compare(a, {"coef_": {"values": [1.5], "shape": [1]}})
    ['coef_: max |diff| 0.5 (max rel 0.5)']
    """
    problems = []
    for key, exp in expected.items():
        if key not in actual:
            problems.append(f"{key}: missing after fit")
            continue
        got = actual[key]
        if list(exp["shape"]) != list(got["shape"]):
            problems.append(f"{key}: shape {got['shape']} != pinned {exp['shape']}")
            continue
        e, a = _as_array(exp["values"]), _as_array(got["values"])
        if not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
            with np.errstate(all="ignore"):
                diff = np.abs(a - e)
                rel = diff / np.maximum(np.abs(e), atol)
            problems.append(
                f"{key}: max |diff| {np.nanmax(diff):.3g} "
                f"(max rel {np.nanmax(rel):.3g})"
            )
    return problems


def load(path=PIN_FILE):
    """Read the pinned-output file.

    Parameters
    ----------
    path : path-like, default=PIN_FILE
        The JSON file written by ``python -m skdp._testing.pin --write``.

    Returns
    -------
    dict
        ``{configuration name: pins}``.
    """
    with open(path) as f:
        return json.load(f)["pins"]


def main(argv=None):
    """Command line: check or (``--write``) regenerate the pinned outputs."""
    parser = argparse.ArgumentParser(prog="python -m skdp._testing.pin")
    parser.add_argument("--write", action="store_true", help="rewrite the pin file")
    parser.add_argument("--only", default=None, help="configurations containing this")
    parser.add_argument("--path", default=str(PIN_FILE))
    args = parser.parse_args(argv)
    path = Path(args.path)
    existing = load(path) if path.exists() else {}
    start = time.perf_counter()
    moved = 0
    new = {}
    for name in PINNED_CONFIGS:
        if args.only is not None and args.only not in name:
            continue
        t0 = time.perf_counter()
        new[name] = compute_pins(name)
        problems = compare(existing[name], new[name]) if name in existing else ["new"]
        moved += bool(problems)
        status = "ok" if not problems else "; ".join(problems)
        print(f"{name:<65s} {time.perf_counter() - t0:5.2f}s  {status}")
    print(
        f"{len(new)} configurations, {moved} moved, {time.perf_counter() - start:.1f}s"
    )
    if args.write:
        merged = {**existing, **new}
        # Drop configurations that no longer exist.
        merged = {k: merged[k] for k in PINNED_CONFIGS if k in merged}
        payload = {
            "regenerate": "python -m skdp._testing.pin --write [--only NAME]",
            "rtol": RTOL,
            "pins": merged,
        }
        path.write_text(json.dumps(payload, indent=1, sort_keys=False) + "\n")
        print(f"wrote {path}")
    return 0 if (moved == 0 or args.write) else 1


if __name__ == "__main__":
    sys.exit(main())
