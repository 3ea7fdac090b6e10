"""Private linear models."""

from ._bilevel_ridge import BilevelRidge

__all__ = ["BilevelRidge"]
