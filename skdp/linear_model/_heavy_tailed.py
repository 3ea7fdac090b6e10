"""Private linear and logistic regression for heavy-tailed data (Asi, Liu and Tian).

Both estimators are thin: validate the input, turn ``(epsilon, delta)`` and
the public constants into a privacy plan (a DpEvent that depends only on
``n``, ``d`` and hyperparameters), spend it, call one solver backend from
:mod:`skdp.solvers`, and store the result.
"""

import dataclasses
import math
import warnings
from numbers import Integral, Real

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, RegressorMixin, _fit_context
from sklearn.utils._param_validation import Hidden, Interval, StrOptions
from sklearn.utils.validation import check_is_fitted

from ..base import PrivateClassifierMixin, PrivateEstimatorMixin
from ..exceptions import warn_inferred_set
from ..losses import SquaredLoss, get_loss
from ..privacy import (
    Budget,
    ComposedDpEvent,
    GaussianDpEvent,
    private_row_mean,
)
from ..solvers._distributed import (
    is_dask_collection,
    lazy_rows,
    map_rows,
    record_norms,
)
from ..solvers.calibration import (
    calibration_event,
    private_logit_calibration,
    private_softmax_shrinkage,
    shrinkage_event,
)
from ..solvers.heavy_tailed.bounds import (
    DEFAULT_TARGET,
    SMALL_N_MARGIN,
    scales_needed,
)
from ..solvers.heavy_tailed.gd import practical_step_size
from ..solvers.heavy_tailed.intercept import (
    intercept_shift,
    make_intercept_plan,
    shrink_shift,
)
from ..solvers.heavy_tailed.known_lipschitz import (
    known_lipschitz,
    known_lipschitz_scales,
    make_known_lipschitz_plan,
    theorem2_clip,
)
from ..solvers.heavy_tailed.localized import (
    corollary1_parameters,
    localized_dp_sgd,
    make_localized_plan,
)
from ..solvers.heavy_tailed.multinomial import (
    auto_multinomial_steps,
    make_shared_ovr_plan,
    multiclass_step,
    multinomial_dp_gd,
    ovr_dp_gd,
)
from ..solvers.heavy_tailed.onepass import (
    make_onepass_plan,
    onepass_clipped_dp_sgd,
    onepass_schedule,
)
from ..utils import (
    check_declared_classes,
    clip_rows,
    safe_row_norms,
    uncenter_intercept,
)
from ..utils._scale_checks import warn_if_unscaled
from ..utils._sparse import as_float_rows, clip_rows_any, is_sparse
from ..utils._validation import (  # errors quote no data
    check_classification_targets,
    validate_data,
)
from ._dask_fit import fit_heavy_tailed_on_dask

__all__ = ["HeavyTailedLinearRegression", "HeavyTailedLogisticRegression"]

#: Share of the budget (of ``mu**2``) spent on the private mean when
#: ``center=True``: a d-dimensional mean of rows clipped to a public norm is
#: cheap (noise ~ 2 C / (n mu_c) per coordinate), so 5% removes offsets of
#: many standard deviations at n >= 1e3 while costing ~2.5% more noise on
#: the gradient releases.
_CENTER_SHARE = 0.05


#: ``max_iter="auto"`` (regression, ``known_lipschitz``): from ``n >=
#: _LARGE_N`` on, 100 steps instead of 30; worse below (30 steps win at
#: n = 1e3, n = 2000 and on diabetes in benchmarks/heavy_tailed/rule.py).
#: Public constants.
_DEFAULT_STEPS = 30
#: Linear and binary fits whose scale counts are estimable but noisier than
#: n / 8 spend up to half the budget on them to reach n / 8 (the logistic
#: public defaults are not unit free: 3-8x worse on unscaled data at n = 1e3,
#: eps = 0.5, benchmarks/results/heavy_tailed.md).
_MARGIN_SHARE = 0.5
#: Linear regression, ``max_iter="auto"``, ``n >= _LARGE_N``: the
#: intercept, which clipping biases under skewed noise, is corrected by a
#: private mean residual on _INTERCEPT_SHARE of ``mu**2``
#: (:mod:`skdp.solvers.heavy_tailed.intercept`). The clipped fraction is the
#: default rule's (it follows the noise, so it vanishes with it): a floor of
#: 0.4, chosen on synthetic data, lost on every large-n table of the suite's
#: development half at every epsilon (1.06x scikit-learn at epsilon = 50 on
#: gss_realinc, against 1.003x without it).
#: ... the iterates from step 0.25 T on are averaged (not the second half:
#: the run has converged by then, and a longer tail averages more noise) ...
_LARGE_N_AVERAGE_FROM = 0.25
#: ... and the default step is at least 0.4 / curvature (the practical step
#: is 0.25 / curvature at heavy clipping), so that it converges within 0.25 T.
_LARGE_N_STEP_FLOOR = 0.4
#: ... and Algorithm 4 drops at most 0.3% of the rows (1% below): when many
#: gradients are clipped, the high-norm rows that truncation drops are
#: the most informative ones (Student-t(3) features at n = 1e5: -8%).
_LARGE_N_TRUNC = 0.003
#: Multinomial: when the noise asks for more than the largest clipped
#: fraction (0.7), no private clip search; the clip is fixed near the
#: gradient scale (multinomial.NO_SEARCH_OCTAVES) with the 1 / L step.
#: Measured in benchmarks/heavy_tailed/multiclass.py (digits).
_MULTINOMIAL_SEARCH_AT_CAP = False
_INTERCEPT_SHARE = 0.04
#: The released shift is shrunk towards 0 by its standard error
#: (post-processing, :func:`~skdp.solvers.heavy_tailed.intercept.shrink_shift`):
#: under symmetric noise the shift is noise. Measured in
#: benchmarks/heavy_tailed/lift.py.
_SHRINK_INTERCEPT = True
#: Public floor of the private feature scale (linear and binary fits):
#: ``s >= T / (16 sqrt(d))``, ``T`` the released truncation level (a high
#: quantile of the row norms). It only catches a collapse of the scale by
#: orders of magnitude (n ~ 400, see tests/test_heavy_tailed_units.py); on
#: heavy-tailed rows a high norm quantile can exceed ``8 sqrt(d) s``.
_SCALE_FLOOR_FACTOR = 16.0
_LARGE_N = 10_000
_LARGE_N_STEPS = 100
#: Linear regression, ``max_iter="auto"``, ``n < _LARGE_N``: when the plan
#: clips at least this fraction ``p`` of the per-sample gradients, the
#: default step may grow up to ``1 / (1 - p)`` times while the run has not
#: converged (``clipped_dp_gd(step_growth=...)``, post-processing of the
#: released gradients): heavy clipping cuts the curvature of the clipped
#: loss by about ``1 - p``, so the ``1 / L`` step is too short to converge in
#: 30 steps on signal-dominated data. Measured in
#: benchmarks/heavy_tailed/small_n.py (Gaussian high SNR, n = 1e3: 2.14x ->
#: 1.20x the best fixed-clip DP-GD, 30 seeds; t(3), n = 2000, p = 0.36,
#: lost 7% with the growth at 60 seeds, hence the threshold).
_SMALL_N_GROWTH_FROM = 0.5


