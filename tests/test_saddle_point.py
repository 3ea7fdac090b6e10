"""DP saddle-point solvers: projections, operator constants, convergence,
certified inner solver, coupled-run sensitivity and accounting."""

import math

import numpy as np
import pytest
from scipy.optimize import minimize

from skdp.privacy import (
    ParallelDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    certify_epsilon,
)
from skdp.solvers.projections import (
    Ball,
    ProductDomain,
    Simplex,
    project_ball,
    project_simplex,
)
from skdp.solvers.saddle_point.dispatch import (
    calibrate_schedule,
    saddle_point_schedule,
    schedule_event,
)
from skdp.solvers.saddle_point.group_dro import GroupDROLogistic
from skdp.solvers.saddle_point.nispp import (
    InnerSolverError,
    guaranteed_inner_iterations,
    nispp,
    prox_accuracy_target,
    prox_sensitivity,
    solve_prox_subproblem,
    vi_certificate,
)
from skdp.solvers.saddle_point.nseg import nseg
from skdp.solvers.sampling import BatchSchedule

# --- helpers ----------------------------------------------------------------------


def _dro_problem(n=60, p=3, m=3, seed=0, radius=2.0, dual_scale=1.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, p))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    g = np.arange(n) % m
    w_true = rng.normal(size=(m, p)) * 2
    y = np.where(
        rng.random(n) < 1 / (1 + np.exp(-np.einsum("ij,ij->i", X, w_true[g]))),
        1.0,
        -1.0,
    )
    priors = np.bincount(g, minlength=m) / n
    return GroupDROLogistic(
        X, y, g, priors, radius=radius, feature_bound=1.0, dual_scale=dual_scale
    )


def _nispp_on(op, sched, **kwargs):
    """NISPP on a group-DRO operator with its own domain and constants."""
    return nispp(op, op.domain, sched, M=op.M, L=op.L, **kwargs)


def _extragradient_reference(op, n_iter=20_000):
    """Deterministic full-batch extragradient (last iterate)."""
    idx = np.arange(op.y.size)
    dom = op.domain
    gamma = 0.5 / (op.L * op.priors.min())  # batch operator is far smoother than L
    gamma = min(gamma, 0.5)
    u = dom.center()
    n = op.y.size
    for _ in range(n_iter):
        w = dom.project(u - gamma * op(u, idx) / n)
        u = dom.project(u - gamma * op(w, idx) / n)
    return u


def _full_batch(n, releases):
    return BatchSchedule(n, releases, n, "without_replacement")


# --- projections and domains -------------------------------------------------------


def test_ball_projection():
    v = np.array([3.0, 4.0])
    np.testing.assert_allclose(project_ball(v, 1.0), [0.6, 0.8])
    np.testing.assert_allclose(project_ball(v, 10.0), v)


@pytest.mark.parametrize("seed", range(5))
def test_simplex_projection_matches_a_qp(seed):
    rng = np.random.default_rng(seed)
    v = rng.normal(size=6) * 2
    p = project_simplex(v)
    assert p.min() >= 0 and p.sum() == pytest.approx(1.0)
    res = minimize(
        lambda x: 0.5 * np.sum((x - v) ** 2),
        np.full(6, 1 / 6),
        jac=lambda x: x - v,
        bounds=[(0, None)] * 6,
        constraints=[{"type": "eq", "fun": lambda x: x.sum() - 1}],
        method="SLSQP",
        options={"ftol": 1e-14},
    )
    np.testing.assert_allclose(p, res.x, atol=1e-6)
    # Shift invariance along the all-ones vector.
    np.testing.assert_allclose(project_simplex(v + 3.7), p, atol=1e-12)


def test_scaled_simplex_and_product_domain():
    s = Simplex(3, scale=2.0)
    q = s.project(np.array([5.0, 0.0, -1.0]))
    assert q.sum() == pytest.approx(2.0)
    dom = ProductDomain(Ball(2, 1.0), Simplex(3, 2.0))
    assert dom.diameter == pytest.approx(math.sqrt(4 + 8))
    out = dom.project(np.array([3.0, 4.0, 5.0, 0.0, -1.0]))
    np.testing.assert_allclose(out[:2], [0.6, 0.8])
    np.testing.assert_allclose(out[2:], q)


