"""Benchmarks: dask (``python -m benchmarks.dask.<script>``)."""
