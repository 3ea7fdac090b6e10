"""UCI Adult for the pipeline benchmark: raw columns and the public schema.

The schema (column names, category lists) is the one published in
``adult.names``; the numeric bounds are public domain knowledge about the
census extract (ages 17-90 and hours 1-99 as the census top-codes them, the
capital-gain top-code 99999, a generous range for the weights), not read
from the data.
"""

import os

import numpy as np
import pandas as pd

from benchmarks._common import adult_dir

ADULT_DIR = adult_dir()

COLUMNS = [
    "age", "workclass", "fnlwgt", "education", "education-num", "marital-status",
    "occupation", "relationship", "race", "sex", "capital-gain", "capital-loss",
    "hours-per-week", "native-country", "income",
]  # fmt: skip

NUMERIC_BOUNDS = {
    "age": (17, 90),
    "fnlwgt": (0, 1_500_000),
    "education-num": (1, 16),
    "capital-gain": (0, 99_999),
    "capital-loss": (0, 10_000),
    "hours-per-week": (1, 99),
}
NUMERIC = list(NUMERIC_BOUNDS)

CATEGORIES = {
    "workclass": "Private, Self-emp-not-inc, Self-emp-inc, Federal-gov, Local-gov, "
    "State-gov, Without-pay, Never-worked",
    "education": "Bachelors, Some-college, 11th, HS-grad, Prof-school, Assoc-acdm, "
    "Assoc-voc, 9th, 7th-8th, 12th, Masters, 1st-4th, 10th, Doctorate, 5th-6th, Preschool",
    "marital-status": "Married-civ-spouse, Divorced, Never-married, Separated, Widowed, "
    "Married-spouse-absent, Married-AF-spouse",
    "occupation": "Tech-support, Craft-repair, Other-service, Sales, Exec-managerial, "
    "Prof-specialty, Handlers-cleaners, Machine-op-inspct, Adm-clerical, Farming-fishing, "
    "Transport-moving, Priv-house-serv, Protective-serv, Armed-Forces",
    "relationship": "Wife, Own-child, Husband, Not-in-family, Other-relative, Unmarried",
    "race": "White, Asian-Pac-Islander, Amer-Indian-Eskimo, Other, Black",
    "sex": "Female, Male",
    "native-country": "United-States, Cambodia, England, Puerto-Rico, Canada, Germany, "
    "Outlying-US(Guam-USVI-etc), India, Japan, Greece, South, China, Cuba, Iran, Honduras, "
    "Philippines, Italy, Poland, Jamaica, Vietnam, Mexico, Portugal, Ireland, France, "
    "Dominican-Republic, Laos, Ecuador, Taiwan, Haiti, Columbia, Hungary, Guatemala, "
    "Nicaragua, Scotland, Thailand, Yugoslavia, El-Salvador, Trinadad&Tobago, Peru, Hong, "
    "Holand-Netherlands",
}
CATEGORIES = {k: [c.strip() for c in v.split(",")] for k, v in CATEGORIES.items()}
CATEGORICAL = list(CATEGORIES)


def _read(name):
    df = pd.read_csv(
        os.path.join(ADULT_DIR, name),
        names=COLUMNS,
        skipinitialspace=True,
        comment="|",
        na_values=[],
        keep_default_na=False,
    )
    y = df.pop("income").str.rstrip(".").eq(">50K").astype(int).to_numpy()
    for col in NUMERIC:
        df[col] = df[col].astype(float)
    return df, y


def load_adult():
    """Raw train and test frames (categoricals as strings, "?" kept as a value)."""
    X_train, y_train = _read("adult.data")
    X_test, y_test = _read("adult.test")
    return X_train, y_train, X_test, y_test


def bounds():
    """Public (lower, upper) arrays in the order of ``NUMERIC``."""
    lo = np.array([NUMERIC_BOUNDS[c][0] for c in NUMERIC], dtype=float)
    hi = np.array([NUMERIC_BOUNDS[c][1] for c in NUMERIC], dtype=float)
    return lo, hi
