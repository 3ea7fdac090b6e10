"""MinimaxFairClassifier with K > 2 classes: the multinomial loss in solver="gda"."""

import math
import warnings

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import log_loss

import skdp.solvers.saddle_point.gda as gda_module
import skdp.solvers.saddle_point.plan as plan_module
from skdp import MinimaxFairClassifier, PrivacyLeakWarning
from skdp.solvers.saddle_point.gda import (
    group_dro_gda,
    stacked_sensitivity,
    stacked_statistic_multinomial,
)
from skdp.utils import clip_rows


def _multiclass_groups_data(n=900, K=4, seed=0):
    rng = np.random.default_rng(seed)
    g = rng.choice(["a", "b", "c"], size=n, p=[0.6, 0.3, 0.1])
    X = rng.normal(size=(n, 3))
    W = {v: rng.normal(size=(3, K)) * 1.5 for v in ("a", "b", "c")}
    scores = np.stack([X[i] @ W[g[i]] for i in range(n)])
    y = np.argmax(scores + rng.gumbel(size=(n, K)), axis=1)
    return X, y, g


def _gdp_delta(mu, eps):
    return norm.cdf(-eps / mu + mu / 2) - math.exp(eps) * norm.cdf(-eps / mu - mu / 2)


# --- sensitivity of the stacked per-step release ------------------------------------------


def _adversarial_pair(C, p, K, scale=100.0, alpha=0.05):
    """Two records of label 0 whose whole clipped d x K gradients are nearly opposite.

    ``W`` puts class ``K - 1`` far ahead of class 0 along ``-e_0`` (both
    records lie there), so both losses are far above any cap and both
    residuals are ``~ e_{K-1} - e_0``; the rows differ in the sign of their
    ``e_1`` component, so the clipped gradients ``x r^T`` nearly cancel.
    """
    beta = math.sqrt(1.0 - alpha**2)
    x = np.zeros(p)
    x[0], x[1] = -alpha * C, beta * C
    x_other = x.copy()
    x_other[1] = -beta * C
    W = np.zeros((p, K))
    W[0, 0], W[0, K - 1] = scale, -scale
    return x, x_other, W


@pytest.mark.parametrize("K", [3, 10])
@pytest.mark.parametrize(
    "weights, change",
    [
        (np.array([1.0, 1.0, 1.0]), "other group"),
        (np.array([0.7, 2.5, 1.3]), "other group"),
        (np.array([3.0, 0.5, 0.5]), "same group"),
        (np.array([1.0]), "same group"),
    ],
)
def test_multinomial_statistic_moves_by_at_most_and_nearly_its_sensitivity(
    K, weights, change
):
    rng = np.random.default_rng(0)
    m, p, C, B = weights.size, 4, 1.5, 2.0
    lam = 0.0 if m == 1 else 0.6 * C / B
    n = 40
    X = clip_rows(rng.normal(size=(n, p)), C)
    y = rng.integers(0, K, size=n)
    g = rng.integers(0, m, size=n)
    order = np.argsort(weights)
    k = int(order[-1])
    j = k if change == "same group" or m == 1 else int(order[-2])
    x, x_other, W = _adversarial_pair(C, p, K)
    X[0], y[0], g[0] = x, 0, k
    X2, y2, g2 = X.copy(), y.copy(), g.copy()
    X2[0], y2[0], g2[0] = x_other, 0, j
    s1 = stacked_statistic_multinomial(X, y, g, m, W, weights, C, B, lam)
    s2 = stacked_statistic_multinomial(X2, y2, g2, m, W, weights, C, B, lam)
    assert s1.shape == (p * K + m,)
    declared = stacked_sensitivity(weights, C, lam * B)
    moved = np.linalg.norm(s1 - s2)
    assert moved <= declared * (1 + 1e-12)
    if m == 1:
        assert moved >= 0.98 * declared
    elif change == "other group":
        pair = math.sqrt(((weights[k] + weights[j]) * C) ** 2 + 2 * (lam * B) ** 2)
        assert moved >= 0.98 * pair
        if np.all(weights == weights[0]):
            assert pair == pytest.approx(declared)
    else:
        assert moved >= 0.98 * 2 * weights[k] * C


@pytest.mark.parametrize("K", [3, 10])
def test_one_record_gradient_is_clipped_as_a_whole_not_per_class(K):
    """A record whose every class column would fit the clip on its own is
    still clipped to C in Frobenius norm over all K columns."""
    C = 1.0
    x = np.array([[0.0, 3.0]])
    W = np.zeros((2, K))  # uniform softmax: r = 1/K - e_y
    s = stacked_statistic_multinomial(
        x, np.array([1]), np.zeros(1, dtype=int), 1, W, np.ones(1), C, 10.0, 0.0
    )
    grad = s[: 2 * K].reshape(2, K)
    r = np.full(K, 1.0 / K)
    r[1] -= 1.0
    # each column's norm is below C, the whole matrix's is above it
    assert np.abs(3.0 * r).max() <= 3.0 * (1 - 1 / K)
    assert 3.0 * np.linalg.norm(r) > C
    assert np.linalg.norm(grad) == pytest.approx(C)
    np.testing.assert_allclose(grad[1], C * r / np.linalg.norm(r))
    # the loss block is the uncapped cross-entropy at W = 0 ...
    assert s[-1] == 0.0  # ... times lam = 0


