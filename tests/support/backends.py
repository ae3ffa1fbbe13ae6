"""Opening the same test's store on either backend: an LMDB store in tmp_path or a
PostgreSQL store on a fresh database of the session's throwaway cluster (the fixtures
`any_store` and `cli_store` in tests/conftest.py use it)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core.store_url import parse_store_url

BACKENDS = ("lmdb", "postgres")
T = TypeVar("T")

AnyStore = LmdbStore | PgStore


def fresh_pg_url(request: pytest.FixtureRequest) -> str:
    """The password URL of a fresh database, dropped when the test ends."""
    cluster = request.getfixturevalue("pg_cluster")
    name = cluster.new_database()
    request.addfinalizer(lambda: cluster.drop_database(name))
    return str(cluster.url(name))


def open_backend(
    backend: str,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    clock: Callable[[], datetime] | None,
) -> AnyStore:
    if backend == "lmdb":
        return LmdbStore.open(tmp_path / f"store-{len(list(tmp_path.iterdir()))}", clock_fn=clock)
    return PgStore.open(fresh_pg_url(request), clock_fn=clock)


def read_raw(store: AnyStore, fn: Callable[[Any], T]) -> T:
    """`fn` over the backend's own read transaction (an LMDB `Tx` or a `PgTx`), for a
    test that looks at rows no public read returns (graph rows, signatures)."""
    if isinstance(store, LmdbStore):
        return store.read(fn)
    return store._read(fn)


def location_of(store: AnyStore) -> str:
    """What `--store` takes to reach `store` from another process (the password URL of a
    PostgreSQL store)."""
    if isinstance(store, LmdbStore):
        return str(store.path)
    return store.url.secret_conninfo


@dataclass(frozen=True)
class CliStore:
    """Where the CLI under test keeps its store: `env` points a subprocess at it,
    `location` is what `--store` takes, `open` reads it in-process."""

    backend: str
    env: dict[str, str]
    location: str

    @classmethod
    def lmdb(cls, directory: Path) -> CliStore:
        """The LMDB store in `directory`, for a test that runs on LMDB only."""
        return cls("lmdb", {"GRAYMATTER_DIR": str(directory)}, str(directory))

    @property
    def shown(self) -> str:
        """How `status` and `doctor` name the store: its directory, or its URL without
        the password."""
        if self.backend == "lmdb":
            return self.location
        return parse_store_url(self.location).redacted

    def open(self, clock_fn: Callable[[], datetime] | None = None) -> AnyStore:
        if self.backend == "lmdb":
            return LmdbStore.open(Path(self.location), clock_fn=clock_fn)
        return PgStore.open(self.location, clock_fn=clock_fn)
