"""Tight composition of skdp privacy events under the replace-one relation.

The engine reduces an event tree to *profiles*: for each place the changed
record can be (one child of every :class:`ParallelDpEvent` on its path), the
multiset of mechanisms that record takes part in. The certified epsilon at a
given delta is the worst profile's. Within a profile:

- full-batch Gaussian steps are summed exactly as ``mu**2`` (GDP);
- if a profile contains only such steps, the exact GDP curve is used;
- Gaussian steps plus pure-epsilon steps: exact closed form, composing the
  GDP pair with the randomized-response pair that dominates any pure
  epsilon-DP step (Kairouz, Oh and Viswanath 2015);
- otherwise dp-accounting's PLD accountant composes the Gaussian part with
  Poisson-subsampled Gaussians and pure-epsilon steps (pessimistic
  discretisation, so an upper bound);
- if a profile contains fixed-size sampling without replacement, which
  dp-accounting supports only in RDP, the RDP accountant is used for the
  whole profile, with pure-epsilon steps entering as ``epsilon**2/2``-zCDP;
- failure probabilities (:class:`FailureDpEvent`) add up, and add
  ``(1 + e**epsilon) * probability`` to the profile's ``delta(epsilon)``.
- a :class:`~skdp.privacy.PrivateSelectionDpEvent` (certified in RDP) enters
  as the ``(epsilon, delta)`` pair it certifies: exactly when alone, through
  its dominating pair in PLD, and by basic composition next to
  without-replacement steps (RDP cannot hold such a pair).

When the number of profiles would grow past ``_MAX_PROFILES`` they are
merged into their envelope (largest ``mu**2`` and largest count of every
other mechanism). The envelope runs every mechanism of every profile, so it
dominates each of them: the bound stays valid, only less tight.
"""

import math
from collections import Counter

import dp_accounting
import numpy as np
from dp_accounting import dp_event
from dp_accounting.pld import common as pld_common
from dp_accounting.pld import privacy_loss_distribution as pld_lib
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib
from scipy.optimize import brentq
from scipy.special import log_ndtr

from ._conversions import gdp_delta, gdp_epsilon, pure_to_zcdp
from ._events import (
    ApproxDpEvent,
    FailureDpEvent,
    ParallelDpEvent,
    PrivateSelectionDpEvent,
    PureDpEvent,
)

__all__ = ["certify_epsilon", "certify_delta", "profiles"]

_MAX_PROFILES = 256
_PLD_DISCRETIZATION = 1e-4
_MAX_PURE_SUPPORT = 2048
_PURE_GRID = 1e-4
_REPLACE_ONE = dp_accounting.NeighboringRelation.REPLACE_ONE
_ADD_OR_REMOVE = dp_accounting.NeighboringRelation.ADD_OR_REMOVE_ONE


class _Profile:
    """Mechanisms one record takes part in: GDP mass plus other steps."""

    __slots__ = ("mu2", "others", "nonprivate", "fail")

    def __init__(self, mu2=0.0, others=None, nonprivate=False, fail=0.0):
        self.mu2 = float(mu2)
        self.others = Counter(others or {})  # key: hashable leaf description
        self.nonprivate = bool(nonprivate)
        self.fail = float(fail)  # summed FailureDpEvent probabilities

    def key(self):
        return (
            self.nonprivate,
            self.mu2,
            tuple(sorted(self.others.items())),
            self.fail,
        )

    def __add__(self, other):
        return _Profile(
            self.mu2 + other.mu2,
            self.others + other.others,
            self.nonprivate or other.nonprivate,
            self.fail + other.fail,
        )

    def scaled(self, count):
        return _Profile(
            self.mu2 * count,
            {k: v * count for k, v in self.others.items()},
            self.nonprivate,
            self.fail * count,
        )

    def dominates(self, other):
        if self.nonprivate:
            return True
        if other.nonprivate:
            return False
        return (
            self.mu2 >= other.mu2
            and self.fail >= other.fail
            and all(self.others.get(k, 0) >= v for k, v in other.others.items())
        )


def _prune(profs):
    """Drop duplicates and dominated profiles; merge to the envelope if too many."""
    unique = {}
    for p in profs:
        unique.setdefault(p.key(), p)
    profs = list(unique.values())
    if len(profs) > 4 * _MAX_PROFILES:
        return [_envelope(profs)]
    kept = []
    for i, p in enumerate(profs):
        dominated = any(
            j != i and q.dominates(p) and (not p.dominates(q) or j < i)
            for j, q in enumerate(profs)
        )
        if not dominated:
            kept.append(p)
    if len(kept) > _MAX_PROFILES:
        kept = [_envelope(kept)]
    return kept


