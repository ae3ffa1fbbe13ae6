"""The audit trail never misleads: a summary a revert retired says so and keeps what it
consumed (marked restored); a fact an approved review retired names that review; every
cycle that wrote anything is journaled however it ends, in the CLI's outcome words; and
a dry run writes nothing, the journal included. On both backends."""

from __future__ import annotations

from datetime import timedelta

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage import NewFact
from graymatter_tui.views.presentation import fact_state
from tests.engine.helpers import AGENT, MODEL, NOW, seed_weighted
from tests.support.backends import AnyStore
from tests.support.ollama_fake import FakeOllama, Reply


def _cycle(store: AnyStore, server: FakeOllama | None, **options: object) -> Cycle:
    summariser = (
        OllamaSummariser(server.url, MODEL, 2.0, transport=server.transport) if server else None
    )
    return Cycle(store, AGENT, summariser, CycleOptions(guard="off", **options))  # type: ignore[arg-type]


def _applied(store: AnyStore, server: FakeOllama, consume: list[str]) -> CycleRecord:
    server.script(Reply.proposal("merged garden notes", consume))
    record = _cycle(store, server).run_sync()
    assert record.outcome == "applied", record.reason
    return record


def _aged(store: AnyStore, n: int = 30) -> None:
    """Facts last read i*40 hours ago: decay lowers all but the newest."""
    store.put_many(
        NewFact(
            agent_id=AGENT,
            text=f"garden note {chr(97 + i % 26)}{chr(97 + i // 26)} about watering",
            created_at=NOW - timedelta(hours=i * 40),
            accessed_at=NOW - timedelta(hours=i * 40),
        )
        for i in range(n)
    )


# ---- a revert keeps its receipts --------------------------------------------------------
def test_a_summary_retired_by_a_revert_names_the_revert_and_what_it_restored(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = _applied(any_store, ollama, batch[:4])
    revert = any_store.revert(record.cycle_id)

    shown = any_store.show(record.summary_id)

    assert shown.fact.superseded_by == "agent"  # upstream's value is kept
    assert shown.retirement is not None
    assert shown.retirement.by_revert
    assert shown.retirement.record.cycle_id == revert.cycle_id
    assert shown.retirement.restored == batch[:4]
    assert [f.id for f in shown.restored] == batch[:4]
    assert all(f.is_live for f in shown.restored)
    assert shown.consumed == []  # its receipts went with the revert ...
    state = fact_state(shown.fact, shown.retirement)  # ... but the person is told
    assert state == (
        f"tombstone (retired by revert {revert.cycle_id} of cycle {record.cycle_id}, "
        "no replacement)"
    )
    assert shown.cycle is not None and shown.cycle.reverted_by == revert.cycle_id


def test_a_fact_retired_by_hand_is_still_retired_by_agent(
    any_store: AnyStore, ollama: FakeOllama
) -> None:
    """A summary retired by hand keeps its cycle id, but that cycle was never reverted:
    nothing in the journal retired it, so it reads as before."""
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    record = _applied(any_store, ollama, batch[:4])
    any_store.retire(record.summary_id)
    shown = any_store.show(record.summary_id)
    assert shown.retirement is None
    assert fact_state(shown.fact) == "tombstone (retired by agent, no replacement)"


def test_a_forget_approved_in_review_names_the_review(any_store: AnyStore) -> None:
    fact = any_store.put(AGENT, "the staging database is on port 5432")
    held = any_store.hold_change(AGENT, "forget", fact.text, "")
    decision = any_store.approve_proposal(held.id)
    shown = any_store.show(fact.id)
    assert shown.retirement is not None
    assert not shown.retirement.by_revert
    assert shown.retirement.record.cycle_id == decision.record.cycle_id
    assert "retired by review" in fact_state(shown.fact, shown.retirement)


def test_the_fact_an_approved_update_wrote_names_the_revert_that_retired_it(
    any_store: AnyStore,
) -> None:
    old = any_store.put(AGENT, "deploys freeze on Fridays")
    held = any_store.hold_change(AGENT, "update", old.text, "deploys freeze on Thursdays")
    decision = any_store.approve_proposal(held.id)
    written = decision.record.summary_id
    revert = any_store.revert(decision.record.cycle_id)
    shown = any_store.show(written)
    assert shown.retirement is not None and shown.retirement.by_revert
    assert shown.retirement.undone is not None
    assert shown.retirement.undone.cycle_id == decision.record.cycle_id
    assert shown.retirement.describe() == (
        f"retired by revert {revert.cycle_id} of review {decision.record.cycle_id}"
    )
    assert [f.id for f in shown.restored] == [old.id]


# ---- every cycle that wrote anything is journaled -----------------------------------------
def test_decay_journals_the_cycle_in_its_own_transaction(any_store: AnyStore) -> None:
    """The moment decay commits, the cycle is in the journal with what decay changed, so
    a process that dies next (nothing else runs here) leaves an honest record."""
    _aged(any_store)
    cycle = _cycle(any_store, None)
    cycle.advance()
    record = any_store.require_record(cycle.record.cycle_id)
    assert record.outcome == ""  # unfinished: it is still running, or its process died
    assert [s.stage for s in record.stages] == ["decay"]
    assert record.stages[0].details["changed"] == 29
    assert any_store.counters().cycles == 1


@pytest.mark.parametrize(
    ("script", "steps", "outcome", "reason"),
    [
        (None, 2, "skipped", "cancelled by the user before propose"),
        (Reply.error(500, "boom"), 3, "failed", "(then cancelled by the user before review)"),
        ("consume", 4, "discarded", "not applied: cancelled by the user at review"),
    ],
    ids=["before-propose", "after-a-failed-propose", "at-review"],
)
async def test_a_cycle_left_part_way_is_journaled_in_the_cli_words(
    any_store: AnyStore,
    ollama: FakeOllama,
    script: Reply | str | None,
    steps: int,
    outcome: str,
    reason: str,
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    if script == "consume":
        ollama.script(Reply.proposal("merged garden notes", batch[:3]))
    elif isinstance(script, Reply):
        ollama.script(script, script)  # the summariser retries once
    cycle = _cycle(any_store, ollama)
    for _ in range(steps):
        await cycle.step()
    cycle.cancel()
    record = any_store.require_record(cycle.record.cycle_id)
    assert record.outcome == outcome
    assert reason in record.reason
    assert any_store.counters().cycles == 1  # counted once, at decay


# ---- a dry run writes nothing --------------------------------------------------------------
@pytest.mark.parametrize("with_summariser", [False, True], ids=["no-summariser", "summariser"])
def test_a_dry_run_keeps_no_record_and_is_not_counted(
    any_store: AnyStore, ollama: FakeOllama, with_summariser: bool
) -> None:
    batch = [f.id for f in seed_weighted(any_store)[:15]]
    ollama.script(Reply.proposal("merged garden notes", batch[:3]))
    generation = any_store.generation()
    record = _cycle(any_store, ollama if with_summariser else None, dry_run=True).run_sync()
    assert record.outcome == "dry_run"
    assert record.reason.startswith("dry run: ")
    assert any_store.find_record(record.cycle_id) is None
    assert any_store.records(AGENT) == []
    assert any_store.counters().cycles == 0
    assert any_store.generation() == generation
