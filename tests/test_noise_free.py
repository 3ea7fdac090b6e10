"""The noise-free limit (skdp/solvers/noise_free.py): epsilon=inf reaches the
minimum of the estimator's own objective, also where a fixed number of
gradient steps cannot (features in very different units, rare one-hot
columns)."""

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.optimize import minimize
from sklearn.linear_model import LinearRegression

from skdp import HeavyTailedLinearRegression
from skdp.losses import HuberLoss, SquaredLoss
from skdp.solvers.noise_free import minimise_noise_free


def _ill_conditioned(n=3000, seed=0):
    """Columns in units 1e4, 1 and 1e-2, a rare dummy and a large offset: a
    condition number near 1e12, where 100 steps of 1/L gradient descent move
    the small-unit coefficients by almost nothing."""
    rng = np.random.default_rng(seed)
    X = np.column_stack(
        [
            5e4 + 1e4 * rng.standard_normal(n),
            rng.standard_normal(n),
            1e-2 * rng.standard_normal(n),
            (rng.random(n) < 0.01).astype(float),
        ]
    )
    w = np.array([3e-4, -1.0, 80.0, 2.0])
    y = X @ w + 4.0 + rng.standard_normal(n)
    return X, y


def _objective(X, y, loss, w):
    return float(np.mean(loss.value(X @ w, y)))


def test_least_squares_is_exact_and_never_worse_than_the_start():
    X, y = _ill_conditioned()
    Xa = np.column_stack([X, np.ones(len(X))])
    exact = np.linalg.lstsq(Xa, y, rcond=None)[0]
    w = minimise_noise_free(Xa, y, SquaredLoss(), np.zeros(5))
    np.testing.assert_allclose(w, exact, rtol=1e-8)
    # started at the minimiser, it stays there
    np.testing.assert_allclose(
        minimise_noise_free(Xa, y, SquaredLoss(), exact), exact, rtol=1e-8
    )


@pytest.mark.parametrize("sparse", [False, True])
def test_huber_reaches_the_minimum_in_original_units(sparse):
    X, y = _ill_conditioned()
    y = y + np.random.default_rng(1).standard_t(1.5, size=len(y))  # outliers
    Xa = np.column_stack([X, np.ones(len(X))])
    loss = HuberLoss(1.0)
    # the reference: L-BFGS on standardised columns, mapped back, then checked
    # in the original units
    scale = np.sqrt(np.mean(Xa**2, axis=0))
    ref = minimize(
        lambda v: _objective(Xa / scale, y, loss, v),
        np.zeros(5),
        jac=lambda v: loss.gradient(Xa / scale, y, v),
        method="BFGS",
        options={"gtol": 1e-12, "maxiter": 10_000},
    )
    best = _objective(Xa, y, loss, ref.x / scale)
    design = sp.csr_matrix(Xa) if sparse else Xa
    w = minimise_noise_free(design, y, loss, np.zeros(5))
    assert _objective(Xa, y, loss, w) <= best * (1 + 1e-6) + 1e-9
    # a worse start than the descent gives changes nothing about the limit
    assert _objective(Xa, y, loss, w) < _objective(Xa, y, loss, np.zeros(5)) / 10


def test_no_rows_returns_the_start():
    w0 = np.array([1.0, 2.0])
    out = minimise_noise_free(np.zeros((0, 2)), np.zeros(0), SquaredLoss(), w0)
    np.testing.assert_array_equal(out, w0)


@pytest.mark.parametrize("loss", ["squared", "huber"])
def test_default_estimator_at_inf_reaches_its_objective_minimum(loss):
    # the bar: training objective at most 1.01x the minimum + 1e-3,
    # on an ill-conditioned design, with the default max_iter
    X, y = _ill_conditioned()
    model = HeavyTailedLinearRegression(loss=loss, epsilon=np.inf).fit(X, y)
    Xa = np.column_stack([X, np.ones(len(X))])
    glm = SquaredLoss() if loss == "squared" else HuberLoss(1.0)
    fitted = np.append(model.coef_, model.intercept_)
    best = _objective(Xa, y, glm, minimise_noise_free(Xa, y, glm, np.zeros(5)))
    assert _objective(Xa, y, glm, fitted) <= 1.01 * best + 1e-3
    if loss == "squared":
        ref = LinearRegression().fit(X, y)
        np.testing.assert_allclose(model.coef_, ref.coef_, rtol=1e-6)
        assert model.intercept_ == pytest.approx(ref.intercept_, rel=1e-6)
    assert model.privacy_spent_[0] == np.inf


def test_finite_epsilon_does_not_take_the_noise_free_path():
    # at a huge but finite budget the fit is still the private descent: on
    # this design its 30 steps cannot reach the least-squares solution
    X, y = _ill_conditioned()
    ref = LinearRegression().fit(X, y)
    private = HeavyTailedLinearRegression(epsilon=1e6, random_state=0).fit(X, y)
    assert abs(private.coef_[2] - ref.coef_[2]) > 1.0
    exact = HeavyTailedLinearRegression(epsilon=np.inf, random_state=0).fit(X, y)
    assert abs(exact.coef_[2] - ref.coef_[2]) < 1e-6 * abs(ref.coef_[2])