def _envelope(profs):
    """One profile that runs at least every mechanism of every profile.

    Full-batch Gaussian mass and sampled steps take their largest amount.
    Pure-epsilon steps are matched by rank: the envelope's k-th largest
    epsilon is the largest k-th largest epsilon of any profile, which
    dominates each profile's pure steps one by one.
    """
    env = _Profile()
    pure_lists = []
    for p in profs:
        env.mu2 = max(env.mu2, p.mu2)
        env.nonprivate = env.nonprivate or p.nonprivate
        env.fail = max(env.fail, p.fail)
        pures = []
        for k, v in p.others.items():
            if k[0] == "pure":
                pures.extend([k[1]] * v)
            else:
                env.others[k] = max(env.others.get(k, 0), v)
        pure_lists.append(sorted(pures, reverse=True))
    width = max((len(lst) for lst in pure_lists), default=0)
    for rank in range(width):
        eps = max(lst[rank] for lst in pure_lists if len(lst) > rank)
        env.others[("pure", eps)] += 1
    return env


def _leaf_key(event):
    """Hashable description of a non-GDP leaf mechanism."""
    if isinstance(event, PureDpEvent):
        return ("pure", float(event.epsilon))
    if isinstance(event, dp_event.PoissonSampledDpEvent):
        inner = event.event
        if not isinstance(inner, dp_event.GaussianDpEvent):
            raise NotImplementedError(
                "Only Poisson-subsampled Gaussian steps are supported."
            )
        return (
            "poisson",
            float(event.sampling_probability),
            float(inner.noise_multiplier),
        )
    if isinstance(event, dp_event.SampledWithoutReplacementDpEvent):
        inner = event.event
        if not isinstance(inner, dp_event.GaussianDpEvent):
            raise NotImplementedError(
                "Only Gaussian steps sampled without replacement are supported."
            )
        return (
            "wor",
            int(event.source_dataset_size),
            int(event.sample_size),
            float(inner.noise_multiplier),
        )
    raise NotImplementedError(
        f"skdp cannot account for {type(event).__name__}; supported events are "
        "Gaussian, Poisson- or without-replacement-sampled Gaussian, pure-epsilon, "
        "composed, self-composed and parallel events."
    )


def profiles(event):
    """Reduce an event tree to its list of per-record profiles.

    Parameters
    ----------
    event : DpEvent

    Returns
    -------
    profiles : list of _Profile
    """
    if isinstance(event, dp_event.NoOpDpEvent):
        return [_Profile()]
    if isinstance(event, dp_event.NonPrivateDpEvent):
        return [_Profile(nonprivate=True)]
    if isinstance(event, dp_event.GaussianDpEvent):
        z = float(event.noise_multiplier)
        if z == 0:
            return [_Profile(nonprivate=True)]
        if math.isinf(z):
            return [_Profile()]
        return [_Profile(mu2=1.0 / z**2)]
    if isinstance(event, dp_event.SelfComposedDpEvent):
        return _prune([p.scaled(int(event.count)) for p in profiles(event.event)])
    if isinstance(event, dp_event.ComposedDpEvent):
        acc = [_Profile()]
        for child in event.events:
            acc = _prune([a + b for a in acc for b in profiles(child)])
        return acc
    if isinstance(event, FailureDpEvent):
        return [_Profile(fail=float(event.probability))]
    if isinstance(event, ParallelDpEvent):
        if len(event.events) == 0:
            return [_Profile()]
        out = []
        for child in event.events:
            out.extend(profiles(child))
        return _prune(out)
    # Leaves that are not plain Gaussians.
    if (
        isinstance(event, dp_event.PoissonSampledDpEvent)
        and float(event.sampling_probability) == 0.0
    ):
        return [_Profile()]
    inner = getattr(event, "event", None)
    if isinstance(inner, dp_event.GaussianDpEvent) and inner.noise_multiplier == 0:
        return [_Profile(nonprivate=True)]
    if isinstance(event, PureDpEvent) and math.isinf(event.epsilon):
        return [_Profile(nonprivate=True)]
    if isinstance(event, PureDpEvent) and event.epsilon == 0:
        return [_Profile()]
    if isinstance(event, ApproxDpEvent):
        if math.isinf(event.epsilon):
            return [_Profile(nonprivate=True)]
        return [_Profile(others={("approx", float(event.epsilon), float(event.delta)): 1})]
    if isinstance(event, PrivateSelectionDpEvent):
        from ._selection import selection_epsilon

        eps = selection_epsilon(event)
        if math.isinf(eps):
            return [_Profile(nonprivate=True)]
        # The RDP guarantee enters the ledger as one (epsilon, delta) pair.
        return [_Profile(others={("approx", float(eps), float(event.delta)): 1})]
    return [_Profile(others={_leaf_key(event): 1})]


