"""Public privacy plan of the DP bilevel solver (Kornowski, Alg. 1 and 3).

Every outer step ``t`` runs three kinds of noisy releases:

- ``"lower"``: the inner solve of ``min_y g(x_t, y)`` (DP-Loc-GD/SGD), ``M K``
  noisy gradient steps;
- ``"penalized"``: the inner solve of ``min_y f(x_t, y) / lambda + g(x_t, y)``
  (the paper's ``f + lambda g``, rescaled so both inner problems have the same
  curvature), ``M K`` steps;
- ``"outer"``: one noisy hypergradient, only when ``f`` or ``g`` has a
  data-dependent gradient in ``x`` (otherwise the outer step is
  post-processing of the private inner solutions and needs no noise).

Each release is a clipped *mean* over a part of the data (full batch), or a
clipped batch sum divided by a public normalizer (the expected batch size
``q n`` under Poisson sampling, the batch size under fixed-size sampling
without replacement). Its replace-one sensitivity on the full, unsampled input
is ``2 C / normalizer`` per part, with ``C`` the clip norm of that part's
per-record term (see :func:`bilevel_sensitivities`).

``f`` and ``g`` either read the same records (``shared=True``, the paper's
default) or disjoint parts (``shared=False``: validation and training, the
paper's footnote 1). With disjoint parts, one record lies in one part only and
the plan is a :class:`~skdp.privacy.ParallelDpEvent` of the two per-part
profiles.

Noise calibration. Mechanism ``k`` runs ``steps_k`` times with noise
``sigma_k = z * Delta_k * sqrt(steps_k / share_k)``, ``Delta_k`` its worst
per-part sensitivity. With full batches this spends exactly
``sum_k share_k / z**2`` in GDP units, so ``z = 1 / mu(epsilon, delta)`` with
shares summing to one (exact, closed form): the paper's advanced-composition
split ``epsilon / sqrt(18 T)`` is never used. With sampling, or with other
steps in the same fit, ``z`` is found by the exact accountant.
"""

import math
from dataclasses import dataclass, field

from ...privacy import (
    ComposedDpEvent,
    GaussianDpEvent,
    NoOpDpEvent,
    ParallelDpEvent,
    PoissonSampledDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    calibrate_noise_multiplier,
    gdp_budget,  # noqa: F401  (re-exported: the budget now lives in skdp.privacy)
    gdp_mu,
)

__all__ = [
    "BilevelDesign",
    "BilevelNoise",
    "bilevel_sensitivities",
    "bilevel_event",
    "calibrate_bilevel_noise",
    "gdp_budget",
    "SAMPLING_SCHEMES",
]

SAMPLING_SCHEMES = (None, "poisson", "without_replacement")
MECHANISMS = ("lower", "penalized", "outer")


@dataclass(frozen=True)
class BilevelDesign:
    """Public description of one run of the DP bilevel solver.

    Parameters
    ----------
    n_upper, n_lower : int
        Records of ``f`` (validation) and of ``g`` (training). Equal when
        ``shared``.
    shared : bool
        ``f`` and ``g`` read the same records.
    n_outer : int
        Outer iterations ``T``.
    inner_rounds : int
        Localization rounds ``M`` of each inner solve.
    inner_steps : int
        Noisy steps ``K`` per round.
    penalty : float
        ``lambda``; the penalized inner problem is ``f / lambda + g``.
    clip_upper, clip_lower : float
        Per-record clip norms of ``grad_y f_i`` and ``grad_y g_i``.
    clip_outer : float
        Clip norm of each record's whole outer difference vector.
    upper_in_outer, lower_in_outer : bool
        Whether ``f`` (resp. ``g``) has a data-dependent gradient in ``x``.
    upper_in_inner : bool, default=True
        Whether ``f`` has a data-dependent gradient in ``y``.
    sampling : {None, "poisson", "without_replacement"}
        Batch sampling of the inner steps and outer step (``None``: full batch).
    inner_batch_fraction, outer_batch_fraction : float
        Sampling rate ``q`` (Poisson) or batch size over part size.
    """

    n_upper: int
    n_lower: int
    shared: bool
    n_outer: int
    inner_rounds: int
    inner_steps: int
    penalty: float
    clip_upper: float
    clip_lower: float
    clip_outer: float
    upper_in_outer: bool
    lower_in_outer: bool
    upper_in_inner: bool = True
    sampling: object = None
    inner_batch_fraction: float = 1.0
    outer_batch_fraction: float = 1.0

    def __post_init__(self):
        if self.sampling not in SAMPLING_SCHEMES:
            raise ValueError(f"sampling must be one of {SAMPLING_SCHEMES}.")
        if self.shared and self.n_upper != self.n_lower:
            raise ValueError("With shared records n_upper must equal n_lower.")
        for q in (self.inner_batch_fraction, self.outer_batch_fraction):
            if not 0.0 < q <= 1.0:
                raise ValueError("Batch fractions must be in (0, 1].")

    @property
    def outer_private(self):
        """Whether the outer step touches the data beyond the inner solutions."""
        return self.upper_in_outer or self.lower_in_outer

    def steps(self, mechanism):
        """How many times ``mechanism`` runs in the whole fit."""
        if mechanism == "outer":
            return self.n_outer if self.outer_private else 0
        return self.n_outer * self.inner_rounds * self.inner_steps

    def batch_size(self, part, mechanism):
        """Normalizer of a part's batch sum (``q n`` or the fixed batch size)."""
        n = self.n_upper if part == "upper" else self.n_lower
        q = (
            self.outer_batch_fraction
            if mechanism == "outer"
            else self.inner_batch_fraction
        )
        if self.sampling == "without_replacement":
            return max(1, int(round(q * n)))
        return q * n if self.sampling == "poisson" else float(n)

    def sampling_rate(self, part, mechanism):
        """Inclusion probability of a record of ``part`` in one batch."""
        n = self.n_upper if part == "upper" else self.n_lower
        return self.batch_size(part, mechanism) / n


