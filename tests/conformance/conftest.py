"""The conformance tests' clock `clk` (which `any_store`, tests/conftest.py, runs on) and
`both_stores`: an LMDB and a PostgreSQL store side by side, to run one script on each."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.support.backends import AnyStore, open_backend
from tests.support.clock import ManualClock

START = datetime(2026, 2, 1, 9, 0, 0, tzinfo=UTC)

__all__ = ["START", "AnyStore"]


@pytest.fixture
def clk() -> ManualClock:
    return ManualClock(START)


@pytest.fixture
def store_clock(clk: ManualClock) -> ManualClock:
    """`any_store` runs on `clk`."""
    return clk


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
