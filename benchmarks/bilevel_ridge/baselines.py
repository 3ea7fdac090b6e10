"""Private ridge baselines for ``benchmarks/bilevel_ridge/main.py``.

All baselines follow the same privacy model as ``skdp.BilevelRidge``
(replace-one, public bounds, rows clipped to ``feature_norm``, targets to
``target_bound``, an unpenalized intercept through a public constant column)
and spend the same total ``(epsilon, delta)``:

- :func:`ssp_ridge`: sufficient-statistics perturbation (one release of the
  Gram matrix and moment vector of the given rows, then the ridge solution at
  any list of penalties for free). Used for the fixed-alpha grid rows.
- :func:`grid_search_split`: private grid search with the budget split over
  ``K`` separate fits on the training part, and a private selection on the
  validation part (report-noisy-min, i.e. the exponential mechanism).
- :func:`grid_search_statistics`: the strong version: the training statistics
  are released once (all ``K`` fits for free), then one private selection.
- :func:`adassp`: AdaSSP (Wang 2018), with its three releases calibrated in
  GDP units.

The validation part is disjoint from the training part, so the selection (a
pure ``epsilon``-DP step on validation records) composes in parallel with the
training releases: each record pays for one of them.
"""

import math

import numpy as np

from skdp._testing.internals import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
    release_statistics,
)
from skdp.privacy import gdp_mu
from skdp.utils import clip_rows, clip_targets


def normalize(X, y, feature_norm, target_bound):
    """Clip to the public bounds, then scale them to 1."""
    return (
        clip_rows(X, feature_norm) / feature_norm,
        clip_targets(y, target_bound) / target_bound,
    )


def _stds(mu):
    """Noise of a statistics release spending ``mu`` (Gram and moment halves)."""
    if math.isinf(mu):
        return 0.0, 0.0
    half = mu / math.sqrt(2.0)
    return gram_sensitivity(1.0, 1.0) / half, moment_sensitivity(1.0, 1.0, 1.0) / half


def _to_original(coef, intercept, feature_norm, target_bound):
    return coef * target_bound / feature_norm, intercept * target_bound


def ssp_ridge(X, y, alphas, mu, rng, feature_norm, target_bound):
    """Ridge at each alpha (scikit-learn units) from one private release.

    Returns a list of ``(coef, intercept)`` in original units.
    """
    Xn, yn = normalize(X, y, feature_norm, target_bound)
    gs, ms = _stds(mu)
    (raw,) = release_statistics(
        [exact_statistics(Xn, yn, 1.0)], gram_std=gs, moment_std=ms, rng=rng
    )
    stats = raw.centered()
    a2 = feature_norm**2
    return [
        _to_original(*stats.solve(a / a2), feature_norm, target_bound) for a in alphas
    ]


def _select(models, X_val, y_val, epsilon, rng, target_bound):
    """Report-noisy-min over the clipped validation loss (pure epsilon-DP).

    Predictions and targets are clipped to ``[-B, B]``, so each record's loss
    ``(p - y)**2 / 2`` lies in ``[0, 2 B**2]`` and the mean loss has
    replace-one sensitivity ``2 B**2 / n_val``. Gumbel noise of scale
    ``2 Delta / epsilon`` on the losses is the exponential mechanism.
    """
    b = target_bound
    y_c = np.clip(y_val, -b, b)
    losses = np.array(
        [0.5 * np.mean((np.clip(X_val @ c + i, -b, b) - y_c) ** 2) for c, i in models]
    )
    if math.isinf(epsilon):
        return int(np.argmin(losses))
    scale = 2.0 * (2.0 * b * b / y_val.size) / epsilon
    return int(np.argmin(losses - scale * rng.gumbel(size=losses.size)))


def grid_search_split(X_tr, y_tr, X_val, y_val, alphas, epsilon, delta, rng, bounds):
    """Budget split over K fits on the training part; private selection on val."""
    mu = gdp_mu(epsilon, delta) if not math.isinf(epsilon) else math.inf
    mu_each = mu / math.sqrt(len(alphas))
    models = [ssp_ridge(X_tr, y_tr, [a], mu_each, rng, *bounds)[0] for a in alphas]
    k = _select(models, X_val, y_val, epsilon, rng, bounds[1])
    return models[k], alphas[k]


def grid_search_statistics(
    X_tr, y_tr, X_val, y_val, alphas, epsilon, delta, rng, bounds
):
    """Training statistics released once; one private selection on val."""
    mu = gdp_mu(epsilon, delta) if not math.isinf(epsilon) else math.inf
    models = ssp_ridge(X_tr, y_tr, alphas, mu, rng, *bounds)
    k = _select(models, X_val, y_val, epsilon, rng, bounds[1])
    return models[k], alphas[k]


def adassp(X, y, epsilon, delta, rng, feature_norm, target_bound, rho=0.05):
    """AdaSSP (Wang 2018, Alg. 2) with an unpenalized intercept.

    Three releases share the GDP budget equally: the smallest eigenvalue of
    ``X^T X`` (replace-one sensitivity ``A**2`` by Weyl's inequality), the
    augmented Gram matrix and the moment vector (same sensitivities as
    ``BilevelRidge``'s statistics). The penalty is Wang's
    ``max(0, sigma_G sqrt(d log(2 d**2 / rho)) - lambda_min~)`` with
    ``lambda_min~ = max(0, lambda_min + sigma_l Z - sigma_l sqrt(log(6/delta)))``.
    """
    Xn, yn = normalize(X, y, feature_norm, target_bound)
    n, d = Xn.shape
    if math.isinf(epsilon):
        sl = sg = sm = 0.0
    else:
        third = gdp_mu(epsilon, delta) / math.sqrt(3.0)
        sl = 1.0 / third
        sg = gram_sensitivity(1.0, 1.0) / third
        sm = moment_sensitivity(1.0, 1.0, 1.0) / third
    lam_min = float(np.linalg.eigvalsh(Xn.T @ Xn)[0])
    lam_min = max(
        0.0, lam_min + sl * rng.normal() - sl * math.sqrt(math.log(6 / delta))
    )
    lam = max(0.0, sg * math.sqrt(d * math.log(2 * d * d / rho)) - lam_min)
    (raw,) = release_statistics(
        [exact_statistics(Xn, yn, 1.0)], gram_std=sg, moment_std=sm, rng=rng
    )
    coef, intercept = raw.centered().solve(max(lam, 1e-12))
    return _to_original(
        coef, intercept, feature_norm, target_bound
    ), lam * feature_norm**2