def _recalibrated(res, scale, shift):
    """``res`` with its scores ``scale * scores + shift`` (post-processing of
    a recalibration; the intercept entry or row is last)."""
    coef = scale * res.coef
    coef[-1] += shift
    return dataclasses.replace(res, coef=coef)


class _HeavyTailedGLM(PrivateEstimatorMixin, BaseEstimator):
    """Shared fit logic: plan, spend, solve one binary/regression GLM problem."""

    _parameter_constraints = {
        **PrivateEstimatorMixin._privacy_parameter_constraints,
        "solver": [StrOptions({"known_lipschitz", "onepass", "localized"})],
        "fit_intercept": ["boolean"],
        "k": [Interval(Integral, 2, None, closed="left")],
        "G_k": [Interval(Real, 0, None, closed="neither"), None],
        "G_2": [Interval(Real, 0, None, closed="neither"), None],
        "radius": [Interval(Real, 0, None, closed="neither"), None],
        "feature_norm": [Interval(Real, 0, None, closed="neither"), None],
        "center": ["boolean"],
        "max_iter": [Interval(Integral, 1, None, closed="left")],
        "step_size": [Interval(Real, 0, None, closed="neither"), None],
        "n_splits": [Interval(Integral, 1, None, closed="left")],
        "estimation_share": [Interval(Real, 0, 1, closed="neither")],
        "verbose": ["verbose"],
        "bound_share": [
            Interval(Real, 0, 1, closed="neither"),
            Hidden(StrOptions({"deprecated"})),
        ],
    }
    _renamed_parameters = {"bound_share": "estimation_share"}

    #: Largest share of ``mu**2`` the known-Lipschitz plan may spend on the
    #: scale quantiles when ``n`` is too small for their default share
    #: (0: assume standardized data, see ``make_known_lipschitz_plan``).
    _small_n_share = 0.0

    # -- public constants ---------------------------------------------------
    #: Clip target of ``max_iter="auto"`` from ``n >= _LARGE_N`` on.
    _large_n_target = DEFAULT_TARGET
    #: Largest truncated fraction of Algorithm 4 from ``n >= _LARGE_N`` on.
    _large_n_trunc = 0.01
    #: First averaged step (fraction of the steps) of ``max_iter="auto"``
    #: from ``n >= _LARGE_N`` on (0.5: the second half).
    _large_n_average_from = 0.5
    #: Floor of the default step (times ``1 / curvature``) of
    #: ``max_iter="auto"`` from ``n >= _LARGE_N`` on (None: the floor of
    #: ``practical_step_size``).
    _large_n_step_floor = None

    def _known_lipschitz_rule(self, n):
        """Steps and clip target of the known-Lipschitz plan (public in ``n``)."""
        if self.max_iter != "auto":
            return int(self.max_iter), DEFAULT_TARGET
        if n >= _LARGE_N:
            return _LARGE_N_STEPS, self._large_n_target
        return _DEFAULT_STEPS, DEFAULT_TARGET

    def _intercept_share(self, n, loss):
        """Share of ``mu**2`` for the intercept correction (0: none)."""
        return 0.0

    def _calibration_share(self, n_targets):
        """Share of ``mu**2`` for the private logit calibration (0: none)."""
        return 0.0

    def _rule_step(self, loss, clip_fraction, n):
        """The default step, with the large-``n`` floor (public in ``n``)."""
        step = self._step(loss, clip_fraction)
        floor = self._large_n_step_floor
        large = self.max_iter == "auto" and n >= _LARGE_N
        if self.step_size is None and large and floor is not None:
            step = max(step, float(floor) / float(loss.curvature_bound))
        return step

    def _average_from(self, n):
        """First averaged step, as a fraction of the steps (public in ``n``)."""
        if self.max_iter == "auto" and n >= _LARGE_N:
            return self._large_n_average_from
        return 0.5

    def _step_growth(self, n, clip_fraction):
        """Largest growth of the default step (1: none; public rule)."""
        return 1.0

    def _radius(self):
        return math.inf if self.radius is None else float(self.radius)

    def _step(self, loss, clip_fraction):
        if self.step_size is not None:
            return float(self.step_size)
        return practical_step_size(loss.curvature_bound, clip_fraction)

    def _prepare_X(self, X):
        """Public per-record map: the feature-norm clip.

        The solver appends the intercept column itself (its value is the
        private feature scale, see ``_scaled_intercept``).
        """
        if is_dask_collection(X):  # the same clip per chunk, on the workers
            return map_rows(clip_rows, X, float(self.feature_norm or np.inf))
        if is_sparse(X):
            X = as_float_rows(X)
            if self.feature_norm is not None:
                X = clip_rows_any(X, float(self.feature_norm))
            return X
        X = np.asarray(X, dtype=np.float64)
        if self.feature_norm is not None:
            X = clip_rows(X, float(self.feature_norm), safe_row_norms(X))
        return np.ascontiguousarray(X)

    def _feature_scale(self):
        """Whether the fit releases the private feature scale.

        Needed when the step size is a default (it is divided by ``s**2``);
        the paper's ``onepass`` schedule with a public ``G_k`` sets its own.
        """
        if self.step_size is not None:
            return False
        return not (self.solver == "onepass" and self.G_k is not None)

    def _scaled_intercept(self):
        """Intercept column ``s`` (private units) unless public constants
        (``radius``, ``G_k``) refer to the documented constant column 1."""
        return self.radius is None and self.G_k is None

    # -- plan -----------------------------------------------------------------
    def _make_plan(self, n, d, mu, loss):
        """Public privacy plan of one GLM fit with GDP budget ``mu``."""
        use_paper = self.G_k is not None
        adaptive = not use_paper
        if self.solver == "known_lipschitz":
            if use_paper and isinstance(loss, SquaredLoss) and self.radius is None:
                raise ValueError(
                    "solver='known_lipschitz' with loss='squared' and a public G_k "
                    "needs a finite `radius`: the per-row Lipschitz bound "
                    "||a|| (radius ||a|| + |y|) is infinite otherwise."
                )
            n_scales = known_lipschitz_scales(
                loss,
                self._radius(),
                public_truncation=use_paper,
                public_clip=use_paper,
                intercept=self.fit_intercept,
            )
            n_steps, target = self._known_lipschitz_rule(n)
            large = self.max_iter == "auto" and n >= _LARGE_N
            extra = {"max_trunc_fraction": self._large_n_trunc} if large else {}
            return make_known_lipschitz_plan(
                mu,
                n,
                d,
                n_steps,
                n_scales=n_scales,
                feature_scale=self._feature_scale(),
                adaptive_clip=adaptive,
                bound_share=self._estimation_share(),
                target=target,
                small_n_share=self._small_n_share,
                scale_margin=SMALL_N_MARGIN,
                margin_share=_MARGIN_SHARE,
                **extra,
            )
        n_scales = scales_needed(loss) if adaptive else 0
        if self.solver == "onepass":
            if use_paper and self.radius is None:
                raise ValueError(
                    "solver='onepass' with a public G_k uses the paper's step size, "
                    "which needs the domain diameter: pass a finite `radius`."
                )
            return make_onepass_plan(
                mu,
                n,
                d,
                n_scales=n_scales,
                feature_scale=self._feature_scale(),
                adaptive_clip=adaptive,
                bound_share=self._estimation_share(),
            )
        return make_localized_plan(
            mu,
            n,
            d,
            _DEFAULT_STEPS if self.max_iter == "auto" else self.max_iter,
            n_splits=self.n_splits,
            n_scales=n_scales,
            feature_scale=self._feature_scale(),
            adaptive_clip=adaptive,
            bound_share=self._estimation_share(),
        )

    # -- solve ----------------------------------------------------------------
    def _solve(self, plan, X, y, loss, rng):
        """Run the solver; returns its :class:`HeavyTailedResult` (private releases)."""
        n = X.shape[0]
        d = X.shape[1] + int(self.fit_intercept)
        radius = self._radius()
        paper = dict(G_k=self.G_k, G_2=self.G_2, k=int(self.k))
        common = dict(
            radius=radius,
            row_norms=record_norms(X),  # dask: per chunk, on the workers
            fit_intercept=self.fit_intercept,
            scaled_intercept=self._scaled_intercept(),
        )
        if self.solver == "known_lipschitz":
            clip = None  # Theorem 2's public level with G_k, else private
            if self.G_k is not None:
                clip = theorem2_clip(plan.gd, n, d, self.G_k, self.k)
            return known_lipschitz(
                X,
                y,
                loss,
                plan,
                rng,
                step_size=self._rule_step(loss, plan.gd.clip_fraction, n),
                truncation=clip,
                clip=clip,
                scale_floor=_SCALE_FLOOR_FACTOR,
                average_from=self._average_from(n),
                step_growth=self._step_growth(n, plan.gd.clip_fraction),
                **common,
            )
        if self.solver == "onepass":
            schedule = onepass_schedule(
                plan,
                n,
                d,
                loss.curvature_bound,
                step_size=self.step_size,
                radius=radius,
                **paper,
            )
            return onepass_clipped_dp_sgd(X, y, loss, plan, rng, **schedule, **common)
        clip, loc_radius = corollary1_parameters(plan, d, **paper)
        return localized_dp_sgd(
            X,
            y,
            loss,
            plan,
            rng,
            step_size=self._step(loss, plan.runs[0].clip_fraction),
            clip=clip,
            localization_radius=loc_radius,
            **common,
        )

    def _budget(self, n_fits, share=1.0):
        """GDP budget of each of ``n_fits`` fits that all touch every record
        and share ``share`` of ``mu**2``."""
        budget = Budget.from_target(float(self.epsilon), self.delta_, margin=False)
        return budget.share(share, n_fits).mu

    def _check_center(self):
        if not self.center:
            return
        if self.feature_norm is None:
            raise ValueError(
                "center=True needs a public `feature_norm`: the private mean "
                "averages rows clipped to it (its sensitivity is 2 feature_norm / n)."
            )
        if not self.fit_intercept:
            raise ValueError(
                "center=True needs fit_intercept=True: the offset removed from the "
                "features moves into the intercept."
            )

    def _fit_problems(self, X, targets, loss):
        """Plan, spend and solve ``len(targets)`` problems on the same rows.

        Returns one :class:`HeavyTailedResult` per target.
        """
        self._check_center()
        n = X.shape[0]
        self.delta_, rng = self._begin_private_fit(n)
        Xp = self._prepare_X(X)
        share = _CENTER_SHARE if self.center else 0.0
        ishare = self._intercept_share(n, loss)
        cshare = self._calibration_share(len(targets))
        if not share + ishare + cshare < 1.0:  # public parameters only
            raise ValueError(
                f"calibration_share={cshare:g} leaves nothing for the fit: with "
                f"{share + ishare:g} of the budget on centring and the intercept, "
                f"it must be below {1.0 - share - ishare:g}."
            )
        mu = self._budget(len(targets), 1.0 - share - ishare - cshare)
        d = Xp.shape[1] + int(self.fit_intercept)
        plans = [self._make_plan(n, d, mu, loss) for _ in targets]
        if any(getattr(p, "default_scales", False) for p in plans):
            _warn_default_scales(n)
        events = [p.event for p in plans]
        iplan = None
        if ishare:
            iplan = make_intercept_plan(self._budget(len(targets), ishare))
            events += [iplan.event for _ in targets]
        z_calibration = None
        if cshare:
            z_calibration = Budget(self._budget(1, cshare)).noise_multiplier()
            events.append(calibration_event(z_calibration))
        if self.center:
            z_center = Budget(self._budget(1, share)).noise_multiplier()
            events.insert(0, GaussianDpEvent(z_center))
        event = events[0] if len(events) == 1 else ComposedDpEvent(events)
        self._spend(event)
        self.center_ = None
        if self.center:
            self.center_ = private_row_mean(Xp, self.feature_norm, z_center, rng=rng)
            Xp = Xp - self.center_
        self._progress(
            f"solver={self.solver!r}: {len(targets)} problem(s) of {d} coefficients"
        )
        results = [
            self._solve(plan, Xp, t, loss, rng) for plan, t in zip(plans, targets)
        ]
        if iplan is not None:
            results = [
                _correct_intercept(Xp, t, res, iplan, rng)
                for res, t in zip(results, targets)
            ]
        if z_calibration is not None:
            (res,) = results
            scale, shift = private_logit_calibration(
                Xp, targets[0], res.weights, res.intercept, z_calibration, rng=rng
            )
            self.logit_calibration_ = (scale, shift)
            results = [_recalibrated(res, scale, shift)]
        self._record_privacy(event)
        return results

    def _fit_multinomial(self, X, labels, n_classes, shared_ovr=False):
        """Plan, spend and solve one softmax problem over all classes.

        One record touches all ``K`` columns of coefficients, so the whole
        budget pays for one fit (one-vs-rest pays ``K`` fits); the feature
        scale and truncation level are released once, shared by all classes.
        ``shared_ovr``: ``K`` binary fits instead, sharing those releases.
        """
        self._check_center()
        n = X.shape[0]
        self.delta_, rng = self._begin_private_fit(n)
        Xp = self._prepare_X(X)
        share = _CENTER_SHARE if self.center else 0.0
        sshare = 0.0 if shared_ovr else self._shrinkage_share()
        if not share + sshare < 1.0:  # public parameters only
            raise ValueError(
                f"calibration_share={sshare:g} leaves nothing for the fit: it must "
                f"be below {1.0 - share:g}."
            )
        mu = self._budget(1, 1.0 - share - sshare)
        d = Xp.shape[1] + int(self.fit_intercept)
        use_paper = self.G_k is not None
        plan_kw = dict(
            n_scales=int(not use_paper),
            feature_scale=self._feature_scale(),
            adaptive_clip=not use_paper,
            bound_share=self._estimation_share(),
        )
        if shared_ovr:
            steps = _DEFAULT_STEPS if self.max_iter == "auto" else self.max_iter
            plan = make_shared_ovr_plan(mu, n, d, steps, n_classes, **plan_kw)
        else:
            steps = self.max_iter
            if steps == "auto":  # public in n, d K and the budget
                steps = auto_multinomial_steps(n, d * n_classes, mu)
            plan = make_known_lipschitz_plan(
                mu,
                n,
                d * n_classes,
                steps,
                search_at_cap=_MULTINOMIAL_SEARCH_AT_CAP,
                **plan_kw,
            )
        if plan.default_scales:
            _warn_default_scales(n)
        event = plan.event
        mu_shrink = self._budget(1, sshare) if sshare else None
        if mu_shrink is not None:
            event = ComposedDpEvent([event, shrinkage_event(mu_shrink)])
        if self.center:
            z_center = Budget(self._budget(1, share)).noise_multiplier()
            event = ComposedDpEvent([GaussianDpEvent(z_center), event])
        self._progress(
            f"{'one-vs-rest' if shared_ovr else 'multinomial'} fit: {n_classes} "
            f"classes, {d} coefficients each"
        )
        self._spend(event)
        self.center_ = None
        if self.center:
            self.center_ = private_row_mean(Xp, self.feature_norm, z_center, rng=rng)
            Xp = Xp - self.center_
        clip = None  # Theorem 2's public level with G_k, noise dimension d K
        if use_paper:
            dim = d if shared_ovr else d * n_classes
            clip = theorem2_clip(plan.gd, n, dim, self.G_k, self.k)
        step = multiclass_step(
            plan, self.step_size, shared_ovr=shared_ovr, public_clip=use_paper
        )
        res = (ovr_dp_gd if shared_ovr else multinomial_dp_gd)(
            Xp,
            labels,
            n_classes,
            plan,
            rng,
            step_size=step,
            truncation=clip,
            clip=clip,
            radius=self._radius(),
            fit_intercept=self.fit_intercept,
            scaled_intercept=self._scaled_intercept(),
        )
        if mu_shrink is not None:
            scale, shift = private_softmax_shrinkage(
                Xp, labels, res.coef[:-1], res.coef[-1], n_classes, mu_shrink, rng=rng
            )
            self.logit_calibration_ = (scale, shift)
            res = _recalibrated(res, scale, shift)
        self._record_privacy(event)
        return res

    def _shrinkage_share(self):
        """Share of ``mu**2`` for the softmax fit's shrinkage (0: none)."""
        return 0.0

    def _check_sparse(self, X):
        """Sparse input: the full-batch solver only, and no centring (public rules)."""
        if not is_sparse(X):
            return
        if self.solver != "known_lipschitz":
            raise ValueError(
                f"Sparse input is supported by solver='known_lipschitz' only, not "
                f"solver={self.solver!r} (its per-sample loop needs dense rows); "
                "pass a dense array or use the default solver."
            )
        if self.center:
            raise ValueError(
                "center=True is not supported for sparse input: centring makes "
                "the matrix dense. Centre with public constants or pass a dense array."
            )

    def _split_coef(self, res):
        """``(coef, intercept)`` of a result, for the raw (uncentred) rows."""
        coef, intercept = res.weights, res.intercept
        if self.center_ is not None:
            intercept = uncenter_intercept(intercept, coef, self.center_)
        return coef, intercept

    def _set_info(self, results):
        one = len(results) == 1
        pick = (
            (lambda key: getattr(results[0], key))
            if one
            else (lambda key: [getattr(r, key) for r in results])
        )
        self.n_iter_ = int(max(r.n_iter for r in results))
        self.clip_thresholds_ = pick("clip_levels")
        self.step_sizes_ = pick("step_sizes")
        self.feature_scale_ = pick("feature_scale")
        # Post-processing of the released scale: raw units warn, at no privacy cost.
        s = np.ravel(self.feature_scale_)[0]
        warn_if_unscaled(type(self).__name__, feature_scale=s)
        if self.solver == "known_lipschitz":
            self.truncation_threshold_ = pick("truncation")

    def _decision(self, X):
        check_is_fitted(self)
        X = validate_data(
            self,
            X,
            reset=False,
            dtype=[np.float64, np.float32],
            accept_sparse=["csr", "csc"],
        )
        if is_sparse(X):
            return np.asarray(X.astype(np.float64) @ self.coef_.T) + self.intercept_
        return np.asarray(X, dtype=np.float64) @ self.coef_.T + self.intercept_


