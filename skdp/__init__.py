"""skdp: scikit-learn compatible estimators with differential privacy."""

from ._receipt import receipt
from ._spent import spent
from .exceptions import PrivacyLeakWarning, UnscaledDataWarning
from .fairness import MinimaxFairClassifier
from .linear_model import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
)
from .pipeline import check_pipeline
from .privacy import BudgetExceededError, PrivacyAccountant

__version__ = "0.1.0.dev0"

__all__ = [
    "BilevelRidge",
    "BudgetExceededError",
    "HeavyTailedLinearRegression",
    "HeavyTailedLogisticRegression",
    "MinimaxFairClassifier",
    "PrivacyAccountant",
    "PrivacyLeakWarning",
    "UnscaledDataWarning",
    "check_pipeline",
    "receipt",
    "spent",
]