@dataclass(frozen=True)
class BilevelNoise:
    """Noise standard deviations of the three releases and the matching event.

    Parameters
    ----------
    lower_std, penalized_std, outer_std : float
        Standard deviation of the Gaussian noise added to each release (a
        normalized gradient). ``0`` means no noise (``epsilon = inf``).
    event : DpEvent
        The privacy plan of the whole run.
    multiplier : float
        The common calibration constant ``z``.
    ledger : dict
        ``{mechanism: {part: (sensitivity, sampling)}}``: what the privacy
        ledger records of each release, per part (:func:`bilevel_ledger`).
    """

    lower_std: float
    penalized_std: float
    outer_std: float
    event: object = field(repr=False)
    multiplier: float = 0.0
    ledger: dict = field(default_factory=dict, repr=False)

    def std(self, mechanism):
        return getattr(self, f"{mechanism}_std")


def bilevel_sensitivities(design):
    """Replace-one sensitivity of each release, per part.

    Parameters
    ----------
    design : BilevelDesign

    Returns
    -------
    dict
        ``{mechanism: {part: Delta}}`` with parts ``"upper"`` and ``"lower"``
        (a single part ``"all"`` when records are shared). A zero means the
        part does not enter that release.

    Examples
    --------
    >>> d = BilevelDesign(100, 400, False, 10, 1, 5, 10.0, 1.0, 1.0, 1.0, False, False)
    >>> bilevel_sensitivities(d)["penalized"]
    {'upper': 0.002, 'lower': 0.005}
    """
    lam = float(design.penalty)
    cu = design.clip_upper if design.upper_in_inner else 0.0
    cl = design.clip_lower
    co = design.clip_outer

    def part(p, mech):
        return 2.0 / design.batch_size(p, mech)

    if design.shared:
        return {
            "lower": {"all": cl * part("lower", "lower")},
            "penalized": {"all": (cu / lam + cl) * part("lower", "penalized")},
            "outer": {
                "all": co * part("lower", "outer") if design.outer_private else 0.0
            },
        }
    return {
        "lower": {"upper": 0.0, "lower": cl * part("lower", "lower")},
        "penalized": {
            "upper": cu / lam * part("upper", "penalized"),
            "lower": cl * part("lower", "penalized"),
        },
        "outer": {
            "upper": co * part("upper", "outer") if design.upper_in_outer else 0.0,
            "lower": co * part("lower", "outer") if design.lower_in_outer else 0.0,
        },
    }


def _shares(design, shares):
    active = [m for m in MECHANISMS if design.steps(m) > 0]
    if shares is None:
        return {m: 1.0 / len(active) for m in active}
    raw = {m: float(shares.get(m, 0.0)) for m in active}
    if any(v <= 0 for v in raw.values()):
        raise ValueError(f"Every active release needs a positive share: {active}.")
    total = sum(raw.values())
    return {m: v / total for m, v in raw.items()}


def _stds(design, z, shares):
    sens = bilevel_sensitivities(design)
    out = {}
    for m in MECHANISMS:
        steps = design.steps(m)
        worst = max(sens[m].values())
        if steps == 0 or worst == 0:
            out[m] = 0.0
        else:
            out[m] = z * worst * math.sqrt(steps / shares[m])
    return out


