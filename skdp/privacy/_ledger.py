"""The privacy ledger: every noise draw of a fit, written where it is drawn.

A fit's *plan* (a :class:`~dp_accounting.DpEvent`) says what the fit will
release; its *ledger* says what it did release. The drawing functions of
:mod:`skdp.privacy` (:func:`~skdp.privacy.gaussian_noise`, the exponential
mechanism of the private quantile) append one :class:`LedgerEntry` per draw,
built from the noise scale they actually used and the sensitivity their caller
enforces by clipping, never copied from the plan. :func:`verify` recomputes
epsilon from the entries alone; the tests check that it equals the plan's
``privacy_spent_``, which makes "the draws are the plan" a checked property.

Structure that is not a draw is recorded as a *scope* around draws:

- :func:`parallel_scope` for releases on disjoint, data-independent parts of
  the data (a :class:`~skdp.privacy.ParallelDpEvent` of the parts);
- :func:`hidden_from_ledgers` around work whose draws must not be listed:
  the trials of :class:`~skdp.model_selection.PrivateSearchCV`, whose number
  and contents the private selection keeps secret. The search records one
  ``"selection"`` entry instead, the ``(epsilon, delta)`` its analysis
  certifies over all candidates;
- a draw on a sampled batch names its sampling (``sampling=``), and a
  data-independent failure probability is an entry of its own
  (:func:`record_failure`).

Every fitted skdp estimator exposes its ledger as ``privacy_ledger_``. The
ledger holds public quantities only: mechanisms, sensitivities, scales, sizes,
counts and the structure, never a value drawn or computed from the data. It is
JSON-serialisable (:meth:`PrivacyLedger.to_dict`).
"""

import contextlib
import contextvars
import itertools
import math
from dataclasses import asdict, dataclass, field

from ._composition import certify_epsilon
from ._events import (
    ApproxDpEvent,
    ComposedDpEvent,
    FailureDpEvent,
    GaussianDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    ParallelDpEvent,
    PoissonSampledDpEvent,
    PureDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
)

__all__ = [
    "LedgerEntry",
    "PrivacyLedger",
    "parallel_scope",
    "record_failure",
    "recording",
    "hidden_from_ledgers",
    "verify",
]

MECHANISMS = ("gaussian", "exponential", "failure", "selection")

# The ledgers open in this context, and the scope path of the next draw.
_OPEN = contextvars.ContextVar("skdp_open_ledgers", default=())
_PATH = contextvars.ContextVar("skdp_ledger_path", default=())
_SCOPE_IDS = itertools.count()


@dataclass(frozen=True)
class LedgerEntry:
    """One kind of noise draw of a fit, and how many times it was drawn.

    Parameters
    ----------
    mechanism : {"gaussian", "exponential", "failure", "selection"}
        ``"gaussian"``: noise ``N(0, scale**2)`` on each of ``size``
        coordinates of a statistic of L2 sensitivity ``sensitivity``.
        ``"exponential"``: Gumbel-max selection with Gumbel scale ``scale``
        on a utility of sensitivity ``sensitivity`` (the exponential
        mechanism, ``2 sensitivity / scale``-DP). ``"failure"``: a
        data-independent bad event of probability ``probability``.
        ``"selection"``: a private selection certified
        ``(epsilon, probability)``-DP as a whole.
    sensitivity : float
        Replace-one sensitivity of the noised statistic, enforced by clipping
        to public bounds.
    scale : float
        Noise scale the drawing function used (after the audit's test-only
        multiplier, if any). ``0`` is an exact, non-private release.
    size : int
        Coordinates per draw.
    repetitions : int
        Number of such draws (releases composed with each other).
    sampling : tuple
        ``()`` for a full-batch statistic, ``("poisson", q)`` or
        ``("without_replacement", n, m)`` for one on a sampled batch.
    path : tuple
        ``((scope, index), ...)``: the parallel parts the draw lies in,
        outermost first (``scope`` is the ledger's own number of the scope,
        in order of opening).
    probability : float
        Of a ``"failure"`` entry; the ``delta`` of a ``"selection"`` entry.
    epsilon : float
        Of a ``"selection"`` entry.
    label : str
        What was released (for reading; not used by :func:`verify`).

    References
    ----------
    - Google's dp-accounting library: privacy events as data
      (``dp_accounting.DpEvent``).
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> LedgerEntry("gaussian", sensitivity=2.0, scale=6.0, repetitions=3).event
    SelfComposedDpEvent(event=GaussianDpEvent(noise_multiplier=3.0), count=3)
    """

    mechanism: str
    sensitivity: float = 0.0
    scale: float = 0.0
    size: int = 1
    repetitions: int = 1
    sampling: tuple = ()
    path: tuple = ()
    probability: float = 0.0
    label: str = ""
    epsilon: float = 0.0

    @property
    def event(self):
        """The entry's :class:`~dp_accounting.DpEvent`, from its fields alone."""
        if self.mechanism == "failure":
            return FailureDpEvent(float(self.probability))
        if self.mechanism == "selection":
            return ApproxDpEvent(float(self.epsilon), float(self.probability))
        if self.sensitivity == 0.0:
            return NoOpDpEvent()  # nothing data-dependent was noised
        if self.scale == 0.0:
            return NonPrivateDpEvent()
        if self.mechanism == "gaussian":
            step = GaussianDpEvent(self.scale / self.sensitivity)
        elif self.mechanism == "exponential":
            step = PureDpEvent(2.0 * self.sensitivity / self.scale)
        else:
            raise ValueError(f"Unknown mechanism {self.mechanism!r}.")
        if self.sampling:
            kind, *params = self.sampling
            if kind == "poisson":
                step = PoissonSampledDpEvent(float(params[0]), step)
            elif kind == "without_replacement":
                step = SampledWithoutReplacementDpEvent(
                    int(params[0]), int(params[1]), step
                )
            else:
                raise ValueError(f"Unknown sampling {kind!r}.")
        return step if self.repetitions == 1 else SelfComposedDpEvent(
            step, int(self.repetitions)
        )


