"""Statistical privacy audit: an empirical lower bound on epsilon.

The audit plays the attacker of the DP definition. It fits an estimator many
times on two neighbouring datasets, ``D`` and ``D'``, which differ only in one
*canary* record, scores every model at the canary, and tests how well the
score tells the two apart. For an ``(epsilon, delta)``-DP algorithm every test
has false positive rate ``FPR`` and false negative rate ``FNR`` with

    FPR + exp(epsilon) FNR >= 1 - delta   and   FNR + exp(epsilon) FPR >= 1 - delta

(Kairouz, Oh and Viswanath 2015), so upper confidence bounds on both rates give
a lower confidence bound on epsilon. The threshold is chosen on one half of
the runs and the rates are measured on the other half, so the bound holds with
probability at least ``1 - alpha`` (Clopper-Pearson intervals, Jagielski,
Ullman and Oprea 2020; Nasr et al. 2021).

A lower bound above the claimed epsilon proves a privacy bug. A bound below it
proves nothing by itself, which is why the audit must also be shown to have
power: an estimator with deliberately scaled-down noise must be flagged (see
the negative control in the tests and ``benchmarks/audit.py``).
"""

from dataclasses import dataclass

import numpy as np
from scipy.stats import beta
from sklearn.base import clone

from ..utils._validation import check_generator

__all__ = [
    "AuditResult",
    "audit_estimator",
    "epsilon_lower_bound",
    "canary_score",
    "label_flip_canary",
]


@dataclass(frozen=True)
class AuditResult:
    """Outcome of :func:`audit_estimator`.

    Parameters
    ----------
    epsilon_lower_bound, claimed_epsilon, delta, threshold, direction, fpr, fnr, n_fits
        See Attributes.

    Attributes
    ----------
    epsilon_lower_bound : float
        Lower confidence bound on the epsilon of the audited estimator.
    claimed_epsilon : float
        ``privacy_spent_[0]`` of the fitted models.
    delta : float
        The delta used in the bound (the models' ``privacy_spent_[1]``).
    threshold : float
        Decision threshold chosen on the first half of the runs.
    direction : int
        ``+1`` if a score above the threshold guesses ``D'``, else ``-1``.
    fpr, fnr : float
        Empirical error rates on the held-out half.
    n_fits : int
        Total number of fits.

    References
    ----------
    - Jagielski, Ullman and Oprea, "Auditing differentially private machine learning: how
      private is private SGD?", NeurIPS 2020.
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.

    Examples
    --------
    >>> r = AuditResult(0.2, 1.0, 1e-5, 0.0, 1, 0.4, 0.5, 400)
    >>> r.violated
    False
    """

    epsilon_lower_bound: float
    claimed_epsilon: float
    delta: float
    threshold: float
    direction: int
    fpr: float
    fnr: float
    n_fits: int

    @property
    def violated(self):
        """Whether the audit proves the claim wrong (bound above the claim)."""
        return self.epsilon_lower_bound > self.claimed_epsilon


def _clopper_pearson_upper(k, n, alpha):
    """One-sided upper confidence bound on a binomial rate."""
    if k >= n:
        return 1.0
    return float(beta.ppf(1.0 - alpha, k + 1, n - k))


def epsilon_lower_bound(scores_out, scores_in, threshold, direction, delta, alpha=0.05):
    """Lower confidence bound on epsilon from one threshold test.

    Parameters
    ----------
    scores_out : array-like
        Scores of models fitted on ``D`` (canary absent).
    scores_in : array-like
        Scores of models fitted on ``D'`` (canary present).
    threshold : float
        The test guesses ``D'`` when ``direction * (score - threshold) > 0``.
    direction : {+1, -1}
    delta : float
        The claimed delta.
    alpha : float, default=0.05
        The bound holds with probability at least ``1 - alpha`` (split evenly
        between the two rates).

    Returns
    -------
    epsilon : float
        Non-negative lower bound.

    References
    ----------
    - Jagielski, Ullman and Oprea, "Auditing differentially private machine learning: how
      private is private SGD?", NeurIPS 2020.
    - Kairouz, Oh and Viswanath, "The composition theorem for differential privacy", ICML 2015.

    Examples
    --------
    >>> import numpy as np
    >>> out, inn = np.zeros(100), np.ones(100)  # perfectly separable
    >>> round(epsilon_lower_bound(out, inn, 0.5, +1, delta=0.0), 2)
    3.28
    """
    scores_out = np.asarray(scores_out, float)
    scores_in = np.asarray(scores_in, float)
    fp = int(np.sum(direction * (scores_out - threshold) > 0))
    fn = int(np.sum(direction * (scores_in - threshold) <= 0))
    fpr_u = _clopper_pearson_upper(fp, scores_out.size, alpha / 2)
    fnr_u = _clopper_pearson_upper(fn, scores_in.size, alpha / 2)
    candidates = [0.0]
    for a, b in ((fpr_u, fnr_u), (fnr_u, fpr_u)):
        num = 1.0 - delta - a
        if num > 0 and b > 0:
            candidates.append(np.log(num / b))
    return float(max(candidates))


