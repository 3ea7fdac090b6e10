"""Benchmarks: pipeline (``python -m benchmarks.pipeline.<script>``)."""
