"""GLM losses: derivatives, curvature bounds and clipping."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from skdp.losses import HuberLoss, LogisticLoss, SquaredLoss, get_loss

LOSSES = [SquaredLoss(), HuberLoss(0.7), LogisticLoss()]


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_derivative_matches_finite_differences(loss):
    rng = np.random.default_rng(0)
    z = rng.normal(scale=3, size=50)
    y = (
        np.sign(rng.normal(size=50))
        if isinstance(loss, LogisticLoss)
        else rng.normal(size=50)
    )
    for zi, yi in zip(z, y):
        fd = approx_fprime(np.array([zi]), lambda t, yi=yi: loss.value(t, yi)[0], 1e-7)[
            0
        ]
        assert loss.derivative(np.array([zi]), np.array([yi]))[0] == pytest.approx(
            fd, abs=1e-4
        )


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_curvature_bound_holds(loss):
    z = np.linspace(-20, 20, 4001)
    y = np.ones_like(z)
    second = np.diff(loss.derivative(z, y)) / np.diff(z)
    assert second.max() <= loss.curvature_bound + 1e-6
    assert second.max() >= 0.9 * loss.curvature_bound  # the bound is attained


@pytest.mark.parametrize("loss", LOSSES, ids=lambda l: type(l).__name__)
def test_clipped_gradients_are_scaled_rows_with_bounded_norm(loss):
    rng = np.random.default_rng(1)
    X = rng.standard_t(2, size=(300, 4))
    X[0] = 0.0
    y = (
        np.sign(rng.normal(size=300))
        if isinstance(loss, LogisticLoss)
        else rng.normal(size=300) * 5
    )
    w = rng.normal(size=4)
    C = 0.5
    G = loss.clipped_gradients(X, y, w, C)
    assert np.all(np.linalg.norm(G, axis=1) <= C + 1e-12)
    full = loss.derivative(X @ w, y)[:, None] * X
    norms = np.linalg.norm(full, axis=1)
    small = norms <= C
    np.testing.assert_allclose(G[small], full[small])  # unclipped rows unchanged
    big = ~small
    np.testing.assert_allclose(G[big], full[big] * (C / norms[big])[:, None])
    np.testing.assert_allclose(loss.clipped_gradient_sum(X, y, w, C), G.sum(axis=0))
    # No clipping at C = inf.
    np.testing.assert_allclose(loss.clipped_gradients(X, y, w, np.inf), full)


def test_gradient_matches_sklearn_objective_scale():
    rng = np.random.default_rng(2)
    X, w = rng.normal(size=(100, 3)), rng.normal(size=3)
    y = rng.normal(size=100)
    g = SquaredLoss().gradient(X, y, w)
    np.testing.assert_allclose(g, X.T @ (X @ w - y) / 100)


def test_get_loss():
    assert isinstance(get_loss("logistic"), LogisticLoss)
    with pytest.raises(ValueError, match="Unknown loss"):
        get_loss("hinge")
    with pytest.raises(ValueError):
        HuberLoss(0.0)


def test_losses_own_their_kernel_code_and_lipschitz_bounds():
    """Each loss carries what the solvers used to read from isinstance chains:
    its kernel code, whether y holds labels, where it is Lipschitz, and its
    per-row Lipschitz bound on a ball."""
    norms, y = np.array([2.0, 0.0]), np.array([-3.0, 1.0])
    assert SquaredLoss().kernel_args() == (0, 0.0)
    assert HuberLoss(0.5).kernel_args() == (1, 0.5)
    assert LogisticLoss().kernel_args() == (2, 0.0)
    assert [L.labels for L in (SquaredLoss(), HuberLoss(), LogisticLoss())] == [
        False,
        False,
        True,
    ]
    assert not SquaredLoss().lipschitz_on(np.inf)
    assert SquaredLoss().lipschitz_on(5.0)
    assert HuberLoss().lipschitz_on(np.inf) and LogisticLoss().lipschitz_on(np.inf)
    np.testing.assert_array_equal(
        SquaredLoss().row_lipschitz_bounds(norms, y, 5.0), [2 * (10 + 3), 0.0]
    )
    np.testing.assert_array_equal(
        SquaredLoss().row_lipschitz_bounds(norms, y, np.inf), norms
    )
    np.testing.assert_array_equal(
        HuberLoss(0.5).row_lipschitz_bounds(norms, y, 5.0), [1, 0]
    )
    np.testing.assert_array_equal(
        LogisticLoss().row_lipschitz_bounds(norms, y, 5.0), norms
    )


def test_huber_tau_must_be_finite_and_kernel_args_need_a_kernel():
    """tau = inf would give infinite per-row Lipschitz bounds (it is the
    squared loss); a loss without a compiled kernel says so."""
    with pytest.raises(ValueError, match="finite"):
        HuberLoss(np.inf)

    class NoKernel(SquaredLoss):
        kernel_code = None

    with pytest.raises(TypeError, match="No compiled kernel"):
        NoKernel().kernel_args()
