"""Baselines every skdp default is measured against (issue 31).

Each function fits on one view's training arrays and returns a list of
``(config, prediction)`` pairs: ``prediction`` is the test predictions
(regression) or the test class probabilities, columns in class-code order
(classification). ``config`` is ``""`` except for DP-GD's grid.

- :func:`constant`: the training mean or the training class frequencies.
- :func:`sklearn_model`: ``LinearRegression`` or ``LogisticRegression(C=1)``.
- :func:`dpgd`: fixed-clip full-batch DP-GD, a grid of clip norms and step
  sizes; every configuration is returned, the report picks the best one in
  hindsight (non-private and optimistic).
- :func:`adassp`: AdaSSP (Wang 2018) for regression.
- :func:`group_dro`: non-private group DRO (a smooth max over groups).

DP-GD and AdaSSP calibrate their noise with skdp's exact Gaussian-DP
accounting (:func:`skdp.privacy.gdp_mu`), the same budget the estimators get.
Their clip norms and bounds are read from the training rows without privacy
(optimistic for the baseline, stated in every report).
"""

import math

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit, logsumexp, softmax
from sklearn.linear_model import LinearRegression, LogisticRegression

from skdp.privacy import gdp_mu

#: DP-GD grid: per-sample clip norms and step sizes as multiples of 1/L.
DPGD_CLIPS = (0.1, 0.3, 1.0, 3.0, 10.0)
DPGD_STEPS = (0.03, 0.1, 0.3, 1.0)
DPGD_ITERATIONS = 100
#: Huber threshold of DP-GD's Huber loss, in the view's target units.
HUBER_DELTA = 1.0
#: Smoothness of each loss in units of the mean squared (intercept-augmented) row norm.
SMOOTHNESS_FACTOR = {"squared": 1.0, "huber": 1.0, "logistic": 0.25, "softmax": 0.5}
#: AdaSSP: quantile of the training row norms and of |y| that the rows are clipped to,
#: and the failure probability of its eigenvalue bound.
ADASSP_QUANTILE = 0.99
ADASSP_RHO = 0.05
#: Group DRO: temperature of the smooth max over the groups' mean losses.
GROUP_DRO_BETA = 50.0


def with_intercept(X):
    """``X`` with a trailing column of ones."""
    return np.hstack([X, np.ones((X.shape[0], 1))])


def constant(X_train, y_train, X_test, task, n_classes):
    """The training mean (regression) or the training class frequencies."""
    n_test = X_test.shape[0]
    if task == "regression":
        return [("", np.full(n_test, float(np.mean(y_train))))]
    freq = np.bincount(y_train, minlength=n_classes) / len(y_train)
    return [("", np.tile(freq, (n_test, 1)))]


def sklearn_model(X_train, y_train, X_test, task, n_classes):
    """Non-private ``LinearRegression`` or ``LogisticRegression(C=1, max_iter=2000)``."""
    if task == "regression":
        return [("", LinearRegression().fit(X_train, y_train).predict(X_test))]
    model = LogisticRegression(C=1.0, max_iter=2000).fit(X_train, y_train)
    return [("", expand_proba(model.predict_proba(X_test), model.classes_, n_classes))]


def expand_proba(proba, seen_classes, n_classes):
    """Probabilities over all ``n_classes`` codes (zero for a class absent from training)."""
    full = np.zeros((proba.shape[0], n_classes))
    full[:, np.asarray(seen_classes, dtype=int)] = proba
    return full


def dpgd(X_train, y_train, X_test, task, n_classes, epsilon, delta, rng):
    """Fixed-clip full-batch DP-GD over the grid ``DPGD_CLIPS x DPGD_STEPS``.

    ``T = DPGD_ITERATIONS`` full-batch steps from zero on the rows with an
    intercept column, returning the average of the second half of the
    iterates. Per-sample gradients are clipped to ``C``, so the mean gradient
    has replace-one L2 sensitivity ``2C/n``; with ``mu = gdp_mu(epsilon,
    delta)`` each step adds Gaussian noise of standard deviation ``(2C/n)
    sqrt(T) / mu`` per coordinate (T full-batch steps are then exactly
    ``mu``-GDP); none at ``epsilon = inf``. The step is ``step / L`` with
    ``L`` the loss's smoothness on the training rows (mean squared row norm,
    /4 for logistic, /2 for softmax), read without privacy. Regression runs
    the squared and the Huber loss (threshold ``HUBER_DELTA`` in the view's
    target units), classification the logistic (binary) or softmax loss.

    All 20 (or 40) configurations run together: the parameters of every
    configuration are the columns of one matrix, so a step costs two matrix
    products.
    """
    Xa, Xt = with_intercept(X_train), with_intercept(X_test)
    n, d = Xa.shape
    row_sq = np.einsum("ij,ij->i", Xa, Xa)
    row_norm = np.sqrt(row_sq)
    clips = np.repeat(np.asarray(DPGD_CLIPS), len(DPGD_STEPS))
    steps = np.tile(np.asarray(DPGD_STEPS), len(DPGD_CLIPS))
    mu = gdp_mu(epsilon, delta)
    noise_std = (
        np.zeros_like(clips)
        if math.isinf(mu)
        else 2 * clips / n * math.sqrt(DPGD_ITERATIONS) / mu
    )
    if task == "regression":
        losses = ("squared", "huber")
    else:
        losses = ("logistic",) if task == "binary" else ("softmax",)
    out = []
    for loss in losses:
        learning_rates = steps / (SMOOTHNESS_FACTOR[loss] * row_sq.mean())
        if loss == "softmax":
            theta = _dpgd_softmax(
                Xa, y_train, n_classes, row_norm, clips, learning_rates, noise_std, rng
            )
        else:
            theta = _dpgd_scalar(
                Xa, y_train, loss, row_norm, clips, learning_rates, noise_std, rng
            )
        for g, (clip, step) in enumerate(zip(clips, steps)):
            config = f"loss={loss} C={clip:g} step={step:g}"
            if loss == "softmax":
                prediction = softmax(Xt @ theta[:, :, g], axis=1)
            elif loss == "logistic":
                p = expit(Xt @ theta[:, g])
                prediction = np.column_stack([1 - p, p])
            else:
                prediction = Xt @ theta[:, g]
            out.append((config, prediction))
    return out


