"""BilevelRidge and its ridge-specific inner solvers."""

import functools
import math

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from skdp import BilevelRidge, BudgetExceededError, PrivacyAccountant
from skdp.privacy import GaussianDpEvent, certify_epsilon
from skdp.solvers.bilevel.plan import gdp_budget
from skdp.solvers.bilevel.ridge.output import (
    output_sensitivities,
    ridge_ball_radius,
    shrink_noisy,
)
from skdp.solvers.bilevel.ridge.output import perturbed_ridge as _perturbed_ridge
from skdp.solvers.bilevel.ridge.signal import signal_test
from skdp.solvers.bilevel.ridge.stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
)
from skdp.solvers.bilevel.ridge.stats import (
    release_shared_gram as _release_shared_gram,
)
from skdp.solvers.bilevel.ridge.stats import (
    release_statistics as _release_statistics,
)
from skdp.solvers.bilevel.ridge.tuning import (
    MAX_GRAM_NOISE_RATIO,
    BilevelRidgeSettings,
    bilevel_ridge,
    final_penalty_factor,
    gram_noise_ratio,
    plan_bilevel_ridge,
    validation_objective,
)
from skdp.solvers.bilevel.ridge.validation import (
    ValidationNoise,
    ValidationObjective,
    validation_loss,
)
from skdp.utils import clip_rows

# These tests check the releases' noise, not the ledger: the sensitivities
# the privacy ledger records are given once here.
release_statistics = functools.partial(_release_statistics, sensitivities=(1.0, 1.0))
release_shared_gram = functools.partial(
    _release_shared_gram, sensitivities=(1.0, 1.0)
)
perturbed_ridge = functools.partial(_perturbed_ridge, sensitivity=1.0)

# The sufficient-statistics inner solver (the default is "gd").
SS = "sufficient_statistics"

SOLVERS = ["sufficient_statistics", "output_perturbation", "loc_gd"]
FAST = {"max_iter": 8, "inner_max_iter": 30}  # keeps loc_gd tests quick


