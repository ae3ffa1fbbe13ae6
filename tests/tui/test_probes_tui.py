"""Probes in the TUI (ADR 0039): the Consolidate tab's probe panel at review (verdicts,
before and after, a confirmation before applying a flagged cycle, `d` removes), and the
recall preview's explain table (ranks, fused score, lineage; ctrl+s saves the query as a
probe; no access count moves)."""

from __future__ import annotations

import re

import pytest
from textual.pilot import Pilot
from textual.widgets import DataTable, Input, OptionList

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.clock import parse_time
from graymatter_tui.recall.ranking import DEFAULT_DATE
from graymatter_tui.tui.app import GraymatterApp
from graymatter_tui.tui.screens.dialogs import ConfirmScreen
from graymatter_tui.tui.screens.recall import RecallScreen
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    modal_text,
    notifications,
    running,
    screen_lines,
    screen_text,
    settle,
    static_text,
    wait_until,
)
from tests.tui.test_consolidate import ids_of, merge_the_staging_pair, step


async def test_review_shows_each_probe_and_a_flagged_cycle_asks_before_apply(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    staging = ids_of(demo_store, STAGING_A, STAGING_B)
    losing, _ = demo_store.add_probe(OPS, "database", 50)  # the summary says "DB"
    demo_store.add_probe(OPS, "deploy approvals")
    ollama.set_responder(merge_the_staging_pair)
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("3")
        await wait_until(
            pilot, lambda: "not checked" in screen_text(app), what="the agent's probes listed"
        )
        await wait_until(
            pilot, lambda: "✓ Ollama" in static_text(app, "#summariser-line"), what="reach"
        )
        await step(pilot, 4)  # decay, select, propose, review
        panel = static_text(app, "#probe-title")
        assert "would lose 2 facts" in panel
        text = screen_text(app)
        assert "LOSES 2" in text and "unchanged" in text  # readable at 80×24
        detail = static_text(app, "#probe-detail")
        assert "before" in detail and "after apply" in detail
        assert STAGING_A[:20] in detail  # a lost fact, shown struck through in the before list

        await pilot.press("a")
        await settle(pilot)
        assert isinstance(app.screen, ConfirmScreen)
        assert "would lose 2 facts" in modal_text(app)
        await pilot.press("n")  # not applied
        await settle(pilot)
        # Not applied: the cycle (journaled since decay) is still open, its facts live.
        assert [r.outcome for r in demo_store.records()] == [""]
        assert all(demo_store.require(i).is_live for i in staging)

        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await wait_until(
            pilot, lambda: "Outcome: applied" in static_text(app, "#stepper"), what="apply"
        )
    (record,) = demo_store.records()
    by_id = {p.probe_id: p for p in record.probes}
    assert sorted(by_id[losing.id].lost) == sorted(staging)


PROBE_ROW = re.compile(
    r"^ *(not checked|unchanged|changed|LOSES \d+) +(?P<top>top \d+) +(?P<query>\S.*)$"
)


def probe_rows(app: GraymatterApp, queries: tuple[str, ...]) -> list[re.Match[str]]:
    """The probe panel's rows as the screen shows them, split into their columns; a row
    whose columns run together does not match."""
    rows = [line for line in screen_lines(app) if any(q in line for q in queries)]
    assert len(rows) == len(queries), rows
    matches = [PROBE_ROW.match(row.rstrip()) for row in rows]
    assert all(matches), rows
    return [m for m in matches if m is not None]


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_the_probe_columns_never_run_together(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    queries = ("which port does staging use", "who approves deploys")
    demo_store.add_probe(OPS, queries[0])
    demo_store.add_probe(OPS, queries[1], 50)
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        await pilot.press("3")
        await wait_until(pilot, lambda: "not checked" in screen_text(app), what="the probes")
        for stage in ("before the cycle", "at review"):
            rows = probe_rows(app, queries)
            # The columns line up, each followed by a gap.
            assert len({m.start("top") for m in rows}) == 1, stage
            assert len({m.start("query") for m in rows}) == 1, stage
            assert [m.group("query").rstrip() for m in rows] == list(queries), stage
            if stage == "before the cycle":
                await step(pilot, 4)  # decay, select, propose, review
                assert "not checked" not in screen_text(app)


async def test_d_removes_the_highlighted_probe(demo_store: LmdbStore) -> None:
    first, _ = demo_store.add_probe(OPS, "staging database")
    second, _ = demo_store.add_probe(OPS, "deploy approvals")
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("3")
        await wait_until(pilot, lambda: "deploy approvals" in screen_text(app), what="probes")
        await pilot.press("d")  # on the pane: not the panel's key
        await settle(pilot)
        assert len(demo_store.probes(OPS)) == 2
        app.query_one("#probe-list").focus()
        await settle(pilot)
        assert "d Remove probe" in screen_text(app)  # the key bar shows it once it applies
        await pilot.press("d")
        await wait_until(pilot, lambda: len(demo_store.probes(OPS)) == 1, what="the removal")
        # The panel's own list (the toast saying what was removed names it for a while).
        panel = app.query_one("#probe-list", OptionList)
        await wait_until(
            pilot,
            lambda: [o.id for o in panel.options] == [second.id],
            what="the panel updated",
        )
        assert "staging database" not in str(panel.get_option_at_index(0).prompt)
        assert any("staging database" in message for _, message in notifications(app))
    assert demo_store.probes(OPS) == [second] and first not in demo_store.probes()


async def test_the_recall_preview_is_an_explain_table_and_touches_no_access(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    before = {f.id: (f.access_count, f.accessed_at) for f in demo_store.list_facts(OPS)}
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("R")
        await settle(pilot)
        assert isinstance(app.screen, RecallScreen)
        await pilot.press(*"staging database", "enter")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        # No embeddings and no recency weight: the keyword part is the whole score.
        assert labels == ["#", "fact", "kw", "fused", "weight", "age", "source"]
        shown = [str(key.value) for key in table.rows]
        assert 1 <= len(shown) <= 8
        text = screen_text(app)
        assert "kw" in text and "fused" in text and "source" in text
        top = table.get_row_at(0)
        assert str(top[2]) == "1.000" and str(top[3]) == "1.0000"  # the best keyword match
        detail = static_text(app, "#recall-lineage")
        assert "\n1.0000 = vector – + keyword 1.0000 (tf-idf " in detail
        assert "lineage: replaced nothing" in detail
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: demo_store.probes(OPS) != [], what="the probe saved")
    (probe,) = demo_store.probes(OPS)
    assert probe.query == "staging database" and probe.k == 8
    after = {f.id: (f.access_count, f.accessed_at) for f in demo_store.list_facts(OPS)}
    assert all(after[i] == before[i] for i in shown)


async def test_a_query_naming_a_date_shows_what_the_date_gave(demo_store: LmdbStore) -> None:
    newest = max(demo_store.list_facts(OPS), key=lambda f: f.created_at)
    day = parse_time(newest.created_at)
    query = f"{newest.text} on {day:%B} {day.day}, {day.year}"
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("R")
        await settle(pilot)
        # A long query, set whole (typing into the box is the other tests' part).
        app.screen.query_one("#recall-query", Input).value = query
        await pilot.press("enter")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        labels = [str(c.label) for c in table.columns.values()]
        assert labels == ["#", "fact", "kw", "date", "fused", "weight", "age", "source"]
        top = table.get_row_at(0)
        assert str(top[3]) == f"{DEFAULT_DATE:.3f}"  # the newest fact, written that day
        assert "(written on a date the query names)" in static_text(app, "#recall-lineage")


async def test_saving_a_query_that_is_already_a_probe_keeps_its_k(demo_store: LmdbStore) -> None:
    saved, _ = demo_store.add_probe(OPS, "staging database", 3)
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging database", "enter")
        await settle(pilot)
        await pilot.press("ctrl+s")
        await wait_until(
            pilot,
            lambda: any("probe saved" in message for _, message in notifications(app)),
            what="the save reported",
        )
    assert demo_store.probes(OPS) == [saved]  # the preview has no k: the probe's own stays


LONG_FACT = " ".join(
    f"Zebracorn relay {n} forwards staging traffic through the bastion host." for n in range(12)
)


def dialog_lines(app: GraymatterApp) -> list[str]:
    """The recall preview's content area as the screen shows it, line by line."""
    region = app.screen.query_one(".dialog").content_region
    lines = screen_lines(app)[region.y : region.bottom]
    return [line[region.x : region.right] for line in lines]


async def rank_in_preview(pilot: Pilot[None], query: str) -> DataTable[object]:
    await pilot.press("R")
    await settle(pilot)
    await pilot.press(*query, "enter")
    await settle(pilot)
    table: DataTable[object] = pilot.app.screen.query_one(DataTable)
    return table


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 60)])
async def test_the_preview_fits_its_columns_and_ends_cut_text_with_an_ellipsis(
    demo_store: LmdbStore, size: tuple[int, int]
) -> None:
    demo_store.put(OPS, LONG_FACT)
    app = make_app(demo_store)
    async with running(app, size=size) as pilot:
        table = await rank_in_preview(pilot, "zebracorn staging port")
        facts = [demo_store.require(str(key.value)) for key in table.rows]
        assert facts[0].text == LONG_FACT and len(facts) == 8
        assert table.virtual_size.width <= table.size.width  # no column off the edge
        lines = dialog_lines(app)
        (head,) = [i for i, line in enumerate(lines) if re.match(r"^ +# +fact +kw", line)]
        start, end = lines[head].index("fact"), lines[head].index(" kw")
        for fact, line in zip(facts, lines[head + 1 : head + 9], strict=True):
            cell = line[start:end].rstrip()
            if cell != fact.text:  # cut: the start of the text, then "…"
                assert cell.endswith("…") and fact.text.startswith(cell[:-1].rstrip()), cell
            assert line.rstrip().endswith(f"  {fact.source}"), line  # the last column whole