def test_linear_oracle_is_the_minimum_over_the_domain():
    rng = np.random.default_rng(1)
    dom = ProductDomain(Ball(3, 2.0), Simplex(4, 0.5))
    g = rng.normal(size=7)
    value = dom.min_linear(g)
    samples = [dom.project(rng.normal(size=7) * 5) for _ in range(2000)]
    assert value <= min(g @ s for s in samples) + 1e-12
    # Attained at the ball point -R g/|g| and the best simplex vertex.
    w = np.r_[-2.0 * g[:3] / np.linalg.norm(g[:3]), 0.5 * np.eye(4)[np.argmin(g[3:])]]
    assert g @ w == pytest.approx(value)


# --- the group-DRO operator ---------------------------------------------------------


def test_group_dro_operator_bound_is_valid_and_tight():
    rng = np.random.default_rng(2)
    op = _dro_problem(radius=3.0, dual_scale=0.7)
    norms = []
    for _ in range(300):
        v = op.domain.project(rng.normal(size=op.dim) * 5)
        i = rng.integers(op.y.size, size=1)
        norms.append(np.linalg.norm(op(v, i)))
    assert max(norms) <= op.M
    # Worst case: all weight on the smallest group, margin -R_w R_x.
    k = int(np.argmin(op.priors))
    X = np.zeros((1, 3))
    X[0, 0] = 1.0
    worst = GroupDROLogistic(
        X,
        np.array([1.0]),
        np.array([k]),
        op.priors,
        radius=3.0,
        feature_bound=1.0,
        dual_scale=0.7,
    )
    v = np.r_[-3.0, 0.0, 0.0, np.eye(3)[k] / 0.7]
    assert np.linalg.norm(worst(v, np.array([0]))) >= 0.95 * op.M


def test_group_dro_operator_is_monotone_and_lipschitz():
    rng = np.random.default_rng(3)
    op = _dro_problem(dual_scale=0.5)
    for _ in range(200):
        i = rng.integers(op.y.size, size=1)
        v1 = op.domain.project(rng.normal(size=op.dim) * 3)
        v2 = op.domain.project(rng.normal(size=op.dim) * 3)
        d = op(v1, i) - op(v2, i)
        assert d @ (v1 - v2) >= -1e-12
        assert np.linalg.norm(d) <= op.L * np.linalg.norm(v1 - v2) + 1e-12


def test_group_dro_operator_matches_finite_differences_of_the_objective():
    op = _dro_problem()
    rng = np.random.default_rng(4)
    v = op.domain.project(rng.normal(size=op.dim))
    idx = np.arange(op.y.size)
    w, q = op.split(v)

    def f(w):
        return q @ op.group_risks(w)

    grad = np.array(
        [(f(w + 1e-6 * e) - f(w - 1e-6 * e)) / 2e-6 for e in np.eye(w.size)]
    )
    np.testing.assert_allclose(op(v, idx)[: w.size] / idx.size, grad, atol=1e-7)


# --- schedules and accounting ----------------------------------------------------------


def test_disjoint_batches_are_disjoint_and_parallel():
    sched = BatchSchedule(50, 6, 8, "disjoint")
    batches = list(sched.batches(np.random.default_rng(0)))
    flat = np.concatenate(batches)
    assert all(b.size == 8 for b in batches) and np.unique(flat).size == 48
    event = sched.event(2.0)
    assert isinstance(event, ParallelDpEvent)
    # One Gaussian per record: exactly the cost of a single step.
    assert certify_epsilon(event, 1e-5) == pytest.approx(
        certify_epsilon(event.events[0], 1e-5)
    )
    with pytest.raises(ValueError, match="disjoint"):
        BatchSchedule(50, 7, 8, "disjoint")


def test_poisson_batches_have_the_declared_rate():
    sched = BatchSchedule(1000, 400, 50, "poisson")
    sizes = [b.size for b in sched.batches(np.random.default_rng(0))]
    assert np.mean(sizes) == pytest.approx(50, rel=0.05)
    assert isinstance(sched.event(1.0).event, PoissonSampledDpEvent)
    wor = BatchSchedule(1000, 4, 50, "without_replacement")
    assert all(b.size == 50 for b in wor.batches(np.random.default_rng(0)))
    assert isinstance(wor.event(1.0), SelfComposedDpEvent)
    assert isinstance(wor.event(1.0).event, SampledWithoutReplacementDpEvent)


