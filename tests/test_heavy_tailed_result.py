"""The heavy-tailed solvers' one result type and the public rules moved into them."""

import math

import numpy as np
import pytest

from skdp.losses import LogisticLoss, SquaredLoss
from skdp.solvers.heavy_tailed import (
    gd,
    known_lipschitz,
    localized,
    multinomial,
    onepass,
)
from skdp.solvers.heavy_tailed.result import HeavyTailedResult


def _data(n=600, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_t(5, size=(n, d))
    y = X @ np.arange(1.0, d + 1.0) + 0.5 + rng.normal(size=n)
    return X, y


def test_weights_and_intercept_of_a_vector():
    coef = np.array([2.0, -1.0, 0.5])
    res = HeavyTailedResult(coef, np.ones(3), np.ones(3), 3, fit_intercept=True)
    np.testing.assert_array_equal(res.weights, [2.0, -1.0])
    assert res.intercept == 0.5 and isinstance(res.intercept, float)
    res = HeavyTailedResult(coef, np.ones(3), np.ones(3), 3)
    np.testing.assert_array_equal(res.weights, coef)
    assert res.intercept == 0.0


def test_weights_and_intercept_of_a_softmax_matrix():
    W = np.arange(12.0).reshape(4, 3)  # (d + 1, K)
    res = HeavyTailedResult(W, np.ones(2), np.ones(2), 2, fit_intercept=True)
    np.testing.assert_array_equal(res.weights, W[:-1].T)
    np.testing.assert_array_equal(res.intercept, W[-1])
    res.intercept[0] = -1.0  # a copy, not a view of coef
    assert W[-1, 0] == 9.0
    res = HeavyTailedResult(W, np.ones(2), np.ones(2), 2)
    np.testing.assert_array_equal(res.weights, W.T)
    np.testing.assert_array_equal(res.intercept, np.zeros(3))


def _runs():
    X, y = _data()
    ys = np.sign(y - np.median(y))
    n, d = X.shape
    labels = np.digitize(X[:, 0], [-0.5, 0.5])
    fb = gd.make_full_batch_plan(1.0, n, d, 10)
    kl = known_lipschitz.make_known_lipschitz_plan(1.0, n, d + 1, 10)
    op = onepass.make_onepass_plan(1.0, n, d + 1, n_scales=0)
    lo = localized.make_localized_plan(1.0, n, d + 1, 10, n_scales=0)
    mn = known_lipschitz.make_known_lipschitz_plan(1.0, n, (d + 1) * 3, 10)
    ovr = multinomial.make_shared_ovr_plan(1.0, n, d + 1, 10, 3)
    kw = {"fit_intercept": True}
    return [
        (
            "clipped_dp_gd",
            fb,
            False,
            lambda rng: gd.clipped_dp_gd(
                X, y, SquaredLoss(), fb, rng, step_size=0.5, clip=5.0
            ),
        ),
        (
            "known_lipschitz",
            kl,
            True,
            lambda rng: known_lipschitz.known_lipschitz(
                X, ys, LogisticLoss(), kl, rng, step_size=1.0, **kw
            ),
        ),
        (
            "onepass",
            op,
            True,
            lambda rng: onepass.onepass_clipped_dp_sgd(
                X, y, SquaredLoss(), op, rng, step_size=0.01, clip=5.0, **kw
            ),
        ),
        (
            "localized",
            lo,
            True,
            lambda rng: localized.localized_dp_sgd(
                X, y, SquaredLoss(), lo, rng, step_size=0.5, clip=5.0, **kw
            ),
        ),
        (
            "multinomial",
            mn,
            True,
            lambda rng: multinomial.multinomial_dp_gd(
                X, labels, 3, mn, rng, step_size=1.0, **kw
            ),
        ),
    ] + [
        (
            f"ovr[{k}]",
            ovr,
            True,
            lambda rng, k=k: multinomial.ovr_dp_gd(
                X, labels, 3, ovr, rng, step_size=1.0, **kw
            )[k],
        )
        for k in range(3)
    ]


@pytest.mark.parametrize("name, plan, intercept, run", _runs(), ids=lambda v: v)
def test_every_solver_returns_the_one_result_type(name, plan, intercept, run):
    res = run(np.random.default_rng(0))
    assert type(res) is HeavyTailedResult
    assert res.plan is plan
    assert res.fit_intercept is intercept
    assert res.n_iter > 0 and np.all(np.isfinite(res.coef))
    assert np.shape(res.clip_levels) == np.shape(res.step_sizes)
    assert res.feature_scale > 0
    full_batch = name.startswith(("known", "multinomial", "ovr"))
    assert (res.truncation is not None) == full_batch
    assert (res.row_caps is not None) == (name == "onepass")
    assert (res.regularization is not None) == (name == "localized")


def test_theorem2_clip_is_the_closed_form():
    plan = gd.make_full_batch_plan(0.8, 5000, 4, 30)
    rho = 0.5 * plan.n_steps / plan.z_grad**2  # zCDP of the T gradient steps
    G_k, k, dim = 3.0, 4, 12
    expected = G_k * (5000 * math.sqrt(rho) / math.sqrt(dim)) ** (1 / k)
    got = known_lipschitz.theorem2_clip(plan, 5000, dim, G_k, k)
    assert got == pytest.approx(expected, rel=1e-12)
    infinite = gd.make_full_batch_plan(np.inf, 5000, 4, 30)
    assert known_lipschitz.theorem2_clip(infinite, 5000, dim, G_k, k) == math.inf


def test_corollary1_parameters_are_the_closed_form():
    plan = localized.make_localized_plan(1.0, 8000, 3, 20, n_scales=0)
    run = plan.runs[0]
    rho = 0.5 * run.n_steps / run.z_grad**2
    clip, radius = localized.corollary1_parameters(plan, 3, G_k=2.0, G_2=0.5, k=3)
    m = 700
    assert clip(m) == pytest.approx(
        2.0 * (25 * m * m * rho / (32 * 3)) ** (1 / 6), rel=1e-12
    )
    assert radius(4.0) == 2.0 * 0.5 / 4.0  # G_1 = G_2
    clip, radius = localized.corollary1_parameters(plan, 3, G_k=2.0)
    assert radius(4.0) == 2.0 * 2.0 / 4.0  # G_1 = G_k
    assert localized.corollary1_parameters(plan, 3) == (None, None)


def test_onepass_schedule():
    n, d = 10_000, 4
    plan = onepass.make_onepass_plan(1.0, n, d, n_scales=0)
    practical = onepass.onepass_schedule(plan, n, d, 0.25)
    assert practical == {
        "step_size": min(0.5, onepass.PRACTICAL_STEP / math.sqrt(n)) / 0.25,
        "clip": None,
        "step_decay": onepass.PRACTICAL_DECAY,
        "tail_average": onepass.PRACTICAL_TAIL,
    }
    assert onepass.onepass_schedule(plan, n, d, 0.25, step_size=0.3)["step_size"] == 0.3
    paper = onepass.onepass_schedule(plan, n, d, 0.25, G_k=6.0, k=4, radius=5.0)
    rho = 0.5 / plan.z_out[0] ** 2
    eta, C = onepass.paper_onepass_parameters(n, d, rho, 4, 6.0, 6.0, 10.0)
    assert paper == {
        "step_size": eta / onepass.STEP_DECAY,
        "clip": C * onepass.CLIP_GROWTH,
        "step_decay": onepass.STEP_DECAY,
        "tail_average": 0.0,
    }


def test_multiclass_step_rules():
    n, d, K = 20_000, 4, 3
    softmax = known_lipschitz.make_known_lipschitz_plan(1.0, n, d * K, 30)
    assert softmax.gd.checkpoints  # a private clip search
    p = softmax.gd.clip_fraction
    assert multinomial.multiclass_step(softmax) == multinomial.multinomial_step_size(p)
    assert multinomial.multiclass_step(softmax, 0.7) == 0.7
    assert multinomial.multiclass_step(softmax, public_clip=True) == (
        gd.practical_step_size(multinomial.MULTINOMIAL_CURVATURE, p)
    )
    ovr = multinomial.make_shared_ovr_plan(1.0, n, d, 30, K)
    assert multinomial.multiclass_step(ovr, shared_ovr=True) == (
        gd.practical_step_size(LogisticLoss().curvature_bound, ovr.gd.clip_fraction)
    )
    fixed = known_lipschitz.make_known_lipschitz_plan(
        1.0, n, d * K, 30, adaptive_clip=False
    )
    assert not fixed.gd.checkpoints  # no search: the step of a small clipped fraction
    assert multinomial.multiclass_step(fixed) == multinomial.multinomial_step_size(0.0)
