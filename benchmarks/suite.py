"""The dataset suite: tables, the two fixed halves, the three views and the splits.

The tables live in ``shared/datasets/suite/`` (57 real tables, stored raw, with
a ``manifest.json`` that declares each table's schema). The folder is found
from the environment variable ``SKDP_SUITE_DIR`` or else as
``<ancestor of the repository>/shared/datasets/suite``.

Preprocessing here is public in the sense of issue 31: every constant is a
training-split constant (median, mean, standard deviation) or a declared fact
of the manifest (categories, classes). It is *not* differentially private; the
``pipeline`` view is the one that preprocesses privately.
"""

import hashlib
import json
import os
import warnings
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import OneHotEncoder

REPO_ROOT = Path(__file__).resolve().parent.parent
HALVES_FILE = Path(__file__).resolve().parent / "halves.json"
HALVES_SEED = "skdp-suite-halves-v1:"
TASKS = ("regression", "binary", "multiclass")
VIEWS = ("standardised", "raw", "pipeline")
TEST_SIZE = 0.3
#: Level of a sensitive column's missing values, declared as a group when the
#: column has missing values (it is not one of the manifest's categories).
MISSING_GROUP = "(missing)"


#: One sentence per view for the reports' headers.
VIEW_NOTES = {
    "standardised": (
        "standardised: numeric features imputed with the training median and standardised with "
        "the training mean and std; categoricals one-hot with the manifest's categories "
        "(drop='if_binary', missing as an all-zero row); the regression target standardised "
        "with the training mean and std, so mse is in units of the training variance. These "
        "constants are read without privacy."
    ),
    "raw": (
        "raw: as standardised, but numeric features and the target in their own units "
        "(training-median imputation only); mse in squared target units."
    ),
    "pipeline": (
        "pipeline: the raw frame through skdp.preprocessing (SimpleImputer(strategy='constant', "
        "fill 0), StandardScaler() with private bounds, OneHotEncoder(manifest categories)) and "
        "the skdp estimator, one total (epsilon, delta) on a shared PrivacyAccountant (5% of "
        "mu**2 to the scaler, checked with skdp.spent); the target standardised with training "
        "constants (not private), as in the standardised view. On the two smallest-n tables of "
        "each task in each half; its baselines are the standardised view's."
    ),
}


def suite_dir():
    """Folder of the suite: ``$SKDP_SUITE_DIR`` or ``shared/datasets/suite`` above the repo."""
    if os.environ.get("SKDP_SUITE_DIR"):
        return Path(os.environ["SKDP_SUITE_DIR"])
    for parent in REPO_ROOT.parents:
        candidate = parent / "shared" / "datasets" / "suite"
        if (candidate / "manifest.json").exists():
            return candidate
    raise FileNotFoundError(
        "dataset suite not found: set SKDP_SUITE_DIR to the folder with manifest.json"
    )


@lru_cache(maxsize=1)
def manifest():
    """Manifest entries by table name (in the manifest's order)."""
    entries = json.loads((suite_dir() / "manifest.json").read_text(encoding="utf-8"))
    return {entry["name"]: entry for entry in entries}


def compute_halves():
    """The development and confirmation halves, stratified by task.

    Per task, the table names are sorted by SHA-256 of ``HALVES_SEED + name``
    and assigned alternately to ``dev`` and ``confirm``, starting with ``dev``.
    """
    halves = {"dev": [], "confirm": []}
    for task in TASKS:
        names = [name for name, entry in manifest().items() if entry["task"] == task]
        names.sort(
            key=lambda name: hashlib.sha256((HALVES_SEED + name).encode()).hexdigest()
        )
        for position, name in enumerate(names):
            halves["dev" if position % 2 == 0 else "confirm"].append(name)
    return halves


def committed_halves():
    """The halves committed in ``benchmarks/halves.json``."""
    return json.loads(HALVES_FILE.read_text(encoding="utf-8"))


