"""Private quantile and noisy histogram: accuracy and coupled-run sensitivity."""

import warnings

import numpy as np
import pytest
from scipy.special import logsumexp

from skdp.privacy import noisy_histogram, private_quantile
from skdp.privacy._mechanisms import _quantile_intervals, _scaled_noise


def test_private_quantile_lands_in_90_99_band():
    # Issue 2: n = 1e4, epsilon = 0.1, the 95th percentile of row norms.
    rng = np.random.default_rng(0)
    hits = 0
    runs = 100
    for _ in range(runs):
        norms = np.linalg.norm(rng.standard_t(3, size=(10_000, 5)), axis=1)
        lo, hi = np.quantile(norms, [0.90, 0.99])
        est = private_quantile(
            norms, 0.95, 0.1, bounds=(1e-3, 1e4), rng=rng, log_scale=True
        )
        hits += lo <= est <= hi
    assert hits >= 0.9 * runs


def test_private_quantile_linear_scale_and_exact_limit():
    rng = np.random.default_rng(1)
    x = rng.uniform(0, 10, size=5000)
    est = private_quantile(x, 0.5, 1.0, bounds=(0, 10), rng=rng)
    assert abs(est - np.median(x)) < 0.2
    exact = private_quantile(x, 0.5, np.inf, bounds=(0, 10), rng=rng)
    assert exact == pytest.approx(np.quantile(x, 0.5, method="inverted_cdf"))


@pytest.mark.parametrize(
    "values, expected",
    [
        (np.full(1000, 3.0), 3.0),  # all equal (one-hot rows: equal norms)
        (np.tile(np.arange(1.0, 6.0), 400), 5.0),  # integer targets
        (np.full(1000, 1e9), 1e6),  # beyond the range: saturates at its end
    ],
)
def test_private_quantile_handles_ties(values, expected):
    # Between sorted values a tie has no length, and the interval mechanism
    # could never output it; public cells can.
    rng = np.random.default_rng(5)
    bounds = (1e-6, 1e6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = [
            private_quantile(values, 0.95, 1.0, bounds=bounds, rng=rng, log_scale=True)
            for _ in range(200)
        ]
    assert np.mean(np.abs(np.log(np.array(est) / expected)) < 0.05) >= 0.95


def test_private_quantile_warns_at_the_ends_of_its_range():
    rng = np.random.default_rng(6)
    with pytest.warns(UserWarning, match="last cell"):
        private_quantile(np.full(100, 1e9), 0.5, 1.0, bounds=(1.0, 10.0), rng=rng)


def _log_density(values, q, eps, bounds, log_scale, grid):
    edges, logw, _ = _quantile_intervals(values, q, eps, bounds, log_scale)
    i = np.clip(np.searchsorted(edges, grid, side="right") - 1, 0, logw.size - 1)
    lengths = np.diff(edges)
    return logw[i] - np.log(lengths[i]) - logsumexp(logw)


@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("log_scale", [False, True])
def test_private_quantile_coupled_neighbours_density_ratio(log_scale, ties):
    """Replace one record: the output density moves by at most exp(epsilon)."""
    rng = np.random.default_rng(2)
    eps, bounds = 0.5, (1e-2, 1e2)
    for _ in range(20):
        x = np.exp(rng.normal(size=200))
        if ties:
            x = np.round(x)  # many equal values, and values clipped to the bounds
        x_prime = x.copy()
        x_prime[rng.integers(200)] = np.exp(rng.normal(scale=3))
        lo, hi = (np.log(bounds[0]), np.log(bounds[1])) if log_scale else bounds
        grid = np.linspace(lo, hi, 4001)[1:-1]
        a = _log_density(x, 0.9, eps, bounds, log_scale, grid)
        b = _log_density(x_prime, 0.9, eps, bounds, log_scale, grid)
        ok = np.isfinite(a) & np.isfinite(b)
        assert np.max(np.abs(a[ok] - b[ok])) <= eps + 1e-9
        # ... and the bound is nearly attained, so the test could fail.
    assert np.max(np.abs(a[ok] - b[ok])) > 0.2 * eps


def test_noisy_histogram_sensitivity_and_noise():
    cats = ["a", "b", "c"]
    labels = np.array(["a"] * 50 + ["b"] * 30 + ["c"] * 20)
    neighbour = labels.copy()
    neighbour[0] = "c"  # replace one record
    rng = np.random.default_rng(3)
    exact = noisy_histogram(labels, cats, 0.0, rng=rng)
    exact_n = noisy_histogram(neighbour, cats, 0.0, rng=rng)
    assert np.linalg.norm(exact - exact_n) <= np.sqrt(2) + 1e-12
    # Coupled noise: the same stream gives the same noise on both.
    a = noisy_histogram(labels, cats, 5.0, rng=np.random.default_rng(4))
    b = noisy_histogram(neighbour, cats, 5.0, rng=np.random.default_rng(4))
    np.testing.assert_allclose(a - b, exact - exact_n)
    draws = np.array([noisy_histogram(labels, cats, 5.0, rng=rng) for _ in range(2000)])
    assert draws.std(axis=0).mean() == pytest.approx(5.0 * np.sqrt(2), rel=0.05)
    with pytest.raises(ValueError, match="declared"):
        noisy_histogram(["z"], cats, 1.0, rng=rng)


def test_scaled_noise_hook_is_scoped():
    from skdp.privacy import gaussian_noise

    rng = np.random.default_rng(0)
    with _scaled_noise(0.0):
        assert np.all(gaussian_noise(rng, 1.0, 5) == 0)
    assert np.std(gaussian_noise(rng, 1.0, 10_000)) == pytest.approx(1.0, rel=0.05)


def test_private_norm_bound_is_the_quantile_at_the_reachable_level():
    """The shared norm bound is private_quantile (coupled test above) at a
    level that is a public function of n and epsilon."""
    from skdp.privacy import (
        private_norm_bound,
        private_quantile,
        reachable_quantile_level,
    )

    norms = np.abs(np.random.default_rng(3).standard_t(3, size=400)) + 0.1
    for eps in (0.05, 1.0, np.inf):
        level = reachable_quantile_level(400, eps, 0.95)
        expected = private_quantile(
            norms,
            level,
            eps,
            bounds=(1e-6, 1e6),
            rng=np.random.default_rng(7),
            log_scale=True,
        )
        got = private_norm_bound(norms, eps, rng=np.random.default_rng(7))
        assert got == expected
    # a small n * epsilon lowers the level (public), a large one keeps it
    assert reachable_quantile_level(400, 0.05, 0.95) < 0.95
    exact = private_norm_bound(norms, np.inf, rng=np.random.default_rng(0))
    assert exact == pytest.approx(np.quantile(norms, 0.95), rel=0.01)
