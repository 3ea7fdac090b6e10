"""The search's privacy plan: each candidate's plan, the per-trial budget.

A candidate's plan is read from the estimator itself: a clone is fitted
with a probe accountant that records the plan the estimator charges (skdp
estimators charge their whole plan before drawing any noise or computing
any private statistic) and stops the fit there. Only input validation runs
before that point, so the probe draws no noise and releases nothing.

The per-trial budget ``(epsilon_t, delta_t)`` is the largest ``epsilon_t``
(bisection, relative precision ``1e-3``) whose private selection certifies
the search's ``(epsilon, delta)``. The score of a trial is calibrated to the
same ``(epsilon_t, delta_t)`` as a Gaussian release of the validation part,
which is disjoint from the training part, so a trial costs the worse of its
fit and its score (parallel composition), not their sum.
"""

import math
import warnings
from dataclasses import dataclass

from sklearn.base import clone

from ..privacy import (
    BudgetExceededError,
    ParallelDpEvent,
    PrivacyAccountant,
    PrivateSelectionDpEvent,
    gdp_mu,
    selection_epsilon,
)
from ._scoring import score_event

__all__ = ["SearchPlan", "plan_search", "probe_plan", "RecordingAccountant"]

_REL_TOL = 1e-3


class _PlanCaptured(BudgetExceededError):
    """Raised by the probe accountant once the plan is recorded."""


class _ProbeAccountant(PrivacyAccountant):
    """Records the first plan charged to it and stops the fit."""

    def __init__(self):
        super().__init__(math.inf, 0.5)
        self.event = None

    def spend(self, event, *, label=None):
        self.event = event
        raise _PlanCaptured("plan recorded by the search's probe; no data used")


class RecordingAccountant(PrivacyAccountant):
    """An unlimited ledger for the trials: it records their plans.

    The search charges the whole selection to the user's budget; each trial
    records its plan here so that the search can check that it is the plan
    the selection was calibrated for.
    """

    def __init__(self):
        super().__init__(math.inf, 0.5)

    def spend(self, event, *, label=None):
        self._check_process()
        self.ledger.append((label or "fit", event))


