"""Renyi-DP accounting of private selection (repeat a private trial, keep the best).

Papernot and Steinke (2022) bound the Renyi DP of running a private trial a
random number ``K`` of times and releasing only the best run. This module
gives

- :func:`rdp_curve`: the Renyi-DP curve of an skdp event (replace-one), with
  the worst profile at every order;
- :func:`repeat_and_select_rdp`: their Theorems 2 (truncated negative
  binomial, including geometric and logarithmic) and 6 (Poisson);
- :func:`selection_epsilon`: the ``(epsilon, delta)`` guarantee of a
  :class:`~skdp.privacy.PrivateSelectionDpEvent`, the number the ledger uses.

Renyi-DP of the leaves, replace-one, multiplier ``z = sigma / Delta``:

- full-batch Gaussian: ``alpha / (2 z**2)`` (exact);
- pure ``epsilon``-DP: ``min(epsilon, alpha epsilon**2 / 2)`` (Bun and
  Steinke 2016, Prop. 1.4);
- fixed-size sampling without replacement: dp-accounting's RDP accountant
  under REPLACE_ONE (the only route that supports it);
- Poisson-sampled Gaussian: dp-accounting's RDP accountant rejects it under
  REPLACE_ONE. Replacing ``x`` by ``x'`` is removing ``x`` then adding
  ``x'``, so Mironov's weak triangle inequality (2017, Prop. 11, with
  ``p = q = 2``) bounds the replace-one curve of all Poisson steps of a
  profile by ``(alpha - 1/2)/(alpha - 1) A(2 alpha) + A(2 alpha - 1)``, with
  ``A`` dp-accounting's add-or-remove curve (multiplier ``sigma / C = 2 z``,
  valid in both directions, Mironov, Talwar and Zhang 2019). The bound
  without amplification, ``alpha / (2 z**2)`` per step (the sampled mechanism
  is a mixture of full-batch Gaussians on neighbouring samples), is also
  valid; the smaller of the two is used at each order.
"""

import math

import numpy as np
from dp_accounting import dp_event
from dp_accounting.rdp import rdp_privacy_accountant as rdp_lib

from ._composition import profiles

__all__ = [
    "DEFAULT_ORDERS",
    "rdp_curve",
    "repeat_and_select_rdp",
    "selection_epsilon",
    "truncated_negative_binomial_gamma",
    "truncated_negative_binomial_mean",
]

DEFAULT_ORDERS = np.asarray(rdp_lib.DEFAULT_RDP_ORDERS, dtype=float)
_REPLACE_ONE = rdp_lib.NeighborRel.REPLACE_ONE


def _wor_rdp(orders, n, b, z, count):
    acc = rdp_lib.RdpAccountant(orders=list(orders), neighboring_relation=_REPLACE_ONE)
    acc.compose(
        dp_event.SampledWithoutReplacementDpEvent(n, b, dp_event.GaussianDpEvent(z)),
        int(count),
    )
    # dp-accounting keeps the per-order curve in ``_rdp``; it has no public
    # getter. tests/test_private_selection.py checks it against get_epsilon.
    return np.asarray(acc._rdp, dtype=float)


def _poisson_rdp(orders, leaves):
    """Replace-one RDP of Poisson-sampled Gaussian steps (see module doc)."""
    unsampled = sum(c * orders / (2.0 * z**2) for q, z, c in leaves)
    acc_orders = np.concatenate([2.0 * orders, 2.0 * orders - 1.0])
    acc = rdp_lib.RdpAccountant(
        orders=list(acc_orders),
        neighboring_relation=rdp_lib.NeighborRel.ADD_OR_REMOVE_ONE,
    )
    for q, z, c in leaves:
        # dp-accounting's add-or-remove multiplier is sigma / C = 2 z.
        acc.compose(
            dp_event.PoissonSampledDpEvent(q, dp_event.GaussianDpEvent(2.0 * z)), int(c)
        )
    curve = np.asarray(acc._rdp, dtype=float)
    a_double, a_odd = curve[: len(orders)], curve[len(orders) :]
    triangle = (orders - 0.5) / (orders - 1.0) * a_double + a_odd
    return np.minimum(unsampled, triangle)


