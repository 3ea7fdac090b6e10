"""Public batch samplers of the solvers (saddle-point and bilevel) and their privacy events.

A schedule says which records each noisy release reads. It depends only on
public quantities (``n``, batch size, number of releases, sampling scheme)
and on the solver's random generator, never on the data, so it can be turned
into a privacy event before the data is touched:

- ``"disjoint"`` (the paper's single-pass variants): a random permutation is
  cut into consecutive batches of exactly ``batch_size`` records, one per
  release; every record is read at most once, so the releases compose in
  parallel (:class:`~skdp.privacy.ParallelDpEvent`), each a Gaussian step on
  its own batch.
- ``"poisson"``: each record enters each release's batch independently with
  probability ``q = batch_size / n``; accounted exactly with dp-accounting's
  privacy loss distributions (:class:`~skdp.privacy.PoissonSampledDpEvent`).
- ``"without_replacement"``: each release reads a uniformly random subset of
  exactly ``batch_size`` records; accounted with dp-accounting's RDP
  accountant (:class:`~skdp.privacy.SampledWithoutReplacementDpEvent`), the
  only one that supports it under replace-one.

The paper's multi-pass variants sample *with* replacement, which no
dp-accounting accountant supports under replace-one; skdp runs Poisson or
without-replacement sampling instead and accounts for exactly that.

Every released statistic is a batch *sum* divided by the public
``normalizer`` (the batch size, or its expectation ``q n`` under Poisson
sampling), so a change of one record moves it by at most ``2 M / normalizer``
when every per-record term is bounded by ``M``. In skdp's convention the
noise multiplier is ``z = sigma / sensitivity``.
"""

import contextlib
import math
from dataclasses import dataclass

import numpy as np

from ..privacy import (
    GaussianDpEvent,
    NoOpDpEvent,
    ParallelDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    parallel_scope,
)

__all__ = [
    "BatchSchedule",
    "FractionSampler",
    "SAMPLING_SCHEMES",
    "fixed_size_batch",
    "poisson_batch",
]

SAMPLING_SCHEMES = ("disjoint", "poisson", "without_replacement")


@dataclass(frozen=True)
class BatchSchedule:
    """Which records each of ``n_releases`` noisy statistics reads.

    Parameters
    ----------
    n_samples : int
        Public number of records ``n``.
    n_releases : int
        Number of noisy batch statistics the solver releases (``2T`` for
        NSEG, ``K + 1`` for NISPP).
    batch_size : int
        Batch size (expected batch size under Poisson sampling).
    sampling : {"disjoint", "poisson", "without_replacement"}
        See the module docstring.

    Attributes
    ----------
    normalizer : float
        Public divisor of every batch sum (``batch_size``).
    sampling_probability : float
        ``batch_size / n_samples``.

    Examples
    --------
    >>> import numpy as np
    >>> sched = BatchSchedule(10, 4, 2, "disjoint")
    >>> [b.tolist() for b in sched.batches(np.random.default_rng(0))][0]
    [4, 6]
    >>> sched.event(3.0).events[0]
    GaussianDpEvent(noise_multiplier=3.0)
    """

    n_samples: int
    n_releases: int
    batch_size: int
    sampling: str

    def __post_init__(self):
        if self.sampling not in SAMPLING_SCHEMES:
            raise ValueError(
                f"sampling must be one of {SAMPLING_SCHEMES}, got {self.sampling!r}."
            )
        if self.n_samples < 1 or self.n_releases < 1 or self.batch_size < 1:
            raise ValueError("n_samples, n_releases and batch_size must be >= 1.")
        if self.batch_size > self.n_samples:
            raise ValueError("batch_size cannot exceed n_samples.")
        if (
            self.sampling == "disjoint"
            and self.n_releases * self.batch_size > self.n_samples
        ):
            raise ValueError(
                f"{self.n_releases} disjoint batches of {self.batch_size} records "
                f"need more than the {self.n_samples} records available."
            )

    @property
    def normalizer(self):
        return float(self.batch_size)

    @property
    def sampling_probability(self):
        return self.batch_size / self.n_samples

    def event(self, noise_multiplier):
        """Privacy event of the releases at multiplier ``sigma / sensitivity``.

        Parameters
        ----------
        noise_multiplier : float

        Returns
        -------
        event : DpEvent
        """
        z = float(noise_multiplier)
        gaussian = GaussianDpEvent(z)
        if self.sampling == "disjoint":
            parts = [gaussian] * self.n_releases
            if self.n_releases * self.batch_size < self.n_samples:
                parts.append(NoOpDpEvent())  # records no batch reads
            return ParallelDpEvent(parts)
        if self.sampling == "poisson":
            step = PoissonSampledDpEvent(self.sampling_probability, gaussian)
        else:
            step = SampledWithoutReplacementDpEvent(
                self.n_samples, self.batch_size, gaussian
            )
        return (
            step if self.n_releases == 1 else SelfComposedDpEvent(step, self.n_releases)
        )

    @property
    def ledger_sampling(self):
        """The ``sampling=`` of a release's draw in the privacy ledger."""
        if self.sampling == "poisson":
            return ("poisson", self.sampling_probability)
        if self.sampling == "without_replacement":
            return ("without_replacement", self.n_samples, self.batch_size)
        return ()

    def ledger_scope(self):
        """The parallel scope of disjoint batches (``None`` for sampled ones).

        Pass it with the release's index to :func:`release_part`, as
        :meth:`event` composes them: one part per batch, and one that no
        batch reads when records are left over.
        """
        if self.sampling != "disjoint":
            return None
        leftover = self.n_releases * self.batch_size < self.n_samples
        return parallel_scope(self.n_releases + int(leftover))

    def batches(self, rng):
        """Yield the index array of each release, drawn from ``rng``.

        Parameters
        ----------
        rng : numpy.random.Generator

        Yields
        ------
        indices : ndarray of int
        """
        n, b = self.n_samples, self.batch_size
        if self.sampling == "disjoint":
            order = rng.permutation(n)
            for k in range(self.n_releases):
                yield order[k * b : (k + 1) * b]
        elif self.sampling == "poisson":
            q = self.sampling_probability
            for _ in range(self.n_releases):
                yield poisson_batch(rng, n, q)
        else:
            for _ in range(self.n_releases):
                yield fixed_size_batch(rng, n, b)


