"""The memory store: one LMDB Environment per process, reached only through this class.

Every mutation is one named method that runs one write transaction (`Store.write`), so the
CLI, the TUI and the consolidation engine share one write path. Transactions that hit a
full map grow it and run again from the start; a map grown by another process is adopted.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tempfile
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import lmdb
import msgspec

from graymatter_tui import __version__, clock
from graymatter_tui.errors import (
    Conflict,
    GraymatterError,
    InvalidInput,
    NotFound,
    ReadOnlyStore,
    StoreError,
)
from graymatter_tui.model import (
    RETIRED,
    AgentSummary,
    Counters,
    CycleRecord,
    Fact,
    FactState,
    StoreInfo,
)
from graymatter_tui.store import mapped_pages
from graymatter_tui.store.codec import decode_record
from graymatter_tui.store.cycle_ops import CycleOps
from graymatter_tui.store.files import (
    DATA_FILE,
    LOCK_FILE,
    check_data_file,
    file_identity,
    lock_writable,
    prepare_directory,
    prepare_reading,
    read_only_message,
    write_problem,
)
from graymatter_tui.store.graph_ops import GraphOps
from graymatter_tui.store.ids import IdReplay, new_id, seed_ids
from graymatter_tui.store.import_ops import ImportOps
from graymatter_tui.store.rwlock import ResizeLock
from graymatter_tui.store.tx import Dbs, Tx, bulk_reservation
from graymatter_tui.textsafe import looks_like_id, validate_agent, validate_text
from graymatter_tui.tokens import term_counts

T = TypeVar("T")

SCHEMA_VERSION = 1
ENGINE = "lmdb-0.9"
DEMO_KEY = "demo"  # meta key: set (to the time) when the demo created the store
DEFAULT_MAP_SIZE = 128 * 1024 * 1024
MAX_MAP_SIZE = 1 << 40
_DB_NAMES = tuple(Dbs.__dataclass_fields__)

_registry: dict[str, Store] = {}
_registry_lock = threading.Lock()


@dataclass(frozen=True)
class NewFact:
    """A fact to insert in bulk (demo data, benchmarks): times default to the store clock."""

    agent_id: str
    text: str
    created_at: datetime | None = None
    accessed_at: datetime | None = None
    access_count: int = 0
    weight: float = 1.0
    pinned: bool = False
    fact_id: str | None = None


@dataclass(frozen=True)
class ShowResult:
    fact: Fact
    replaced_by: Fact | None
    consumed: list[Fact]
    cycle: CycleRecord | None


def _map_size_from_env() -> int:
    raw = os.environ.get("GRAYMATTER_MAP_SIZE", "").strip()
    if not raw:
        return DEFAULT_MAP_SIZE
    try:
        return max(int(raw), 64 * 1024)
    except ValueError:
        raise InvalidInput(f"GRAYMATTER_MAP_SIZE must be a number of bytes, got {raw!r}") from None


_CHOSEN = "opened for reading only"
_NO_STORE = "there is no store there"


def _lmdb_open(
    directory: Path, map_size: int, *, read_only: bool, lock: bool, sync: bool = True
) -> lmdb.Environment:
    return lmdb.open(
        str(directory),
        map_size=map_size,
        max_dbs=len(_DB_NAMES) + 2,
        mode=0o600,
        lib_version=0,
        max_spare_txns=0,
        sync=sync,
        metasync=sync,
        writemap=False,
        readonly=read_only,
        lock=lock,
    )


def _lmdb_message(exc: lmdb.Error) -> str:
    text = str(exc)
    if isinstance(exc, lmdb.DiskError) or "Input/output" in text or "No space" in text:
        return "the disk is full or failed while writing; nothing was written"
    if isinstance(exc, lmdb.ReadonlyError):
        return "the store is read-only"
    if isinstance(exc, lmdb.CorruptedError | lmdb.PanicError | lmdb.InvalidError):
        return f"the store is corrupt ({text})"
    return text


class Store(CycleOps, GraphOps, ImportOps):
    def __init__(
        self, path: Path, env: lmdb.Environment, dbs: Dbs, clock_fn: Callable[[], datetime]
    ) -> None:
        self.path = path
        self._env = env
        self._dbs = dbs
        self._clock = clock_fn
        self._pid = os.getpid()
        self._resize = ResizeLock()
        self._closed = False
        # The files this Environment maps. A path that later leads elsewhere (deleted,
        # moved, replaced) must not take writes no one will ever read (see _check_files).
        self._watched: tuple[str, ...] = (str(path / DATA_FILE), str(path / LOCK_FILE))
        self._identity = file_identity(self._watched)
        # Set by a read-only open: why writes are refused, and whether LMDB's reader lock
        # is in use (ADR 0012). `absent`: there is no store at `path`; this is an empty view.
        self.read_only_reason: str | None = None
        self.lockless = False
        self.absent = False
        # Write transactions re-run after the map filled or was resized (diagnostics).
        self.retries = 0
        # Test seam: the next N write transactions raise MapFullError after `fn` returned,
        # before their commit, and so take the real grow-and-retry path. Zero in use.
        self.simulate_map_full = 0

    # ---- opening and closing ----------------------------------------------------------
    @classmethod
    def open(
        cls,
        path: str | Path,
        *,
        map_size: int | None = None,
        clock_fn: Callable[[], datetime] | None = None,
        read_only: bool = False,
    ) -> Store:
        """Open the store in directory `path`; one per path per process. A writer creates
        a new store; `read_only` creates nothing, maps the files read-only, and gives an
        empty view where there is no store yet (ADR 0012)."""
        directory = Path(path).expanduser()
        seed = os.environ.get("GRAYMATTER_ID_SEED", "").strip()
        if seed:
            try:
                seed_ids(int(seed))
            except ValueError:
                raise InvalidInput(
                    f"GRAYMATTER_ID_SEED must be a whole number, got {seed!r}"
                ) from None
        if read_only:
            if not prepare_reading(directory):
                return cls._open_absent(directory, clock_fn)
        else:
            prepare_directory(directory)
        key = os.path.realpath(directory)
        with _registry_lock:
            existing = _registry.get(key)
            if existing is not None and not existing._closed:
                if existing._pid == os.getpid():
                    return existing
                # LMDB environments cannot cross fork(), and py-lmdb refuses to open the
                # same files again in a process that inherited one.
                raise StoreError(
                    f"the store at {directory} was opened before this process was forked; "
                    "open it in a fresh process instead (multiprocessing 'spawn')"
                )
            store = cls._open_new(directory, map_size or _map_size_from_env(), clock_fn, read_only)
            if not store.absent:
                _registry[key] = store
            return store

    @classmethod
    def _open_new(
        cls,
        directory: Path,
        map_size: int,
        clock_fn: Callable[[], datetime] | None,
        read_only: bool = False,
    ) -> Store:
        check_data_file(directory)
        # A reader records itself in lock.mdb; where it cannot write that file it reads
        # without the lock (ADR 0012).
        lock = not read_only or lock_writable(directory)
        try:
            env = _lmdb_open(directory, map_size, read_only=read_only, lock=lock)
        except lmdb.Error as exc:
            failure: lmdb.Error = exc
            env = None
        if env is None and read_only and lock:  # lock.mdb not ours to write after all
            lock = False
            try:
                env = _lmdb_open(directory, map_size, read_only=True, lock=False)
            except lmdb.Error as exc:
                failure = exc
        if env is None:
            raise StoreError(f"cannot open store at {directory}: {_lmdb_message(failure)}")
        try:
            if lock:
                env.reader_check()
            dbs = cls._open_dbs(env, directory, (clock_fn or clock.now)(), read_only)
        except BaseException:
            env.close()
            raise
        if dbs is None:  # read-only over an LMDB file never initialised: no store yet
            env.close()
            return cls._open_absent(directory, clock_fn)
        if not read_only:
            for name in (DATA_FILE, LOCK_FILE):
                with contextlib.suppress(OSError):
                    os.chmod(directory / name, 0o600)
        store = cls(directory, env, dbs, clock_fn or clock.now)
        if read_only:
            store._reading_only(write_problem(directory) or _CHOSEN, lockless=not lock)
        return store

    @classmethod
    def _open_absent(cls, directory: Path, clock_fn: Callable[[], datetime] | None) -> Store:
        """An empty read-only view where there is no store, creating nothing at
        `directory`. LMDB needs files to map: an empty store is made in a private
        temporary directory and unlinked at once (the map stays valid until closed)."""
        now_fn = clock_fn or clock.now
        scratch = tempfile.mkdtemp(prefix="graymatter-tui-empty-")
        try:
            env = _lmdb_open(Path(scratch), 1 << 20, read_only=False, lock=True, sync=False)
            try:
                dbs = cls._initialise(env, now_fn())
            except BaseException:
                env.close()
                raise
        except lmdb.Error as exc:
            raise StoreError(f"cannot read store at {directory}: {_lmdb_message(exc)}") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        store = cls(directory, env, dbs, now_fn)
        store._reading_only(_NO_STORE, lockless=False, absent=True)
        return store

    def _reading_only(self, reason: str, *, lockless: bool, absent: bool = False) -> None:
        self.read_only_reason = reason
        self.lockless = lockless
        self.absent = absent
        if lockless or absent:  # no lock.mdb of ours to watch
            self._watched = self._watched[:1]
            self._identity = file_identity(self._watched)

    @staticmethod
    def _open_dbs(
        env: lmdb.Environment, directory: Path, now: datetime, read_only: bool = False
    ) -> Dbs | None:
        try:
            with env.begin() as txn:
                try:
                    meta = env.open_db(b"meta", txn=txn, create=False)
                except lmdb.NotFoundError:
                    meta = None
                entries = txn.stat()["entries"]
                schema = txn.get(b"schema_version", db=meta) if meta is not None else None
        except lmdb.Error as exc:
            raise StoreError(f"cannot read store at {directory}: {_lmdb_message(exc)}") from None
        if meta is None:
            if entries:
                raise StoreError(
                    f"{directory / DATA_FILE} is an LMDB database but not a graymatter-tui store; "
                    "not touching it"
                )
            return None if read_only else Store._initialise(env, now)
        if schema is None:
            raise StoreError(f"store at {directory} has no schema version; it is damaged")
        try:
            version = int(bytes(schema))
        except ValueError:
            raise StoreError(f"store at {directory} has a corrupt schema version") from None
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"store at {directory} was written by a newer graymatter-tui (schema {version}; "
                f"this program reads up to {SCHEMA_VERSION}); upgrade graymatter-tui to open it"
            )
        try:
            return Dbs(**{name: env.open_db(name.encode(), create=False) for name in _DB_NAMES})
        except lmdb.Error as exc:
            raise StoreError(f"store at {directory} is missing a table ({exc})") from None

    @staticmethod
    def _initialise(env: lmdb.Environment, now: datetime) -> Dbs:
        try:
            with env.begin(write=True) as txn:
                handles = {name: env.open_db(name.encode(), txn=txn) for name in _DB_NAMES}
                meta = handles["meta"]
                if txn.get(b"schema_version", db=meta) is not None:
                    # Another process created the store between our look and this write
                    # transaction; its meta (and any writes since) must stand.
                    return Dbs(**handles)
                txn.put(b"schema_version", str(SCHEMA_VERSION).encode(), db=meta)
                txn.put(b"engine", ENGINE.encode(), db=meta)
                txn.put(b"engine_version", ".".join(map(str, lmdb.version())).encode(), db=meta)
                txn.put(b"created_by", f"graymatter-tui {__version__}".encode(), db=meta)
                txn.put(b"created_at", clock.format_time(now).encode(), db=meta)
                txn.put(b"generation", b"1", db=meta)
        except lmdb.Error as exc:
            raise StoreError(f"cannot create store: {_lmdb_message(exc)}") from None
        return Dbs(**handles)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        with _registry_lock:
            key = os.path.realpath(self.path)
            if _registry.get(key) is self:
                del _registry[key]
        if self._pid == os.getpid():
            self._env.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- demo ownership ----------------------------------------------------------------
    def is_demo(self) -> bool:
        """True when the demo created this store (it leaves a `demo` meta key)."""
        return self.read(lambda tx: tx.meta_get(DEMO_KEY) is not None)

    def claim_for_demo(self) -> None:
        """Mark the store as the demo's. Refused (Conflict, nothing written) when it
        already holds facts or journal records that the demo did not put there."""

        def run(tx: Tx) -> None:
            if tx.meta_get(DEMO_KEY) is not None:
                return
            facts = tx.txn.stat(tx.dbs.ids)["entries"]
            records = tx.txn.stat(tx.dbs.journal)["entries"]
            if facts or records:
                count, noun = (facts, "fact") if facts else (records, "journal record")
                held = f"{count} {noun}{'' if count == 1 else 's'}"
                raise Conflict(
                    f"the store at {self.path} already holds {held} that the demo did not "
                    "put there; not adding demo facts to it (give --dir a new directory, "
                    "or run `graymatter-tui demo --into-existing` to mix them in)"
                )
            tx.meta_put(DEMO_KEY, clock.format_time(tx.now))

        self.write(run)

    # ---- transactions ------------------------------------------------------------------
    def _check_usable(self) -> None:
        if self._closed:
            raise StoreError("the store is closed")
        if self._pid != os.getpid():
            raise StoreError("the store was opened by another process (used after fork)")

    def _check_files(self) -> None:
        """The store's path must still lead to the files opened: a stat per file."""
        if file_identity(self._watched) == self._identity:
            return
        if self.absent:
            raise StoreError(
                f"a store was created at {self.path} after this view found none; "
                "nothing was written — reopen it"
            )
        raise StoreError(
            f"the store's files at {self.path} were deleted or replaced while open; "
            "nothing was written — reopen it"
        )

    def _check_writable(self) -> None:
        self._check_usable()
        reason = self.read_only_reason
        if reason == _NO_STORE:
            raise ReadOnlyStore(
                f"there is no store at {self.path}, and it was opened for reading only; "
                "nothing was written"
            )
        if reason == _CHOSEN:
            raise ReadOnlyStore(
                f"the store at {self.path} was opened read-only; nothing was written"
            )
        if reason is not None:
            raise ReadOnlyStore(read_only_message(self.path, reason))

    def read(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in a read transaction."""
        self._check_usable()
        for _ in range(8):
            try:
                with self._resize.shared(), self._env.begin() as txn:
                    return fn(Tx(txn, self._dbs, self._clock(), write=False))
            except lmdb.MapResizedError:
                self._adopt_map_size()
            except GraymatterError:
                raise
            except lmdb.Error as exc:
                raise StoreError(f"store read failed: {_lmdb_message(exc)}") from None
        raise StoreError("store read failed: the map kept being resized by another process")

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in one write transaction; grow the map and run again if it fills.

        `fn` must do the same thing every time it runs: it computes only from its
        arguments and the transaction, and changes nothing outside it (the caller
        assigns what it returns). A retry sees the same `tx.now` and gets the same ids
        from `tx.new_id`, so it writes exactly what the first attempt would have.
        """
        self._check_writable()
        now = self._clock()
        ids = IdReplay()
        for _ in range(64):
            try:
                with self._resize.shared(), self._env.begin(write=True) as txn:
                    self._check_files()  # under the writer lock, before anything is put
                    tx = Tx(txn, self._dbs, now, write=True, mint=ids.attempt())
                    result = fn(tx)
                    tx.flush_counts()
                    tx.bump("generation")
                    if self.simulate_map_full:
                        self.simulate_map_full -= 1
                        raise lmdb.MapFullError("simulated (Store.simulate_map_full)")
                return result
            except lmdb.MapFullError:
                self.retries += 1
                self._grow_map()
            except lmdb.MapResizedError:
                self.retries += 1
                self._adopt_map_size()
            except GraymatterError:
                raise
            except lmdb.Error as exc:
                raise StoreError(f"store write failed: {_lmdb_message(exc)}") from None
        raise StoreError("store write failed: the map could not be grown enough")

    def reserve(self, extra_bytes: int, *, rewrites: int = 0) -> None:
        """Make sure the map has room for about `extra_bytes` more (bulk writes), plus
        up to `rewrites` bytes of existing pages the write may copy (LMDB copies every
        page it changes, and cannot reuse the old copy within the same transaction)."""
        self._check_writable()
        # Measure under the lock: env.info/stat race a resize in another thread and fail
        # with EINVAL. Look again once exclusive, as another thread may have grown it.
        with self._resize.shared():
            target = self._map_target(extra_bytes, rewrites)
        if target is None:
            return
        with self._resize.exclusive():
            target = self._map_target(extra_bytes, rewrites)
            if target is None:
                return
            try:
                self._env.set_mapsize(target)
            except lmdb.Error as exc:
                raise StoreError(f"cannot grow the store: {_lmdb_message(exc)}") from None

    def _map_use(self) -> tuple[int, int]:
        """(bytes used, map size). Call under the resize lock (ADR 0008)."""
        info = self._env.info()
        used = (int(info["last_pgno"]) + 1) * int(self._env.stat()["psize"])
        return used, int(info["map_size"])

    def _map_target(self, extra_bytes: int, rewrites: int = 0) -> int | None:
        """The map size needed for `extra_bytes` more, or None if it already fits."""
        used, size = self._map_use()
        extra_bytes += min(used, rewrites)
        if used + extra_bytes <= size:
            return None
        target = size
        while used + extra_bytes > target and target < MAX_MAP_SIZE:
            target *= 2
        return min(target, MAX_MAP_SIZE)

    def _grow_map(self) -> None:
        with self._resize.exclusive():
            current = int(self._env.info()["map_size"])
            if current >= MAX_MAP_SIZE:
                raise StoreError("store write failed: the map reached its 1 TiB limit")
            try:
                self._env.set_mapsize(min(current * 2, MAX_MAP_SIZE))
            except lmdb.Error as exc:
                raise StoreError(f"cannot grow the store: {_lmdb_message(exc)}") from None

    def _adopt_map_size(self) -> None:
        with self._resize.exclusive():
            try:
                self._env.set_mapsize(0)
            except lmdb.Error as exc:
                raise StoreError(
                    f"cannot adopt the store's new size: {_lmdb_message(exc)}"
                ) from None

    def now(self) -> datetime:
        return self._clock()

    # ---- reads -------------------------------------------------------------------------
    def generation(self) -> int:
        """Bumped by every write transaction of any process: cheap change detection.
        Also the TUI's poll, so it checks that the store's files are still the ones open."""
        self._check_usable()
        self._check_files()
        return self.read(lambda tx: tx.meta_int("generation"))

    def unused_id(self, moment: datetime) -> str:
        """A new id for something written later (a cycle's record), held by no fact or
        record now. See `Tx.new_id` for why this is checked at all."""

        def run(tx: Tx) -> str:
            while True:
                candidate = new_id(moment)
                if not tx.id_in_use(candidate):
                    return candidate

        return self.read(run)

    def find(self, fact_id: str) -> Fact | None:
        return self.read(lambda tx: tx.find(fact_id))

    def get(self, fact_id: str) -> Fact:
        return self.read(lambda tx: tx.load(fact_id))

    def get_many(self, fact_ids: Iterable[str]) -> list[Fact | None]:
        wanted = list(fact_ids)
        return self.read(lambda tx: [tx.find(i) for i in wanted])

    def list_facts(
        self,
        agent: str | None = None,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[Fact]:
        """Facts newest first. Keyset paging: pass the last id of a page as `before`."""

        def run(tx: Tx) -> list[Fact]:
            agents = [agent] if agent is not None else tx.agent_names()
            if len(agents) == 1:
                out: list[Fact] = []
                for fact in tx.iter_facts(agents[0], state, before=before):
                    out.append(fact)
                    if limit is not None and len(out) >= limit:
                        break
                return out
            streams = [tx.iter_facts(a, state, before=before) for a in agents]
            return _merge_newest_first(streams, limit)

        return self.read(run)

    def fact_ids(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> list[str]:
        """Ids of one agent's facts in one state, newest first, without decoding. Keyset
        paging: pass the last id of a page as `before`."""

        def run(tx: Tx) -> list[str]:
            ids = tx.iter_ids(agent, state, before=before)
            return list(ids) if limit is None else list(itertools.islice(ids, limit))

        return self.read(run)

    def texts(
        self,
        agent: str,
        state: FactState = "live",
        *,
        limit: int | None = None,
        before: str | None = None,
    ) -> tuple[list[str], list[str]]:
        """(ids, texts) of one agent's facts, newest first, decoding only those two fields
        (a filter index over 1M facts without building 1M full Fact objects). Keyset
        paging as in `fact_ids`."""

        def run(tx: Tx) -> tuple[list[str], list[str]]:
            ids: list[str] = []
            texts: list[str] = []
            for fact_id, text in itertools.islice(
                tx.iter_texts(agent, state, before=before), limit
            ):
                ids.append(fact_id)
                texts.append(text)
            return ids, texts

        return self.read(run)

    def release_mapped_pages(self) -> None:
        """Drop the pages of the store's map this process holds resident (after reading
        every fact): they stay in the kernel's page cache (store/mapped_pages.py)."""
        mapped_pages.release(self.path / DATA_FILE)

    def agents(self) -> list[AgentSummary]:
        def run(tx: Tx) -> list[AgentSummary]:
            out = []
            for name in tx.agent_names():
                c = tx.agent_counts(name)
                out.append(
                    AgentSummary(
                        agent_id=name,
                        live_facts=c.live,
                        tombstones=c.tombstones,
                        pinned=c.pinned,
                        avg_weight=round(c.weight_sum / c.live, 6) if c.live else 0.0,
                    )
                )
            return out

        return self.read(run)

    def counters(self) -> Counters:
        return self.read(
            lambda tx: Counters(
                consolidations=tx.meta_int("consolidations"),
                facts_consolidated=tx.meta_int("facts_consolidated"),
                reverts=tx.meta_int("reverts"),
                cycles=tx.meta_int("cycles"),
            )
        )

    def info(self) -> StoreInfo:
        def run(tx: Tx) -> StoreInfo:
            used, size = self._map_use()  # the read transaction holds the lock shared
            return StoreInfo(
                data_dir=str(self.path),
                schema_version=int(tx.meta_get("schema_version") or 0),
                engine=tx.meta_get("engine") or "",
                generation=tx.meta_int("generation"),
                file_bytes=_file_size(self.path / DATA_FILE),
                map_size=size,
                map_used=used,
                created_at=tx.meta_get("created_at") or "",
            )

        return self.read(run)

    def receipts(self, summary_id: str) -> list[str]:
        return self.read(lambda tx: tx.receipts(summary_id))

    def show(self, fact_id: str) -> ShowResult:
        """A fact with its receipt chain: what replaced it, what it consumed, its cycle."""

        def run(tx: Tx) -> ShowResult:
            fact = tx.load(fact_id)
            replaced_by = None
            if fact.is_tombstone and not fact.is_retired:
                replaced_by = tx.find(fact.superseded_by)
            consumed = [f for f in (tx.find(i) for i in tx.receipts(fact.id)) if f is not None]
            cycle = tx.record(fact.cycle_id) if fact.cycle_id else None
            return ShowResult(fact=fact, replaced_by=replaced_by, consumed=consumed, cycle=cycle)

        return self.read(run)

    def records(self, agent: str | None = None, *, limit: int | None = None) -> list[CycleRecord]:
        """Journal records newest first (cycle ids are ULIDs, so key order is time order)."""

        def run(tx: Tx) -> list[CycleRecord]:
            out: list[CycleRecord] = []
            cursor = tx.txn.cursor(db=tx.dbs.journal)
            for _key, raw in cursor.iterprev():
                record = decode_record(raw)
                if agent is None or record.agent_id == agent:
                    out.append(record)
                    if limit is not None and len(out) >= limit:
                        break
            return out

        return self.read(run)

    def record(self, cycle_id: str) -> CycleRecord:
        found = self.read(lambda tx: tx.record(cycle_id))
        if found is None:
            raise NotFound(f"no cycle with id {cycle_id}")
        return found

    def all_facts(self) -> list[Fact]:
        """Every fact of every agent, oldest first (exports)."""
        return self.read(
            lambda tx: [
                f for a in tx.agent_names() for f in tx.iter_facts(a, "all", newest_first=False)
            ]
        )

    # ---- curation ----------------------------------------------------------------------
    def put(self, agent: str, text: str, *, pinned: bool = False) -> Fact:
        """Store a new fact and return it as committed."""
        validate_agent(agent)
        validate_text(text)

        def run(tx: Tx) -> Fact:
            stamp = clock.format_time(tx.now)
            fact = Fact(
                id=tx.new_id(),
                agent_id=agent,
                text=text,
                created_at=stamp,
                accessed_at=stamp,
                pinned=pinned,
                pinned_at=stamp if pinned else None,
            )
            tx.write_fact(fact, None)
            return fact

        return self.write(run)

    def put_many(self, items: Iterable[NewFact]) -> list[Fact]:
        """Insert many facts in one transaction (demo data, benchmarks)."""
        pending = list(items)
        for item in pending:
            validate_agent(item.agent_id)
            validate_text(item.text)
            if not 0.0 <= item.weight <= 1.0:
                raise InvalidInput(f"weight must be between 0 and 1, got {item.weight}")
        # Tokenised before the transaction, which then holds the write lock for less time.
        terms = [term_counts(item.text) for item in pending]
        # Grow the map once up front rather than fill it and redo the whole transaction.
        size, rewrites = bulk_reservation([(i.agent_id, i.text) for i in pending], terms)
        self.reserve(size, rewrites=rewrites)

        def run(tx: Tx) -> list[Fact]:
            out = []
            fmt = clock.format_time
            for item in pending:
                created = item.created_at or tx.now
                accessed = item.accessed_at or created
                created_at = fmt(created)
                out.append(
                    Fact(
                        id=item.fact_id or tx.new_id(created),
                        agent_id=item.agent_id,
                        text=item.text,
                        created_at=created_at,
                        accessed_at=created_at if accessed is created else fmt(accessed),
                        access_count=item.access_count,
                        weight=item.weight,
                        pinned=item.pinned,
                        pinned_at=created_at if item.pinned else None,
                    )
                )
            known = [f.id for f in out if tx.agent_of(f.id) is not None]
            if known or len({f.id for f in out}) != len(out):
                raise InvalidInput(f"fact id already in use: {(known or ['(duplicate)'])[0]}")
            tx.insert_many(out, terms)
            return out

        return self.write(run)

    def pin(self, fact_id: str) -> Fact:
        def run(tx: Tx) -> Fact:
            fact = tx.load(fact_id)
            if fact.is_tombstone:
                raise Conflict(
                    f"fact {fact_id} is a tombstone (superseded); only live facts can be pinned"
                )
            if fact.pinned:
                return fact
            pinned = msgspec.structs.replace(fact, pinned=True, pinned_at=clock.format_time(tx.now))
            tx.write_fact(pinned, fact)
            return pinned

        return self.write(run)

    def unpin(self, fact_id: str) -> Fact:
        def run(tx: Tx) -> Fact:
            fact = tx.load(fact_id)
            if not fact.pinned:
                return fact
            unpinned = msgspec.structs.replace(fact, pinned=False, pinned_at=None)
            tx.write_fact(unpinned, fact)
            return unpinned

        return self.write(run)

    def revise(self, fact_id: str, text: str) -> tuple[Fact, Fact]:
        """Replace a live fact's text: a new fact plus a tombstone pointing at it, in one
        transaction. A pin moves to the revision. Returns (revision, tombstone)."""
        validate_text(text)

        def run(tx: Tx) -> tuple[Fact, Fact]:
            old = tx.load(fact_id)
            if old.is_tombstone:
                raise Conflict(
                    f"fact {fact_id} is already a tombstone; revise its replacement instead"
                )
            if old.text == text:
                raise Conflict("text is unchanged; nothing revised")
            stamp = clock.format_time(tx.now)
            revision = Fact(
                id=tx.new_id(),
                agent_id=old.agent_id,
                text=text,
                created_at=stamp,
                accessed_at=stamp,
                pinned=old.pinned,
                pinned_at=stamp if old.pinned else None,
                confidence=old.confidence,
            )
            tomb = msgspec.structs.replace(
                old, superseded_by=revision.id, pinned=False, pinned_at=None
            )
            tx.write_fact(revision, None)
            tx.write_fact(tomb, old)
            return revision, tomb

        return self.write(run)

    def retire(self, fact_id: str) -> Fact:
        """Tombstone a live fact with no replacement (`superseded_by = "agent"`)."""

        def run(tx: Tx) -> Fact:
            old = tx.load(fact_id)
            if old.is_tombstone:
                raise Conflict(f"fact {fact_id} is already a tombstone")
            if old.pinned:
                raise Conflict(f"fact {fact_id} is pinned; unpin it before retiring it")
            tomb = msgspec.structs.replace(old, superseded_by=RETIRED)
            tx.write_fact(tomb, old)
            return tomb

        return self.write(run)

    def touch(self, fact_ids: Iterable[str]) -> int:
        """Record an access to live facts; never resurrects a tombstone or recreates a fact."""
        wanted = list(dict.fromkeys(fact_ids))

        def run(tx: Tx) -> int:
            stamp = clock.format_time(tx.now)
            touched = 0
            for fact_id in wanted:
                fact = tx.find(fact_id)
                if fact is None or fact.is_tombstone:
                    continue
                tx.write_fact(
                    msgspec.structs.replace(
                        fact, access_count=fact.access_count + 1, accessed_at=stamp
                    ),
                    fact,
                )
                touched += 1
            return touched

        return self.write(run)

    def delete(self, fact_ids: Iterable[str]) -> list[Fact]:
        """Remove facts and their extraction signatures. Used only by pruning."""
        wanted = list(fact_ids)

        def run(tx: Tx) -> list[Fact]:
            removed = []
            for fact_id in wanted:
                fact = tx.find(fact_id)
                if fact is not None:
                    tx.delete_fact(fact)
                    removed.append(fact)
            return removed

        return self.write(run)


def _file_size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _merge_newest_first(streams: Sequence[Iterable[Fact]], limit: int | None) -> list[Fact]:
    import heapq

    merged = heapq.merge(*streams, key=lambda f: f.id, reverse=True)
    out: list[Fact] = []
    for fact in merged:
        out.append(fact)
        if limit is not None and len(out) >= limit:
            break
    return out


def validate_fact_id(value: str) -> str:
    if not looks_like_id(value):
        raise InvalidInput(f"not a fact id: {value!r} (expected a 26-character ULID)")
    return value
