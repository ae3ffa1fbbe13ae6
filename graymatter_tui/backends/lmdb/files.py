"""Checks on the data directory and `data.mdb` before LMDB is allowed near them.

LMDB itself would silently start a new, empty store over a zero-byte `data.mdb`, and it
crashes the whole process with SIGBUS when a data file is shorter than its own header says.
Both are caught here from the file's bytes, without mapping it.
"""

from __future__ import annotations

import contextlib
import os
import stat
import struct
import time
from pathlib import Path

from graymatter_tui.backends.lmdb.page_walk import Damaged, first_page_past_end, meta_roots
from graymatter_tui.core.errors import ReadOnlyStore, StoreError

DATA_FILE = "data.mdb"
LOCK_FILE = "lock.mdb"
MAGIC = 0xBEEFC0DE
DATA_VERSION_09 = 1  # the on-disk format of the LMDB 0.9 engine

# Offsets inside a meta page of a 64-bit LMDB 0.9 file (after the 16-byte page header):
# magic u32 @16, version u32 @20, mapsize u64 @32, page size (free DB's md_pad) u32 @40,
# last used page u64 @136, transaction id u64 @144.
_META = struct.Struct("<II8xQI92xQQ")
_META_OFFSET = 16


def prepare_directory(path: Path) -> None:
    """Make sure `path` is a directory we can write a store in, creating it (0700) if it
    is new. A store this user can read but not write is refused as read-only."""
    try:
        present = path.exists() or path.is_symlink()
    except OSError as exc:
        raise StoreError(f"cannot reach data dir {path}: {exc.strerror or exc}") from None
    if not present:
        try:
            # exist_ok: another process may create the same new store at the same moment.
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create data dir {path}: {exc.strerror or exc}") from None
    _require_directory(path, "readable and writable")
    for name in (DATA_FILE, LOCK_FILE):
        if (path / name).exists() and not os.access(path / name, os.R_OK):
            raise StoreError(f"cannot read {path / name}: permission denied for this user")
    problem = write_problem(path)
    if problem is not None:
        raise ReadOnlyStore(read_only_message(path, problem))


def _require_directory(path: Path, needed: str) -> None:
    """`path`, which exists, must be a directory this user can list and enter."""
    if not path.is_dir():
        raise StoreError(f"data dir {path} exists but is not a directory")
    if not os.access(path, os.R_OK | os.X_OK):
        raise StoreError(f"data dir {path} is not {needed} by this user")


def read_only_message(path: Path, why: str) -> str:
    return f"the store at {path} is read-only for this user ({why}); nothing was written"


def prepare_reading(path: Path) -> bool:
    """Check that the store at `path` can be read, creating nothing. False when there is
    no store there (no directory, or no data.mdb in it)."""
    try:
        if not path.exists():
            if path.is_symlink():
                raise StoreError(f"data dir {path} is a symlink to a directory that does not exist")
            return False
    except OSError as exc:
        raise StoreError(f"cannot reach data dir {path}: {exc.strerror or exc}") from None
    _require_directory(path, "readable")
    try:
        return (path / DATA_FILE).stat() is not None
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot read {path / DATA_FILE}: {exc.strerror or exc}") from None


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def write_problem(path: Path) -> str | None:
    """Why this user cannot write the store in `path`, or None if it can."""
    if _read_only_mount(path):
        return "it is on a read-only file system"
    if not os.access(path, os.W_OK):
        return "its directory is not writable"
    for name in (DATA_FILE, LOCK_FILE):
        target = path / name
        if target.exists() and not os.access(target, os.W_OK):
            return f"{name} is not writable"
    return None


def lock_writable(path: Path) -> bool:
    """Whether a reader can use LMDB's lock file (it records readers in it): lock.mdb is
    writable, or can be created. A read-only mount or another user's store says no."""
    if _read_only_mount(path):
        return False
    lock = path / LOCK_FILE
    if lock.exists():
        return os.access(lock, os.R_OK | os.W_OK)
    return os.access(path, os.W_OK | os.X_OK)