def linear_data(n=2000, d=8, noise=3.0, seed=0, intercept=2.0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    coef = rng.normal(size=d) / math.sqrt(d)
    return X, X @ coef + intercept + noise * rng.normal(size=n), coef


def _fresh_ledger():
    return PrivacyAccountant(epsilon=np.inf, delta=0.5)


def validation_split(n, seed, fraction=0.5):
    """The estimator's public split (train, validation): the first draw of
    its generator when both bounds are given, for a fit that is the first on
    a fresh ledger (``accountant=_fresh_ledger()``; without an accountant the
    stream also mixes in the data and parameters, issue 32)."""
    perm = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
    perm = perm.permutation(n)
    n_val = int(round(fraction * n))
    return perm[n_val:], perm[:n_val]


# -- sufficient statistics ----------------------------------------------------


@pytest.mark.parametrize("c", [None, 0.5, 1.0, 2.0])
def test_statistics_sensitivity_coupled(c):
    """Neighbouring datasets: the released numbers move by at most the
    declared sensitivity, and an adversarial pair attains it."""
    rng = np.random.default_rng(1)
    n, d, A, B = 30, 4, 1.0, 1.0
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = rng.uniform(-B, B, size=n)
    iu = np.triu_indices(d + (c is not None))
    base = exact_statistics(X, y, c)
    worst_g = worst_m = 0.0
    for trial in range(200):
        X2, y2 = X.copy(), y.copy()
        v = rng.normal(size=d)
        X2[0] = A * v / np.linalg.norm(v)
        y2[0] = rng.choice([-B, B])
        if trial == 0:
            # The worst pair: x = A (cos p, sin p), x' = A (sin p, cos p) (so
            # x x^T - x' x'^T is diagonal) at the angle cos(x, x') = sin 2p =
            # -c^2 / (2 A^2), and opposite targets.
            t = 0.0 if c is None else max(-1.0, -(c * c) / (2 * A * A))
            p = 0.5 * math.asin(t)
            X[0] = 0.0
            X2[0] = 0.0
            X[0, :2] = A * np.array([math.cos(p), math.sin(p)])
            X2[0, :2] = A * np.array([math.sin(p), math.cos(p)])
            y[0], y2[0] = B, -B
            base = exact_statistics(X, y, c)
        moved = exact_statistics(X2, y2, c)
        dg = np.linalg.norm((moved.gram - base.gram)[iu])
        dm = np.linalg.norm(moved.moment - base.moment)
        assert dg <= gram_sensitivity(A, c) * (1 + 1e-12)
        assert dm <= moment_sensitivity(A, B, c) * (1 + 1e-12)
        # y^T y (the signal test's): sensitivity B**2.
        assert abs(moved.target_sq - base.target_sq) <= B * B * (1 + 1e-12)
        worst_g, worst_m = max(worst_g, dg), max(worst_m, dm)
    assert worst_g >= 0.999 * gram_sensitivity(A, c)
    assert worst_m >= 0.9 * moment_sensitivity(A, B, c)
    y2 = y.copy()
    y2[0] = 0.0 if abs(y[0]) == B else B
    moved = exact_statistics(X, y2, c)
    assert abs(moved.target_sq - base.target_sq) == pytest.approx(B * B)


def test_target_sq_is_released_only_with_noise():
    """The exact y^T y never leaves a release: without a noise scale the
    released value is None; with one, its noise has that scale and the
    Gram/moment noise stream is unchanged."""
    part = exact_statistics(np.zeros((3, 2)), np.ones(3), 1.0)
    for release in (release_statistics, release_shared_gram):
        out = release(
            [part, part], gram_std=1.0, moment_std=1.0, rng=np.random.default_rng(3)
        )
        assert all(r.target_sq is None for r in out)
    draws = []
    for seed in range(2000):
        (with_sq,) = release_statistics(
            [part],
            gram_std=1.0,
            moment_std=1.0,
            target_sq_std=2.0,
            rng=np.random.default_rng(seed),
        )
        draws.append(with_sq.target_sq - part.target_sq)
    (plain,) = release_statistics(
        [part], gram_std=1.0, moment_std=1.0, rng=np.random.default_rng(seed)
    )
    np.testing.assert_array_equal(plain.gram, with_sq.gram)
    np.testing.assert_array_equal(plain.moment, with_sq.moment)
    assert np.std(draws) == pytest.approx(2.0, rel=0.06)
    assert abs(np.mean(draws)) < 0.15


def _signal_test_pvalues(coef_scale, n=4000, d=5, reps=300, seed=0):
    """p-values of the plan's signal test on releases of one dataset (the
    privacy noise is the randomness; epsilon = 1)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d)) / (1.5 * math.sqrt(d))
    X = clip_rows(X, 1.0)
    y = np.clip(X @ (coef_scale * np.ones(d)) + 0.1 + 0.25 * rng.normal(size=n), -1, 1)
    half = n // 2
    s = BilevelRidgeSettings(alpha_max=10.0 * half)
    plan = plan_bilevel_ridge(s, half, n - half, d, gdp_budget(1.0, 1e-5))
    parts = [
        exact_statistics(X[:half], y[:half], 1.0),
        exact_statistics(X[half:], y[half:], 1.0),
    ]
    rho = plan.stds["correlation"]
    noise = dict(
        moment_var=2 * (1 + rho) * plan.stds["moment"] ** 2,
        gram_var=2 * (1 + rho) * plan.stds["gram"] ** 2,
        target_sq_var=2 * plan.stds["target_sq"] ** 2,
    )
    pvalues = []
    for r in range(reps):
        a, b = release_statistics(
            parts,
            gram_std=plan.stds["gram"],
            moment_std=plan.stds["moment"],
            correlation=rho,
            target_sq_std=plan.stds["target_sq"],
            rng=np.random.default_rng(r),
        )
        pvalues.append(signal_test(a + b, **noise).pvalue)
    return np.array(pvalues)


def test_signal_test_level_and_power():
    """No signal: p-values about uniform, on the conservative side (an upper
    confidence value of var(y)), so the test rejects at most about its
    level; a clear signal: it rejects at the default level almost always."""
    level = BilevelRidgeSettings().signal_test_level
    for seed in (0, 1):
        p = _signal_test_pvalues(0.0, seed=seed)
        assert np.mean(p < 0.05) <= 0.08
        assert 0.3 <= np.mean(p < 0.5) <= 0.6
    assert np.mean(_signal_test_pvalues(0.5) < level) >= 0.95


def test_signal_pvalue_attribute():
    """Fitted p-value: in [0, 1] with the default solver and noise; NaN
    without noise, without the test, or with another solver."""
    X, y, _ = linear_data(4000, 4, noise=1.0)
    kw = dict(feature_norm=6.0, target_bound=8.0, random_state=0)
    p = BilevelRidge(inner_solver=SS, epsilon=1.0, **kw).fit(X, y).signal_pvalue_
    assert 0.0 <= p < 0.001  # a clear signal
    assert math.isnan(
        BilevelRidge(inner_solver=SS, epsilon=np.inf, **kw).fit(X, y).signal_pvalue_
    )
    off = BilevelRidge(inner_solver=SS, epsilon=1.0, signal_test_level=None, **kw).fit(
        X, y
    )
    assert math.isnan(off.signal_pvalue_)
    other = BilevelRidge(
        epsilon=1.0, inner_solver="output_perturbation", max_iter=3, **kw
    ).fit(X, y)
    assert math.isnan(other.signal_pvalue_)


def _tuned(n, signal_margin, epsilon=10.0, feature_norm=6.0, seed=0):
    """Solver run on strong-signal data (d = 5) with a given signal margin:
    the result, the plan and the released parts' Gram noise ratio."""
    X, y, _ = linear_data(n, 5, noise=0.5, seed=seed)
    Xn = clip_rows(X / feature_norm, 1.0)
    yn = np.clip(y / 8.0, -1.0, 1.0)
    half = n // 2
    s = BilevelRidgeSettings(alpha_max=10.0 * half, signal_margin=signal_margin)
    plan = plan_bilevel_ridge(s, half, n - half, 5, gdp_budget(epsilon, 1e-5))
    tr, va = np.arange(half), np.arange(half, n)
    parts = release_statistics(
        [exact_statistics(Xn[tr], yn[tr], 1.0), exact_statistics(Xn[va], yn[va], 1.0)],
        gram_std=plan.stds["gram"],
        moment_std=plan.stds["moment"],
        correlation=plan.stds["correlation"],
        rng=np.random.default_rng(seed),  # the solver's first draws
    )
    res = bilevel_ridge(Xn, yn, tr, va, plan, np.random.default_rng(seed))
    return res, plan, gram_noise_ratio(parts, plan)


def test_gram_noise_ratio_formula_and_scaling():
    """2 sqrt(p) s_G over the mean eigenvalue of a part's centred scatter;
    it falls like 1 / n."""
    X, y, _ = linear_data(1000, 4, seed=1)
    part = exact_statistics(clip_rows(X / 5.0, 1.0), np.clip(y / 8.0, -1, 1), 1.0)
    plan = plan_bilevel_ridge(BilevelRidgeSettings(), 1000, 1000, 4, 1.0)
    mean_eigenvalue = np.trace(part.centered().scatter) / 4
    expected = 2.0 * math.sqrt(5) * plan.stds["gram"] / mean_eigenvalue
    assert gram_noise_ratio([part, part], plan) == pytest.approx(expected)
    ratios = [_tuned(n, 0.0)[2] for n in (400, 4000)]
    assert ratios[0] / ratios[1] == pytest.approx(10.0, rel=0.2)


def test_margin_stays_where_gram_noise_dominates():
    """Strong signal in both cases; at n = 400 the Gram noise is larger than
    the Gram matrix allows, so the margin stays (the signal margin changes
    nothing); at n = 4000 it is switched off (the signal margin matters)."""
    for n, dominated in ((400, True), (4000, False)):
        zero, plan, ratio = _tuned(n, 0.0)
        full, _, _ = _tuned(n, plan.settings.validation_margin)
        assert zero.signal_pvalue < plan.settings.signal_test_level
        assert (ratio > MAX_GRAM_NOISE_RATIO) is dominated
        assert (zero.tuned_alpha == full.tuned_alpha) is dominated


def test_signal_test_needs_the_released_target_sq():
    part = exact_statistics(np.eye(3), np.ones(3), 1.0)
    (released,) = release_statistics(
        [part], gram_std=1.0, moment_std=1.0, rng=np.random.default_rng(0)
    )
    with pytest.raises(ValueError, match="y\\^T y"):
        signal_test(released, moment_var=1.0, gram_var=1.0, target_sq_var=1.0)


def test_correlated_release_marginals_and_accounting():
    part = exact_statistics(np.zeros((3, 2)), np.zeros(3), 1.0)
    rng = np.random.default_rng(2)
    draws = np.array(
        [
            [
                r.moment[0]
                for r in release_statistics(
                    [part, part],
                    gram_std=0.0,
                    moment_std=2.0,
                    rng=rng,
                    correlation=-0.5,
                )
            ]
            for _ in range(4000)
        ]
    )
    assert np.std(draws, axis=0) == pytest.approx([2.0, 2.0], rel=0.06)
    assert np.corrcoef(draws.T)[0, 1] == pytest.approx(-0.5, abs=0.05)
    # The plan charges each part sigma * sqrt(1 - rho^2), y^T y (for the
    # signal test) signal_test_share of mu^2, Gram and moment splitting the
    # rest by gram_share: spent == requested.
    for rho, share in ((0.0, 0.5), (-0.5, 0.35), (-0.9, 0.2)):
        s = BilevelRidgeSettings(correlation=rho, gram_share=share)
        plan = plan_bilevel_ridge(s, 600, 400, 5, 0.3)
        t = s.signal_test_share
        assert plan.stds["target_sq"] == pytest.approx(1 / 0.3 / math.sqrt(t))
        scale = 1 / 0.3 / math.sqrt(1 - rho**2) / math.sqrt(1 - t)
        assert plan.stds["gram"] == pytest.approx(
            gram_sensitivity(1.0, 1.0) * scale / math.sqrt(share)
        )
        assert plan.stds["moment"] == pytest.approx(
            moment_sensitivity(1.0, 1.0, 1.0) * scale / math.sqrt(1 - share)
        )
        assert certify_epsilon(plan.event, 1e-6) == pytest.approx(
            certify_epsilon(GaussianDpEvent(1 / 0.3), 1e-6), rel=1e-9
        )
        # Without the test, nothing is spent on y^T y.
        s0 = BilevelRidgeSettings(correlation=rho, signal_test_level=None)
        assert "target_sq" not in plan_bilevel_ridge(s0, 600, 400, 5, 0.3).stds
        assert certify_epsilon(plan.event, 1e-6) == pytest.approx(
            certify_epsilon(
                plan_bilevel_ridge(
                    BilevelRidgeSettings(correlation=0.0), 600, 400, 5, 0.3
                ).event,
                1e-6,
            ),
            rel=1e-9,
        )


def test_shared_gram_release_coupled_run():
    """Neighbours differing in a row of part A, same noise stream: the shared
    Gram matrix moves by at most its sensitivity, A's moment vector by at
    most its own, B's not at all; the parts' Gram matrices are the shared one
    split by rows, and pool back to it."""
    rng = np.random.default_rng(5)
    A, B, c = 1.0, 1.0, 1.0
    X = clip_rows(rng.normal(size=(30, 4)), A)
    y = np.clip(rng.normal(size=30), -B, B)
    X2, y2 = X.copy(), y.copy()
    X2[3] = -X[3] / np.linalg.norm(X[3]) * A
    y2[3] = -np.sign(y[3]) * B
    iu = np.triu_indices(5)
    out = []
    for Xs, ys in ((X, y), (X2, y2)):
        parts = [exact_statistics(Xs[:12], ys[:12], c)]
        parts.append(exact_statistics(Xs[12:], ys[12:], c))
        out.append(
            release_shared_gram(
                parts,
                gram_std=0.7,
                moment_std=0.3,
                correlation=-0.6,
                rng=np.random.default_rng(11),
            )
        )
    (a, b), (a2, b2) = out
    shared, shared2 = (a + b).gram, (a2 + b2).gram
    np.testing.assert_allclose(a.gram * 18 / 12, b.gram)
    dg = np.linalg.norm((shared2 - shared)[iu])
    assert 0 < dg <= gram_sensitivity(A, c) * (1 + 1e-12)
    assert 0 < np.linalg.norm(a2.moment - a.moment) <= moment_sensitivity(A, B, c)
    np.testing.assert_array_equal(b2.moment, b.moment)
    assert shared[-1, -1] == pytest.approx(30.0)  # the public corner is exact


def test_shared_gram_release_noise_and_no_noise_limit():
    X = np.arange(12.0).reshape(6, 2)
    parts = [
        exact_statistics(X[:2], np.ones(2), 1.0),
        exact_statistics(X[2:], np.ones(4), 1.0),
    ]
    rng = np.random.default_rng(3)
    draws = [
        release_shared_gram(
            parts, gram_std=2.0, moment_std=0.5, correlation=-0.5, rng=rng
        )
        for _ in range(3000)
    ]
    shared = np.array([(a + b).gram[0, 1] for a, b in draws])
    exact = (parts[0] + parts[1]).gram[0, 1]
    assert np.std(shared) == pytest.approx(2.0, rel=0.06)
    assert np.mean(shared) == pytest.approx(exact, abs=0.2)
    m = np.array([[a.moment[0], b.moment[0]] for a, b in draws]) - [
        parts[0].moment[0],
        parts[1].moment[0],
    ]
    assert np.std(m, axis=0) == pytest.approx([0.5, 0.5], rel=0.06)
    assert np.corrcoef(m.T)[0, 1] == pytest.approx(-0.5, abs=0.05)
    # No noise (no privacy): every part keeps its own exact Gram matrix.
    a, b = release_shared_gram(
        parts, gram_std=0.0, moment_std=0.0, rng=np.random.default_rng(0)
    )
    np.testing.assert_array_equal(a.gram, parts[0].gram)
    np.testing.assert_array_equal(b.gram, parts[1].gram)


def test_shared_gram_plan_composes_to_the_request():
    """Ablation with one Gram release of all rows composed with one moment
    release per part (parallel): mu_G^2 + mu_m^2 = mu^2; the default (a Gram
    matrix per part) spends the same."""
    from dataclasses import replace

    for rho in (0.0, -0.6):
        s = BilevelRidgeSettings(correlation=rho, shared_gram=True)
        plan = plan_bilevel_ridge(s, 600, 400, 5, 0.8)
        mu_g = gram_sensitivity(1.0, 1.0) / plan.stds["gram"]
        mu_m = (
            moment_sensitivity(1.0, 1.0, 1.0)
            / plan.stds["moment"]
            / math.sqrt(1 - rho**2)
        )
        mu_t = 1.0 / plan.stds["target_sq"]  # y^T y per part, sensitivity 1
        assert math.hypot(mu_g, mu_m, mu_t) == pytest.approx(0.8)
        eps = certify_epsilon(plan.event, 1e-6)
        assert eps == pytest.approx(
            certify_epsilon(GaussianDpEvent(1 / 0.8), 1e-6), rel=1e-9
        )
        own = plan_bilevel_ridge(replace(s, shared_gram=False), 600, 400, 5, 0.8)
        assert own.stds["gram"] >= plan.stds["gram"]
        assert certify_epsilon(own.event, 1e-6) == pytest.approx(eps, rel=1e-9)


def test_statistics_solve_is_sklearn_ridge():
    X, y, _ = linear_data(300, 4)
    stats = exact_statistics(X, y, 1.0)
    from skdp.solvers.bilevel.ridge.stats import RawStatistics

    assert isinstance(stats, RawStatistics)
    coef, intercept = stats.centered().solve(7.0)
    ref = Ridge(alpha=7.0).fit(X, y)
    np.testing.assert_allclose(coef, ref.coef_, rtol=1e-10)
    assert intercept == pytest.approx(ref.intercept_, rel=1e-10)


def test_hypergradient_estimate_matches_closed_form():
    """lambda (R(theta^lam) - R(theta)) approximates F'(omega) in sign and size."""
    X, y, _ = linear_data(600, 6, noise=4.0, seed=3, intercept=0.0)
    tr, va = np.arange(400), np.arange(400, 600)
    train = exact_statistics(X[tr], y[tr]).centered().scaled(1 / 400)
    val = exact_statistics(X[va], y[va]).centered().scaled(1 / 200)
    signs = set()
    for omega in (1e-3, 0.05, 0.3, 3.0):
        w, _ = train.solve(omega)
        h = train.scatter + omega * np.eye(6)
        grad_f = val.scatter @ w - val.cross
        exact = -grad_f @ np.linalg.solve(h, w)  # implicit differentiation
        for lam in (1e3, 1e5):
            w_pen, _ = (train + val.scaled(1 / lam)).solve(omega)
            estimate = lam * (0.5 * w_pen @ w_pen - 0.5 * w @ w)
            assert np.sign(estimate) == np.sign(exact)
            assert estimate == pytest.approx(exact, rel=30 / lam)
        signs.add(np.sign(exact))
    assert signs == {-1.0, 1.0}  # both sides of the optimum were checked


# -- output perturbation --------------------------------------------------------


def test_output_perturbation_sensitivity_coupled():
    rng = np.random.default_rng(4)
    n, d, omega = 40, 3, 2.0
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = rng.uniform(-1, 1, size=n)

    def solve(Xp, yp):
        return np.linalg.solve(Xp.T @ Xp / n + omega * np.eye(d), Xp.T @ yp / n)

    bound = output_sensitivities({"all": (1 / n, n)}, omega, 1.0, 1.0)["all"]
    worst = 0.0
    for _ in range(200):
        X2, y2 = X.copy(), y.copy()
        v = rng.normal(size=d)
        X2[0], y2[0] = v / np.linalg.norm(v), rng.choice([-1.0, 1.0])
        X[0], y[0] = -X2[0], y2[0]
        worst = max(worst, np.linalg.norm(solve(X, y) - solve(X2, y2)))
    assert worst <= bound
    assert worst >= 0.2 * bound


def test_output_perturbation_projects_on_the_public_ball():
    """The exact minimizer is in the public ball, so projecting the noisy
    release on it never moves it away (post-processing that bounds the
    damage where the noise outgrows the ball)."""
    rng = np.random.default_rng(6)
    n, d, omega = 50, 4, 1e-3
    X = rng.normal(size=(n, d))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = rng.uniform(-1, 1, size=n)
    scatter, cross = X.T @ X / n, X.T @ y / n
    exact = np.linalg.solve(scatter + omega * np.eye(d), cross)
    radius = ridge_ball_radius(1.0, omega, 1.0)
    assert np.linalg.norm(exact) <= radius
    for seed in range(20):
        free = perturbed_ridge(scatter, cross, omega, 1e3, np.random.default_rng(seed))
        held = perturbed_ridge(
            scatter, cross, omega, 1e3, np.random.default_rng(seed), radius=radius
        )
        assert np.linalg.norm(held) <= radius * (1 + 1e-12)
        assert np.linalg.norm(held - exact) <= np.linalg.norm(free - exact)
    assert np.linalg.norm(free - exact) > 10 * np.linalg.norm(held - exact)


def test_james_stein_shrinkage_lowers_the_error():
    """Public-noise post-processing: lower mean squared error than the raw
    release whatever the signal, and (nearly) zero for pure noise."""
    rng = np.random.default_rng(2)
    d, std = 10, 1.0
    for signal in (0.0, 1.0, 5.0):
        truth = np.full(d, signal / math.sqrt(d))
        raw = truth + std * rng.normal(size=(4000, d))
        shrunk = np.array([shrink_noisy(w, std) for w in raw])
        err_raw = np.mean(np.sum((raw - truth) ** 2, axis=1))
        err_shrunk = np.mean(np.sum((shrunk - truth) ** 2, axis=1))
        assert err_shrunk < err_raw
        if signal == 0.0:
            assert err_shrunk < 0.35 * err_raw
    np.testing.assert_array_equal(shrink_noisy(np.ones(2), 5.0), np.ones(2))


# -- the estimator ---------------------------------------------------------------


def _validation_curve(X, y, tr, va, grid, two_fold):
    """Non-private validation loss of sklearn Ridge on the estimator's split:
    two-fold (each part scored by the model of the other, weighted by part
    size) or the single split."""
    out = []
    for a in grid:
        err = np.sum((Ridge(alpha=a).fit(X[tr], y[tr]).predict(X[va]) - y[va]) ** 2)
        if two_fold:
            pred = Ridge(alpha=a).fit(X[va], y[va]).predict(X[tr])
            err += np.sum((pred - y[tr]) ** 2)
            out.append(err / len(y))
        else:
            out.append(err / len(va))
    return np.array(out)


@pytest.mark.parametrize("two_fold", [True, False])
def test_non_private_alpha_is_the_validation_optimum(two_fold):
    """epsilon = inf: alpha_ minimizes the intended objective (two-fold or
    single-split validation loss on the estimator's own split, same alpha
    units, same intercept treatment) and the model is sklearn's Ridge at
    alpha_ on all rows."""
    X, y, _ = linear_data(3000, 10, noise=6.0)
    fraction = 0.5 if two_fold else 0.4
    # a split whose single-split validation curve has an interior optimum
    # (about half of the seeds put it at the grid's lower edge)
    seed = 3 if two_fold else 5
    model = BilevelRidge(
        inner_solver=SS,
        epsilon=np.inf,
        feature_norm=100.0,
        target_bound=1e3,
        cross_validate=two_fold,
        validation_fraction=fraction,
        random_state=seed,
        accountant=_fresh_ledger(),
    ).fit(X, y)
    ref = Ridge(alpha=model.alpha_).fit(X, y)
    np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-8, atol=1e-10)
    assert model.intercept_ == pytest.approx(ref.intercept_, rel=1e-8)
    tr, va = validation_split(3000, seed, fraction)
    grid = np.logspace(-1, 5, 241)
    losses = _validation_curve(X, y, tr, va, grid, two_fold)
    best = grid[int(np.argmin(losses))]
    assert 1e-1 < best < 1e5  # an interior optimum
    assert best / 1.1 < model.alpha_ < best * 1.1
    assert model.privacy_spent_ == (np.inf, model.delta_)


