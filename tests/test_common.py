"""scikit-learn's estimator checks over every public estimator in ``skdp.__all__``."""

from sklearn.utils.estimator_checks import parametrize_with_checks

from skdp.utils._estimator_checks import expected_failed_checks, public_estimators


@parametrize_with_checks(
    public_estimators(), expected_failed_checks=expected_failed_checks
)
def test_sklearn_compatible(estimator, check):
    check(estimator)