def _correct_intercept(X, y, res, plan, rng):
    """Move the intercept (last entry of ``res.coef``) by the private mean residual."""
    w = res.coef
    with np.errstate(all="ignore"):
        fitted = X @ w[:-1]  # dask: lazy, per chunk on the workers
        if not is_dask_collection(fitted):
            fitted = np.asarray(fitted).ravel()
        residuals = y - fitted - w[-1]
    shift, bound = intercept_shift(residuals, plan, rng)
    if _SHRINK_INTERCEPT:
        shift = shrink_shift(shift, bound, plan, X.shape[0])  # n is public
    w = np.array(w, dtype=float, copy=True)
    w[-1] += shift
    return dataclasses.replace(res, coef=w)


def _warn_default_scales(n):
    # A public rule of n and the budget: the warning costs no privacy.
    warnings.warn(
        f"n_samples={n} is too small for this budget to estimate the data's "
        "scales privately: the fit assumes standardized data (row norms "
        "about sqrt(n_features), |y| <= 3 for regression). Scale the data "
        "with public constants first, or give the public scales "
        "(feature_norm, G_k, step_size).",
        UserWarning,
        stacklevel=4,
    )


_COMMON_DOC = """
    solver : {"known_lipschitz", "onepass", "localized"}, default="known_lipschitz"
        - ``"known_lipschitz"``: Algorithm 4 (rows whose per-row Lipschitz
          bound exceeds a private quantile become the zero function) followed
          by full-batch DP-GD with per-sample clipping at a private, adaptive
          level. The default: best excess risk on the benchmark at every
          ``n`` (study at f9c3d36: ``python -m benchmarks.heavy_tailed.main``).
        - ``"onepass"``: Algorithm 8, localized one-pass clipped DP-SGD for
          smooth GLMs; linear time, one Gaussian release per disjoint phase.
          Without ``G_k`` it uses a practical schedule (step halved per phase
          instead of divided by 16, each phase releases the average of its
          last half of iterates); with ``G_k`` the paper's verbatim.
        - ``"localized"``: Theorem 1 pipeline (Algorithms 1-3) with
          ``n_splits`` chunks per phase.
    epsilon : float, default=1.0
        Privacy budget, in ``(0, inf]``. ``inf`` runs the same code path
        without noise (clipping and truncation at the exact quantile 1, so
        nothing is clipped). A regression fit with ``known_lipschitz`` and
        no ``radius`` then ends at the minimum of the same objective (exact
        least squares, or L-BFGS for the Huber loss; see
        :mod:`skdp.solvers.noise_free`), which a fixed number of gradient
        steps does not reach on ill-conditioned features. A classifier keeps
        the descent's iterate: its unpenalised loss has no minimum on
        separable data.
    delta : float in (0, 1), default=None
        ``None`` resolves to ``n_samples ** -1.1`` in ``delta_``; refused
        (before any noise) when that exceeds 0.079, i.e. ``n_samples < 10``.
    fit_intercept : bool, default=True
        Fit an intercept through a constant feature appended to every row
        (so it counts in row norms and clipping). Its value is the private
        feature scale ``s`` (see Notes), so that the intercept is as well
        conditioned as the coefficients in any units; it is 1 when ``radius``
        or ``G_k`` is given (those public constants refer to that column).
        The features are not centred unless ``center=True`` (a private mean,
        paid from the budget); with ``known_lipschitz`` regression the
        intercept starts at a private median of ``y``, paid from
        ``estimation_share``.
    k : int, default=4
        Moment order of the heavy-tailed assumption (used only with ``G_k``).
    G_k : float, default=None
        Public bound on the ``k``-th moment of the per-sample Lipschitz
        constants. If given, the clip level follows the paper's worst-case
        formula (Theorem 2, Algorithm 8 line 4, or Corollary 1) -- typically
        far larger than needed. If ``None`` (recommended), clip levels are
        private quantiles of the per-sample gradient norms at the current
        iterate, paid from ``estimation_share`` of the budget.
    G_2 : float, default=None
        Public second-moment bound (``onepass`` step size and the
        ``localized`` ball radius ``2 G_2 / lambda``); defaults to ``G_k``.
    radius : float, default=None
        Radius of the domain ``{||w|| <= radius}`` (coefficients and
        intercept together); ``None`` means unconstrained.
    feature_norm : float, default=None
        Public bound on the row norm of ``X``; rows above it are scaled down
        to it (documented clipping, never an error). ``None``: no scaling
        (``onepass`` still scales rows for its smoothness guard, see Notes).
    center : bool, default=False
        Centre the features at a private mean before fitting: rows clipped to
        ``feature_norm`` (required) are averaged and released with Gaussian
        noise (sensitivity ``2 feature_norm / n``) from 5% of the budget (of
        ``mu**2``). Helps when the features share a large offset, which one
        feature scale cannot fix (see Notes). Needs ``fit_intercept=True``;
        ``coef_`` and ``intercept_`` are reported for the uncentred features
        (post-processing), and ``radius`` then bounds the coefficients of the
        centred problem.
    max_iter : int or "auto", default="auto"
        Gradient steps of each full-batch run (``known_lipschitz``, and each
        chunk of ``localized``). Noise is calibrated to this number.
        ``"auto"`` (regression) is a public rule of ``n``: with
        ``known_lipschitz`` and ``n >= 10_000``, 100 steps with at least 40%
        of the per-sample gradients clipped, a default step of at least
        ``0.4 / (curvature s**2)``, the iterates from step 25 on averaged
        (the second half otherwise), at most 0.3% of the rows truncated (1%
        otherwise) and (squared loss, intercept, no ``radius`` or ``G_k``)
        a private intercept correction on 4% of the budget (a clipped mean
        residual, shrunk towards 0 by its standard error); else 30 steps,
        and (regression) when at least half of the per-sample gradients are
        clipped the default step may double, up to ``1 / (1 - p)`` times
        (``p`` the clipped fraction), while the mean of the released
        gradients over 4 steps stays well above its noise (post-processing:
        the run has not converged) (studies at f9c3d36:
        ``python -m benchmarks.heavy_tailed.rule``, ``.lift`` and ``.small_n``).
        ``"auto"``
        (classification, the default there) gives binary and one-vs-rest fits
        30 steps and the multinomial fit 30 steps, or 300 (100 above
        ``n d K = 1e7``) where the squared signal-to-noise ratio
        ``(n mu)**2 / (d K)`` of its budget reaches 1e4 and without noise
        (``auto_multinomial_steps``; study at f9c3d36:
        ``python -m benchmarks.heavy_tailed.multiclass_gap``).
    step_size : float, default=None
        Full-batch step, in the units of the data (used as given, and no
        feature scale is released). Default:
        ``max(0.25, min(1, sqrt(0.006 / p)) / curvature) / s**2`` with ``p``
        the planned clipped fraction and ``s`` the private feature scale
        (see Notes), i.e. ``1 / L`` when the noise is small and smaller
        steps (more averaging) when it dominates. For ``onepass``, the
        first-phase step (default ``min(0.5, 0.06 / sqrt(n)) / (curvature
        s**2)``; later phases halve it).
    n_splits : int, default=3
        Chunks per phase of ``localized`` (the paper's ``J``).
    estimation_share : float, default=0.1
        Share of the budget (of ``mu**2`` in GDP units) spent on estimating
        public quantities: private clip and truncation levels and scales
        when ``G_k`` is ``None`` (the same name and unit in every skdp
        estimator).
    bound_share : float, default="deprecated"
        Deprecated old name of ``estimation_share`` (same unit); renamed in
        0.2, removed in 0.3.
    verbose : int, default=0
        Print the fit's phases (records, plan, solver stages, privacy spent)
        when positive; ``2`` also prints the privacy plan. Only public
        quantities are printed, never anything computed from the data.
    accountant : PrivacyAccountant, default=None
        Shared budget to spend from.
    random_state : int, Generator or None, default=None
        Seed of the fit's generator (splits, permutations, private quantiles and
        noise). A published seed lets anyone subtract the noise; the default
        draws from OS entropy. With a shared ``accountant``, each fit on its
        ledger draws from its own stream (folds of a cross-validation do not
        share noise).
"""

