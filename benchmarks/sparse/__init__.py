"""Benchmarks: sparse input (``python -m benchmarks.sparse.main``)."""
