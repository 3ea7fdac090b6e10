"""Benchmarks: model selection (``python -m benchmarks.model_selection.<script>``)."""