@pytest.mark.parametrize("K", [3, 10])
@pytest.mark.parametrize("move_group", [False, True])
def test_coupled_runs_along_a_noisy_trajectory(monkeypatch, K, move_group):
    """Same random stream; at every step the pre-noise statistic of a
    neighbouring dataset (one record replaced by one of another class, and
    possibly of another group) differs by at most that step's declared
    sensitivity, and comes near it."""
    rng = np.random.default_rng(1)
    n, p, m, C = 200, 3, 3, 2.0
    X = clip_rows(rng.normal(size=(n, p)) * 2.0, C)
    y = rng.integers(0, K, size=n)
    g = rng.choice(m, size=n, p=[0.6, 0.3, 0.1])
    X2, y2, g2 = X.copy(), y.copy(), g.copy()
    X2[0] = -X[0]
    y2[0] = (y[0] + 1) % K
    if move_group:
        g2[0] = (g[0] + 1) % m
    priors = np.bincount(g, minlength=m) / n
    original = gda_module.stacked_statistic_multinomial
    ratios = []

    def coupled(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=None):
        s1 = original(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=row_norms)
        s2 = original(X2, y2, g2, m_, v, a, clip, B, lam)
        ratios.append(np.linalg.norm(s1 - s2) / stacked_sensitivity(a, clip, lam * B))
        return s1

    monkeypatch.setattr(gda_module, "stacked_statistic_multinomial", coupled)
    result = group_dro_gda(
        X,
        y,
        g,
        priors,
        radius=3.0,
        clip=C,
        loss_bound=2.0,
        loss_factor=0.5 * C / 2.0,
        n_steps=40,
        noise_multiplier=0.5,
        primal_step=1.0 / C**2,
        dual_step=2.0,
        rng=np.random.default_rng(5),
        momentum=0.9,
        optimistic=True,
        n_classes=K,
    )
    assert result.coef.shape == (p, K)
    assert len(ratios) == 40
    assert max(ratios) <= 1.0 + 1e-12
    assert max(ratios) > 0.3  # the bound is not vacuous along the run
    np.testing.assert_allclose(result.noise_stds, 0.5 * result.sensitivities)
    assert result.sensitivities.max() > result.sensitivities.min()


@pytest.mark.parametrize("epsilon", [1.0, 200.0])
def test_fit_coupled_runs_follow_the_schedule_clip(monkeypatch, epsilon):
    """Through the estimator (the plan's schedule: clip 0.7 row bounds when
    noisy, larger as z -> 0): at every step the statistic of a neighbour whose
    record changes class AND group moves by at most the declared sensitivity,
    which is computed from the clip actually applied, and nearly attains it
    when the clip binds."""
    rng = np.random.default_rng(0)
    n, K = 300, 3
    X = rng.normal(size=(n, 3)) * 2.0
    y = rng.integers(0, K, size=n)
    g = rng.choice(3, size=n, p=[0.5, 0.3, 0.2])
    X[0], y[0], g[0] = [10.0, 0.0, 0.0], 0, 0
    original = gda_module.stacked_statistic_multinomial
    ratios, clips = [], []

    def coupled(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=None):
        s1 = original(Xc, yc, gc, m_, v, a, clip, B, lam, row_norms=row_norms)
        yn, gn = yc.copy(), gc.copy()
        yn[0], gn[0] = 1, 1  # the same (clipped) row, another class and group
        s2 = original(Xc, yn, gn, m_, v, a, clip, B, lam)
        ratios.append(np.linalg.norm(s1 - s2) / stacked_sensitivity(a, clip, lam * B))
        clips.append(clip)
        return s1

    monkeypatch.setattr(gda_module, "stacked_statistic_multinomial", coupled)
    clf = MinimaxFairClassifier(
        epsilon=epsilon,
        feature_norm=3.0,
        classes=[0, 1, 2],
        groups=[0, 1, 2],
        group_priors=[0.5, 0.3, 0.2],
        max_iter=40,
        random_state=0,
    ).fit(X, y, sensitive_features=g)
    u = clf.constants_["noiseless_share"]
    bound = math.hypot(3.0, 1.0)
    clip = ((1 - u) * 0.7 + u * math.sqrt(2.0)) * bound
    assert (u == 0.0) == (epsilon == 1.0)
    assert clf.constants_["clip"] == pytest.approx(clip)
    assert set(clips) == {clf.constants_["clip"]}
    assert len(ratios) == 40
    assert max(ratios) <= 1.0 + 1e-12
    assert max(ratios) >= (0.8 if u == 0.0 else 0.4)


# --- accounting -----------------------------------------------------------------------------


