"""Every cycle the Consolidate tab began is journaled however it ends: quitting, `c`
(which asks first), a tab switch (the cycle waits), an agent switch, a failed call; in the
CLI's outcome words. And `a` says why there is nothing to apply. Plus the Tombstones tab
and the detail of a summary a revert retired. Real app, real store, real sockets."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.tui.screens.dialogs import ConfirmScreen
from tests.support.ollama_fake import Reply
from tests.support.over_socket import OllamaOverSocket
from tests.tui.helpers import (
    OPS,
    make_app,
    modal_text,
    notifications,
    press_each,
    running,
    screen_text,
    settle,
    static_text,
)


def _the_cycle(app: object) -> Cycle:
    cycle = app.query_one("#consolidate-pane").cycle  # type: ignore[attr-defined]
    assert cycle is not None
    return cycle  # type: ignore[no-any-return]


def _only_record(store: LmdbStore) -> CycleRecord:
    (record,) = [r for r in store.records() if r.kind == "consolidate"]
    return record


async def test_quitting_at_review_journals_the_cycle_as_discarded(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n", "n", "n")  # decay … review
        cycle_id = _the_cycle(app).record.cycle_id
        decayed = _the_cycle(app).record.stages[0].details["changed"]
        assert decayed > 0  # the cycle has written: decay lowered weights
        await pilot.press("q")
        await settle(pilot)
    record = demo_store.require_record(cycle_id)
    assert record.outcome == "discarded"
    assert record.reason == "not applied: left when the TUI was closed at review"
    assert record.stages[0].details["changed"] == decayed
    assert record.finished_at


async def test_quitting_after_decay_journals_the_cycle_as_skipped(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n")
        await pilot.press("q")
        await settle(pilot)
    record = _only_record(demo_store)
    assert (record.outcome, record.reason) == (
        "skipped",
        "left when the TUI was closed before select",
    )


async def test_a_tab_switch_keeps_the_cycle_which_is_journaled_meanwhile(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n", "1", "3")
        cycle = _the_cycle(app)
        assert not cycle.done and cycle.next_stage == "propose"
        assert f"cycle {cycle.record.cycle_id}" in static_text(app, "#stepper")
        # Meanwhile the journal already holds it, unfinished, with what decay did.
        record = demo_store.require_record(cycle.record.cycle_id)
        assert record.outcome == "" and record.stages[0].stage == "decay"
        await press_each(pilot, "4")
        assert "unfinished" in screen_text(app)


async def test_c_asks_before_abandoning_a_cycle_in_progress(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n", "c")
        assert isinstance(app.screen, ConfirmScreen)
        question = modal_text(app)
        assert "Abandon cycle" in question
        assert "Decay already lowered the weight of" in question
        await press_each(pilot, "n")  # no: the cycle goes on
        cycle = _the_cycle(app)
        assert not cycle.done
        await press_each(pilot, "c", "y")
        assert app.query_one("#consolidate-pane").cycle is None  # type: ignore[attr-defined]
    record = demo_store.require_record(cycle.record.cycle_id)
    assert (record.outcome, record.reason) == (
        "skipped",
        "abandoned by the user (c) before propose",
    )


async def test_c_with_no_stage_run_asks_nothing(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "c")
        assert not isinstance(app.screen, ConfirmScreen)
    assert demo_store.records() == []


async def test_an_agent_switch_journals_the_abandoned_cycle(demo_store: LmdbStore) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n")
        cycle_id = _the_cycle(app).record.cycle_id
        app.agent = "support-bot"
        await settle(pilot)
    record = demo_store.require_record(cycle_id)
    assert record.agent_id == OPS
    assert (record.outcome, record.reason) == (
        "skipped",
        "abandoned when the agent was changed before propose",
    )


async def test_a_failed_propose_stays_failed_and_a_says_why(
    demo_store: LmdbStore, ollama: OllamaOverSocket
) -> None:
    ollama.script(Reply.error(500, "model crashed"), Reply.error(500, "model crashed"))
    app = make_app(demo_store, summariser="ollama", ollama_url=ollama.url, ollama_timeout=5.0)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n", "n")  # decay, select, propose (fails)
        cycle = _the_cycle(app)
        assert cycle.record.outcome == "failed"
        await press_each(pilot, "a")
        (warning,) = [m for s, m in notifications(app) if s == "warning"]
        assert warning.startswith("Nothing to apply: the summariser failed: ")
        assert "model crashed" in warning
        assert "step to review first" not in warning
        await pilot.press("q")
        await settle(pilot)
    record = demo_store.require_record(cycle.record.cycle_id)
    assert record.outcome == "failed"  # as the CLI says it, never "skipped"
    assert "model crashed" in record.reason


async def test_tombstones_and_detail_name_the_revert_that_retired_a_summary(
    demo_store: LmdbStore,
) -> None:
    from graymatter_tui.consolidation.cycle import CycleOptions
    from graymatter_tui.consolidation.summarisers.local import LocalSummariser

    applied = await Cycle(demo_store, OPS, LocalSummariser(), CycleOptions()).run()
    assert applied.outcome == "applied", applied.reason
    revert = demo_store.revert(applied.cycle_id)
    app = make_app(demo_store)
    async with running(app, size=(160, 40)) as pilot:
        await press_each(pilot, "2")
        shown = screen_text(app)
        assert f"↺ retired by revert {revert.cycle_id}" in shown
        assert "retired by agent" not in shown
        app.show_fact(applied.summary_id)
        await settle(pilot)
        text = modal_text(app)
        assert f"retired by revert {revert.cycle_id} of cycle {applied.cycle_id}" in text
        assert "No receipt chain" not in text
        chain = screen_text(app)
        assert chain.count("restored  ↺") == len(applied.consumed)


async def test_a_stage_that_fails_leaves_the_cycle_failed_when_the_tui_closes(
    demo_store: LmdbStore,
) -> None:
    """The apply's transaction fails for real (the map cannot grow: LMDB's test seam makes
    every attempt fill it); nothing is applied, and leaving records the failure."""
    app = make_app(demo_store)
    async with running(app) as pilot:
        await press_each(pilot, "3", "n", "n", "n", "n")  # to review
        cycle = _the_cycle(app)
        demo_store.simulate_map_full = 1000
        try:
            await press_each(pilot, "a")
        finally:
            demo_store.simulate_map_full = 0
        assert not cycle.done
        assert cycle.error.startswith("apply failed: ")
        assert any(s == "error" for s, _m in notifications(app))
        await pilot.press("q")
        await settle(pilot)
    record = demo_store.require_record(cycle.record.cycle_id)
    assert record.outcome == "failed"
    assert record.reason.startswith("apply failed: store write failed")
    assert record.reason.endswith("(then left when the TUI was closed)")
    assert record.summary_id == ""  # nothing was applied