def check_halves():
    """Raise if the committed halves differ from the ones the rule gives."""
    computed, committed = compute_halves(), committed_halves()
    if computed != committed:
        raise RuntimeError(
            "benchmarks/halves.json differs from the halves the rule computes "
            "(did the manifest change?); regenerate it with "
            "`python -m benchmarks.suite --write-halves` only if that is intended."
        )
    return committed


def half_of(name):
    """``"dev"`` or ``"confirm"``."""
    return "dev" if name in committed_halves()["dev"] else "confirm"


def select_tables(halves=("dev", "confirm"), tasks=TASKS, names=None):
    """Table names of the given halves and tasks (or the given names), in manifest order."""
    chosen = set()
    for half in halves:
        chosen.update(committed_halves()[half])
    selected = [
        name
        for name, entry in manifest().items()
        if name in chosen
        and entry["task"] in tasks
        and (names is None or name in names)
    ]
    if names is not None:
        unknown = sorted(set(names) - set(manifest()))
        if unknown:
            raise KeyError(f"unknown tables: {unknown}")
    return selected


def smallest_tables(per_task, half):
    """The ``per_task`` smallest-n tables of each task in ``half``."""
    names = []
    for task in TASKS:
        in_task = [n for n in committed_halves()[half] if manifest()[n]["task"] == task]
        in_task.sort(key=lambda n: manifest()[n]["n_rows"])
        names.extend(in_task[:per_task])
    return names


def pipeline_tables():
    """Tables of the pipeline view: the two smallest-n tables of each task in each half."""
    return set(smallest_tables(2, "dev")) | set(smallest_tables(2, "confirm"))


@lru_cache(maxsize=4)
def load(name):
    """Raw frame of a table and its manifest entry (categoricals and labels as strings)."""
    entry = manifest()[name]
    as_str = list(entry["categorical"]) + (
        [entry["target"]] if entry["task"] != "regression" else []
    )
    frame = pd.read_csv(
        suite_dir() / entry["file"],
        dtype={column: str for column in as_str},
        keep_default_na=False,
        na_values=[""],
    )
    for column in entry["numeric"]:
        frame[column] = frame[column].astype(float)
    return frame, entry


def classes_of(entry):
    """Declared classes: ``[0, 1]`` for binary, the manifest's labels for multiclass."""
    if entry["task"] == "binary":
        return [0, 1]
    if entry["task"] == "multiclass":
        return list(entry["classes"])
    return None


def groups_of(entry, frame):
    """Declared groups of the sensitive column (its categories, plus a missing level if any)."""
    column = entry["sensitive"]
    if column is None:
        return None
    groups = list(entry["categories"][column])
    if frame[column].isna().any():
        groups.append(MISSING_GROUP)
    return groups