def test_multiclass_plan_is_exactly_gdp_and_the_same_as_binary():
    X, y, g = _multiclass_groups_data()
    kw = dict(
        epsilon=1.0,
        delta=1e-5,
        groups=["a", "b", "c"],
        group_priors=[0.6, 0.3, 0.1],
        feature_norm=3.0,
        random_state=0,
    )
    # without the recalibration (tests/test_softmax_shrinkage.py), the steps
    # are the whole plan
    clf = MinimaxFairClassifier(classes=range(4), calibration_share=0.0, **kw)
    clf.fit(X, y, sensitive_features=g)
    eps, delta = clf.privacy_spent_
    z, T = clf.constants_["noise_multiplier"], clf.n_iter_
    assert _gdp_delta(math.sqrt(T) / z, eps) == pytest.approx(1e-5, rel=1e-3)
    assert 0.999 <= eps <= 1.0
    # The number of classes changes the statistic, not the plan: the same
    # multiplier per step as a binary fit of the same size.
    binary = MinimaxFairClassifier(classes=[0, 1], calibration_share=0.0, **kw)
    binary.fit(X, (y > 1).astype(int), sensitive_features=g)
    assert binary.constants_["noise_multiplier"] == z
    # Whole-record clip: 0.7 row bounds when noisy (the multinomial
    # gradient's norm is at most sqrt(2) row bounds, reached without noise).
    assert clf.constants_["clip"] == pytest.approx(0.7 * math.hypot(3, 1))
    free = MinimaxFairClassifier(
        classes=range(4), calibration_share=0.0, **{**kw, "epsilon": np.inf}
    )
    free.fit(X, y, sensitive_features=g)
    assert free.constants_["clip"] == pytest.approx(math.sqrt(2) * math.hypot(3, 1))
    assert clf.noise_std_ <= z * stacked_sensitivity(
        1.0 / np.array([0.6, 0.3, 0.1]),
        clf.constants_["clip"],
        0.5 * clf.constants_["clip"],
    ) * (1 + 1e-12)


def test_multinomial_momentum_rule_is_public_continuous_and_free():
    """Momentum 0.9 while the public per-step noise-to-signal ratio
    r = z sqrt(pK) / n is small, none where the noise dominates a step,
    continuous and non-increasing in between. It is a function of the plan's
    public inputs only, and changes no privacy event: the momentum is
    post-processing of released gradients."""
    lo, hi = plan_module._GDA_MOMENTUM_RATIO
    mom = plan_module.multinomial_momentum
    assert mom(0.0) == mom(lo) == plan_module._GDA_MOMENTUM == 0.9
    assert mom(hi) == mom(10 * hi) == 0.0
    grid = np.geomspace(lo / 2, 2 * hi, 200)
    values = np.array([mom(r) for r in grid])
    assert np.all(np.diff(values) <= 0)
    assert np.max(np.abs(np.diff(values))) < 0.02  # no jump
    assert mom(lo * 1.0001) == pytest.approx(0.9, abs=1e-3)
    assert mom(hi * 0.9999) == pytest.approx(0.0, abs=1e-3)
    # r as documented
    assert plan_module.multinomial_noise_ratio(20.0, 1000, 25, 4) == pytest.approx(
        20.0 * math.sqrt(100) / 1000
    )
    # Through the plan (no data): small n -> no momentum, large n -> 0.9, the
    # same event; the binary schedule keeps 0.9 at every n.
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    small = plan_module.plan_minimax(1.0, 1e-6, 300, 10, 1, 5, **kw)
    large = plan_module.plan_minimax(1.0, 1e-6, 10**6, 10, 1, 5, **kw)
    r_small = plan_module.multinomial_noise_ratio(small.noise_multiplier, 300, 11, 5)
    assert r_small > hi and small.gda.momentum == 0.0
    assert large.gda.momentum == 0.9
    assert small.event == large.event
    assert small.noise_multiplier == large.noise_multiplier
    no_intercept = plan_module.plan_minimax(
        1.0, 1e-6, 3000, 10, 1, 5, fit_intercept=False, **kw
    )
    r = plan_module.multinomial_noise_ratio(no_intercept.noise_multiplier, 3000, 10, 5)
    assert no_intercept.gda.momentum == pytest.approx(mom(r))
    for n in (300, 10**6):
        binary = plan_module.plan_minimax(1.0, 1e-6, n, 10, 1, 2, **kw)
        assert binary.gda.momentum == 0.9
    # without noise (z = 0, r = 0) the epsilon = inf schedule is unchanged
    free = plan_module.plan_minimax(np.inf, 1e-6, 300, 10, 1, 5, **kw)
    assert free.gda.momentum == 0.9


def test_multinomial_average_rule_is_public_continuous_and_free():
    """Primal averaging from 0.3 of the run while the public ratio r is small
    (momentum on), from 0.5 where the noise dominates (momentum off) and in the
    noiseless limit; continuous in between. A function of the plan's public
    inputs only, with the same privacy event: averaging is post-processing."""
    lo, hi = plan_module._GDA_MOMENTUM_RATIO
    avg = plan_module.multinomial_average_from
    assert avg(0.0) == avg(lo) == plan_module._GDA_MULTINOMIAL_AVERAGE_FROM == 0.3
    assert avg(hi) == avg(10 * hi) == 0.5
    assert avg(0.0, noiseless_share=1.0) == 0.5
    grid = np.geomspace(lo / 2, 2 * hi, 200)
    values = np.array([avg(r) for r in grid])
    assert np.all(np.diff(values) >= 0) and np.max(np.diff(values)) < 0.01
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    small = plan_module.plan_minimax(1.0, 1e-6, 300, 10, 1, 5, **kw)
    large = plan_module.plan_minimax(1.0, 1e-6, 10**6, 10, 1, 5, **kw)
    assert small.gda.primal_average_from == 0.5
    assert large.gda.primal_average_from == 0.3
    assert small.event == large.event
    free = plan_module.plan_minimax(np.inf, 1e-6, 10**6, 10, 1, 5, **kw)
    assert free.gda.primal_average_from == 0.5  # the noiseless schedule
    for n in (300, 10**6):  # the binary schedule is unchanged
        binary = plan_module.plan_minimax(1.0, 1e-6, n, 10, 1, 2, **kw)
        assert binary.gda.primal_average_from is None


