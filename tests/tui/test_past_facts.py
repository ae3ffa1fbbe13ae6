"""The Facts tab as it stood before a chosen cycle: from the Journal, `enter` replays a
cycle and `b` shows the agent's facts just before it (or `b` straight from the Journal
table), marked as the past, each with what a later cycle, revert or revision did to it,
naming the record; `c` keeps only the facts changed since; `esc` returns to now. The set
shown is the one the store listed as live when it was saved just before the cycle."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.tui.screens.journal import CycleDiffScreen
from graymatter_tui.tui.screens.past_facts import PastFactsScreen, PastRows
from graymatter_tui.tui.widgets.virtual_list import VirtualList
from tests.support.clock import ManualClock
from tests.tui.helpers import FIXED, OPS, make_app, running, screen_text, settle, static_text
from tests.tui.test_journal import move_to


class Told:
    """A demo store taken through a cycle, its revert and a revision, a minute apart,
    with the ops agent's live facts saved before each."""

    def __init__(self, store: LmdbStore, tick: ManualClock) -> None:
        self.store = store
        self.before_cycle = {f.id for f in store.list_facts(OPS)}
        tick.advance(minutes=1)
        self.cycle = Cycle(store, OPS, LocalSummariser()).run_sync()
        assert self.cycle.outcome == "applied", self.cycle.reason
        tick.advance(minutes=1)
        self.before_revert = {f.id for f in store.list_facts(OPS)}
        self.revert = store.revert(self.cycle.cycle_id)
        tick.advance(minutes=1)
        kept = next(f for f in store.list_facts(OPS) if not f.pinned)
        self.revised_id = kept.id
        self.revision, _ = store.revise(kept.id, kept.text + " (checked again)")


@pytest.fixture
def told(store_path: Path) -> Iterator[Told]:
    tick = ManualClock(FIXED - timedelta(minutes=10))
    store = LmdbStore.open(store_path, clock_fn=tick)
    try:
        create_demo(store)
        yield Told(store, tick)
    finally:
        store.close()


def shown(app: Any) -> PastRows:
    source = app.screen.query_one("#past-list", VirtualList).source
    assert isinstance(source, PastRows)
    return source


async def open_past(pilot: Any, record_id: str, *, via_replay: bool) -> None:
    await pilot.press("4")
    await settle(pilot)
    await move_to(pilot, record_id)
    if via_replay:
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(pilot.app.screen, CycleDiffScreen)
    await pilot.press("b")
    await settle(pilot)
    assert isinstance(pilot.app.screen, PastFactsScreen)


async def test_enter_then_b_shows_the_facts_live_just_before_the_cycle(told: Told) -> None:
    cycle = told.cycle
    app = make_app(told.store)
    async with running(app) as pilot:
        await open_past(pilot, cycle.cycle_id, via_replay=True)
        rows = shown(app)
        ids = {p.fact_id for p in rows.past.facts}
        assert ids == told.before_cycle  # as the store listed them then
        assert cycle.summary_id not in ids
        info = static_text(app, "#past-info")
        assert f"just before cycle {cycle.cycle_id} of {OPS}" in info
        assert f"{len(told.before_cycle)} facts live then, 3 changed since" in info
        text = screen_text(app)
        assert "PAST" in text and "esc returns to now" in text

        await pilot.press("c")  # only what changed since: the consumed pair and the revised
        await settle(pilot)
        changed = {p.fact_id for p in shown(app).past.facts}
        assert changed == {*cycle.consumed, told.revised_id}
        assert "(only those shown: c shows all)" in static_text(app, "#past-info")
        lines = screen_text(app)
        assert f"consumed by cycle …{cycle.cycle_id[-6:]} (+1 later)" in lines
        first = shown(app).past.facts[0]
        detail = static_text(app, "#past-detail")
        if first.fact_id in cycle.consumed:
            assert f"consumed by cycle {cycle.cycle_id} into summary {cycle.summary_id}" in detail
            assert f"live again: revert {told.revert.cycle_id}" in detail
        else:
            assert f"revised into {told.revision.id}" in detail

        await pilot.press("escape")  # back to the replay, then to now
        await settle(pilot)
        assert isinstance(app.screen, CycleDiffScreen)
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, (CycleDiffScreen, PastFactsScreen))


async def test_b_on_the_journal_shows_the_facts_before_the_revert(told: Told) -> None:
    summary = told.cycle.summary_id
    app = make_app(told.store)
    async with running(app) as pilot:
        await open_past(pilot, told.revert.cycle_id, via_replay=False)
        past = shown(app).past
        assert {p.fact_id for p in past.facts} == told.before_revert
        item = next(p for p in past.facts if p.fact_id == summary)
        assert item.now == "tombstone"
        assert [(e.how, e.record) for e in item.later] == [("retired", told.revert.cycle_id)]
        assert f"just before revert {told.revert.cycle_id}" in static_text(app, "#past-info")
        await pilot.press("escape")
        await settle(pilot)
        assert not isinstance(app.screen, PastFactsScreen)


@pytest.mark.parametrize("size", [(80, 24), (200, 60)])
async def test_the_columns_line_up_and_the_counts_come_first_at_any_width(
    told: Told, size: tuple[int, int]
) -> None:
    app = make_app(told.store)
    async with running(app, size=size) as pilot:
        await open_past(pilot, told.cycle.cycle_id, via_replay=True)
        await pilot.press("c")
        await settle(pilot)
        lines = screen_text(app).splitlines()
        header = next(line for line in lines if "text, as it was live then" in line)
        changed = [line for line in lines if "→ " in line]
        assert len(changed) == 3
        assert all(line.index("→") == header.index("since") for line in changed), lines
        info = next(line for line in lines if "live then," in line)
        assert f"{len(told.before_cycle)} facts live then, 3 changed since" in info
