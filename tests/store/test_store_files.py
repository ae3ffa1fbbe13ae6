"""The data directory and `data.mdb` on disk: permissions, and damaged or foreign files.

A damaged file must give a clear StoreError and stay byte-for-byte as it was. Cases that
could crash LMDB itself (SIGBUS on a truncated map) run in a subprocess, so a crash shows
up as a negative return code instead of killing the test run.

LMDB only: the files on disk are LMDB's.
"""

from __future__ import annotations

import hashlib
import linecache
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import lmdb
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.files import check_data_file
from graymatter_tui.core.errors import StoreError
from graymatter_tui.storage import NewFact
from tests.reliability.worker import read_refusals
from tests.support.unprivileged import cli_as_nobody, cli_batch_as_nobody

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

NOBODY = 65534

# Opens the store at argv[1] and scans every fact; prints a StoreError and exits 1.
OPEN_AND_SCAN = textwrap.dedent(
    """
    import sys
    from graymatter_tui.core.errors import StoreError
    from graymatter_tui.backends.lmdb import LmdbStore
    try:
        store = LmdbStore.open(sys.argv[1])
        facts = store.list_facts(None, "all")
        print(len(facts))
    except StoreError as exc:
        print(exc, file=sys.stderr)
        sys.exit(1)
    """
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def digest(path: Path) -> tuple[int, str]:
    data = path.read_bytes()
    return len(data), hashlib.sha256(data).hexdigest()


def make_store(path: Path, n: int) -> None:
    with LmdbStore.open(path) as opened:
        for start in range(0, n, 1000):
            opened.put_many(
                [
                    NewFact("agent", f"fact {i} " + "x" * 200)
                    for i in range(start, min(n, start + 1000))
                ]
            )


def write_schema_version(path: Path, version: bytes) -> None:
    """Set the store's schema version behind its back, as a newer program would."""
    env = lmdb.open(str(path), max_dbs=16)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", version, db=meta)
    env.close()


def open_in_subprocess(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", OPEN_AND_SCAN, str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


# ---- permissions ------------------------------------------------------------------------


def test_new_store_permissions(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "data"
    with LmdbStore.open(path) as opened:
        opened.put("a", "x")
    assert mode_of(path) == 0o700
    assert mode_of(path / "data.mdb") == 0o600
    assert mode_of(path / "lock.mdb") == 0o600


def test_permissions_hold_with_a_permissive_umask(tmp_path: Path) -> None:
    path = tmp_path / "umask0"
    script = (
        "import os, sys; os.umask(0)\n"
        "from graymatter_tui.backends.lmdb import LmdbStore\n"
        "LmdbStore.open(sys.argv[1]).put('a', 'x')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script, str(path)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert mode_of(path) == 0o700
    assert mode_of(path / "data.mdb") == 0o600
    assert mode_of(path / "lock.mdb") == 0o600


# ---- a data dir that cannot be used -----------------------------------------------------


def test_data_dir_that_is_a_regular_file(tmp_path: Path) -> None:
    path = tmp_path / "not-a-dir"
    path.write_bytes(b"hello")
    with pytest.raises(StoreError, match="not a directory"):
        LmdbStore.open(path)
    assert path.read_bytes() == b"hello"


def test_data_mdb_that_is_a_directory(tmp_path: Path) -> None:
    path = tmp_path / "store"
    (path / "data.mdb").mkdir(parents=True)
    with pytest.raises(StoreError, match="not a regular file"):
        LmdbStore.open(path)


# ---- damaged files ----------------------------------------------------------------------


def test_zero_byte_data_mdb_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.mkdir(mode=0o700)
    (path / "data.mdb").write_bytes(b"")
    with pytest.raises(StoreError, match="empty"):
        LmdbStore.open(path)
    assert (path / "data.mdb").stat().st_size == 0
    with pytest.raises(StoreError, match="empty"):  # and again: nothing was "repaired"
        LmdbStore.open(path)
    assert (path / "data.mdb").stat().st_size == 0


def test_zero_byte_data_mdb_of_a_real_store(tmp_path: Path) -> None:
    path = tmp_path / "store"
    make_store(path, 10)
    os.truncate(path / "data.mdb", 0)
    with pytest.raises(StoreError, match="empty"):
        LmdbStore.open(path)
    assert (path / "data.mdb").stat().st_size == 0


def test_garbage_data_mdb_is_refused_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "store"
    path.mkdir(mode=0o700)
    garbage = os.urandom(64 * 1024)
    (path / "data.mdb").write_bytes(garbage)
    with pytest.raises(StoreError) as caught:
        LmdbStore.open(path)
    assert "data.mdb" in str(caught.value)
    assert (path / "data.mdb").read_bytes() == garbage


@pytest.mark.parametrize("keep", ["three pages", "half", "all but one page"])
def test_truncated_store_is_refused_without_a_crash(tmp_path: Path, keep: str) -> None:
    path = tmp_path / "store"
    make_store(path, 3000)
    data = path / "data.mdb"
    with lmdb.open(str(path), max_dbs=16, readonly=True, lock=False) as env:
        page = env.stat()["psize"]
    size = data.stat().st_size
    assert size > 20 * page
    new_size = {"three pages": 3 * page, "half": size // 2, "all but one page": size - page}[keep]
    os.truncate(data, new_size)
    before = digest(data)

    done = open_in_subprocess(path)
    assert done.returncode == 1, (done.returncode, done.stderr)  # a signal would be negative
    assert "truncated" in done.stderr
    assert "Traceback" not in done.stderr
    assert digest(data) == before


@pytest.mark.parametrize("cut_to", ["half", "zero"])
def test_a_store_another_process_is_still_writing_opens(tmp_path: Path, cut_to: str) -> None:
    """A commit writes its pages, then the meta page that needs them; a new store is
    created empty, then initialised. A check that sees the file at such a moment (short or
    empty until the check has looked once and is waiting to look again) must look again,
    not call it truncated or empty."""
    path = tmp_path / "store"
    make_store(path, 3000)
    data = path / "data.mdb"
    finished = tmp_path / "data.mdb.finished"
    shutil.copyfile(data, finished)
    os.truncate(data, finished.stat().st_size // 2 if cut_to == "half" else 0)
    opener = threading.get_ident()
    opened_or_failed = threading.Event()

    def finish_writing() -> None:
        # Only once the opener has looked at the short file and waits to look again
        # (never on a timer a loaded machine can miss): the whole file appears at once.
        while not opened_or_failed.is_set():
            frame = sys._current_frames().get(opener)
            if (
                frame is not None
                and frame.f_code is check_data_file.__code__
                and "sleep" in linecache.getline(frame.f_code.co_filename, frame.f_lineno)
            ):
                os.replace(finished, data)
                return
            time.sleep(0.001)

    writer = threading.Thread(target=finish_writing)
    writer.start()
    try:
        with LmdbStore.open(path) as opened:
            assert len(opened.fact_ids("agent")) == 3000
    finally:
        opened_or_failed.set()
        writer.join()
    assert not finished.exists()  # the opener did meet the short file, and looked again


def test_no_false_alarms_while_other_processes_write(tmp_path: Path) -> None:
    """Checking the file over and over while three writers and a cycler commit: every look
    must pass (it used to say "truncated" when a commit landed between two reads)."""
    path = tmp_path / "store"
    LmdbStore.open(path).close()
    worker = Path(__file__).parents[1] / "reliability" / "worker.py"
    procs = [
        subprocess.Popen(
            [sys.executable, str(worker), "writer", str(path), str(tmp_path / f"a{i}"), "4", str(i)]
        )
        for i in range(3)
    ]
    refusals = tmp_path / "cycler-refusals.jsonl"
    cycler = [sys.executable, str(worker), "cycler", str(path), str(refusals), "4", "7"]
    procs.append(subprocess.Popen(cycler))
    alarms: list[str] = []
    looks = 0
    try:
        while any(proc.poll() is None for proc in procs):
            try:
                assert check_data_file(path)
            except StoreError as exc:
                alarms.append(str(exc))
            looks += 1
    finally:
        for proc in procs:
            proc.wait(timeout=120)
    assert [proc.returncode for proc in procs] == [0, 0, 0, 0]
    assert looks > 1000
    assert alarms == []
    assert read_refusals([refusals]) == {}  # the cycler alone on its agents: never refused


def test_foreign_lmdb_file_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "foreign"
    path.mkdir()
    env = lmdb.open(str(path), max_dbs=0)
    with env.begin(write=True) as txn:
        txn.put(b"someone-else", b"their data")
    env.close()
    before = digest(path / "data.mdb")
    with pytest.raises(StoreError, match="not a graymatter-tui store"):
        LmdbStore.open(path)
    assert digest(path / "data.mdb") == before
    env = lmdb.open(str(path), max_dbs=0, readonly=True)
    with env.begin() as txn:
        assert txn.get(b"someone-else") == b"their data"
        assert txn.stat()["entries"] == 1
    env.close()


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "store"
    make_store(path, 3)
    write_schema_version(path, b"99")
    before = digest(path / "data.mdb")
    with pytest.raises(StoreError, match="newer") as caught:
        LmdbStore.open(path)
    assert "99" in str(caught.value)
    assert digest(path / "data.mdb") == before


def test_a_refused_store_does_not_stay_registered(tmp_path: Path) -> None:
    """After a refusal is fixed, the next open works (no half-open Store left behind)."""
    path = tmp_path / "store"
    make_store(path, 3)
    write_schema_version(path, b"99")
    with pytest.raises(StoreError):
        LmdbStore.open(path)
    write_schema_version(path, b"1")
    with LmdbStore.open(path) as opened:
        assert len(opened.list_facts("agent")) == 3


# ---- a data dir this user may not write -------------------------------------------------


@pytest.fixture
def public_tmp() -> Iterator[Path]:
    """A root-owned 0755 directory under /tmp that `nobody` can traverse (tmp_path cannot)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to an unprivileged user")
    path = Path(tempfile.mkdtemp(prefix="gm-perm-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)


def run_as_nobody(*args: str, env_dir: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real CLI as `nobody` (tests/support/unprivileged.py)."""
    env = {"GRAYMATTER_DIR": str(env_dir)} if env_dir is not None else None
    return cli_as_nobody(*args, env=env)


def assert_clear_error(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode == 1, (done.returncode, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("graymatter-tui: error:")
    assert needle in lines[0]
    assert "Traceback" not in done.stderr


def test_root_owned_0700_data_dir_via_environment(public_tmp: Path) -> None:
    data = public_tmp / "data"
    make_store(data, 2)
    before = digest(data / "data.mdb")
    # Reading needs to list and enter the directory; writing needs that and more.
    cases = (
        (("list",), "is not readable by this user"),
        (("remember", "a", "x"), "is not readable and writable by this user"),
        (("status", "--json"), "is not readable by this user"),
    )
    answers = cli_batch_as_nobody(
        [(args, None) for args, _ in cases], env={"GRAYMATTER_DIR": str(data)}
    )
    for done, (_args, needle) in zip(answers, cases, strict=True):
        assert_clear_error(done, needle)
        assert done.stdout == ""
    assert digest(data / "data.mdb") == before


def test_root_owned_read_only_data_dir(public_tmp: Path) -> None:
    data = public_tmp / "ro"
    make_store(data, 2)
    data.chmod(0o755)  # readable and searchable by nobody, not writable
    for name in ("data.mdb", "lock.mdb"):
        (data / name).chmod(0o644)
    before = digest(data / "data.mdb")
    done = run_as_nobody("--dir", str(data), "remember", "a", "x")
    assert_clear_error(done, "is read-only for this user (its directory is not writable)")
    assert digest(data / "data.mdb") == before


def test_root_owned_0700_data_dir_via_dir_flag(public_tmp: Path) -> None:
    data = public_tmp / "data"
    make_store(data, 2)
    done = run_as_nobody("list", "--dir", str(data))
    assert_clear_error(done, f"data dir {data} is not readable by this user")
    assert done.stdout == ""


def test_data_dir_under_an_unsearchable_parent(public_tmp: Path) -> None:
    parent = public_tmp / "private"
    parent.mkdir(mode=0o700)
    done = run_as_nobody("list", env_dir=parent / "data")
    assert_clear_error(done, str(parent / "data"))
