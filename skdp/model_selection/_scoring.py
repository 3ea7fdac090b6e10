"""The private validation score: a clipped per-record loss, averaged, noised.

Every validation record contributes a loss clipped to ``[0, loss_bound]``
(``loss_bound`` is public), so replacing one validation record moves the
mean by at most ``loss_bound / n_val``: the replace-one sensitivity. The
trial's model is fitted on the disjoint training part, so it does not depend
on the validation records. Gaussian noise of standard deviation
``z * loss_bound / n_val`` makes the score a ``1/z``-GDP release of the
validation part.

- classifiers: log-loss ``min(-log p(y | x), loss_bound)``, where a label the
  model does not know, or a non-finite probability, costs ``loss_bound``;
- regressors: squared error ``min((y - f(x))**2, loss_bound)``, non-finite
  predictions cost ``loss_bound``.
"""

import numpy as np
from sklearn.base import is_classifier

from ..privacy import GaussianDpEvent, gaussian_noise

__all__ = ["clipped_losses", "noisy_validation_loss", "score_event"]


def clipped_losses(model, X, y, loss_bound):
    """Per-record loss of ``model`` clipped to ``[0, loss_bound]``.

    Parameters
    ----------
    model : fitted estimator
        A classifier with ``predict_proba`` or a regressor.
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    loss_bound : float
        Public clipping level.

    Returns
    -------
    losses : ndarray of shape (n,)

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> m = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    >>> clipped_losses(m, [[0.0], [1.0]], [3.0, 1.0], 4.0).round(6)
    array([4., 0.])
    """
    y = np.asarray(y)
    with np.errstate(all="ignore"):
        if is_classifier(model):
            proba = np.asarray(model.predict_proba(X), dtype=float)
            classes = np.asarray(model.classes_)
            col = np.searchsorted(classes, y)
            col = np.clip(col, 0, len(classes) - 1)
            known = classes[col] == y
            p = proba[np.arange(len(y)), col]
            loss = np.where(known & (p > 0), -np.log(np.where(p > 0, p, 1.0)), np.inf)
        else:
            pred = np.asarray(model.predict(X), dtype=float).reshape(len(y), -1)
            resid = pred - np.asarray(y, dtype=float).reshape(len(y), -1)
            loss = np.sum(resid**2, axis=1)
        loss = np.where(np.isfinite(loss), loss, loss_bound)
        return np.clip(loss, 0.0, loss_bound)


def noisy_validation_loss(model, X, y, loss_bound, noise_multiplier, rng):
    """Mean clipped validation loss plus ``N(0, (z loss_bound / n)**2)``.

    Parameters
    ----------
    model : fitted estimator
        Fitted on records disjoint from ``(X, y)``.
    X : array-like of shape (n, d)
    y : array-like of shape (n,)
    loss_bound : float
    noise_multiplier : float
        ``z = sigma / Delta`` with ``Delta = loss_bound / n`` (replace-one).
    rng : numpy.random.Generator

    Returns
    -------
    noisy_loss : float

    References
    ----------
    - Dwork and Roth, "The algorithmic foundations of differential privacy", 2014.

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.linear_model import LinearRegression
    >>> m = LinearRegression().fit([[0.0], [1.0]], [0.0, 1.0])
    >>> rng = np.random.default_rng(0)
    >>> noisy_validation_loss(m, [[0.0], [1.0]], [3.0, 1.0], 4.0, 0.0, rng)
    2.0
    """
    losses = clipped_losses(model, X, y, loss_bound)
    n = len(losses)
    with np.errstate(all="ignore"):
        value = float(np.mean(losses))
    std = noise_multiplier * loss_bound / n
    return value + float(
        gaussian_noise(rng, std, sensitivity=loss_bound / n, label="validation loss")
    )


def score_event(noise_multiplier):
    """Privacy plan of one noisy validation score.

    Parameters
    ----------
    noise_multiplier : float

    Returns
    -------
    DpEvent

    Examples
    --------
    >>> score_event(3.0)
    GaussianDpEvent(noise_multiplier=3.0)
    """
    return GaussianDpEvent(float(noise_multiplier))
