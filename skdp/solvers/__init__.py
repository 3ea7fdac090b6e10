"""Internal solver backends, one subpackage per family (paper).

A solver is a plain function of ``(data, privacy plan, rng)`` returning a
result; it never reads an estimator's hyperparameters and contains no
scikit-learn. All noise is drawn with :func:`skdp.privacy.gaussian_noise`.

- :mod:`~skdp.solvers.heavy_tailed`: private ERM with clipped gradients
  (:class:`~skdp.HeavyTailedLinearRegression`,
  :class:`~skdp.HeavyTailedLogisticRegression`);
- :mod:`~skdp.solvers.bilevel`: private bilevel optimisation and the tuned
  ridge (:class:`~skdp.BilevelRidge`);
- :mod:`~skdp.solvers.saddle_point`: private saddle-point solvers for group DRO
  (:class:`~skdp.MinimaxFairClassifier`);
- shared: :mod:`~skdp.solvers.sampling` (batch schedules and their privacy
  events), :mod:`~skdp.solvers.projections` (balls, simplices, products) and
  :mod:`~skdp.solvers._distributed` (exact sums on Dask).
"""