def _profile_rdp(p, orders):
    if p.nonprivate:
        return np.full(orders.shape, np.inf)
    rdp = orders * p.mu2 / 2.0
    poisson = [(k[1], k[2], c) for k, c in p.others.items() if k[0] == "poisson"]
    if poisson:
        rdp = rdp + _poisson_rdp(orders, poisson)
    for key, count in p.others.items():
        kind = key[0]
        if kind == "pure":
            eps = key[1]
            rdp = rdp + count * np.minimum(eps, orders * eps**2 / 2.0)
        elif kind == "poisson":
            continue
        elif kind == "wor":
            _, n, b, z = key
            rdp = rdp + _wor_rdp(orders, n, b, z, count)
        else:
            raise NotImplementedError(
                f"A private selection cannot contain a {kind!r} step: its Renyi-DP "
                "curve is unknown (an (epsilon, delta) guarantee has none)."
            )
    return rdp


def rdp_curve(event, orders=None):
    """Renyi-DP curve of ``event`` under replace-one, worst profile per order.

    Failure events (:class:`~skdp.privacy.FailureDpEvent`) have no Renyi-DP
    curve and are not in it: the curve is the accounted run's.
    :func:`selection_epsilon` adds their probability to ``delta``.

    Parameters
    ----------
    event : DpEvent
        An skdp event (Gaussian, pure, sampled, composed, parallel).
    orders : array-like, optional
        Renyi orders (``> 1``); dp-accounting's defaults if omitted.

    Returns
    -------
    rdp : ndarray of shape (n_orders,)

    References
    ----------
    - Mironov, "Renyi differential privacy", CSF 2017.
    - Bun and Steinke, "Concentrated differential privacy: simplifications, extensions, and
      lower bounds", TCC 2016.

    Examples
    --------
    >>> from skdp.privacy import GaussianDpEvent
    >>> float(rdp_curve(GaussianDpEvent(2.0), [2.0])[0])
    0.25
    """
    orders = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    curves = [_profile_rdp(p, orders) for p in profiles(event)]
    return np.max(curves, axis=0)


def truncated_negative_binomial_mean(gamma, shape):
    """Mean of the truncated negative binomial ``D_{shape, gamma}`` (``K >= 1``).

    Parameters
    ----------
    gamma : float
        In (0, 1].
    shape : float
        ``0`` is the logarithmic distribution, ``1`` the geometric one.

    Returns
    -------
    mean : float

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> truncated_negative_binomial_mean(0.1, 1.0)
    10.0
    """
    if gamma >= 1.0:
        return 1.0
    if shape == 0:
        return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
    if shape == 1:
        return 1.0 / gamma
    # shape (1 - gamma) / (gamma (1 - gamma**shape)), stable for small shape.
    x = shape * math.log(gamma)
    return (1.0 - gamma) / gamma * shape / -math.expm1(x)


def truncated_negative_binomial_gamma(mean, shape):
    """The ``gamma`` whose truncated negative binomial has the given mean.

    Parameters
    ----------
    mean : float
        At least 1.
    shape : float
        Non-negative, finite.

    Returns
    -------
    gamma : float
        Solved to relative precision ``1e-12``; the mean is decreasing in
        ``gamma``, and the returned ``gamma`` never gives a smaller mean.

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> truncated_negative_binomial_gamma(10.0, 1.0)
    0.1
    """
    if mean < 1:
        raise ValueError(f"mean must be at least 1, got {mean!r}.")
    if shape == 1:
        return 1.0 / mean
    if mean == 1:
        return 1.0
    lo, hi = 0.0, 1.0  # mean(lo) = inf > target >= mean(hi) = 1
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if truncated_negative_binomial_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    # At lo the mean is >= the target: a larger mean is the conservative side.
    return lo


