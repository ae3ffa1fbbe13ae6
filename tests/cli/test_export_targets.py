"""`export --out P` for every kind of thing P can be, through the real CLI in a subprocess.

The rule: a regular file (or a new path) is replaced atomically; anything else is written
through or refused; the node the user named is never replaced; a failed write is an error
and nothing claims success. Device nodes are private ones made with mknod in tmp_path, so a
regression can never replace the machine's own /dev/full or /dev/null.
"""

from __future__ import annotations

import errno
import os
import select
import socket
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from tests.conftest import FIXED_NOW, clean_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

# Big enough that the export does not fit a pipe's 64 KiB buffer (the EPIPE case).
FACTS = 600


@pytest.fixture(scope="module")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("export-targets") / "store"
    with LmdbStore.open(path) as store:
        store.put_many(
            NewFact("agent", f"fact {i}: " + "the quick brown fox " * 6) for i in range(FACTS)
        )
    return path


def cli(
    store_dir: Path, *args: str, cwd: Path | None = None, stdout: int | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", "--dir", str(store_dir), *args],
        stdin=subprocess.DEVNULL,
        stdout=stdout if stdout is not None else subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env({"GRAYMATTER_NOW": FIXED_NOW}),
        cwd=cwd,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def expected(store_dir: Path) -> bytes:
    done = cli(store_dir, "export")
    assert done.returncode == 0, done.stderr
    assert len(done.stdout) > 3 * 65536
    return done.stdout


def export_to(store_dir: Path, target: Path | str) -> subprocess.CompletedProcess[bytes]:
    return cli(store_dir, "export", "--out", str(target))


def succeeded(done: subprocess.CompletedProcess[bytes], target: Path | str) -> None:
    assert done.returncode == 0, done.stderr
    assert done.stderr == b""
    assert f"exported to {target}".encode() in done.stdout


def refused(done: subprocess.CompletedProcess[bytes], *needles: str) -> str:
    """Exit 1, one clear line on stderr, nothing on stdout claiming success."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("graymatter-tui: error:"), lines
    assert "Traceback" not in lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    assert b"exported" not in (done.stdout or b"")
    return lines[0]


def node(path: Path) -> tuple[int, int, int]:
    st = os.lstat(path)
    return st.st_mode, st.st_rdev, st.st_ino


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(".tmp"))


def holds_export(path: Path, expected: bytes, mode: int) -> None:
    """`path` holds exactly the export and has permission bits `mode`."""
    assert path.read_bytes() == expected
    assert stat.S_IMODE(path.stat().st_mode) == mode


def make_device(path: Path, major: int, minor: int, kind: int = stat.S_IFCHR) -> Path:
    try:
        os.mknod(path, kind | 0o666, os.makedev(major, minor))
    except PermissionError:
        pytest.skip("mknod is not permitted here (needed for a private device node)")
    return path


# ---- regular files and new paths: atomic replace -------------------------------------------


def test_a_new_file_gets_mode_0600(store_dir: Path, expected: bytes, tmp_path: Path) -> None:
    target = tmp_path / "new.jsonl"
    old_umask = os.umask(0)  # the child inherits a permissive umask: the mode is deliberate
    try:
        done = export_to(store_dir, target)
    finally:
        os.umask(old_umask)
    succeeded(done, target)
    holds_export(target, expected, 0o600)
    assert leftovers(tmp_path) == []


def test_an_existing_file_is_replaced_keeping_its_mode(
    store_dir: Path, expected: bytes, tmp_path: Path
) -> None:
    target = tmp_path / "old.jsonl"
    target.write_bytes(b"old contents that are longer than nothing\n" * 10)
    target.chmod(0o640)
    succeeded(export_to(store_dir, target), target)
    holds_export(target, expected, 0o640)
    assert leftovers(tmp_path) == []


def test_a_relative_path_is_written_in_the_working_directory(
    store_dir: Path, expected: bytes, tmp_path: Path
) -> None:
    done = cli(store_dir, "export", "--out", "rel.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "rel.jsonl").read_bytes() == expected


# ---- symlinks: the rule applies to what they point at; the link stays ----------------------


def test_a_symlink_to_a_file_writes_the_file_and_keeps_the_link(
    store_dir: Path, expected: bytes, tmp_path: Path
) -> None:
    real = tmp_path / "real.jsonl"
    real.write_bytes(b"before\n")
    real.chmod(0o644)
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    succeeded(export_to(store_dir, link), link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    holds_export(real, expected, 0o644)


def test_a_dangling_symlink_creates_its_target(
    store_dir: Path, expected: bytes, tmp_path: Path
) -> None:
    (tmp_path / "elsewhere").mkdir()
    real = tmp_path / "elsewhere" / "made.jsonl"
    link = tmp_path / "dangling.jsonl"
    link.symlink_to(real)
    succeeded(export_to(store_dir, link), link)
    assert link.is_symlink() and os.readlink(link) == str(real)
    holds_export(real, expected, 0o600)


def test_a_symlink_loop_is_refused(store_dir: Path, tmp_path: Path) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    a.symlink_to(b)
    b.symlink_to(a)
    refused(export_to(store_dir, a), str(a))
    assert a.is_symlink() and b.is_symlink()


# ---- FIFOs: written through, never replaced --------------------------------------------------


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


@pytest.fixture
def reader_fd(fifo: Path) -> Iterator[int]:
    """A reader already on the FIFO (opened before the CLI starts, so no race)."""
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        yield fd
    finally:
        os.close(fd)


def drain(fd: int, limit: int | None = None) -> bytes:
    """Read what the writer sends until it closes (or `limit` bytes have come)."""
    got = bytearray()
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLHUP)
    while limit is None or len(got) < limit:
        if not poller.poll(60_000):
            raise AssertionError("the writer sent nothing for 60 s")
        try:
            chunk = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not chunk:
            break
        got += chunk
    return bytes(got)


def start_export(store_dir: Path, target: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "graymatter_tui",
            "--dir",
            str(store_dir),
            "export",
            "--out",
            str(target),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env({"GRAYMATTER_NOW": FIXED_NOW}),
    )


def test_a_fifo_with_a_reader_receives_the_export(
    store_dir: Path, expected: bytes, fifo: Path, reader_fd: int
) -> None:
    before = node(fifo)
    proc = start_export(store_dir, fifo)
    got = drain(reader_fd)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert got == expected
    assert node(fifo) == before and stat.S_ISFIFO(before[0])
    assert f"exported to {fifo}".encode() in out


def test_a_fifo_whose_reader_goes_away_is_an_error(store_dir: Path, fifo: Path) -> None:
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        proc = start_export(store_dir, fifo)
        drain(fd, limit=10)
    finally:
        os.close(fd)  # the export is bigger than the pipe: the writer is still writing
    out, err = proc.communicate(timeout=120)
    done = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
    refused(done, str(fifo), "reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_fifo_without_a_reader_is_refused_at_once(store_dir: Path, fifo: Path) -> None:
    before = node(fifo)
    refused(export_to(store_dir, fifo), str(fifo), "no reader")
    assert node(fifo) == before


# ---- devices, directories, sockets, missing directories --------------------------------------


def test_a_full_device_is_an_error_and_stays_a_device(store_dir: Path, tmp_path: Path) -> None:
    full = make_device(tmp_path / "full", 1, 7)
    before = node(full)
    refused(export_to(store_dir, full), str(full), os.strerror(errno.ENOSPC))
    assert node(full) == before
    assert stat.S_ISCHR(before[0]) and before[1] == os.makedev(1, 7)


def test_a_null_device_is_written_through(store_dir: Path, tmp_path: Path) -> None:
    null = make_device(tmp_path / "null", 1, 3)
    before = node(null)
    succeeded(export_to(store_dir, null), null)
    assert node(null) == before


def test_a_block_device_is_refused(store_dir: Path, tmp_path: Path) -> None:
    # Major 240 is reserved for local use: no driver answers it, so even a wrong write
    # through would reach nothing.
    disk = make_device(tmp_path / "disk", 240, 0, stat.S_IFBLK)
    before = node(disk)
    refused(export_to(store_dir, disk), str(disk), "block device")
    assert node(disk) == before


def test_a_socket_is_refused(store_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        before = node(path)
        refused(export_to(store_dir, path), str(path), "socket")
        assert node(path) == before


def test_a_directory_is_refused(store_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "a-dir"
    target.mkdir()
    refused(export_to(store_dir, target), str(target), "directory")
    assert list(target.iterdir()) == []


def test_a_path_in_a_missing_directory_is_refused(store_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "no-such-dir" / "export.jsonl"
    refused(export_to(store_dir, target), str(tmp_path / "no-such-dir"))
    assert not (tmp_path / "no-such-dir").exists()


def test_the_stores_own_files_are_refused(store_dir: Path, tmp_path: Path) -> None:
    data = (store_dir / "data.mdb").read_bytes()
    nodes = {name: node(store_dir / name) for name in ("data.mdb", "lock.mdb")}
    link = tmp_path / "sneaky"
    link.symlink_to(store_dir / "data.mdb")
    for target in (store_dir / "data.mdb", store_dir / "lock.mdb", link):
        refused(export_to(store_dir, target), "store")
    assert (store_dir / "data.mdb").read_bytes() == data
    assert {name: node(store_dir / name) for name in nodes} == nodes


# ---- standard output ------------------------------------------------------------------------


def test_dash_means_standard_output(store_dir: Path, expected: bytes, tmp_path: Path) -> None:
    done = cli(store_dir, "export", "--out", "-", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == expected
    assert list(tmp_path.iterdir()) == []  # no file called "-"


@pytest.mark.parametrize("args", [(), ("--out", "-")], ids=["default", "dash"])
def test_standard_output_on_a_full_device_is_an_error(
    store_dir: Path, tmp_path: Path, args: tuple[str, ...]
) -> None:
    full = make_device(tmp_path / "full", 1, 7)
    fd = os.open(full, os.O_WRONLY)
    try:
        done = cli(store_dir, "export", *args, stdout=fd)
    finally:
        os.close(fd)
    refused(done, "standard output", os.strerror(errno.ENOSPC))
