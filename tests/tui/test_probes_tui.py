"""Probes in the TUI (ADR 0039): the Consolidate tab's probe panel at review (verdicts,
before and after, a confirmation before applying a flagged cycle, `d` removes), and the
recall preview's explain table (ranks, fused score, lineage; ctrl+s saves the query as a
probe; no access count moves)."""

from __future__ import annotations

import pytest
from textual.widgets import DataTable

from graymatter_tui.screens.dialogs import ConfirmScreen
from graymatter_tui.screens.recall import RecallScreen
from graymatter_tui.store import Store
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import (
    OPS,
    STAGING_A,
    STAGING_B,
    make_app,
    modal_text,
    notifications,
    running,
    screen_text,
    settle,
    static_text,
    wait_until,
)
from tests.tui.test_consolidate import ids_of, merge_the_staging_pair, step


async def test_review_shows_each_probe_and_a_flagged_cycle_asks_before_apply(
    demo_store: Store, ollama: OllamaOverSocket
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
        assert demo_store.records() == [] and all(demo_store.require(i).is_live for i in staging)

        await pilot.press("a")
        await settle(pilot)
        await pilot.press("y")
        await wait_until(
            pilot, lambda: "Outcome: applied" in static_text(app, "#stepper"), what="apply"
        )
    (record,) = demo_store.records()
    by_id = {p.probe_id: p for p in record.probes}
    assert sorted(by_id[losing.id].lost) == sorted(staging)


async def test_d_removes_the_highlighted_probe(demo_store: Store) -> None:
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
        await wait_until(
            pilot, lambda: "staging database" not in screen_text(app), what="the panel updated"
        )
    assert demo_store.probes(OPS) == [second] and first not in demo_store.probes()


async def test_the_recall_preview_is_an_explain_table_and_touches_no_access(
    demo_store: Store,
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
        assert labels == ["#", "fact", "kw", "new", "fused", "weight", "age", "source"]
        shown = [str(key.value) for key in table.rows]
        assert 1 <= len(shown) <= 8
        text = screen_text(app)
        assert "kw" in text and "fused" in text and "source" in text
        assert "lineage: replaced nothing" in static_text(app, "#recall-lineage")
        await pilot.press("ctrl+s")
        await wait_until(pilot, lambda: demo_store.probes(OPS) != [], what="the probe saved")
    (probe,) = demo_store.probes(OPS)
    assert probe.query == "staging database" and probe.k == 8
    after = {f.id: (f.access_count, f.accessed_at) for f in demo_store.list_facts(OPS)}
    assert all(after[i] == before[i] for i in shown)


async def test_saving_a_query_that_is_already_a_probe_keeps_its_k(demo_store: Store) -> None:
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


async def test_the_preview_shows_a_summarys_lineage(demo_store: Store) -> None:
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


async def test_a_read_only_preview_saves_no_probe(demo_store: Store) -> None:
    app = make_app(demo_store, read_only=True)
    async with running(app) as pilot:
        await pilot.press("R")
        await settle(pilot)
        await pilot.press(*"staging", "enter", "ctrl+s")
        await settle(pilot)
        assert "read-only" in static_text(app, "#recall-info")
    assert demo_store.probes() == []


async def test_the_journal_detail_shows_what_the_probes_said(
    demo_store: Store, ollama: OllamaOverSocket
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

    from graymatter_tui.screens.consolidate import ConsolidatePane
    from graymatter_tui.screens.probe_panel import ProbePanel

    for owner in (ConsolidatePane, ProbePanel, RecallScreen):
        for binding in owner.BINDINGS:
            assert isinstance(binding, Binding)
            name = binding.action.split("(")[0]
            assert callable(getattr(owner, f"action_{name}", None)), (owner.__name__, name)


async def test_with_embeddings_the_preview_finds_a_paraphrase_and_shows_its_vector_rank(
    store: Store, monkeypatch: pytest.MonkeyPatch
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
            assert (str(row[2]), str(row[3])) == ("1", "–")  # found by vector alone