class FractionSampler:
    """Batches of one part, one at a time: full, Poisson or fixed size.

    The sampler of the bilevel solver (:mod:`skdp.solvers.bilevel.hypergradient`),
    whose batch sizes are fractions of a part and whose steps are drawn one
    at a time; :class:`BatchSchedule` is the saddle-point solvers' schedule
    of a fixed number of releases. Both run the schemes their accounting
    describes (Poisson: :class:`~skdp.privacy.PoissonSampledDpEvent`; fixed
    size without replacement:
    :class:`~skdp.privacy.SampledWithoutReplacementDpEvent`) and both draw a
    batch with the same code, :func:`poisson_batch` (a binomial size, then a
    uniform subset of that size) or :func:`fixed_size_batch`, from the
    generator in the same order.

    Parameters
    ----------
    n : int
        Public size of the part.
    scheme : {None, "poisson", "without_replacement"}
        ``None``: the full batch.
    fraction : float
        Sampling probability (Poisson) or batch size over ``n``.
    rng : numpy.random.Generator

    Attributes
    ----------
    normalizer : float
        Public divisor of a batch sum (``n``, ``q n`` or the batch size).

    Examples
    --------
    >>> import numpy as np
    >>> s = FractionSampler(10, "without_replacement", 0.3, np.random.default_rng(0))
    >>> s.normalizer, s.draw().size
    (3.0, 3)
    """

    def __init__(self, n, scheme, fraction, rng):
        self.n, self.scheme, self.rng = int(n), scheme, rng
        if scheme is None:
            self.normalizer = float(self.n)
        elif scheme == "poisson":
            self.q = float(fraction)
            self.normalizer = self.q * self.n
        else:
            self.size = max(1, int(round(fraction * self.n)))
            self.normalizer = float(self.size)

    def draw(self):
        """Indices of the next batch (a slice for the full batch: no copy).

        Returns
        -------
        slice or ndarray of int
        """
        if self.scheme is None:
            return slice(None)
        if self.scheme == "poisson":
            return poisson_batch(self.rng, self.n, self.q)
        return fixed_size_batch(self.rng, self.n, self.size)


def poisson_batch(rng, n, q):
    """Indices of a Poisson sample: each of ``n`` records with probability ``q``.

    A binomial size, then a uniform subset of that size: exactly Poisson
    sampling, and much cheaper than ``n`` coin flips for small ``q``. The one
    Poisson draw of :class:`BatchSchedule` and :class:`FractionSampler`.

    Parameters
    ----------
    rng : numpy.random.Generator
    n : int
    q : float

    Returns
    -------
    ndarray of int
        Distinct indices, in random order.

    Examples
    --------
    >>> import numpy as np
    >>> poisson_batch(np.random.default_rng(0), 1000, 0.0).size
    0
    """
    return _uniform_subset(rng, n, int(rng.binomial(n, q)))


def fixed_size_batch(rng, n, size):
    """Indices of a uniform sample of ``size`` of ``n`` records without replacement.

    The one fixed-size draw of :class:`BatchSchedule` and
    :class:`FractionSampler`.

    Parameters
    ----------
    rng : numpy.random.Generator
    n, size : int

    Returns
    -------
    ndarray of int
        Distinct indices, in random order.

    Examples
    --------
    >>> import numpy as np
    >>> sorted(fixed_size_batch(np.random.default_rng(0), 5, 5).tolist())
    [0, 1, 2, 3, 4]
    """
    return _uniform_subset(rng, n, size)


def _uniform_subset(rng, n, size):
    if size == 0:
        return np.empty(0, dtype=np.intp)
    if size * 8 > n:
        return rng.permutation(n)[:size]
    # Floyd-style rejection is what Generator.choice does for small subsets.
    return rng.choice(n, size=size, replace=False)


def disjoint_capacity(n_samples, batch_size):
    """Largest number of disjoint batches of ``batch_size`` among ``n`` records.

    Parameters
    ----------
    n_samples, batch_size : int

    Returns
    -------
    int

    Examples
    --------
    >>> disjoint_capacity(10, 3)
    3
    """
    return int(math.floor(n_samples / batch_size))


def release_part(scope, index):
    """Context of release ``index`` in a schedule's :meth:`~BatchSchedule.ledger_scope`."""
    return contextlib.nullcontext() if scope is None else scope.part(index)
