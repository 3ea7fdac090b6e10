"""The budget object: one convention for splitting a privacy budget.

A fit's ``(epsilon, delta)`` target becomes one Gaussian-DP budget ``mu``
(the largest ``mu`` such that a ``mu``-GDP mechanism, composed with the fit's
fixed steps, is ``(epsilon, delta)``-DP). Full-batch Gaussian releases compose
exactly in GDP: a record whose releases have ``sum (Delta / sigma)**2 <= mu**2``
is ``mu``-GDP. So a budget is split by **shares of** ``mu**2``, and every
sub-budget is again a :class:`Budget`::

    budget = Budget.from_target(epsilon, delta)      # mu-GDP
    bounds, fit = budget.split([0.1, 0.9])            # mu sqrt(0.1), mu sqrt(0.9)
    z = fit.noise_multiplier(count=T)                 # T releases share ``fit``

Steps that are not full-batch Gaussian (a pure-epsilon quantile, a subsampled
step) enter :meth:`Budget.from_target` as ``other_event``; their cost is then
taken out of ``mu`` by an exact calibration.
"""

import math

from ._calibration import calibrate_noise_multiplier
from ._conversions import gdp_epsilon, gdp_mu
from ._events import ComposedDpEvent, GaussianDpEvent

__all__ = ["Budget", "gdp_budget", "split_gdp"]

#: Relative margin that keeps round-off from making a plan overspend.
MARGIN = 1e-9


def gdp_budget(epsilon, delta, other_event=None):
    """GDP ``mu`` left for full-batch Gaussian steps after ``other_event``.

    The largest ``mu`` such that ``other_event`` composed with a ``mu``-GDP
    mechanism is ``(epsilon, delta)``-DP. Any plan made of full-batch
    Gaussian steps whose ``sum (Delta / sigma)**2`` over a record's path is at
    most ``mu**2`` then meets the target, so the budget can be split by shares
    of ``mu**2`` exactly.

    Parameters
    ----------
    epsilon : float
        Target in (0, inf]; ``inf`` gives ``inf``.
    delta : float
    other_event : DpEvent, optional
        Fixed steps of the same fit (for example a private quantile).

    Returns
    -------
    mu : float

    References
    ----------
    Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> from skdp.privacy import PureDpEvent
    >>> gdp_budget(1.0, 1e-6) > gdp_budget(1.0, 1e-6, PureDpEvent(0.1))
    True
    """
    if math.isinf(epsilon):
        return math.inf
    if other_event is None:
        return gdp_mu(epsilon, delta) / (1.0 + MARGIN)
    z = calibrate_noise_multiplier(
        lambda z: ComposedDpEvent([other_event, GaussianDpEvent(z)]), epsilon, delta
    )
    return 1.0 / z


def split_gdp(mu, parts):
    """Noise multipliers for groups of full-batch Gaussian releases.

    Group ``j`` has ``count_j`` releases, each with multiplier ``z_j`` and
    receives the share ``share_j`` of ``mu**2``:
    ``count_j / z_j**2 = share_j * mu**2``. The composition of all groups is
    then exactly ``mu``-GDP (shares must sum to at most 1).

    Parameters
    ----------
    mu : float
        GDP budget of the records that take part in every group; ``inf``
        means no noise.
    parts : list of (int, float)
        ``(count, share)`` per group.

    Returns
    -------
    z : list of float
        Multipliers (``0.0`` if ``mu`` is infinite, ``inf`` for an empty group).

    References
    ----------
    Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> [round(z, 3) for z in split_gdp(1.0, [(1, 0.5), (4, 0.5)])]
    [1.414, 2.828]
    """
    shares = [float(s) for _, s in parts]
    if sum(shares) > 1.0 + 1e-12 or min(shares, default=0.0) < 0:
        raise ValueError("Budget shares must be non-negative and sum to at most 1.")
    out = []
    for count, share in parts:
        if count == 0:
            out.append(math.inf)
        elif math.isinf(mu):
            out.append(0.0)
        elif share == 0:
            raise ValueError("A group of releases received no budget.")
        else:
            # tiny margin: round-off must never make the plan overspend
            out.append(math.sqrt(count / (share * mu * mu)) * (1.0 + MARGIN))
    return out


