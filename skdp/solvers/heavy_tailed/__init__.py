"""Solvers of the heavy-tailed family (private ERM with clipped gradients).

- :mod:`~skdp.solvers.heavy_tailed.gd`: full-batch clipped DP gradient descent
  (the default) and its public plan;
- :mod:`~skdp.solvers.heavy_tailed.multinomial`: the multinomial and
  one-vs-rest versions for ``K > 2`` classes;
- :mod:`~skdp.solvers.heavy_tailed.bounds` and
  :mod:`~skdp.solvers.heavy_tailed.units`: private scale, norm and quantile
  estimates that set the clipping levels;
- :mod:`~skdp.solvers.heavy_tailed.known_lipschitz`,
  :mod:`~skdp.solvers.heavy_tailed.localized` and
  :mod:`~skdp.solvers.heavy_tailed.onepass`: the paper's algorithms
  (Theorem 2, Corollary 1, Algorithm 8);
- :mod:`~skdp.solvers.heavy_tailed.common` and
  :mod:`~skdp.solvers.heavy_tailed.kernels`: shared derivatives and the
  compiled clipped-gradient kernels;
- :mod:`~skdp.solvers.heavy_tailed.result`: :class:`HeavyTailedResult`, the
  one result type every solver of the family returns.
"""
