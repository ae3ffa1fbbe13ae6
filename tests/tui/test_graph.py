"""The Graph tab on real stores: entities with their live counts, filtering, the facts
that mention one (each opening its detail and receipt chain), neighbours, a write from
another process, empty states, and stored text shown literally."""

from __future__ import annotations

import time
from collections import Counter

from textual.pilot import Pilot
from textual.widgets import Input, Static

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.core.entities import extract_entities
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.screens.graph import (
    NO_ENTITIES,
    NO_ENTITIES_SAID,
    NO_FACTS,
    NO_FACTS_SAID,
    REREAD_SECONDS,
    GraphPane,
)
from graymatter_tui.tui.screens.help import HelpScreen
from graymatter_tui.tui.widgets.entity_rows import EntityRows
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.tui.helpers import (
    OPS,
    make_app,
    modal_text,
    press_each,
    remember_elsewhere,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)


def live_counts(store: LmdbStore, agent: str) -> Counter[str]:
    """How many live facts of `agent` mention each entity id, extracted here."""
    counts: Counter[str] = Counter()
    for fact in store.list_facts(agent):
        counts.update(e.id for e in extract_entities(fact.text))
    return counts


def pane(app: GraymatterApp) -> GraphPane:
    return app.query_one("#graph-pane", GraphPane)


def listed(app: GraymatterApp, selector: str = "#entity-list") -> list[tuple[str, str, int]]:
    """(id, label, count) of every row of an entity list."""
    source = app.query_one(selector).source  # type: ignore[attr-defined]
    assert isinstance(source, EntityRows)
    rows = [source.entity(i) for i in range(len(source))]
    return [(e.id, e.label, e.facts) for e in rows if e is not None]


def shown_fact_ids(app: GraymatterApp) -> list[str]:
    source = app.query_one("#entity-facts").source  # type: ignore[attr-defined]
    assert isinstance(source, FactRows)
    return list(source.ids)


async def show_graph(pilot: Pilot[None]) -> GraphPane:
    await pilot.press("8")
    await settle(pilot)
    app = pilot.app
    assert isinstance(app, GraymatterApp)
    shown = pane(app)
    await wait_until(pilot, lambda: shown._index is not None, what="the entities read")
    await settle(pilot)
    return shown


async def filter_for(pilot: Pilot[None], text: str) -> None:
    await pilot.press("slash")
    await press_each(pilot, *("space" if c == " " else c for c in text))
    await pilot.press("enter")  # back to the list
    await settle(pilot)


async def test_the_tab_lists_every_entity_with_its_live_count(demo_store: LmdbStore) -> None:
    expected = live_counts(demo_store, OPS)
    assert expected  # the demo's facts name people, emails, URLs, incidents
    app = make_app(demo_store)
    async with running(app) as pilot:
        await show_graph(pilot)
        rows = listed(app)
        assert {entity_id: count for entity_id, _label, count in rows} == dict(expected)
        counts = [count for _id, _label, count in rows]
        assert counts == sorted(counts, reverse=True)  # most mentioned first
        _top_id, top_label, top_count = rows[0]
        assert f"{top_count}" in screen_text(app) and top_label in screen_text(app)
        assert f"{len(rows)} entities · {len(demo_store.list_facts(OPS))} live facts" in (
            static_text(app, "#graph-info")
        )