@dataclass
class PrivacyLedger:
    """The noise draws of one fit, with the scopes they were drawn in.

    Built by :func:`recording`; read ``entries`` and ``scopes``, compose with
    :meth:`event`, and check with :func:`verify`.

    Parameters
    ----------
    entries : list of LedgerEntry
        In order of first draw; draws identical in every field are merged
        into one entry's ``repetitions`` (their order does not matter to
        composition).
    scopes : dict
        ``{scope_id: {"kind": "parallel", "parts": k}}``.

    References
    ----------
    - Google's dp-accounting library: privacy events as data
      (``dp_accounting.DpEvent``).
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy import gaussian_noise, recording, verify
    >>> with recording() as ledger:
    ...     _ = gaussian_noise(np.random.default_rng(0), 2.0, 3, sensitivity=0.5)
    >>> ledger.entries[0].event
    GaussianDpEvent(noise_multiplier=4.0)
    >>> round(verify(ledger, 1e-6), 3)
    1.061
    """

    entries: list = field(default_factory=list)
    scopes: dict = field(default_factory=dict)
    # The process-wide id of each scope opened while recording -> its id in
    # this ledger (scopes are numbered per ledger, in order of opening).
    _local_ids: dict = field(
        default_factory=dict, init=False, repr=False, compare=False
    )

    def _add(self, entry):
        for i, old in enumerate(self.entries):
            if _same_draw(old, entry):
                self.entries[i] = _with_repetitions(
                    old, old.repetitions + entry.repetitions
                )
                return
        self.entries.append(entry)

    def event(self):
        """Compose the entries, within their scopes, into one DpEvent.

        Returns
        -------
        event : DpEvent
            ``NoOpDpEvent()`` for an empty ledger.
        """
        return _compose(self.entries, self.scopes, 0)

    def to_dict(self):
        """A JSON-serialisable dict; :meth:`from_dict` reads it back."""
        return {
            "entries": [asdict(e) for e in self.entries],
            "scopes": {str(k): dict(v) for k, v in self.scopes.items()},
        }

    @classmethod
    def from_dict(cls, data):
        """The ledger of :meth:`to_dict`'s output (lists read back as tuples)."""
        entries = []
        for e in data["entries"]:
            e = dict(e)
            e["sampling"] = tuple(e.get("sampling", ()))
            e["path"] = tuple(tuple(p) for p in e.get("path", ()))
            entries.append(LedgerEntry(**e))
        scopes = {int(k): dict(v) for k, v in data.get("scopes", {}).items()}
        return cls(entries, scopes)

    def __len__(self):
        return sum(e.repetitions for e in self.entries)


def _same_draw(a, b):
    return _with_repetitions(a, 1) == _with_repetitions(b, 1)


def _with_repetitions(entry, repetitions):
    return LedgerEntry(**{**asdict(entry), "repetitions": int(repetitions)})


