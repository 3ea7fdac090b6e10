"""Why the "loc_gd" and "output_perturbation" inner solvers lose: their noise.

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.bilevel_ridge.inner_noise``
(about a minute). Writes ``benchmarks/results/bilevel_ridge_inner_noise.md``.

Everything here is computed from the public plans (no data), except the last
table, which measures excess risk on the benchmark's synthetic task (medium
SNR, d = 20) at n = 1e4, epsilon = 1, delta = 1e-8, one repetition per
solver (``loc_gd`` is slow).

For each solver, the standard deviation of the noise added to one *mean
gradient* (or one released model), in the normalized units of the
sufficient-statistics path (rows and targets scaled to their public bounds),
is compared with that of one full-batch DP-GD run of 100 steps spending the
whole budget on all rows with the same clip norm.
"""

import math
import time

import numpy as np

from benchmarks._common import RESULTS
from skdp import BilevelRidge, HeavyTailedLinearRegression
from skdp._testing.internals import (
    BilevelRidgeSettings,
    loc_gd_clip,
    output_sensitivities,
    plan_bilevel_ridge,
)
from skdp.privacy import gdp_mu

N, D, EPS = 10_000, 20, 1.0


def plans():
    delta = 1e-8
    mu = gdp_mu(EPS, delta)
    n_train = n_val = N // 2
    rows = []
    # one full-batch DP-GD run: 100 steps, clip C on all rows, whole budget
    for solver in ("loc_gd", "output_perturbation"):
        s = BilevelRidgeSettings(
            inner_solver=solver,
            fit_intercept=True,
            alpha_min=1e-3,
            alpha_max=10.0 * n_train,
            alpha_init=None,
            n_iter=100,
            step_size=1.0,
            adaptive=True,
            penalty=None,
            outer_noise=False,
            refit_share=0.0,
            correlation=-0.6,
            cross_validate=True,
            validation_margin=1.5,
            signal_test_level=0.001,
            inner_steps=100,
            inner_rounds=2,
        )
        plan = plan_bilevel_ridge(s, n_train, n_val, D, mu)
        C = loc_gd_clip(s)
        one_run = 2.0 * C / N * math.sqrt(100) / mu
        if solver == "loc_gd":
            noise = plan.stds["loc_gd"]
            steps = 2 * s.n_iter * s.inner_rounds * s.inner_steps
            rows.append(
                (
                    solver,
                    steps,
                    noise.lower_std,
                    noise.penalized_std,
                    one_run,
                    noise.lower_std / one_run,
                )
            )
        else:
            z = plan.stds["multiplier"]
            # std of one released ridge solution (per coordinate, normalized
            # units) at a few penalties: z times the replace-one sensitivity
            # 2 L / (omega n_train), L = A (A D + B), D the public ball radius
            for alpha in (1.0, 100.0, 1e4):
                omega = alpha / n_train
                sens = output_sensitivities(
                    {"train": (1.0 / n_train, n_train)}, omega, 1.0, 1.0
                )
                rows.append(
                    (
                        f"{solver} (alpha = {alpha:g} normalized, model noise)",
                        2 * s.n_iter,
                        z * sens["train"],
                        float("nan"),
                        one_run,
                        float("nan"),
                    )
                )
    return rows


def measured():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=D)
    theta /= np.linalg.norm(theta)
    X = rng.normal(size=(N, D))
    y = X @ theta + 1.0 + math.sqrt(10.0) * rng.normal(size=N)
    bounds = dict(
        feature_norm=1.5 * math.sqrt(D), target_bound=1.0 + 4.0 * math.sqrt(11.0)
    )
    out = []
    for name, make in (
        ("loc_gd", lambda: BilevelRidge(inner_solver="loc_gd", **bounds)),
        (
            "output_perturbation",
            lambda: BilevelRidge(inner_solver="output_perturbation", **bounds),
        ),
        (
            "sufficient_statistics",
            lambda: BilevelRidge(inner_solver="sufficient_statistics", **bounds),
        ),
        (
            "gd (risk_estimate)",
            lambda: BilevelRidge(inner_solver="gd", tuning="risk_estimate"),
        ),
        ("HeavyTailedLinearRegression", lambda: HeavyTailedLinearRegression()),
    ):
        m = make().set_params(epsilon=EPS, delta=1e-8, random_state=0)
        t0 = time.perf_counter()
        m.fit(X, y)
        dt = time.perf_counter() - t0
        risk = float(np.sum((m.coef_ - theta) ** 2) + (m.intercept_ - 1.0) ** 2)
        out.append((name, risk, dt))
    return out


def main():
    L = ["# Noise of the paper's inner solvers against one DP-GD run", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append(
        "| solver | noisy releases per record | noise std, lower problem | "
        "noise std, penalized problem | one DP-GD run (100 steps, same clip) | ratio |"
    )
    L.append("|---|---|---|---|---|---|")
    for r in plans():
        ratio = "" if math.isnan(r[5]) else f"{r[5]:.0f}x"
        L.append(
            f"| {r[0]} | {r[1]} | {r[2]:.3g} | {r[3]:.3g} | {r[4]:.3g} | {ratio} |"
        )
    L.append("")
    L.append(f"Measured excess risk, n = {N:.0e}, d = {D}, medium SNR, epsilon = 1:")
    L.append("")
    L.append("| solver | excess risk | fit time (s) |")
    L.append("|---|---|---|")
    for name, risk, dt in measured():
        L.append(f"| {name} | {risk:.4g} | {dt:.1f} |")
    L.append("")
    text = "\n".join(L) + "\n"
    (RESULTS / "bilevel_ridge_inner_noise.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
