"""Privacy accounting and basic mechanisms (nothing about models).

Neighbouring relation
---------------------
skdp uses *replace-one* neighbours: two datasets of the same, public size
``n`` that differ in one record. All sensitivities are replace-one.

Noise-multiplier convention
---------------------------
A :class:`GaussianDpEvent` ``noise_multiplier`` is ``sigma / Delta`` where
``Delta`` is the replace-one L2 sensitivity of the statistic on its full,
unsampled input (``2C/n`` for the mean of vectors clipped to ``C``, ``2C`` for
their sum, also when the sum runs over a Poisson or fixed-size sample). A
full-batch step with multiplier ``z`` is exactly ``1/z``-GDP.

Budget
------
:class:`Budget` is the one convention for splitting a fit's budget: the
``(epsilon, delta)`` target becomes a GDP ``mu`` (:func:`gdp_budget`), split
by shares of ``mu**2`` into sub-budgets and noise multipliers
(:func:`split_gdp`).

Accounting
----------
- full-batch Gaussian compositions: exact ``mu``-GDP trade-off curve;
- Poisson-subsampled Gaussian steps and pure-epsilon steps: dp-accounting's
  privacy loss distributions (PLD);
- fixed-size sampling without replacement: dp-accounting's RDP accountant
  (the only one that supports it under replace-one), with pure-epsilon steps
  entering as ``epsilon**2/2``-zCDP;
- :class:`ParallelDpEvent` for disjoint, data-independent parts: worst part;
- :class:`PrivateSelectionDpEvent` (best of a random number of private
  trials): Renyi DP (Papernot and Steinke), entered in the ledger as the
  ``(epsilon, delta)`` pair it certifies.
"""

from ._accountant import BudgetExceededError, PrivacyAccountant
from ._budget import Budget, gdp_budget, split_gdp
from ._calibration import calibrate_gaussian, calibrate_noise_multiplier
from ._composition import certify_delta, certify_epsilon, gdp_mu_of
from ._conversions import (
    gdp_delta,
    gdp_epsilon,
    gdp_mu,
    gdp_to_zcdp,
    pure_to_zcdp,
    zcdp_epsilon,
    zcdp_rho,
)
from ._events import (
    ApproxDpEvent,
    ComposedDpEvent,
    DpEvent,
    FailureDpEvent,
    GaussianDpEvent,
    NonPrivateDpEvent,
    NoOpDpEvent,
    ParallelDpEvent,
    PoissonSampledDpEvent,
    PrivateSelectionDpEvent,
    PureDpEvent,
    SampledWithoutReplacementDpEvent,
    SelfComposedDpEvent,
    gaussian_steps,
)
from ._ledger import (
    LedgerEntry,
    PrivacyLedger,
    hidden_from_ledgers,
    parallel_scope,
    record_failure,
    recording,
    verify,
)
from ._mechanisms import (
    gaussian_mechanism,
    gaussian_noise,
    noisy_histogram,
    noisy_histogram_event,
    private_quantile,
    private_quantile_event,
    private_row_mean,
    reachable_quantile_level,
)
from ._norm_bound import private_norm_bound, private_norm_bound_event
from ._selection import (
    rdp_curve,
    repeat_and_select_rdp,
    selection_epsilon,
    truncated_negative_binomial_gamma,
)
from ._split import split_epsilon

__all__ = [
    "Budget",
    "BudgetExceededError",
    "PrivacyAccountant",
    "calibrate_gaussian",
    "calibrate_noise_multiplier",
    "certify_delta",
    "certify_epsilon",
    "gdp_mu_of",
    "gdp_delta",
    "gdp_epsilon",
    "gdp_mu",
    "gdp_to_zcdp",
    "pure_to_zcdp",
    "zcdp_epsilon",
    "zcdp_rho",
    "ComposedDpEvent",
    "DpEvent",
    "FailureDpEvent",
    "ApproxDpEvent",
    "GaussianDpEvent",
    "NoOpDpEvent",
    "NonPrivateDpEvent",
    "ParallelDpEvent",
    "PoissonSampledDpEvent",
    "PureDpEvent",
    "PrivateSelectionDpEvent",
    "rdp_curve",
    "repeat_and_select_rdp",
    "selection_epsilon",
    "truncated_negative_binomial_gamma",
    "SampledWithoutReplacementDpEvent",
    "SelfComposedDpEvent",
    "gaussian_steps",
    "gaussian_mechanism",
    "private_row_mean",
    "gaussian_noise",
    "noisy_histogram",
    "noisy_histogram_event",
    "private_norm_bound",
    "private_norm_bound_event",
    "private_quantile",
    "reachable_quantile_level",
    "private_quantile_event",
    "split_epsilon",
    "gdp_budget",
    "split_gdp",
    "LedgerEntry",
    "PrivacyLedger",
    "parallel_scope",
    "record_failure",
    "recording",
    "hidden_from_ledgers",
    "verify",
]
