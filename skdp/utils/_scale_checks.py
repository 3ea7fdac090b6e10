"""Warn when a released scale shows that the features are in raw, unequal units.

An estimator that clips rows to one norm bound, or adapts its steps to one
feature scale, cannot see columns in very different units: the largest
column dominates the norm, the others are clipped to nothing, and the model
can end up predicting a constant (``HeavyTailedLogisticRegression`` on raw
UCI Adult predicts the majority class, with a private feature scale of about
52,000). These helpers look only at quantities the fit has already released
(noisy) or at public ones, never at the data, so the warning is
post-processing and costs no privacy.
"""

import math
import os
import sys
import warnings

import joblib
import numpy as np
import sklearn

from ..exceptions import UnscaledDataWarning

__all__ = ["warn_if_unscaled", "DOMINANCE_RATIO"]

#: A released scale this far (as a ratio) from the unit scale of standardized
#: features, or a column's scale this far above the median column's, warns.
DOMINANCE_RATIO = 30.0

_ADVICE = (
    "Standardize the columns privately first, e.g. "
    "make_pipeline(skdp.preprocessing.StandardScaler(bounds=(lower, upper)), "
    "{name}(...)), or scale them with public constants."
)


# Frames in these packages are not the user's: the warning points past them
# (joblib: scikit-learn's cross_val_score fits through it).
_LIBRARY_DIRS = tuple(
    os.path.dirname(os.path.abspath(module.__file__)) + os.sep
    for module in (sys.modules[__name__.split(".")[0]], sklearn, joblib)
)


def _user_stacklevel():
    """The ``stacklevel`` of the first caller outside skdp, scikit-learn and joblib.

    Counted from the caller of this function (level 1), so that the warning
    names the user's line however deep the estimator's call chain is (it
    passes through scikit-learn's ``_fit_context`` and a Pipeline's steps).
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(
        _LIBRARY_DIRS
    ):
        frame, level = frame.f_back, level + 1
    return level


def _message(name, what):
    return (
        f"{name}: {what}, so the columns look like raw units; one column in "
        "large units dominates the others and the fit can be no better than a "
        "constant. " + _ADVICE.format(name=name)
    )


def warn_if_unscaled(
    name,
    *,
    column_scales=None,
    feature_scale=None,
    row_norm=None,
    n_features=None,
    stacklevel=None,
):
    """Warn if released (or public) scales show that one column dominates.

    Three tests, each on what the caller passes:

    - ``column_scales``: per-column scales (private releases or public
      bounds); warns if the largest exceeds ``DOMINANCE_RATIO`` times the
      median.
    - ``feature_scale``: a scale that is about 1 on standardized or 0/1
      features (``HeavyTailedLogisticRegression.feature_scale_``); warns if it
      is more than ``DOMINANCE_RATIO`` away from 1.
    - ``row_norm`` with ``n_features``: a bound on the row norms, about
      ``sqrt(n_features)`` on standardized features; warns if it is more
      than ``DOMINANCE_RATIO`` away from it.

    Only released or public quantities may be passed: the decision to warn
    is then post-processing.

    Parameters
    ----------
    name : str
        Estimator name used in the message.
    column_scales : array-like of shape (n_features,), optional
    feature_scale : float, optional
    row_norm : float, optional
    n_features : int, optional
    stacklevel : int, optional
        Passed to :func:`warnings.warn`. By default, the first frame outside
        skdp, scikit-learn and joblib: the user's call.

    Returns
    -------
    warned : bool

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     warn_if_unscaled("Model", feature_scale=52437.0)
    True
    >>> warn_if_unscaled("Model", column_scales=[1.0, 2.0, 0.5])
    False
    """
    what = None
    if column_scales is not None:
        s = np.abs(np.asarray(column_scales, dtype=float).ravel())
        s = s[np.isfinite(s)]
        if s.size >= 2:
            median = float(np.median(s))
            if median > 0 and s.max() > DOMINANCE_RATIO * median:
                what = (
                    f"the largest column scale ({s.max():.3g}) is "
                    f"{s.max() / median:.0f} times the median one ({median:.3g})"
                )
    if what is None and feature_scale is not None:
        s = float(feature_scale)
        if np.isfinite(s) and s > 0 and max(s, 1 / s) > DOMINANCE_RATIO:
            what = f"the private feature scale is {s:.3g} (about 1 on standardized features)"
    if what is None and row_norm is not None and n_features:
        r, unit = float(row_norm), math.sqrt(n_features)
        if np.isfinite(r) and r > 0 and max(r / unit, unit / r) > DOMINANCE_RATIO:
            what = (
                f"the row-norm bound is {r:.3g} (about sqrt(n_features) = "
                f"{unit:.3g} on standardized features)"
            )
    if what is None:
        return False
    if stacklevel is None:
        stacklevel = _user_stacklevel()
    warnings.warn(_message(name, what), UnscaledDataWarning, stacklevel=stacklevel)
    return True
