"""Accounted hyperparameter search: private selection among private trials."""

from ._search import PrivateSearchCV

__all__ = ["PrivateSearchCV"]
