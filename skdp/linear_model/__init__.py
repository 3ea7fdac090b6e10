"""Private linear models."""

__all__ = []