def test_no_momentum_averaging_start_grows_with_the_number_of_coefficients():
    """Where momentum is off, the one-group multinomial fit averages from 0.5
    of the run up to p K = 120 coefficients and from 0.7 from p K = 240 on,
    continuous and monotone in between: a function of the dimensions only, so
    the privacy event is unchanged. With momentum the start still moves to 0.3,
    without noise to 0.5; binary and several-group fits keep their windows."""
    start = plan_module.multinomial_noisy_average_from
    lo, hi = plan_module._GDA_AVERAGE_COEFS
    assert start(None) == start(15) == start(lo) == 0.5
    assert start(hi) == start(650) == start(10**6) == 0.7
    grid = np.geomspace(lo / 2, 2 * hi, 200)
    values = np.array([start(c) for c in grid])
    assert np.all(np.diff(values) >= 0) and np.max(np.diff(values)) < 0.01
    avg = plan_module.multinomial_average_from
    big = 650
    assert avg(1.0, n_coefficients=big) == 0.7
    assert avg(0.01, n_coefficients=big) == 0.3  # full momentum
    assert avg(0.0, noiseless_share=1.0, n_coefficients=big) == 0.5
    assert 0.3 < avg(0.1, n_coefficients=big) < 0.7
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    # digits' shape: 64 features (+ intercept), 10 classes, 1347 rows
    wide = plan_module.plan_minimax(1.0, 1e-6, 1347, 64, 1, 10, **kw)
    narrow = plan_module.plan_minimax(1.0, 1e-6, 112, 4, 1, 3, **kw)  # iris
    assert wide.gda.momentum == narrow.gda.momentum == 0.0
    assert wide.gda.primal_average_from == 0.7
    assert narrow.gda.primal_average_from == 0.5
    # the number of coefficients moves no noise: same budget, same event
    saved = plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM
    try:
        plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = (0.5, 0.5)
        without = plan_module.plan_minimax(1.0, 1e-6, 1347, 64, 1, 10, **kw)
    finally:
        plan_module._GDA_MULTINOMIAL_NOISY_AVERAGE_FROM = saved
    assert without.gda.primal_average_from == 0.5
    assert wide.event == without.event
    assert wide.noise_multiplier == without.noise_multiplier
    # inside the sloped range the start reads p K with the intercept column
    for fit_intercept, coefs in ((True, 150), (False, 140)):
        mid = plan_module.plan_minimax(
            1.0, 1e-6, 400, 14, 1, 10, fit_intercept=fit_intercept, **kw
        ).gda
        assert mid.momentum == 0.0
        assert mid.primal_average_from == start(coefs)
    assert 0.5 < start(140) < start(150) < 0.7
    groups = plan_module.plan_minimax(1.0, 1e-6, 1347, 64, 3, 10, **kw)
    assert groups.gda.primal_average_from is None  # the schedule's window
    binary = plan_module.plan_minimax(1.0, 1e-6, 1347, 64, 1, 2, **kw)
    assert binary.gda.primal_average_from is None


def test_no_momentum_averaging_start_reaches_the_solver(monkeypatch):
    """The estimator's gda run averages from the plan's start: a wide
    one-group multinomial fit passes 0.7 to the solver, a narrow one 0.5."""
    from skdp.solvers.saddle_point import run as run_module

    seen = []
    real = run_module.group_dro_gda

    def spy(*args, **kwargs):
        seen.append(kwargs["primal_average_from"])
        return real(*args, **kwargs)

    monkeypatch.setattr(run_module, "group_dro_gda", spy)
    rng = np.random.default_rng(0)
    for d, K in ((30, 10), (3, 3)):
        X = rng.uniform(-1, 1, size=(400, d))
        y = rng.integers(0, K, size=400)
        MinimaxFairClassifier(
            epsilon=1.0, delta=1e-6, classes=range(K), feature_norm=float(d) ** 0.5,
            random_state=0,
        ).fit(X, y)  # fmt: skip
    assert seen == [0.7, 0.5]


