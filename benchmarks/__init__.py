"""skdp benchmarks: one subpackage per estimator or topic (see ``README.md``).

Run every script from the repository root as a module, for example
``python -m benchmarks.heavy_tailed.main --quick``; results go to
``benchmarks/results/``.
"""
