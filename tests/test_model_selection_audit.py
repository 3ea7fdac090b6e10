"""Privacy audit of PrivateSearchCV, with a copy that selects on exact scores.

The audited output is the released noisy validation loss. A correct search
at epsilon = 1 must not be flagged; the same search whose trials are scored
without noise (selection, and the reported score, on exact validation
losses) must be.
"""

import numpy as np
import pytest

import skdp
from skdp._testing.audit_configs import SEARCH_AUDIT
from skdp.model_selection import PrivateSearchCV, _search
from skdp.model_selection._scoring import noisy_validation_loss
from skdp.privacy.audit import audit_estimator

pytestmark = pytest.mark.slow

N_FITS = 300


def _search_and_data():
    name, params = SEARCH_AUDIT["estimator"]
    estimator = getattr(skdp, name)(**params)
    search = PrivateSearchCV(estimator, epsilon=1.0, **SEARCH_AUDIT["search"])
    n = SEARCH_AUDIT["n_samples"]
    X, y_out = np.zeros((n, 2)), np.zeros(n)
    y_in = y_out.copy()
    y_in[0] = SEARCH_AUDIT["canary_target"]  # its clipped loss is the bound
    return search, X, y_out, y_in


def _released_score(model, x, y):
    return model.best_score_


@pytest.mark.filterwarnings("ignore:n_samples=.* too small for this budget")
def test_search_audit_passes_and_exact_selection_is_flagged(monkeypatch):
    search, X, y_out, y_in = _search_and_data()
    honest = audit_estimator(
        search, X, y_out, y_in, n_fits=N_FITS, score=_released_score, random_state=0
    )
    assert honest.claimed_epsilon <= 1.0
    assert not honest.violated, honest

    def exact(model, X, y, loss_bound, noise_multiplier, rng):
        return noisy_validation_loss(model, X, y, loss_bound, 0.0, rng)

    monkeypatch.setattr(_search, "noisy_validation_loss", exact)
    control = audit_estimator(
        search, X, y_out, y_in, n_fits=N_FITS, score=_released_score, random_state=0
    )
    assert control.violated, control
