"""`any_store`: the same test on an LMDB store in tmp_path and on a PostgreSQL store on a
fresh database of the throwaway cluster, both on `clk`."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graymatter_tui.pg import PgStore
from graymatter_tui.store import Store
from tests.support.clock import ManualClock

START = datetime(2026, 2, 1, 9, 0, 0, tzinfo=UTC)
BACKENDS = ("lmdb", "postgres")

AnyStore = Store | PgStore


@pytest.fixture
def clk() -> ManualClock:
    return ManualClock(START)


def open_backend(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path, clock: ManualClock
) -> AnyStore:
    if backend == "lmdb":
        return Store.open(tmp_path / f"store-{len(list(tmp_path.iterdir()))}", clock_fn=clock)
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.new_database()
    request.addfinalizer(lambda: cluster.drop_database(name))
    return PgStore.open(cluster.url(name), clock_fn=clock)


@pytest.fixture(params=BACKENDS)
def any_store(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clk: ManualClock,
    clean_graymatter_env: None,
) -> Iterator[AnyStore]:
    store = open_backend(request.param, request, tmp_path, clk)
    yield store
    store.close()


@pytest.fixture
def both_stores(
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clk: ManualClock,
    clean_graymatter_env: None,
) -> Iterator[tuple[AnyStore, AnyStore]]:
    """An LMDB and a PostgreSQL store on one clock, to run one script on each."""
    lmdb_store = open_backend("lmdb", request, tmp_path, clk)
    pg_store = open_backend("postgres", request, tmp_path, clk)
    yield lmdb_store, pg_store
    lmdb_store.close()
    pg_store.close()