_COMMON_NOTES = """
    Privacy: ``(epsilon, delta)``-DP under replace-one neighbours (``n`` is
    public). The plan (a DpEvent built from public quantities before any
    data is touched) composes, in GDP units (exact for full-batch Gaussian
    releases): private quantiles by noisy bisection on counts (sensitivity
    1), clipped-gradient sums (sensitivity ``2 C``), and for ``onepass`` /
    ``localized`` a :class:`~skdp.privacy.ParallelDpEvent` over disjoint
    phases/chunks, each with the whole budget.

    Budget shares (of ``mu**2``) with the default ``estimation_share=0.1``: 1% per
    scale quantile over all records (the feature scale ``s``; a high
    quantile of the row norms for Algorithm 4's truncation and the clip
    search range; of ``|y|`` for the squared loss; the median of ``y`` that
    warm-starts the intercept: 2-4% in all), the rest of the 10%
    on the clip levels (``known_lipschitz``: re-estimated at steps 0, 1, 3,
    7, 15; ``onepass``/``localized``: once per phase/chunk), 90% on the
    gradient releases. A search that ``n`` records cannot support is
    skipped by a public rule and its share goes to the gradients; with very
    few records the scales fall back to public defaults for standardized
    data (row norm ``2 sqrt(d)``, ``|y| <= 3``, ``s = 1``).

    The clipped fraction of per-sample gradients is
    ``min(0.7, 6 z sqrt(d) / n)`` with ``z`` the noise multiplier of a
    gradient sum: the paper's worst-case clip formulas are ~50x too large in
    practice (and 19-20x worse in excess risk on the benchmark), and this
    public rule (tuned on synthetic data) trades clipping bias against
    noise.

    ``onepass`` smoothness guard: every row of phase ``i`` is scaled to norm
    at most ``sqrt(2 / (curvature * eta_i))`` so that ``eta_i beta_row <= 2``
    holds for every possible row, which Theorem 4's privacy proof needs.

    Units. The data need not be standardized (under DP their mean and
    variance are not free). The **feature scale** ``s`` is a private
    release: the median over rows of the root mean square of the row's
    non-zero feature values (a noisy bisection of 10 counts, from the scale
    share above) divided by the same median for a standard Gaussian vector
    of the same dimension, so ``s ~ 1`` on standardized features and on 0/1
    (e.g. one-hot) columns, and ``s`` scales with the features. Everything scale
    dependent is a public rule of ``s`` and of the other private quantiles
    (post-processing): default steps are divided by ``s**2`` (the loss's
    curvature grows like ``s**2``), the ``localized`` regularisation is
    multiplied by it, the intercept column is ``s``; clip levels, truncation
    levels and their search ranges are private quantiles of the data's own
    norms (and of ``|y|``), so they follow any scale of the features and
    targets. The fit is then close to invariant to the units of ``X`` and
    ``y`` (study at f9c3d36: ``python -m benchmarks.heavy_tailed.main``, its
    scale-robustness table). One scale cannot fix features with a large common offset
    (uncentred): pass ``center=True`` with a public ``feature_norm`` to
    centre them at a private mean. Nor can it fix columns in very different
    units: scale those with public constants (known ranges) if you can. A divergence guard
    (post-processing) cuts the step, and restarts from the best recent
    point, whenever the released gradients grow.

    Sparse input (``scipy.sparse`` CSR/CSC) is supported by the default
    solver without centring: row norms, clipping, the feature scale and the
    clipped gradient sums run on the stored entries (never densified), and
    give the same model as the dense matrix for the same ``random_state``
    (up to rounding). ``onepass``, ``localized`` and ``center=True`` raise a
    clear error for sparse input.

    Floating-point Gaussian sampling is not exactly DP (Mironov 2012).
"""


