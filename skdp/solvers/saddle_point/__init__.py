"""Solvers of the saddle-point family (group DRO, Boob and Guzman).

- :mod:`~skdp.solvers.saddle_point.gda`: full-batch noisy descent-ascent for
  group DRO (one stacked Gaussian release per step; the default);
- :mod:`~skdp.solvers.saddle_point.nseg`: noisy stochastic extragradient;
- :mod:`~skdp.solvers.saddle_point.nispp`: noisy inexact stochastic proximal
  point with a certified inner solver;
- :mod:`~skdp.solvers.saddle_point.dispatch`: public schedules, calibration
  and dispatch to NSEG / NISPP;
- :mod:`~skdp.solvers.saddle_point.group_dro`: the group-DRO logistic operator;
- :mod:`~skdp.solvers.saddle_point.plan`: the public plan of a minimax fit
  (``plan_minimax -> MinimaxPlan``: estimates, schedule, noise, DpEvent) and
  the ``"gda"`` schedule rule;
- :mod:`~skdp.solvers.saddle_point.run`: the planned run (``release_inputs``,
  then ``run_minimax -> MinimaxResult`` for every solver).
"""
