"""
Heavy-tailed data: private clip levels that follow the data's units
===================================================================

Private gradient descent clips every per-sample gradient to a norm ``C`` so
that one record cannot move the model much. With heavy-tailed features and
noise, no single clip level works well: a small ``C`` biases every step, a
large one adds noise proportional to ``C``. And the right ``C`` depends on the
units of the data, which a private fit cannot look at for free (under DP
even standardizing the data costs privacy).

:class:`skdp.HeavyTailedLinearRegression` sets its clip levels privately from
quantiles of the per-sample gradient norms, and its step size and intercept
from a private feature scale (all paid from a small share of the budget),
following Asi, Liu and Tian. We fit the same Student-t(5) data with skewed,
heavy-tailed noise in two unit systems: standardized, and with features and
targets 4x larger. Full-batch DP-GD at fixed clip levels, calibrated by the
same accountant, gets an oracle step that knows the units; only its clip is
fixed. The excess risk ``(w - w*)^T Sigma (w - w*) + (b - b*)^2`` is exact,
and reported in standardized units so that both panels are comparable.
"""

import matplotlib.pyplot as plt
import numpy as np

from skdp import HeavyTailedLinearRegression
from skdp.privacy import calibrate_gaussian, gaussian_noise
from skdp.utils import add_intercept_column

rng = np.random.default_rng(0)
n, d = 50_000, 10
w_true = rng.normal(size=d) / np.sqrt(d)
X = rng.standard_t(5, size=(n, d)) * np.sqrt(3 / 5)  # unit variance
noise = np.exp(rng.normal(size=n)) - np.exp(0.5) + rng.standard_t(2.1, size=n)
y = X @ w_true + noise  # b* = 0: the noise is centred


def excess_risk(coef, intercept, scale):
    # the model (coef, b) on (scale X, scale y) is (coef, b / scale) on (X, y)
    return float(np.sum((coef - w_true) ** 2) + (intercept / scale) ** 2)


def dp_gd(X, y, clip, epsilon, scale, rng, steps=100):
    """Full-batch DP-GD with per-sample clipping at a fixed level.

    Oracle step ``0.5 / scale**2`` and intercept column ``scale``: it knows
    the units, only the clip level is fixed.
    """
    Xa = add_intercept_column(X, scale)
    bound = clip / np.linalg.norm(Xa, axis=1)  # clip the scalar residual
    z = calibrate_gaussian(epsilon, len(y) ** -1.1, steps=steps)
    w = np.zeros(Xa.shape[1])
    for _ in range(steps):
        g = np.clip(Xa @ w - y, -bound, bound) @ Xa  # per-sample norms <= clip
        # sum of clipped gradients: replace-one sensitivity 2 * clip
        noisy = g + gaussian_noise(rng, 2 * clip * z, Xa.shape[1], sensitivity=2 * clip)
        w -= 0.5 / scale**2 * noisy / len(y)
    return w[:-1], w[-1] * scale


epsilons = [0.5, 1.0, 2.0, 5.0]
clips = (1.0, 10.0, 100.0)
fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
for ax, scale in zip(axes, (1.0, 4.0)):
    Xs, ys = scale * X, scale * y
    curves = {f"DP-GD, C = {c:g}": [] for c in clips}
    curves["HeavyTailedLinearRegression"] = []
    for eps in epsilons:
        for c in clips:
            coef, b = dp_gd(Xs, ys, c, eps, scale, rng)
            curves[f"DP-GD, C = {c:g}"].append(excess_risk(coef, b, scale))
        model = HeavyTailedLinearRegression(epsilon=eps, random_state=1).fit(Xs, ys)
        curves["HeavyTailedLinearRegression"].append(
            excess_risk(model.coef_, model.intercept_, scale)
        )
    ols = np.linalg.lstsq(add_intercept_column(Xs), ys, rcond=None)[0]
    for name, values in curves.items():
        style = "o-" if name.startswith("Heavy") else "s--"
        ax.plot(epsilons, values, style, label=name)
    ax.axhline(
        excess_risk(ols[:-1], ols[-1], scale),
        color="k",
        lw=1,
        label="least squares (non-private)",
    )
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("epsilon")
    ax.set_title(f"features and targets x {scale:g}")
    print(f"features and targets x {scale:g} (excess risk in standardized units)")
    for name, values in curves.items():
        print(f"  {name:<30}", " ".join(f"{v:9.4f}" for v in values))
axes[0].set_ylabel("excess risk (standardized units)")
axes[1].legend(fontsize=8)
fig.suptitle(f"Heavy-tailed linear regression, n = {n:,}, d = {d}")
fig.tight_layout()
plt.show()

# %%
# skdp's curve is the same in both panels: its clip levels are private
# quantiles of the data's own gradient norms and its step follows a private
# feature scale, so the units do not matter. Every fixed clip moves between
# the panels: ``C = 100`` is the best fixed clip on standardized data at
# ``epsilon = 5`` and about 10x worse once the data are 4x larger. With
# skewed noise a clip that binds also biases the intercept, which is why
# even the best fixed clip stays above skdp here.
