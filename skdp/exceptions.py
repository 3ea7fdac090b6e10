"""Warnings of skdp's own, so that users can filter them by class.

The lowest layer of the package: it imports nothing from skdp, so that every
module (``utils`` included) can raise these. ``BudgetExceededError`` lives with
the accountant in :mod:`skdp.privacy`.
"""

__all__ = ["PrivacyLeakWarning"]


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
       Privacy", Foundations and Trends in Theoretical Computer Science 9, 2014
       (Sec. 2.3: a mechanism's output is everything it publishes).

    Examples
    --------
    >>> import warnings
    >>> from skdp import PrivacyLeakWarning
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("error", PrivacyLeakWarning)
    ...     issubclass(PrivacyLeakWarning, UserWarning)
    True
    """
