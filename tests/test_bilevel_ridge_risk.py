"""BilevelRidge(tuning="risk_estimate"): one release of all rows, Cp on its path."""

from dataclasses import replace

import numpy as np
import pytest
from sklearn.linear_model import Ridge

from skdp import BilevelRidge
from skdp.privacy import certify_epsilon, gdp_epsilon
from skdp.solvers.bilevel.plan import gdp_budget
from skdp.solvers.bilevel.ridge.risk import (
    plan_risk_estimate,
    release_all_rows,
    risk_estimate_ridge,
    risk_path,
)
from skdp.solvers.bilevel.ridge.stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
)

# The sufficient-statistics inner solver (the default is "gd").
SS = "sufficient_statistics"


def _linear(n, d, snr, seed):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    theta = rng.normal(size=d)
    theta /= np.linalg.norm(theta)
    y = X @ theta + 0.5 + rng.normal(size=n) / np.sqrt(snr)
    return X, y, theta


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_plan_spends_exactly_the_budget(fit_intercept):
    mu = 0.8
    plan = plan_risk_estimate(
        500, 4, mu, alpha_min=1e-3, alpha_max=1e4, fit_intercept=fit_intercept
    )
    assert certify_epsilon(plan.event, 1e-6) == pytest.approx(
        gdp_epsilon(mu, 1e-6), rel=1e-6
    )
    # Noise scales: sensitivity over the square root of each share of mu**2.
    c = 1.0 if fit_intercept else None
    total = sum(
        (sens / plan.stds[k]) ** 2
        for k, sens in (
            ("gram", gram_sensitivity(1.0, c)),
            ("moment", moment_sensitivity(1.0, 1.0, c)),
            ("target_sq", 1.0),
        )
    )
    assert total == pytest.approx(mu**2)


def test_estimator_charges_the_budget_and_certifies_it():
    X, y, _ = _linear(2000, 3, 1.0, 0)
    est = BilevelRidge(
        inner_solver=SS, epsilon=0.7, delta=1e-6, tuning="risk_estimate", random_state=0
    )
    est.fit(X, y)  # private bounds: their pure-DP share composes in
    assert est.privacy_spent_[0] == pytest.approx(0.7, rel=1e-4)
    assert est.privacy_spent_[0] <= 0.7 * (1 + 1e-9)
    mu = gdp_budget(0.7, 1e-6)
    assert BilevelRidge(
        inner_solver=SS,
        epsilon=0.7,
        delta=1e-6,
        feature_norm=5.0,
        target_bound=5.0,
        tuning="risk_estimate",
        random_state=0,
    ).fit(X, y).privacy_spent_[0] == pytest.approx(gdp_epsilon(mu, 1e-6), rel=1e-6)


@pytest.mark.parametrize("fit_intercept", [True, False])
def test_release_coupled_run_moves_by_at_most_the_sensitivity(fit_intercept):
    """Neighbours (one row replaced), same noise stream: the noise cancels and
    the difference is the pre-noise statistics', within each sensitivity."""
    rng = np.random.default_rng(1)
    plan = plan_risk_estimate(
        300, 4, 1.0, alpha_min=1e-3, alpha_max=1e3, fit_intercept=fit_intercept
    )
    c = 1.0 if fit_intercept else None
    worst = {"gram": 0.0, "moment": 0.0, "target_sq": 0.0}
    for _ in range(200):
        X = rng.normal(size=(300, 4))
        y = rng.normal(size=300)
        X2, y2 = X.copy(), y.copy()
        i = rng.integers(300)
        # Large replacements exercise the clipping that enforces the bound.
        X2[i] = rng.normal(size=4) * rng.choice([0.1, 1.0, 10.0])
        y2[i] = rng.normal() * rng.choice([0.1, 1.0, 10.0])
        a = release_all_rows(X, y, plan, np.random.default_rng(7))
        b = release_all_rows(X2, y2, plan, np.random.default_rng(7))
        iu = np.triu_indices(a.gram.shape[0])
        worst["gram"] = max(worst["gram"], np.linalg.norm((a.gram - b.gram)[iu]))
        worst["moment"] = max(worst["moment"], np.linalg.norm(a.moment - b.moment))
        worst["target_sq"] = max(worst["target_sq"], abs(a.target_sq - b.target_sq))
    assert worst["gram"] <= gram_sensitivity(1.0, c) + 1e-9
    assert worst["moment"] <= moment_sensitivity(1.0, 1.0, c) + 1e-9
    assert worst["target_sq"] <= 1.0 + 1e-9
    # ... and the bounds are nearly attained, so the test could fail.
    assert worst["gram"] > 0.5 * gram_sensitivity(1.0, c)
    assert worst["moment"] > 0.5 * moment_sensitivity(1.0, 1.0, c)


