"""Internals that tests and benchmarks drive directly, under one stable name.

Benchmarks use skdp's public API or this package, never a private module
(``benchmarks/README.md``). A few studies need a mechanism below the public
API; they import it from here, so that moving it inside skdp changes one
line here instead of every script:

- :func:`scaled_noise`: multiply every noise draw by a factor inside a
  ``with`` block (the privacy audit's negative control; an estimator fitted
  inside it with a factor below 1 is **not** private at its stated epsilon);
- :func:`probe_plan`: the DpEvent an estimator would charge, without fitting
  (``PrivateSearchCV``'s planning probe);
- :func:`noisy_validation_loss`: ``PrivateSearchCV``'s private score of one
  trial;
- :func:`check_generator`: the fit's generator from ``random_state`` (and an
  optional stream key), as estimators build it.

The solver studies (formerly ``benchmarks/heavy_tailed``,
``benchmarks/bilevel_ridge``, ``benchmarks/minimax_fair`` and
``benchmarks/dask``, now outside the repository; see git history) import the
solver functions they time or ablate from here too (each group below says why).
Names ending in ``_module`` are the module objects themselves: a study that
patches a module constant (an old rule against the new one) patches the real
module through them, so the patch reaches the code that reads it.
"""

from ..linear_model import _bilevel_ridge as bilevel_ridge_estimator_module
from ..linear_model import _heavy_tailed as heavy_tailed_estimator_module
from ..model_selection._plan import probe_plan
from ..model_selection._scoring import noisy_validation_loss
from ..privacy import _norm_bound as norm_bound_module  # draws the bounds' counts
from ..privacy._mechanisms import _scaled_noise as scaled_noise

# Bilevel ridge: the sufficient-statistics releases, the planner and the
# validation objective, driven without the estimator (baselines on the same
# releases, selection-rule and frontier studies, inner-noise ablations).
from ..solvers.bilevel.hypergradient import bilevel_outer_loop
from ..solvers.bilevel.plan import gdp_budget
from ..solvers.bilevel.ridge import curvature as ridge_curvature_module
from ..solvers.bilevel.ridge import gd as ridge_gd_module
from ..solvers.bilevel.ridge import gd_defaults as bilevel_ridge_gd_defaults_module
from ..solvers.bilevel.ridge.gd import plan_ridge_gd, ridge_gd
from ..solvers.bilevel.ridge.output import output_sensitivities
from ..solvers.bilevel.ridge.stats import (
    exact_statistics,
    gram_sensitivity,
    moment_sensitivity,
    release_shared_gram,
    release_statistics,
)
from ..solvers.bilevel.ridge.tuning import (
    BilevelRidgeSettings,
    default_penalty,
    final_penalty_factor,
    loc_gd_clip,
    plan_bilevel_ridge,
    pooled_noise_variances,
    signal_found,
    validation_objective,
)
from ..solvers.bilevel.ridge.validation import ValidationNoise, ValidationObjective

# Heavy-tailed solvers: the compiled gradient kernels (timed against NumPy),
# the clip-rule targets and step rule (compared against older rules) and the
# one-pass solver, run below the estimator.
from ..solvers.heavy_tailed import bounds as heavy_tailed_bounds_module
from ..solvers.heavy_tailed import gd as heavy_tailed_gd_module
from ..solvers.heavy_tailed import intercept as heavy_tailed_intercept_module
from ..solvers.heavy_tailed import multinomial as heavy_tailed_multinomial_module
from ..solvers.heavy_tailed.bounds import DEFAULT_TARGET, QuantileTarget
from ..solvers.heavy_tailed.gd import practical_step_size
from ..solvers.heavy_tailed.kernels import (
    HAVE_NUMBA,
    clipped_gradient_sum,
    glm_derivative,
    njit,
)
from ..solvers.heavy_tailed.multinomial import clipped_multinomial_gradient_sum
from ..solvers.heavy_tailed.onepass import (
    STEP_DECAY,
    make_onepass_plan,
    onepass_clipped_dp_sgd,
)

# Saddle point: the group-DRO operator (its duality gap is measured directly)
# and the planning module whose constants the gap and schedule studies patch.
from ..solvers.saddle_point import plan as saddle_point_plan_module
from ..solvers.saddle_point.group_dro import GroupDROLogistic
from ..utils import check_generator

__all__ = [
    "DEFAULT_TARGET",
    "HAVE_NUMBA",
    "BilevelRidgeSettings",
    "GroupDROLogistic",
    "QuantileTarget",
    "STEP_DECAY",
    "ValidationNoise",
    "ValidationObjective",
    "bilevel_outer_loop",
    "bilevel_ridge_estimator_module",
    "bilevel_ridge_gd_defaults_module",
    "check_generator",
    "clipped_gradient_sum",
    "clipped_multinomial_gradient_sum",
    "default_penalty",
    "exact_statistics",
    "final_penalty_factor",
    "gdp_budget",
    "glm_derivative",
    "gram_sensitivity",
    "heavy_tailed_bounds_module",
    "heavy_tailed_estimator_module",
    "heavy_tailed_gd_module",
    "heavy_tailed_intercept_module",
    "heavy_tailed_multinomial_module",
    "loc_gd_clip",
    "make_onepass_plan",
    "moment_sensitivity",
    "njit",
    "noisy_validation_loss",
    "norm_bound_module",
    "onepass_clipped_dp_sgd",
    "output_sensitivities",
    "plan_bilevel_ridge",
    "plan_ridge_gd",
    "pooled_noise_variances",
    "practical_step_size",
    "probe_plan",
    "release_shared_gram",
    "release_statistics",
    "ridge_curvature_module",
    "ridge_gd",
    "ridge_gd_module",
    "saddle_point_plan_module",
    "scaled_noise",
    "signal_found",
    "validation_objective",
]
