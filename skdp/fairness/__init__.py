"""Private minimax group-fair classification and group metrics."""

__all__ = []
