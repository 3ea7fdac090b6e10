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