def _compose(entries, scopes, depth):
    """The event of ``entries`` (all inside the same scopes up to ``depth``)."""
    events, inner = [], {}
    for e in entries:
        if len(e.path) == depth:
            events.append(e.event)
        else:
            scope_id, index = e.path[depth]
            inner.setdefault(scope_id, {}).setdefault(index, []).append(e)
    for scope_id, members in inner.items():
        scope = scopes[scope_id]
        parts = {
            i: _compose(group, scopes, depth + 1) for i, group in members.items()
        }
        if scope["kind"] == "parallel":
            if any(not 0 <= i < scope["parts"] for i in parts):
                raise ValueError(f"A draw lies outside the {scope['parts']} parts.")
            # A part with no draw releases nothing: the record may lie there.
            events.append(
                ParallelDpEvent(
                    [parts.get(i, NoOpDpEvent()) for i in range(scope["parts"])]
                )
            )
        else:
            raise ValueError(f"Unknown scope kind {scope['kind']!r}.")
    if not events:
        return NoOpDpEvent()
    return events[0] if len(events) == 1 else ComposedDpEvent(events)


@contextlib.contextmanager
def recording():
    """Record every draw made inside the block in a new :class:`PrivacyLedger`.

    Blocks nest: a draw goes to every open ledger, with its scope path taken
    from where that ledger was opened (a search's ledger holds its trials'
    draws; each trial's estimator holds its own).

    Yields
    ------
    ledger : PrivacyLedger

    References
    ----------
    - Google's dp-accounting library: privacy events as data
      (``dp_accounting.DpEvent``).
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy import gaussian_noise
    >>> with recording() as ledger:
    ...     _ = gaussian_noise(np.random.default_rng(0), 1.0, 2, sensitivity=1.0)
    >>> len(ledger)
    1
    """
    ledger = PrivacyLedger()
    token = _OPEN.set(_OPEN.get() + ((ledger, len(_PATH.get())),))
    try:
        yield ledger
    finally:
        _OPEN.reset(token)


def record(entry):
    """Append ``entry`` (with the current scope path) to every open ledger.

    Called by the drawing functions of :mod:`skdp.privacy` only.
    """
    path = _PATH.get()
    for ledger, base in _OPEN.get():
        local = tuple((ledger._local_ids[uid], i) for uid, i in path[base:])
        ledger._add(LedgerEntry(**{**asdict(entry), "path": local}))


def _open_scope(descriptor):
    scope_id = next(_SCOPE_IDS)
    for ledger, _ in _OPEN.get():
        ledger._local_ids[scope_id] = local = len(ledger.scopes)
        ledger.scopes[local] = dict(descriptor)
    return scope_id


@contextlib.contextmanager
def _inside(scope_id, index):
    token = _PATH.set(_PATH.get() + ((scope_id, int(index)),))
    try:
        yield
    finally:
        _PATH.reset(token)


class _Scope:
    def __init__(self, descriptor):
        self.descriptor = descriptor
        self.id = _open_scope(descriptor)

    def part(self, index):
        """Context manager: the draws inside lie in part (or trial) ``index``."""
        return _inside(self.id, index)

    def sensitivities(self, by_part):
        """A draw's sensitivity per part, for a release that reads several parts.

        Pass the result as ``sensitivity=`` to :func:`~skdp.privacy.gaussian_noise`:
        the ledger then holds one entry per part, each with the sensitivity
        of a record that lies in that part.
        """
        return PartSensitivities(self, {int(k): v for k, v in by_part.items()})


@dataclass(frozen=True)
class PartSensitivities:
    """Sensitivity of one release to a record of each part of a parallel scope."""

    scope: object
    by_part: dict


def record_draw(entry, sensitivity):
    """Record ``entry`` at ``sensitivity``: a float, or per part of a scope."""
    if not isinstance(sensitivity, PartSensitivities):
        record(LedgerEntry(**{**asdict(entry), "sensitivity": float(sensitivity)}))
        return
    for index, value in sensitivity.by_part.items():
        # A part's value is its sensitivity, or (sensitivity, sampling) when
        # the parts' batches are sampled at different rates.
        fields = {"sensitivity": float(value)} if not isinstance(value, tuple) else {
            "sensitivity": float(value[0]), "sampling": tuple(value[1])
        }
        with sensitivity.scope.part(index):
            record(LedgerEntry(**{**asdict(entry), **fields}))


def parallel_scope(n_parts):
    """Open a parallel scope of ``n_parts`` disjoint, data-independent parts.

    Parameters
    ----------
    n_parts : int
        Number of parts of the partition; parts with no draw release nothing.

    Returns
    -------
    scope
        ``with scope.part(i):`` marks the draws made on part ``i``.

    References
    ----------
    - McSherry, "Privacy integrated queries", SIGMOD 2009 (parallel composition).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy import gaussian_noise, recording
    >>> with recording() as ledger:
    ...     halves = parallel_scope(2)
    ...     for i in range(2):
    ...         with halves.part(i):
    ...             _ = gaussian_noise(np.random.default_rng(i), 1.0, sensitivity=1.0)
    >>> type(ledger.event()).__name__
    'ParallelDpEvent'
    """
    return _Scope({"kind": "parallel", "parts": int(n_parts)})


