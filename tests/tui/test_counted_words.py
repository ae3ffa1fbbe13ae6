"""The TUI counts as a person says it: "1 tombstone", "2 tombstones", on every pane of a
store holding one, then two, of each thing; the empty Review tab names the real
`mcp --review` values; and Status shows LMDB's map only for an LMDB store that exists."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from textual.widgets import TabbedContent

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.opening import open_location
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.cli.mcp import mcp
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.core.config import Settings
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.core.store_url import parse_store_url
from graymatter_tui.storage import ApplyRequest, MemoryStore, NewFact
from graymatter_tui.tui.app import TABS, GraymatterApp
from graymatter_tui.tui.screens.detail import FactDetailScreen
from tests.support.counted_words import words_ok
from tests.tui.helpers import (
    detail_fields,
    fixed_clock,
    make_app,
    open_store,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)

AGENT = "ops"
ALPHA = "The alpha cluster runs on rack {}."


def app_on_server(store: MemoryStore, url: str) -> GraymatterApp:
    """The app over the store of a PostgreSQL URL (or the empty view where it has none)."""
    settings = Settings.from_env(store=url).with_overrides(summariser="local")
    app = GraymatterApp(store=store, settings=settings, read_only=True, agent=AGENT)
    app.animation_level = "none"
    return app


def key_of(tab: str) -> str:
    return str(TABS.index(tab) + 1)


@pytest.fixture
def store(tmp_path: Path) -> Iterator[LmdbStore]:
    opened = open_store(tmp_path / "store")
    try:
        yield opened
    finally:
        opened.close()


async def fill(store: LmdbStore, n: int) -> None:
    """n of everything: n facts recalled n times (and found by "alpha"), n tombstones
    from one applied consolidation that consumed n facts, n journal records, n probes and
    n changes held for review."""
    doomed = store.put_many(NewFact(AGENT, f"Old note number {i}.") for i in range(n))
    cycle = store.unused_id(store.now())
    request = ApplyRequest(
        cycle_id=cycle,
        agent_id=AGENT,
        summary="Old notes, summarised.",
        consume=[f.id for f in doomed],
        snapshot={f.id: f.text for f in doomed},
    )
    outcome = store.apply_consolidation(request, CycleRecord(cycle_id=cycle, agent_id=AGENT))
    assert outcome.applied
    for _ in range(n - 1):  # the others: cycles without a summariser (decay and prune)
        await Cycle(store, AGENT, None, CycleOptions()).run()
    # Newest, so the Facts list opens on one of them.
    store.put_many(NewFact(AGENT, ALPHA.format(i), access_count=n) for i in range(n))
    for i in range(n):
        store.add_probe(AGENT, f"probe number {i}")
        store.hold_change(AGENT, "add", "", f"Held change number {i}.")


@pytest.mark.parametrize("n", [1, 2])
async def test_every_pane_counts_in_the_number_it_takes(store: LmdbStore, n: int) -> None:
    await fill(store, n)
    s = "" if n == 1 else "s"
    app = make_app(store, agent=AGENT)
    async with running(app) as pilot:
        # Facts, and a fact's detail: accessed n times.
        await settle(pilot)
        words_ok(screen_text(app))
        await pilot.press("enter")
        await settle(pilot)
        assert isinstance(app.screen, FactDetailScreen)
        assert f"({n} time{s})" in detail_fields(app)["accessed"]
        await pilot.press("escape")
        await settle(pilot)

        await pilot.press(key_of("tombstones"))
        await settle(pilot)
        await wait_until(pilot, lambda: static_text(app, "#tombs-info") == f"{n} tombstone{s}")
        words_ok(screen_text(app))

        await pilot.press(key_of("journal"))
        await settle(pilot)
        assert static_text(app, "#journal-info").startswith(f" {n} record{s}, newest first")
        words_ok(screen_text(app))

        await pilot.press(key_of("status"))
        await settle(pilot)
        status = words_ok(static_text(app, "#status-body"))
        assert f" · {n} tombstone{s} · " in status
        assert f"1 applied ({n} fact{s} consumed)" in status

        await pilot.press(key_of("review"))
        await settle(pilot)
        assert static_text(app, "#review-info").startswith(f" {n} held change{s} to review")
        words_ok(screen_text(app))

        await pilot.press(key_of("activity"))
        await settle(pilot)
        words_ok(screen_text(app))

        await pilot.press("R")  # recall: n facts share "alpha"
        await settle(pilot)
        await pilot.press(*"alpha", "enter")
        await settle(pilot)
        assert static_text(app, "#recall-info").startswith(f"{n} result{s} · ")
        words_ok(screen_text(app))
        await pilot.press("escape")
        await settle(pilot)

        app.action_choose_agent()  # the agent picker: live facts and tombstones
        await settle(pilot)
        assert f"({n + 1} live, {n} tombstone{s})" in words_ok(screen_text(app))


async def test_the_empty_review_tab_names_the_real_review_flags(store: LmdbStore) -> None:
    store.put(AGENT, "Nothing is held.")
    app = make_app(store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press(key_of("review"))
        await settle(pilot)
        assert app.query_one("#tabs", TabbedContent).active == "review"
        assert static_text(app, "#review-info").startswith(" Nothing held for review")
        shown = screen_text(app)
    named = re.findall(r"graymatter-tui mcp --review (\S+)", shown)
    [review] = [p for p in mcp.params if p.name == "review"]
    assert isinstance(review.type, click.Choice)
    holding = [c for c in review.type.choices if c not in ("off", "none")]
    assert sorted(named) == sorted(holding) == ["all", "curation"], shown
    assert "--review hold" not in shown


# ---- Status: LMDB's map only for an LMDB store that exists ---------------------------------
def size_row(text: str) -> str:
    [row] = [line for line in text.splitlines() if line.strip().startswith("size ")]
    return row


async def test_status_of_no_store_shows_no_map_and_creates_nothing(tmp_path: Path) -> None:
    where = tmp_path / "none"
    absent = LmdbStore.open(where, read_only=True)
    try:
        app = make_app(absent, read_only=True)
        async with running(app) as pilot:
            await pilot.press(key_of("status"))
            await settle(pilot)
            status = static_text(app, "#status-body")
    finally:
        absent.close()
    row = size_row(status)
    assert "map" not in row and "MB" not in row and "no store" in row, row
    assert "lmdb" not in status and "generation" not in status, status
    assert not where.exists()


async def test_status_of_an_lmdb_store_shows_its_map(store: LmdbStore) -> None:
    store.put(AGENT, "A fact.")
    app = make_app(store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press(key_of("status"))
        await settle(pilot)
        row = size_row(static_text(app, "#status-body"))
    assert re.search(r"MB on disk · map \d+\.\d of \d+ MB used \(\d+%; grows automatically\)", row)


async def test_status_of_postgresql_shows_no_map(pg_url: str) -> None:
    # A database without the store's tables: no store, nothing created.
    absent = open_location(parse_store_url(pg_url), read_only=True)
    assert absent.absent
    try:
        app = app_on_server(absent, pg_url)
        async with running(app) as pilot:
            await pilot.press(key_of("status"))
            await settle(pilot)
            status = static_text(app, "#status-body")
    finally:
        absent.close()
    row = size_row(status)
    assert "map" not in row and "no store" in row, row
    assert "lmdb" not in status, status

    store = PgStore.open(pg_url, clock_fn=fixed_clock)
    try:
        store.put(AGENT, "A fact.")
        app = app_on_server(store, pg_url)
        async with running(app) as pilot:
            await pilot.press(key_of("status"))
            await settle(pilot)
            status = static_text(app, "#status-body")
    finally:
        store.close()
    row = size_row(status)
    assert re.search(r"\d+\.\d MB in the database", row) and "map" not in row, row
    assert "postgresql" in status
