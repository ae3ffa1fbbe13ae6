"""A long tombstone list paints its newest page at once and reads the rest in a worker,
as the Facts list does: the tab opens without reading every id on the UI thread."""

from __future__ import annotations

from datetime import timedelta

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.clock import format_time
from graymatter_tui.core.model import RETIRED, Fact
from graymatter_tui.storage.ids import new_id
from graymatter_tui.tui.screens.facts import FIRST_PAGE
from graymatter_tui.tui.widgets.fact_rows import TombstoneRows
from tests.tui.helpers import FIXED, make_app, running, screen_text, static_text, wait_until

AGENT = "archivist"
COUNT = FIRST_PAGE * 2 + 345


def retired_facts(count: int) -> list[Fact]:
    """`count` retired facts of AGENT, oldest first (number 0 is the oldest)."""
    out = []
    for number in range(count):
        moment = FIXED - timedelta(days=1, seconds=count - number)
        stamp = format_time(moment)
        out.append(
            Fact(
                id=new_id(moment),
                agent_id=AGENT,
                text=f"retired note {number}",
                created_at=stamp,
                accessed_at=stamp,
                weight=0.5,
                superseded_by=RETIRED,
            )
        )
    return out


def tomb_source(app: object) -> TombstoneRows:
    source = app.query_one("#tomb-list").source  # type: ignore[attr-defined]
    assert isinstance(source, TombstoneRows)
    return source


async def test_a_long_tombstone_list_pages_in_and_keeps_its_cursor(empty_store: LmdbStore) -> None:
    facts = retired_facts(COUNT)
    empty_store.import_all(facts, [])
    app = make_app(empty_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press("2")
        await wait_until(pilot, lambda: bool(app.query("#tomb-list")), what="the tab mounts")
        await wait_until(pilot, lambda: len(tomb_source(app)) > 0, what="the first page")
        # The first frame has the newest page only; the count says more are coming.
        assert len(tomb_source(app)) == FIRST_PAGE
        assert static_text(app, "#tombs-info") == f"{FIRST_PAGE}+ tombstones"
        assert tomb_source(app).fact(0).text == f"retired note {COUNT - 1}"  # type: ignore[union-attr]

        await wait_until(pilot, lambda: len(tomb_source(app)) == COUNT, what="every id")
        assert static_text(app, "#tombs-info") == f"{COUNT} tombstones"
        tomb_list = app.query_one("#tomb-list")
        tomb_list.focus()
        await pilot.press("end")
        await pilot.pause()
        assert tomb_list.cursor == COUNT - 1  # type: ignore[attr-defined]
        assert "retired note 0 " in screen_text(app)  # the oldest, at the bottom

        # Put the cursor beyond the first page, then change the store from elsewhere:
        # the reload paints the first page again, and once every id is back the cursor
        # is on the same tombstone (one row further down: a newer tombstone came in).
        up = 1000  # from the oldest: row COUNT - 1 - up, beyond the first page
        assert COUNT - 1 - up >= FIRST_PAGE
        for _ in range(up):
            tomb_list.action_cursor_up()  # type: ignore[attr-defined]
        await pilot.pause()
        kept = tomb_source(app).fact(tomb_list.cursor)  # type: ignore[attr-defined]
        assert kept is not None and kept.text == f"retired note {up}"
        newest = empty_store.put(AGENT, "a fact retired just now")
        empty_store.retire(newest.id)
        await wait_until(
            pilot,
            lambda: static_text(app, "#tombs-info") == f"{COUNT + 1} tombstones",
            what="the reload with every id",
        )
        cursor = tomb_list.cursor  # type: ignore[attr-defined]
        assert tomb_source(app).fact(cursor).id == kept.id  # type: ignore[union-attr]
        assert cursor == COUNT - 1 - up + 1
        app.exit()
