"""The memory store over LMDB: `LmdbStore.open(directory)`.

The operations are `storage.store.BaseStore`'s, written once; this backend supplies its
transactions (the `Environment`'s read and write, with map growth), grows the map before
a bulk write, reads vector blocks in place (views of the map), and names and describes
its files. `read`, `write` and `reserve` are this backend's own transaction API, for the
backend and for tests of its layout, and not part of `MemoryStore`.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import TypeVar, cast

import msgspec

from graymatter_tui.backends.lmdb import mapped_pages, registry, reservation
from graymatter_tui.backends.lmdb.environment import Environment, map_size_from_env
from graymatter_tui.backends.lmdb.files import (
    DATA_FILE,
    LOCK_FILE,
    prepare_directory,
    prepare_reading,
)
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.core.errors import InvalidInput, ReadOnlyStore
from graymatter_tui.core.model import StoreInfo
from graymatter_tui.core.progress import Report
from graymatter_tui.core.tokens import check_language, language_from_env
from graymatter_tui.storage import import_ops, values
from graymatter_tui.storage.ids import seed_ids
from graymatter_tui.storage.protocol import MemoryStore
from graymatter_tui.storage.store import BaseStore
from graymatter_tui.storage.transaction import VectorTransaction

T = TypeVar("T")


def _seed_ids_from_env() -> None:
    seed = os.environ.get("GRAYMATTER_ID_SEED", "").strip()
    if seed:
        try:
            seed_ids(int(seed))
        except ValueError:
            raise InvalidInput(f"GRAYMATTER_ID_SEED must be a whole number, got {seed!r}") from None


class _OneReadTx:
    """An environment whose every read runs in the one read transaction given, and which
    refuses writes: what `Store.in_one_snapshot` hands its view."""

    def __init__(self, env: Environment, tx: Tx) -> None:
        self._env = env
        self._tx = tx

    def read(self, fn: Callable[[Tx], T], *, buffers: bool = False) -> T:
        return fn(self._tx)

    def write(self, fn: Callable[[Tx], T]) -> T:
        raise ReadOnlyStore("a snapshot view of the store cannot write")

    def close(self) -> None:
        """The store's owner closes it, not the view."""

    def __getattr__(self, name: str) -> object:
        return getattr(self._env, name)


