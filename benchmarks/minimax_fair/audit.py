"""Privacy audit of MinimaxFairClassifier's default solver (``solver="gda"``).

The same protocol as ``benchmarks/privacy/audit.py`` (canary record on the
public feature-norm bound, 2000 fits, Clopper-Pearson lower bound), run only
on the audit configurations of MinimaxFairClassifier in
``skdp/_testing/audit_configs.py`` (the gda variant and the NISPP one), at
epsilon in {0.5, 1, 2, 4} and with the /4 negative control at epsilon = 1.
Writes ``benchmarks/results/minimax_fair_audit.md``.

Usage: ``python -m benchmarks.minimax_fair.audit [--quick]`` (PYTHONPATH at the
repository root).
"""

import argparse
import time

from sklearn.base import clone

from benchmarks.privacy.audit import RESULTS, canary_data
from skdp._testing.audit_configs import audit_cases
from skdp._testing.estimator_checks import public_estimators
from skdp._testing.internals import scaled_noise
from skdp.privacy.audit import audit_estimator

CONTROL = 4.0


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="smoke run")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args()
    n_fits = 200 if args.quick else 2000
    epsilons = [1.0] if args.quick else [0.5, 1.0, 2.0, 4.0]
    start = time.perf_counter()
    lines = [
        "# Privacy audit of MinimaxFairClassifier",
        "",
        f"`benchmarks/minimax_fair/audit.py`: {n_fits} fits per row ({n_fits // 2} "
        "on each of two neighbouring datasets, n = 50, one canary label flipped), "
        "Clopper-Pearson lower bound at 95%; the control divides every noise draw "
        f"by {CONTROL:g}.",
        "",
        "| configuration | noise scale | claimed epsilon | empirical lower bound "
        "| flagged |",
        "|---|---|---|---|---|",
    ]
    cases = [c for c in audit_cases(public_estimators()) if "Minimax" in c[0]]
    for name, base, params in cases:
        X, y_out, y_in = canary_data(base)
        for eps, scale in [(e, 1.0) for e in epsilons] + [(1.0, 1.0 / CONTROL)]:
            est = clone(base).set_params(epsilon=eps, **params)
            with scaled_noise(scale):
                res = audit_estimator(
                    est, X, y_out, y_in, n_fits=n_fits, random_state=args.seed
                )
            lines.append(
                f"| {name} | {scale:g} | {res.claimed_epsilon:.3f} | "
                f"{res.epsilon_lower_bound:.3f} | {'yes' if res.violated else 'no'} |"
            )
            print(lines[-1], flush=True)
    lines += ["", f"Total {time.perf_counter() - start:.0f} s.", ""]
    if not args.quick:
        (RESULTS / "minimax_fair_audit.md").write_text("\n".join(lines))


if __name__ == "__main__":
    main()
