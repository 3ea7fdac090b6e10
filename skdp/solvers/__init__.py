"""Internal solver backends.

A solver is a plain function of ``(data, privacy plan, rng)`` returning a
result; it never reads an estimator's hyperparameters and contains no
scikit-learn. All noise is drawn with :func:`skdp.privacy.gaussian_noise`.
"""
