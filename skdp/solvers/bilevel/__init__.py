"""Solvers of the bilevel family (Kornowski et al.).

- :mod:`~skdp.solvers.bilevel.hypergradient`: the paper's private
  hypergradient loop (Algorithms 1 and 3);
- :mod:`~skdp.solvers.bilevel.inner`: DP-Loc-GD / DP-Loc-SGD inner solvers;
- :mod:`~skdp.solvers.bilevel.plan`: the loop's public privacy plan;
- :mod:`~skdp.solvers.bilevel.ridge`: the ridge instance behind
  :class:`~skdp.BilevelRidge`.
"""
