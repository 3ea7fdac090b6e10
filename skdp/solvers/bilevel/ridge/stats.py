"""Sufficient-statistics inner solver for bilevel ridge regression.

The squared loss of a linear model depends on the data only through the
(augmented) Gram matrix ``Z^T Z`` and moment vector ``Z^T y``, where
``Z = [X, c 1]`` carries a public constant column for the intercept. Releasing
both once with Gaussian noise makes *every* later ridge solve, at any penalty
and for any weighting of the training and validation parts, a closed-form
post-processing step. In the bilevel loop this means the two inner problems
of every outer step, and the outer loop itself, cost no privacy.

Sensitivities (replace-one, rows clipped to ``||x|| <= A``, ``|y| <= B``,
constant column ``c``; only the upper triangle of the Gram matrix is noised
and mirrored; the corner ``n c**2`` is public and exact):

- Gram: ``sqrt(2) (A**2 + c**2 / 2)`` if ``c**2 <= 2 A**2``, else ``2 c A``
  (``sqrt(2) A**2`` without intercept). Attained for ``d >= 2``.
- moment: ``2 B sqrt(A**2 + c**2)`` (``2 A B`` without intercept).
- sum of squared targets ``y^T y`` (optional, for the signal test of
  :mod:`.bilevel_ridge_signal`): ``B**2``.

Two ways to release two disjoint parts (:func:`release_statistics`: each part
its own Gram matrix; :func:`release_shared_gram`: one Gram matrix of all rows,
shared by the parts in proportion to their sizes, and a moment vector per
part). The released matrices are then re-expressed as (count, means, centred
scatter, centred cross-moment). The noisy scatter is projected on the positive
semi-definite cone (post-processing), so every ridge system below is solvable
for a positive penalty; the intercept is never penalized.
"""

import contextlib
import math
from dataclasses import dataclass

import numpy as np

from ....privacy import gaussian_noise
from ....utils import add_intercept_column

__all__ = [
    "RawStatistics",
    "RidgeStatistics",
    "exact_statistics",
    "gram_sensitivity",
    "moment_sensitivity",
    "release_shared_gram",
    "release_statistics",
]


def gram_sensitivity(feature_norm, intercept_scaling=None):
    """Replace-one L2 sensitivity of the upper triangle of ``Z^T Z``.

    Parameters
    ----------
    feature_norm : float
        Public bound ``A`` on the row norms of ``X`` (rows are clipped to it).
    intercept_scaling : float or None
        Value ``c`` of the public constant column; ``None`` for no intercept.

    Returns
    -------
    float

    Examples
    --------
    >>> round(gram_sensitivity(1.0), 4)
    1.4142
    >>> round(gram_sensitivity(1.0, 1.0), 4)
    2.1213
    """
    a2 = float(feature_norm) ** 2
    if intercept_scaling is None:
        return math.sqrt(2.0) * a2
    c = float(intercept_scaling)
    # max over the angle t between x and x' of
    # ||triu(x x^T - x' x'^T)||^2 + c^2 ||x - x'||^2 <= 2 A^4 (1 - t^2) + 2 c^2 A^2 (1 - t).
    if c * c <= 2.0 * a2:
        return math.sqrt(2.0) * (a2 + 0.5 * c * c)
    return 2.0 * c * math.sqrt(a2)


def moment_sensitivity(feature_norm, target_bound, intercept_scaling=None):
    """Replace-one L2 sensitivity of ``Z^T y``.

    Parameters
    ----------
    feature_norm : float
        Public bound ``A`` on the row norms.
    target_bound : float
        Public bound ``B`` on ``|y|``.
    intercept_scaling : float or None
        Constant column ``c``; ``None`` for no intercept.

    Returns
    -------
    float

    Examples
    --------
    >>> moment_sensitivity(1.0, 2.0)
    4.0
    """
    c = 0.0 if intercept_scaling is None else float(intercept_scaling)
    return 2.0 * float(target_bound) * math.hypot(float(feature_norm), c)


