"""Writing a file the user named (exports): write through it or refuse, never replace it.

- A regular file, or a path that does not exist yet, is written atomically: a temporary file
  in the same directory, fsync, rename over the target, fsync of the directory. A reader
  never sees half an export, and a failed write leaves the old file as it was.
- A replaced file keeps its mode (and its owner, where this user may set it). A new file is
  0600, whatever the umask: an export holds the agents' whole memory, which the store keeps
  in 0600 files; a copy must not be easier to read than the original. `chmod` widens it.
- A symlink: the rule applies to what it points at, and the link stays as it is (a dangling
  link gets its target created, as a shell redirection would).
- A FIFO or a character device (/dev/null, a terminal) is written through: opened for writing
  without creating, truncating or replacing anything. A FIFO is opened with O_NONBLOCK, so one
  with no reader is refused at once instead of waiting forever for a reader.
- A directory, a block device (a disk), a socket and the store's own files are refused.
- A short or failed write (ENOSPC, EPIPE, EIO) is an error: nothing claims success.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
import tempfile
from collections.abc import Iterable
from pathlib import Path

from graymatter_tui.core.errors import WriteFailed

NEW_FILE_MODE = 0o600


def write_output(data: bytes, target: Path | None, *, protect: Iterable[Path] = ()) -> None:
    """Write `data` to `target` (None: standard output) by the rules above.

    `protect` names files that must never be written (the store's own)."""
    if target is None:
        _write_stdout(data)
        return
    try:
        st: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        st = None
    except OSError as exc:
        raise WriteFailed(f"cannot write {target}: {_reason(exc)}") from None
    if st is None:
        _create(data, target)
        return
    if any(_same_file(st, path) for path in protect):
        raise WriteFailed(f"{target} is one of the store's own files; not exporting over it")
    mode = st.st_mode
    if stat.S_ISREG(mode):
        real = Path(os.path.realpath(target))
        if _same_file(st, real):
            _replace(data, real, st, target)
        else:  # a path with no stable name (e.g. /proc/self/fd/N): the shell's way
            _write_through(data, target, st, target, truncate=True)
    elif stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        _write_through(data, target, st, target, truncate=False)
    elif stat.S_ISDIR(mode):
        raise WriteFailed(f"{target} is a directory; give a file name")
    elif stat.S_ISBLK(mode):
        raise WriteFailed(f"{target} is a block device (a disk); not writing an export onto it")
    elif stat.S_ISSOCK(mode):
        raise WriteFailed(f"{target} is a socket; it cannot be written as a file")
    else:
        raise WriteFailed(f"{target} is not a file that can be written")


def _same_file(st: os.stat_result, path: Path) -> bool:
    try:
        other = os.stat(path)
    except OSError:
        return False
    return (st.st_dev, st.st_ino) == (other.st_dev, other.st_ino)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.EPIPE:
        return "the reader closed it before the export was complete (broken pipe)"
    return exc.strerror or str(exc)


def _create(data: bytes, target: Path) -> None:
    """A new file: at the path itself, or at the end of a dangling symlink."""
    real = Path(os.path.realpath(target))
    try:
        parent = os.stat(real.parent)
    except FileNotFoundError:
        raise WriteFailed(f"cannot write {target}: no directory {real.parent}") from None
    except OSError as exc:
        raise WriteFailed(f"cannot write {target}: {_reason(exc)}") from None
    if not stat.S_ISDIR(parent.st_mode):
        raise WriteFailed(f"cannot write {target}: {real.parent} is not a directory")
    _replace(data, real, None, target)


def _replace(data: bytes, real: Path, old: os.stat_result | None, shown: Path) -> None:
    try:
        fd, tmp = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    except OSError as exc:
        raise WriteFailed(f"cannot write {shown}: {_reason(exc)}") from None
    try:
        try:
            os.fchmod(fd, stat.S_IMODE(old.st_mode) if old is not None else NEW_FILE_MODE)
            if old is not None:
                _keep_owner(fd, old)
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise WriteFailed(f"cannot write {shown}: {_reason(exc)}; nothing was replaced") from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_directory(real.parent)


def _keep_owner(fd: int, old: os.stat_result) -> None:
    """Give the new file the old one's owner and group where this user may."""
    if (old.st_uid, old.st_gid) == (os.geteuid(), os.getegid()):
        return
    try:
        os.fchown(fd, old.st_uid, old.st_gid)
    except OSError:
        with contextlib.suppress(OSError):
            os.fchown(fd, -1, old.st_gid)


def _fsync_directory(directory: Path) -> None:
    """Make the rename itself durable. Some file systems cannot sync a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_through(
    data: bytes, path: Path, st: os.stat_result, shown: Path, *, truncate: bool
) -> None:
    fifo = stat.S_ISFIFO(st.st_mode)
    flags = os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC
    if fifo:
        flags |= os.O_NONBLOCK  # ENXIO at once when no reader has it open
    if truncate:
        flags |= os.O_TRUNC
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if fifo and exc.errno == errno.ENXIO:
            raise WriteFailed(
                f"cannot write {shown}: it is a FIFO with no reader; start the reader first"
            ) from None
        raise WriteFailed(f"cannot write {shown}: {_reason(exc)}") from None
    try:
        opened = os.fstat(fd)
        if (opened.st_dev, opened.st_ino) != (st.st_dev, st.st_ino):
            raise WriteFailed(f"cannot write {shown}: it was replaced while being opened")
        if fifo:
            os.set_blocking(fd, True)
        _write_all(fd, data)
    except OSError as exc:
        raise WriteFailed(f"cannot write {shown}: {_reason(exc)}") from None
    finally:
        os.close(fd)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        if written <= 0:
            raise OSError(errno.EIO, "the write stopped short")
        view = view[written:]


def _write_stdout(data: bytes) -> None:
    """Straight to file descriptor 1, so no buffered copy is left to fail again at exit.
    A reader that went away (`| head`) ends the program quietly, as Unix tools do."""
    sys.stdout.flush()
    try:
        _write_all(sys.stdout.fileno(), data)
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise WriteFailed(f"cannot write to standard output: {_reason(exc)}") from None