@pytest.mark.parametrize("sampling", ["disjoint", "poisson", "without_replacement"])
def test_calibrated_schedule_spends_the_budget(sampling):
    sched = saddle_point_schedule(
        "nseg", sampling, 2000, dim=5, epsilon=1.0, delta=1e-5, max_iter=50
    )
    z = calibrate_schedule(sched, 1.0, 1e-5)
    eps = certify_epsilon(schedule_event(sched, z), 1e-5)
    assert 0.98 <= eps <= 1.0
    assert certify_epsilon(schedule_event(sched, 0.95 * z), 1e-5) > 1.0


def test_poisson_needs_less_noise_than_without_replacement():
    # Why Poisson is the default: PLD is tight, RDP for the
    # without-replacement scheme is not (same rate, same number of steps).
    kw = dict(dim=5, epsilon=1.0, delta=1e-5, max_iter=50)  # cached above
    zp = calibrate_schedule(
        saddle_point_schedule("nseg", "poisson", 2000, **kw), 1.0, 1e-5
    )
    zw = calibrate_schedule(
        saddle_point_schedule("nseg", "without_replacement", 2000, **kw), 1.0, 1e-5
    )
    assert zp < 0.8 * zw


def test_single_pass_schedules_follow_the_paper():
    s = saddle_point_schedule(
        "nseg", "disjoint", 10_000, dim=4, epsilon=1.0, delta=1e-5
    )
    B = math.ceil(math.sqrt(4 * math.log(1e5)))
    assert (s.batch_size, s.n_releases) == (B, 2 * (10_000 // (2 * B)))
    s = saddle_point_schedule("nispp", "disjoint", 1000, dim=4, epsilon=1.0, delta=1e-5)
    assert (s.batch_size, s.n_releases) == (10, 100)


# --- noise-free convergence ---------------------------------------------------------------


@pytest.fixture(scope="module")
def dro_reference():
    op = _dro_problem()
    ref = _extragradient_reference(op)
    assert op.saddle_point_gap(ref) < 1e-6
    return op, ref


def test_nseg_without_noise_converges_to_extragradient(dro_reference):
    op, ref = dro_reference
    n = op.y.size
    gaps = []
    for T in (30, 300, 3000):
        res = nseg(
            op,
            op.domain,
            _full_batch(n, 2 * T),
            M=op.M,
            L=op.L,
            noise_multiplier=0.0,
            rng=np.random.default_rng(0),
            step_size=0.5,
        )
        gaps.append(op.saddle_point_gap(res.solution))
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 2e-3
    np.testing.assert_allclose(res.solution[:3], ref[:3], atol=0.05)


def test_stochastic_nseg_without_noise_gap_decreases(dro_reference):
    op, _ = dro_reference
    gaps = []
    for T in (100, 4000):
        sched = BatchSchedule(op.y.size, 2 * T, 6, "poisson")
        res = nseg(
            op,
            op.domain,
            sched,
            M=op.M,
            L=op.L,
            noise_multiplier=0.0,
            rng=np.random.default_rng(1),
            step_size=2.0 / math.sqrt(T),
        )
        gaps.append(op.saddle_point_gap(res.solution))
    assert gaps[1] < 0.3 * gaps[0]
    assert gaps[1] < 0.02


def test_nispp_without_noise_converges_to_extragradient(dro_reference):
    op, ref = dro_reference
    n = op.y.size
    gaps = []
    for K in (10, 100, 1000):
        res = nispp(
            op,
            op.domain,
            _full_batch(n, K),
            M=op.M,
            L=op.L,
            noise_multiplier=0.0,
            rng=np.random.default_rng(0),
            prox=1.0,
        )
        gaps.append(op.saddle_point_gap(res.solution))
        assert res.info["max_certificate"] <= res.info["nu_target"]
    assert gaps[0] > gaps[1] > gaps[2]
    assert gaps[2] < 2e-3
    np.testing.assert_allclose(res.solution[:3], ref[:3], atol=0.05)


# --- certified inner solver -----------------------------------------------------------------


@pytest.mark.parametrize("seed", range(4))
def test_inner_solver_certificate_reaches_nu_priv(seed):
    rng = np.random.default_rng(seed)
    op = _dro_problem(seed=seed, dual_scale=0.5)
    idx = rng.choice(op.y.size, 12, replace=False)
    lam = [0.2, 1.0, 5.0, 50.0][seed]
    B = 12.0
    center = rng.normal(size=op.dim) * 3  # outside the domain, like w_k = u_k + xi
    nu_priv = 2 * op.M**2 / (lam * B**2)
    nu = prox_accuracy_target(op.M, lam, B, 1e-2)
    assert nu <= nu_priv
    u, cert, its = solve_prox_subproblem(
        op, idx, B, center, lam, op.domain, nu, lipschitz=op.L, operator_bound=op.M
    )
    g = op(u, idx) / B + lam * (u - center)
    assert cert == pytest.approx(vi_certificate(g, u, op.domain), abs=1e-12)
    assert cert <= nu
    # The certificate is honest: by strong monotonicity the distance to the
    # exact solution is at most sqrt(nu / lambda).
    exact, _, _ = solve_prox_subproblem(
        op,
        idx,
        B,
        center,
        lam,
        op.domain,
        1e-2 * nu,
        lipschitz=op.L,
        operator_bound=op.M,
        u0=u,
    )
    assert np.linalg.norm(u - exact) <= math.sqrt(nu / lam) + math.sqrt(1e-2 * nu / lam)


def test_inner_solver_refuses_to_release_an_uncertified_point():
    op = _dro_problem()
    idx = np.arange(10)
    with pytest.raises(InnerSolverError, match="not certified"):
        solve_prox_subproblem(
            op,
            idx,
            10.0,
            np.ones(op.dim) * 3,
            0.01,
            op.domain,
            1e-8,
            lipschitz=op.L,
            operator_bound=op.M,
            max_iter=2,
        )


def _affine_monotone_operator(rng, d):
    # F(u) = A u + b with A = skew + PSD: monotone and |A|-Lipschitz. The
    # rotation (skew part) is what slows extragradient down.
    skew = rng.normal(size=(d, d))
    skew = (skew - skew.T) * rng.uniform(0.1, 10.0)
    half = rng.normal(size=(d, d)) * rng.uniform(0.0, 1.0)
    A = skew + half @ half.T
    b = rng.normal(size=d) * rng.uniform(0.0, 5.0)
    return (lambda w, idx: len(idx) * (A @ w + b)), np.linalg.norm(A, 2), b


def test_inner_solver_certifies_within_its_public_iteration_cap():
    # The cap is a proof, not a budget: if some batches hit it and others did
    # not, the abort would be a data-dependent release.
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(150):
        d = int(rng.integers(2, 8))
        op, L, b = _affine_monotone_operator(rng, d)
        dom = Ball(d, rng.uniform(0.5, 3.0))
        lam = L * 10 ** rng.uniform(-3, 1)
        center = rng.normal(size=d) * rng.uniform(0.0, 5.0)
        op_bound = L * dom.radius + np.linalg.norm(b)
        outside = np.linalg.norm(center - dom.project(center))
        grad_bound = op_bound + lam * (dom.diameter + outside)
        nu = grad_bound * dom.diameter * 10 ** rng.uniform(-9, -3)
        idx = np.arange(5)
        u, cert, its = solve_prox_subproblem(
            op, idx, 5.0, center, lam, dom, nu, lipschitz=L, operator_bound=op_bound
        )
        cap = guaranteed_inner_iterations(grad_bound, L, lam, dom.diameter, nu)
        g = op(u, idx) / 5.0 + lam * (u - center)
        assert vi_certificate(g, u, dom) <= nu
        assert its <= cap
        worst = max(worst, its / cap)
    # The cap is not vacuous: the hardest (rotational, small lambda) problems
    # use a fair share of it.
    assert worst > 0.05


def test_nispp_relaxes_an_uncertifiable_target_with_matching_noise(monkeypatch):
    # With large batches and lambda the target nu ~ 1 / (lambda B^2) falls
    # below what float64 can certify. NISPP then raises the step's target,
    # and its noise with the same multiplier, instead of aborting after the
    # budget is spent; the decision uses public inputs only.
    import skdp.solvers.saddle_point.nispp as mod

    targets, sigmas = [], []
    solve, noise = mod.solve_prox_subproblem, mod.gaussian_noise

    def spy_solve(operator, indices, normalizer, center, lam, domain, nu, **kw):
        targets.append(nu)
        return solve(operator, indices, normalizer, center, lam, domain, nu, **kw)

    def spy_noise(rng, sigma, size, **ledger):
        sigmas.append(sigma)
        return noise(rng, sigma, size, **ledger)

    monkeypatch.setattr(mod, "solve_prox_subproblem", spy_solve)
    monkeypatch.setattr(mod, "gaussian_noise", spy_noise)
    rng = np.random.default_rng(1)
    d, M, L, z, lam = 6, 5.0, 10.0, 1.5, 300.0
    A = rng.normal(size=(d, d))
    A = (A - A.T) * L / (2 * np.linalg.norm(A, 2))
    dom = ProductDomain(Ball(d - 3, 5.0), Simplex(3))
    for B, relaxed in ((100, 0), (20_000, 3)):
        targets.clear(), sigmas.clear()
        res = nispp(
            lambda w, idx: len(idx) * (A @ w),
            dom,
            BatchSchedule(3 * B, 3, B, "disjoint"),
            M=M,
            L=L,
            noise_multiplier=z,
            rng=np.random.default_rng(0),
            prox=lam,
        )
        assert res.info["relaxed_steps"] == relaxed
        assert res.noise_std == z * prox_sensitivity(M, lam, B, res.info["nu_target"])
        # Every step's noise is the multiplier times its own sensitivity.
        for nu, sigma in zip(targets, sigmas, strict=True):
            assert sigma == pytest.approx(z * prox_sensitivity(M, lam, B, nu))
        assert sum(nu > res.info["nu_target"] for nu in targets) == relaxed
        assert res.info["max_noise_std"] == pytest.approx(max(sigmas))


def test_inner_solver_refuses_an_uncertifiable_target_before_reading_the_data():
    def operator(w, idx):
        raise AssertionError("the data were read")

    with pytest.raises(InnerSolverError, match="floating-point margin"):
        solve_prox_subproblem(
            operator,
            np.arange(3),
            3.0,
            np.zeros(2),
            1.0,
            Ball(2, 1.0),
            1e-16,
            lipschitz=1.0,
            operator_bound=1.0,
        )


def test_nispp_has_no_user_iteration_cap():
    # A user cap below the proven count would reintroduce the leak.
    op = _dro_problem()
    sched = BatchSchedule(op.y.size, 4, 10, "poisson")
    with pytest.raises(TypeError, match="max_inner_iter"):
        _nispp_on(
            op,
            sched,
            noise_multiplier=1.0,
            rng=np.random.default_rng(0),
            max_inner_iter=5,
        )


def test_nispp_rejects_an_accuracy_target_above_nu_priv():
    op = _dro_problem()
    with pytest.raises(ValueError, match="inner_tol"):
        nispp(
            op,
            op.domain,
            _full_batch(op.y.size, 2),
            M=op.M,
            L=op.L,
            noise_multiplier=1.0,
            rng=np.random.default_rng(0),
            inner_tol=5.0,
        )


# --- coupled-run sensitivity ---------------------------------------------------------------


class _CoupledOperator:
    """Evaluates two neighbouring datasets at the same point and batch."""

    def __init__(self, op, op_neighbour):
        self.op, self.other = op, op_neighbour
        self.gaps = []

    def __call__(self, v, idx):
        a = self.op(v, idx)
        self.gaps.append(np.linalg.norm(a - self.other(v, idx)))
        return a


def _constant_operator(values):
    values = np.asarray(values, dtype=float)
    return lambda v, idx: values[idx].sum(axis=0)


@pytest.mark.parametrize("sampling", ["disjoint", "poisson", "without_replacement"])
def test_nseg_operator_values_move_by_at_most_2M_over_B(sampling):
    n, M = 40, 3.0
    rng = np.random.default_rng(0)
    c = rng.normal(size=(n, 2))
    c *= M / np.linalg.norm(c, axis=1, keepdims=True)
    c_neighbour = c.copy()
    c_neighbour[7] = -c[7]  # the replaced record: the opposite extreme
    coupled = _CoupledOperator(_constant_operator(c), _constant_operator(c_neighbour))
    sched = BatchSchedule(n, 10 if sampling == "disjoint" else 200, 4, sampling)
    res = nseg(
        coupled,
        Ball(2, 5.0),
        sched,
        M=M,
        L=0.0,
        noise_multiplier=1.0,
        rng=np.random.default_rng(1),
        step_size=0.1,
    )
    moved = np.array(coupled.gaps) / sched.normalizer
    assert res.sensitivity == pytest.approx(2 * M / 4)
    assert moved.max() <= res.sensitivity * (1 + 1e-12)
    assert moved.max() >= 0.999 * res.sensitivity  # the bound is attained


def test_nseg_group_dro_sensitivity_holds_on_adversarial_neighbours():
    rng = np.random.default_rng(5)
    op = _dro_problem(n=30, radius=3.0, dual_scale=0.7)
    k = int(np.argmin(op.priors))
    j = (k + 1) % 3
    X, y, g = op.X.copy(), op.y.copy(), op.groups.copy()
    X[0], y[0], g[0] = np.r_[1.0, 0, 0], 1.0, k  # worst case at q = e_k
    X2, y2, g2 = X.copy(), y.copy(), g.copy()
    X2[0], y2[0], g2[0] = np.r_[-1.0, 0, 0], 1.0, j  # its replacement
    kw = dict(radius=3.0, feature_bound=1.0, dual_scale=0.7)
    op1 = GroupDROLogistic(X, y, g, op.priors, **kw)
    op2 = GroupDROLogistic(X2, y2, g2, op.priors, **kw)
    coupled = _CoupledOperator(op1, op2)
    sched = BatchSchedule(30, 400, 5, "poisson")
    res = nseg(
        coupled,
        op.domain,
        sched,
        M=op.M,
        L=op.L,
        noise_multiplier=0.5,
        rng=rng,
        step_size=0.3,
    )
    moved = np.array(coupled.gaps) / sched.normalizer
    assert moved.max() <= res.sensitivity
    # At the adversarial point the pair differs by about M (the dual block is
    # sign-definite, so this operator cannot reach the generic 2M).
    v = np.r_[-3.0, 0.0, 0.0, np.eye(3)[k] / 0.7]
    gap = np.linalg.norm(op1(v, np.array([0])) - op2(v, np.array([0])))
    assert 0.45 * 2 * op.M <= gap <= 2 * op.M


@pytest.mark.parametrize("inner_tol", [1e-2, 4.0])
def test_nispp_subproblem_solutions_move_by_at_most_4M_over_lambda_B(inner_tol):
    # Constant operators with opposite extreme values in a domain large enough
    # for the constraint to be inactive: the exact solutions move by exactly
    # 2M / (lambda B), so the certified bound is nearly attained.
    n, M, lam, B = 12, 2.0, 3.0, 12.0
    rng = np.random.default_rng(0)
    c = rng.normal(size=(n, 3))
    c *= M / np.linalg.norm(c, axis=1, keepdims=True)
    c2 = c.copy()
    c2[4] = -c[4]
    dom = Ball(3, 100.0)
    nu = prox_accuracy_target(M, lam, B, inner_tol)
    s = prox_sensitivity(M, lam, B, nu)
    assert s <= 4 * M / (lam * B) * (1 + 1e-12)
    idx = np.arange(n)
    center = rng.normal(size=3)
    u, u2 = (
        solve_prox_subproblem(
            _constant_operator(values),
            idx,
            B,
            center,
            lam,
            dom,
            nu,
            lipschitz=0.0,
            operator_bound=M,
        )[0]
        for values in (c, c2)
    )
    moved = np.linalg.norm(u - u2)
    assert moved <= s
    assert moved >= 0.999 * 2 * M / (lam * B)


def test_nispp_group_dro_solutions_respect_the_certified_sensitivity():
    rng = np.random.default_rng(6)
    op = _dro_problem(n=20, radius=3.0, dual_scale=0.7)
    k = int(np.argmin(op.priors))
    X2, y2, g2 = op.X.copy(), op.y.copy(), op.groups.copy()
    X2[3], y2[3], g2[3] = np.r_[-1.0, 0, 0], -1.0, k
    op2 = GroupDROLogistic(
        X2, y2, g2, op.priors, radius=3.0, feature_bound=1.0, dual_scale=0.7
    )
    idx = np.arange(20)
    lam, B = 2.0, 20.0
    nu = prox_accuracy_target(op.M, lam, B, 4.0)  # the paper's nu_priv
    s = prox_sensitivity(op.M, lam, B, nu)
    worst = 0.0
    for _ in range(20):
        center = rng.normal(size=op.dim) * 2
        u, _, _ = solve_prox_subproblem(
            op, idx, B, center, lam, op.domain, nu, lipschitz=op.L, operator_bound=op.M
        )
        u2, _, _ = solve_prox_subproblem(
            op2, idx, B, center, lam, op.domain, nu, lipschitz=op.L, operator_bound=op.M
        )
        worst = max(worst, np.linalg.norm(u - u2))
    assert worst <= s <= 4 * op.M / (lam * B)


def test_nispp_noise_uses_the_declared_sensitivity():
    op = _dro_problem()
    sched = BatchSchedule(op.y.size, 5, 10, "without_replacement")
    res = _nispp_on(
        op,
        sched,
        noise_multiplier=2.0,
        rng=np.random.default_rng(0),
        prox=3.0,
    )
    nu = res.info["nu_target"]
    assert res.sensitivity == pytest.approx(prox_sensitivity(op.M, 3.0, 10.0, nu))
    assert res.noise_std == pytest.approx(2.0 * res.sensitivity)
    assert res.info["nu_target"] <= res.info["nu_priv"]
    # Poisson: twice the effect of adding one record (dp-accounting's pair).
    sched = BatchSchedule(op.y.size, 5, 10, "poisson")
    res = _nispp_on(
        op,
        sched,
        noise_multiplier=2.0,
        rng=np.random.default_rng(0),
        prox=3.0,
    )
    assert res.sensitivity == pytest.approx(
        2 * prox_sensitivity(op.M / 2, 3.0, 10.0, nu)
    )
    assert res.sensitivity <= 4 * op.M / (3.0 * 10.0)


def test_solvers_draw_noise_through_the_audit_hook():
    from skdp.privacy._mechanisms import _scaled_noise

    op = _dro_problem()
    sched = BatchSchedule(op.y.size, 20, 10, "poisson")
    kw = dict(M=op.M, L=op.L, noise_multiplier=5.0, step_size=0.1)
    base = nseg(op, op.domain, sched, rng=np.random.default_rng(0), **kw).solution
    with _scaled_noise(0.0):
        quiet = nseg(op, op.domain, sched, rng=np.random.default_rng(0), **kw).solution
    free = nseg(
        op,
        op.domain,
        sched,
        rng=np.random.default_rng(0),
        **{**kw, "noise_multiplier": 0.0},
    ).solution
    assert not np.allclose(base, quiet)
    np.testing.assert_allclose(quiet, free)


@pytest.mark.parametrize("sampling", ["disjoint", "poisson"])
def test_nispp_releases_depend_only_on_the_batch_and_the_public_centre(
    monkeypatch, sampling
):
    # Each release u_{k+1} must be a function of the batch B_{k+1} and of the
    # released centre w_k only (Proposition 9, parallel composition). A warm
    # start from the previous, unreleased u_k would carry earlier batches into
    # it: re-solving every subproblem from scratch must reproduce the run.
    import skdp.solvers.saddle_point.nispp as mod

    op = _dro_problem(n=60)
    calls = []
    original = mod.solve_prox_subproblem

    def spy(operator, indices, normalizer, center, lam, domain, nu, **kw):
        out = original(operator, indices, normalizer, center, lam, domain, nu, **kw)
        calls.append((indices.copy(), center.copy(), lam, nu, kw, out[0]))
        return out

    monkeypatch.setattr(mod, "solve_prox_subproblem", spy)
    sched = BatchSchedule(60, 6, 10, sampling)
    _nispp_on(
        op,
        sched,
        noise_multiplier=1.0,
        rng=np.random.default_rng(0),
        prox=2.0,
    )
    assert len(calls) == 6
    for idx, center, lam, nu, kw, u in calls:
        # The margin and the iteration cap are public too: M |B| / B.
        assert kw["operator_bound"] == op.M * max(len(idx), 1) / 10.0
        fresh = original(op, idx, 10.0, center, lam, op.domain, nu, **kw)[0]
        np.testing.assert_array_equal(u, fresh)
