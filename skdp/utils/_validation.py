"""Input helpers: clipping to public bounds and privacy-parameter resolution.

Data outside a public bound is clipped, never rejected: an error that depends
on a record's value would itself reveal something about it.
"""

import numbers
import re
import warnings

import numpy as np
from sklearn.utils import multiclass as _sklearn_multiclass
from sklearn.utils import validation as _sklearn_validation

__all__ = [
    "safe_row_norms",
    "clip_rows",
    "clip_factors",
    "clip_targets",
    "resolve_delta",
    "check_generator",
    "add_intercept_column",
    "check_declared_classes",
    "validate_data",
    "check_array",
    "check_classification_targets",
    "unechoed",
]


def safe_row_norms(X):
    """Euclidean norm of each row without overflow for huge entries.

    Parameters
    ----------
    X : ndarray of shape (n, d)

    Returns
    -------
    norms : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> safe_row_norms(np.array([[3.0, 4.0], [1e300, 1e300]]))
    array([5.00000000e+000, 1.41421356e+300])
    """
    X = np.asarray(X, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    # Private rows: every operation below is silent (a warning raised by one
    # record and not by its neighbour would be a release), and its value is
    # kept, never discarded.
    with np.errstate(all="ignore"):
        norms = np.sqrt(np.einsum("ij,ij->i", X, X))
        # Only rows whose squares may have overflowed or underflowed need
        # rescaling; keep the one-pass result for the rest.
        redo = ~np.isfinite(norms) | (norms > 1e150) | (norms < 1e-150)
        if np.any(redo):
            R = X[redo]
            scale = _row_scales(R)
            Rs = R / scale[:, None]  # entries in [-1, 1]; tiny ones may flush to 0
            # sqrt(...) is in [1, sqrt(d)]: the product overflows to inf only
            # when the true norm exceeds the largest float (correctly rounded).
            norms[redo] = scale * np.sqrt(np.einsum("ij,ij->i", Rs, Rs))
    return norms


def _row_scales(R):
    """Largest ``|entry|`` of each row, ``1`` for zero rows (a safe divisor)."""
    scale = np.max(np.abs(R), axis=1) if R.shape[1] else np.zeros(R.shape[0])
    return np.where((scale > 0) & np.isfinite(scale), scale, 1.0)


def clip_rows(X, max_norm, row_norms=None):
    """Scale down every row whose Euclidean norm exceeds ``max_norm``.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    max_norm : float
        Public bound; ``inf`` returns a float copy of ``X``.
    row_norms : ndarray of shape (n,), optional
        Precomputed norms.

    Returns
    -------
    X_clipped : ndarray of shape (n, d)
        A new array; ``X`` is not modified.

    Examples
    --------
    >>> import numpy as np
    >>> clip_rows(np.array([[3.0, 4.0], [0.3, 0.4]]), 1.0)
    array([[0.6, 0.8],
           [0.3, 0.4]])
    """
    X = np.array(X, dtype=float, copy=True)
    if not max_norm >= 0:
        raise ValueError(f"max_norm must be non-negative, got {max_norm!r}.")
    if np.isinf(max_norm):
        return X
    norms = safe_row_norms(X) if row_norms is None else np.asarray(row_norms)
    over = norms > max_norm
    if not np.any(over):
        return X
    with np.errstate(all="ignore"):
        R = X[over]
        factor = max_norm / norms[over]
        # One multiplication for ordinary rows; a norm above the largest float
        # (inf) or a factor below the normal range would lose the row's
        # direction, so those rows are clipped in rescaled form instead.
        simple = np.isfinite(norms[over]) & (factor >= np.finfo(float).tiny)
        R[simple] *= factor[simple][:, None]
        if not np.all(simple):
            R[~simple] = _clip_rescaled(R[~simple], max_norm)
        X[over] = R
    return X


def clip_factors(norms, max_norm):
    """Per-row clip factors ``min(1, max_norm / norm)``, computed silently.

    A norm of ``inf`` (above the largest float) gives ``0``, a zero norm gives
    ``1``; only the factors that are used are computed, so no value is
    computed and then discarded.

    Parameters
    ----------
    norms : ndarray of shape (n,)
    max_norm : float
        Public bound.

    Returns
    -------
    factors : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> clip_factors(np.array([0.0, 0.5, 4.0, np.inf]), 2.0)
    array([1. , 1. , 0.5, 0. ])
    """
    norms = np.asarray(norms, dtype=float)
    factors = np.ones(norms.shape)
    over = norms > max_norm
    with np.errstate(all="ignore"):
        factors[over] = max_norm / norms[over]
    return factors


def _clip_rescaled(R, max_norm):
    """Rows ``R`` scaled to norm ``max_norm`` through ``R / max|R|`` (no overflow)."""
    with np.errstate(all="ignore"):
        Rs = R / _row_scales(R)[:, None]
        unit_norms = np.sqrt(np.einsum("ij,ij->i", Rs, Rs))  # in [1, sqrt(d)]
        return Rs * (max_norm / unit_norms)[:, None]


def clip_targets(y, bound):
    """Clip targets to ``[-bound, bound]``.

    Parameters
    ----------
    y : ndarray of shape (n,)
    bound : float
        Public bound on ``|y|``.

    Returns
    -------
    y_clipped : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> clip_targets(np.array([-5.0, 0.5, 5.0]), 1.0)
    array([-1. ,  0.5,  1. ])
    """
    if not bound >= 0:
        raise ValueError(f"bound must be non-negative, got {bound!r}.")
    return np.clip(np.asarray(y, dtype=float), -bound, bound)


# A default delta = n ** -1.1 above this is no guarantee worth the name
# (0.5 at n = 1, 0.47 at n = 2). The cap is n ** -1.1 at n = 10, the smallest
# sample size scikit-learn's estimator checks fit, so defaults keep working
# there; smaller data must state its delta.
DEFAULT_DELTA_MIN_SAMPLES = 10
DEFAULT_DELTA_CAP = DEFAULT_DELTA_MIN_SAMPLES**-1.1


def resolve_delta(delta, n_samples, epsilon=np.inf):
    """The ``delta`` a fit uses: the user's, or ``n ** -1.1`` if ``None``.

    Parameters
    ----------
    delta : float or None
        Constructor value, in (0, 1) (estimators validate this range).
    n_samples : int
        Public number of records.
    epsilon : float, default=inf
        Requested epsilon; ``delta = 0`` is only possible with ``inf``.

    Returns
    -------
    delta_ : float

    Raises
    ------
    ValueError
        If ``delta == 0`` with finite ``epsilon`` (Gaussian noise needs
        ``delta > 0``), or if ``delta`` is ``None``, ``epsilon`` is finite
        and the default ``n ** -1.1`` would exceed :data:`DEFAULT_DELTA_CAP`
        (``n_samples < 10``). ``n`` is public, so this refusal reveals
        nothing; it is raised before any noise is drawn.

    Examples
    --------
    >>> round(resolve_delta(None, 1000), 8)
    0.00050119
    >>> round(DEFAULT_DELTA_CAP, 4)
    0.0794
    """
    n = max(int(n_samples), 1)
    if delta is None:
        default = float(n**-1.1) if n > 1 else 0.5
        if default > DEFAULT_DELTA_CAP * (1 + 1e-12) and not np.isinf(epsilon):
            raise ValueError(
                f"delta=None resolves to n_samples**-1.1 = {default:.3g} for "
                f"n_samples = {n}, above {DEFAULT_DELTA_CAP:.3g}, the largest "
                "default delta skdp accepts (a default needs n_samples >= "
                f"{DEFAULT_DELTA_MIN_SAMPLES}): with such a delta the guarantee "
                "may fail outright. Pass the delta you accept explicitly, far "
                f"below 1/n_samples = {1.0 / n:.3g}, for example delta=1e-6."
            )
        return default
    delta = float(delta)
    if delta == 0 and not np.isinf(epsilon):
        raise ValueError(
            "delta=0 is not supported: skdp's mechanisms are Gaussian and need "
            "delta > 0. Pass a small delta such as 1 / n_samples**1.1, or None."
        )
    if n > 1 and delta >= 1.0 / n:
        warnings.warn(
            f"delta={delta:g} is not below 1/n_samples={1.0 / n:g}: such a "
            "guarantee allows releasing a few records outright.",
            UserWarning,
            stacklevel=3,
        )
    return delta


def check_generator(random_state, stream=None):
    """A fresh :class:`numpy.random.Generator` for one fit.

    ``None`` draws the seed from OS entropy (the secure default: a published
    seed lets anyone subtract the noise). An integer is used as given: it
    gives reproducible fits, and is never secret (scikit-learn's integer
    seeds have at most 32 bits, a space an adversary can search). A legacy
    ``RandomState`` is consumed for 128 bits of entropy (four 32-bit words),
    and so is a ``Generator`` when a ``stream`` is given: a ``Generator``
    seeded with at least 128 bits of entropy therefore keeps the noise
    secret, and one shared by several fits (or deep-copied into clones)
    still gives each fit other entropy or, with ``stream``, another stream.

    Parameters
    ----------
    random_state : None, int, numpy.random.RandomState or numpy.random.Generator
    stream : int, tuple of int or None, default=None
        Index of the fit on a shared ledger
        (:meth:`skdp.privacy.PrivacyAccountant.claim_stream`), or the words
        of a seeded fit's digest without an accountant (its class,
        parameters and data). The entropy taken from ``random_state`` is
        then spawned into an independent stream per key
        (``SeedSequence(entropy, spawn_key=stream)``), so that fits with
        the same ``random_state`` (CV folds, pipeline steps, candidates) do
        not reuse each other's noise. Without it, a ``Generator`` is
        returned as it is.

    Returns
    -------
    numpy.random.Generator

    Examples
    --------
    >>> int(check_generator(0).integers(10))
    8
    >>> a, b = check_generator(0, stream=0), check_generator(0, stream=1)
    >>> bool(a.normal() != b.normal())
    True
    """
    if random_state is None:
        return np.random.default_rng()
    if isinstance(random_state, np.random.Generator):
        if stream is None:
            return random_state
        entropy = _generator_entropy(random_state)
    elif isinstance(random_state, numbers.Integral):
        entropy = int(random_state)
    elif isinstance(random_state, np.random.RandomState):
        entropy = _generator_entropy(random_state)
    else:
        raise ValueError(f"Cannot build a random generator from {random_state!r}.")
    if stream is None:
        return np.random.default_rng(np.random.SeedSequence(entropy))
    key = tuple(int(k) for k in stream) if isinstance(stream, tuple) else (int(stream),)
    return np.random.default_rng(np.random.SeedSequence(entropy, spawn_key=key))


def _generator_entropy(random_state):
    """128 bits drawn from a ``RandomState`` or ``Generator``, as a list of words.

    Parameters
    ----------
    random_state : numpy.random.RandomState or numpy.random.Generator

    Returns
    -------
    list of int
        Four integers in ``[0, 2**32)``.
    """
    # four 32-bit words: 128 bits, beyond any search of the seed space
    if isinstance(random_state, np.random.Generator):
        words = random_state.integers(0, 2**32, size=4, dtype=np.uint64)
    else:
        words = random_state.randint(0, 2**32, size=4, dtype=np.uint64)
    return [int(w) for w in words]


def uncenter_intercept(intercept, coef, center):
    """Intercept of a model fitted on centred rows, for the raw rows.

    ``(x - center) @ coef + b = x @ coef + (b - center @ coef)``: the one
    place where centring's intercept fix is written.

    Parameters
    ----------
    intercept : float or ndarray of shape (k,)
    coef : ndarray of shape (d,) or (k, d)
    center : ndarray of shape (d,)
        The (public, privately released) centre.

    Returns
    -------
    float or ndarray of shape (k,)

    Examples
    --------
    >>> import numpy as np
    >>> uncenter_intercept(1.0, np.array([2.0, 0.0]), np.array([0.5, 3.0]))
    0.0
    """
    if np.ndim(coef) == 1:
        return intercept - float(np.asarray(center) @ coef)
    return intercept - coef @ center


def add_intercept_column(X, value=1.0):
    """Append a constant column so that an intercept becomes a coefficient.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    value : float, default=1.0
        Public constant of the new column.

    Returns
    -------
    ndarray of shape (n, d + 1)

    Examples
    --------
    >>> import numpy as np
    >>> add_intercept_column(np.zeros((2, 1)))
    array([[0., 1.],
           [0., 1.]])
    """
    X = np.asarray(X, dtype=float)
    return np.hstack([X, np.full((X.shape[0], 1), float(value))])


def check_declared_classes(classes):
    """Validate a declared (public) label set and return it sorted.

    The same check on every path (numpy and dask, every classifier), so that
    a declaration is accepted or refused whatever the data: it reads only the
    parameter.

    Parameters
    ----------
    classes : array-like of shape (n_classes,)
        The public labels, at least two, each listed once.

    Returns
    -------
    classes : ndarray of shape (n_classes,)
        Sorted.

    Raises
    ------
    ValueError
        If ``classes`` is not one-dimensional, lists fewer than two labels, or
        lists a label twice (a duplicate is refused rather than dropped: it
        is most likely a typo for another label).

    Examples
    --------
    >>> check_declared_classes(["b", "a"]).tolist()
    ['a', 'b']
    """
    declared = np.asarray(classes)
    unique = np.unique(declared) if declared.ndim == 1 else declared
    if declared.ndim != 1 or declared.size < 2 or unique.size != declared.size:
        raise ValueError(
            f"classes must list at least two distinct labels, got {classes!r}."
        )
    return unique


# scikit-learn (and numpy, pandas) messages that quote the data, each with
# the part to drop and what replaces it: ``array=[...]`` of a 1-D or scalar X,
# the whole array after "Complex data not supported", the value that could
# not be converted, and the labels of an unknown target type.
_VALUE_QUOTES = (
    (re.compile(r":\narray=.*\.\n(?=Reshape)", re.DOTALL), ". "),
    (re.compile(r"^(Complex data not supported).*", re.DOTALL), r"\1."),
    (
        re.compile(
            r"^(could not convert|invalid literal for|Unable to parse)([^:]*):.*",
            re.DOTALL,
        ),
        r"\1\2 (the value is private and not shown).",
    ),
    (re.compile(r"^(Unknown label type for \w+):.*", re.DOTALL), r"\1."),
    (
        re.compile(
            r"^Unknown label type: (?!(unknown|continuous|continuous-multioutput"
            r"|multiclass-multioutput|multilabel-indicator|multilabel-sequences"
            r"|binary|multiclass)\. ).*",
            re.DOTALL,
        ),
        "Unknown label type.",
    ),
    (
        re.compile(r"^(Expected array-like \(array or non-string sequence\)).*"),
        r"\1.",
    ),
    (re.compile(r"(got scalar) `.*` (instead\.)$", re.DOTALL), r"\1 \2"),
    # metrics: "Mix of label input types (string and number); Got [...]"
    (re.compile(r"^(Mix of label input types[^;]*);.*", re.DOTALL), r"\1."),
)


def _without_values(message):
    for pattern, replacement in _VALUE_QUOTES:
        message = pattern.sub(replacement, message)
    return message


def unechoed(function, *args, **kwargs):
    """``function(*args, **kwargs)``, its input errors re-raised without data.

    scikit-learn's validation quotes the data in some of its errors: a 1-D
    ``X`` is printed whole (``array=[...]``), a complex one too, a string that
    is not a number is named (``could not convert string to float: 'x'``),
    and so are the labels of an unknown target type. Inputs are private (at
    ``fit``, and at ``predict`` or ``transform`` too), so such an error is
    re-raised with the same type and the problem named, but no value; it is
    raised outside the ``except`` block so that neither ``__cause__`` nor
    ``__context__`` holds the original. Other errors propagate unchanged.

    Parameters
    ----------
    function : callable
    *args, **kwargs
        Passed to ``function``.

    Returns
    -------
    The result of ``function``.
    """
    try:
        return function(*args, **kwargs)
    except (ValueError, TypeError) as exc:
        message = _without_values(str(exc))
        chained = exc.__cause__ is not None or exc.__context__ is not None
        if message == str(exc) and not chained:
            raise
        error = ValueError if isinstance(exc, ValueError) else TypeError
    raise error(message)


def validate_data(estimator, *args, **kwargs):
    """:func:`sklearn.utils.validation.validate_data`, errors without data.

    See :func:`unechoed`.
    """
    return unechoed(_sklearn_validation.validate_data, estimator, *args, **kwargs)


def check_array(array, *args, **kwargs):
    """:func:`sklearn.utils.check_array`, errors without data.

    See :func:`unechoed`.
    """
    return unechoed(_sklearn_validation.check_array, array, *args, **kwargs)


def check_classification_targets(y):
    """:func:`sklearn.utils.multiclass.check_classification_targets`, silent.

    Errors carry no label (see :func:`unechoed`), and scikit-learn's warning
    that more than half of the samples have distinct labels is suppressed:
    it appears for one dataset and not for its neighbour.
    """
    with warnings.catch_warnings():
        warnings.filterwarnings(
            "ignore", message="The number of unique classes", category=UserWarning
        )
        unechoed(_sklearn_multiclass.check_classification_targets, y)
