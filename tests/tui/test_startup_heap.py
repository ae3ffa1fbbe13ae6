"""The app keeps its start-up objects out of the collector's full passes while it runs
(tui/heap.py, ADR 0068), makes the full passes itself at quiet moments (ADR 0077), and
gives both back when it ends; memory it frees goes back to the system."""

from __future__ import annotations

import gc
import json
import platform
import subprocess
import sys

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.heap import QuietCollector
from tests.tui.helpers import first_read, make_app, running, wait_until


async def test_the_start_up_heap_is_frozen_while_the_app_runs_and_thawed_after(
    demo_store: LmdbStore,
) -> None:
    assert gc.get_freeze_count() == 0
    app = make_app(demo_store)
    async with running(app) as pilot:
        await first_read(pilot)
        await wait_until(pilot, lambda: gc.get_freeze_count() > 0)
        frozen = gc.get_freeze_count()
        assert frozen > 10_000  # Textual's widgets, styles and the modules loaded
        pane = app.query_one("#facts-pane")
        # Frozen, so in no generation a full pass walks, and a full pass keeps it so.
        assert all(obj is not pane for obj in gc.get_objects(generation=2))
        gc.collect()
        assert all(obj is not pane for obj in gc.get_objects(generation=2))
        # A full pass thaws nothing; a frozen object whose last reference goes (a worker's
        # frame, a timer's handle) still leaves the frozen set, so the count may dip.
        assert gc.get_freeze_count() > frozen * 0.9
    assert gc.get_freeze_count() == 0


async def test_full_passes_are_the_apps_own_while_it_runs(demo_store: LmdbStore) -> None:
    found = gc.get_threshold()
    app = make_app(demo_store)
    async with running(app) as pilot:
        await first_read(pilot)
        assert gc.get_threshold()[2] == QuietCollector.NEVER  # from the app's start
        await wait_until(pilot, lambda: app.quiet_collector.running)
        # Young collections as a person's typing makes them; the loop is quiet between.
        for _ in range(QuietCollector().due):
            gc.collect(1)
        await wait_until(pilot, lambda: app.quiet_collector.passes > 0)
    assert not app.quiet_collector.running
    assert gc.get_threshold() == found


# A fresh interpreter, so the heap holds only what the script frees: 64 MB in 2 KiB
# objects (past Python's own small-object allocator), one kept after them so the C
# allocator cannot give the freed pages back by shrinking its heap's end.
FREED_SCRIPT = """
import json
from graymatter_tui.core.c_heap import return_free_pages

def anon_mb():
    for line in open("/proc/self/status"):
        if line.startswith("RssAnon:"):
            return int(line.split()[1]) / 1024

chunks = [bytes(2048 - 33) + str(i).encode() for i in range(32_768)]
kept = bytes(2048 - 33) + b"kept"
del chunks
before = anon_mb()
returned = return_free_pages()
print(json.dumps({"before": before, "after": anon_mb(), "returned": returned}))
"""


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or platform.libc_ver()[0] != "glibc",
    reason="malloc_trim is glibc's",
)
def test_freed_memory_goes_back_to_the_system() -> None:
    done = subprocess.run(
        [sys.executable, "-c", FREED_SCRIPT], capture_output=True, text=True, check=True
    )
    got = json.loads(done.stdout)
    assert got["returned"] is True
    assert got["before"] - got["after"] >= 40, got  # of the 64 MB freed
