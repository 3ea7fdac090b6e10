"""Benchmarks: heavy tailed (``python -m benchmarks.heavy_tailed.<script>``)."""
