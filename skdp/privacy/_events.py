"""Privacy events: what a mechanism releases, described without running it.

skdp uses dp-accounting's frozen event classes as its privacy plan and adds
the two it lacks:

- :class:`ParallelDpEvent`: the children run on *disjoint*, data-independent
  parts of the dataset, so one record is touched by at most one child.
- :class:`PureDpEvent`: a pure ``epsilon``-DP step, such as the exponential
  mechanism.
- :class:`FailureDpEvent`: a data-independent bad event of small probability
  on which the run may differ from its accounted version (for example a
  Poisson batch larger than a public bound).

**Noise-multiplier convention (replace-one).** Throughout skdp, the
``noise_multiplier`` of a :class:`dp_accounting.GaussianDpEvent` is
``sigma / Delta`` where ``Delta`` is the L2 sensitivity of the noised
statistic under the *replace-one* relation, computed as if the statistic were
evaluated on its full (unsampled) input. Examples:

- a mean of per-record vectors clipped to norm ``C`` over ``n`` records:
  ``Delta = 2 C / n``;
- a sum of per-record vectors clipped to ``C``, possibly over a Poisson or
  fixed-size sample: ``Delta = 2 C``;
- a histogram of counts: ``Delta = sqrt(2)``.

A full-batch Gaussian step with multiplier ``z`` is exactly ``1/z``-GDP. The
composition engine translates the convention into dp-accounting's own, which
differ between its PLD and RDP accountants under REPLACE_ONE.
"""

import attr
from dp_accounting import dp_event

GaussianDpEvent = dp_event.GaussianDpEvent
ComposedDpEvent = dp_event.ComposedDpEvent
SelfComposedDpEvent = dp_event.SelfComposedDpEvent
PoissonSampledDpEvent = dp_event.PoissonSampledDpEvent
SampledWithoutReplacementDpEvent = dp_event.SampledWithoutReplacementDpEvent
NoOpDpEvent = dp_event.NoOpDpEvent
NonPrivateDpEvent = dp_event.NonPrivateDpEvent
DpEvent = dp_event.DpEvent

__all__ = [
    "DpEvent",
    "GaussianDpEvent",
    "ComposedDpEvent",
    "SelfComposedDpEvent",
    "PoissonSampledDpEvent",
    "SampledWithoutReplacementDpEvent",
    "NoOpDpEvent",
    "NonPrivateDpEvent",
    "ParallelDpEvent",
    "PureDpEvent",
    "FailureDpEvent",
    "ApproxDpEvent",
    "PrivateSelectionDpEvent",
    "gaussian_steps",
]


@attr.define(frozen=True)
class ParallelDpEvent(dp_event.DpEvent):
    """Children run on disjoint, data-independent parts of the data.

    Under replace-one, the changed record lies in exactly one part, so the
    privacy loss is the worst child's (together with whatever else the record
    touches). This cannot be written as a single dp-accounting event; skdp's
    composition engine handles it by taking the worst case over the part that
    holds the changed record.

    The partition must not depend on the data values (a public, random or
    fixed split of indices).

    Parameters
    ----------
    events : list of DpEvent
        One event per disjoint part.

    References
    ----------
    - McSherry, "Privacy integrated queries", SIGMOD 2009 (parallel composition).

    Examples
    --------
    >>> from skdp.privacy import ParallelDpEvent, GaussianDpEvent
    >>> event = ParallelDpEvent([GaussianDpEvent(2.0), GaussianDpEvent(3.0)])
    >>> len(event.events)
    2
    """

    events: list[dp_event.DpEvent]


@attr.define(frozen=True)
class PureDpEvent(dp_event.DpEvent):
    """A pure ``epsilon``-DP step (for example the exponential mechanism).

    The PLD route accounts for it exactly by the dominating randomized
    response pair; the RDP route uses ``epsilon**2 / 2``-zCDP.

    Parameters
    ----------
    epsilon : float
        Pure DP parameter of the step (replace-one).

    References
    ----------
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.

    Examples
    --------
    >>> from skdp.privacy import PureDpEvent
    >>> PureDpEvent(0.1)
    PureDpEvent(epsilon=0.1)
    """

    epsilon: float


