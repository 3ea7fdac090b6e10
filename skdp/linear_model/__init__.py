"""Private linear models."""

from ._heavy_tailed import HeavyTailedLinearRegression, HeavyTailedLogisticRegression

__all__ = ["HeavyTailedLinearRegression", "HeavyTailedLogisticRegression"]
