"""Seeded noise streams: pipeline steps, seed entropy, canonical parameters (issue 32).

- Finding 2: the steps of a pipeline fitted directly with the same integer
  seed and no accountant drew identical normals, so the imputer's count noise
  could be subtracted from the scaler's second moment. Every seeded fit now
  derives its stream from the seed, the step's class, its parameters and its
  data.
- Finding 3: a ``RandomState`` collapsed to a seed below 2**31 (and a
  ``Generator`` to 63 bits); both now give 128 bits.
- Finding 4: parameters were hashed through ``repr``, which numpy elides
  above 1,000 entries, so two candidates differing in the middle of a
  1,500-entry ``bounds`` array drew the same noise.
- ``check_pipeline`` and ``spent`` flag steps that share a seed.
- Repeated trials of one candidate in ``PrivateSearchCV`` draw other noise.
"""

import copy
import warnings

import numpy as np
import pytest
import scipy.sparse as sp
from _toy_estimators import PrivateMean
from sklearn.base import clone
from sklearn.pipeline import make_pipeline

import skdp.preprocessing._imputer as imputer_module
import skdp.preprocessing._moments as moments_module
from skdp import PrivacyAccountant, PrivacyLeakWarning, check_pipeline, spent
from skdp.base import _fit_digest
from skdp.model_selection import PrivateSearchCV
from skdp.preprocessing import MinMaxScaler, SimpleImputer, StandardScaler
from skdp.privacy import gaussian_mechanism
from skdp.utils import check_generator

BOUNDS = (0.0, 1.0)


