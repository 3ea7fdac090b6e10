"""The noise-free limit of the clipped-gradient solvers (``epsilon=inf``).

With an infinite budget a solver draws no noise and its clip levels are the
largest per-sample gradient norms, so it descends the estimator's own
objective: the mean loss over the rows that survive truncation. A fixed
number of gradient steps does not reach that objective's minimum on an
ill-conditioned design (features in different units, or many rare one-hot
columns), and nothing private limits the work any more. So a noise-free fit
ends by minimising the same objective to convergence, started from the
descent's iterate: least squares exactly, and the Huber loss with scipy's
L-BFGS in coordinates where every column has unit root mean square (a
change of variables, so the minimiser is the same; LSQR there for
least squares on sparse input). Nothing here is a
release: it runs only when nothing is private.

The classifiers do not use it: the unpenalised logistic and softmax losses
have no minimiser on separable rows, where running to convergence sends the
probabilities to 0 and 1 (breast_cancer_wdbc of the benchmark suite: 16x
scikit-learn's test log-loss, against 1.9x after the fixed descent).
"""

import numpy as np
import scipy.optimize
import scipy.sparse as sp
import scipy.sparse.linalg

from ..losses import SquaredLoss
from ._distributed import is_dask_collection, record_sum

__all__ = ["minimise_noise_free"]

#: Iteration cap of L-BFGS (a safeguard: the result is never worse than the
#: descent's iterate it starts from).
MAX_ITER = 2000


def _column_scales(X):
    """Root mean square of each column (1 where a column is all zero)."""
    if sp.issparse(X):
        sq = np.asarray(X.multiply(X).mean(axis=0)).ravel()
    else:
        sq = np.mean(np.square(X), axis=0)
    scale = np.sqrt(sq)
    return np.where(scale > 0, scale, 1.0)


def _scaled(X, scale):
    if sp.issparse(X):
        return sp.csr_matrix(X.multiply(1.0 / scale))
    return X / scale


def minimise_noise_free(X, y, loss, coef0, keep=None):
    """Minimiser of ``mean_i loss(<x_i, w>, y_i)`` over the kept rows.

    Parameters
    ----------
    X : {ndarray, sparse matrix, dask array} of shape (n, d)
        The design the solver descended on (intercept column included).
    y : ndarray or dask array of shape (n,)
    loss : _GLMLoss
    coef0 : ndarray of shape (d,)
        The descent's iterate (the start; its objective bounds the result's).
    keep : ndarray or dask array of bool of shape (n,), optional
        The rows that survived truncation (default: all).

    Returns
    -------
    ndarray of shape (d,)
        On dask input, least squares from the Gram matrix (its sums are
        added on the driver, the rows stay on the workers); the Huber loss
        keeps ``coef0`` there.

    Examples
    --------
    >>> import numpy as np
    >>> from skdp.losses import SquaredLoss
    >>> X = np.array([[1.0, 1e4], [2.0, 3e4], [3.0, 2e4], [4.0, 5e4]])
    >>> w = minimise_noise_free(X, X @ [1.0, 2e-4], SquaredLoss(), np.zeros(2))
    >>> np.allclose(w, [1.0, 2e-4])
    True
    """
    coef0 = np.asarray(coef0, dtype=float)
    if is_dask_collection(X):
        if not isinstance(loss, SquaredLoss):
            return coef0
        mask = (y == y) if keep is None else keep  # all True without truncation
        stats = record_sum(_gram_block, (X, y, mask))
        d = X.shape[1]
        gram, moment = stats[: d * d].reshape(d, d), stats[d * d :]
        return np.linalg.lstsq(gram, moment, rcond=None)[0]
    if keep is not None:
        kept = np.flatnonzero(keep)
        X, y = X[kept], y[kept]
    if X.shape[0] == 0:
        return coef0
    if isinstance(loss, SquaredLoss) and not sp.issparse(X):
        # a tie (rank-deficient design) keeps the minimum-norm solution
        coef = np.linalg.lstsq(X, y, rcond=None)[0]
    else:
        coef = _minimise_scaled(X, y, loss, coef0)
    if _mean_loss(X, y, loss, coef) <= _mean_loss(X, y, loss, coef0):
        return coef
    return coef0


def _minimise_scaled(X, y, loss, coef0):
    """The minimiser in unit-RMS column coordinates, mapped back: LSQR for
    least squares on sparse rows, L-BFGS for the other losses."""
    scale = _column_scales(X)
    Xs = _scaled(X, scale)
    n = X.shape[0]
    if isinstance(loss, SquaredLoss):  # sparse: LSQR, to the dense solution
        v = scipy.sparse.linalg.lsqr(
            Xs, y, atol=1e-15, btol=1e-15, iter_lim=100 * X.shape[1] + 1000
        )[0]
        return v / scale

    def objective(v):
        z = Xs @ v
        return np.mean(loss.value(z, y)), Xs.T @ loss.derivative(z, y) / n

    out = scipy.optimize.minimize(
        objective,
        coef0 * scale,
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": MAX_ITER, "ftol": 1e-15, "gtol": 1e-12},
    )
    return out.x / scale


def _mean_loss(X, y, loss, coef):
    return float(np.mean(loss.value(X @ coef, y)))


def _gram_block(X, y, keep):
    """``[X_k^T X_k, X_k^T y_k]`` of one chunk's kept rows ``k``."""
    rows = np.flatnonzero(np.asarray(keep))
    Xk = X[rows]
    Xk = Xk.toarray() if sp.issparse(Xk) else np.asarray(Xk, dtype=float)
    yk = np.asarray(y, dtype=float)[rows]
    return np.concatenate([(Xk.T @ Xk).ravel(), Xk.T @ yk])
