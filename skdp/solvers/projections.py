"""Compact convex domains for saddle-point solvers: ball, simplex, product.

A domain knows three things a DP saddle-point solver needs:

- ``project(v)``: the Euclidean projection onto the set;
- ``diameter``: the public constant ``D`` of the convergence theory;
- ``min_linear(g)``: ``min_{w in W} <g, w>`` (a linear minimisation oracle
  value), which turns any candidate into an exact accuracy certificate
  ``<G(u), u> - min_w <G(u), w>`` for a variational inequality.

Domains are immutable and hold no data.
"""

import math

import numpy as np

__all__ = ["Ball", "Simplex", "ProductDomain", "project_ball", "project_simplex"]


def project_ball(v, radius):
    """Euclidean projection of ``v`` onto ``{w : ||w|| <= radius}``.

    Parameters
    ----------
    v : ndarray of shape (d,)
    radius : float
        Non-negative radius.

    Returns
    -------
    ndarray of shape (d,)

    Examples
    --------
    >>> import numpy as np
    >>> project_ball(np.array([3.0, 4.0]), 1.0)
    array([0.6, 0.8])
    """
    v = np.asarray(v, dtype=float)
    # einsum, not BLAS: a threaded dot costs ~24 ms per call at p = 1e4 on a
    # busy machine, which dominated sparse fits (benchmarks/results/sparse.md)
    flat = v.ravel()
    norm = float(np.sqrt(np.einsum("i,i->", flat, flat)))
    if norm <= radius:
        return v.copy()
    return v * (radius / norm)


def project_simplex(v):
    """Euclidean projection of ``v`` onto the probability simplex.

    Sort-based algorithm of Held, Wolfe and Crowder (1974), in the form of
    Duchi et al. (2008): ``O(m log m)``.

    Parameters
    ----------
    v : ndarray of shape (m,)

    Returns
    -------
    ndarray of shape (m,)
        Non-negative, sums to one.

    References
    ----------
    Duchi, Shalev-Shwartz, Singer and Chandra, "Efficient projections onto the
    l1-ball for learning in high dimensions", ICML 2008.

    Examples
    --------
    >>> import numpy as np
    >>> project_simplex(np.array([0.5, 2.0, -1.0]))
    array([0., 1., 0.])
    """
    v = np.asarray(v, dtype=float)
    m = v.size
    u = np.sort(v)[::-1]
    cumsum = np.cumsum(u) - 1.0
    ks = np.arange(1, m + 1)
    positive = u - cumsum / ks > 0
    rho = int(ks[positive][-1])
    theta = cumsum[rho - 1] / rho
    return np.maximum(v - theta, 0.0)


class Ball:
    """Euclidean ball ``{w in R^dim : ||w|| <= radius}`` centred at 0.

    Parameters
    ----------
    dim : int
    radius : float

    Attributes
    ----------
    diameter : float
        ``2 * radius``.

    Examples
    --------
    >>> import numpy as np
    >>> ball = Ball(2, 1.0)
    >>> ball.project(np.array([0.0, 2.0]))
    array([0., 1.])
    >>> ball.min_linear(np.array([3.0, 4.0]))
    -5.0
    """

    def __init__(self, dim, radius):
        if not radius >= 0:
            raise ValueError(f"radius must be non-negative, got {radius!r}.")
        self.dim = int(dim)
        self.radius = float(radius)
        self.diameter = 2.0 * self.radius

    def project(self, v):
        return project_ball(v, self.radius)

    def min_linear(self, g):
        return -self.radius * float(np.linalg.norm(g))

    def center(self):
        return np.zeros(self.dim)


class Simplex:
    """Probability simplex ``{q >= 0 : sum(q) = scale}``, scaled by ``scale``.

    A scaled simplex is what a rescaled dual variable lives in: ``q = p /
    scale`` with ``p`` a probability vector.

    Parameters
    ----------
    dim : int
    scale : float, default=1.0

    Attributes
    ----------
    diameter : float
        ``sqrt(2) * scale`` (0 if ``dim == 1``).

    Examples
    --------
    >>> import numpy as np
    >>> Simplex(3).project(np.array([1.0, 1.0, 1.0]))
    array([0.33333333, 0.33333333, 0.33333333])
    >>> Simplex(3).min_linear(np.array([2.0, -1.0, 0.5]))
    -1.0
    """

    def __init__(self, dim, scale=1.0):
        if not scale > 0:
            raise ValueError(f"scale must be positive, got {scale!r}.")
        self.dim = int(dim)
        self.scale = float(scale)
        self.diameter = math.sqrt(2.0) * self.scale if self.dim > 1 else 0.0

    def project(self, v):
        return self.scale * project_simplex(np.asarray(v, dtype=float) / self.scale)

    def min_linear(self, g):
        return self.scale * float(np.min(g))

    def center(self):
        return np.full(self.dim, self.scale / self.dim)


class ProductDomain:
    """Cartesian product of domains; vectors are the blocks concatenated.

    Projection, diameter and the linear oracle all split over the blocks:
    ``D = sqrt(sum D_i**2)``.

    Parameters
    ----------
    *blocks : Ball, Simplex or ProductDomain

    Attributes
    ----------
    dim : int
    diameter : float
    slices : list of slice
        Where each block sits in the concatenated vector.

    Examples
    --------
    >>> import numpy as np
    >>> dom = ProductDomain(Ball(2, 1.0), Simplex(2))
    >>> dom.project(np.array([3.0, 4.0, 1.0, 0.0]))
    array([0.6, 0.8, 1. , 0. ])
    >>> round(dom.diameter, 4)
    2.4495
    """

    def __init__(self, *blocks):
        self.blocks = tuple(blocks)
        self.slices = []
        start = 0
        for block in self.blocks:
            self.slices.append(slice(start, start + block.dim))
            start += block.dim
        self.dim = start
        self.diameter = math.sqrt(sum(b.diameter**2 for b in self.blocks))

    def project(self, v):
        v = np.asarray(v, dtype=float)
        return np.concatenate(
            [b.project(v[s]) for b, s in zip(self.blocks, self.slices)]
        )

    def min_linear(self, g):
        return float(sum(b.min_linear(g[s]) for b, s in zip(self.blocks, self.slices)))

    def center(self):
        return np.concatenate([b.center() for b in self.blocks])
