"""Private linear models."""

from ._bilevel_ridge import BilevelRidge
from ._heavy_tailed import HeavyTailedLinearRegression, HeavyTailedLogisticRegression

__all__ = [
    "BilevelRidge",
    "HeavyTailedLinearRegression",
    "HeavyTailedLogisticRegression",
]
