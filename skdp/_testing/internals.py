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
"""

from ..model_selection._plan import probe_plan
from ..model_selection._scoring import noisy_validation_loss
from ..privacy._mechanisms import _scaled_noise as scaled_noise
from ..utils import check_generator

__all__ = ["check_generator", "noisy_validation_loss", "probe_plan", "scaled_noise"]