def test_correlation_bias_and_noise_sd_are_exact():
    """Monte Carlo over the moment noise (Gram exact): the released two-fold
    objective minus the exact validation loss of the same (noisy) models has
    mean -rho s^2 tr(K) and, without signal, standard deviation
    s^2 sqrt((1 + rho^2) tr(K^2)) -- the terms the outer loop corrects by."""
    rng = np.random.default_rng(8)
    n, d, rho, s = 400, 3, -0.5, 8.0
    X = rng.normal(size=(n, d)) / 2.0
    for signal in (1.0, 0.0):
        y = signal * (X @ np.ones(d) + 0.5) + 0.3 * rng.normal(size=n)
        parts = [
            exact_statistics(X[:200], y[:200], 1.0),
            exact_statistics(X[200:], y[200:], 1.0),
        ]
        exact = [p.centered() for p in parts]
        pairs = [(0, 1, 0.5), (1, 0, 0.5)]
        obj = ValidationObjective(exact, pairs, ValidationNoise(s, rho))
        for alpha in (0.5, 5.0, 50.0):
            errors = []
            for _ in range(3000):
                noisy = [
                    r.centered()
                    for r in release_statistics(
                        parts, gram_std=0.0, moment_std=s, correlation=rho, rng=rng
                    )
                ]
                released = ValidationObjective(noisy, pairs, ValidationNoise(s, rho))
                models = released.models(alpha)
                truth = sum(
                    w * validation_loss(exact[o], *m)
                    for (_, o, w), m in zip(pairs, models)
                )
                errors.append(released.value(alpha) - truth)
            bias, sd = obj.noise_bias_and_sd(alpha)
            assert bias > 0  # rho < 0: the released loss is biased upward
            # Plus an alpha-free term: the squared noise of the validation
            # part's own intercept moment, E[(e / n_O)^2] / 2 per pair.
            const = sum(0.5 * w * s * s / 200**2 for _, _, w in pairs)
            se = np.std(errors) / math.sqrt(len(errors))
            assert se < 0.3 * bias  # the test can tell the bias from zero
            assert np.mean(errors) == pytest.approx(bias + const, abs=4 * se)
            if signal == 0.0:
                assert np.std(errors) == pytest.approx(sd, rel=0.08)


