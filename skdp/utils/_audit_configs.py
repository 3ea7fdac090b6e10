"""Audit configurations shared by the tests and ``benchmarks/privacy_audit.py``.

Black-box audits of a final model lose power when the output mixes many
noisy releases, because the other steps' noise hides the canary. Each
estimator is therefore audited in a configuration whose output is close to a
single release, with public bounds.
"""

AUDIT_PARAMS = {
    # Tuning fixed to one alpha: ridge on one release of sufficient statistics.
    "BilevelRidge": dict(
        feature_norm=1.0,
        target_bound=1.0,
        alpha_min=20.0,
        alpha_max=20.0,
        fit_intercept=False,
    ),
    # One full-batch step at a private clip level.
    "HeavyTailedLinearRegression": dict(
        max_iter=1, feature_norm=1.0, fit_intercept=False
    ),
    "HeavyTailedLogisticRegression": dict(
        max_iter=1, feature_norm=1.0, fit_intercept=False, classes=[0, 1]
    ),
    # One proximal subproblem on the whole data, then one Gaussian release.
    "MinimaxFairClassifier": dict(
        solver="nispp",
        sampling="disjoint",
        batch_size=50,
        max_iter=1,
        feature_norm=1.0,
        classes=[0, 1],
    ),
}

# The heavy-tailed truncation drops rows with huge targets from both datasets;
# a moderate canary target is still clipped at the private clip level.
CANARY_TARGET = {"HeavyTailedLinearRegression": 2.0}
