"""Benchmarks: privacy (``python -m benchmarks.privacy.<script>``)."""
