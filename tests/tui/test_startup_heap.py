"""The app keeps its start-up objects out of the collector's full passes while it runs
(tui/heap.py, ADR 0068), and gives them back when it ends."""

from __future__ import annotations

import gc

from graymatter_tui.backends.lmdb import LmdbStore
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
        assert gc.get_freeze_count() >= frozen
    assert gc.get_freeze_count() == 0
