"""Pinned private linear-regression baselines shared by the benchmarks.

Everything here is a *baseline*: code the benchmarks compare skdp with, in
the same process, on the same data and with the same ``(epsilon, delta)``.
Replace-one neighbours, ``n`` public.

- :func:`dp_gd_fixed_clip`: full-batch DP-GD, ``T = 100`` steps, per-sample
  gradients (squared loss ``(x w + b - y)**2 / 2``, constant column 1 for
  the intercept) clipped to a fixed ``C`` **in the units of the data as
  given** (the per-sample gradient norm ``|x w + b - y| ||(x, 1)||``), noise
  ``N(0, (2 C z / n)**2)`` on the mean with ``z = sqrt(T) / mu`` (exactly
  ``mu``-GDP, ``mu = gdp_mu(epsilon, delta)``), output the average of the
  iterates of the second half. :data:`CLIPS` ``= (0.1, 1, 10)``;
  :func:`tune_dp_gd_steps` picks each clip's step from :data:`STEP_GRID`
  (times ``1 / L``, ``L`` the largest eigenvalue of the replicate's
  ``X^T X / n`` with the column of ones) by the median score on an
  independent replicate (non-private tuning: the baseline is an upper bound
  on what a user could tune). "Best fixed clip" is the clip with the best
  median score, chosen in hindsight.
- :func:`tukey_em`: TukeyEM (Amin, Joseph, Ribero and Vassilvitskii, "Easy
  differentially private linear regression", ICLR 2023), **simplified**: the
  ``m`` OLS models of disjoint random parts, then the exponential mechanism
  with utility the approximate (coordinate-wise) Tukey depth, sensitivity 1,
  over a **public box** ``[-b, b]**(d + 1)`` instead of the paper's
  propose-test-release restriction to the deep region. It is pure
  ``epsilon``-DP (stronger than ``(epsilon, delta)``), and weaker than the
  paper at small ``n``: the box's shallow volume competes with the deep
  region, which the paper's PTR step removes at the cost of ``delta`` and a
  possible refusal to answer.
- AdaSSP and the two private grid searches are those of
  ``benchmarks/bilevel_ridge/baselines.py``.

``delta = min(1e-6, 1 / n**2)`` in the benchmarks that use this module.
"""

import math

import numpy as np

from benchmarks._common import benchmark_delta  # noqa: F401 (re-exported)
from skdp._testing.internals import clipped_gradient_sum
from skdp.losses import SquaredLoss
from skdp.privacy import gdp_mu

CLIPS = (0.1, 1.0, 10.0)
STEP_GRID = (0.03, 0.1, 0.3, 1.0)
N_STEPS = 100


def _with_ones(X):
    return np.hstack([X, np.ones((X.shape[0], 1))])


def curvature(X):
    """Largest eigenvalue of ``[X, 1]^T [X, 1] / n`` (used on replicates)."""
    Xa = _with_ones(np.asarray(X, dtype=float))
    return float(np.linalg.eigvalsh(Xa.T @ Xa / Xa.shape[0])[-1])


def dp_gd_fixed_clip(X, y, epsilon, delta, clip, step, rng, n_steps=N_STEPS):
    """Full-batch DP-GD at a fixed clip (see the module docstring).

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    epsilon, delta : float
    clip : float
        Per-sample gradient norm bound, data units.
    step : float
        Absolute step size.
    rng : numpy.random.Generator
    n_steps : int, default=N_STEPS

    Returns
    -------
    (coef, intercept)
    """
    Xa = np.ascontiguousarray(_with_ones(np.asarray(X, dtype=float)))
    y = np.ascontiguousarray(y, dtype=float)
    n, d = Xa.shape
    inv_norms = 1.0 / np.linalg.norm(Xa, axis=1)  # >= 1 thanks to the ones
    mu = math.inf if math.isinf(epsilon) else gdp_mu(epsilon, delta)
    std = 0.0 if math.isinf(mu) else 2.0 * clip * math.sqrt(n_steps) / mu / n
    w = np.zeros(d)
    acc, k = np.zeros(d), 0
    loss = SquaredLoss()
    with np.errstate(all="ignore"):
        for t in range(n_steps):
            # sum of per-sample gradients (x w - y) x clipped to norm `clip`
            # (skdp's compiled kernel, the same arithmetic as numpy)
            g = clipped_gradient_sum(Xa, y, w, inv_norms, clip, loss) / n
            if std > 0:
                g = g + std * rng.normal(size=d)
            w = w - step * g
            if not np.all(np.isfinite(w)):
                w = np.zeros(d)  # a diverged run returns the zero model
            if t >= n_steps // 2:
                acc += w
                k += 1
    w = acc / k
    return w[:-1], float(w[-1])


