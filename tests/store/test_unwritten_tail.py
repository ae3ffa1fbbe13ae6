"""A healthy store whose header counts pages at the end of the file that LMDB never wrote.

`tests/fixtures/unwritten-tail/data.mdb` was written by a development build through the
public API (150 facts, then 400 more deleted again): LMDB recorded 819,200 bytes of pages
in its header and wrote 811,008. An earlier file check called such a store truncated and
refuses to open it, telling the user to restore a backup. No table refers to those pages,
so it should open and read whole; a file cut short must still be refused.

Telling the two apart needs a check that every page the tables *and LMDB's free list*
refer to lies inside the file (`store/page_walk.py`). Walking the tables through LMDB is
not enough: cutting only the last page of a healthy store leaves every table readable, yet
the next write dies with SIGBUS on the free list's page.

LMDB only: an LMDB file.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.files import check_data_file
from graymatter_tui.core.errors import StoreError

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "unwritten-tail"

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(FIXTURE, target)
    return target


def _header_needs(path: Path) -> int:
    import struct

    raw = (path / "data.mdb").read_bytes()[:8192]
    metas = [struct.unpack_from("<II8xQI92xQQ", raw, off + 16) for off in (0, 4096)]
    newest = max(metas, key=lambda m: m[5])
    return (newest[4] + 1) * newest[3]


def test_the_fixture_really_is_shorter_than_its_header(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert os.path.getsize(path / "data.mdb") < _header_needs(path)


def test_a_store_with_unwritten_tail_pages_opens_and_reads_whole(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert check_data_file(path) is True
    with LmdbStore.open(path) as store:
        assert len(store.list_facts("a", "all")) == 150
        assert store.list_facts("b", "all") == []
        store.put("a", "written after the reopen")
    with LmdbStore.open(path, read_only=True) as store:
        assert len(store.list_facts("a")) == 151


def test_a_store_cut_short_is_still_refused(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    data = path / "data.mdb"
    with open(data, "r+b") as fh:
        fh.truncate(os.path.getsize(data) // 2)
    with pytest.raises(StoreError, match="truncated"):
        check_data_file(path)


_OPEN_READ_WRITE = """
import sys
from pathlib import Path
from graymatter_tui.core.errors import StoreError
from graymatter_tui.backends.lmdb import LmdbStore
path, expected = Path(sys.argv[1]), int(sys.argv[2])
try:
    store = LmdbStore.open(path)
except StoreError as exc:
    print("refused", exc)
    raise SystemExit(0)
with store:
    assert len(store.list_facts("a", "all")) == expected
    store.put("a", "written after the cut")
with LmdbStore.open(path, read_only=True) as store:
    assert len(store.list_facts("a", "all")) == expected + 1
print("opened")
"""


def test_every_cut_at_the_end_is_refused_or_harmless(tmp_path: Path) -> None:
    """Cut a store with a busy free list one page at a time from its end: each cut must be
    refused, or open, read every fact and take a write (in a child, so a SIGBUS shows as
    a crash instead of killing the test run)."""
    import subprocess
    import sys

    healthy = tmp_path / "healthy"
    with LmdbStore.open(healthy) as store:
        facts = [store.put("a", f"fact number {n} " + "x" * (n % 300)) for n in range(300)]
        store.delete(f.id for f in facts[100:])
    size = os.path.getsize(healthy / "data.mdb")
    verdicts = []
    for pages in range(1, 9):
        cut = tmp_path / f"cut-{pages}"
        shutil.copytree(healthy, cut)
        os.truncate(cut / "data.mdb", size - pages * 4096)
        child = subprocess.run(
            [sys.executable, "-c", _OPEN_READ_WRITE, str(cut), "100"],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert child.returncode == 0, (pages, child.returncode, child.stderr[-2000:])
        verdicts.append(child.stdout.split()[0])
    assert "refused" in verdicts, verdicts


def test_a_page_that_is_not_what_its_parent_says_is_refused_as_damaged(tmp_path: Path) -> None:
    import struct

    path = _copy(tmp_path)
    data = path / "data.mdb"
    raw = data.read_bytes()
    metas = [struct.unpack_from("<II8xQI92xQQ", raw, off + 16) for off in (0, 4096)]
    newest_at = 0 if metas[0][5] > metas[1][5] else 4096
    main_root = struct.unpack_from("<Q", raw, newest_at + 128)[0]
    with open(data, "r+b") as fh:
        fh.seek(main_root * 4096)
        fh.write(struct.pack("<Q", main_root + 1))
    with pytest.raises(StoreError, match="damaged"):
        check_data_file(path)
