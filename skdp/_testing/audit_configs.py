"""Audit configurations shared by the tests and ``benchmarks/audit.py``.

Black-box audits of a final model lose power when the output mixes many
noisy releases, because the other steps' noise hides the canary. Each
estimator is therefore audited in a configuration whose output is close to a
single release, with public bounds.
"""

AUDIT_PARAMS = {
    # Sufficient statistics, tuning fixed to one alpha: ridge on one release.
    "BilevelRidge": dict(
        inner_solver="sufficient_statistics",
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

# Further modes audited next to the class's own configuration: label ->
# (class name, parameters). The risk-estimate mode is one release of all rows
# (Gram matrix, moment vector, y^T y); its whole penalty path is
# post-processing.
AUDIT_VARIANTS = {
    # The default solver: one full-batch noisy descent-ascent step (one group
    # in the canary data, so one Gaussian release of the clipped gradient sum).
    "MinimaxFairClassifier(solver='gda')": (
        "MinimaxFairClassifier",
        dict(solver="gda", max_iter=1, feature_norm=1.0, classes=[0, 1]),
    ),
    # Multinomial path of the default solver (a declared third class without
    # examples): one full-batch step of the whole-record clipped d x K
    # gradient. Without the shrinkage toward the base rates: after one noisy
    # step it sends the scores to the prior, which hides the canary from a
    # black-box audit (the /4 control's lower bound fell from 1.83 to 0.70).
    "MinimaxFairClassifier(solver='gda', multinomial)": (
        "MinimaxFairClassifier",
        dict(
            solver="gda",
            max_iter=1,
            feature_norm=1.0,
            classes=[0, 1, 2],
            calibration_share=0.0,
        ),
    ),
    "BilevelRidge(tuning='risk_estimate')": (
        "BilevelRidge",
        dict(
            tuning="risk_estimate",
            inner_solver="sufficient_statistics",
            feature_norm=1.0,
            target_bound=1.0,
            fit_intercept=False,
        ),
    ),
    # The default: clipped full-batch DP-GD inner solver with the plug-in
    # penalty, two gradient steps (the penalty of the second is
    # post-processing of the first), after the private scale quantiles.
    "BilevelRidge(inner_solver='gd', tuning='risk_estimate')": (
        "BilevelRidge",
        dict(
            inner_solver="gd",
            tuning="risk_estimate",
            inner_max_iter=2,
            feature_norm=1.0,
            target_bound=1.0,
            fit_intercept=False,
        ),
    ),
    # The default with its intercept: the two steps and the final intercept
    # release (clipped residual mean, shrunk).
    "BilevelRidge(inner_solver='gd', fit_intercept=True)": (
        "BilevelRidge",
        dict(
            inner_solver="gd",
            tuning="risk_estimate",
            inner_max_iter=2,
            feature_norm=1.0,
            target_bound=1.0,
            fit_intercept=True,
        ),
    ),
    # The default where the gradient noise is large (delta = 1e-8 puts the
    # plan above CURVATURE_RATIO): the two steps, the released curvature of
    # the clipped loss (the plug-in rule and the intercept shrinkage are
    # post-processing of it) and the intercept release.
    "BilevelRidge(inner_solver='gd', curvature release)": (
        "BilevelRidge",
        dict(
            inner_solver="gd",
            tuning="risk_estimate",
            inner_max_iter=2,
            feature_norm=1.0,
            target_bound=1.0,
            fit_intercept=True,
            delta=1e-8,
        ),
    ),
    # The default step rule at small n (max_iter="auto", n = 50 < 1e4, planned
    # clipped fraction 0.7 >= 0.5): 30 steps whose default step may grow up
    # to 1 / (1 - p) from the released gradients (it grows in ~97% of the
    # fits on the canary data), after the private scale quantiles. Less
    # power than one step; it checks that the growth adds nothing the
    # audit can see.
    "HeavyTailedLinearRegression(max_iter='auto', step growth)": (
        "HeavyTailedLinearRegression",
        dict(max_iter="auto", feature_norm=1.0, fit_intercept=False),
    ),
    # Multinomial path (a declared third class without examples): one
    # full-batch step of the d x K per-record clipped gradient.
    "HeavyTailedLogisticRegression(multinomial)": (
        "HeavyTailedLogisticRegression",
        dict(max_iter=1, feature_norm=1.0, fit_intercept=False, classes=[0, 1, 2]),
    ),
}


def audit_cases(estimators):
    """``(label, estimator, parameters)`` for every audited configuration.

    Parameters
    ----------
    estimators : list of estimator
        One instance of each public estimator.

    Returns
    -------
    list of tuple
    """
    by_name = {type(e).__name__: e for e in estimators}
    cases = [(name, by_name[name], AUDIT_PARAMS[name]) for name in by_name]
    cases += [
        (label, by_name[name], params)
        for label, (name, params) in AUDIT_VARIANTS.items()
        if name in by_name
    ]
    return cases


# The heavy-tailed truncation drops rows with huge targets from both datasets;
# a moderate canary target is still clipped at the private clip level.
CANARY_TARGET = {"HeavyTailedLinearRegression": 2.0}


# PrivateSearchCV (skdp.model_selection) is audited on its released noisy
# validation loss (``best_score_``): every record has zero features and a
# zero target, so only the canary's clipped loss (0 in D, the bound in D')
# moves it, and most rows are validation rows, so the canary usually lands
# there. The negative control selects (and reports) exact scores.
SEARCH_AUDIT = {
    "estimator": (
        "HeavyTailedLinearRegression",
        dict(feature_norm=1.0, fit_intercept=False, max_iter=1),
    ),
    "search": dict(
        param_grid={"step_size": [0.1, 1.0]},
        mean_trials=2.0,
        trials_shape=1.0,  # geometric: K >= 1, a score is always released
        validation_fraction=0.9,
        loss_bound=1.0,
    ),
    "n_samples": 40,
    "canary_target": 10.0,
}


# skdp.privacy.private_norm_bound (the one private norm bound) is audited as a
# mechanism: ``n`` values at ``low`` (counted at the bisection's first
# midpoint, log2 = 0) and ``n - n_low`` at ``high``; D' moves record 0 to
# ``canary`` (above every midpoint the search can visit from there), so the
# first count sits just above its target in D and just below it in D'.
NORM_BOUND_AUDIT = {
    "mu": 0.3,
    "delta": 1e-5,
    "n": 401,
    "n_low": 359,
    "low": 0.5,
    "high": 2.0,
    "canary": 2.0**20,
    "n_runs": 400,
}