async def test_the_preview_shows_the_highlighted_fact_whole_in_its_free_lines(
    demo_store: LmdbStore,
) -> None:
    demo_store.put(OPS, LONG_FACT)
    app = make_app(demo_store)
    async with running(app, size=(80, 24)) as pilot:
        table = await rank_in_preview(pilot, "zebracorn staging port")
        lines = dialog_lines(app)
        first_row = next(i for i, line in enumerate(lines) if re.match(r"^ +1 ", line))
        hint = next(i for i, line in enumerate(lines) if line.startswith("enter rank"))
        below = [line.rstrip() for line in lines[first_row + len(table.rows) : hint]]
        # Every line between the table and the hint is used: the long fact's text, cut
        # where the lines run out, the cut marked with "…".
        assert below and all(below), lines
        shown = " ".join(below)
        assert shown.endswith("…") and LONG_FACT.startswith(shown[:-1].rstrip())
        await pilot.press("down")  # another fact: its whole text, then its lineage
        await settle(pilot)
        second = demo_store.require(str(table.coordinate_to_cell_key((1, 0)).row_key.value))
        detail = " ".join(line.strip() for line in dialog_lines(app)[first_row + 8 : hint])
        assert second.text in detail and "lineage: replaced nothing" in detail


async def test_the_preview_shows_a_summarys_lineage(demo_store: LmdbStore) -> None:
    staging = ids_of(demo_store, STAGING_A, STAGING_B)
    from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
    from graymatter_tui.consolidation.summarisers.local import LocalSummariser

    record = await Cycle(demo_store, OPS, LocalSummariser(), CycleOptions()).run()
    assert record.outcome == "applied" and sorted(record.consumed) == sorted(staging)
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging VPN", "enter")
        await settle(pilot)
        table = app.screen.query_one(DataTable)
        assert str(next(iter(table.rows)).value) == record.summary_id
        lineage = static_text(app, "#recall-lineage")
        assert "replaced 2 facts (1 deep)" in lineage and staging[0] in lineage


