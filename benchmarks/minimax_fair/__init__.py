"""Benchmarks: minimax fair (``python -m benchmarks.minimax_fair.<script>``)."""
