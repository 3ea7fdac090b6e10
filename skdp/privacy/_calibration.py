"""Noise calibration: the smallest noise that certifies a target (epsilon, delta)."""

import math

from scipy.optimize import brentq

from ._composition import certify_epsilon
from ._conversions import gdp_mu
from ._events import (
    ComposedDpEvent,
    GaussianDpEvent,
    NoOpDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
)

__all__ = ["calibrate_noise_multiplier", "calibrate_gaussian"]


def _check_target(epsilon, delta):
    if not (epsilon > 0):
        raise ValueError(f"epsilon must be in (0, inf], got {epsilon!r}.")
    if not (0.0 < delta < 1.0):
        raise ValueError(f"Gaussian noise needs delta in (0, 1), got {delta!r}.")


def calibrate_noise_multiplier(make_event, epsilon, delta, *, rtol=1e-4):
    """Smallest multiplier ``z`` such that ``make_event(z)`` is (epsilon, delta)-DP.

    The certified epsilon is decreasing in ``z``. A root search in ``log z``
    is followed by a check that the returned ``z`` meets the target, so the
    result never overspends.

    Parameters
    ----------
    make_event : callable
        ``z -> DpEvent``; larger ``z`` must mean more noise.
    epsilon : float
        Target epsilon, in (0, inf]. ``inf`` returns ``0.0`` (no noise).
    delta : float
        Target delta in (0, 1).
    rtol : float, default=1e-4
        Relative width of the final bracket on ``z``.

    Returns
    -------
    z : float

    Raises
    ------
    ValueError
        If the target cannot be met, for example because ``make_event``
        contains fixed steps that already exceed the budget.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Koskela, Jälkö and Honkela, "Computing tight differential privacy guarantees using FFT",
      AISTATS 2020.

    Examples
    --------
    >>> from skdp.privacy import gaussian_steps
    >>> z = calibrate_noise_multiplier(lambda z: gaussian_steps(z, 10), 1.0, 1e-5)
    >>> round(z, 2)
    11.8
    """
    if math.isinf(epsilon):
        return 0.0
    _check_target(epsilon, delta)

    def ok(z):
        return certify_epsilon(make_event(z), delta) <= epsilon

    # Search on a coarser PLD grid (pessimistic, hence never optimistic),
    # then confirm on the fine grid. Small targets search on certify_epsilon's
    # own grid, which is relative to the epsilon of each z: a grid relative to
    # the target would be needlessly fine far from it (z = 1 at epsilon =
    # 1e-3 took a minute and gigabytes).
    coarse = 1e-3 * min(1.0, epsilon) if epsilon >= 0.1 else None

    def excess(log_z, grid=coarse):
        event = make_event(math.exp(log_z))
        return certify_epsilon(event, delta, pld_discretization=grid) - epsilon

    lo, hi = math.log(0.25), 0.0
    while excess(hi) > 0:
        lo, hi = hi, hi + math.log(4.0)
        if hi > math.log(1e12):
            raise ValueError(
                "No noise multiplier meets the target: the fixed part of the "
                "privacy plan already exceeds (epsilon, delta)."
            )
    while excess(lo) <= 0:
        hi, lo = lo, lo - math.log(4.0)
        if lo < math.log(1e-8):
            return math.exp(hi)
    root = brentq(excess, lo, hi, xtol=rtol / 4)
    # brentq may land a hair on the wrong side; step up until certified on
    # the grid certify_epsilon uses, with growing steps in case that grid is
    # the coarser one.
    z, step = math.exp(root), rtol / 4
    while not ok(z):
        z *= 1.0 + step
        step *= 2.0
    return z


