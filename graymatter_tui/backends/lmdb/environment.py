"""One open LMDB environment and its life: opening it (or an empty view where there is
no store), the checks before each use, the read and write loops, and map growth.

A transaction that fills the map grows it and runs again from the start; a map grown by
another process is adopted. Nothing here knows what the tables hold beyond their names.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import TypeVar

import lmdb

from graymatter_tui.backends.lmdb.files import (
    DATA_FILE,
    LOCK_FILE,
    check_data_file,
    file_identity,
    lock_writable,
    read_only_message,
    write_problem,
)
from graymatter_tui.backends.lmdb.rwlock import ResizeLock
from graymatter_tui.backends.lmdb.schema import initialise, lmdb_message, lmdb_open, open_tables
from graymatter_tui.backends.lmdb.tx import Dbs, Tx
from graymatter_tui.core import clock, provenance
from graymatter_tui.core.errors import GraymatterError, InvalidInput, ReadOnlyStore, StoreError
from graymatter_tui.core.progress import Report
from graymatter_tui.core.tokens import DEFAULT_LANGUAGE
from graymatter_tui.storage.ids import IdReplay

T = TypeVar("T")

DEFAULT_MAP_SIZE = 128 * 1024 * 1024
MAX_MAP_SIZE = 1 << 40
_CHOSEN = "opened for reading only"
_NO_STORE = "there is no store there"


def map_size_from_env() -> int:
    raw = os.environ.get("GRAYMATTER_MAP_SIZE", "").strip()
    if not raw:
        return DEFAULT_MAP_SIZE
    try:
        return max(int(raw), 64 * 1024)
    except ValueError:
        raise InvalidInput(f"GRAYMATTER_MAP_SIZE must be a number of bytes, got {raw!r}") from None


class Environment:
    def __init__(
        self, path: Path, env: lmdb.Environment, dbs: Dbs, clock_fn: Callable[[], datetime]
    ) -> None:
        self.path = path
        self.lmdb_env = env
        self.dbs = dbs
        self.clock = clock_fn
        self.pid = os.getpid()
        self.resize = ResizeLock()
        self.closed = False
        # The files this Environment maps. A path that later leads elsewhere (deleted,
        # moved, replaced) must not take writes no one will ever read (see check_files).
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
        directory: Path,
        map_size: int,
        clock_fn: Callable[[], datetime] | None,
        read_only: bool = False,
        *,
        language: str = DEFAULT_LANGUAGE,
        progress: Report | None = None,
    ) -> Environment:
        check_data_file(directory)
        # A reader records itself in lock.mdb; where it cannot write that file it reads
        # without the lock (ADR 0012).
        lock = not read_only or lock_writable(directory)
        try:
            env = lmdb_open(directory, map_size, read_only=read_only, lock=lock)
        except lmdb.Error as exc:
            failure: lmdb.Error = exc
            env = None
        if env is None and read_only and lock:  # lock.mdb not ours to write after all
            lock = False
            try:
                env = lmdb_open(directory, map_size, read_only=True, lock=False)
            except lmdb.Error as exc:
                failure = exc
        if env is None:
            raise StoreError(f"cannot open store at {directory}: {lmdb_message(failure)}")
        try:
            if lock:
                env.reader_check()
            now = (clock_fn or clock.now)()
            dbs = open_tables(env, directory, now, read_only, language=language, progress=progress)
        except BaseException:
            env.close()
            raise
        if dbs is None:  # read-only over an LMDB file never initialised: no store yet
            env.close()
            return cls.empty_view(directory, clock_fn)
        if not read_only:
            for name in (DATA_FILE, LOCK_FILE):
                with contextlib.suppress(OSError):
                    os.chmod(directory / name, 0o600)
        opened = cls(directory, env, dbs, clock_fn or clock.now)
        if read_only:
            opened._reading_only(write_problem(directory) or _CHOSEN, lockless=not lock)
        return opened

    @classmethod
    def empty_view(cls, directory: Path, clock_fn: Callable[[], datetime] | None) -> Environment:
        """An empty read-only view where there is no store, creating nothing at
        `directory`. LMDB needs files to map: an empty store is made in a private
        temporary directory and unlinked at once (the map stays valid until closed)."""
        now_fn = clock_fn or clock.now
        scratch = tempfile.mkdtemp(prefix="graymatter-tui-empty-")
        try:
            env = lmdb_open(Path(scratch), 1 << 20, read_only=False, lock=True, sync=False)
            try:
                dbs = initialise(env, now_fn())
            except BaseException:
                env.close()
                raise
        except lmdb.Error as exc:
            raise StoreError(f"cannot read store at {directory}: {lmdb_message(exc)}") from None
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        opened = cls(directory, env, dbs, now_fn)
        opened._reading_only(_NO_STORE, lockless=False, absent=True)
        return opened

    def _reading_only(self, reason: str, *, lockless: bool, absent: bool = False) -> None:
        self.read_only_reason = reason
        self.lockless = lockless
        self.absent = absent
        if lockless or absent:  # no lock.mdb of ours to watch
            self._watched = self._watched[:1]
            self._identity = file_identity(self._watched)

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        if self.pid == os.getpid():
            self.lmdb_env.close()

    # ---- checks before use ---------------------------------------------------------------
    def check_usable(self) -> None:
        if self.closed:
            raise StoreError("the store is closed")
        if self.pid != os.getpid():
            raise StoreError("the store was opened by another process (used after fork)")

    def check_files(self) -> None:
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

    def check_writable(self) -> None:
        self.check_usable()
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

    # ---- transactions ------------------------------------------------------------------
    def read(self, fn: Callable[[Tx], T], *, buffers: bool = False) -> T:
        """Run `fn` in a read transaction. With `buffers`, values are memoryviews of the
        map, valid only inside `fn` (a vector search reads its blocks without a copy)."""
        self.check_usable()
        for _ in range(8):
            try:
                with self.resize.shared(), self.lmdb_env.begin(buffers=buffers) as txn:  # type: ignore[call-overload]
                    return fn(Tx(txn, self.dbs, self.clock(), write=False))
            except lmdb.MapResizedError:
                self._adopt_map_size()
            except GraymatterError:
                raise
            except lmdb.Error as exc:
                raise StoreError(f"store read failed: {lmdb_message(exc)}") from None
        raise StoreError("store read failed: the map kept being resized by another process")

    def write(self, fn: Callable[[Tx], T]) -> T:
        """Run `fn` in one write transaction; grow the map and run again if it fills.

        `fn` must do the same thing every time it runs: it computes only from its
        arguments and the transaction, and changes nothing outside it (the caller
        assigns what it returns). A retry sees the same `tx.now` and gets the same ids
        from `tx.new_id`, so it writes exactly what the first attempt would have.
        """
        self.check_writable()
        now = self.clock()
        source = provenance.current()  # read here: the loop below may run on retry
        ids = IdReplay()
        for _ in range(64):
            try:
                with self.resize.shared(), self.lmdb_env.begin(write=True) as txn:
                    self.check_files()  # under the writer lock, before anything is put
                    tx = Tx(txn, self.dbs, now, write=True, mint=ids.attempt(), source=source)
                    result = fn(tx)
                    if not tx.discard:
                        tx.flush_counts()
                        tx.bump("generation")
                    if self.simulate_map_full:  # an abandoned trial may fill the map too
                        self.simulate_map_full -= 1
                        raise lmdb.MapFullError("simulated (Store.simulate_map_full)")
                    if tx.discard:
                        txn.abort()
                        return result
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
                raise StoreError(f"store write failed: {lmdb_message(exc)}") from None
        raise StoreError("store write failed: the map could not be grown enough")

    # ---- map size ------------------------------------------------------------------------
    def reserve(self, extra_bytes: int, *, rewrites: int = 0) -> None:
        """Make sure the map has room for about `extra_bytes` more (bulk writes), plus
        up to `rewrites` bytes of existing pages the write may copy (LMDB copies every
        page it changes, and cannot reuse the old copy within the same transaction)."""
        self.check_writable()
        # Measure under the lock: env.info/stat race a resize in another thread and fail
        # with EINVAL. Look again once exclusive, as another thread may have grown it.
        with self.resize.shared():
            target = self._map_target(extra_bytes, rewrites)
        if target is None:
            return
        with self.resize.exclusive():
            target = self._map_target(extra_bytes, rewrites)
            if target is None:
                return
            try:
                self.lmdb_env.set_mapsize(target)
            except lmdb.Error as exc:
                raise StoreError(f"cannot grow the store: {lmdb_message(exc)}") from None

    def map_use(self) -> tuple[int, int]:
        """(bytes used, map size). Call under the resize lock (ADR 0008)."""
        info = self.lmdb_env.info()
        used = (int(info["last_pgno"]) + 1) * int(self.lmdb_env.stat()["psize"])
        return used, int(info["map_size"])

    def _map_target(self, extra_bytes: int, rewrites: int = 0) -> int | None:
        """The map size needed for `extra_bytes` more, or None if it already fits."""
        used, size = self.map_use()
        extra_bytes += min(used, rewrites)
        if used + extra_bytes <= size:
            return None
        target = size
        while used + extra_bytes > target and target < MAX_MAP_SIZE:
            target *= 2
        return min(target, MAX_MAP_SIZE)

    def _grow_map(self) -> None:
        with self.resize.exclusive():
            current = int(self.lmdb_env.info()["map_size"])
            if current >= MAX_MAP_SIZE:
                raise StoreError("store write failed: the map reached its 1 TiB limit")
            try:
                self.lmdb_env.set_mapsize(min(current * 2, MAX_MAP_SIZE))
            except lmdb.Error as exc:
                raise StoreError(f"cannot grow the store: {lmdb_message(exc)}") from None

    def _adopt_map_size(self) -> None:
        with self.resize.exclusive():
            try:
                self.lmdb_env.set_mapsize(0)
            except lmdb.Error as exc:
                raise StoreError(
                    f"cannot adopt the store's new size: {lmdb_message(exc)}"
                ) from None