def bilevel_ledger(design):
    """Per release and part, its sensitivity and sampling for the privacy ledger.

    The parts in the order of :func:`bilevel_event`'s parallel event
    (``"upper"``, ``"lower"``; one part ``"all"`` when records are shared).
    """
    sens = bilevel_sensitivities(design)
    out = {}
    for m in MECHANISMS:
        out[m] = {}
        for p, delta in sens[m].items():
            part_name = "lower" if p == "all" else p
            sampling = ()
            if design.sampling == "poisson":
                sampling = ("poisson", design.sampling_rate(part_name, m))
            elif design.sampling == "without_replacement":
                n = design.n_upper if part_name == "upper" else design.n_lower
                sampling = (
                    "without_replacement", n, design.batch_size(part_name, m)
                )
            out[m][p] = (delta, sampling)
    return out


def bilevel_event(design, stds):
    """Privacy event of a run with the given noise standard deviations.

    Parameters
    ----------
    design : BilevelDesign
    stds : dict
        ``{mechanism: sigma}``.

    Returns
    -------
    DpEvent
    """
    sens = bilevel_sensitivities(design)
    parts = ["all"] if design.shared else ["upper", "lower"]
    profiles = []
    for p in parts:
        events = []
        for m in MECHANISMS:
            steps = design.steps(m)
            delta = sens[m][p]
            if steps == 0 or delta == 0:
                continue
            z = stds[m] / delta
            step = GaussianDpEvent(z)
            part_name = "lower" if p == "all" else p
            if design.sampling == "poisson":
                step = PoissonSampledDpEvent(design.sampling_rate(part_name, m), step)
            elif design.sampling == "without_replacement":
                n = design.n_upper if part_name == "upper" else design.n_lower
                step = SampledWithoutReplacementDpEvent(
                    n, design.batch_size(part_name, m), step
                )
            events.append(SelfComposedDpEvent(step, steps))
        profiles.append(ComposedDpEvent(events) if events else NoOpDpEvent())
    return profiles[0] if design.shared else ParallelDpEvent(profiles)


def calibrate_bilevel_noise(
    design, epsilon, delta, *, shares=None, other_event=None, mu=None
):
    """Smallest noise meeting ``(epsilon, delta)`` for the whole run.

    Parameters
    ----------
    design : BilevelDesign
    epsilon : float or None
        Target in (0, inf]; ``inf`` gives zero noise. Ignored with ``mu``.
    delta : float or None
        Target delta. Ignored with ``mu``.
    shares : dict, optional
        Relative budget (in GDP ``mu**2`` for full batches) of ``"lower"``,
        ``"penalized"`` and ``"outer"``; equal by default.
    other_event : DpEvent, optional
        Other steps of the same fit (e.g. private bound estimation) that the
        budget must also cover.
    mu : float, optional
        Full-batch only: spend exactly this GDP budget instead of
        ``(epsilon, delta)`` (used to give the run a share of a larger plan).

    Returns
    -------
    BilevelNoise

    Examples
    --------
    >>> d = BilevelDesign(100, 400, False, 10, 1, 5, 10.0, 1.0, 1.0, 1.0, False, False)
    >>> noise = calibrate_bilevel_noise(d, 1.0, 1e-5)
    >>> from skdp.privacy import certify_epsilon
    >>> certify_epsilon(noise.event, 1e-5) <= 1.0
    True
    """
    sh = _shares(design, shares)
    if mu is not None and design.sampling is not None:
        raise ValueError("A GDP budget applies to full-batch runs only.")
    if (mu is not None and math.isinf(mu)) or (mu is None and math.isinf(epsilon)):
        stds = {m: 0.0 for m in MECHANISMS}
        return BilevelNoise(
            stds["lower"],
            stds["penalized"],
            stds["outer"],
            NoOpDpEvent(),
            0.0,
            bilevel_ledger(design),
        )
    if mu is not None:
        z = 1.0 / mu
    elif design.sampling is None and other_event is None:
        # Full batch: the run is exactly sqrt(sum_k share_k) / z = 1 / z GDP.
        z = 1.0 / gdp_mu(epsilon, delta) * (1.0 + 1e-9)
    else:
        fixed = NoOpDpEvent() if other_event is None else other_event

        def make_event(z):
            return ComposedDpEvent([fixed, bilevel_event(design, _stds(design, z, sh))])

        z = calibrate_noise_multiplier(make_event, epsilon, delta)
    stds = _stds(design, z, sh)
    return BilevelNoise(
        stds["lower"],
        stds["penalized"],
        stds["outer"],
        bilevel_event(design, stds),
        z,
        bilevel_ledger(design),
    )