def _pld_for_profile(p, discretization=_PLD_DISCRETIZATION):
    pld = None

    def compose(pld, other):
        return other if pld is None else pld.compose(other)

    if p.mu2 > 0:
        # N(0, 1/mu^2) against N(1, 1/mu^2): exactly the mu-GDP pair.
        pld = compose(
            pld,
            pld_lib.from_gaussian_mechanism(
                standard_deviation=1.0 / math.sqrt(p.mu2),
                sensitivity=1.0,
                value_discretization_interval=discretization,
                neighboring_relation=_ADD_OR_REMOVE,
            ),
        )
    for key, count in p.others.items():
        if key[0] == "pure":
            leaf = pld_lib.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(key[1], 0.0),
                value_discretization_interval=discretization,
            )
        elif key[0] == "approx":
            # The pair that dominates every (epsilon, delta)-DP mechanism.
            leaf = pld_lib.from_privacy_parameters(
                pld_common.DifferentialPrivacyParameters(key[1], key[2]),
                value_discretization_interval=discretization,
            )
        elif key[0] == "poisson":
            _, q, z = key
            # dp-accounting's REPLACE_ONE pair is q N(+C) + (1-q) N(0) against
            # q N(-C) + (1-q) N(0): per-record bound C, replace-one sensitivity
            # 2C. Our z is sigma / (2C), so its standard deviation is 2z.
            leaf = pld_lib.from_gaussian_mechanism(
                standard_deviation=2.0 * z,
                sensitivity=1.0,
                sampling_prob=q,
                value_discretization_interval=discretization,
                neighboring_relation=_REPLACE_ONE,
            )
        else:  # pragma: no cover - routed to RDP before we get here
            raise AssertionError(key)
        if count > 1:
            leaf = leaf.self_compose(int(count))
        pld = compose(pld, leaf)
    return pld


def _rdp_accountant_for_profile(p):
    acc = rdp_lib.RdpAccountant(neighboring_relation=_REPLACE_ONE)
    if p.mu2 > 0:
        # RDP reads the multiplier as sigma / (replace-one sensitivity): ours.
        acc.compose(dp_event.GaussianDpEvent(1.0 / math.sqrt(p.mu2)))
    for key, count in p.others.items():
        if key[0] == "pure":
            acc.compose(dp_event.ZCDpEvent(pure_to_zcdp(key[1])), int(count))
        elif key[0] == "wor":
            _, n, b, z = key
            acc.compose(
                dp_event.SampledWithoutReplacementDpEvent(
                    n, b, dp_event.GaussianDpEvent(z)
                ),
                int(count),
            )
        else:
            raise NotImplementedError(
                "Poisson sampling and fixed-size sampling without replacement "
                "cannot be composed under REPLACE_ONE with dp-accounting: Poisson "
                "is supported only by the PLD accountant and without-replacement "
                "only by the RDP accountant."
            )
    return acc


def _pure_loss_distribution(others):
    """Privacy-loss law of the composed randomized-response pairs.

    A pure epsilon-DP step is dominated by randomized response RR(epsilon),
    whose privacy loss is +epsilon with probability e^eps / (1 + e^eps) and
    -epsilon otherwise. Returns ``(values, probabilities)``.
    """
    dist = {0.0: 1.0}
    for key, count in others.items():
        eps = key[1]
        p_up = 1.0 / (1.0 + math.exp(-eps))
        for _ in range(int(count)):
            new = {}
            for v, pr in dist.items():
                new[v + eps] = new.get(v + eps, 0.0) + pr * p_up
                new[v - eps] = new.get(v - eps, 0.0) + pr * (1.0 - p_up)
            dist = new
            if len(dist) > _MAX_PURE_SUPPORT:
                # Round losses up to a grid: a larger loss only increases the
                # hockey-stick divergence, so the bound stays valid.
                coarse = {}
                for v, pr in dist.items():
                    v = math.ceil(v / _PURE_GRID) * _PURE_GRID
                    coarse[v] = coarse.get(v, 0.0) + pr
                dist = coarse
    values = np.fromiter(dist.keys(), float)
    probs = np.fromiter(dist.values(), float)
    return values, probs