def tune_dp_gd_steps(replicate, epsilon, score, seeds=2):
    """Step of each clip, tuned on an independent replicate.

    Parameters
    ----------
    replicate : (X, y)
        Data from the same source, not used for evaluation.
    epsilon : float
    score : callable
        ``score((coef, intercept)) -> float`` on the replicate (lower is
        better).
    seeds : int, default=2

    Returns
    -------
    dict
        ``{clip: step}``.
    """
    X, y = replicate
    n = X.shape[0]
    L = curvature(X)
    delta = benchmark_delta(n)
    out = {}
    for clip in CLIPS:
        best = None
        for factor in STEP_GRID:
            step = factor / L
            vals = [
                score(
                    dp_gd_fixed_clip(
                        X, y, epsilon, delta, clip, step, np.random.default_rng(s)
                    )
                )
                for s in range(seeds)
            ]
            med = float(np.median(vals))
            if best is None or med < best[0]:
                best = (med, step)
        out[clip] = best[1]
    return out


def tukey_em(X, y, epsilon, rng, box, n_models=None, max_models=1000):
    """Simplified TukeyEM (see the module docstring); pure ``epsilon``-DP.

    Parameters
    ----------
    X : ndarray of shape (n, d)
    y : ndarray of shape (n,)
    epsilon : float
    rng : numpy.random.Generator
    box : float
        Public bound ``b`` on every coefficient and the intercept.
    n_models : int, optional
        Number ``m`` of disjoint parts (default ``min(1000, n // (2 (d + 1)))``,
        at least 2).
    max_models : int, default=1000

    Returns
    -------
    (coef, intercept)
    """
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    D = d + 1
    m = n_models or max(2, min(max_models, n // (2 * D)))
    parts = np.array_split(rng.permutation(n), m)
    models = np.empty((m, D))
    for j, idx in enumerate(parts):
        Xa = _with_ones(X[idx])
        models[j] = np.linalg.lstsq(Xa, y[idx], rcond=None)[0]
    models = np.clip(models, -box, box)  # a per-model (per-part) map
    if math.isinf(epsilon):
        w = np.median(models, axis=0)
        return w[:-1], float(w[-1])
    srt = np.sort(models, axis=0)
    kmax = m // 2
    # region of approximate depth >= k (k = 1..kmax): the box between the
    # k-th smallest and k-th largest value of every coordinate; depth >= 0:
    # the public box
    lo = np.vstack([np.full(D, -box), srt[:kmax]])
    hi = np.vstack([np.full(D, box), srt[::-1][:kmax]])
    hi = np.maximum(hi, lo)
    with np.errstate(divide="ignore"):
        logv = np.sum(np.log(hi - lo), axis=1)  # log volume, k = 0..kmax
    logv_next = np.append(logv[1:], -np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        log_ring = logv + np.log1p(-np.exp(np.minimum(logv_next - logv, 0.0)))
    log_ring = np.where(np.isfinite(log_ring), log_ring, -np.inf)
    logits = log_ring + 0.5 * epsilon * np.arange(kmax + 1)
    logits -= np.max(logits)
    p = np.exp(logits)
    k = int(rng.choice(kmax + 1, p=p / p.sum()))
    w = None
    for _ in range(10_000):
        cand = rng.uniform(lo[k], hi[k])
        if k == kmax or not np.all((cand >= lo[k + 1]) & (cand <= hi[k + 1])):
            w = cand
            break
    if w is None:  # ring too thin to hit: its outer box (post-processing)
        w = cand
    return w[:-1], float(w[-1])