def _choose_threshold(scores_out, scores_in, delta, alpha):
    values = np.unique(np.concatenate([scores_out, scores_in]))
    # Midpoints between consecutive distinct scores, plus the extremes.
    cuts = np.concatenate(
        [[values[0] - 1.0], (values[:-1] + values[1:]) / 2, [values[-1] + 1.0]]
    )
    best = (-1.0, cuts[0], 1)
    for direction in (1, -1):
        for t in cuts:
            eps = epsilon_lower_bound(scores_out, scores_in, t, direction, delta, alpha)
            if eps > best[0]:
                best = (eps, t, direction)
    return best[1], best[2]


def canary_score(model, x_canary, y_canary):
    """Default statistic: the model's real-valued output at the canary.

    ``decision_function`` for classifiers that have one, else ``predict``.
    The canary's label is not used by this score.

    Parameters
    ----------
    model : fitted estimator
    x_canary : ndarray of shape (n_features,)
    y_canary : object
        Unused; present so that custom scores can use it.

    Returns
    -------
    score : float

    References
    ----------
    - Jagielski, Ullman and Oprea, "Auditing differentially private machine learning: how
      private is private SGD?", NeurIPS 2020.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> model = LinearRegression().fit([[0.0], [1.0]], [0.0, 2.0])
    >>> round(canary_score(model, np.array([2.0]), None), 6)
    4.0
    """
    x = np.asarray(x_canary, dtype=float).reshape(1, -1)
    if hasattr(model, "decision_function"):
        return float(np.ravel(model.decision_function(x))[0])
    return float(np.ravel(model.predict(x))[0])