@dataclass(frozen=True)
class RidgeStatistics:
    """Squared-loss statistics of one data part, in centred form.

    For rows ``(x_i, y_i)`` with weights ``a`` (all equal within a part):
    ``weight = a n``, ``mean_x``, ``mean_y`` the weighted means, ``scatter =
    a sum (x_i - mean_x)(x_i - mean_x)^T`` and ``cross = a sum (x_i - mean_x)
    (y_i - mean_y)``. Without intercept the means are zero and ``scatter``,
    ``cross`` are the raw ``a X^T X`` and ``a X^T y``.

    Parameters
    ----------
    weight : float
    mean_x : ndarray of shape (d,)
    mean_y : float
    scatter : ndarray of shape (d, d)
    cross : ndarray of shape (d,)
    fit_intercept : bool
    """

    weight: float
    mean_x: np.ndarray
    mean_y: float
    scatter: np.ndarray
    cross: np.ndarray
    fit_intercept: bool

    def scaled(self, factor):
        """The same part with every row's loss multiplied by ``factor``."""
        f = float(factor)
        return RidgeStatistics(
            self.weight * f,
            self.mean_x,
            self.mean_y,
            self.scatter * f,
            self.cross * f,
            self.fit_intercept,
        )

    def __add__(self, other):
        """Pool two parts (the objective is the sum of their losses)."""
        w = self.weight + other.weight
        if not self.fit_intercept:
            return RidgeStatistics(
                w,
                self.mean_x,
                0.0,
                self.scatter + other.scatter,
                self.cross + other.cross,
                False,
            )
        mx = (self.weight * self.mean_x + other.weight * other.mean_x) / w
        my = (self.weight * self.mean_y + other.weight * other.mean_y) / w
        scatter = self.scatter + other.scatter
        cross = self.cross + other.cross
        for part in (self, other):
            dx = part.mean_x - mx
            scatter = scatter + part.weight * np.outer(dx, dx)
            cross = cross + part.weight * dx * (part.mean_y - my)
        return RidgeStatistics(w, mx, my, scatter, cross, True)

    def solve(self, penalty):
        """Minimizer of ``sum of weighted losses / 2 + penalty / 2 ||coef||^2``.

        The intercept is not penalized.

        Parameters
        ----------
        penalty : float
            Positive penalty in the units of the weighted sum.

        Returns
        -------
        coef : ndarray of shape (d,)
        intercept : float
        """
        d = self.cross.shape[0]
        system = self.scatter + penalty * np.eye(d)
        try:
            coef = np.linalg.solve(system, self.cross)
        except np.linalg.LinAlgError:
            # A PSD-projected noisy scatter can be singular when the penalty
            # is tiny: take the minimum-norm solution (post-processing).
            coef = np.linalg.lstsq(system, self.cross, rcond=None)[0]
        intercept = self.mean_y - self.mean_x @ coef if self.fit_intercept else 0.0
        return coef, float(intercept)

    def mean_loss_gradient(self, coef, intercept):
        """Gradient in ``coef`` of the part's weighted loss (intercept fixed)."""
        if not self.fit_intercept:
            return self.scatter @ coef - self.cross
        shift = intercept + self.mean_x @ coef - self.mean_y
        return self.scatter @ coef - self.cross + self.weight * shift * self.mean_x