@attr.define(frozen=True)
class FailureDpEvent(dp_event.DpEvent):
    """A bad event of probability at most ``probability``, the same for all data.

    The fit is accounted as if a public assumption held (for example: no
    Poisson batch is larger than a public bound); with probability at most
    ``probability`` it fails, and the run may then differ from the accounted
    one. The failure depends only on the fit's own randomness (batch sizes
    under Poisson sampling are Binomial(n, q) whatever the data), so it is
    the same event under both neighbouring datasets.

    Coupling the run with its accounted version, their output laws differ by
    at most ``probability`` in total variation on each dataset, so for every
    ``epsilon`` the composition's ``delta(epsilon)`` grows by at most
    ``(1 + e**epsilon) * probability``; skdp's composition engine adds
    exactly this term.

    Parameters
    ----------
    probability : float
        Upper bound on the probability of the bad event, in [0, 1).

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy",
      2014 (Sec. 2.3; approximate DP from a mechanism that fails with small
      probability).

    Examples
    --------
    >>> from skdp.privacy import FailureDpEvent
    >>> FailureDpEvent(1e-20)
    FailureDpEvent(probability=1e-20)
    """

    probability: float


@attr.define(frozen=True)
class ApproxDpEvent(dp_event.DpEvent):
    """A step certified ``(epsilon, delta)``-DP as a whole (replace-one).

    The privacy ledger's record of a private selection: the trials it ran
    stay secret, so the selection enters as the pair its analysis
    certifies. The composition engine uses the pair that dominates every
    ``(epsilon, delta)``-DP mechanism, as for
    :class:`PrivateSelectionDpEvent`.

    Parameters
    ----------
    epsilon, delta : float

    References
    ----------
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.

    Examples
    --------
    >>> from skdp.privacy import ApproxDpEvent
    >>> ApproxDpEvent(1.0, 1e-6)
    ApproxDpEvent(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float


def gaussian_steps(noise_multiplier, steps=1):
    """Event for ``steps`` full-batch Gaussian steps with multiplier ``sigma / Delta``.

    Parameters
    ----------
    noise_multiplier : float
        ``sigma / Delta`` with ``Delta`` the replace-one sensitivity.
        ``0`` means no noise (non-private), ``inf`` means nothing released.
    steps : int, default=1
        Number of identical steps.

    Returns
    -------
    event : DpEvent

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> gaussian_steps(3.0, 10)
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=3.0), count=10)
    """
    if steps == 0:
        return NoOpDpEvent()
    if noise_multiplier == 0:
        return NonPrivateDpEvent()
    event = GaussianDpEvent(float(noise_multiplier))
    return event if steps == 1 else SelfComposedDpEvent(event, int(steps))


@attr.define(frozen=True)
class PrivateSelectionDpEvent(dp_event.DpEvent):
    """Best of a random number of private trials (Papernot and Steinke 2022).

    The number of trials ``K`` is drawn, independently of the data, from a
    truncated negative binomial distribution with the given ``mean`` and
    ``shape`` (``shape=0``: logarithmic, ``1``: geometric, ``inf``: Poisson).
    Each trial runs one of the ``candidates`` (chosen independently of the
    data); only the best trial's output is released, never ``K`` nor the
    other trials.

    Its Renyi-DP curve is the worst candidate's curve (a data-independent
    choice among mechanisms is a mixture, whose Renyi divergence is at most
    the largest) transformed by Papernot and Steinke's Theorems 2 and 6, as
    dp-accounting's ``RepeatAndSelectDpEvent`` does. RDP cannot be composed
    with skdp's exact GDP and PLD routes, so the ledger enters this event as
    the ``(epsilon, delta)``-DP pair that the RDP curve certifies at
    ``delta`` (see :func:`skdp.privacy.selection_epsilon`): a conservative
    fallback, exact for the event alone and valid in any composition.

    Parameters
    ----------
    candidates : list of DpEvent
        The privacy plan of each candidate trial.
    mean : float
        Expected number of trials, at least 1.
    shape : float
        Shape of the distribution of the number of trials, ``>= 0``.
    delta : float
        The delta at which the RDP guarantee is converted for the ledger.

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.
    - Liu and Talwar, "Private selection from private candidates", STOC 2019.

    Examples
    --------
    >>> from skdp.privacy import PrivateSelectionDpEvent, GaussianDpEvent
    >>> PrivateSelectionDpEvent([GaussianDpEvent(5.0)], 10.0, 1.0, 1e-6).mean
    10.0
    """

    candidates: list[dp_event.DpEvent]
    mean: float
    shape: float
    delta: float
