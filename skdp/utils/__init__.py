"""Utilities: input validation, clipping and estimator-check bookkeeping."""

from ._validation import (
    add_intercept_column,
    check_declared_classes,
    check_generator,
    clip_factors,
    clip_rows,
    clip_targets,
    resolve_delta,
    safe_row_norms,
    uncenter_intercept,
)

__all__ = [
    "add_intercept_column",
    "check_declared_classes",
    "check_generator",
    "clip_factors",
    "clip_rows",
    "clip_targets",
    "resolve_delta",
    "safe_row_norms",
    "uncenter_intercept",
]
