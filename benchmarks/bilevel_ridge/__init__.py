"""Benchmarks: bilevel ridge (``python -m benchmarks.bilevel_ridge.<script>``)."""
