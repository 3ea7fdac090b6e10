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
        assert np.all(gaussian_noise(rng, 1.0, 5, sensitivity=1.0) == 0)
    assert np.std(gaussian_noise(rng, 1.0, 10_000, sensitivity=1.0)) == pytest.approx(1.0, rel=0.05)


def test_private_norm_bound_is_the_heavy_tailed_scale_quantile():
    """One norm bound: private_norm_bound at ``mu`` is the heavy-tailed
    solvers' scale quantile at ``z = sqrt(steps) / mu`` (same draws; their
    scales multiply a lowered level's bound by UNRELIABLE_SLACK, the
    estimators' bound does not), and ``mu=inf`` gives the 0.95 quantile up to
    the bisection's resolution."""
    from skdp.privacy import private_norm_bound
    from skdp.privacy._norm_bound import (
        RANGE_STEPS,
        UNRELIABLE_SLACK,
        norm_bound_noise_multiplier,
        quantile_level,
    )
    from skdp.solvers.heavy_tailed.bounds import scale_quantile

    norms = np.abs(np.random.default_rng(3).standard_t(3, size=4000)) + 0.1
    for mu in (0.05, 0.3, 1.0):
        z = norm_bound_noise_multiplier(mu)
        assert z == pytest.approx(np.sqrt(RANGE_STEPS) / mu)
        got = private_norm_bound(
            norms, mu, rng=np.random.default_rng(7), slack=UNRELIABLE_SLACK
        )
        ref = scale_quantile(norms, 1.0 - 0.95, z, np.random.default_rng(7))
        assert got == ref
        lowered = quantile_level(norms.size, z, 1.0 - 0.95) < 0.95
        assert lowered == (mu == 0.05)  # public: 4 z / n > 0.05
        default = private_norm_bound(norms, mu, rng=np.random.default_rng(7))
        assert default == (ref / UNRELIABLE_SLACK if lowered else ref)
    exact = private_norm_bound(norms, np.inf, rng=np.random.default_rng(0))
    q = np.quantile(norms, 0.95)
    assert q <= exact <= q * 2.0 ** (60.0 / 2**RANGE_STEPS)
    # a public range in value units sets the log2 search range
    b = private_norm_bound(
        norms, np.inf, rng=np.random.default_rng(0), bounds=(1e-6, 1e6)
    )
    assert q <= b <= q * 2.0 ** (np.log2(1e12) / 2**RANGE_STEPS)


def test_private_norm_bound_small_n_lowers_the_level_and_warns():
    from skdp.privacy import private_norm_bound

    norms = np.linspace(1.0, 2.0, 400)
    # z = sqrt(10) / 0.05 = 63 > 400 / 8: warned (public n and mu), the level
    # is the median; a slack multiplies that bound
    with pytest.warns(UserWarning, match="too few"):
        small = private_norm_bound(norms, 0.05, rng=np.random.default_rng(1))
    with pytest.warns(UserWarning, match="too few"):
        wide = private_norm_bound(norms, 0.05, rng=np.random.default_rng(1), slack=4.0)
    assert wide == 4.0 * small
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        private_norm_bound(norms, 1.0, rng=np.random.default_rng(1))