def test_two_fold_hypergradient_matches_finite_difference():
    X, y, _ = linear_data(600, 5, noise=2.0, seed=4)
    parts = [
        exact_statistics(X[:300], y[:300], 1.0).centered(),
        exact_statistics(X[300:], y[300:], 1.0).centered(),
    ]
    obj = ValidationObjective(parts, [(0, 1, 0.5), (1, 0, 0.5)], ValidationNoise())
    for alpha in (1.0, 30.0, 1000.0):
        h = 1e-4
        fd = (obj.value(alpha * math.exp(h)) - obj.value(alpha * math.exp(-h))) / (
            2 * h
        )
        est = obj.hypergradient(alpha, lambda omega: 1e6 * (1 + 1 / omega))
        assert est == pytest.approx(fd, rel=1e-3, abs=1e-9)


def test_outer_loop_minimizes_the_corrected_objective():
    """epsilon = 1: the privately driven loop lands on the minimizer of the
    released objective plus its public correction; without the bias
    correction the released loss prefers more penalty."""
    X, y, _ = linear_data(20000, 6, noise=6.0, seed=9)
    Xn = X / np.maximum(1.0, np.linalg.norm(X, axis=1) / 6.0)[:, None] / 6.0
    yn = np.clip(y, -24.0, 24.0) / 24.0
    n_tr = n_va = 10000
    settings = BilevelRidgeSettings(alpha_max=10.0 * n_tr)
    plan = plan_bilevel_ridge(settings, n_tr, n_va, 6, gdp_budget(1.0, 1e-5))
    tr, va = np.arange(n_tr), np.arange(n_tr, 20000)
    grid = np.logspace(-3, math.log10(settings.alpha_max), 300)
    shifts = []
    for seed in range(3):
        res = bilevel_ridge(Xn, yn, tr, va, plan, np.random.default_rng(seed))
        released = release_statistics(
            [
                exact_statistics(Xn[tr], yn[tr], 1.0),
                exact_statistics(Xn[va], yn[va], 1.0),
            ],
            gram_std=plan.stds["gram"],
            moment_std=plan.stds["moment"],
            correlation=plan.stds["correlation"],
            rng=np.random.default_rng(seed),  # the solver's first draws
        )
        obj = validation_objective(*released, plan)
        # The signal test (strong signal here) switches the margin off.
        assert res.signal_pvalue < settings.signal_test_level
        obj.margin = settings.signal_margin
        corrected = [obj.corrected_value(a) for a in grid]
        best = int(np.argmin(corrected))
        spread = max(corrected) - min(corrected)
        assert obj.corrected_value(res.tuned_alpha) <= min(corrected) + 1e-3 * spread
        assert res.tuned_alpha == pytest.approx(grid[best], rel=0.1)
        biased = [obj.value(a) for a in grid]
        unbiased = [v - obj.noise_bias_and_sd(a)[0] for v, a in zip(biased, grid)]
        shifts.append(grid[int(np.argmin(biased))] / grid[int(np.argmin(unbiased))])
    assert min(shifts) >= 1.0 and max(shifts) > 10.0