@dataclass(frozen=True)
class RawStatistics:
    """Released (noisy) augmented Gram matrix and moment vector of one part.

    Parameters
    ----------
    gram : ndarray of shape (p, p)
        ``Z^T Z`` plus symmetric noise; ``p = d + 1`` with an intercept column.
    moment : ndarray of shape (p,)
        ``Z^T y`` plus noise.
    n_samples : int
        Public number of rows.
    intercept_scaling : float or None
        Constant column ``c`` (``None``: no intercept).
    target_sq : float or None
        ``y^T y`` plus noise; ``None`` when it is not released.
    """

    gram: np.ndarray
    moment: np.ndarray
    n_samples: int
    intercept_scaling: object = None
    target_sq: object = None

    def combine(self, other, weight, moment_weight=None):
        """``weight * self + (1 - weight) * other`` for two releases of the same rows.

        ``moment_weight`` (default: ``weight``) weighs the moment vectors.
        """
        w = float(weight)
        wm = w if moment_weight is None else float(moment_weight)
        return RawStatistics(
            w * self.gram + (1.0 - w) * other.gram,
            wm * self.moment + (1.0 - wm) * other.moment,
            self.n_samples,
            self.intercept_scaling,
            self.target_sq if self.target_sq is not None else other.target_sq,
        )

    def __add__(self, other):
        """Statistics of the union of two disjoint parts."""
        both = self.target_sq is not None and other.target_sq is not None
        return RawStatistics(
            self.gram + other.gram,
            self.moment + other.moment,
            self.n_samples + other.n_samples,
            self.intercept_scaling,
            self.target_sq + other.target_sq if both else None,
        )

    def centered(self):
        """Post-process into :class:`RidgeStatistics` (centred, PSD scatter)."""
        n, c = self.n_samples, self.intercept_scaling
        if c is None:
            d = self.moment.size
            return RidgeStatistics(
                float(n), np.zeros(d), 0.0, _psd(self.gram), self.moment.copy(), False
            )
        d = self.moment.size - 1
        mean_x = self.gram[:d, d] / (n * c)
        mean_y = float(self.moment[d] / (n * c))
        scatter = self.gram[:d, :d] - n * np.outer(mean_x, mean_x)
        cross = self.moment[:d] - n * mean_x * mean_y
        return RidgeStatistics(float(n), mean_x, mean_y, _psd(scatter), cross, True)


def exact_statistics(X, y, intercept_scaling=None):
    """Noise-free augmented statistics of clipped rows (the pre-noise release).

    Parameters
    ----------
    X : ndarray of shape (n, d)
        Clipped features.
    y : ndarray of shape (n,)
        Clipped targets.
    intercept_scaling : float or None
        Constant column ``c``; ``None`` for no intercept.

    Returns
    -------
    RawStatistics

    Examples
    --------
    >>> import numpy as np
    >>> s = exact_statistics(np.eye(2), np.array([1.0, 2.0]), 1.0)
    >>> s.gram
    array([[1., 0., 1.],
           [0., 1., 1.],
           [1., 1., 2.]])
    """
    X = np.asarray(X, dtype=float)
    y = np.asarray(y, dtype=float)
    n = X.shape[0]
    Z = X if intercept_scaling is None else add_intercept_column(X, intercept_scaling)
    return RawStatistics(Z.T @ Z, Z.T @ y, n, intercept_scaling, float(y @ y))


def _in_part(scope, k):
    """Ledger context of part ``k`` of a parallel scope (none without one)."""
    return contextlib.nullcontext() if scope is None else scope.part(k)


def _assemble(parts, noisy, target_sq_std, rng, scope=None):
    """Released parts from their noisy ``(gram, moment)`` pairs.

    Each part's ``y^T y`` gets noise of standard deviation ``target_sq_std``,
    or is left out (``None``): the exact value must never leave a release.
    It is drawn after the matrices, so it leaves their noise stream unchanged.
    """
    out = []
    for k, (part, (gram, moment)) in enumerate(zip(parts, noisy)):
        sq = None
        if target_sq_std is not None:
            # y**2 in [0, 1]: sensitivity 1.
            with _in_part(scope, k):
                sq = part.target_sq + gaussian_noise(
                    rng, target_sq_std, sensitivity=1.0, label="y^T y"
                )
        out.append(
            RawStatistics(gram, moment, part.n_samples, part.intercept_scaling, sq)
        )
    return out


