"""The Tombstones tab: every tombstone with the summary that replaced it, and the receipt
chain walked both ways through nested detail modals."""

from __future__ import annotations

from pathlib import Path

from rich.cells import cell_len
from textual.widgets import OptionList

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.consolidation.summarisers import LocalSummariser
from graymatter_tui.tui.screens.detail import FactDetailScreen
from graymatter_tui.tui.widgets.fact_rows import (
    TombstoneRows,
    tombstone_header,
    tombstone_text_cells,
)
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    detail_fields,
    make_app,
    running,
    screen_lines,
    static_text,
)


def drawn_row(app: object, index: int) -> str:
    """Everything the tombstone list draws for row `index` (before cropping to the width)."""
    source = app.query_one("#tomb-list").source  # type: ignore[attr-defined]
    assert isinstance(source, TombstoneRows)
    return "".join(segment.text for segment in source.row(index, 120))


async def test_tombstones_show_their_summary_and_open_the_receipt_chain(
    demo_store: LmdbStore,
) -> None:
    record = await Cycle(demo_store, OPS, LocalSummariser()).run()
    assert record.outcome == "applied"
    summary = demo_store.require(record.summary_id)
    consumed = {fact_id: demo_store.require(fact_id).text for fact_id in record.consumed}
    assert sorted(consumed.values()) == [STAGING_A, STAGING_B]

    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("2")
        await pilot.pause()
        tomb_list = app.query_one("#tomb-list")
        source = tomb_list.source  # type: ignore[attr-defined]
        assert isinstance(source, TombstoneRows)
        assert sorted(source.ids) == sorted(consumed)
        assert static_text(app, "#tombs-info") == "2 tombstones"
        for index, fact_id in enumerate(source.ids):
            row = drawn_row(app, index)
            cells = tombstone_text_cells(120)
            assert consumed[fact_id][: cells - 1] in row
            # a long summary is cut to the list's width and ends in an ellipsis
            shown = row.split(f"→ [{record.cycle_id[-6:]}] ", 1)[1].rstrip()
            assert summary.text.startswith(shown.removesuffix("…"))
            assert len(shown.removesuffix("…")) >= 20
        lines = screen_lines(app)
        for text in consumed.values():
            line = next(line for line in lines if text[:40] in line)
            assert f"→ [{record.cycle_id[-6:]}]" in line
            assert summary.text[:30] in line  # the rest is cut at the screen edge

        # enter on the second tombstone opens the summary that replaced it
        await pilot.press("down")
        selected = source.ids[1]
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, FactDetailScreen)
        assert static_text(app, "#detail-title") == f"Summary {summary.id}"
        assert static_text(app, "#detail-text") == summary.text
        fields = detail_fields(app)
        assert fields["cycle"] == record.cycle_id
        assert fields["state"] == "live"
        assert static_text(app, "#detail-chain-title") == "Receipt chain (2 consumed)"
        chain = app.screen.query_one("#detail-chain", OptionList)
        prompts = [str(chain.get_option_at_index(i).prompt) for i in range(chain.option_count)]
        assert sorted(prompts) == sorted(f"consumed  − {text}" for text in consumed.values())
        assert [chain.get_option_at_index(i).id for i in range(chain.option_count)] == list(
            record.consumed
        )
        assert app.focused is chain

        # selecting a consumed fact opens its own detail on top
        first = record.consumed[0]
        await pilot.press("down" if chain.highlighted is None else "home", "enter")
        await pilot.pause()
        assert len(app.screen_stack) == 3
        assert static_text(app, "#detail-title") == f"Tombstone {first}"
        assert static_text(app, "#detail-text") == consumed[first]
        assert summary.id in detail_fields(app)["state"]
        back = app.screen.query_one("#detail-chain", OptionList)
        assert str(back.get_option_at_index(0).prompt) == f"replaced by  {summary.text}"

        # escape twice: back to the list, the cursor still on the same tombstone
        await pilot.press("escape")
        await pilot.pause()
        assert static_text(app, "#detail-title") == f"Summary {summary.id}"
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FactDetailScreen)
        assert app.focused is tomb_list
        assert tomb_list.cursor == 1  # type: ignore[attr-defined]
        assert source.fact(1) is not None and source.fact(1).id == selected  # type: ignore[union-attr]


async def test_retired_fact_opens_its_own_detail(demo_store: LmdbStore) -> None:
    victim = demo_store.list_facts(OPS)[0]
    demo_store.retire(victim.id)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("2")
        await pilot.pause()
        assert "retired by agent" in drawn_row(app, 0)
        assert any(victim.text[:30] in line for line in screen_lines(app))
        await pilot.press("enter")
        await pilot.pause()
        assert static_text(app, "#detail-title") == f"Tombstone {victim.id}"
        assert "retired by agent" in detail_fields(app)["state"]
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, FactDetailScreen)


def test_tombstone_columns_line_up_for_wide_text_at_any_width(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        wide = "漢字のとても長い文章です。" * 6
        texts = ["短い", wide, "plain ascii words " * 8, "x", "e\u0301" * 70]
        for text in texts:
            store.revise(store.put("agent", text).id, f"revised: {text}")
        store.retire(store.put("agent", "retired " * 20).id)
        ids = store.fact_ids("agent", "tombstones")
        assert len(ids) == len(texts) + 1
        for width in (40, 60, 80, 120, 200):
            header = tombstone_header(width)
            arrow_at = cell_len(header[: header.index("→")])
            rows = TombstoneRows(ids, store.find_many, store.now(), 720.0)
            drawn = ["".join(s.text for s in rows.row(i, width)) for i in range(len(ids))]
            for row in drawn:
                assert cell_len(row) <= width
                assert cell_len(row[: row.index("→")]) == arrow_at, (width, row)
            if width >= 60:
                assert sum("→ retired by agent" in row for row in drawn) == 1
                assert sum("→ [revise] revised: " in row for row in drawn) == len(texts)