class LmdbStore(BaseStore):
    def __init__(self, env: Environment, shown: str | None = None) -> None:
        self._env = env
        self.path = env.path
        self._shown = shown  # how `location` names a store that is not at `path`

    # ---- opening and closing ----------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        map_size: int | None = None,
        clock_fn: Callable[[], datetime] | None = None,
        read_only: bool = False,
        stem_language: str | None = None,
        progress: Report | None = None,
    ) -> LmdbStore:
        """Open the store in directory `path`; one per path per process. A writer creates
        a new store; `read_only` creates nothing, maps the files read-only, and gives an
        empty view where there is no store yet (ADR 0012). A new store stems in
        `stem_language` (default: GRAYMATTER_LANGUAGE, else English), and so does an
        older store upgraded by this open, whose re-index `progress` hears of."""
        directory = Path(path).expanduser()
        _seed_ids_from_env()
        language = check_language(stem_language) if stem_language else language_from_env()
        if read_only:
            if not prepare_reading(directory):
                return cls(Environment.empty_view(directory, clock_fn))
        else:
            prepare_directory(directory)

        def opener() -> LmdbStore:
            size = map_size or map_size_from_env()
            return cls(
                Environment.open(
                    directory, size, clock_fn, read_only, language=language, progress=progress
                )
            )

        return registry.open_once(directory, opener)

    def close(self) -> None:
        if self._env.closed:
            return
        registry.forget(self.path, self)
        self._env.close()

    # ---- state of the open store --------------------------------------------------------
    @property
    def closed(self) -> bool:
        return self._env.closed

    @property
    def pid(self) -> int:
        """The process that opened the store (LMDB environments do not cross fork)."""
        return self._env.pid

    @property
    def read_only_reason(self) -> str | None:
        """Why writes are refused, or None for a writable store."""
        return self._env.read_only_reason

    @property
    def lockless(self) -> bool:
        """Read without LMDB's reader lock (ADR 0012)."""
        return self._env.lockless

    @property
    def absent(self) -> bool:
        """There is no store at `path`; this is an empty read-only view."""
        return self._env.absent

    @property
    def location(self) -> str:
        return self._shown or str(self.path)

    @classmethod
    def empty_view(cls, shown: str, clock_fn: Callable[[], datetime] | None = None) -> LmdbStore:
        """An empty read-only store named `shown`, creating nothing anywhere: what a
        reader sees where there is no store yet (a database with no tables, say)."""
        return cls(Environment.empty_view(Path(tempfile.gettempdir()), clock_fn), shown)

    @property
    def retries(self) -> int:
        """Write transactions re-run after the map filled or was resized."""
        return self._env.retries

    @property
    def simulate_map_full(self) -> int:
        """Test seam: the next N write transactions fill the map just before they commit
        (or abort: a refusal or a trial)."""
        return self._env.simulate_map_full

    @simulate_map_full.setter
    def simulate_map_full(self, count: int) -> None:
        self._env.simulate_map_full = count

    def now(self) -> datetime:
        return self._env.clock()

    def own_files(self) -> tuple[Path, ...]:
        """The store's LMDB files, which an export must never overwrite."""
        return (self.path / DATA_FILE, self.path / LOCK_FILE)

    # ---- this backend's transactions --------------------------------------------------
    def read(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in a read transaction."""
        return self._env.read(fn)

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in one write transaction (see `Environment.write`)."""
        return self._env.write(fn)

    def reserve(self, extra_bytes: int, *, rewrites: int = 0) -> None:
        """Make sure the map has room for about `extra_bytes` more (bulk writes)."""
        self._env.reserve(extra_bytes, rewrites=rewrites)

    def in_one_snapshot(self, fn: Callable[[MemoryStore], T]) -> T:
        def run(tx: Tx) -> T:
            return fn(LmdbStore(cast(Environment, _OneReadTx(self._env, tx)), self._shown))

        return self._env.read(run)

    # ---- reads -------------------------------------------------------------------------
    def generation(self) -> int:
        """Bumped by every write transaction of any process: cheap change detection.
        Also the TUI's poll, so it checks that the store's files are still the ones open."""
        self._env.check_usable()
        self._env.check_files()
        return super().generation()

    # ---- this backend's own --------------------------------------------------------------
    def _read(self, fn: Callable[[VectorTransaction], T]) -> T:
        return self._env.read(fn)

    def _write(self, fn: Callable[[VectorTransaction], T]) -> T:
        return self._env.write(fn)

    def _make_room_for_facts(
        self, pending: Sequence[values.NewFact], terms: list[dict[str, int]]
    ) -> None:
        # Grow the map once up front rather than fill it and redo the whole transaction.
        texts = [(item.agent_id, item.text) for item in pending]
        size, rewrites = reservation.bulk_reservation(texts, terms)
        self._env.reserve(size, rewrites=rewrites)

    def _make_room_for_import(self, batch: import_ops.ImportBatch) -> None:
        size, rewrites = reservation.for_import(batch.facts, batch.terms, batch.records)
        self._env.reserve(size, rewrites=rewrites)

    def _make_room_for_snapshot(
        self, snapshot: values.StoreSnapshot, terms: list[dict[str, int]]
    ) -> None:
        size, rewrites = reservation.for_snapshot(snapshot, terms)
        self._env.reserve(size, rewrites=rewrites)

    def _read_in_place(self, fn: Callable[[VectorTransaction], T]) -> T:
        """A vector search reads its blocks as views of the map: no block is copied."""
        return self._env.read(fn, buffers=True)

    def release_mapped_pages(self) -> None:
        """Drop the pages of the store's map this process holds resident (after reading
        every fact): they stay in the kernel's page cache (store/mapped_pages.py)."""
        mapped_pages.release(self.path / DATA_FILE)

    def info(self) -> StoreInfo:
        # map_use inside the read: the transaction holds the resize lock shared.
        found = self._env.read(lambda tx: _info(tx, self.path, *self._env.map_use()))
        return msgspec.structs.replace(found, data_dir=self.location)


def _info(tx: Tx, path: Path, map_used: int, map_size: int) -> StoreInfo:
    return StoreInfo(
        data_dir=str(path),
        schema_version=int(tx.meta_get("schema_version") or 0),
        engine=tx.meta_get("engine") or "",
        generation=tx.meta_int("generation"),
        file_bytes=_file_size(path),
        map_size=map_size,
        map_used=map_used,
        created_at=tx.meta_get("created_at") or "",
        stem_language=tx.analyzer.language,
    )


def _file_size(path: Path) -> int:
    try:
        return (path / DATA_FILE).stat().st_size
    except OSError:
        return 0


def _implements_memory_store(store: LmdbStore) -> MemoryStore:
    """Never called: mypy checks here that `Store` has every method of `MemoryStore`."""
    return store
