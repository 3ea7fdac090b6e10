"""The clipped-gradient kernel: branchy clip (before) vs branch-free (now).

Run ``PYTHONPATH=. nice -n 10 python -m benchmarks.heavy_tailed.kernel
[--n 1000000] [--d 21] [--repeats 20]``. Writes
``benchmarks/results/heavy_tailed_kernel.md``.

One full pass of ``sum_i clip(x_i w - y_i, +-C / ||x_i||) x_i`` (squared
loss) on Student-t(5) rows at the clip level that clips 30% of the
per-sample gradients (the large-n rule), in the same process: the kernel as
it was before (the derivative clipped by two comparisons, a branch that
mispredicts on a large clipped fraction) and
:func:`skdp.solvers.heavy_tailed.kernels.clipped_gradient_sum` (``min`` /
``max``). Both return bit-identical sums (checked). CPU time per pass
(``time.process_time``), median over ``repeats`` alternating calls.
"""

import argparse
import time

import numpy as np

from benchmarks._common import RESULTS
from skdp._testing.internals import (
    HAVE_NUMBA,
    clipped_gradient_sum,
    glm_derivative,
    njit,
)
from skdp.losses import SquaredLoss


@njit(cache=True)
def branchy_kernel(X, y, w, inv_norms, clip, code, tau):
    """The kernel before this benchmark (baseline)."""
    n, d = X.shape
    out = np.zeros(d)
    for i in range(n):
        inv = inv_norms[i]
        if inv == 0.0:
            continue
        z = 0.0
        for j in range(d):
            z += X[i, j] * w[j]
        g = glm_derivative(z, y[i], code, tau)
        if g != g:
            continue
        cap = clip * inv
        if g > cap:
            g = cap
        elif g < -cap:
            g = -cap
        for j in range(d):
            out[j] += g * X[i, j]
    return out


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--d", type=int, default=21)
    parser.add_argument("--repeats", type=int, default=20)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    X = rng.standard_t(5, size=(args.n, args.d))
    w = rng.normal(size=args.d) / np.sqrt(args.d)
    y = X @ w + rng.standard_t(3, size=args.n)
    norms = np.linalg.norm(X, axis=1)
    inv = 1.0 / norms
    w0 = np.zeros(args.d)
    clip = float(np.quantile(np.abs(y) * norms, 0.7))  # 30% clipped at w = 0
    loss = SquaredLoss()
    a = branchy_kernel(X, y, w0, inv, clip, 0, 0.0)
    b = clipped_gradient_sum(X, y, w0, inv, clip, loss)
    identical = bool(np.array_equal(a, b))
    times = {"before (branchy clip)": [], "now (min/max clip)": []}
    for _ in range(args.repeats):
        c0 = time.process_time()
        branchy_kernel(X, y, w0, inv, clip, 0, 0.0)
        times["before (branchy clip)"].append(time.process_time() - c0)
        c0 = time.process_time()
        clipped_gradient_sum(X, y, w0, inv, clip, loss)
        times["now (min/max clip)"].append(time.process_time() - c0)
    med = {k: 1e3 * float(np.median(v)) for k, v in times.items()}
    before, now = med.values()
    L = ["# Clipped-gradient kernel: CPU time per pass", ""]
    L.append(__doc__.split("\n\n", 2)[2].strip())
    L.append("")
    L.append(
        f"n = {args.n}, d = {args.d}, {args.repeats} repeats, numba: {HAVE_NUMBA}; "
        f"bit-identical: {identical}."
    )
    L.append("")
    L.append("| kernel | median CPU per pass (ms) |")
    L.append("|---|---|")
    for k, v in med.items():
        L.append(f"| {k} | {v:.1f} |")
    L.append("")
    L.append(f"Ratio before / now: {before / now:.2f}.")
    text = "\n".join(L) + "\n"
    (RESULTS / "heavy_tailed_kernel.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
