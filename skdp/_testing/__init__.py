"""Test support shared by ``tests/`` and ``benchmarks/`` (not public API).

The top layer of the package: it may import anything in skdp, and nothing in
skdp imports it.

- :mod:`~skdp._testing.estimator_checks`: the estimators scikit-learn's checks
  run on, and their expected failures with written reasons;
- :mod:`~skdp._testing.audit_configs`: privacy-audit configurations;
- :mod:`~skdp._testing.all_estimators`: every estimator and transformer class,
  with small fast parameters (``FAST_PARAMS``);
- :mod:`~skdp._testing.pin`: pinned-output configurations and their
  regeneration command, ``python -m skdp._testing.pin --write``.
- :mod:`~skdp._testing.internals`: the internals benchmarks drive directly
  (the audit's ``scaled_noise``, the search's ``probe_plan``, the solver
  functions and patched modules of the solver studies), re-exported so that
  scripts import no private module.
"""
