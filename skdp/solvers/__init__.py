"""Internal solver backends.

A solver is a plain function of ``(data, privacy plan, rng)`` returning a
result; it never reads an estimator's hyperparameters and contains no
scikit-learn. All noise is drawn with :func:`skdp.privacy.gaussian_noise`.

DP saddle-point solvers (Boob and Guzmán):

- :mod:`~skdp.solvers.projections`: ball, (scaled) simplex, product domains;
- :mod:`~skdp.solvers.batch_schedule`: disjoint / Poisson / without-replacement
  batches and their privacy events;
- :mod:`~skdp.solvers.nseg`: noisy stochastic extragradient;
- :mod:`~skdp.solvers.nispp`: noisy inexact stochastic proximal point with a
  certified inner solver;
- :mod:`~skdp.solvers.saddle_point`: schedules, calibration and dispatch;
- :mod:`~skdp.solvers.group_dro`: the group-DRO logistic operator.
- :mod:`~skdp.solvers.group_dro_gda`: full-batch noisy descent-ascent for
  group DRO (one stacked Gaussian release per step).
"""