@contextlib.contextmanager
def hidden_from_ledgers():
    """Draws made inside the block go to no ledger opened outside it.

    For work whose draws are secret (the trials of a private selection:
    their number, candidates and intermediate releases). Ledgers opened
    inside the block (a trial estimator's own) record as usual.

    Yields
    ------
    None

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy import gaussian_noise
    >>> with recording() as ledger:
    ...     with hidden_from_ledgers():
    ...         _ = gaussian_noise(np.random.default_rng(0), 1.0, sensitivity=1.0)
    >>> len(ledger)
    0
    """
    token, path = _OPEN.set(()), _PATH.set(())
    try:
        yield
    finally:
        _PATH.reset(path)
        _OPEN.reset(token)


def record_failure(probability, label=""):
    """Record a data-independent failure probability (see :class:`FailureDpEvent`).

    Parameters
    ----------
    probability : float
        Upper bound on the probability of the bad event (public).
    label : str, default=""
        What fails, for reading the ledger.

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> with recording() as ledger:
    ...     record_failure(1e-20)
    >>> ledger.entries[0].event
    FailureDpEvent(probability=1e-20)
    """
    record(LedgerEntry("failure", probability=float(probability), label=label))


def _as_ledger(ledger):
    if isinstance(ledger, PrivacyLedger):
        return ledger
    if isinstance(ledger, dict) and "skdp_receipt" in ledger:
        # Every step of a receipt reads the same rows: their draws compose.
        entries, scopes = [], {}
        for step in ledger["steps"]:
            part = PrivacyLedger.from_dict(step["ledger"])
            offset = len(scopes)
            scopes.update({k + offset: v for k, v in part.scopes.items()})
            entries += [
                LedgerEntry(
                    **{
                        **asdict(e),
                        "path": tuple((k + offset, i) for k, i in e.path),
                    }
                )
                for e in part.entries
            ]
        return PrivacyLedger(entries, scopes)
    if isinstance(ledger, dict):
        return PrivacyLedger.from_dict(ledger)
    found = getattr(ledger, "privacy_ledger_", None)
    if found is None:
        raise TypeError(
            "verify takes a PrivacyLedger, its to_dict() output, or a fitted "
            f"skdp estimator; got {type(ledger).__name__}."
        )
    return found


def verify(ledger, delta=None):
    """Epsilon at ``delta`` of the draws in ``ledger``, from its entries alone.

    The ledger's entries are composed within their scopes and certified by
    skdp's exact composition engine (on dp-accounting's PLD and RDP
    accountants), independently of the fit's plan. A correct fit has
    ``verify(est.privacy_ledger_, est.privacy_spent_[1])`` equal to
    ``est.privacy_spent_[0]``.

    Parameters
    ----------
    ledger : PrivacyLedger, dict or fitted estimator
        A ledger, its :meth:`~PrivacyLedger.to_dict` output, a receipt
        (:func:`skdp.receipt`: its steps' ledgers compose), or a fitted
        estimator (its ``privacy_ledger_``).
    delta : float, optional
        In (0, 1). Default: the receipt's ``delta``, or the estimator's
        ``privacy_spent_[1]``; required for a bare ledger.

    Returns
    -------
    epsilon : float
        ``0`` for a ledger without draws, ``inf`` if a release was exact.

    References
    ----------
    - Dong, Roth and Su, "Gaussian differential privacy", JRSS-B 2022.
    - Google's dp-accounting library (PLD and RDP accountants).

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy import gaussian_noise
    >>> with recording() as ledger:
    ...     for _ in range(100):
    ...         _ = gaussian_noise(np.random.default_rng(0), 10.0, sensitivity=1.0)
    >>> round(verify(ledger, 1e-6), 3)
    4.887
    """
    if delta is None:
        if isinstance(ledger, dict) and "skdp_receipt" in ledger:
            delta = ledger["delta"]
        elif hasattr(ledger, "privacy_spent_"):
            delta = ledger.privacy_spent_[1]
        else:
            raise TypeError("verify needs a delta for a bare ledger.")
    if isinstance(ledger, dict) and ledger.get("nonprivate_steps"):
        return math.inf  # a step learnt from the data without privacy
    event = _as_ledger(ledger).event()
    if isinstance(event, NoOpDpEvent):
        return 0.0  # no draw: nothing released (any delta, 0 included)
    eps = certify_epsilon(event, delta)
    return math.inf if math.isnan(eps) else float(eps)