def _dpgd_scalar(Xa, y, loss, row_norm, clips, learning_rates, noise_std, rng):
    """DP-GD for losses with a scalar residual: parameters of shape (d, n_configs)."""
    n, d = Xa.shape
    theta = np.zeros((d, len(clips)))
    average = np.zeros_like(theta)
    target = y.astype(float)[:, None]
    for t in range(DPGD_ITERATIONS):
        margin = Xa @ theta
        if loss == "squared":
            residual = margin - target
        elif loss == "huber":
            residual = np.clip(margin - target, -HUBER_DELTA, HUBER_DELTA)
        else:  # logistic, y in {0, 1}
            residual = expit(margin) - target
        norms = np.abs(residual) * row_norm[:, None]
        scale = np.minimum(1.0, clips / np.maximum(norms, 1e-300))
        gradient = Xa.T @ (residual * scale) / n
        gradient += rng.standard_normal(theta.shape) * noise_std
        theta = theta - learning_rates * gradient
        if t >= DPGD_ITERATIONS // 2:
            average += theta
    return average / (DPGD_ITERATIONS - DPGD_ITERATIONS // 2)


def _dpgd_softmax(Xa, y, n_classes, row_norm, clips, learning_rates, noise_std, rng):
    """DP-GD for the softmax loss: parameters of shape (d, n_classes, n_configs)."""
    n, d = Xa.shape
    n_configs = len(clips)
    theta = np.zeros((d, n_classes, n_configs))
    average = np.zeros_like(theta)
    one_hot = np.eye(n_classes)[y][:, :, None]
    for t in range(DPGD_ITERATIONS):
        logits = (Xa @ theta.reshape(d, -1)).reshape(n, n_classes, n_configs)
        residual = softmax(logits, axis=1) - one_hot
        norms = np.sqrt((residual**2).sum(axis=1)) * row_norm[:, None]
        scale = np.minimum(1.0, clips / np.maximum(norms, 1e-300))
        residual *= scale[:, None, :]
        gradient = (Xa.T @ residual.reshape(n, -1)).reshape(theta.shape) / n
        gradient += rng.standard_normal(theta.shape) * noise_std
        theta = theta - learning_rates * gradient
        if t >= DPGD_ITERATIONS // 2:
            average += theta
    return average / (DPGD_ITERATIONS - DPGD_ITERATIONS // 2)


def adassp(X_train, y_train, X_test, epsilon, delta, rng):
    """AdaSSP (Wang 2018): noisy sufficient statistics with an adaptive ridge.

    Rows (with an intercept column) are clipped to ``X_b``, the
    ``ADASSP_QUANTILE`` of the training row norms, and ``|y|`` to ``Y_b``, the
    same quantile of ``|y|`` (read without privacy: optimistic). Three
    Gaussian releases share the budget in equal parts of ``mu**2`` (``mu =
    gdp_mu(epsilon, delta)``, so each is ``mu/sqrt(3)``-GDP): the smallest
    eigenvalue of ``X'X`` (replace-one sensitivity ``X_b**2``), ``X'X``
    (upper triangle, Frobenius sensitivity ``sqrt(2) X_b**2``) and ``X'y``
    (``2 X_b Y_b``). As in the paper, the eigenvalue is shifted down by
    ``sigma_1 sqrt(log(6/delta))`` to a high-probability lower bound and the
    ridge is ``max(0, sigma_2 sqrt(d log(2 d**2 / rho)) - lambda_min)``.
    """
    Xa, Xt = with_intercept(X_train), with_intercept(X_test)
    n, d = Xa.shape
    row_norm = np.linalg.norm(Xa, axis=1)
    x_bound = float(np.quantile(row_norm, ADASSP_QUANTILE))
    y_bound = max(float(np.quantile(np.abs(y_train), ADASSP_QUANTILE)), 1e-12)
    Xc = Xa * np.minimum(1.0, x_bound / np.maximum(row_norm, 1e-300))[:, None]
    yc = np.clip(y_train, -y_bound, y_bound)
    gram, moment = Xc.T @ Xc, Xc.T @ yc
    lam_min = float(np.linalg.eigvalsh(gram)[0])
    mu_each = gdp_mu(epsilon, delta) / math.sqrt(3)
    if math.isinf(mu_each):
        ridge = 0.0
    else:
        sigma_eig = x_bound**2 / mu_each
        sigma_gram = math.sqrt(2) * x_bound**2 / mu_each
        sigma_moment = 2 * x_bound * y_bound / mu_each
        lam_private = max(
            lam_min
            + sigma_eig * rng.standard_normal()
            - sigma_eig * math.sqrt(math.log(6 / delta)),
            0.0,
        )
        upper = np.triu(rng.standard_normal((d, d)) * sigma_gram)
        gram = gram + upper + np.triu(upper, 1).T
        moment = moment + rng.standard_normal(d) * sigma_moment
        ridge = max(
            0.0,
            sigma_gram * math.sqrt(d * math.log(2 * d**2 / ADASSP_RHO)) - lam_private,
        )
    theta = np.linalg.lstsq(gram + ridge * np.eye(d), moment, rcond=None)[0]
    return [("", Xt @ theta)]


def group_dro(X_train, y_train, groups_train, X_test, task, n_classes):
    """Non-private group DRO: L-BFGS on a smooth max over the groups' mean losses.

    Minimises ``(1/beta) log sum_g exp(beta L_g(theta)) + |w|**2 / (2 n)``
    with ``beta = GROUP_DRO_BETA``, ``L_g`` the mean logistic (binary) or
    softmax (multiclass) loss of group ``g``'s training rows, and the ridge of
    ``LogisticRegression(C=1)`` in mean form (intercept not penalised).
    """
    Xa, Xt = with_intercept(X_train), with_intercept(X_test)
    n, d = Xa.shape
    levels, group_index = np.unique(groups_train, return_inverse=True)
    group_sizes = np.bincount(group_index)
    binary = task == "binary"
    k = 1 if binary else n_classes
    one_hot = np.eye(n_classes)[y_train]
    penalised = np.ones((d, k))
    penalised[-1] = 0.0

    def objective(flat):
        W = flat.reshape(d, k)
        Z = Xa @ W
        if binary:
            z = Z[:, 0]
            per_row = np.logaddexp(0.0, z) - y_train * z
            residual = (expit(z) - y_train)[:, None]
        else:
            per_row = logsumexp(Z, axis=1) - (Z * one_hot).sum(axis=1)
            residual = softmax(Z, axis=1) - one_hot
        group_loss = np.bincount(group_index, weights=per_row) / group_sizes
        weights = softmax(GROUP_DRO_BETA * group_loss)
        value = logsumexp(GROUP_DRO_BETA * group_loss) / GROUP_DRO_BETA
        row_weight = weights[group_index] / group_sizes[group_index]
        gradient = Xa.T @ (residual * row_weight[:, None])
        value += 0.5 * np.sum(penalised * W**2) / n
        gradient += penalised * W / n
        return value, gradient.ravel()

    result = minimize(
        objective,
        np.zeros(d * k),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": 1000},
    )
    W = result.x.reshape(d, k)
    if binary:
        p = expit(Xt @ W[:, 0])
        return [("", np.column_stack([1 - p, p]))]
    return [("", softmax(Xt @ W, axis=1))]


#: One sentence per baseline for the reports' headers (what it is, what it assumes).
NOTES = {
    "constant": "constant: the training mean (regression) or training class frequencies.",
    "sklearn": "sklearn: non-private LinearRegression / LogisticRegression(C=1, max_iter=2000).",
    "dpgd": (
        f"dpgd: fixed-clip full-batch DP-GD, T = {DPGD_ITERATIONS} steps from 0, average of the "
        "second half of the iterates, intercept column; squared and Huber (threshold "
        f"{HUBER_DELTA:g} in the view's target units) loss for regression, logistic / softmax "
        f"for classification; C in {DPGD_CLIPS} x step in {DPGD_STEPS}/L with L the loss's "
        "smoothness on the training rows (read without privacy: optimistic); noise from skdp's "
        "exact GDP calibration; the configuration is chosen in hindsight (optimistic)."
    ),
    "adassp": (
        "adassp: AdaSSP (Wang 2018) with an intercept column, rows clipped at the "
        f"{ADASSP_QUANTILE:g}-quantile of the training row norms and |y| at the same quantile "
        "of |y| (read without privacy: optimistic); its three Gaussian releases share mu**2 "
        "equally (exact GDP)."
    ),
    "group_dro": (
        f"group_dro: non-private group DRO, smooth max (beta = {GROUP_DRO_BETA:g}) of the "
        "groups' mean logistic / softmax losses plus LogisticRegression(C=1)'s ridge, L-BFGS."
    ),
}