def _data(n=200, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.uniform(0.0, 1.0, size=(n, d))
    X[rng.uniform(size=(n, d)) < 0.2] = np.nan
    return X


@pytest.fixture
def standard_draws(monkeypatch):
    """Record the standard normals behind every Gaussian release, per mechanism."""
    draws = []

    def recording(value, sensitivity, noise_multiplier, *, rng):
        noisy = gaussian_mechanism(value, sensitivity, noise_multiplier, rng=rng)
        draws.append(
            (np.asarray(noisy) - np.asarray(value)) / (noise_multiplier * sensitivity)
        )
        return noisy

    monkeypatch.setattr(imputer_module, "gaussian_mechanism", recording)
    monkeypatch.setattr(moments_module, "gaussian_mechanism", recording)
    return draws


def _pipeline(imputer_seed, scaler_seed, accountant=None):
    return make_pipeline(
        SimpleImputer(
            strategy="mean",
            bounds=BOUNDS,
            epsilon=1.0,
            delta=1e-6,
            random_state=imputer_seed,
            accountant=accountant,
        ),
        StandardScaler(
            bounds=BOUNDS,
            epsilon=1.0,
            delta=1e-6,
            random_state=scaler_seed,
            accountant=accountant,
        ),
    )


# -- finding 2: pipeline steps sharing a seed ------------------------------------------


def test_pipeline_steps_with_one_seed_draw_other_normals(standard_draws):
    X = _data()
    _pipeline(7, 7).fit(X)
    imputer, scaler = standard_draws
    k = min(imputer.size, scaler.size)
    assert not np.allclose(imputer.ravel()[:k], scaler.ravel()[:k], rtol=0, atol=1e-9)


def test_pipeline_steps_with_one_seed_are_uncorrelated_over_seeds(standard_draws):
    # With shared normals the first draws of the two steps were equal for
    # every seed (correlation 1); independent streams give about 0.
    X = _data()
    for seed in range(200):
        _pipeline(seed, seed).fit(X)
    first = np.array(
        [[d.ravel()[0] for d in standard_draws[i : i + 2]] for i in range(0, 400, 2)]
    )
    r = np.corrcoef(first[:, 0], first[:, 1])[0, 1]
    assert abs(r) < 0.3  # |r| > 0.3 has probability below 1e-5 at n = 200
    # ... while each step stays reproducible
    X_out = _pipeline(3, 3).fit_transform(X)
    np.testing.assert_array_equal(X_out, _pipeline(3, 3).fit_transform(X))


# -- finding 3: 128 bits from a RandomState or a Generator ----------------------------


def _random_states_agreeing_on_the_first_draw():
    """Two RandomStates whose first 31-bit draw agrees and whose later draws differ."""
    name, keys, pos, has_gauss, cached = np.random.RandomState(0).get_state()
    other = keys.copy()
    other[1:] ^= np.uint32(0x5A5A5A5A)  # the first output depends on keys[0] only
    a, b = np.random.RandomState(), np.random.RandomState()
    a.set_state((name, keys, 0, has_gauss, cached))
    b.set_state((name, other, 0, has_gauss, cached))
    return a, b


def test_random_states_that_agree_on_31_bits_give_other_noise():
    a, b = _random_states_agreeing_on_the_first_draw()
    # the precondition: the old seed, one draw below 2**31 - 1, is the same
    probe_a, probe_b = copy.deepcopy(a), copy.deepcopy(b)
    top = np.iinfo(np.int32).max
    assert probe_a.randint(top) == probe_b.randint(top)
    assert probe_a.randint(top) != probe_b.randint(top)
    X = _data()
    fits = [
        StandardScaler(bounds=BOUNDS, epsilon=1.0, delta=1e-6, random_state=rs).fit(
            np.nan_to_num(X, nan=0.5)
        )
        for rs in (a, b)
    ]
    assert not np.array_equal(fits[0].mean_, fits[1].mean_)


@pytest.mark.parametrize("kind", ["RandomState", "Generator"])
@pytest.mark.parametrize("stream", [None, 3, (1, 2, 3)])
def test_random_state_and_generator_give_128_bits(kind, stream):
    if kind == "Generator" and stream is None:
        pytest.skip("without a stream a Generator is used as it is")
    source = (
        np.random.RandomState(0) if kind == "RandomState" else np.random.default_rng(0)
    )
    entropy = check_generator(source, stream).bit_generator.seed_seq.entropy
    words = np.atleast_1d(np.asarray(entropy, dtype=object))
    assert len(words) * 32 >= 128
    assert all(0 <= int(w) < 2**32 for w in words)
    assert sum(int(w).bit_length() for w in words) > 96  # not a short seed padded


def test_one_generator_shared_or_copied_gives_independent_streams(standard_draws):
    X = np.nan_to_num(_data(), nan=0.5)
    shared = np.random.default_rng(0)
    _pipeline(shared, shared).fit(X)
    imputer, scaler = standard_draws
    k = min(imputer.size, scaler.size)
    assert not np.allclose(imputer.ravel()[:k], scaler.ravel()[:k], rtol=0, atol=1e-9)
    # copies of one Generator (what clone makes) on other data: other noise
    model = StandardScaler(bounds=BOUNDS, random_state=np.random.default_rng(1))
    first = clone(model).fit(X).mean_
    assert np.array_equal(first, clone(model).fit(X).mean_)
    assert not np.array_equal(first, clone(model).fit(X[1:]).mean_)


def test_an_integer_seed_is_used_as_given():
    assert check_generator(5).bit_generator.seed_seq.entropy == 5
    assert check_generator(5, stream=(9,)).bit_generator.seed_seq.entropy == 5


# -- finding 4: canonical parameter hashing -------------------------------------------


def _wide_bounds(middle):
    lower, upper = np.zeros(1500), np.ones(1500)
    upper[750] = middle
    return lower, upper


def test_candidates_differing_in_the_middle_of_a_long_bounds_array_differ():
    rng = np.random.default_rng(0)
    X = rng.uniform(0.0, 1.0, size=(50, 1500))
    base = StandardScaler(epsilon=1.0, delta=1e-6, with_std=False, random_state=0)
    # GridSearchCV's candidates: clones of one estimator, set_params, fit
    fits = [clone(base).set_params(bounds=_wide_bounds(m)).fit(X) for m in (1.0, 1.5)]
    assert repr(fits[0].bounds) == repr(fits[1].bounds)  # numpy elides the middle
    others = np.arange(1500) != 750
    noise_difference = fits[0].mean_[others] - fits[1].mean_[others]
    assert np.max(np.abs(noise_difference)) > 1e-6


def test_parameters_are_hashed_canonically():
    X = np.zeros((4, 2))

    def digest(**params):
        return _fit_digest(StandardScaler(**params), [X])

    assert digest(bounds=_wide_bounds(1.0)) != digest(bounds=_wide_bounds(1.5))
    same = np.zeros(3), np.ones(3)
    assert digest(bounds=same) == digest(bounds=(np.zeros(3), np.ones(3)))
    assert digest(bounds=same) != digest(
        bounds=(np.zeros(3, dtype=np.float32), np.ones(3))
    )
    assert digest(bounds=(0.0, 1.0)) != digest(bounds=[0.0, 1.0])
    # random_state, accountant and verbose do not name the stream
    assert digest(random_state=1) == digest(random_state=2)
    assert digest() == digest(accountant=PrivacyAccountant(epsilon=1.0, delta=1e-6))
    # nested estimators enter by class and their own parameters
    grid = {"with_std": [True, False]}

    def search(**params):
        estimator = StandardScaler(bounds=(0.0, 1.0), **params)
        return _fit_digest(PrivateSearchCV(estimator, param_grid=grid), [X])

    assert search(with_mean=True) != search(with_mean=False)
    assert search(random_state=3) == search(random_state=4)
    assert _fit_digest(
        PrivateSearchCV(StandardScaler(), param_grid=grid), [X]
    ) != _fit_digest(PrivateSearchCV(MinMaxScaler(), param_grid=grid), [X])


def test_object_array_likes_and_distributions_are_hashed_by_value():
    # Finding 4 for what is not an ndarray: pandas elides the repr of a long
    # object Series or Index (declared groups, classes), so two candidates
    # differing in its middle drew the same noise; and a frozen scipy
    # distribution (param_distributions) hashed by its repr, its address, so
    # a seeded search was not reproducible.
    pd = pytest.importorskip("pandas")
    from scipy.stats import loguniform

    X = np.zeros((4, 2))
    names = [f"g{i}" for i in range(2000)]
    other = list(names)
    other[1000] = "changed"

    def digest(value):
        return _fit_digest(StandardScaler(bounds=value), [X])

    for container in (pd.Series, pd.Index):
        assert digest(container(names)) != digest(container(other))
        assert digest(container(names)) == digest(container(list(names)))

    def search(distribution):
        estimator = StandardScaler(bounds=(0.0, 1.0))
        grid = {"with_std": [True, False], "with_mean": distribution}
        return _fit_digest(PrivateSearchCV(estimator, param_distributions=grid), [X])

    assert search(loguniform(1e-3, 1.0)) == search(loguniform(1e-3, 1.0))
    assert search(loguniform(1e-3, 1.0)) != search(loguniform(1e-2, 1.0))


def test_integers_that_float64_merges_give_other_digests():
    # Labels and group identifiers are read exactly (classes_, groups), not as
    # float64: 2**53 and 2**53 + 1 are two groups. Hashed as float64 they were
    # one value, so two fits whose groups differ drew the same noise, and the
    # difference of their releases was noise-free.
    X = np.zeros((6, 2))
    y = np.array([0, 1] * 3)
    ids = np.array([2**53, 2**53 + 1] * 3, dtype=np.int64)
    merged = np.full(6, 2**53, dtype=np.int64)
    estimator = StandardScaler(random_state=0)
    for kind in (np.int64, np.uint64):
        a, b = ids.astype(kind), merged.astype(kind)
        assert _fit_digest(estimator, [X, y, a]) != _fit_digest(estimator, [X, y, b])
        sparse = [_fit_digest(estimator, [sp.csr_array(v[:, None])]) for v in (a, b)]
        assert sparse[0] != sparse[1]
    # ... also in a frame whose float column makes the whole frame float64
    pd = pytest.importorskip("pandas")
    frames = [pd.DataFrame({"id": v, "x": np.zeros(6)}) for v in (ids, merged)]
    assert _fit_digest(estimator, [X, y, frames[0]]) != _fit_digest(
        estimator, [X, y, frames[1]]
    )
    # integers that float64 holds exactly keep one digest with their floats
    small = np.arange(12).reshape(4, 3)
    digests = {
        _fit_digest(estimator, [value])
        for value in (
            small,
            small.astype(float),
            sp.csr_array(small),
            pd.DataFrame(small),
            pd.DataFrame(small).astype({0: float}),
        )
    }
    assert len(digests) == 1


# -- check_pipeline and spent flag shared seeds ---------------------------------------


def test_check_pipeline_and_spent_flag_steps_that_share_a_seed():
    X = _data()
    leaks = check_pipeline(_pipeline(7, 7))
    assert [leak.path for leak in leaks] == ["simpleimputer", "standardscaler"]
    assert "'standardscaler'" in leaks[0].reason
    generator = np.random.default_rng(0)
    assert len(check_pipeline(_pipeline(generator, generator))) == 2
    # not flagged: other seeds, copies of one Generator, OS entropy, a ledger
    assert check_pipeline(_pipeline(7, 8)) == []
    assert (
        check_pipeline(_pipeline(np.random.default_rng(0), np.random.default_rng(0)))
        == []
    )
    assert check_pipeline(_pipeline(None, None)) == []
    acc = PrivacyAccountant(epsilon=5.0, delta=1e-5)
    assert check_pipeline(_pipeline(7, 7, accountant=acc)) == []
    with pytest.warns(PrivacyLeakWarning, match="'simpleimputer', 'standardscaler'"):
        shared = spent(_pipeline(7, 7).fit(X))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        assert spent(_pipeline(7, 8).fit(X)) == shared  # the budget itself holds
        spent(_pipeline(7, 7, accountant=acc).fit(X))


def test_steps_sharing_a_seed_on_separate_accountants_are_flagged(standard_draws):
    # A ledger stream is (seed, position on the ledger): two steps on two
    # fresh accountants with one seed draw the same normals on different data
    # (finding 2's leak, through ledgers), so check_pipeline and spent say so.
    X = _data()

    def pipeline(imputer_seed, scaler_seed):
        return make_pipeline(
            SimpleImputer(
                strategy="mean",
                bounds=BOUNDS,
                random_state=imputer_seed,
                accountant=PrivacyAccountant(epsilon=5.0, delta=1e-5),
            ),
            StandardScaler(
                bounds=BOUNDS,
                random_state=scaler_seed,
                accountant=PrivacyAccountant(epsilon=5.0, delta=1e-5),
            ),
        )

    fitted = pipeline(7, 7).fit(X)
    imputer, scaler = standard_draws
    k = min(imputer.size, scaler.size)
    np.testing.assert_allclose(imputer.ravel()[:k], scaler.ravel()[:k], atol=1e-9)
    leaks = check_pipeline(pipeline(7, 7))
    assert [leak.path for leak in leaks] == ["simpleimputer", "standardscaler"]
    assert "another accountant" in leaks[0].reason
    with pytest.warns(PrivacyLeakWarning, match="separate accountants"):
        spent(fitted)
    # copies of one Generator (what clone makes) are one seed too
    generator = np.random.default_rng(0)
    assert len(check_pipeline(pipeline(generator, copy.deepcopy(generator)))) == 2
    # not flagged: other seeds, OS entropy
    assert check_pipeline(pipeline(7, 8)) == []
    assert check_pipeline(pipeline(None, None)) == []
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        spent(pipeline(7, 8).fit(X))


# -- PrivateSearchCV: repeated trials of one candidate ---------------------------------


class _RecordingMean(PrivateMean):
    """PrivateMean that records every released mean (a class-level log)."""

    released = []

    def fit(self, X, y):
        super().fit(X, y)
        type(self).released.append(self.mean_)
        return self


@pytest.mark.parametrize(
    "seed", [0, np.random.default_rng(0)], ids=["int", "Generator"]
)
def test_repeated_trials_of_one_candidate_draw_independent_noise(seed):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(400, 2))
    y = np.clip(rng.normal(size=400) / 3, -1, 1)
    _RecordingMean.released = []
    search = PrivateSearchCV(
        _RecordingMean(),
        param_grid=[{}],  # one candidate: every trial repeats it
        mean_trials=8.0,
        trials_shape=np.inf,
        loss_bound=2.0,
        epsilon=1.0,
        random_state=seed,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        search.fit(X, y)
    released = _RecordingMean.released
    assert len(released) >= 3  # Poisson(8) trials (K <= 2 has probability 0.014)
    assert len(set(released)) == len(released)
