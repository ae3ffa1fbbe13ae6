"""Filtering a list long enough to be searched in a worker gives exactly the matches a
plain casefolded scan gives, in the same order, and the cursor keeps its fact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from graymatter_tui.tui.screens.facts import BACKGROUND_FILTER, FIRST_MATCHES, FactsPane
from graymatter_tui.tui.widgets.fact_rows import FactRows
from tests.tui.helpers import fixed_clock, make_app, running, static_text, wait_until

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


class CountingStore(LmdbStore):
    """The real store, counting how many times a text index starts reading (its first
    page of texts)."""

    index_reads = 0

    def texts(self, *args: Any, **kwargs: Any) -> tuple[list[str], list[str]]:
        if kwargs.get("before") is None:
            CountingStore.index_reads += 1
        return super().texts(*args, **kwargs)


def _bulk_texts(i: int) -> str:
    return f"entry {i} {WORDS[i % len(WORDS)]} {'rare' if i % 997 == 0 else ''}"


async def test_keys_typed_while_the_index_is_built_build_it_once(tmp_path: Path) -> None:
    CountingStore.index_reads = 0
    with CountingStore.open(tmp_path / "s", clock_fn=fixed_clock) as store:
        store.put_many(NewFact(AGENT, _bulk_texts(i)) for i in range(COUNT))
        expected = sum("strasse" in _bulk_texts(i).casefold() for i in range(COUNT))
        app = make_app(store, agent=AGENT)
        async with running(app) as pilot:
            await pilot.press("slash", *"strasse")  # each key before the index is ready
            done = f"{expected} of {COUNT} "
            await wait_until(
                pilot,
                lambda: static_text(app, "#facts-info").startswith(done),
                timeout=60,
                what="every match of 'strasse'",
            )
        # One index for the seven keys (each used to start a build of its own, all
        # running at once: a copy of every text per key at 1M facts).
        assert CountingStore.index_reads == 1


async def test_a_cleared_filter_keeps_no_index_and_the_next_one_finds_the_same(
    empty_store: LmdbStore,
) -> None:
    empty_store.put_many(NewFact(AGENT, _bulk_texts(i)) for i in range(COUNT))
    ids, texts = empty_store.texts(AGENT)
    expected = [i for i, t in zip(ids, texts, strict=True) if "rare" in t]
    app = make_app(empty_store, agent=AGENT)
    async with running(app) as pilot:
        pane = app.query_one("#facts-pane", FactsPane)
        for round_ in range(2):
            await pilot.press("slash", "ctrl+a", "ctrl+k", *"rare")
            done = f"{len(expected)} of {COUNT} "
            await wait_until(
                pilot,
                lambda done=done: static_text(app, "#facts-info").startswith(done),  # type: ignore[misc]
                timeout=60,
                what=f"every match of 'rare' (round {round_})",
            )
            assert list(fact_rows(app).ids) == expected
            await pilot.press("ctrl+a", "ctrl+k")
            await wait_until(
                pilot,
                lambda: static_text(app, "#facts-info").startswith(f"{COUNT} live"),
                timeout=60,
                what="the whole list again",
            )
            assert len(fact_rows(app)) == COUNT
            # Nothing of the filter is held once it is cleared: not the index of every
            # text, not the last search.
            assert pane._texts is None
            assert pane._last_match is None