@pytest.mark.parametrize("start", [20.0, 1e6])
def test_corrected_sign_moves_towards_the_optimum(start):
    """The paper's printed closed form ascends; the projected descent step
    reaches the same optimum from either side."""
    X, y, _ = linear_data(3000, 10, noise=6.0)
    model = BilevelRidge(
        inner_solver=SS,
        epsilon=np.inf,
        feature_norm=100.0,
        target_bound=1e3,
        alpha_init=start,
        random_state=3,
        # one split for both (parameters enter a ledger-less stream)
        accountant=PrivacyAccountant(epsilon=np.inf, delta=0.5),
    ).fit(X, y)
    ref = BilevelRidge(
        inner_solver=SS,
        epsilon=np.inf,
        feature_norm=100.0,
        target_bound=1e3,
        random_state=3,
        # one split for both (parameters enter a ledger-less stream)
        accountant=PrivacyAccountant(epsilon=np.inf, delta=0.5),
    ).fit(X, y)
    assert model.alpha_ == pytest.approx(ref.alpha_, rel=0.1)
    assert model.alpha_path_[0] == pytest.approx(start)


def test_non_private_other_solvers_fit_the_training_part():
    X, y, _ = linear_data(1000, 5, noise=2.0)
    tr, _ = validation_split(1000, 0)
    out = BilevelRidge(
        epsilon=np.inf,
        feature_norm=100.0,
        target_bound=1e3,
        inner_solver="output_perturbation",
        random_state=0,
        accountant=_fresh_ledger(),
    ).fit(X, y)
    ref = Ridge(alpha=out.alpha_).fit(X[tr], y[tr])
    np.testing.assert_allclose(out.coef_, ref.coef_, rtol=1e-8)
    assert out.intercept_ == pytest.approx(ref.intercept_, rel=1e-8)
    # DP-Loc-GD (paper's steps 1/(mu (t+1)), averaged) on a well-conditioned
    # problem: unit rows, penalty fixed by a one-point range.
    Xs = X[:, :3] / np.linalg.norm(X[:, :3], axis=1)[:, None]
    alpha = 0.05 * len(tr)
    loc = BilevelRidge(
        epsilon=np.inf,
        feature_norm=1.0,
        target_bound=40.0,
        inner_solver="loc_gd",
        alpha_min=alpha,
        alpha_max=alpha,
        max_iter=2,
        inner_max_iter=300,
        random_state=0,
        accountant=_fresh_ledger(),
    ).fit(Xs, y)
    ref = Ridge(alpha=alpha).fit(Xs[tr], y[tr])
    np.testing.assert_allclose(loc.coef_, ref.coef_, rtol=0.01)
    assert loc.intercept_ == pytest.approx(ref.intercept_, rel=0.01)


