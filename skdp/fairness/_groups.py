"""Turning ``sensitive_features`` into group codes (shared by metrics and estimator)."""

import numpy as np

from ..exceptions import warn_inferred_set

__all__ = [
    "group_labels_of",
    "inferred_group_labels",
    "encode_groups",
    "normalise_label",
]


def _as_label_array(sensitive_features):
    """One hashable label per row: 1-D as is, several columns as tuples."""
    if hasattr(sensitive_features, "to_numpy"):  # pandas Series / DataFrame
        sensitive_features = sensitive_features.to_numpy()
    sf = np.asarray(sensitive_features, dtype=object)
    if sf.ndim == 0:
        raise ValueError(
            "sensitive_features must be array-like with one entry per row."
        )
    if sf.ndim == 2:
        if sf.shape[1] == 1:
            sf = sf[:, 0]
        else:
            rows = [tuple(r) for r in sf.tolist()]
            sf = np.empty(len(rows), dtype=object)
            sf[:] = rows
    elif sf.ndim > 2:
        raise ValueError("sensitive_features must be 1-D or 2-D.")
    for value in sf.tolist():
        parts = value if isinstance(value, tuple) else (value,)
        if any(_is_missing(v) for v in parts):
            raise ValueError(
                "sensitive_features contains missing values (None, NaN, pd.NA "
                "or NaT); encode them as an explicit group label."
            )
    return sf


def _is_missing(value):
    # pandas' NA and NaT without importing pandas; NaN of any float type is
    # the only value not equal to itself.
    if value is None or type(value).__name__ in ("NAType", "NaTType"):
        return True
    try:
        return bool(value != value)
    except (TypeError, ValueError):
        return False


def _sort_key(label):
    return (type(label).__name__, str(label))


def group_labels_of(sensitive_features):
    """Sorted distinct labels of ``sensitive_features`` (read from the data).

    Parameters
    ----------
    sensitive_features : array-like of shape (n,) or (n, k)
        Several columns are combined into one tuple label per row.

    Returns
    -------
    labels : list

    Examples
    --------
    >>> group_labels_of(["b", "a", "b"])
    ['a', 'b']
    """
    sf = _as_label_array(sensitive_features)
    unique = {normalise_label(v) for v in sf.tolist()}
    try:
        return sorted(unique)
    except TypeError:
        return sorted(unique, key=_sort_key)


def inferred_group_labels(sensitive_features, owner):
    """:func:`group_labels_of` for a fit on private data: warns that it leaks.

    Parameters
    ----------
    sensitive_features : array-like of shape (n,) or (n, k)
    owner : str
        Name of the estimator, for the warning.

    Returns
    -------
    labels : list
    """
    warn_inferred_set(
        owner,
        "groups",
        "groups=[...] (or a group_priors dict)",
        "the dimension of the group operator and each group's weight",
        stacklevel=6,
    )
    return group_labels_of(sensitive_features)


def encode_groups(sensitive_features, labels, n_samples=None):
    """Integer code of each row's group among ``labels``.

    Parameters
    ----------
    sensitive_features : array-like of shape (n,) or (n, k)
    labels : sequence
        Declared (or inferred) group labels.
    n_samples : int, optional
        Expected number of rows.

    Returns
    -------
    codes : ndarray of shape (n,)

    Raises
    ------
    ValueError
        On a length mismatch, a missing value or a label not in ``labels``.

    Examples
    --------
    >>> encode_groups(["b", "a", "b"], ["a", "b"])
    array([1, 0, 1])
    """
    sf = _as_label_array(sensitive_features)
    if n_samples is not None and sf.shape[0] != n_samples:
        raise ValueError(
            f"sensitive_features has {sf.shape[0]} rows but X has {n_samples}."
        )
    index = {}
    for i, label in enumerate(labels):
        index[normalise_label(label)] = i
    codes = np.empty(sf.shape[0], dtype=np.intp)
    for i, value in enumerate(sf.tolist()):
        code = index.get(normalise_label(value))
        if code is None:
            # The value itself is not shown: it would be a further release
            # (nor chained: no KeyError holding it is in flight here).
            raise ValueError(
                "sensitive_features contains a group that is not among the "
                f"declared groups {list(labels)!r}."
            )
        codes[i] = code
    return codes


def normalise_label(label):
    """Hashable, numpy-free form of a group label (tuples for several columns)."""
    # numpy scalars and Python scalars must match (np.int64(1) == 1).
    if isinstance(label, (tuple, list)):
        return tuple(normalise_label(v) for v in label)
    if isinstance(label, np.generic):
        return label.item()
    return label