def test_without_noise_the_model_is_sklearn_ridge_at_the_cp_minimizer():
    X, y, _ = _linear(3000, 5, 0.3, 2)
    est = BilevelRidge(
        inner_solver=SS,
        epsilon=np.inf,
        feature_norm=100.0,  # clips nothing
        target_bound=100.0,
        tuning="risk_estimate",
        random_state=0,
    ).fit(X, y)
    ridge = Ridge(alpha=est.alpha_).fit(X, y)
    np.testing.assert_allclose(est.coef_, ridge.coef_, rtol=1e-8, atol=1e-10)
    assert est.intercept_ == pytest.approx(ridge.intercept_, abs=1e-8)
    assert np.isnan(est.signal_pvalue_)
    assert est.n_iter_ == 1 and est.alpha_path_.tolist() == [est.alpha_]
    # alpha_ minimizes the exact Cp over the public grid, whose minimizer is
    # the penalty of smallest in-sample risk up to Cp's own noise.
    fn, tb = 100.0, 100.0
    stats = exact_statistics(X / fn, y / tb, 1.0).centered()
    sigma2 = np.var(y - ridge.predict(X)) / tb**2
    grid = np.geomspace(1e-3, 10 * 3000, 161)
    path = risk_path(stats, 0.0, 0.0, sigma2, grid)
    assert est.alpha_ == pytest.approx(grid[np.argmin(path)] * fn**2, rel=0.1)


def _cp_bias(paths, true, reps):
    """Largest mean error of ``Cp(alpha) - Cp(alpha_max)`` against the true
    risk difference, and the largest standard error (Cp is up to a constant)."""
    err = (paths - paths[:, -1:]) - (true - true[:, -1:])
    return np.abs(err.mean(axis=0)).max(), err.std(axis=0).max() / np.sqrt(reps)


# Against theory: averaged over target noise and privacy noise, Cp's
# differences across penalties match the in-sample risk's. Each case also
# shows that dropping one part of the correction is detected, so the test
# can fail. Rows and targets stay inside the clipping bounds.
CP_CASES = {
    # Privacy noise dominates; the data's means are far from zero, so the
    # centring noise of the released means matters.
    "privacy noise, intercept": dict(
        fit_intercept=True, n=2000, scale=4, offset=0.3, sigma=0.1, s=3.0, reps=800
    ),
    "privacy noise, no intercept": dict(
        fit_intercept=False, n=1000, scale=2, offset=0.0, sigma=0.1, s=3.0, reps=600
    ),
    # Target noise dominates: the degrees-of-freedom term matters.
    "statistical noise": dict(
        fit_intercept=False, n=1000, scale=4, offset=0.0, sigma=0.15, s=0.02, reps=800
    ),
}