def _gram_noise(rng, p, std, intercept, sensitivity, correlation=0.0):
    """Symmetric noise on the upper triangle of a ``p x p`` Gram matrix."""
    iu = np.triu_indices(p)
    flat = gaussian_noise(
        rng,
        std,
        iu[0].size,
        sensitivity=sensitivity,
        correlation=correlation,
        label="Gram matrix",
    )
    gram = np.zeros((p, p))
    gram[iu] = flat
    gram = gram + np.triu(gram, 1).T
    if intercept:
        gram[-1, -1] = 0.0  # the corner n c**2 is public
    return gram


def _noise(rng, p, gram_std, moment_std, intercept, sensitivities, correlation):
    """One standard draw of (symmetric Gram noise, moment noise), scaled."""
    dg, dm = sensitivities
    gram = _gram_noise(rng, p, gram_std, intercept, dg, correlation)
    moment = gaussian_noise(
        rng, moment_std, p, sensitivity=dm, correlation=correlation, label="moment"
    )
    return gram, moment


def _check_correlation(rho, n_parts):
    if rho != 0.0 and n_parts != 2:
        raise ValueError("Correlated noise needs exactly two parts.")
    if not -1.0 < rho < 1.0:
        raise ValueError("correlation must be in (-1, 1).")


def _correlate(first, second, rho):
    """Second part's noise: ``rho * first + sqrt(1 - rho**2) * fresh``."""
    if rho == 0.0:
        return second
    return rho * first + math.sqrt(1.0 - rho * rho) * second


def release_statistics(
    parts,
    *,
    gram_std,
    moment_std,
    rng,
    sensitivities,
    correlation=0.0,
    target_sq_std=None,
    scope=None,
):
    """Release the statistics of disjoint parts with Gaussian noise.

    Every upper-triangle entry of each part's Gram matrix gets noise of
    standard deviation ``gram_std``, every moment entry ``moment_std``. With
    two parts and ``correlation = rho < 0`` their noises are jointly Gaussian
    with correlation ``rho`` (entry by entry): each part alone is as noisy as
    before, but the noise of their *sum* has variance ``2 (1 + rho)`` times a
    part's instead of ``2``. For a record of one part, the release is a
    Gaussian mechanism whose privacy is that of independent noise of standard
    deviation ``std * sqrt(1 - rho**2)``: the Mahalanobis norm of a shift
    ``(v, 0)`` is ``||v|| / (std sqrt(1 - rho**2))``.

    Parameters
    ----------
    parts : list of RawStatistics
        Exact statistics (:func:`exact_statistics`) of disjoint parts.
    gram_std, moment_std : float
        Marginal noise standard deviations.
    rng : numpy.random.Generator
    correlation : float, default=0.0
        ``rho`` in ``(-1, 1)``; only for two parts.
    sensitivities : tuple (float, float)
        Replace-one L2 sensitivities of a part's Gram upper triangle and
        moment vector (:func:`gram_sensitivity`, :func:`moment_sensitivity`),
        for the privacy ledger.
    target_sq_std : float or None, default=None
        Standard deviation of the independent noise on each part's ``y^T y``;
        ``None`` does not release it.
    scope : parallel scope, optional
        The ledger's scope whose part ``k`` is ``parts[k]``
        (:func:`skdp.privacy.parallel_scope`).

    Returns
    -------
    list of RawStatistics

    Examples
    --------
    >>> import numpy as np
    >>> part = exact_statistics(np.eye(2), np.ones(2), 1.0)
    >>> out = release_statistics([part], gram_std=0.0, moment_std=0.0,
    ...                          rng=np.random.default_rng(0),
    ...                          sensitivities=(2.1, 2.8))
    >>> np.array_equal(out[0].gram, part.gram)
    True
    """
    rho = float(correlation)
    _check_correlation(rho, len(parts))
    out, first = [], None
    for k, part in enumerate(parts):
        p = part.moment.size
        intercept = part.intercept_scaling is not None
        with _in_part(scope, k):
            noise = _noise(
                rng, p, gram_std, moment_std, intercept, sensitivities, rho
            )
        if k == 1:
            noise = tuple(_correlate(a, b, rho) for a, b in zip(first, noise))
        first = noise if k == 0 else first
        out.append((part.gram + noise[0], part.moment + noise[1]))
    return _assemble(parts, out, target_sq_std, rng, scope)


