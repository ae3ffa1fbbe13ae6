"""Handing back the store's mapped pages after a long read loses nothing: the next read
sees the same bytes, and writes go on as before.

LMDB only: the mapped pages are LMDB's.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore, mapped_pages
from graymatter_tui.backends.lmdb.files import DATA_FILE
from graymatter_tui.storage import NewFact


def resident_file_kb() -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("RssFile:"):
            return int(line.split()[1])
    raise AssertionError("no RssFile line")


@pytest.mark.skipif(sys.platform != "linux", reason="madvise on the map is Linux-only")
def test_released_pages_read_back_the_same(tmp_path: Path) -> None:
    store = LmdbStore.open(tmp_path / "store")
    try:
        store.put_many(NewFact("agent", f"fact {i} " + "x" * 400) for i in range(5000))
        before = store.texts("agent")
        resident = resident_file_kb()
        assert mapped_pages.release(store.path / DATA_FILE) > 0
        assert resident_file_kb() < resident  # the rows' pages left this process
        assert store.texts("agent") == before
        store.put("agent", "written after the release")
        assert store.texts("agent", limit=1)[1] == ["written after the release"]
        store.release_mapped_pages()
        assert store.texts("agent", before=before[0][0], limit=2) == (
            before[0][1:3],
            before[1][1:3],
        )
    finally:
        store.close()


def test_a_file_not_mapped_is_left_alone(tmp_path: Path) -> None:
    assert mapped_pages.release(tmp_path / "nothing.mdb") == 0