def repeat_and_select_rdp(orders, rdp, mean, shape):
    """RDP of releasing the best of ``K`` runs of a mechanism with curve ``rdp``.

    Parameters
    ----------
    orders : array-like of shape (n_orders,)
        Renyi orders, all ``> 1``.
    rdp : array-like of shape (n_orders,)
        Renyi-DP curve of one run.
    mean : float
        ``E[K]``, at least 1.
    shape : float
        ``inf``: ``K`` is Poisson (Theorem 6); otherwise truncated negative
        binomial with this shape (Theorem 2; ``1`` geometric, ``0``
        logarithmic).

    Returns
    -------
    rdp_out : ndarray of shape (n_orders,)

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022,
      Theorems 2 and 6.

    Examples
    --------
    >>> import numpy as np
    >>> orders = np.array([2.0, 4.0, 8.0])
    >>> out = repeat_and_select_rdp(orders, orders * 0.01, 10.0, 1.0)
    >>> bool(np.all(out > orders * 0.01))
    True
    """
    orders = np.asarray(orders, dtype=float)
    rdp = np.asarray(rdp, dtype=float)
    if not (mean >= 1):
        raise ValueError(f"mean must be at least 1, got {mean!r}.")
    if not (shape >= 0):
        raise ValueError(f"shape must be non-negative, got {shape!r}.")
    if np.any(orders <= 1):
        raise ValueError("Renyi orders must be > 1.")
    log_mean = math.log(mean)
    if math.isinf(shape):
        out = np.empty_like(rdp)
        for i, lam in enumerate(orders):
            # Theorem 6: the run is also (eps_hat, delta_hat)-DP with
            # eps_hat = log(1 + 1/(lam - 1)); delta_hat from the RDP curve.
            eps_hat = math.log1p(1.0 / (lam - 1.0))
            delta_hat, _ = rdp_lib.compute_delta(orders, rdp, eps_hat)
            out[i] = rdp[i] + mean * delta_hat + log_mean / (lam - 1.0)
        return out
    gamma = truncated_negative_binomial_gamma(mean, shape)
    # Theorem 2, with the best second order lam_hat taken over the grid.
    extra = (1.0 + shape) * np.min(
        (1.0 - 1.0 / orders) * rdp + math.log(1.0 / gamma) / orders
    )
    out = rdp + log_mean / (orders - 1.0) + extra
    # RDP is non-decreasing in the order: a bound at a larger order holds.
    return np.minimum.accumulate(out[::-1])[::-1] if _sorted(orders) else out


def _sorted(orders):
    return bool(np.all(np.diff(orders) > 0))


def selection_epsilon(event, delta=None, orders=None):
    """Certified epsilon of a private selection at ``delta`` (replace-one).

    Parameters
    ----------
    event : PrivateSelectionDpEvent
    delta : float, optional
        Defaults to ``event.delta``.
    orders : array-like, optional
        Renyi orders; dp-accounting's defaults if omitted.

    Returns
    -------
    epsilon : float

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.
    - Canonne, Kamath and Steinke, "The discrete Gaussian for differential privacy",
      NeurIPS 2020 (RDP to (epsilon, delta) conversion).

    Examples
    --------
    >>> from skdp.privacy import PrivateSelectionDpEvent, GaussianDpEvent
    >>> ev = PrivateSelectionDpEvent([GaussianDpEvent(20.0)], 10.0, 1.0, 1e-6)
    >>> 0.0 < selection_epsilon(ev) < 3.0
    True
    """
    delta = float(event.delta if delta is None else delta)
    orders = DEFAULT_ORDERS if orders is None else np.asarray(orders, dtype=float)
    if not event.candidates:
        return 0.0
    base = np.max([rdp_curve(c, orders) for c in event.candidates], axis=0)
    if np.any(np.isinf(base)):
        return math.inf
    out = repeat_and_select_rdp(orders, base, float(event.mean), float(event.shape))
    # Failure events (FailureDpEvent) have no Renyi-DP curve: rdp_curve covers
    # the accounted run. A trial fails with probability at most ``fail``, so
    # by a union bound over the K trials (Wald) the search differs from its
    # accounted version with probability at most E[K] * fail, which adds
    # (1 + e**epsilon) * E[K] * fail to delta(epsilon).
    fail = float(event.mean) * max(
        (p.fail for c in event.candidates for p in profiles(c)), default=0.0
    )
    eps, _ = rdp_lib.compute_epsilon(orders, out, delta)
    if fail <= 0.0:
        return float(eps)
    for _ in range(100):
        upper = eps * (1.0 + 1e-6) + 1e-9
        spare = (1.0 + math.exp(min(upper, 700.0))) * fail
        if not spare < delta:
            return math.inf
        eps_next, _ = rdp_lib.compute_epsilon(orders, out, delta - spare)
        if eps_next <= upper:
            return float(eps_next)
        eps = eps_next
    return math.inf
