"""A pane whose inputs change faster than it can read the store is still drawn: the store
moving lets the read in flight finish (it is only older) and reads again after; what the
app knows without the store (what its embedder is doing) is drawn from the last read.
Before, each change superseded the read in flight, and the Status tab stayed blank for as
long as the model embedded quickly (1.5 s at 100k facts)."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from tests.tui.helpers import OPS, make_app, running, screen_text, wait_until


@pytest.fixture
def store_of_20k(store: LmdbStore) -> LmdbStore:
    """Enough facts that the Status tab's read (~8 ms alone) outlasts a millisecond."""
    store.put_many(NewFact(OPS, f"note {n} about the staging port") for n in range(20_000))
    return store


@asynccontextmanager
async def changing(change: Callable[[int], None]) -> AsyncIterator[list[int]]:
    """`change(n)` for n = 1, 2, … every millisecond on the app's loop, for the block;
    the last n given is kept in the list yielded."""
    last = [0]
    stop = asyncio.Event()

    async def run() -> None:
        while not stop.is_set():
            last[0] += 1
            change(last[0])
            await asyncio.sleep(0.001)

    task = asyncio.create_task(run())
    try:
        yield last
    finally:
        stop.set()
        await task


async def test_status_is_drawn_while_what_the_embedder_says_changes_all_the_time(
    store_of_20k: LmdbStore,
) -> None:
    app = make_app(store_of_20k)
    async with running(app) as pilot:

        def say(n: int) -> None:
            app.embedding = (f"embedding · {n} embedded since start", "")

        async with changing(say) as last:
            await pilot.press("5")
            await wait_until(pilot, lambda: "Weights of" in screen_text(app), what="drawn")
            # ... and the embedder's line follows without waiting for the store
            seen = last[0]

            def later_line_drawn() -> bool:
                shown = re.search(r"embedding · (\d+) embedded", screen_text(app))
                return shown is not None and int(shown.group(1)) > seen

            await wait_until(pilot, later_line_drawn, what="a later embedder line")


async def test_status_is_drawn_while_the_store_moves_faster_than_it_reads(
    store_of_20k: LmdbStore,
) -> None:
    app = make_app(store_of_20k)
    async with running(app) as pilot:
        start = app.vectors_generation

        def move(n: int) -> None:  # as the embedder's vector writes move it
            app.vectors_generation = start + n

        async with changing(move):
            await pilot.press("5")
            await wait_until(pilot, lambda: "Weights of" in screen_text(app), what="drawn")
