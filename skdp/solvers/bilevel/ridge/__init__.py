"""Private tuning of a ridge penalty (the bilevel ridge instance).

- :mod:`~skdp.solvers.bilevel.ridge.gd`: clipped-gradient inner solver along a
  penalty path (the default);
- :mod:`~skdp.solvers.bilevel.ridge.risk`: noise-corrected risk estimate of the
  penalty;
- :mod:`~skdp.solvers.bilevel.ridge.stats`: released sufficient statistics;
- :mod:`~skdp.solvers.bilevel.ridge.tuning`: planning and the hypergradient
  tuning loop on a held-out split;
- :mod:`~skdp.solvers.bilevel.ridge.validation`,
  :mod:`~skdp.solvers.bilevel.ridge.signal` and
  :mod:`~skdp.solvers.bilevel.ridge.output`: the validation objective, the
  signal test and output perturbation.
"""
