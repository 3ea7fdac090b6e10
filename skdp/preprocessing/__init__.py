"""Private preprocessing: scalers from public or private bounds, encoders of declared categories.

Every step is a scikit-learn transformer with ``epsilon``, ``delta``,
``accountant`` and ``random_state`` and reports ``privacy_spent_`` (and its
plan, ``privacy_plan_``) after ``fit``, so that a whole pipeline spends one
budget (see :func:`skdp.spent` and :func:`skdp.check_pipeline`).
"""

from ._imputer import SimpleImputer
from ._minmax_scaler import MinMaxScaler
from ._one_hot import OneHotEncoder
from ._standard_scaler import StandardScaler

__all__ = ["MinMaxScaler", "OneHotEncoder", "SimpleImputer", "StandardScaler"]
