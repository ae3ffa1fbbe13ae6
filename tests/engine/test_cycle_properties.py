"""Property: whatever a summariser answers and whatever people do between cycles, the
invariants hold after every cycle and only batch facts ever become consumption tombstones.

One scripted Ollama (httpx MockTransport) for the module; a fresh store per example. The
summariser's answer is drawn up front (hypothesis cannot draw in the handler) as a recipe that the
responder resolves against the batch it is shown: batch ids, hallucinated ids, pinned ids,
tombstone ids, another agent's ids, duplicates, empty or marked-up summaries, non-JSON.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.errors import Conflict
from graymatter_tui.core.model import Fact
from graymatter_tui.storage import NewFact
from tests.engine.helpers import AGENT, MODEL, NOW, Clock, prompt_rows, snapshot
from tests.support.ollama_fake import FakeOllama, RecordedRequest, Reply

OTHER = "agent-b"
NAMES = ["Maria Lopez", "Dev Patel", "Chen Wei", "Amara Okafor"]
TEMPLATES = [
    "{name} handled ticket SUP-{n} about invoices",
    "the garden needs water every {n} hours",
    "the garden needs water every morning",
    "{name} prefers email over phone",
    "refunds over {n} dollars need approval",
    "deploys happen on tuesdays",
]
SUMMARIES = ["", "   ", "merged", "<b>bold</b> [red]markup[/red] \x1b[31mred\x1b[0m", "ECHO"]


@pytest.fixture(scope="module")
def server() -> Iterator[FakeOllama]:
    fake = FakeOllama()
    yield fake
    assert fake.errors == []


@dataclass(frozen=True)
class Recipe:
    """How the responder answers, resolved against the batch it is shown."""

    form: str  # json | fenced | prose | array | truncated | error
    picks: tuple[tuple[str, int], ...]  # (pool, index): batch | pinned | tomb | foreign | made_up
    duplicate: bool
    summary: str  # "ECHO": the texts of the picked batch facts (passes the guard)
    contradictions: Any


recipes = st.builds(
    Recipe,
    form=st.sampled_from(["json"] * 6 + ["fenced", "prose", "array", "truncated", "error"]),
    picks=st.lists(
        st.tuples(
            st.sampled_from(["batch"] * 5 + ["pinned", "tomb", "foreign", "made_up"]),
            st.integers(0, 1000),
        ),
        max_size=10,
    ).map(tuple),
    duplicate=st.booleans(),
    summary=st.one_of(st.just("ECHO"), st.sampled_from(SUMMARIES), st.text(max_size=40)),
    contradictions=st.one_of(st.just([]), st.lists(st.text(max_size=10), max_size=2), st.none()),
)


def responder(recipe: Recipe, pools: dict[str, list[str]]) -> Any:
    def answer(request: RecordedRequest) -> Reply:
        rows = prompt_rows(request.prompt)
        shown = {"batch": [fid for fid, _ in rows], **pools}
        shown["made_up"] = [f"01JZZZZZZZZZZZZZZZZZZZZZZ{c}" for c in "0123456789"]
        ids = [shown[pool][i % len(shown[pool])] for pool, i in recipe.picks if shown[pool]]
        if recipe.duplicate and ids:
            ids.append(ids[0])
        texts = dict(rows)
        summary = recipe.summary
        if summary == "ECHO":
            summary = " ".join(texts.get(fid, "") for fid in ids) or "echo"
        body: Any = {"summary": summary, "consumes": ids}
        if recipe.contradictions is not None:
            body["contradictions"] = recipe.contradictions
        text = json.dumps(body)
        if recipe.form == "fenced":
            return Reply.text(f"```json\n{text}\n```")
        if recipe.form == "prose":
            return Reply.text(f"Sure! {summary}")
        if recipe.form == "array":
            return Reply.text(json.dumps(ids))
        if recipe.form == "truncated":
            return Reply.text(text[: len(text) // 2], done_reason="length")
        if recipe.form == "error":
            return Reply.error(500, "overloaded")
        return Reply.text(text)

    return answer


def assert_invariants(store: LmdbStore) -> None:
    problems = [f"{check.name}: {v}" for check in check_invariants(store) for v in check.violations]
    assert problems == []


# ---------------------------------------------------------------- curation between cycles


def curate(store: LmdbStore, data: st.DataObject) -> None:
    for action in data.draw(
        st.lists(st.sampled_from(["put", "pin", "unpin", "revise", "retire"]), max_size=4)
    ):
        live = store.list_facts(AGENT, "live")
        if action == "put" or not live:
            store.put(AGENT, data.draw(st.sampled_from(TEMPLATES)).format(name="Chen Wei", n=7))
            continue
        target = live[data.draw(st.integers(0, len(live) - 1))]
        if action == "pin":
            store.pin(target.id)
        elif action == "unpin":
            store.unpin(target.id)
        elif action == "revise":
            store.revise(target.id, f"{target.text} (revised)")
        elif not target.pinned:
            store.retire(target.id)


def seed(store: LmdbStore, data: st.DataObject) -> None:
    n = data.draw(st.integers(8, 40), label="facts")
    items = []
    for i in range(n):
        template = data.draw(st.sampled_from(TEMPLATES))
        age = data.draw(st.sampled_from([0, 0, 24, 500, 3000]))
        items.append(
            NewFact(
                agent_id=AGENT,
                text=template.format(name=NAMES[i % len(NAMES)], n=1000 + i % 3),
                created_at=NOW,
                accessed_at=NOW - timedelta(hours=age),
                weight=data.draw(st.sampled_from([1.0, 0.9, 0.5, 0.2, 0.05, 0.008])),
                pinned=data.draw(st.integers(0, 9)) == 0,
            )
        )
    items += [NewFact(agent_id=OTHER, text=f"other agent fact {i}") for i in range(3)]
    store.put_many(items)


# ---------------------------------------------------------------- the property


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(data=st.data())
def test_invariants_hold_over_many_cycles(server: FakeOllama, data: st.DataObject) -> None:
    directory = Path(tempfile.mkdtemp(prefix="gm-prop-"))
    clock = Clock()
    store = LmdbStore.open(directory / "s", clock_fn=clock)
    try:
        seed(store, data)
        for _ in range(data.draw(st.integers(1, 6), label="cycles")):
            curate(store, data)
            one_cycle(store, server, clock, data)
        assert_invariants(store)
    finally:
        store.close()
        shutil.rmtree(directory, ignore_errors=True)


def decayed(fact: Fact, clock: Clock) -> float:
    hours = (clock.now - datetime.fromisoformat(fact.accessed_at)).total_seconds() / 3600
    return min(fact.weight, math.exp(-math.log(2) * hours / 720.0))


def one_cycle(store: LmdbStore, server: FakeOllama, clock: Clock, data: st.DataObject) -> None:
    before: dict[str, Fact] = {f.id: f for f in store.all_facts()}
    pools = {
        "pinned": [f.id for f in before.values() if f.pinned],
        "tomb": [f.id for f in before.values() if f.is_tombstone and f.agent_id == AGENT],
        "foreign": [f.id for f in before.values() if f.agent_id == OTHER],
    }
    server.set_responder(responder(data.draw(recipes), pools))
    options = CycleOptions(
        threshold=data.draw(st.integers(0, 12)),
        max_batch=data.draw(st.integers(1, 32)),
        guard=data.draw(st.sampled_from(["off", "off", "keys", "strict"])),
    )
    summariser = OllamaSummariser(server.url, MODEL, 2.0, transport=server.transport)
    record = Cycle(store, AGENT, summariser, options).run_sync()
    after: dict[str, Fact] = {f.id: f for f in store.all_facts()}

    assert record.outcome in ("applied", "discarded", "failed", "skipped"), record.reason
    event(f"outcome {record.outcome}")
    # the batch: live, unpinned facts of this agent, never a tombstone or a pinned fact
    for fact_id in record.batch:
        assert before[fact_id].agent_id == AGENT
        assert before[fact_id].is_live and not before[fact_id].pinned
    new_tombstones = {
        fid
        for fid, f in after.items()
        if f.is_tombstone and (fid not in before or before[fid].is_live)
    }
    created = set(after) - set(before)
    pruned = {f.id: f for f in record.pruned}
    if record.outcome == "applied":
        # a consumed fact already below 0.01 keeps that weight and is pruned by this cycle
        assert new_tombstones == set(record.consumed) - set(pruned)
        for fid in set(record.consumed) & set(pruned):
            assert pruned[fid].superseded_by == record.summary_id
        assert set(record.consumed) <= set(record.batch)
        assert len(record.consumed) == len(set(record.consumed))
        assert created == {record.summary_id}
        for fid in record.consumed:
            if fid in after:
                assert after[fid].superseded_by == record.summary_id
                assert after[fid].cycle_id == record.cycle_id
                # the tombstone keeps its post-decay weight
                assert after[fid].weight == pytest.approx(decayed(before[fid], clock))
    else:
        assert new_tombstones == set()
        assert created == set()
        assert record.summary_id == ""
    # only pruning deletes, only below 0.01, never a pinned fact, always journaled
    gone = set(before) - set(after)
    assert gone == set(pruned) - created
    assert all(f.weight < 0.01 and not f.pinned for f in record.pruned)
    for fid, fact in after.items():
        if fid in before:
            assert fact.text == before[fid].text
            if before[fid].pinned:
                assert fact.weight == before[fid].weight and fact.pinned
    assert_invariants(store)

    if record.outcome == "applied" and data.draw(st.booleans(), label="revert"):
        frozen = snapshot(store)
        try:
            store.revert(record.cycle_id)
        except Conflict:
            assert snapshot(store) == frozen
        assert_invariants(store)
    clock.advance(data.draw(st.sampled_from([0, 0, 1, 200, 800, 3500]), label="hours"))