@pytest.mark.parametrize("case", list(CP_CASES))
def test_corrected_cp_is_unbiased_for_the_in_sample_risk(case):
    cfg = CP_CASES[case]
    rng = np.random.default_rng(3)
    n, d, s, sigma = cfg["n"], 5, cfg["s"], cfg["sigma"]
    X = rng.normal(size=(n, d)) / (cfg["scale"] * np.sqrt(d)) + cfg["offset"]
    theta = np.array([0.3, -0.3, 0.3, -0.3, 0.3])
    plan = plan_risk_estimate(
        n,
        d,
        1.0,
        alpha_min=0.1,
        alpha_max=1e3,
        n_alphas=9,
        fit_intercept=cfg["fit_intercept"],
    )
    plan = replace(plan, stds={"gram": s, "moment": s, "target_sq": 0.0})
    c = 1.0 if cfg["fit_intercept"] else None
    variants = {
        "corrected": (s * s, sigma**2, c),
        "no privacy correction": (0.0, sigma**2, c),
        "half the degrees of freedom": (s * s, sigma**2 / 2, c),
        "no centring noise": (s * s, sigma**2, None),
    }
    paths = {k: [] for k in variants}
    true = []
    Xc = X - X.mean(axis=0) if cfg["fit_intercept"] else X
    for _ in range(cfg["reps"]):
        y = X @ theta + 0.5 * cfg["fit_intercept"] + sigma * rng.normal(size=n)
        stats = release_all_rows(X, y, plan, rng).centered()
        for k, (var, noise_var, scaling) in variants.items():
            paths[k].append(
                risk_path(stats, var, var, noise_var, plan.penalties, scaling)
            )
        coefs = [stats.solve(a)[0] for a in plan.penalties]
        true.append([np.sum((Xc @ (coef - theta)) ** 2) for coef in coefs])
    true = np.array(true)
    bias = {k: _cp_bias(np.array(p), true, cfg["reps"]) for k, p in paths.items()}
    assert bias["corrected"][0] < 3 * bias["corrected"][1]
    # The part of the correction that matters in this case is detected.
    missing = {
        "privacy noise, intercept": "no centring noise",
        "privacy noise, no intercept": "no privacy correction",
        "statistical noise": "half the degrees of freedom",
    }[case]
    assert bias[missing][0] > 4 * bias[missing][1]


def test_signal_and_margin():
    # Signal: the test rejects and the model is close to theta.
    X, y, theta = _linear(20000, 5, 1.0, 4)
    est = BilevelRidge(
        inner_solver=SS,
        epsilon=1.0,
        feature_norm=4.0,
        target_bound=6.0,
        tuning="risk_estimate",
        random_state=0,
    ).fit(X, y)
    assert est.signal_pvalue_ < 1e-3
    assert np.linalg.norm(est.coef_ - theta) < 0.3
    # No signal: the margin keeps the model near the constant one, where Cp
    # alone can chase a noise dip.
    y0 = 0.5 + np.random.default_rng(5).normal(size=20000)
    norms = []
    for margin in (1.5, 0.0):
        coefs = [
            BilevelRidge(
                inner_solver=SS,
                epsilon=1.0,
                feature_norm=4.0,
                target_bound=6.0,
                tuning="risk_estimate",
                validation_margin=margin,
                random_state=s,
            )
            .fit(X, y0)
            .coef_
            for s in range(10)
        ]
        norms.append(np.mean([np.sum(c**2) for c in coefs]))
    assert norms[0] < norms[1]


@pytest.mark.parametrize(
    "params",
    [{"inner_solver": "loc_gd"}, {"refit_share": 0.2}, {"outer_noise": True}],
)
def test_options_that_do_not_apply_are_refused(params):
    X, y, _ = _linear(200, 2, 1.0, 6)
    with pytest.raises(ValueError, match="risk_estimate"):
        BilevelRidge(
            tuning="risk_estimate", random_state=0, **{"inner_solver": SS, **params}
        ).fit(X, y)


def test_solver_result_fields():
    rng = np.random.default_rng(8)
    X = rng.normal(size=(1000, 3)) / 3
    y = np.clip(X @ [1.0, 0.0, -1.0] + 0.1 * rng.normal(size=1000), -1, 1)
    plan = plan_risk_estimate(1000, 3, 2.0, alpha_min=1e-3, alpha_max=1e4)
    res = risk_estimate_ridge(X, y, plan, rng)
    assert res.alpha in plan.penalties
    assert res.risk.shape == plan.penalties.shape
    assert 0.0 <= res.signal_pvalue <= 1.0
