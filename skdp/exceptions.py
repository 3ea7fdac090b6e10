"""Warnings of skdp's own, so that users can filter them by class.

The lowest layer of the package: it imports nothing from skdp, so that every
module (``utils`` included) can raise these. ``BudgetExceededError`` lives with
the accountant in :mod:`skdp.privacy`.
"""

import warnings

__all__ = ["PrivacyLeakWarning", "UnscaledDataWarning", "warn_inferred_set"]


class PrivacyLeakWarning(UserWarning):
    """A fit published something about the private data outside its privacy plan.

    Raised, for example, when a set (``classes``, ``groups``, categories) is read
    from the private data instead of being declared: the set itself, and
    everything that depends on it (the number of sub-problems, the dimension of
    an operator, an error about a missing class), is then a release that the
    accountant does not see. The message names the argument that avoids it.

    Filter it like any warning, for example
    ``warnings.simplefilter("error", PrivacyLeakWarning)`` to refuse such fits.

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
       Privacy", Foundations and Trends in Theoretical Computer Science, 2014
       (Sec. 2.3: everything released, including the structure of the output,
       is covered by the guarantee only if the mechanism produces it).

    Examples
    --------
    >>> import warnings
    >>> import numpy as np
    >>> from skdp import HeavyTailedLogisticRegression, PrivacyLeakWarning
    >>> X, y = np.random.default_rng(0).normal(size=(200, 2)), np.arange(200) % 2
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     _ = HeavyTailedLogisticRegression(random_state=0).fit(X, y)
    >>> [str(w.message).split(":")[0] for w in caught
    ...  if issubclass(w.category, PrivacyLeakWarning)]
    ['HeavyTailedLogisticRegression read its classes from the private data']
    """


class UnscaledDataWarning(UserWarning):
    """A released (noisy) or public scale suggests the data are in raw units.

    Emitted after a fit, as post-processing of its private release (or of
    public bounds), when the privately estimated feature scale or row-norm
    bound is far from that of standardized data. It costs no privacy: it
    depends on the data only through what the fit already publishes. Scale
    the features with :class:`skdp.preprocessing.StandardScaler` (private) or
    by public constants.

    References
    ----------
    .. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
       Privacy", Foundations and Trends in Theoretical Computer Science, 2014
       (Prop. 2.1: post-processing of a private release is private).

    Examples
    --------
    >>> import warnings
    >>> from skdp import UnscaledDataWarning
    >>> from skdp.utils._scale_checks import warn_if_unscaled
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_if_unscaled("Model", feature_scale=52437.0)
    True
    >>> caught[0].category is UnscaledDataWarning
    True
    """


def warn_inferred_set(owner, what, argument, consequences, stacklevel=3):
    """Emit :class:`PrivacyLeakWarning` for a set read from private data.

    The warning depends only on the estimator's parameters (a set was not
    declared), never on the data, so emitting it is not itself a release.

    Parameters
    ----------
    owner : str
        Name of the estimator or transformer.
    what : str
        The set, e.g. ``"classes"``.
    argument : str
        The argument that declares it, e.g. ``"classes=[...]"``.
    consequences : str
        What else depends on the set.
    stacklevel : int, default=3
        Passed to :func:`warnings.warn`.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warn_inferred_set("Est", "classes", "classes=[...]", "the output")
    >>> caught[0].category.__name__
    'PrivacyLeakWarning'
    """
    warnings.warn(
        f"{owner} read its {what} from the private data: which {what} occur, "
        f"and {consequences}, are released outside the privacy plan "
        "(privacy_spent_ does not cover them). Declare the public set with "
        f"{argument} to avoid this.",
        PrivacyLeakWarning,
        stacklevel=stacklevel,
    )