@pytest.mark.parametrize("solver", SOLVERS)
@pytest.mark.parametrize("bounds", [True, False])
def test_privacy_spent_is_the_request(solver, bounds):
    X, y, _ = linear_data(1500, 4)
    kwargs = {"feature_norm": 5.0, "target_bound": 10.0} if bounds else {}
    model = BilevelRidge(
        epsilon=0.7, inner_solver=solver, random_state=0, **kwargs, **FAST
    ).fit(X, y)
    eps, delta = model.privacy_spent_
    assert 0.99 * 0.7 <= eps <= 0.7
    assert delta == model.delta_ == pytest.approx(1500**-1.1)
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize(
    "options",
    [
        {"outer_noise": True},
        {"refit_share": 0.3},
        {
            "outer_noise": True,
            "refit_share": 0.2,
            "inner_solver": "output_perturbation",
        },
        {"outer_noise": True, "refit_share": 0.2, "inner_solver": "loc_gd"},
        {"noise_correlation": 0.0, "fit_intercept": False},
    ],
)
def test_options_spend_the_request(options):
    X, y, _ = linear_data(1500, 4)
    model = BilevelRidge(
        epsilon=2.0,
        feature_norm=5.0,
        target_bound=10.0,
        random_state=0,
        **{**FAST, **{"inner_solver": SS, **options}},
    ).fit(X, y)
    assert 0.99 * 2.0 <= model.privacy_spent_[0] <= 2.0
    assert np.all(np.isfinite(model.predict(X)))
    if not options.get("fit_intercept", True):
        assert model.intercept_ == 0.0