async def test_filtering_narrows_the_list_as_you_type(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await show_graph(pilot)
        everything = listed(app)
        await filter_for(pilot, "example")
        narrowed = listed(app)
        assert narrowed == [row for row in everything if "example" in row[1].casefold()]
        assert 0 < len(narrowed) < len(everything)
        assert f"{len(narrowed)} of {len(everything)} entities" in static_text(app, "#graph-info")
        await filter_for(pilot, "zzzz")  # the filter's text is selected on focus: replaced
        assert listed(app) == []
        assert "No entity matches “zzzz”." in screen_text(app)


async def test_enter_lists_the_facts_and_a_fact_opens_with_its_receipts(
    demo_store: LmdbStore,
) -> None:
    record = await Cycle(demo_store, OPS, LocalSummariser()).run()
    assert record.outcome == "applied"
    # A summary the cycle wrote, and an entity it names.
    summary = next(f for f in demo_store.list_facts(OPS) if demo_store.receipts(f.id))
    entity = extract_entities(summary.text)[0]
    mentioning = [
        f.id
        for f in demo_store.list_facts(OPS)
        if entity.id in {e.id for e in extract_entities(f.text)}
    ]
    app = make_app(demo_store)
    async with running(app) as pilot:
        shown = await show_graph(pilot)
        await filter_for(pilot, entity.label)
        assert listed(app)[0][0] == entity.id
        await press_each(pilot, "enter")
        assert shown.entity is not None and shown.entity.id == entity.id
        assert shown_fact_ids(app) == mentioning  # newest first, as the Facts tab lists
        assert f"mention {entity.label}" in static_text(app, "#entity-title")
        assert app.focused is shown.fact_list
        shown.fact_list.cursor = mentioning.index(summary.id)
        await press_each(pilot, "enter")
        assert isinstance(app.screen, FactDetailScreen)
        await wait_until(pilot, lambda: "consumed" in modal_text(app), what="the receipts")
        consumed = demo_store.receipts(summary.id)
        assert f"Receipt chain ({len(consumed)} consumed)" in modal_text(app)
        await press_each(pilot, "escape")
        assert app.focused is shown.fact_list  # back where the person was


async def test_selecting_a_neighbour_moves_to_it_and_b_goes_back(demo_store: LmdbStore) -> None:
    counts = live_counts(demo_store, OPS)
    app = make_app(demo_store)
    async with running(app) as pilot:
        shown = await show_graph(pilot)
        mentions = [{e.id for e in extract_entities(f.text)} for f in demo_store.list_facts(OPS)]
        start = next(
            row for row in listed(app) if any(row[0] in m and len(m) > 1 for m in mentions)
        )
        shown.entity_list.cursor = listed(app).index(start)
        await press_each(pilot, "enter")
        together = Counter[str]()
        for ids in mentions:
            if start[0] in ids:
                together.update(ids - {start[0]})
        neighbours = listed(app, "#entity-neighbours")
        assert {i: n for i, _label, n in neighbours} == dict(together)
        assert [n for _i, _label, n in neighbours] == sorted(together.values(), reverse=True)
        target = neighbours[0]
        await press_each(pilot, "tab", "enter")  # the facts list, then the neighbours
        assert app.focused is shown.neighbour_list
        assert shown.entity is not None and shown.entity.id == target[0]
        cursor = shown.cursor_entity()
        assert cursor is not None and cursor.id == target[0]  # the list moved to it
        assert shown.entity.facts == counts[target[0]]  # its own count, not the shared one
        assert f"mention {target[1]}" in static_text(app, "#entity-title")
        await press_each(pilot, "b")
        assert shown.entity is not None and shown.entity.id == start[0]
        back = shown.cursor_entity()
        assert back is not None and back.id == start[0]


async def test_a_neighbour_hidden_by_the_filter_is_still_reached(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        shown = await show_graph(pilot)
        await filter_for(pilot, "chen wei")
        assert [row[1] for row in listed(app)] == ["Chen Wei"]
        await press_each(pilot, "enter", "tab", "enter")
        assert shown.entity is not None and shown.entity.id == "email:chen@example.com"
        assert app.query_one("#graph-filter", Input).value == ""  # the filter made way
        cursor = shown.cursor_entity()
        assert cursor is not None and cursor.id == "email:chen@example.com"


async def test_a_write_from_another_process_shows_up(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        shown = await show_graph(pilot)
        await filter_for(pilot, "chen wei")
        await press_each(pilot, "enter")
        before = shown_fact_ids(app)
        new_id, _err = await remember_elsewhere(
            OPS, "Chen Wei hands INC-9911 to Zora Quist tomorrow.", "--dir", str(demo_store.path)
        )
        await wait_until(
            pilot,
            lambda: shown_fact_ids(app)[:1] == [new_id],
            timeout=30.0,
            what="the watch to bring the other process's fact",
        )
        assert shown_fact_ids(app)[1:] == before
        assert shown.entity is not None and shown.entity.facts == len(before) + 1
        assert "name:zora quist" in {row[0] for row in listed(app, "#entity-neighbours")}
        await press_each(pilot, "slash", "backspace", "enter")  # every entity again
        assert ("name:zora quist", "Zora Quist", 1) in listed(app)


async def test_an_empty_store_says_so(empty_store: LmdbStore) -> None:
    app = make_app(empty_store, agent=None)
    async with running(app) as pilot:
        await show_graph(pilot)
        assert listed(app) == []
        assert NO_FACTS in screen_text(app)
        assert NO_FACTS_SAID in static_text(app, "#entity-title")


async def test_an_agent_without_entities_says_so(empty_store: LmdbStore) -> None:
    empty_store.put("plain-agent", "the garden needs water on dry days")
    app = make_app(empty_store, agent="plain-agent")
    async with running(app, size=(200, 60)) as pilot:
        await show_graph(pilot)
        assert listed(app) == []
        assert NO_ENTITIES in screen_text(app)
        assert NO_ENTITIES_SAID in static_text(app, "#entity-title")
        assert "0 entities · 1 live fact" in static_text(app, "#graph-info")


async def test_stored_text_is_shown_literally(empty_store: LmdbStore) -> None:
    empty_store.put("inject-agent", "See https://evil.example/\x1b[2J[b]x\u202e now")
    app = make_app(empty_store, agent="inject-agent")
    async with running(app) as pilot:
        await show_graph(pilot)
        (entity,) = listed(app)
        text = screen_text(app)
        assert "\x1b" not in text
        assert "https://evil.example/␛[2J[b" in text  # "[b" is no markup: shown as typed
        await press_each(pilot, "enter")
        title = app.query_one("#entity-title", Static).content
        assert "mention https://evil.example/␛[2J[b" in str(title)
        assert entity[0].startswith("url:")


async def test_the_help_screen_and_key_bar_list_the_graph_keys(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await show_graph(pilot)
        bar = screen_text(app).splitlines()[-1]
        assert "/ Filter" in bar and "b Previous" in bar
        await press_each(pilot, "question_mark")
        assert isinstance(app.screen, HelpScreen)
        rows = dict(app.screen.sections)["Graph"]
        assert ("/", "Filter") in rows and ("b", "Previous") in rows
        assert ("enter", "Neighbour: go to it") in rows
        assert ("enter", "Fact: open it and its receipt chain") in rows
        assert "Graph" in modal_text(app)


async def test_a_store_that_keeps_moving_is_read_again_at_most_every_few_seconds(
    demo_store: LmdbStore,
) -> None:
    """A write every 0.1 s for 3 s (as the background embedder's batches come): the tab
    is drawn again at most once per REREAD_SECONDS, never once per write, and the last
    write is in what it shows at the end."""
    app = make_app(demo_store, poll_seconds=0.1)
    async with running(app) as pilot:
        shown = await show_graph(pilot)
        drawn = [shown._index]
        began = time.monotonic()
        for number in range(30):
            demo_store.put(OPS, f"Moving note {number} for Quinn Ashdown.")
            await pilot.pause(0.1)
            if shown._index is not drawn[-1]:
                drawn.append(shown._index)
        await wait_until(
            pilot,
            lambda: ("name:quinn ashdown", "Quinn Ashdown", 30) in listed(app),
            what="the last write drawn",
        )
        elapsed = time.monotonic() - began  # 3 s, or more on a loaded machine
        redraws = len(drawn) - 1
        assert 1 <= redraws <= elapsed / REREAD_SECONDS + 1, (redraws, elapsed)