class Budget:
    """A Gaussian-DP privacy budget ``mu``, split by shares of ``mu**2``.

    Parameters
    ----------
    mu : float
        GDP parameter, in ``(0, inf]``; ``inf`` means no noise
        (``epsilon=np.inf``).

    Attributes
    ----------
    mu : float
        The GDP parameter.

    See Also
    --------
    gdp_budget : the ``mu`` of an ``(epsilon, delta)`` target.

    Notes
    -----
    Replace-one neighbours, ``n`` public. A full-batch Gaussian release of a
    statistic with replace-one sensitivity ``Delta`` and noise ``z Delta`` is
    ``1/z``-GDP; releases compose by adding ``1/z**2``. The budget is the
    only convention for splitting: an estimator builds one with
    :meth:`from_target`, hands sub-budgets (:meth:`split`, :meth:`share`) to
    its steps, and a step turns its budget into noise multipliers with
    :meth:`noise_multiplier` / :meth:`noise_multipliers`.

    References
    ----------
    Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> budget = Budget.from_target(1.0, 1e-6)
    >>> bounds, fit = budget.split([0.1, 0.9])
    >>> round(bounds.mu**2 + fit.mu**2 - budget.mu**2, 12)
    0.0
    >>> round(fit.epsilon(1e-6), 3)
    0.945
    >>> Budget.from_target(float("inf"), 1e-6).noise_multiplier()
    0.0
    """

    __slots__ = ("mu",)

    def __init__(self, mu):
        mu = float(mu)
        if not mu > 0:
            raise ValueError(f"A GDP budget needs mu > 0, got {mu!r}.")
        self.mu = mu

    @classmethod
    def from_target(cls, epsilon, delta, other_event=None, *, margin=True):
        """The budget of an ``(epsilon, delta)`` target.

        Parameters
        ----------
        epsilon : float
            Target epsilon in (0, inf].
        delta : float
            Target delta in (0, 1).
        other_event : DpEvent, optional
            Fixed steps of the same fit that are not full-batch Gaussian; their
            exact cost is taken out first (:func:`gdp_budget`).
        margin : bool, default=True
            Shrink ``mu`` by a relative ``1e-9`` so that round-off cannot
            overspend. ``False`` where the margin is applied to the noise
            multipliers instead (:func:`split_gdp` does).

        Returns
        -------
        Budget

        Examples
        --------
        >>> Budget.from_target(1.0, 1e-6).mu < Budget.from_target(1.0, 1e-6,
        ...                                                        margin=False).mu
        True
        """
        if math.isinf(epsilon):
            return cls(math.inf)
        if margin or other_event is not None:
            return cls(gdp_budget(epsilon, delta, other_event))
        return cls(gdp_mu(float(epsilon), float(delta)))

    @property
    def is_infinite(self):
        """``True`` for the budget of ``epsilon=np.inf`` (no noise)."""
        return math.isinf(self.mu)

    def share(self, share, count=1):
        """Budget of each of ``count`` parts that together take ``share`` of ``mu**2``.

        Parameters
        ----------
        share : float
            Fraction of ``mu**2``, in (0, 1].
        count : int, default=1
            Number of parts (for example fits that all read every record)
            that split the share equally.

        Returns
        -------
        Budget
            ``mu sqrt(share / count)``.

        Examples
        --------
        >>> round(Budget(2.0).share(0.5, count=2).mu, 6)
        1.0
        """
        if not 0.0 < share <= 1.0 + 1e-12:
            raise ValueError(f"A budget share must be in (0, 1], got {share!r}.")
        if self.is_infinite:
            return Budget(math.inf)
        return Budget(self.mu * math.sqrt(share / count))

    def split(self, shares):
        """Sub-budgets for shares of ``mu**2`` (summing to at most one).

        Parameters
        ----------
        shares : sequence of float
            Positive fractions of ``mu**2``.

        Returns
        -------
        list of Budget

        Examples
        --------
        >>> [round(b.mu, 4) for b in Budget(1.0).split([0.36, 0.64])]
        [0.6, 0.8]
        """
        shares = [float(s) for s in shares]
        if sum(shares) > 1.0 + 1e-12:
            raise ValueError("Budget shares must sum to at most 1.")
        return [self.share(s) for s in shares]

    def noise_multiplier(self, count=1):
        """Multiplier of each of ``count`` full-batch releases that spend the budget.

        Parameters
        ----------
        count : int, default=1

        Returns
        -------
        float
            ``sqrt(count) / mu`` (``0.0`` for an infinite budget).

        Examples
        --------
        >>> Budget(0.5).noise_multiplier(), Budget(0.5).noise_multiplier(4)
        (2.0, 4.0)
        """
        if self.is_infinite:
            return 0.0
        if count == 1:
            return 1.0 / self.mu
        return math.sqrt(count) / self.mu

    def noise_multipliers(self, parts):
        """Multipliers of groups of releases, by ``(count, share)`` (:func:`split_gdp`).

        Parameters
        ----------
        parts : list of (int, float)

        Returns
        -------
        list of float

        Examples
        --------
        >>> [round(z, 3) for z in Budget(1.0).noise_multipliers([(1, 0.5), (4, 0.5)])]
        [1.414, 2.828]
        """
        return split_gdp(self.mu, parts)

    def epsilon(self, delta):
        """The ``epsilon`` this budget certifies at ``delta``.

        Parameters
        ----------
        delta : float

        Returns
        -------
        float

        Examples
        --------
        >>> round(Budget(1.0).epsilon(1e-5), 3)
        4.377
        """
        if self.is_infinite:
            return math.inf
        return float(gdp_epsilon(self.mu, float(delta)))

    def __repr__(self):
        return f"Budget(mu={self.mu!r})"

    def __eq__(self, other):
        return isinstance(other, Budget) and self.mu == other.mu

    def __hash__(self):
        return hash(("Budget", self.mu))
