"""Filtering a list long enough to be searched in a worker gives exactly the matches a
plain casefolded scan gives, in the same order, and the cursor keeps its fact."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.screens.facts import BACKGROUND_FILTER, FIRST_MATCHES
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.tui.helpers import make_app, running, static_text, wait_until

AGENT = "bulk"
COUNT = BACKGROUND_FILTER + 1500
WORDS = ["Straße", "STRASSE", "naïve", "Ünïcode", "plain"]


def fact_rows(app: object) -> FactRows:
    source = app.query_one("#fact-list").source  # type: ignore[attr-defined]
    assert isinstance(source, FactRows)
    return source


async def test_a_worker_search_equals_a_plain_scan(empty_store: LmdbStore) -> None:
    empty_store.put_many(
        NewFact(AGENT, f"entry {i} {WORDS[i % len(WORDS)]} {'rare' if i % 997 == 0 else ''}")
        for i in range(COUNT)
    )
    ids, texts = empty_store.texts(AGENT)
    app = make_app(empty_store, agent=AGENT)
    async with running(app) as pilot:
        await pilot.press("slash")
        for query in ["strasse", "strasse 1", "RARE", "ünï"]:
            await pilot.press("ctrl+a", "ctrl+k", *query)  # type: ignore[arg-type]
            expected = [
                i for i, t in zip(ids, texts, strict=True) if query.casefold() in t.casefold()
            ]
            assert len(expected) != FIRST_MATCHES
            done = f"{len(expected)} of {COUNT} "
            await wait_until(
                pilot,
                lambda done=done: static_text(app, "#facts-info").startswith(done),  # type: ignore[misc]
                timeout=60,
                what=f"every match of {query!r}",
            )
            assert list(fact_rows(app).ids) == expected, query
