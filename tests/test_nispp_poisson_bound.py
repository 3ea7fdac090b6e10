"""NISPP under Poisson sampling: relaxed targets from a public batch-size bound.

Issue 15, finding 3. Where float64 cannot certify NISPP's accuracy target,
the target (and the noise with it) used to be raised from the *realised*
batch size, which under Poisson sampling includes whether the changed record
was drawn. The decision now uses :func:`poisson_batch_bound` (public), and the
probability that a batch exceeds it is in the plan as a ``FailureDpEvent``.
"""

import math

import numpy as np
import pytest
from scipy.stats import binom

import skdp.solvers.saddle_point.nispp as mod
from skdp import MinimaxFairClassifier
from skdp.privacy import (
    ComposedDpEvent,
    FailureDpEvent,
    certify_delta,
    certify_epsilon,
    gaussian_steps,
    gdp_delta,
)
from skdp.privacy._composition import profiles
from skdp.solvers.projections import Ball
from skdp.solvers.saddle_point.nispp import (
    BATCH_TAIL,
    batch_failure_event,
    nispp,
    poisson_batch_bound,
)
from skdp.solvers.sampling import BatchSchedule


@pytest.mark.parametrize(
    "n, q", [(1000, 0.01), (10_000, 0.1), (100_000, 0.003), (50, 0.5), (10**6, 1e-4)]
)
def test_batch_bound_holds_with_the_stated_tail(n, q):
    tail = 1e-12  # scipy's binomial tail is accurate here
    bound = poisson_batch_bound(n, q, tail)
    assert bound <= n
    assert binom.sf(bound - 1, n, q) <= tail  # P(|B| >= bound) <= tail
    # and it is not absurdly loose: within 3x the standard deviations needed
    exact = binom.isf(tail, n, q)
    assert bound - n * q <= 3.0 * max(exact - n * q, 1.0)


def test_relaxed_targets_do_not_depend_on_realised_batch_sizes(monkeypatch):
    # Large batches and lambda: the target is below what float64 certifies,
    # so every step is relaxed. Without noise the centre stays inside the
    # domain, so the only thing that could change a step's target is the
    # batch size; the realised sizes differ, the targets must not.
    targets, sizes = [], []
    solve = mod.solve_prox_subproblem

    def spy(operator, indices, normalizer, center, lam, domain, nu, **kw):
        targets.append(nu)
        sizes.append(len(indices))
        return solve(operator, indices, normalizer, center, lam, domain, nu, **kw)

    monkeypatch.setattr(mod, "solve_prox_subproblem", spy)
    d, M, L, lam, B = 3, 5.0, 10.0, 300.0, 20_000
    rng = np.random.default_rng(0)
    A = rng.normal(size=(d, d))
    A = (A - A.T) * L / (2 * np.linalg.norm(A, 2))
    sched = BatchSchedule(4 * B, 6, B, "poisson")
    res = nispp(
        lambda w, idx: len(idx) * (A @ w),
        Ball(d, 5.0),
        sched,
        M=M,
        L=L,
        noise_multiplier=0.0,
        rng=np.random.default_rng(0),
        prox=lam,
    )
    assert len(set(sizes)) > 1  # the realised sizes vary ...
    assert res.info["relaxed_steps"] == len(targets) == 6
    assert len(set(targets)) == 1  # ... the relaxed target does not
    assert res.info["batch_size_bound"] == poisson_batch_bound(4 * B, 0.25)
    assert max(sizes) <= res.info["batch_size_bound"]


def test_failure_event_adds_its_delta_exactly():
    mu, p = 1.3, 1e-11
    event = ComposedDpEvent([gaussian_steps(1.0 / mu), FailureDpEvent(p)])
    for eps in (0.1, 1.0, 3.0):
        expected = gdp_delta(mu, eps) + (1.0 + math.exp(eps)) * p
        assert certify_delta(event, eps) == pytest.approx(expected, rel=1e-12)
    delta = 1e-6
    eps = certify_epsilon(event, delta)
    assert certify_delta(event, eps) <= delta * (1 + 1e-9)
    # tight: a slightly smaller epsilon would not be covered
    assert certify_delta(event, 0.999 * eps) > delta
    # and it costs something: the same Gaussian alone certifies less
    assert eps > certify_epsilon(gaussian_steps(1.0 / mu), delta)
    # a failure probability that eats the whole delta certifies nothing
    assert certify_epsilon(ComposedDpEvent([event, FailureDpEvent(delta)]), delta) == (
        math.inf
    )


def test_failure_probabilities_add_up_and_survive_self_composition():
    from skdp.privacy import SelfComposedDpEvent

    event = SelfComposedDpEvent(FailureDpEvent(1e-12), 7)
    assert [p.fail for p in profiles(event)] == [pytest.approx(7e-12)]


def test_minimax_poisson_plan_accounts_the_batch_bound():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(600, 2))
    y = (X[:, 0] > 0).astype(int)
    clf = MinimaxFairClassifier(
        random_state=0,
        classes=[0, 1],
        epsilon=2.0,
        delta=1e-5,
        feature_norm=3.0,
        solver="nispp",
    ).fit(X, y)
    sched = BatchSchedule(600, clf.n_iter_, clf.constants_["batch_size"], "poisson")
    failure = batch_failure_event(sched)
    assert failure == FailureDpEvent(clf.n_iter_ * BATCH_TAIL)
    eps, delta = clf.privacy_spent_
    assert eps <= 2.0 * (1 + 1e-9) and delta == 1e-5