def file_identity(paths: tuple[str, ...]) -> tuple[tuple[int, int], ...] | None:
    """(device, inode) of each file; None if any is missing. One stat per file (the write
    path calls this: plain strings, no Path objects)."""
    out = []
    for name in paths:
        try:
            st = os.stat(name)
        except OSError:
            return None
        out.append((st.st_dev, st.st_ino))
    return tuple(out)


# A store that another process is creating or writing can look empty or short for an
# instant (LMDB writes new pages, then the meta page that points at them). A broken file
# stays broken, so a verdict is only given after it holds for a few looks.
_LOOKS = 5
_LOOK_PAUSE = 0.1


class _Broken(Exception):
    """What is wrong with the file, as the user will read it."""


def check_data_file(path: Path) -> bool:
    """Validate an existing `data.mdb`. Returns False when there is none yet."""
    data = path / DATA_FILE
    for _ in range(_LOOKS - 1):
        with contextlib.suppress(_Broken):
            return _check_once(data)
        time.sleep(_LOOK_PAUSE)
    try:
        return _check_once(data)
    except _Broken as exc:
        raise StoreError(str(exc)) from None


def _check_once(data: Path) -> bool:
    try:
        kind = data.stat().st_mode
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise StoreError(f"cannot read {data}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(kind):
        raise StoreError(f"{data} is not a regular file")
    try:
        with open(data, "rb") as fh:
            head = fh.read(_META_OFFSET + _META.size)
            first = _read_meta(head)
            page_size = first[3] if first is not None else 0
            second = None
            if first is not None and page_size >= 512 and not page_size & (page_size - 1):
                fh.seek(page_size)
                second = _read_meta(fh.read(_META_OFFSET + _META.size))
            # The size is taken after the meta pages are read: LMDB writes a commit's
            # pages before the meta page that needs them, so this size is never stale.
            size = os.fstat(fh.fileno()).st_size
    except PermissionError:
        raise StoreError(f"cannot read {data}: permission denied") from None
    except OSError as exc:
        raise StoreError(f"cannot read {data}: {exc.strerror or exc}") from None
    if size == 0:
        raise _Broken(
            f"{data} is empty (0 bytes), so its data is gone; refusing to open it "
            "(LMDB would start a new store over it). Move it aside to start afresh"
        )
    if first is None:
        raise _Broken(f"{data} is not an LMDB database (bad header); not opening it")
    if page_size < 512 or page_size & (page_size - 1):
        raise _Broken(f"{data} has a corrupt header (page size {page_size})")
    if size < 2 * page_size or second is None:
        raise _Broken(f"{data} is truncated ({size} bytes); not opening it")
    newest = max((m for m in (first, second)), key=lambda m: m[5])
    version, last_page = newest[1], newest[4]
    if version != DATA_VERSION_09:
        raise StoreError(
            f"{data} uses LMDB data format {version}, not the 0.9 format this program writes"
        )
    needed = (last_page + 1) * page_size
    if size < needed and not _tail_never_written(data, page_size, size, newest is second):
        raise _Broken(
            f"{data} is truncated: {size} bytes but its header needs {needed}; "
            "not opening it (restore it from a backup or export)"
        )
    return True


def _tail_never_written(data: Path, page_size: int, size: int, second_meta: bool) -> bool:
    """Whether a file shorter than its header is whole all the same: LMDB counts pages it
    took and gave back within one transaction without ever writing them. It is whole when
    no page that a table or the free list refers to lies past its end."""
    try:
        with open(data, "rb") as fh:
            fh.seek(page_size if second_meta else 0)
            roots = meta_roots(fh.read(page_size))
            return first_page_past_end(fh, page_size, size // page_size, roots) is None
    except Damaged as exc:
        raise _Broken(f"{data} is damaged ({exc}); not opening it") from None
    except OSError as exc:
        raise StoreError(f"cannot read {data}: {exc.strerror or exc}") from None


def _read_meta(raw: bytes) -> tuple[int, int, int, int, int, int] | None:
    if len(raw) < _META_OFFSET + _META.size:
        return None
    magic, version, mapsize, psize, last_page, txnid = _META.unpack_from(raw, _META_OFFSET)
    if magic != MAGIC:
        return None
    return magic, version, mapsize, psize, last_page, txnid