def _gdp_pure_delta(mu, values, probs, epsilon):
    """Exact delta(epsilon) of mu-GDP composed with pure-epsilon steps.

    The product of the Gaussian pair and the randomized-response pairs
    dominates the composition, and its hockey-stick divergence is
    ``sum_v P(v) delta_G(epsilon - v)``, with ``delta_G`` the GDP curve
    extended to negative arguments.
    """
    total = 0.0
    for v, pr in zip(values, probs):
        x = epsilon - v
        if mu == 0:
            d = max(0.0, -math.expm1(x))
        else:
            d = _gdp_delta_signed(mu, x)
        total += pr * d
    return min(1.0, total)


def _gdp_delta_signed(mu, x):
    a = log_ndtr(-x / mu + mu / 2)
    b = x + log_ndtr(-x / mu - mu / 2)
    if b >= a:
        return 0.0
    return float(math.exp(a) * -math.expm1(b - a))


def _only_pure(p):
    return all(k[0] == "pure" for k in p.others)


def _approx_parts(p):
    """Split a profile into its (epsilon, delta) pairs and the rest."""
    approx = [(k[1], k[2], c) for k, c in p.others.items() if k[0] == "approx"]
    rest = _Profile(
        p.mu2, {k: c for k, c in p.others.items() if k[0] != "approx"}, p.nonprivate
    )
    return approx, rest


def _single_approx(approx, rest):
    return len(approx) == 1 and approx[0][2] == 1 and not (rest.mu2 or rest.others)


def _single_approx_epsilon(eps, d, delta):
    """Exact epsilon at ``delta`` of the (eps, d) pair alone."""
    if delta < d:
        return math.inf
    # delta(e') = d + (1 - d) (exp(eps) - exp(e')) / (1 + exp(eps)) for e' <= eps.
    x = math.exp(eps) - (delta - d) * (1.0 + math.exp(eps)) / (1.0 - d)
    return max(0.0, math.log(x)) if x > 1.0 else 0.0


def _profile_epsilon(p, delta, discretization=None):
    if p.fail > 0 and not p.nonprivate:
        # delta(eps) = delta_rest(eps) + (1 + e^eps) fail. First try to keep
        # a millionth of delta for the failure (one evaluation): valid if the
        # resulting eps satisfies (1 + e^eps) fail <= that share.
        rest = _Profile(p.mu2, p.others)
        share = 1e-6 * delta
        eps = _profile_epsilon(rest, delta - share, discretization)
        if (1.0 + math.exp(min(eps, 700.0))) * p.fail <= share:
            return eps
        # Otherwise iterate eps <- eps_rest(delta - (1 + e^E) fail) from below,
        # with E slightly above eps; an answer eps <= E is certified, since
        # then delta_rest(eps) + (1 + e^eps) fail <= delta.
        for _ in range(100):
            upper = eps * (1.0 + 1e-6) + 1e-9
            spare = (1.0 + math.exp(min(upper, 700.0))) * p.fail
            if not spare < delta:
                return math.inf
            eps_next = _profile_epsilon(rest, delta - spare, discretization)
            if eps_next <= upper:
                return eps_next
            eps = eps_next
        return math.inf
    if p.nonprivate:
        return math.inf
    if not p.others:
        return gdp_epsilon(math.sqrt(p.mu2), delta)
    approx, rest = _approx_parts(p)
    if _single_approx(approx, rest):
        return _single_approx_epsilon(approx[0][0], approx[0][1], delta)
    if approx and any(k[0] == "wor" for k in p.others):
        # RDP (needed for without-replacement sampling) cannot hold an
        # (epsilon, delta) pair: basic composition, a valid upper bound.
        eps_a = sum(e * c for e, _, c in approx)
        d_a = sum(d * c for _, d, c in approx)
        if d_a >= delta:
            return math.inf
        return eps_a + _profile_epsilon(rest, delta - d_a, discretization)
    if _only_pure(p):
        mu = math.sqrt(p.mu2)
        values, probs = _pure_loss_distribution(p.others)

        def excess(e):
            return _gdp_pure_delta(mu, values, probs, e) - delta

        if excess(0.0) <= 0:
            return 0.0
        hi = max(1.0, float(values.max()))
        while excess(hi) > 0:
            hi *= 2.0
        return brentq(excess, 0.0, hi, xtol=1e-12, rtol=1e-12)
    if any(k[0] == "wor" for k in p.others):
        return float(_rdp_accountant_for_profile(p).get_epsilon(delta))
    if discretization is not None:
        return float(_pld_for_profile(p, discretization).get_epsilon_for_delta(delta))
    eps = float(_pld_for_profile(p).get_epsilon_for_delta(delta))
    if 0.0 < eps < _RELATIVE_GRID_BELOW:
        finer = _pld_for_profile(p, max(1e-3 * eps, _FINEST_GRID))
        eps = min(eps, float(finer.get_epsilon_for_delta(delta)))
    return eps