def audit_estimator(
    estimator,
    X,
    y_out,
    y_in,
    *,
    x_in=None,
    canary_index=0,
    fit_params_out=None,
    fit_params_in=None,
    n_fits=400,
    score=canary_score,
    alpha=0.05,
    random_state=None,
):
    """Empirical epsilon lower bound of ``estimator`` by a canary attack.

    ``D`` is ``(X, y_out)``; ``D'`` replaces record ``canary_index`` by the
    canary ``(x_in, y_in[canary_index])`` (by default only the label changes,
    which is the replace-one change that moves a linear model most when the
    row sits on the public feature-norm bound). The estimator is cloned and
    refitted ``n_fits // 2`` times on each dataset with fresh seeds.

    Parameters
    ----------
    estimator : estimator
        An skdp estimator (must expose ``random_state`` and, after fitting,
        ``privacy_spent_``).
    X : ndarray of shape (n, d)
        Features of ``D``.
    y_out, y_in : ndarray of shape (n,)
        Targets of ``D`` and ``D'``; they may differ only at ``canary_index``.
    x_in : ndarray of shape (d,), optional
        Canary features in ``D'``; defaults to ``X[canary_index]``.
    canary_index : int, default=0
        Position of the replaced record.
    fit_params_out, fit_params_in : dict, optional
        Extra ``fit`` arguments for ``D`` and ``D'`` (e.g. ``sensitive_features``).
    n_fits : int, default=400
        Total number of fits (half on each dataset).
    score : callable, default=canary_score
        ``score(model, x_canary, y_canary) -> float``.
    alpha : float, default=0.05
        Confidence level of the lower bound.
    random_state : int, Generator or None, default=None
        Seeds the per-fit seeds and the split of runs into halves.

    Returns
    -------
    AuditResult

    References
    ----------
    - Jagielski, Ullman and Oprea, "Auditing differentially private machine
    - learning: how private is private SGD?", NeurIPS 2020.
    - Nasr, Song, Thakurta, Papernot and Carlini, "Adversary instantiation:
    - lower bounds for differentially private machine learning", S&P 2021.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.privacy.audit import audit_estimator
    >>> from sklearn.dummy import DummyRegressor
    >>> class NoisyMean(DummyRegressor):  # a toy "private" mean, not DP-calibrated
    ...     def __init__(self, random_state=None):
    ...         self.random_state = random_state
    ...     def fit(self, X, y):
    ...         rng = np.random.default_rng(self.random_state)
    ...         self.m_ = np.clip(y, -1, 1).mean() + rng.normal(0, 0.5)
    ...         self.privacy_spent_ = (1.0, 0.0)
    ...         return self
    ...     def predict(self, X):
    ...         return np.full(len(X), self.m_)
    >>> X = np.zeros((10, 1)); y0 = np.zeros(10); y1 = y0.copy(); y1[0] = 1
    >>> res = audit_estimator(NoisyMean(), X, y0, y1, n_fits=100, random_state=0)
    >>> res.epsilon_lower_bound >= 0
    True
    """
    X = np.asarray(X)
    y_out = np.asarray(y_out)
    y_in = np.asarray(y_in)
    X_in = X.copy()
    if x_in is not None:
        X_in[canary_index] = x_in
    x_canary = X_in[canary_index]
    y_canary = y_in[canary_index]
    fit_params_out = fit_params_out or {}
    fit_params_in = fit_params_in or {}
    rng = check_generator(random_state)
    half = n_fits // 2
    seeds = rng.integers(0, 2**31 - 1, size=(2, half))
    scores = np.empty((2, half))
    claimed = None
    for side, (Xs, ys, params) in enumerate(
        ((X, y_out, fit_params_out), (X_in, y_in, fit_params_in))
    ):
        for i in range(half):
            model = clone(estimator).set_params(random_state=int(seeds[side, i]))
            model.fit(Xs, ys, **params)
            scores[side, i] = score(model, x_canary, y_canary)
            claimed = model.privacy_spent_
    eps_claim, delta = float(claimed[0]), float(claimed[1])
    # Choose the test on one half of the runs, measure it on the other.
    perm = rng.permutation(half)
    pick, held = perm[: half // 2], perm[half // 2 :]
    t, direction = _choose_threshold(scores[0, pick], scores[1, pick], delta, alpha)
    eps_lb = epsilon_lower_bound(
        scores[0, held], scores[1, held], t, direction, delta, alpha
    )
    fpr = float(np.mean(direction * (scores[0, held] - t) > 0))
    fnr = float(np.mean(direction * (scores[1, held] - t) <= 0))
    return AuditResult(
        eps_lb, eps_claim, delta, float(t), int(direction), fpr, fnr, 2 * half
    )


def label_flip_canary(
    X, y, *, classifier, index=0, magnitude=1e6, target=None, classes=(0, 1)
):
    """Neighbouring datasets that differ in the label of one extreme record.

    Record ``index`` is moved far along a new direction (the first feature,
    scaled by ``magnitude``) so that any public feature-norm bound clips it
    to the boundary, where it moves a linear model most. ``D`` gives it the
    most negative label, ``D'`` the most positive one (the first and second
    of ``classes`` for a classifier, ``-magnitude`` and ``+magnitude`` for a
    regressor, which target clipping brings to the bound).

    Parameters
    ----------
    X : array-like of shape (n, d)
        Features of the other records.
    y : array-like of shape (n,)
        Targets of the other records.
    classifier : bool
        Whether the audited estimator is a classifier.
    index : int, default=0
        Position of the canary.
    magnitude : float, default=1e6
        Size of the canary's feature.
    target : float, optional
        Size of the canary's regression target (default ``magnitude``). Use a
        moderate value for estimators that drop records with huge targets
        (the heavy-tailed truncation), where a huge canary would be dropped
        from both datasets.
    classes : tuple, default=(0, 1)
        Labels for ``D`` and ``D'`` when ``classifier`` is true.

    Returns
    -------
    X_canary : ndarray of shape (n, d)
        Features shared by ``D`` and ``D'``.
    y_out, y_in : ndarray of shape (n,)
        Targets of ``D`` and ``D'``.

    References
    ----------
    - Nasr, Song, Thakurta, Papernot and Carlini, "Adversary instantiation: lower bounds for
      differentially private machine learning", S&P 2021.

    Examples
    --------
    >>> import numpy as np
    >>> X, y = np.zeros((4, 2)), np.zeros(4)
    >>> Xc, y_out, y_in = label_flip_canary(X, y, classifier=False)
    >>> float(y_out[0]), float(y_in[0]), float(Xc[0, 0])
    (-1000000.0, 1000000.0, 1000000.0)
    """
    X = np.array(X, dtype=float, copy=True)
    X[index] = 0.0
    X[index, 0] = magnitude
    y_out = np.array(y, dtype=object if classifier else float, copy=True)
    y_in = y_out.copy()
    if classifier:
        y_out[index], y_in[index] = classes[0], classes[1]
        y_out, y_in = (
            y_out.astype(np.asarray(classes).dtype),
            y_in.astype(np.asarray(classes).dtype),
        )
    else:
        t = magnitude if target is None else target
        y_out[index], y_in[index] = -t, t
    return X, y_out, y_in
