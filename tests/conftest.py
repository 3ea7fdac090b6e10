"""Shared fixtures of the dask tests (``test_dask*.py``)."""

import pytest


@pytest.fixture(scope="module")
def client():
    """A 2-process ``LocalCluster`` on loopback, no dashboard, closed after
    the module's tests."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(
        n_workers=2,
        processes=True,
        threads_per_worker=1,
        host="127.0.0.1",
        dashboard_address=None,
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


@pytest.fixture
def graph_runs(monkeypatch):
    """The graphs the client runs from here on (every compute/persist on the
    cluster goes through ``Client.get``): one entry per pass over the data."""
    distributed = pytest.importorskip("distributed")
    runs = []
    get = distributed.Client.get

    def counted(self, *args, **kwargs):
        runs.append(1)
        return get(self, *args, **kwargs)

    monkeypatch.setattr(distributed.Client, "get", counted)
    return runs


@pytest.fixture
def dask_input_shares_the_numpy_stream(monkeypatch):
    """Hash dask input by its values in these tests, as numpy input is hashed.

    Without an accountant a seeded fit's stream mixes in a digest of its data
    (issue 32). The driver never computes a dask collection to hash it (that
    would gather its rows): its graph token stands in, so a dask fit and a
    numpy fit of the same rows draw other noise. These tests compare the two
    paths noise for noise, so here the digest reads the computed values.
    """
    from skdp import base

    update = base._update_data

    def by_value(h, value):
        if hasattr(value, "dask") and hasattr(value, "compute"):
            value = value.compute()
        update(h, value)

    monkeypatch.setattr(base, "_update_data", by_value)