def test_multinomial_clip_scale_rule_is_public_continuous_and_free():
    """The noisy multinomial clip factor is scaled by (0.4 / r)**0.3 above the
    public noise ratio r = 0.4 and kept below it; continuous, decreasing in
    r. It multiplies the public default-norm clip scale, keeps the noiseless
    sqrt(2) limit, leaves the binary plan alone and changes no privacy event
    (every step's sensitivity is 2 clip, noise scaled with it)."""
    scale = plan_module.multinomial_clip_scale
    r0 = plan_module._GDA_CLIP_RATIO
    assert scale(0.0) == scale(r0) == 1.0
    assert scale(4 * r0) == pytest.approx(4.0**-plan_module._GDA_CLIP_POWER)
    grid = np.geomspace(r0 / 2, 20 * r0, 300)
    values = np.array([scale(r) for r in grid])
    assert np.all(np.diff(values) <= 0) and np.max(np.abs(np.diff(values))) < 0.01
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    small = plan_module.plan_minimax(1.0, 1e-6, 300, 10, 1, 5, **kw)
    large = plan_module.plan_minimax(1.0, 1e-6, 10**6, 10, 1, 5, **kw)
    r_small = plan_module.multinomial_noise_ratio(small.noise_multiplier, 300, 11, 5)
    noisy = plan_module._GDA_MULTINOMIAL["clip_factor"]
    assert r_small > r0
    assert small.gda.clip_factor == pytest.approx(noisy * scale(r_small))
    assert large.gda.clip_factor == noisy
    assert small.event == large.event
    # the public default-norm clip scale and the rule multiply
    default_norm = plan_module.plan_minimax(1.0, 1e-6, 100, 10, 1, 5, max_iter=100)
    assert default_norm.default_feature_norm is not None
    r = plan_module.multinomial_noise_ratio(default_norm.noise_multiplier, 100, 11, 5)
    assert default_norm.gda.clip_factor == pytest.approx(
        noisy * scale(r) * plan_module.default_norm_clip_scale(10, 1.0)
    )
    free = plan_module.plan_minimax(np.inf, 1e-6, 300, 10, 1, 5, **kw)
    assert free.gda.clip_factor == pytest.approx(math.sqrt(2.0))
    for n in (300, 10**6):  # the binary loss keeps its own rule (noise ratio, K = 1)
        binary = plan_module.plan_minimax(1.0, 1e-6, n, 10, 1, 2, **kw)
        r = plan_module.multinomial_noise_ratio(binary.noise_multiplier, n, 11, 1)
        rule = 1.0 - (1.0 - plan_module._GDA_BINARY_CLIP_FACTOR) * (
            plan_module._noise_share(r)
        )
        assert binary.gda.clip_factor == pytest.approx(rule)
    assert binary.gda.clip_factor == 1.0  # n = 1e6: the clip never binds
    # through the estimator: the clip actually used
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = rng.integers(0, 3, size=200)
    clf = MinimaxFairClassifier(
        epsilon=1.0, feature_norm=3.0, classes=range(3), random_state=0
    ).fit(X, y)
    r = plan_module.multinomial_noise_ratio(
        plan_module.plan_minimax(
            1.0, clf.delta_, 200, 4, 1, 3, estimate_norm=False, calibration_share=0.1
        ).noise_multiplier,
        200,
        5,
        3,
    )
    assert r > r0
    assert clf.constants_["clip"] == pytest.approx(
        noisy * scale(r) * math.hypot(3.0, 1.0)
    )


def test_default_radius_rule_is_public_and_respects_a_given_radius():
    """radius=None: 5 for the binary loss and while r <= 0.05, 20 from
    r = 0.3 on (geometric in between); a given radius is used as is. The
    rule changes no privacy event."""
    rad = plan_module.multinomial_radius
    lo, hi = plan_module._GDA_MOMENTUM_RATIO
    assert rad(0.0) == rad(lo) == 5.0 and rad(hi) == rad(50.0) == 20.0
    grid = np.geomspace(lo / 2, 2 * hi, 200)
    values = np.array([rad(r) for r in grid])
    assert np.all(np.diff(values) >= 0) and np.max(np.diff(values)) < 0.3
    mid = math.sqrt(lo * hi)
    assert rad(mid) == pytest.approx(10.0)  # halfway in log r: 5 * 4**0.5
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    small = plan_module.plan_minimax(1.0, 1e-6, 300, 10, 1, 5, **kw)
    large = plan_module.plan_minimax(1.0, 1e-6, 10**6, 10, 1, 5, **kw)
    given = plan_module.plan_minimax(1.0, 1e-6, 300, 10, 1, 5, radius=7.0, **kw)
    assert small.radius == small.gda.radius == 20.0
    assert large.radius == large.gda.radius == 5.0
    assert given.radius == given.gda.radius == 7.0
    assert small.event == large.event == given.event
    for n in (300, 10**6):
        for solver in ("gda", "nseg"):
            binary = plan_module.plan_minimax(
                1.0, 1e-6, n, 10, 1, 2, solver=solver, **kw
            )
            assert binary.radius == 5.0
    # through the estimator: the ball actually used
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 4))
    y = rng.integers(0, 3, size=200)
    clf = MinimaxFairClassifier(
        epsilon=1.0, feature_norm=3.0, classes=range(3), random_state=0
    ).fit(X, y)
    assert clf.constants_["radius"] == clf.radius_ == 20.0
    binary = MinimaxFairClassifier(
        epsilon=1.0, feature_norm=3.0, classes=[0, 1], random_state=0
    ).fit(X, (y > 0).astype(int))
    assert binary.radius_ == 5.0
    W = np.vstack([clf.coef_.T, clf.intercept_[None, :]])
    assert np.linalg.norm(W) <= 20.0 + 1e-9