def probe_plan(estimator, params, epsilon, delta, X, y, fit_params):
    """The plan ``estimator`` with ``params`` would charge on ``(X, y)``.

    Parameters
    ----------
    estimator : skdp estimator
    params : dict
        Candidate hyperparameters.
    epsilon, delta : float
        The trial's budget.
    X, y : array-like
        The training part (only validated by the estimator).
    fit_params : dict

    Returns
    -------
    event : DpEvent
    caught : list of warnings.WarningMessage
        Warnings raised by the estimator's validation and planning.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import HeavyTailedLinearRegression
    >>> X, y = np.zeros((100, 2)), np.zeros(100)
    >>> ev, _ = probe_plan(HeavyTailedLinearRegression(feature_norm=1.0),
    ...                    {}, 1.0, 1e-6, X, y, {})
    >>> ev is not None
    True
    """
    probe = _ProbeAccountant()
    model = clone(estimator).set_params(
        **params, epsilon=epsilon, delta=delta, accountant=probe, random_state=0
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            model.fit(X, y, **fit_params)
        except _PlanCaptured:
            pass
    if probe.event is None:
        raise TypeError(
            f"{type(estimator).__name__} did not charge a privacy plan to its "
            "`accountant` before fitting: PrivateSearchCV needs an skdp private "
            "estimator."
        )
    return probe.event, list(caught)


@dataclass(frozen=True)
class SearchPlan:
    """Everything the search releases, fixed before any noise is drawn.

    Attributes
    ----------
    trial_epsilon, trial_delta : float
        Budget given to each trial's estimator.
    score_noise_multiplier : float
        ``sigma / Delta`` of each noisy validation score.
    fit_events : list of DpEvent
        Plan of each candidate's fit.
    event : PrivateSelectionDpEvent
        The whole search, as charged to the ledger.
    """

    trial_epsilon: float
    trial_delta: float
    score_noise_multiplier: float
    fit_events: list
    event: object


def _score_multiplier(epsilon_t, delta_t):
    if math.isinf(epsilon_t):
        return 0.0
    return 1.0 / gdp_mu(epsilon_t, delta_t)


def _plan_at(epsilon_t, delta_t, probe, indices, mean, shape, delta):
    z = _score_multiplier(epsilon_t, delta_t)
    fits, caught = [], []
    for c in indices:
        ev, w = probe(c, epsilon_t, delta_t)
        fits.append(ev)
        caught.extend(w)
    trials = [ParallelDpEvent([ev, score_event(z)]) for ev in fits]
    event = PrivateSelectionDpEvent(trials, float(mean), float(shape), float(delta))
    return SearchPlan(epsilon_t, delta_t, z, fits, event), caught


def _bisect(epsilon, at):
    """Largest ``e`` in ``(0, epsilon]`` with ``at(e) <= epsilon`` (``at`` increasing)."""
    hi = float(epsilon)
    lo = hi / 2.0
    while at(lo) > epsilon:
        hi, lo = lo, lo / 2.0
        if lo < 1e-8 * epsilon:
            raise ValueError(
                f"No per-trial budget lets this search certify epsilon={epsilon:g}: "
                "lower mean_trials or raise epsilon."
            )
    while hi / lo > 1.0 + _REL_TOL:
        mid = math.sqrt(lo * hi)
        if at(mid) <= epsilon:
            lo = mid
        else:
            hi = mid
    return lo


def plan_search(epsilon, delta, probe, n_candidates, mean, shape):
    """Calibrate the per-trial budget so that the search certifies ``(epsilon, delta)``.

    Parameters
    ----------
    epsilon : float
        The search's total epsilon (``inf``: non-private trials).
    delta : float
        The search's delta; also given to each trial.
    probe : callable
        ``probe(candidate_index, epsilon_t, delta_t) -> (event, warnings)``.
    n_candidates : int
    mean, shape : float
        Distribution of the number of trials.

    Returns
    -------
    plan : SearchPlan
    caught : list of warnings.WarningMessage

    References
    ----------
    - Papernot and Steinke, "Hyperparameter tuning with Renyi differential privacy", ICLR 2022.

    Examples
    --------
    >>> from skdp.privacy import gaussian_steps, gdp_mu
    >>> probe = lambda c, e, d: (gaussian_steps(1 / gdp_mu(e, d)), [])
    >>> plan, _ = plan_search(1.0, 1e-6, probe, 3, 10.0, 1.0)
    >>> plan.trial_epsilon < 1.0
    True
    """
    delta_t = float(delta)
    everyone = range(n_candidates)
    if math.isinf(epsilon):
        return _plan_at(math.inf, delta_t, probe, everyone, mean, shape, delta)

    # Candidates with the same plan at the full budget (for example a grid
    # over a penalty) are represented by one of them during the bisection;
    # the final plan is probed for every candidate and checked.
    first, caught = _plan_at(epsilon, delta_t, probe, everyone, mean, shape, delta)
    groups = {}
    for c, ev in enumerate(first.fit_events):
        groups.setdefault(repr(ev), c)
    for indices in (sorted(groups.values()), everyone):
        cache = {}

        def at(e, indices=indices, cache=cache):
            if e not in cache:
                cache[e] = selection_epsilon(
                    _plan_at(e, delta_t, probe, indices, mean, shape, delta)[0].event
                )
            return cache[e]

        e_t = _bisect(epsilon, at)
        plan, more = _plan_at(e_t, delta_t, probe, everyone, mean, shape, delta)
        if selection_epsilon(plan.event) <= epsilon:
            return plan, caught + more
    raise AssertionError("unreachable: the full bisection certifies its result")