def _profile_delta(p, epsilon):
    if p.fail > 0 and not p.nonprivate:
        rest = _profile_delta(_Profile(p.mu2, p.others), epsilon)
        return min(1.0, rest + (1.0 + math.exp(min(epsilon, 700.0))) * p.fail)
    if p.nonprivate:
        return 1.0
    if not p.others:
        return gdp_delta(math.sqrt(p.mu2), epsilon)
    approx, rest = _approx_parts(p)
    if _single_approx(approx, rest):
        e, d, _ = approx[0]
        return d + (1.0 - d) * max(0.0, -math.expm1(epsilon - e)) / (1.0 + math.exp(-e))
    if approx and any(k[0] == "wor" for k in p.others):
        eps_a = sum(e * c for e, _, c in approx)
        d_a = sum(d * c for _, d, c in approx)
        if epsilon < eps_a:
            return 1.0
        return min(1.0, d_a + _profile_delta(rest, epsilon - eps_a))
    if _only_pure(p):
        values, probs = _pure_loss_distribution(p.others)
        return _gdp_pure_delta(math.sqrt(p.mu2), values, probs, epsilon)
    if any(k[0] == "wor" for k in p.others):
        return float(_rdp_accountant_for_profile(p).get_delta(epsilon))
    return float(_pld_for_profile(p).get_delta_for_epsilon(epsilon))


def certify_epsilon(event, delta, *, pld_discretization=None):
    """Smallest certified epsilon of ``event`` at ``delta`` (replace-one).

    Parameters
    ----------
    event : DpEvent
        Event tree using the skdp noise-multiplier convention
        (see :mod:`skdp.privacy`).
    delta : float
        Target delta in (0, 1).
    pld_discretization : float, optional
        Privacy-loss grid of the PLD route (pessimistic rounding, so any value
        gives an upper bound; coarser is faster and looser). By default 1e-4,
        refined to a thousandth of the answer (at least 1e-6) when that is
        below 0.1: the rounding's looseness is absolute, so a fixed grid
        would dominate a small epsilon.

    Returns
    -------
    epsilon : float
        ``inf`` if any step is non-private.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.
    - Koskela, Jälkö and Honkela, "Computing tight differential privacy guarantees using FFT",
      AISTATS 2020.

    Examples
    --------
    >>> from skdp.privacy import gaussian_steps, certify_epsilon
    >>> round(certify_epsilon(gaussian_steps(10.0, 100), 1e-6), 3)
    4.887
    """
    if not (0.0 < delta < 1.0):
        raise ValueError(f"delta must be in (0, 1), got {delta!r}.")
    return max(_profile_epsilon(p, delta, pld_discretization) for p in profiles(event))


# Below this epsilon the default PLD grid is refined relative to the answer,
# down to a floor that keeps the grid's size (loss range / grid) in memory.
_RELATIVE_GRID_BELOW = 0.1
_FINEST_GRID = 1e-6


def certify_delta(event, epsilon):
    """Smallest certified delta of ``event`` at ``epsilon`` (replace-one).

    Parameters
    ----------
    event : DpEvent
    epsilon : float

    Returns
    -------
    delta : float

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.
    - Koskela, Jälkö and Honkela, "Computing tight differential privacy guarantees using FFT",
      AISTATS 2020.

    Examples
    --------
    >>> from skdp.privacy import gaussian_steps, certify_delta
    >>> certify_delta(gaussian_steps(1.0), 1.0) > 0.1
    True
    """
    return max(_profile_delta(p, epsilon) for p in profiles(event))


def gdp_mu_of(event):
    """``mu`` if every profile is pure full-batch Gaussian, else ``None``.

    Parameters
    ----------
    event : DpEvent

    Returns
    -------
    mu : float or None

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.

    Examples
    --------
    >>> from skdp.privacy import gaussian_steps
    >>> gdp_mu_of(gaussian_steps(2.0, 4))
    1.0
    """
    ps = profiles(event)
    if any(p.nonprivate for p in ps):
        return math.inf
    if any(p.others or p.fail for p in ps):
        return None
    return math.sqrt(max(p.mu2 for p in ps))
