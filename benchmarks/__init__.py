"""skdp benchmarks: one runner on the real-data suite and its reports (issue 31).

Run from the repository root, for example ``python -m benchmarks.run --quick``;
see ``benchmarks/README.md`` for every command. The full run writes
``benchmarks/results/``.
"""