def test_accuracy_improves_with_n():
    errors = []
    for n in (2000, 50000):
        X, y, coef = linear_data(n, 5, noise=1.0, seed=5)
        model = BilevelRidge(
            inner_solver=SS,
            epsilon=1.0,
            feature_norm=6.0,
            target_bound=8.0,
            random_state=1,
        ).fit(X, y)
        errors.append(np.linalg.norm(model.coef_ - coef))
    assert errors[1] < 0.5 * errors[0]
    assert errors[1] < 0.1


def test_shared_accountant_and_clone():
    from sklearn.model_selection import cross_val_score

    X, y, _ = linear_data(1000, 3)
    acc = PrivacyAccountant(epsilon=2.0, delta=1e-4)
    est = BilevelRidge(
        inner_solver=SS,
        epsilon=1.0,
        delta=1e-5,
        feature_norm=5.0,
        target_bound=10.0,
        accountant=acc,
        random_state=0,
    )
    cross_val_score(est, X, y, cv=2, error_score="raise")
    assert len(acc.ledger) == 2
    with pytest.raises(BudgetExceededError):
        cross_val_score(est, X, y, cv=5, error_score="raise")
    # Folds kept spending from the same ledger until it was full; the fit
    # that would overspend was refused and not recorded.
    assert 2 < len(acc.ledger) < 7
    assert acc.spent_epsilon <= 2.0


# -- bad input --------------------------------------------------------------------


def _fresh():
    acc = PrivacyAccountant(epsilon=10.0, delta=1e-3)
    est = BilevelRidge(
        inner_solver=SS,
        feature_norm=1.0,
        target_bound=1.0,
        accountant=acc,
        random_state=0,
    )
    return est, acc


@pytest.mark.parametrize("bad", [np.nan, np.inf])
def test_non_finite_input_fails_before_any_spending(bad):
    est, acc = _fresh()
    X, y, _ = linear_data(50, 3)
    X[3, 1] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.fit(X, y)
    X[3, 1] = 0.0
    y[0] = bad
    with pytest.raises(ValueError, match="NaN|infinity"):
        est.fit(X, y)
    assert acc.ledger == []


def test_huge_values_are_clipped():
    X, y, _ = linear_data(500, 3)
    X[0] = 1e300
    y[1] = -1e300
    model = BilevelRidge(
        inner_solver=SS, feature_norm=5.0, target_bound=10.0, random_state=0
    ).fit(X, y)
    assert np.all(np.isfinite(model.coef_)) and np.isfinite(model.intercept_)
    assert np.all(np.abs(model.predict(X[1:])) < 1e3)
    # With private bounds the extreme values are clipped as well.
    model = BilevelRidge(inner_solver=SS, random_state=0).fit(X, y)
    assert np.isfinite(model.feature_norm_) and model.feature_norm_ < 1e6


def test_malformed_inputs_fail_clearly():
    est, acc = _fresh()
    X, y, _ = linear_data(40, 3)
    with pytest.raises(ValueError):
        est.fit(np.array([["a", "b"], ["c", "d"]]), [1.0, 2.0])
    with pytest.raises(ValueError):
        est.fit(np.empty((0, 3)), np.empty(0))
    with pytest.raises(ValueError, match="at least 2 samples"):
        est.fit(X[:1], y[:1])
    with pytest.raises(TypeError, match="sample_weight"):
        est.fit(X, y, sample_weight=np.ones(40))
    import scipy.sparse as sp

    with pytest.raises(TypeError, match="[Ss]parse"):  # sparse: gd and SS only
        BilevelRidge(inner_solver="loc_gd", accountant=acc).fit(sp.csr_matrix(X), y)
    with pytest.raises(ValueError, match="alpha_min"):
        BilevelRidge(
            inner_solver=SS, alpha_min=10.0, alpha_max=1.0, accountant=acc
        ).fit(X, y)
    with pytest.raises(ValueError):
        BilevelRidge(inner_solver=SS, validation_fraction=1.5).fit(X, y)
    with pytest.raises(ValueError):
        BilevelRidge(inner_solver="newton").fit(X, y)
    assert acc.ledger == []
    est.fit(X, y)
    with pytest.raises(ValueError, match="features"):
        est.predict(X[:, :2])


def test_friendly_inputs_work():
    pd = pytest.importorskip("pandas")
    X, y, _ = linear_data(200, 3)
    X[:, 1] = 4.0  # a constant feature
    frame = pd.DataFrame(X, columns=["a", "b", "c"])
    model = BilevelRidge(
        inner_solver=SS, feature_norm=8.0, target_bound=10.0, random_state=0
    )
    model.fit(frame, pd.Series(y))
    assert list(model.feature_names_in_) == ["a", "b", "c"]
    pred32 = model.fit(X.astype(np.float32), y).predict(X.astype(np.float32))
    assert pred32.dtype == np.float64 and np.all(np.isfinite(pred32))
    model.fit(X.tolist(), y.tolist())
    # two rows: one training, one validation row (an explicit delta: the
    # default n ** -1.1 = 0.47 is refused, issue 15)
    model.set_params(delta=1e-6).fit(X[:2], y[:2])
    assert np.all(np.isfinite(model.coef_))