class HeavyTailedLinearRegression(RegressorMixin, _HeavyTailedGLM):
    """Differentially private linear regression for heavy-tailed data.

    Minimises the mean squared (or Huber) loss of a linear model with the
    algorithms of Asi, Liu and Tian (NeurIPS 2024), which stay accurate when
    features, targets or gradients only have a few bounded moments: every
    per-sample gradient is clipped at a level chosen privately from the
    data's own gradient distribution, and extreme rows are truncated.

    Parameters
    ----------
    loss : {"squared", "huber"}, default="squared"
        ``(z - y)**2 / 2`` or the Huber loss with threshold ``tau`` on the
        residual (fixed scale, unlike scikit-learn's ``HuberRegressor`` which
        also fits a scale).
    tau : float, default=1.0
        Huber threshold, in target units.
    %(common)s
    Attributes
    ----------
    coef_ : ndarray of shape (n_features,)
    intercept_ : float
    privacy_spent_ : tuple (epsilon, delta)
        Certified privacy of the fit, at most the request.
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.
    delta_ : float
        The ``delta`` used.
    n_iter_ : int
        Gradient steps (``onepass``: SGD steps, i.e. ``n_samples``).
    clip_thresholds_ : ndarray
        Clip level of each step (``known_lipschitz``), phase (``onepass``),
        or phase x chunk x step (``localized``). Private releases.
    step_sizes_ : ndarray
        Step sizes used, same layout as ``clip_thresholds_``.
    truncation_threshold_ : float
        ``known_lipschitz`` only: rows with a larger per-row Lipschitz bound
        were replaced by the zero function.
    center_ : ndarray of shape (`n_features_in_`,) or None
        Private mean the features were centred at (``center=True``), else
        ``None``.
    feature_scale_ : float
        Private feature scale ``s`` the default steps and the intercept
        column used (1 when not released: a given ``step_size``, or too few
        records).
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)
        Defined only when ``X`` has string feature names.

    See Also
    --------
    HeavyTailedLogisticRegression

    Notes
    -----%(notes)s
    References
    ----------
    Asi, Liu and Tian, "Private stochastic convex optimization with heavy
    tails: near-optimality from simple reductions", NeurIPS 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import HeavyTailedLinearRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_t(5, size=(20_000, 3))
    >>> y = X @ np.array([1.0, -1.0, 0.5]) + 2.0 + rng.standard_t(3, size=20_000)
    >>> model = HeavyTailedLinearRegression(epsilon=1.0, random_state=0).fit(X, y)
    >>> np.round(model.coef_, 1), round(model.intercept_, 1)
    (array([ 1. , -1. ,  0.5]), 2.0)
    >>> model.privacy_spent_[0] <= 1.0
    True
    """

    _parameter_constraints = {
        **_HeavyTailedGLM._parameter_constraints,
        "loss": [StrOptions({"squared", "huber"})],
        "tau": [Interval(Real, 0, None, closed="neither")],
        "max_iter": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
    }

    def __init__(
        self,
        loss="squared",
        *,
        tau=1.0,
        solver="known_lipschitz",
        epsilon=1.0,
        delta=None,
        fit_intercept=True,
        k=4,
        G_k=None,
        G_2=None,
        radius=None,
        feature_norm=None,
        center=False,
        max_iter="auto",
        step_size=None,
        n_splits=3,
        estimation_share=0.1,
        bound_share="deprecated",
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.loss = loss
        self.tau = tau
        self.solver = solver
        self.epsilon = epsilon
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.k = k
        self.G_k = G_k
        self.G_2 = G_2
        self.radius = radius
        self.feature_norm = feature_norm
        self.center = center
        self.max_iter = max_iter
        self.step_size = step_size
        self.n_splits = n_splits
        self.estimation_share = estimation_share
        self.bound_share = bound_share
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    # Regression targets come in natural units (e.g. in the hundreds): at
    # small n, half the budget on the scales beats assuming |y| <= 3
    # (diabetes row of benchmarks/heavy_tailed/steps.py and rule.py).
    _small_n_share = 0.5
    _large_n_trunc = _LARGE_N_TRUNC
    _large_n_average_from = _LARGE_N_AVERAGE_FROM
    _large_n_step_floor = _LARGE_N_STEP_FLOOR

    def _intercept_share(self, n, loss):
        """The large-``n`` rule clips many gradients, so the intercept is
        corrected by a private mean residual (public rule of ``n`` and the
        hyperparameters)."""
        rule = (
            self.max_iter == "auto"
            and n >= _LARGE_N
            and self.solver == "known_lipschitz"
            and self.fit_intercept
            and self.G_k is None
            and self.radius is None
            and isinstance(loss, SquaredLoss)
        )
        return _INTERCEPT_SHARE if rule else 0.0

    def _step_growth(self, n, clip_fraction):
        """Below ``_LARGE_N``, heavy clipping lets the default step grow up
        to ``1 / (1 - p)`` (public rule of ``n`` and the planned ``p``)."""
        rule = (
            self.max_iter == "auto"
            and n < _LARGE_N
            and self.step_size is None
            and clip_fraction >= _SMALL_N_GROWTH_FROM
        )
        return 1.0 / (1.0 - clip_fraction) if rule else 1.0

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.regressor_tags.poor_score = True
        # sparse input: the full-batch solver without centring (_check_sparse)
        tags.input_tags.sparse = self.solver == "known_lipschitz" and not self.center
        return tags

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the private linear model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : HeavyTailedLinearRegression
        """
        if is_dask_collection(X):  # distributed fit: see ._dask_fit
            return fit_heavy_tailed_on_dask(self, X, y)
        X, y = validate_data(
            self,
            X,
            y,
            dtype=[np.float64, np.float32],
            y_numeric=True,
            accept_sparse=["csr", "csc"],
        )
        self._check_sparse(X)
        y = np.asarray(y, dtype=np.float64)
        (res,) = self._fit_problems(X, [y], self._glm_loss())
        self.coef_, self.intercept_ = self._split_coef(res)
        self._set_info([res])
        return self

    def _glm_loss(self):
        """The loss object of the ``loss`` / ``tau`` parameters."""
        return get_loss(
            self.loss, **({"tau": self.tau} if self.loss == "huber" else {})
        )

    def predict(self, X):
        """Predict with the fitted linear model (no noise added).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,)
        """
        if is_dask_collection(X):  # lazy, as dask-ml does
            return lazy_rows(self.predict, X)
        return self._decision(X)


class HeavyTailedLogisticRegression(
    PrivateClassifierMixin, ClassifierMixin, _HeavyTailedGLM
):
    """Differentially private logistic regression for heavy-tailed features.

    Minimises the mean logistic loss with the algorithms of Asi, Liu and
    Tian (NeurIPS 2024): per-sample gradients are clipped at a privately
    chosen level and rows with extreme norms are truncated, so the model
    stays accurate when the features only have a few bounded moments.
    More than two classes are handled by a multinomial (softmax) model by
    default: the per-sample gradient is the ``d x K`` matrix
    ``x (softmax(W^T x) - e_y)^T``, clipped as a whole (never per class),
    so the whole budget pays for one fit and the feature scale and
    truncation level are released once for all classes. With
    ``multi_class="ovr"`` every record takes part in ``K`` binary problems,
    each with ``1 / K`` of the budget in ``mu**2``.

    Parameters
    ----------
    classes : array-like, default=None
        Public list of class labels. ``None`` reads them from ``y``, which is
        standard in scikit-learn but reveals which labels occur (a small
        leak); declare them to avoid it. With ``classes`` given, a ``y`` that
        has a single class still fits (the model predicts that class), and a
        declared class without examples is fitted like the others (no error).
    multi_class : {"multinomial", "ovr"}, default="multinomial"
        Model for more than two classes (two classes always fit the same
        binary model, whatever this is). ``"multinomial"``: one softmax model,
        per-sample gradients clipped per record, the default because it
        measured at least as accurate as one-vs-rest on digits, wine and the
        synthetic task of a study (iris, about 110 training rows, is the
        exception; study at f9c3d36:
        ``python -m benchmarks.heavy_tailed.multiclass --part real``);
        ``solver="known_lipschitz"`` only (the other solvers assume a scalar
        link and raise). ``"ovr"``: one binary model per class, each paying
        ``1 / n_classes`` of the budget (with ``known_lipschitz`` the feature
        scale and truncation level are released once for all classes);
        every solver.
    calibration_share : float, default=0.1
        Share of the budget (of ``mu**2``) spent, in a fit with an
        intercept, on recalibrating the fitted scores against the data
        (:mod:`skdp.solvers.calibration`). It undoes the over-confidence
        that gradient noise gives the coefficients and the pull of clipping
        toward the majority class, and can fall back to the constant
        predictor when the coefficients are mostly noise. ``0`` disables it.

        - Two classes: a private Platt scaling. One noisy histogram of the
          training logits by label, on which ``sigmoid(a z + b)`` is
          refitted with ``0 <= a <= 4`` (``a = 0`` is the base rate); the
          model is kept (``a = 1, b = 0``) unless the histogram shows a gain
          above its own noise.
        - More than two classes (``multi_class="multinomial"``): a private
          shrinkage toward private base rates, scores ``t (x W + b) + (1 -
          t) log(prior)`` with ``t`` in ``{0, 1/8, 1/4, 1/2, 3/4, 1}``
          (``t = 0`` is the constant predictor). Two releases: the class
          counts (the prior), then the training Brier score of each
          ``t``; the lowest is kept.

        Nothing is spent on it (and no ``logit_calibration_`` is released)
        with ``fit_intercept=False``, with ``multi_class="ovr"`` for more
        than two classes, or at ``epsilon=inf``; like every parameter, it
        still enters the seeded stream of a fit with an integer
        ``random_state``. Chosen on the development half of the benchmark
        suite (``python -m benchmarks.run --tasks binary multiclass --half
        dev``).
    %(common)s
    Attributes
    ----------
    classes_ : ndarray of shape (n_classes,)
    coef_ : ndarray of shape (1, n_features) or (n_classes, n_features)
    intercept_ : ndarray of shape (1,) or (n_classes,)
    privacy_spent_ : tuple (epsilon, delta)
    privacy_ledger_ : PrivacyLedger
        Every noise draw of the fit, with its sensitivity and scale;
        ``skdp.privacy.verify(privacy_ledger_, delta_)`` recomputes
        ``privacy_spent_`` from it alone.
    delta_ : float
    n_iter_ : int
    clip_thresholds_ : ndarray or list of ndarray (one per class for ``"ovr"``)
    step_sizes_ : ndarray or list of ndarray
    truncation_threshold_ : float or list of float
        ``known_lipschitz`` only.
    center_ : ndarray of shape (`n_features_in_`,) or None
        Private mean the features were centred at (``center=True``, shared
        by all classes), else ``None``.
    feature_scale_ : float or list of float
        Private feature scale ``s`` (1 when not released).
    logit_calibration_ : tuple (scale, shift) or None
        The recalibration applied to the fitted scores, ``scale * scores +
        shift`` (``calibration_share``): the Platt scaling's floats for two
        classes, the shrinkage level ``t`` and the vector ``(1 - t)
        log(prior)`` for more; ``scale = 1`` with a zero shift keeps the fit.
        ``None`` when none was released.
    n_features_in_ : int
    feature_names_in_ : ndarray of shape (`n_features_in_`,)

    See Also
    --------
    HeavyTailedLinearRegression

    Notes
    -----%(notes)s
    References
    ----------
    Asi, Liu and Tian, "Private stochastic convex optimization with heavy
    tails: near-optimality from simple reductions", NeurIPS 2024.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp import HeavyTailedLogisticRegression
    >>> rng = np.random.default_rng(0)
    >>> X = rng.standard_t(5, size=(20_000, 3))
    >>> y = (X @ np.array([2.0, -1.0, 0.0]) + rng.logistic(size=20_000) > 0).astype(int)
    >>> clf = HeavyTailedLogisticRegression(random_state=0, classes=[0, 1]).fit(X, y)
    >>> clf.score(X, y) > 0.75
    True
    """

    _parameter_constraints = {
        **_HeavyTailedGLM._parameter_constraints,
        "classes": ["array-like", None],
        "multi_class": [StrOptions({"multinomial", "ovr"})],
        "calibration_share": [Interval(Real, 0, 1, closed="left")],
        "max_iter": [
            Interval(Integral, 1, None, closed="left"),
            StrOptions({"auto"}),
        ],
    }

    def __init__(
        self,
        *,
        classes=None,
        multi_class="multinomial",
        solver="known_lipschitz",
        epsilon=1.0,
        delta=None,
        fit_intercept=True,
        k=4,
        G_k=None,
        G_2=None,
        radius=None,
        feature_norm=None,
        center=False,
        max_iter="auto",
        step_size=None,
        n_splits=3,
        estimation_share=0.1,
        calibration_share=0.1,
        bound_share="deprecated",
        accountant=None,
        random_state=None,
        verbose=0,
    ):
        self.classes = classes
        self.multi_class = multi_class
        self.calibration_share = calibration_share
        self.solver = solver
        self.epsilon = epsilon
        self.delta = delta
        self.fit_intercept = fit_intercept
        self.k = k
        self.G_k = G_k
        self.G_2 = G_2
        self.radius = radius
        self.feature_norm = feature_norm
        self.center = center
        self.max_iter = max_iter
        self.step_size = step_size
        self.n_splits = n_splits
        self.estimation_share = estimation_share
        self.bound_share = bound_share
        self.accountant = accountant
        self.random_state = random_state
        self.verbose = verbose

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.classifier_tags.poor_score = True
        # sparse input: the full-batch solver without centring (_check_sparse)
        tags.input_tags.sparse = self.solver == "known_lipschitz" and not self.center
        return tags

    def _known_lipschitz_rule(self, n):
        """``max_iter="auto"``: 30 steps for binary and one-vs-rest fits (the
        softmax fit has its own rule, ``auto_multinomial_steps``)."""
        if self.max_iter == "auto":
            return _DEFAULT_STEPS, DEFAULT_TARGET
        return super()._known_lipschitz_rule(n)

    def _calibration_share(self, n_targets):
        """``calibration_share`` for a two-class fit with an intercept and
        noise (without noise the fit is at its optimum, already calibrated)."""
        if n_targets != 1 or not self.fit_intercept or math.isinf(self.epsilon):
            return 0.0
        return float(self.calibration_share)

    def _shrinkage_share(self):
        """``calibration_share`` for a softmax fit with an intercept and noise."""
        if not self.fit_intercept or math.isinf(self.epsilon):
            return 0.0
        return float(self.calibration_share)

    def _resolve_classes(self, y):
        if self.classes is None:
            warn_inferred_set(
                type(self).__name__,
                "classes",
                "classes=[...]",
                "the number of one-vs-rest problems (and an error when y has "
                "a single class)",
                stacklevel=6,
            )
            classes = np.unique(y)
            if classes.size < 2:
                raise ValueError(
                    "HeavyTailedLogisticRegression needs at least two classes, "
                    f"but y contains only {classes.size} class(es). Pass the "
                    "public list of labels with classes=[...] to fit anyway."
                )
            return classes
        classes = check_declared_classes(self.classes)
        unknown = ~np.isin(y, classes)
        if np.any(unknown):
            raise ValueError(
                # Not echoed: the offending values would be a further release.
                "y contains labels that are not in `classes`."
            )
        return classes

    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit the private logistic model.

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
        y : array-like of shape (n_samples,)

        Returns
        -------
        self : HeavyTailedLogisticRegression
        """
        if is_dask_collection(X):  # distributed fit: see ._dask_fit
            return fit_heavy_tailed_on_dask(self, X, y)
        X, y = validate_data(
            self, X, y, dtype=[np.float64, np.float32], accept_sparse=["csr", "csc"]
        )
        check_classification_targets(y)
        self._check_sparse(X)
        self.classes_ = self._resolve_classes(y)
        self._softmax = False
        self.logit_calibration_ = None
        if self.classes_.size > 2 and self.multi_class == "multinomial":
            if self.solver != "known_lipschitz":
                # the class set is public (declared, or already read from y)
                raise ValueError(
                    "multi_class='multinomial' is supported by solver="
                    "'known_lipschitz' only (the one-pass and localized solvers "
                    f"assume a scalar link); solver={self.solver!r} needs "
                    "multi_class='ovr' for more than two classes."
                )
            labels = np.searchsorted(self.classes_, y)
            res = self._fit_multinomial(X, labels, self.classes_.size)
            coef, self.intercept_ = self._split_coef(res)
            self.coef_ = np.ascontiguousarray(coef)
            self._softmax = True
            self._set_info([res])
            return self
        if self.classes_.size > 2 and self.solver == "known_lipschitz":
            # one-vs-rest with the scale releases shared by the classes
            labels = np.searchsorted(self.classes_, y)
            results = self._fit_multinomial(
                X, labels, self.classes_.size, shared_ovr=True
            )
            self._set_stacked(results)
            self._set_info(results)
            return self
        if self.classes_.size == 2:
            targets = [np.where(y == self.classes_[1], 1.0, -1.0)]
        else:
            targets = [np.where(y == c, 1.0, -1.0) for c in self.classes_]
        results = self._fit_problems(X, targets, get_loss("logistic"))
        self._set_stacked(results)
        self._set_info(results)
        return self

    def _set_stacked(self, results):
        """Coefficients of binary or one-vs-rest results, one row each."""
        coefs, intercepts = zip(*(self._split_coef(r) for r in results))
        self.coef_ = np.vstack(coefs)
        self.intercept_ = np.asarray(intercepts, dtype=np.float64)

    def decision_function(self, X):
        """Linear scores (no noise added).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,) for two classes, else (n_samples, n_classes)
        """
        if is_dask_collection(X):  # lazy, as dask-ml does
            width = None if len(self.classes_) == 2 else len(self.classes_)
            return lazy_rows(self.decision_function, X, width)
        scores = self._decision(X)
        return scores.ravel() if scores.shape[1] == 1 else scores


for _cls in (HeavyTailedLinearRegression, HeavyTailedLogisticRegression):
    _cls.__doc__ = _cls.__doc__ % {
        "common": _COMMON_DOC.strip("\n").lstrip() + "\n",
        "notes": _COMMON_NOTES,
    }