class Split:
    """One train/test split of a table, and the arrays of its views.

    Attributes
    ----------
    name, entry, seed : the table, its manifest entry and the split seed.
    y_train, y_test : ndarray
        Regression: the target in its own units; classification: class codes
        (indices into :func:`classes_of`).
    groups_train, groups_test : ndarray of str or None
        The sensitive column (missing as ``MISSING_GROUP``).
    """

    def __init__(self, name, seed):
        frame, entry = load(name)
        self.name, self.entry, self.seed = name, entry, seed
        self.task = entry["task"]
        self.classes = classes_of(entry)
        self.groups = groups_of(entry, frame)
        features = frame[entry["numeric"] + entry["categorical"]]
        target = frame[entry["target"]]
        if self.task == "binary":
            codes = (target == entry["positive"]).astype(int).to_numpy()
        elif self.task == "multiclass":
            codes = pd.Categorical(target, categories=entry["classes"]).codes.astype(
                int
            )
        else:
            codes = target.to_numpy(dtype=float)
        index = np.arange(len(frame))
        train, test = train_test_split(
            index,
            test_size=TEST_SIZE,
            random_state=seed,
            stratify=None if self.task == "regression" else codes,
        )
        self.X_train_frame = features.iloc[train].reset_index(drop=True)
        self.X_test_frame = features.iloc[test].reset_index(drop=True)
        self.y_train, self.y_test = codes[train], codes[test]
        if entry["sensitive"] is not None:
            sensitive = (
                frame[entry["sensitive"]].fillna(MISSING_GROUP).to_numpy(dtype=object)
            )
            self.groups_train = sensitive[train].astype(str)
            self.groups_test = sensitive[test].astype(str)
        else:
            self.groups_train = self.groups_test = None
        self.n_train, self.n_test = len(train), len(test)
        self.delta = min(1e-6, 1.0 / self.n_train**2)
        self._views = {}

    def view(self, view):
        """``(X_train, X_test, y_train, y_test)`` of ``"standardised"`` or ``"raw"``.

        Numeric columns: training-median imputation, and in the standardised
        view the training mean and standard deviation. Categoricals: one-hot
        with the manifest's categories (``drop="if_binary"``, unknown and
        missing as an all-zero row). Regression target: standardised with the
        training mean and standard deviation in the standardised view, raw
        units in the raw view.
        """
        if view not in self._views:
            self._views[view] = self._encode(standardise=view == "standardised")
        return self._views[view]

    def _encode(self, standardise):
        entry = self.entry
        numeric = entry["numeric"]
        blocks_train, blocks_test = [], []
        if numeric:
            num_train = self.X_train_frame[numeric].to_numpy(dtype=float)
            num_test = self.X_test_frame[numeric].to_numpy(dtype=float)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # all-missing column
                median = np.nan_to_num(np.nanmedian(num_train, axis=0))
            num_train = np.where(np.isnan(num_train), median, num_train)
            num_test = np.where(np.isnan(num_test), median, num_test)
            if standardise:
                mean, std = num_train.mean(axis=0), num_train.std(axis=0)
                std = np.where(std > 0, std, 1.0)
                num_train, num_test = (num_train - mean) / std, (num_test - mean) / std
            blocks_train.append(num_train)
            blocks_test.append(num_test)
        if entry["categorical"]:
            encoder = self.one_hot_encoder()
            cat_train = self.categorical_strings(self.X_train_frame)
            cat_test = self.categorical_strings(self.X_test_frame)
            with warnings.catch_warnings():
                warnings.simplefilter(
                    "ignore"
                )  # unknown (missing) values of a binary column
                blocks_train.append(encoder.fit(cat_train).transform(cat_train))
                blocks_test.append(encoder.transform(cat_test))
        X_train, X_test = np.hstack(blocks_train), np.hstack(blocks_test)
        y_train, y_test = self.y_train, self.y_test
        if self.task == "regression" and standardise:
            y_train, y_test = self.standardise_target()
        return X_train, X_test, y_train, y_test

    def one_hot_encoder(self):
        """scikit-learn encoder with the manifest's categories (fit reads only the schema)."""
        categories = [self.entry["categories"][c] for c in self.entry["categorical"]]
        return OneHotEncoder(
            categories=categories,
            drop="if_binary",
            handle_unknown="ignore",
            sparse_output=False,
        )

    def categorical_strings(self, frame):
        """Categorical columns as strings, missing as a value outside every declared level."""
        return (
            frame[self.entry["categorical"]].fillna("\0missing").to_numpy(dtype=object)
        )

    def standardise_target(self):
        """Regression target standardised with the training mean and standard deviation."""
        mean, std = self.y_train.mean(), self.y_train.std()
        std = std if std > 0 else 1.0
        return (self.y_train - mean) / std, (self.y_test - mean) / std


def _write_halves():
    HALVES_FILE.write_text(
        json.dumps(compute_halves(), indent=1) + "\n", encoding="utf-8"
    )


if __name__ == "__main__":
    import sys

    if "--write-halves" in sys.argv:
        _write_halves()
    print(json.dumps(check_halves(), indent=1))
