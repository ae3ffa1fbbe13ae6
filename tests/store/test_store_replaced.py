"""A store whose files are deleted, moved away or replaced while it is open stops writing
and says so, instead of "saving" into files no one will ever read again.

LMDB only: the files of an LMDB store.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import StoreError
from tests.conftest import FIXED_NOW, clean_env, run_graymatter

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

GONE = "were deleted or replaced while open; nothing was written"


def facts_at(path: Path) -> list[str]:
    """Texts of every fact at `path`, read by the real CLI in another process."""
    done = run_graymatter("--dir", str(path), "list", "--state", "all", "--json")
    assert done.returncode == 0, done.stderr
    return sorted(f["text"] for f in json.loads(done.stdout))


def _delete(path: Path, aside: Path) -> None:
    shutil.rmtree(path)


def _move_away(path: Path, aside: Path) -> None:
    path.rename(aside)


def _replace_with_another_store(path: Path, aside: Path) -> None:
    path.rename(aside)
    done = run_graymatter("--dir", str(path), "remember", "other", "the new store's own fact")
    assert done.returncode == 0, done.stderr


def _delete_the_lock_file(path: Path, aside: Path) -> None:
    (path / "lock.mdb").unlink()


def _replace_data_file(path: Path, aside: Path) -> None:
    aside.mkdir()
    shutil.copy2(path / "data.mdb", aside / "data.mdb")
    os.replace(aside / "data.mdb", path / "data.mdb")


CHANGES: dict[str, Callable[[Path, Path], None]] = {
    "deleted": _delete,
    "moved away": _move_away,
    "replaced by another store": _replace_with_another_store,
    "lock.mdb deleted": _delete_the_lock_file,
    "data.mdb replaced by a copy": _replace_data_file,
}


@pytest.mark.parametrize("change", list(CHANGES))
def test_writes_and_polls_stop_when_the_files_change_under_the_store(
    tmp_path: Path, change: str
) -> None:
    path, aside = tmp_path / "store", tmp_path / "aside"
    store = LmdbStore.open(path)
    try:
        store.put("agent", "written before")
        generation = store.generation()
        CHANGES[change](path, aside)
        after = facts_at(path) if (path / "data.mdb").exists() else None

        for attempt in (
            lambda: store.put("agent", "written after"),
            lambda: store.pin(store.list_facts("agent")[0].id),
            store.generation,
        ):
            with pytest.raises(StoreError) as caught:
                attempt()
            assert GONE in str(caught.value) and str(path) in str(caught.value)
            assert "reopen" in str(caught.value)
        assert generation > 0
    finally:
        store.close()
    # nothing was written anywhere: not at the path, not into the files moved aside
    if after is None:
        assert not (path / "data.mdb").exists()
    else:
        assert facts_at(path) == after
    if (aside / "data.mdb").exists() and change != "data.mdb replaced by a copy":
        assert facts_at(aside) == ["written before"]


def test_a_store_moved_away_and_back_keeps_working(tmp_path: Path) -> None:
    path, aside = tmp_path / "store", tmp_path / "aside"
    with LmdbStore.open(path) as store:
        store.put("agent", "one")
        path.rename(aside)
        aside.rename(path)
        store.put("agent", "two")  # the same files again: no false alarm
        assert sorted(f.text for f in store.list_facts("agent")) == ["one", "two"]


def _waiting_on_stdin(pid: int) -> bool:
    """True once the process blocks reading fd 0 (it has opened the store by then)."""
    try:
        fields = Path(f"/proc/{pid}/syscall").read_text().split()
    except OSError:
        return False
    # read(2) is syscall 0 on x86-64 and 63 on arm64; its first argument is the fd
    return len(fields) > 1 and fields[0] in ("0", "63") and int(fields[1], 16) == 0


@pytest.mark.parametrize("change", ["deleted", "replaced by another store"])
def test_a_cli_process_whose_store_goes_away_writes_nothing(tmp_path: Path, change: str) -> None:
    path, aside = tmp_path / "store", tmp_path / "aside"
    with LmdbStore.open(path) as store:
        store.put("agent", "written before")
    proc = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "--dir", str(path), "remember", "agent", "-"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=clean_env({"GRAYMATTER_NOW": FIXED_NOW}),
    )
    try:
        deadline = time.monotonic() + 60
        while not _waiting_on_stdin(proc.pid):
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"the CLI never waited on stdin: {proc.communicate()}")
            time.sleep(0.02)
        CHANGES[change](path, aside)
        out, err = proc.communicate(b"written after", timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, (out, err)
    lines = err.decode().strip().splitlines()
    assert len(lines) == 1 and GONE in lines[0] and "Traceback" not in lines[0], err
    assert out == b""
    if change == "deleted":
        assert not path.exists()
    else:
        assert facts_at(path) == ["the new store's own fact"]
        assert facts_at(aside) == ["written before"]