def calibrate_gaussian(
    epsilon,
    delta,
    steps=1,
    *,
    sampling=None,
    sampling_probability=None,
    dataset_size=None,
    sample_size=None,
    other_event=None,
    rtol=1e-4,
):
    """Smallest Gaussian noise multiplier for a composition of identical steps.

    The multiplier follows skdp's convention ``z = sigma / Delta`` with
    ``Delta`` the replace-one L2 sensitivity of the statistic on its full,
    unsampled input (``2C`` for a sum of vectors clipped to ``C``; ``2C/n``
    for their mean). The relation is replace-one with a public ``n``.

    - ``sampling=None``: full-batch steps. Exact: the composition is
      ``sqrt(steps)/z``-GDP and the GDP trade-off curve is tight.
    - ``sampling="poisson"``: each record is in each step's batch independently
      with ``sampling_probability``; accounted with dp-accounting's PLD.
    - ``sampling="without_replacement"``: each step uses a uniformly random
      subset of exactly ``sample_size`` of ``dataset_size`` records;
      accounted with dp-accounting's RDP (the only accountant that supports it).

    Parameters
    ----------
    epsilon : float
        Target epsilon in (0, inf]; ``inf`` gives ``0.0``.
    delta : float
        Target delta in (0, 1).
    steps : int, default=1
        Number of steps composed.
    sampling : {None, "poisson", "without_replacement"}, default=None
        Batch sampling scheme, exactly as the solver implements it.
    sampling_probability : float, optional
        Poisson sampling rate ``q``.
    dataset_size, sample_size : int, optional
        Sizes for sampling without replacement.
    other_event : DpEvent, optional
        Fixed steps of the same fit (e.g. a private quantile) that the
        budget must also cover.
    rtol : float, default=1e-4
        Relative tolerance of the bisection on ``z`` (not used for the
        closed-form full-batch case).

    Returns
    -------
    z : float
        Noise multiplier ``sigma / Delta``.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Koskela, Jälkö and Honkela, "Computing tight differential privacy
    - guarantees using FFT", AISTATS 2020 (PLD).
    - Wang, Balle and Kasiviswanathan, "Subsampled Rényi differential privacy
    - and analytical moments accountant", AISTATS 2019 (without replacement).

    Examples
    --------
    >>> round(calibrate_gaussian(1.0, 1e-6, steps=100), 2)
    42.25
    """
    if math.isinf(epsilon):
        return 0.0
    _check_target(epsilon, delta)
    steps = int(steps)
    if steps < 1:
        raise ValueError("steps must be a positive integer.")
    if sampling is None:
        if other_event is None:
            # Closed form; the tiny margin absorbs root-finding round-off so
            # the certified epsilon never exceeds the request.
            return math.sqrt(steps) / gdp_mu(epsilon, delta) * (1.0 + 1e-9)

        def step(z):
            return GaussianDpEvent(z)

    elif sampling == "poisson":
        q = sampling_probability
        if q is None or not (0.0 < q <= 1.0):
            raise ValueError("Poisson sampling needs sampling_probability in (0, 1].")

        def step(z):
            return PoissonSampledDpEvent(float(q), GaussianDpEvent(z))

    elif sampling == "without_replacement":
        if dataset_size is None or sample_size is None:
            raise ValueError(
                "Sampling without replacement needs dataset_size and sample_size."
            )
        if not (1 <= sample_size <= dataset_size):
            raise ValueError("Need 1 <= sample_size <= dataset_size.")

        def step(z):
            return SampledWithoutReplacementDpEvent(
                int(dataset_size), int(sample_size), GaussianDpEvent(z)
            )

    else:
        raise ValueError(
            "sampling must be None, 'poisson' or 'without_replacement', "
            f"got {sampling!r}."
        )
    fixed = NoOpDpEvent() if other_event is None else other_event

    def make_event(z):
        return ComposedDpEvent([fixed, SelfComposedDpEvent(step(z), steps)])

    # Accounting is deterministic and fits often repeat the same plan (folds
    # of a cross-validation), so remember recent answers.
    key = (
        float(epsilon),
        float(delta),
        steps,
        sampling,
        sampling_probability,
        dataset_size,
        sample_size,
        repr(fixed),
        rtol,
    )
    if key not in _CACHE:
        if len(_CACHE) >= 1024:
            _CACHE.clear()
        _CACHE[key] = calibrate_noise_multiplier(make_event, epsilon, delta, rtol=rtol)
    return _CACHE[key]


_CACHE = {}