@pytest.mark.parametrize("solver", SOLVERS)
def test_plan_does_not_depend_on_the_penalty_range(solver):
    """The plan is charged before the (possibly private) feature norm that
    rescales the penalty range is known."""
    events = [
        plan_bilevel_ridge(
            BilevelRidgeSettings(
                inner_solver=solver, alpha_min=lo, alpha_max=hi, outer_noise=True
            ),
            300,
            200,
            4,
            0.5,
        ).event
        for lo, hi in ((1e-3, 1e3), (1.0, 1e6), (5.0, 5.0))
    ]
    assert events[0] == events[1] == events[2]


def test_one_given_end_of_the_range_with_private_bounds():
    X, y, _ = linear_data(500, 3)
    model = BilevelRidge(inner_solver=SS, alpha_min=1e9, random_state=0).fit(X, y)
    assert model.alpha_ == pytest.approx(1e9)
    model = BilevelRidge(inner_solver=SS, alpha_max=1e-9, random_state=0).fit(X, y)
    assert model.alpha_ == pytest.approx(1e-9)


def test_centering_release_sensitivity_coupled():
    """Private training means of the iterative solvers: (sum x, sum y) of
    normalized rows moves by at most 2 sqrt(2), attained by opposite records."""
    from skdp.privacy import parallel_scope
    from skdp.solvers.bilevel.ridge.tuning import _centering

    rng = np.random.default_rng(8)
    X = rng.normal(size=(20, 3))
    X /= np.maximum(1.0, np.linalg.norm(X, axis=1))[:, None]
    y = rng.uniform(-1, 1, size=20)
    X2, y2 = X.copy(), y.copy()
    X[0], y[0] = np.array([1.0, 0.0, 0.0]), 1.0
    X2[0], y2[0] = -X[0], -1.0
    s = BilevelRidgeSettings(inner_solver="output_perturbation")
    plan = plan_bilevel_ridge(s, 20, 10, 3, math.inf)  # no noise: pre-noise sums
    (m1, b1), (m2, b2) = (
        _centering(Xp, yp, plan, np.random.default_rng(0), parallel_scope(2))
        for Xp, yp in ((X, y), (X2, y2))
    )
    shift = 20 * math.hypot(np.linalg.norm(m1 - m2), b1 - b2)
    assert shift == pytest.approx(2 * math.sqrt(2))
    noisy = plan_bilevel_ridge(s, 20, 10, 3, 1.0)
    sens = 2 * math.sqrt(2)
    assert noisy.stds["centering"] == pytest.approx(sens / math.sqrt(0.05))


def test_small_n_private_bounds_get_enough_budget():
    """At small n the bounds' budget is raised to n * epsilon_bound = 64 (at
    most half of epsilon): a public rule of n, epsilon and delta."""
    from skdp.privacy import gdp_mu

    def share_epsilon(n, k=2):
        # estimation_share=0.1 of mu**2, a pure step at epsilon = mu sqrt(share)
        return gdp_mu(1.0, n**-1.1) * math.sqrt(0.1 / k)

    model = BilevelRidge(inner_solver=SS, epsilon=1.0)
    assert model._bound_epsilons(1000) == pytest.approx(
        (max(64 / 1000, share_epsilon(1000)),) * 2
    )
    assert 1000 * model._bound_epsilons(1000)[0] >= 64
    assert model._bound_epsilons(250) == pytest.approx((0.25, 0.25))  # half
    assert model._bound_epsilons(10**5) == pytest.approx((share_epsilon(10**5),) * 2)
    assert share_epsilon(10**5) > 64 / 10**5
    assert BilevelRidge(inner_solver=SS, epsilon=0.2)._bound_epsilons(
        250
    ) == pytest.approx((0.05, 0.05))
    assert BilevelRidge(inner_solver=SS, epsilon=1.0, target_bound=1.0)._bound_epsilons(
        500
    ) == (
        pytest.approx(64 / 500),
        0.0,
    )
    X, y, _ = linear_data(250, 4)
    fitted = BilevelRidge(inner_solver=SS, epsilon=1.0, random_state=0).fit(X, y)
    assert 0.99 <= fitted.privacy_spent_[0] <= 1.0


def test_final_penalty_factor():
    """Privacy part of the best penalty: noise variance over rows, final
    statistics against a part's."""
    from dataclasses import replace

    s = BilevelRidgeSettings(alpha_max=1e4)
    plan = plan_bilevel_ridge(s, 500, 500, 3, 1.0)
    v = plan.stds["moment"] ** 2
    pooled = 2.0 * (1.0 + s.correlation) * v
    assert final_penalty_factor(plan, pooled) == pytest.approx(1.0 + s.correlation)
    single = replace(s, cross_validate=False, correlation=0.0)
    plan = plan_bilevel_ridge(single, 600, 400, 3, 1.0)
    v = plan.stds["moment"] ** 2
    assert final_penalty_factor(plan, 2.0 * v) == pytest.approx(1.2)
    plan = plan_bilevel_ridge(s, 500, 500, 3, math.inf)
    assert final_penalty_factor(plan, 0.0) == 1.0


def test_final_penalty_is_the_tuned_one_rescaled():
    X, y, _ = linear_data(4000, 4, seed=3)
    model = BilevelRidge(
        inner_solver=SS, feature_norm=6.0, target_bound=20.0, random_state=1
    )
    model.fit(X, y)
    tuned = model.alpha_path_[model.output_iteration_]
    assert model.alpha_ == pytest.approx(tuned * (1.0 + model.noise_correlation))
