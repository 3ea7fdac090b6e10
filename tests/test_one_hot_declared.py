"""OneHotEncoder's fitted state comes from the declared categories alone.

Issue 32, finding 5: the encoder was fitted on the private column, so one
undeclared value changed ``categories_``' dtype and the feature names, and
whether the fit raised. These tests fit neighbouring columns (one value
replaced) and require the fitted encoders to be indistinguishable.
"""

import pickle

import numpy as np
import pytest
import sklearn.preprocessing as sk

from skdp.preprocessing import OneHotEncoder

BASE = [[0], [1], [2], [1], [0]]
# the neighbours: the last record replaced by an undeclared float, a string
NEIGHBOURS = [BASE, BASE[:-1] + [[2.5]], BASE[:-1] + [["x"]]]


def _fitted_state(encoder):
    return (
        [(cats.dtype, cats.tolist()) for cats in encoder.categories_],
        encoder.get_feature_names_out().tolist(),
        None if encoder.drop_idx_ is None else encoder.drop_idx_.tolist(),
    )


@pytest.mark.parametrize("drop", [None, "first"])
@pytest.mark.parametrize("declared", [[0, 1, 2], [0.0, 1.0, 2.0], ["0", "1", "2"]])
def test_neighbouring_columns_give_identical_encoders(declared, drop):
    states = []
    for X in NEIGHBOURS:
        encoder = OneHotEncoder(categories=[declared], drop=drop).fit(X)
        states.append(_fitted_state(encoder))
        assert encoder.categories_[0].dtype == np.asarray(declared).dtype or (
            encoder.categories_[0].dtype == object
        )
    assert states[0] == states[1] == states[2]


def test_declared_integers_keep_their_dtype_and_names():
    encoder = OneHotEncoder(categories=[[0, 1, 2]]).fit(NEIGHBOURS[1])
    assert encoder.categories_[0].dtype == np.int64
    assert encoder.get_feature_names_out().tolist() == ["x0_0", "x0_1", "x0_2"]


def test_whether_fit_raises_does_not_depend_on_the_data():
    # Unsorted numbers are refused from the declaration, for every neighbour
    # (scikit-learn refused them on an all-numeric column only).
    for X in NEIGHBOURS:
        with pytest.raises(ValueError, match="must be sorted"):
            OneHotEncoder(categories=[[2, 0, 1]]).fit(X)
    # Unsorted strings are fine (scikit-learn keeps their declared order).
    for X in NEIGHBOURS:
        encoder = OneHotEncoder(categories=[["b", "a"]]).fit(X)
        assert encoder.categories_[0].tolist() == ["b", "a"]


def test_pickled_state_is_identical_between_neighbours():
    blobs = {
        pickle.dumps(OneHotEncoder(categories=[[0, 1, 2]]).fit(X).__dict__)
        for X in NEIGHBOURS
    }
    assert len(blobs) == 1


def test_transform_encodes_an_undeclared_value_of_any_type_as_zeros():
    encoder = OneHotEncoder(categories=[[0, 1, 2]]).fit(BASE)
    Xt = encoder.transform([[0], [1], ["x"], [2.5], [2.0], [np.nan]])
    np.testing.assert_array_equal(
        Xt, [[1, 0, 0], [0, 1, 0], [0, 0, 0], [0, 0, 0], [0, 0, 1], [0, 0, 0]]
    )
    # declared strings, numeric rows: unknown, not an error
    strings = OneHotEncoder(categories=[["a", "b"]]).fit(np.array([[1.0], [2.0]]))
    np.testing.assert_array_equal(strings.transform(np.array([[1.0]])), [[0, 0]])
    with pytest.raises(ValueError, match="outside the declared categories"):
        OneHotEncoder(categories=[[0, 1, 2]], handle_unknown="error", delta=1e-6).fit(
            NEIGHBOURS[2]
        )


@pytest.mark.parametrize("drop", [None, "first", "if_binary"])
def test_well_typed_data_matches_sklearn_with_the_same_categories(drop):
    rng = np.random.default_rng(0)
    numeric = rng.integers(0, 3, size=(30, 2))
    strings = rng.choice(["a", "b"], size=(30, 1)).astype(object)
    for X, cats in (
        (numeric, [[0, 1, 2], [0, 1, 2, 3]]),
        (numeric.astype(float), [[0.0, 1.0, 2.0], [0.0, 1.0, 2.0]]),
        (strings, [["a", "b", "c"]]),
    ):
        ours = OneHotEncoder(categories=cats, drop=drop).fit(X)
        ref = sk.OneHotEncoder(
            categories=cats, drop=drop, handle_unknown="ignore", sparse_output=False
        ).fit(X)
        for a, b in zip(ours.categories_, ref.categories_):
            assert a.dtype == b.dtype
            assert a.tolist() == b.tolist()
        np.testing.assert_array_equal(ours.transform(X), ref.transform(X))
        assert (
            ours.get_feature_names_out().tolist()
            == ref.get_feature_names_out().tolist()
        )
        np.testing.assert_array_equal(ours.drop_idx_ is None, ref.drop_idx_ is None)
        np.testing.assert_array_equal(
            ours.inverse_transform(ours.transform(X)),
            ref.inverse_transform(ref.transform(X)),
        )


def test_categorical_column_of_numbers_against_declared_strings():
    # A pandas categorical column is converted by the kind of its values:
    # numbers gave a TypeError at transform (numeric values against object
    # categories) while a neighbour with one string value transformed.
    import pandas as pd

    outputs = []
    for last in (0, "x"):
        X = pd.DataFrame({"c": [0, 1, 1, last]}).astype("category")
        encoder = OneHotEncoder(categories=[["a", "b"]]).fit(X)
        outputs.append(encoder.transform(X.iloc[:3]))
    np.testing.assert_array_equal(outputs[0], np.zeros((3, 2)))
    np.testing.assert_array_equal(outputs[0], outputs[1])
