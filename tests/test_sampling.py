"""The one batch sampler: BatchSchedule and FractionSampler draw through the
same per-release code (skdp.solvers.sampling.poisson_batch /
fixed_size_batch), so the same generator gives the same batches, and the
draws have the distributions their DpEvents account for."""

import numpy as np
import pytest

from skdp.solvers.sampling import (
    BatchSchedule,
    FractionSampler,
    fixed_size_batch,
    poisson_batch,
)


@pytest.mark.parametrize("scheme", ["poisson", "without_replacement"])
def test_fraction_sampler_draws_the_schedules_batches(scheme):
    n, b, k = 500, 40, 25
    sched = list(BatchSchedule(n, k, b, scheme).batches(np.random.default_rng(3)))
    sampler = FractionSampler(n, scheme, b / n, np.random.default_rng(3))
    drawn = [sampler.draw() for _ in range(k)]
    assert len(sched) == len(drawn) == k
    for a, c in zip(sched, drawn):
        np.testing.assert_array_equal(a, c)
    assert sampler.normalizer == pytest.approx(b)


def test_poisson_batch_is_poisson_sampling():
    """Size Binomial(n, q) and every record included with probability q,
    independently of the others (pair inclusion q**2)."""
    rng = np.random.default_rng(0)
    n, q, reps = 60, 0.2, 20_000
    hits = np.zeros(n)
    pair = 0
    sizes = np.empty(reps)
    for r in range(reps):
        idx = poisson_batch(rng, n, q)
        assert np.unique(idx).size == idx.size
        sizes[r] = idx.size
        hits[idx] += 1
        pair += np.isin([0, 1], idx).all()
    assert sizes.mean() == pytest.approx(n * q, rel=0.01)
    assert sizes.var() == pytest.approx(n * q * (1 - q), rel=0.05)
    np.testing.assert_allclose(hits / reps, q, atol=4 * np.sqrt(q * (1 - q) / reps))
    assert pair / reps == pytest.approx(q**2, abs=4 * np.sqrt(q**2 / reps))


@pytest.mark.parametrize("size", [3, 30])  # both branches of the subset draw
def test_fixed_size_batch_is_uniform_without_replacement(size):
    rng = np.random.default_rng(1)
    n, reps = 40, 20_000
    hits = np.zeros(n)
    for _ in range(reps):
        idx = fixed_size_batch(rng, n, size)
        assert idx.size == size and np.unique(idx).size == size
        hits[idx] += 1
    p = size / n
    np.testing.assert_allclose(hits / reps, p, atol=4 * np.sqrt(p * (1 - p) / reps))
