"""The quickstart's diabetes comparison over more noise draws.

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.bilevel_ridge.quickstart_seeds``
(about two minutes). Writes
``benchmarks/results/bilevel_ridge_quickstart_seeds.md``.

Same data, split, public bounds and default ``delta`` as
``examples/quickstart.py`` (which averages 5 seeds); here 20 seeds, with the
mean, standard deviation and range of the test R^2 of each private model.
Then the default BilevelRidge at epsilon = 1 under the module switches of
``benchmarks.bilevel_ridge.noise_estimate.VARIANTS`` (``planned``: main's
round-3 rule, no curvature release; ``round4``: the round-4 intercept
shrinkage), seed by seed.
"""

import time

import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.model_selection import train_test_split

from benchmarks._common import RESULTS
from benchmarks.bilevel_ridge.noise_estimate import VARIANTS, variant
from skdp import BilevelRidge, HeavyTailedLinearRegression

SEEDS = range(20)


def main():
    t0 = time.perf_counter()
    data = load_diabetes()
    X, y = data.data * np.sqrt(442), data.target - 200.0
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, random_state=0)
    models = {
        "BilevelRidge (default)": lambda eps, s: BilevelRidge(
            epsilon=eps, feature_norm=6.0, target_bound=200.0, random_state=s
        ),
        'BilevelRidge(inner_solver="sufficient_statistics")': lambda eps, s: (
            BilevelRidge(
                epsilon=eps,
                feature_norm=6.0,
                target_bound=200.0,
                inner_solver="sufficient_statistics",
                random_state=s,
            )
        ),
        "HeavyTailedLinearRegression": lambda eps, s: HeavyTailedLinearRegression(
            epsilon=eps, feature_norm=6.0, random_state=s
        ),
    }
    L = ["# Quickstart diabetes comparison, 20 seeds", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append("| model | epsilon | mean R^2 | std | min | max | mean of seeds 0-4 |")
    L.append("|---|---|---|---|---|---|---|")
    for eps in (1.0, 5.0):
        for name, make in models.items():
            r2 = np.array(
                [make(eps, s).fit(X_tr, y_tr).score(X_te, y_te) for s in SEEDS]
            )
            L.append(
                f"| {name} | {eps:g} | {r2.mean():.3f} | {r2.std():.3f} | "
                f"{r2.min():.3f} | {r2.max():.3f} | {r2[:5].mean():.3f} |"
            )
    L.append("")
    L.append("BilevelRidge (default), epsilon = 1, under each variant:")
    L.append("")
    L.append("| variant | mean R^2 | median | min | mean of seeds 0-4 | per seed |")
    L.append("|---|---|---|---|---|---|")
    for v in VARIANTS:
        restore = variant(v)
        try:
            r2 = np.array(
                [
                    models["BilevelRidge (default)"](1.0, s)
                    .fit(X_tr, y_tr)
                    .score(X_te, y_te)
                    for s in SEEDS
                ]
            )
        finally:
            restore()
        per = " ".join(f"{r:.2f}" for r in r2)
        L.append(
            f"| {v} | {r2.mean():.3f} | {np.median(r2):.3f} | {r2.min():.3f} | "
            f"{r2[:5].mean():.3f} | {per} |"
        )
    L.append("")
    L.append(f"{(time.perf_counter() - t0) / 60:.1f} min on the shared machine.")
    text = "\n".join(L) + "\n"
    (RESULTS / "bilevel_ridge_quickstart_seeds.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