@pytest.mark.parametrize("n", [200, 20000])
def test_fit_runs_the_planned_momentum(monkeypatch, n):
    """The estimator passes the rule's momentum to the solver (small n: the
    noise dominates a step and momentum is off)."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 4))
    y = rng.integers(0, 3, size=n)
    seen = []
    original = gda_module.group_dro_gda

    def spy(*args, **kwargs):
        seen.append(kwargs["momentum"])
        return original(*args, **kwargs)

    monkeypatch.setattr(
        "skdp.solvers.saddle_point.run.group_dro_gda", spy, raising=True
    )
    clf = MinimaxFairClassifier(
        epsilon=1.0, feature_norm=3.0, classes=range(3), random_state=0
    ).fit(X, y)
    r = plan_module.multinomial_noise_ratio(clf.constants_["noise_multiplier"], n, 5, 3)
    assert seen == [clf.constants_["momentum"]]
    assert clf.constants_["momentum"] == pytest.approx(
        plan_module.multinomial_momentum(r)
    )
    assert (clf.constants_["momentum"] == 0.0) == (n == 200)


# --- non-private limit ----------------------------------------------------------------------


def test_one_group_without_noise_is_multinomial_logistic_regression():
    rng = np.random.default_rng(1)
    n, d, K = 400, 3, 4
    X = rng.normal(size=(n, d))
    y = np.argmax(X @ rng.normal(size=(d, K)) + rng.gumbel(size=(n, K)), axis=1)
    bound = np.linalg.norm(X, axis=1).max()  # nothing is clipped
    clf = MinimaxFairClassifier(
        epsilon=np.inf,
        radius=20.0,
        feature_norm=bound,
        max_iter=3000,
        classes=range(K),
        random_state=0,
    ).fit(X, y)
    # Same objective: unpenalised multinomial cross-entropy with intercepts
    # (the optimum is inside the ball).
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10000).fit(X, y)
    assert np.linalg.norm(np.r_[ref.coef_.ravel(), ref.intercept_]) < 20.0
    np.testing.assert_allclose(clf.predict_proba(X), ref.predict_proba(X), atol=1e-4)
    # Both start at 0 and the gradients' class sums are 0: same representative.
    np.testing.assert_allclose(clf.coef_, ref.coef_, atol=2e-3)
    np.testing.assert_allclose(clf.intercept_, ref.intercept_, atol=2e-3)
    assert clf.privacy_spent_[0] == np.inf


def _multinomial_gap(monkeypatch=None, noisy_schedule=False):
    rng = np.random.default_rng(3)
    n, d, K = 2000, 5, 4
    X = rng.normal(size=(n, d))
    y = np.argmax(X @ (rng.normal(size=(d, K)) * 0.6) + rng.gumbel(size=(n, K)), axis=1)
    if noisy_schedule:  # the epsilon = 1 schedule forced at epsilon = inf
        noisy = plan_module.gda_schedule(plan_module._GDA_NOISELESS_Z, True)
        monkeypatch.setattr(plan_module, "gda_schedule", lambda z, **kw: noisy)
    clf = MinimaxFairClassifier(
        epsilon=np.inf,
        radius=20.0,
        feature_norm=np.linalg.norm(X, axis=1).max(),  # nothing is clipped
        classes=range(K),
        random_state=0,
    ).fit(X, y)
    ref = LogisticRegression(C=np.inf, tol=1e-10, max_iter=10000).fit(X, y)
    return clf, log_loss(y, clf.predict_proba(X)) - log_loss(y, ref.predict_proba(X))


def test_default_max_iter_closes_the_multinomial_gap_without_noise(monkeypatch):
    """epsilon=inf at the default max_iter=100: the noiseless end of the
    schedule rule (a larger primal step) brings the multinomial training
    log-loss within 2.5e-5 of scikit-learn's optimum; the noisy schedule
    stays above it (the epsilon = inf gap of issue 17's benchmark)."""
    clf, gap = _multinomial_gap()
    assert clf.n_iter_ == 100 and clf.constants_["noiseless_share"] == 1.0
    assert 0 <= gap < 2.5e-5
    _, noisy_gap = _multinomial_gap(monkeypatch, noisy_schedule=True)
    assert noisy_gap > 2.5e-5


def test_without_noise_the_worst_group_is_served_better_than_by_erm():
    X, y, g = _multiclass_groups_data(n=1500)
    kw = dict(epsilon=np.inf, groups=["a", "b", "c"], classes=range(4), radius=10.0)
    fair = MinimaxFairClassifier(random_state=0, max_iter=400, **kw)
    fair.fit(X, y, sensitive_features=g)
    erm = MinimaxFairClassifier(random_state=0, max_iter=400, dual_step=0.0, **kw)
    erm.fit(X, y, sensitive_features=g)

    def worst(clf):
        logp = clf.predict_log_proba(X)
        nll = -logp[np.arange(len(y)), y]
        return max(nll[g == v].mean() for v in ("a", "b", "c"))

    assert worst(fair) < worst(erm) - 0.01
    # The weight moved towards the group that ERM serves worst.
    nll = -erm.predict_log_proba(X)[np.arange(len(y)), y]
    hardest = int(np.argmax([nll[g == v].mean() for v in ("a", "b", "c")]))
    assert fair.group_weights_[hardest] > 2 * fair.group_priors_[hardest]


# --- estimator behaviour --------------------------------------------------------------------


def test_outputs_have_the_multiclass_shapes():
    X, y, g = _multiclass_groups_data(K=5)
    clf = MinimaxFairClassifier(
        classes=list("vwxyz"), groups=["a", "b", "c"], random_state=0
    )
    labels = np.array(list("vwxyz"))[y]
    clf.fit(X, labels, sensitive_features=g)
    assert clf.coef_.shape == (5, 3) and clf.intercept_.shape == (5,)
    assert clf.decision_function(X).shape == (900, 5)
    proba = clf.predict_proba(X)
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    np.testing.assert_allclose(np.exp(clf.predict_log_proba(X)), proba)
    assert set(clf.predict(X)) <= set("vwxyz")
    np.testing.assert_array_equal(
        clf.predict(X), clf.classes_[clf.decision_function(X).argmax(axis=1)]
    )


@pytest.mark.parametrize("epsilon", [1.0, np.inf])
def test_declared_class_without_examples_fits(epsilon):
    X, y, g = _multiclass_groups_data(K=3)
    clf = MinimaxFairClassifier(
        epsilon=epsilon,
        classes=[0, 1, 2, 7],  # nobody has label 7
        groups=["a", "b", "c"],
        random_state=0,
        feature_norm=3.0,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        clf.fit(X, y, sensitive_features=g)
    proba = clf.predict_proba(X)
    assert proba.shape == (900, 4)
    assert np.all(np.isfinite(clf.coef_))
    if np.isinf(epsilon):
        assert proba[:, 3].max() < 0.05  # the empty class is pushed down


def test_classes_read_from_y_are_a_leak_warning():
    X, y, g = _multiclass_groups_data(K=3)
    with pytest.warns(PrivacyLeakWarning, match="classes"):
        clf = MinimaxFairClassifier(groups=["a", "b", "c"], random_state=0).fit(
            X, y, sensitive_features=g
        )
    np.testing.assert_array_equal(clf.classes_, [0, 1, 2])


def test_multiclass_is_reproducible_and_seeds_differ():
    X, y, g = _multiclass_groups_data(K=3)
    kw = dict(groups=["a", "b", "c"], classes=[0, 1, 2], feature_norm=3.0)
    a = MinimaxFairClassifier(random_state=3, **kw).fit(X, y, sensitive_features=g)
    b = MinimaxFairClassifier(random_state=3, **kw).fit(X, y, sensitive_features=g)
    c = MinimaxFairClassifier(random_state=4, **kw).fit(X, y, sensitive_features=g)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert not np.array_equal(a.coef_, c.coef_)


@pytest.mark.parametrize("solver", ["nseg", "nispp"])
def test_binary_solvers_refuse_more_classes_naming_gda(solver):
    X, y, g = _multiclass_groups_data(K=3)
    with pytest.raises(ValueError, match='solver="gda"'):
        MinimaxFairClassifier(solver=solver, classes=[0, 1, 2]).fit(X, y)


def test_huge_values_are_clipped_and_multiclass_predictions_stay_finite():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = rng.integers(0, 3, size=200)
    X[0], X[1, 0] = 1e300, -1e308
    clf = MinimaxFairClassifier(classes=[0, 1, 2], feature_norm=3.0, random_state=0)
    clf.fit(X, y)
    assert np.all(np.isfinite(clf.coef_))
    Xt = X.copy()
    Xt[2] = 1e308
    proba = clf.predict_proba(Xt)
    assert np.all(np.isfinite(proba))
    np.testing.assert_allclose(proba.sum(axis=1), 1.0)
    assert np.all(np.isfinite(clf.decision_function(Xt)))


def test_default_norm_clip_rule_is_public_and_changes_no_event(monkeypatch):
    """Under the public default feature norm the noisy multinomial clip factor
    is 0.7 times sqrt((d/3 + s^2) / (d + s^2)); a released or given bound,
    the binary loss and epsilon = inf keep theirs; the privacy event (noise
    relative to the sensitivity) is the same as without the rule."""
    # this rule alone (its product with multinomial_clip_scale, active at
    # these small n, is tested in test_multinomial_clip_scale_rule_...)
    monkeypatch.setattr(plan_module, "_GDA_CLIP_RATIO", math.inf)
    scale = plan_module.default_norm_clip_scale
    assert scale(4, 1.0) == pytest.approx(math.sqrt((4 / 3 + 1) / 5))
    assert scale(13, 1.0) == pytest.approx(math.sqrt((13 / 3 + 1) / 14))
    assert scale(5, 0.0) == pytest.approx(1 / math.sqrt(3))
    assert all(1 / math.sqrt(3) < scale(d, 1.0) < 1.0 for d in (1, 4, 64, 10**4))
    small = plan_module.plan_minimax(1.0, 150**-1.1, 112, 4, 1, 3)
    assert small.default_feature_norm == 2.0 and small.gda.noiseless_share == 0.0
    assert small.gda.clip_factor == pytest.approx(0.7 * scale(4, 1.0))
    no_icpt = plan_module.plan_minimax(1.0, 1e-6, 112, 4, 1, 3, fit_intercept=False)
    assert no_icpt.gda.clip_factor == pytest.approx(0.7 / math.sqrt(3))
    # the same plan without the rule: same event, same noise, clip 0.7
    saved = plan_module.default_norm_clip_scale
    plan_module.default_norm_clip_scale = lambda d, s: 1.0
    try:
        before = plan_module.plan_minimax(1.0, 150**-1.1, 112, 4, 1, 3)
    finally:
        plan_module.default_norm_clip_scale = saved
    assert before.gda.clip_factor == 0.7
    assert before.event == small.event
    assert before.noise_multiplier == small.noise_multiplier
    # released bound (large n), binary loss, given bound, epsilon = inf
    large = plan_module.plan_minimax(1.0, 1e-6, 10**5, 4, 1, 3)
    assert large.default_feature_norm is None and large.gda.clip_factor == 0.7
    binary = plan_module.plan_minimax(1.0, 1e-6, 112, 4, 1, 2)
    # the default-norm scale is multinomial only: the binary clip is its
    # noisy rule (0.3 row bounds where the noise dominates, as here)
    assert binary.default_feature_norm == 2.0
    assert binary.gda.clip_factor == pytest.approx(0.3)
    given = plan_module.plan_minimax(1.0, 1e-6, 112, 4, 1, 3, estimate_norm=False)
    assert given.gda.clip_factor == 0.7
    free = plan_module.plan_minimax(np.inf, 1e-6, 112, 4, 1, 3)
    assert free.gda.clip_factor == math.sqrt(2.0)
    # between the noisy and noiseless schedules the share u interpolates
    mid = plan_module.gda_plan(200.0, 1e-6, [], 100, n_classes=3, clip_scale=0.5)
    mid = mid.schedule
    u = mid.noiseless_share
    assert 0.1 < u < 0.9
    assert mid.clip_factor == pytest.approx((1 - u) * 0.35 + u * math.sqrt(2.0))
    # through the estimator: the clip actually used
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, size=(112, 4))
    y = rng.integers(0, 3, size=112)
    with pytest.warns(UserWarning, match="default"):
        clf = MinimaxFairClassifier(epsilon=1.0, classes=range(3), random_state=0)
        clf.fit(X, y)
    bound = math.sqrt(clf.feature_norm_**2 + 1.0)
    assert clf.feature_norm_ == 2.0
    assert clf.constants_["clip"] == pytest.approx(0.7 * scale(4, 1.0) * bound)


def test_multinomial_bound_share_rule_is_public_and_spends_the_same_budget():
    """A multinomial gda fit whose only estimate is the norm bound gives the
    bound a fifth of its share where its quantile stays reachable there; the
    steps get the rest (smaller noise multiplier), the whole plan still meets
    (epsilon, delta). Binary plans, plans with group priors and plans where
    the reduced bound would be out of reach are unchanged."""
    from skdp.privacy import Budget, certify_epsilon

    plan = plan_module.plan_minimax
    share = plan_module._GDA_MULTINOMIAL_BOUND_SHARE
    eps, delta, n, d = 1.0, 1347**-1.1, 1347, 64
    full_mu = Budget.from_target(eps, delta, margin=False).share(0.1).mu
    multi = plan(eps, delta, n, d, 1, 10, max_iter=100)
    binary = plan(eps, delta, n, d, 1, 2, max_iter=100)
    assert multi.estimates == binary.estimates == ("feature_norm",)
    assert binary.estimate_mu == pytest.approx(full_mu)
    assert multi.estimate_mu == pytest.approx(full_mu * math.sqrt(share))
    assert plan_module.multinomial_bound_share(n, full_mu) == share
    # the steps get what the bound leaves, and the whole fit meets the target
    without = plan(eps, delta, n, d, 1, 10, max_iter=100, estimate_norm=False)
    assert without.noise_multiplier < multi.noise_multiplier
    binary_steps = plan(eps, delta, n, d, 1, 2, max_iter=100)
    assert multi.noise_multiplier < binary_steps.noise_multiplier
    assert certify_epsilon(multi.event, delta) <= eps * (1 + 1e-9)
    # unchanged: several groups (priors estimated too), small n (the reduced
    # bound out of reach), and a user share that leaves the reduced bound
    # out of reach
    groups = plan(eps, delta, n, d, 3, 10, max_iter=100)
    mu2 = Budget.from_target(eps, delta, margin=False).share(0.1, 2).mu
    assert groups.estimate_mu == pytest.approx(mu2)
    # (n = 300: the whole share reaches the quantile, a fifth does not; at
    # n = 130 nothing is released at all, which tested no fallback)
    n_small = 300
    small = plan(eps, n_small**-1.1, n_small, 4, 1, 3, max_iter=100)
    assert small.estimates == ("feature_norm",)
    assert small.estimate_mu == pytest.approx(
        Budget.from_target(eps, n_small**-1.1, margin=False).share(0.1).mu
    )
    # through the estimator: privacy spent within the request
    rng = np.random.default_rng(0)
    X = rng.normal(size=(1500, 5)) / 3
    y = rng.integers(0, 3, size=1500)
    clf = MinimaxFairClassifier(epsilon=1.0, classes=range(3), random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        clf.fit(X, y)
    assert clf.privacy_spent_[0] <= 1.0 + 1e-9


def test_earlier_multinomial_average_is_for_one_group_only():
    """With one group the multinomial plan averages from
    multinomial_average_from (0.3 at full momentum); with several groups the
    weights still move early, so the schedule rule's window is kept. The rule
    reads the public number of groups; no privacy event changes."""
    kw = dict(max_iter=100, estimate_priors=False, estimate_norm=False)
    one = plan_module.plan_minimax(1.0, 1e-10, 10**5, 10, 1, 5, **kw)
    three = plan_module.plan_minimax(1.0, 1e-10, 10**5, 10, 3, 5, **kw)
    ratio = plan_module.multinomial_noise_ratio(one.noise_multiplier, 10**5, 11, 5)
    assert one.gda.primal_average_from == pytest.approx(
        plan_module.multinomial_average_from(ratio)
    )
    assert one.gda.primal_average_from < 0.35
    rule = plan_module.gda_schedule(three.noise_multiplier, multinomial=True)
    # None: the primal average starts with the dual one (average_from, 0.5)
    assert three.gda.primal_average_from == rule["primal_average_from"]
    assert three.gda.primal_average_from is None and three.gda.average_from == 0.5
    assert one.event == three.event
    assert one.gda.momentum == three.gda.momentum
