"""Confidence in the Facts tab: a labelled fact's row and detail show its label (an
unlabelled one's are as they were), and the filter takes `confidence:LEVEL[,LEVEL]`
words (verified, inferred, unverified, unknown) alone or with text."""

from __future__ import annotations

import pytest
from textual.widgets import Input

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import Fact
from graymatter_tui.tui.screens.detail import FactDetailScreen
from tests.tui.helpers import (
    OPS,
    detail_fields,
    fact_rows,
    make_app,
    running,
    screen_lines,
    screen_text,
    static_text,
    visible_texts,
    wait_until,
)

SURE = "Deploys to prod need two approvals"
GUESS = "The staging cluster probably runs 1.29"
HEARD = "Someone said the VPN moves in May"


def _label(store: LmdbStore) -> dict[str, Fact]:
    return {
        "verified": store.put(OPS, SURE, confidence="verified"),
        "inferred": store.put(OPS, GUESS, confidence="inferred"),
        "unverified": store.put(OPS, HEARD, confidence="unverified"),
    }


def _row(app: object, text: str) -> str:
    found = [line for line in screen_lines(app) if text in line]  # type: ignore[arg-type]
    assert found, f"{text!r} is not on screen"
    return found[0]


async def test_rows_and_detail_show_the_label_of_a_labelled_fact_only(
    demo_store: LmdbStore,
) -> None:
    labelled = _label(demo_store)
    plain = demo_store.list_facts(OPS, "live")[3]  # the newest demo fact
    assert plain.confidence is None
    app = make_app(demo_store)
    async with running(app) as pilot:
        for level, fact in labelled.items():
            assert f"[{level}] {fact.text}" in _row(app, fact.text)
        row = _row(app, plain.text)
        assert "[" not in row.split(plain.text)[0]

        await pilot.press("enter")  # the newest: the unverified one
        await pilot.pause()
        assert isinstance(app.screen, FactDetailScreen)
        assert detail_fields(app)["confidence"] == "unverified"
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("down", "down", "down", "enter")
        await pilot.pause()
        assert isinstance(app.screen, FactDetailScreen)
        fields = detail_fields(app)
        assert fields["id"] == plain.id
        assert "confidence" not in fields


async def _filter(pilot: object, app: object, query: str, info: str) -> None:
    filter_box = app.query_one("#filter", Input)  # type: ignore[attr-defined]
    filter_box.value = query
    await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith(info))  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("query", "info", "texts"),
    [
        ("confidence:verified", "1 of 103", [SURE]),
        ("confidence:verified,inferred", "2 of 103", [GUESS, SURE]),
        ("CONFIDENCE:Unverified", "1 of 103", [HEARD]),
        ("confidence:verified staging", "0 of 103", []),
        ("staging confidence:inferred,verified", "1 of 103", [GUESS]),
        ("confidence:unknown", "100 of 103", None),
    ],
)
async def test_the_filter_keeps_the_confidences_asked_for(
    demo_store: LmdbStore, query: str, info: str, texts: list[str] | None
) -> None:
    _label(demo_store)
    unlabelled = [f.text for f in demo_store.list_facts(OPS, "live") if f.confidence is None]
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash")
        await _filter(pilot, app, query, info)
        assert visible_texts(app) == (unlabelled if texts is None else texts)


async def test_a_level_that_is_none_says_so_and_shows_nothing(demo_store: LmdbStore) -> None:
    _label(demo_store)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash")
        await _filter(pilot, app, "confidence:sure", "0 of 103")
        assert len(fact_rows(app)) == 0
        assert "confidence: sure is not one of verified, inferred, unverified, unknown" in (
            screen_text(app)
        )
        # Cleared, the whole list is back.
        await _filter(pilot, app, "", "103 live")
        assert len(fact_rows(app)) == 103


async def test_a_write_is_seen_by_a_confidence_filter(demo_store: LmdbStore) -> None:
    _label(demo_store)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("slash")
        await _filter(pilot, app, "confidence:verified", "1 of 103")
        later = demo_store.put(OPS, "Rollbacks are automatic", confidence="verified")
        app.query_one("#fact-list").focus()
        await pilot.press("ctrl+r")  # read again
        await wait_until(pilot, lambda: static_text(app, "#facts-info").startswith("2 of 104"))
        assert visible_texts(app) == [later.text, SURE]