async def test_a_read_only_preview_saves_no_probe(demo_store: LmdbStore) -> None:
    app = make_app(demo_store, read_only=True)
    async with running(app) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging", "enter", "ctrl+s")
        await settle(pilot)
        assert "read-only" in static_text(app, "#recall-info")
    assert demo_store.probes() == []


async def test_the_journal_detail_shows_what_the_probes_said(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    demo_store.add_probe(OPS, "database", 50)
    ollama.set_responder(merge_the_staging_pair)
    from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
    from graymatter_tui.consolidation.summarisers import OllamaSummariser

    summariser = OllamaSummariser(ollama.url, "llama3.2", 5.0)
    record = await Cycle(demo_store, OPS, summariser, CycleOptions()).run()
    assert record.outcome == "applied" and record.probes_lost == 2
    app = make_app(demo_store)
    async with running(app) as pilot:
        await pilot.press("4")
        await settle(pilot)
        assert "probes lost 2 facts" in static_text(app, "#journal-row")
        await pilot.press("enter")
        await settle(pilot)
        text = modal_text(app)
        assert "Probes, checked before apply" in text
        assert "LOSES 2" in text and "database" in text and f"lost {record.consumed[0]}" in text


def test_every_key_of_the_screens_with_probes_has_its_handler() -> None:
    """A binding whose `action_…` method went missing does nothing when pressed."""
    from textual.binding import Binding

    from graymatter_tui.tui.screens.consolidate import ConsolidatePane
    from graymatter_tui.tui.screens.probe_panel import ProbePanel

    for owner in (ConsolidatePane, ProbePanel, RecallScreen):
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding)
            name = binding.action.split("(")[0]
            assert callable(getattr(owner, f"action_{name}", None)), (owner.__name__, name)


async def test_with_embeddings_the_preview_finds_a_paraphrase_and_shows_its_vector_rank(
    store: LmdbStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from graymatter_tui.embedding.ollama import OllamaEmbedder
    from graymatter_tui.embedding.worker import Worker
    from tests.support.embedding_fake import EmbeddingOverSocket

    with EmbeddingOverSocket() as server:
        polar = store.put(OPS, "Payments go through Polar")
        store.put(OPS, "Standup moved to the afternoon")
        Worker(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0)).drain()
        monkeypatch.setenv("GRAYMATTER_EMBED", "ollama")
        monkeypatch.setenv("GRAYMATTER_EMBED_URL", server.url)
        app = make_app(store)
        async with running(app, size=(100, 30)) as pilot:
            await pilot.press("R")
            await settle(pilot)
            await pilot.press(*"which billing vendor do we use", "enter")
            table = app.screen.query_one(DataTable)
            await wait_until(pilot, lambda: table.row_count > 0, what="the ranked paraphrase")
            assert [str(key.value) for key in table.rows] == [polar.id]
            row = table.get_row(polar.id)
            # Found by meaning alone: 0.7 of its cosine 0.7071, no keyword part.
            assert (str(row[2]), str(row[3])) == ("0.495", "–")
            detail = static_text(app, "#recall-lineage")
            assert "\n0.4950 = vector 0.4950 (cosine 0.7071, rank 1) + keyword –" in detail