def test_private_norm_bound_counts_coupled_on_neighbours():
    """Every released count moves by at most 1 between neighbours (replace
    one record), and by exactly 1 where the replaced record crosses the
    midpoint; with the same stream both runs draw the same noise."""
    from skdp.privacy import _norm_bound

    rng = np.random.default_rng(0)
    norms = np.exp(rng.normal(size=3000))
    neighbour = norms.copy()
    neighbour[0] = 1e8  # far above every midpoint the search visits
    norms[0] = 1e-8  # far below
    released = {}
    real = _norm_bound.gaussian_noise
    for name, v in (("a", norms), ("b", neighbour)):
        logv = np.log2(v)
        mids, noise = [], []

        def count_le(mid, logv=logv, mids=mids):
            mids.append(mid)
            return int(np.count_nonzero(logv <= mid))

        def record(r, std, size=None, noise=noise, **ledger):
            noise.append(real(r, std, **ledger))
            return noise[-1]

        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(_norm_bound, "gaussian_noise", record)
            _norm_bound.norm_bound_from_counts(
                count_le, v.size, 0.05, 5.0, np.random.default_rng(11)
            )
        released[name] = (mids, noise, logv)
    mids_a, noise_a, logv_a = released["a"]
    _, noise_b, logv_b = released["b"]
    np.testing.assert_array_equal(noise_a, noise_b)
    diffs = [
        abs(int(np.count_nonzero(logv_a <= m)) - int(np.count_nonzero(logv_b <= m)))
        for m in mids_a
    ]
    assert max(diffs) <= 1
    assert min(diffs) == 1  # attained: the record crosses every midpoint


def test_private_norm_bound_event_is_exactly_mu_gdp():
    """The event is ``steps`` Gaussian counts of multiplier sqrt(steps)/mu:
    its (epsilon, delta) is the closed-form GDP curve at mu, and
    dp-accounting's PLD of the same Gaussians (sensitivity 1) agrees."""
    from dp_accounting import dp_event
    from dp_accounting.pld import pld_privacy_accountant

    from skdp.privacy import (
        certify_epsilon,
        gdp_epsilon,
        gdp_mu_of,
        private_norm_bound_event,
    )
    from skdp.privacy._norm_bound import RANGE_STEPS, norm_bound_noise_multiplier

    for mu in (0.1, 0.5, 2.0):
        event = private_norm_bound_event(mu)
        assert gdp_mu_of(event) == pytest.approx(mu, rel=1e-12)
        assert certify_epsilon(event, 1e-6) == pytest.approx(
            gdp_epsilon(mu, 1e-6), rel=1e-6
        )
        # dp-accounting: add/remove PLD of sensitivity-1 counts is the
        # replace-one count's (a count moves by one either way)
        z = norm_bound_noise_multiplier(mu)
        acc = pld_privacy_accountant.PLDAccountant()
        acc.compose(dp_event.GaussianDpEvent(z), RANGE_STEPS)
        assert acc.get_epsilon(1e-6) == pytest.approx(gdp_epsilon(mu, 1e-6), rel=2e-3)


def test_private_norm_bound_audit_and_negative_control():
    """A canary audit of the bound itself: the canary's norm is below the
    first midpoint in D and far above it in D', where D's count sits just
    above the target. At mu=0.3 the empirical lower bound stays below the
    certified epsilon; with the noise divided by 100 it exceeds it."""
    from skdp._testing.audit_configs import NORM_BOUND_AUDIT as cfg
    from skdp.privacy import (
        certify_epsilon,
        private_norm_bound,
        private_norm_bound_event,
    )
    from skdp.privacy.audit import _choose_threshold, epsilon_lower_bound

    mu, delta, n_runs = cfg["mu"], cfg["delta"], cfg["n_runs"]
    out = np.full(cfg["n"], cfg["low"])  # log2 <= 0, the first midpoint
    out[cfg["n_low"] :] = cfg["high"]  # counted at mid 0: just above the target
    inn = out.copy()
    inn[0] = cfg["canary"]  # crosses every midpoint above log2(low)
    claimed = certify_epsilon(private_norm_bound_event(mu), delta)

    def lower_bound(factor):
        with _scaled_noise(factor):
            s_out, s_in = (
                np.log2(
                    [
                        private_norm_bound(v, mu, rng=np.random.default_rng(s))
                        for s in range(n_runs)
                    ]
                )
                for v in (out, inn)
            )
        half = n_runs // 2
        t, direction = _choose_threshold(s_out[:half], s_in[:half], delta, 0.05)
        return epsilon_lower_bound(s_out[half:], s_in[half:], t, direction, delta)

    assert lower_bound(1.0) <= claimed
    assert lower_bound(0.01) > claimed