def release_shared_gram(
    parts,
    *,
    gram_std,
    moment_std,
    rng,
    sensitivities,
    correlation=0.0,
    target_sq_std=None,
    scope=None,
):
    """Release one Gram matrix of all rows and a moment vector per part.

    The Gram matrix of the union of the parts gets symmetric noise of
    standard deviation ``gram_std`` per upper-triangle entry (once); each
    part's moment vector gets noise of standard deviation ``moment_std`` per
    entry, with correlation ``rho`` between two parts (as in
    :func:`release_statistics`). A record is in the shared Gram matrix and in
    its own part's moment vector: the two Gaussian releases compose.

    Each returned part carries the shared Gram matrix scaled by its share of
    the rows, ``G * n_k / n`` (post-processing): the parts' Gram matrices then
    sum to the released ``G``, and their pooled statistics have the shared
    Gram matrix's noise instead of the sum of two parts' noises. Only the
    moment vectors tell the parts apart, which is where the labels, and so
    the overfitting a validation objective measures, are. Without Gram noise
    (``gram_std = 0``, no privacy) each part keeps its own exact Gram matrix.

    Parameters
    ----------
    parts : list of RawStatistics
        Exact statistics (:func:`exact_statistics`) of disjoint parts.
    gram_std, moment_std : float
        Noise standard deviations of the shared Gram entries and of each
        part's (marginal) moment entries.
    rng : numpy.random.Generator
    sensitivities : tuple (float, float)
        As in :func:`release_statistics`.
    correlation : float, default=0.0
        ``rho`` in ``(-1, 1)`` of the two parts' moment noises.
    target_sq_std : float or None, default=None
        As in :func:`release_statistics`.
    scope : parallel scope, optional
        As in :func:`release_statistics`; the shared Gram matrix, of all
        rows, lies outside it.

    Returns
    -------
    list of RawStatistics

    Examples
    --------
    >>> import numpy as np
    >>> X = np.arange(8.0).reshape(4, 2)
    >>> a = exact_statistics(X[:1], np.ones(1), 1.0)
    >>> b = exact_statistics(X[1:], np.ones(3), 1.0)
    >>> ra, rb = release_shared_gram([a, b], gram_std=1.0, moment_std=0.0,
    ...                              rng=np.random.default_rng(0),
    ...                              sensitivities=(2.1, 2.8))
    >>> bool(np.allclose(ra.gram * 3, rb.gram)), bool(np.allclose(ra.moment, a.moment))
    (True, True)
    >>> bool(np.allclose((ra + rb).gram[-1, -1], 4.0))  # the public corner n c**2
    True
    """
    rho = float(correlation)
    _check_correlation(rho, len(parts))
    p = parts[0].moment.size
    intercept = parts[0].intercept_scaling is not None
    n = sum(part.n_samples for part in parts)
    dg, dm = sensitivities
    shared = sum(part.gram for part in parts) + _gram_noise(
        rng, p, gram_std, intercept, dg
    )
    out, first = [], None
    for k, part in enumerate(parts):
        with _in_part(scope, k):
            noise = gaussian_noise(
                rng, moment_std, p, sensitivity=dm, correlation=rho, label="moment"
            )
        if k == 1:
            noise = _correlate(first, noise, rho)
        first = noise if k == 0 else first
        gram = shared * (part.n_samples / n) if gram_std > 0 else part.gram
        out.append((gram, part.moment + noise))
    return _assemble(parts, out, target_sq_std, rng, scope)


def _psd(matrix):
    """Nearest positive semi-definite matrix (clip negative eigenvalues)."""
    sym = 0.5 * (matrix + matrix.T)
    if sym.size == 0:
        return sym
    vals, vecs = np.linalg.eigh(sym)
    return (vecs * np.maximum(vals, 0.0)) @ vecs.T
