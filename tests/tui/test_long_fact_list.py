"""A long fact list reloads its newest page first; once every id is back, the cursor is
on the fact it was on, even one beyond that first page."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.screens.facts import FIRST_PAGE
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.tui.helpers import make_app, running, static_text, wait_until

AGENT = "bulk"
COUNT = FIRST_PAGE * 2 + 123


def fact_rows(app: object) -> FactRows:
    source = app.query_one("#fact-list").source  # type: ignore[attr-defined]
    assert isinstance(source, FactRows)
    return source


async def test_the_cursor_keeps_its_fact_beyond_the_first_page(empty_store: LmdbStore) -> None:
    empty_store.put_many(NewFact(AGENT, f"bulk fact {i}") for i in range(COUNT))
    app = make_app(empty_store, agent=AGENT)
    async with running(app) as pilot:
        await wait_until(pilot, lambda: len(fact_rows(app)) == COUNT, timeout=30, what="ids")
        fact_list = app.query_one("#fact-list")
        fact_list.focus()
        await pilot.press("end", "up")
        await pilot.pause()
        row = COUNT - 2
        assert row >= FIRST_PAGE
        kept = fact_rows(app).fact(row)
        assert kept is not None
        empty_store.put(AGENT, "a fact written by another process")
        await wait_until(
            pilot,
            lambda: static_text(app, "#facts-info").startswith(f"{COUNT + 1} live"),
            timeout=30,
            what="the reload with every id",
        )
        cursor = fact_list.cursor  # type: ignore[attr-defined]
        assert fact_rows(app).fact(cursor).id == kept.id  # type: ignore[union-attr]
        assert cursor == row + 1
