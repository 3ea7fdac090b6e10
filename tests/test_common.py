"""scikit-learn's estimator checks over every public estimator in ``skdp.__all__``."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp import (
    BilevelRidge,
    HeavyTailedLinearRegression,
    HeavyTailedLogisticRegression,
    MinimaxFairClassifier,
)
from skdp._testing.estimator_checks import (
    expected_failed_checks,
    public_estimators,
    public_transformers,
)


@parametrize_with_checks(
    public_estimators(), expected_failed_checks=expected_failed_checks
)
def test_sklearn_compatible(estimator, check):
    check(estimator)


# The private-centring path changes what fit stores and how the intercept is
# reported, so it is checked too.
@parametrize_with_checks(
    [
        HeavyTailedLinearRegression(center=True, feature_norm=10.0),
        HeavyTailedLogisticRegression(center=True, feature_norm=10.0),
        MinimaxFairClassifier(center=True, feature_norm=10.0),
    ],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible_with_private_centring(estimator, check):
    check(estimator)


# The risk-estimate upper level has its own release and fit path.
@parametrize_with_checks(
    [BilevelRidge(tuning="risk_estimate", inner_solver="sufficient_statistics")],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible_risk_estimate_tuning(estimator, check):
    check(estimator)


# skdp.preprocessing: every transformer, with the parameters its checks need
# (declared categories for the encoder; the default bounds=None elsewhere).
@parametrize_with_checks(
    public_transformers(), expected_failed_checks=expected_failed_checks
)
def test_sklearn_compatible_transformers(estimator, check):
    check(estimator)


# The sufficient-statistics inner solver (the default is "gd") has its own
# fit path.
@parametrize_with_checks(
    [BilevelRidge(inner_solver="sufficient_statistics")],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible_sufficient_statistics(estimator, check):
    check(estimator)


# The one-vs-rest path (scales shared by the classes) fits differently for
# more than two classes, so it is checked too.
@parametrize_with_checks(
    [HeavyTailedLogisticRegression(multi_class="ovr")],
    expected_failed_checks=expected_failed_checks,
)
def test_sklearn_compatible_one_vs_rest(estimator, check):
    check(estimator)
