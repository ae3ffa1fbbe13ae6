"""The Store against a plain in-memory model, driven by hypothesis' stateful testing.

LMDB only: hypothesis opens a store per example, a fresh PostgreSQL database each would
cost minutes; every operation it drives runs on both backends in test_store_ops.py.
"""

from __future__ import annotations

import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import Conflict, NotFound
from graymatter_tui.core.model import RETIRED, FactState
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

AGENTS = ("alpha", "beta", "gamma")
STATES: tuple[FactState, ...] = ("live", "tombstones", "all")
UNKNOWN_ID = "01JC0000000000000000000001"
texts = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=40).filter(
    lambda t: t.strip() != ""
)


@dataclass(frozen=True)
class ModelFact:
    agent: str
    text: str
    superseded_by: str = ""
    pinned: bool = False
    access_count: int = 0
    weight: float = 1.0

    @property
    def live(self) -> bool:
        return self.superseded_by == ""


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="gm-model-"))
        self.store = LmdbStore.open(self.dir / "store")
        self.model: dict[str, ModelFact] = {}
        self.deleted: set[str] = set()
        self.generation = self.store.generation()

    def teardown(self) -> None:
        self.store.close()
        shutil.rmtree(self.dir, ignore_errors=True)

    # ---- helpers ----------------------------------------------------------------------
    def pick(self, index: int, *, live: bool | None = None) -> str | None:
        candidates = sorted(i for i, f in self.model.items() if live is None or f.live == live)
        return candidates[index % len(candidates)] if candidates else None

    def wrote(self) -> None:
        self.generation += 1

    # ---- rules ------------------------------------------------------------------------
    @rule(agent=st.sampled_from(AGENTS), text=texts, pinned=st.booleans())
    def put(self, agent: str, text: str, pinned: bool) -> None:
        fact = self.store.put(agent, text, pinned=pinned)
        assert fact.id not in self.model and fact.id not in self.deleted
        assert all(fact.id > other for other in self.model)  # ids sort by creation
        self.model[fact.id] = ModelFact(agent, text, pinned=pinned)
        self.wrote()

    @precondition(lambda self: bool(self.model))
    @rule(index=st.integers(0, 10_000))
    def pin(self, index: int) -> None:
        fact_id = self.pick(index)
        assert fact_id is not None
        current = self.model[fact_id]
        if not current.live:
            with pytest.raises(Conflict):
                self.store.pin(fact_id)
            return
        result = self.store.pin(fact_id)
        assert result.pinned
        self.model[fact_id] = replace(current, pinned=True)
        self.wrote()

    @precondition(lambda self: bool(self.model))
    @rule(index=st.integers(0, 10_000))
    def unpin(self, index: int) -> None:
        fact_id = self.pick(index)
        assert fact_id is not None
        result = self.store.unpin(fact_id)
        assert not result.pinned
        self.model[fact_id] = replace(self.model[fact_id], pinned=False)
        self.wrote()

    @precondition(lambda self: bool(self.model))
    @rule(index=st.integers(0, 10_000), text=texts)
    def revise(self, index: int, text: str) -> None:
        fact_id = self.pick(index)
        assert fact_id is not None
        current = self.model[fact_id]
        if not current.live or current.text == text:
            with pytest.raises(Conflict):
                self.store.revise(fact_id, text)
            return
        revision, tomb = self.store.revise(fact_id, text)
        assert tomb.id == fact_id and tomb.superseded_by == revision.id
        assert revision.text == text and revision.agent_id == current.agent
        assert revision.pinned == current.pinned
        self.model[fact_id] = replace(current, superseded_by=revision.id, pinned=False)
        self.model[revision.id] = ModelFact(current.agent, text, pinned=current.pinned)
        self.wrote()

    @precondition(lambda self: bool(self.model))
    @rule(index=st.integers(0, 10_000))
    def retire(self, index: int) -> None:
        fact_id = self.pick(index)
        assert fact_id is not None
        current = self.model[fact_id]
        if not current.live or current.pinned:
            with pytest.raises(Conflict):
                self.store.retire(fact_id)
            return
        tomb = self.store.retire(fact_id)
        assert tomb.superseded_by == RETIRED
        self.model[fact_id] = replace(current, superseded_by=RETIRED)
        self.wrote()

    @rule(indexes=st.lists(st.integers(0, 10_000), max_size=4), unknown=st.booleans())
    def touch(self, indexes: list[int], unknown: bool) -> None:
        wanted = [i for i in (self.pick(n) for n in indexes) if i is not None]
        if unknown:
            wanted.append(UNKNOWN_ID)
        wanted += sorted(self.deleted)[:1]
        touched = self.store.touch(wanted)
        distinct_live = {i for i in wanted if i in self.model and self.model[i].live}
        assert touched == len(distinct_live)
        for fact_id in wanted:  # one access per id given: a batch of searches may repeat one
            if fact_id in distinct_live:
                current = self.model[fact_id]
                self.model[fact_id] = replace(current, access_count=current.access_count + 1)
        self.wrote()

    @rule(indexes=st.lists(st.integers(0, 10_000), max_size=3), unknown=st.booleans())
    def delete(self, indexes: list[int], unknown: bool) -> None:
        wanted = [i for i in (self.pick(n) for n in indexes) if i is not None]
        if unknown:
            wanted.append(UNKNOWN_ID)
        removed = self.store.delete(wanted)
        assert sorted(f.id for f in removed) == sorted({i for i in wanted if i in self.model})
        for fact_id in wanted:
            if fact_id in self.model:
                del self.model[fact_id]
                self.deleted.add(fact_id)
        self.wrote()

    @rule(
        agent=st.sampled_from(AGENTS),
        items=st.lists(
            st.tuples(texts, st.floats(0.0, 1.0) | st.sampled_from([0.0, 0.5, 1.0]), st.booleans()),
            min_size=1,
            max_size=5,
        ),
    )
    def put_many(self, agent: str, items: list[tuple[str, float, bool]]) -> None:
        facts = self.store.put_many(
            [NewFact(agent, text, weight=weight, pinned=pinned) for text, weight, pinned in items]
        )
        assert [(f.text, f.weight, f.pinned) for f in facts] == items
        for fact, (text, weight, pinned) in zip(facts, items, strict=True):
            assert fact.id not in self.model
            self.model[fact.id] = ModelFact(agent, text, pinned=pinned, weight=weight)
        self.wrote()

    @rule(which=st.sampled_from(["pin", "unpin", "revise", "retire"]))
    def unknown_id(self, which: str) -> None:
        with pytest.raises(NotFound):
            if which == "revise":
                self.store.revise(UNKNOWN_ID, "text")
            else:
                getattr(self.store, which)(UNKNOWN_ID)

    # ---- invariants -------------------------------------------------------------------
    @invariant()
    def facts_match(self) -> None:
        for agent in AGENTS:
            for state in STATES:
                expected = sorted(
                    (
                        i
                        for i, f in self.model.items()
                        if f.agent == agent and (state == "all" or f.live == (state == "live"))
                    ),
                    reverse=True,
                )
                listed = self.store.list_facts(agent, state)
                assert [f.id for f in listed] == expected
                assert self.store.fact_ids(agent, state) == expected
                for fact in listed:
                    model = self.model[fact.id]
                    assert (fact.agent_id, fact.text) == (model.agent, model.text)
                    assert fact.superseded_by == model.superseded_by
                    assert fact.pinned == model.pinned
                    assert (fact.pinned_at is not None) == model.pinned
                    assert fact.access_count == model.access_count
                    assert fact.weight == model.weight
        merged = [f.id for f in self.store.list_facts(None, "all")]
        assert merged == sorted(self.model, reverse=True)
        for fact_id in self.deleted:
            assert self.store.find(fact_id) is None

    @invariant()
    def agent_counts_match(self) -> None:
        expected: dict[str, tuple[int, int, int]] = {}
        averages: dict[str, float] = {}
        for agent in AGENTS:
            facts = [f for f in self.model.values() if f.agent == agent]
            if not facts:
                continue
            live = [f for f in facts if f.live]
            expected[agent] = (
                len(live),
                len(facts) - len(live),
                sum(f.pinned for f in live),
            )
            averages[agent] = sum(f.weight for f in live) / len(live) if live else 0.0
        summaries = self.store.agents()
        actual = {a.agent_id: (a.live_facts, a.tombstones, a.pinned) for a in summaries}
        assert actual == expected
        for summary in summaries:
            assert summary.avg_weight == pytest.approx(averages[summary.agent_id], abs=2e-6)

    @invariant()
    def tombstones_point_somewhere(self) -> None:
        for fact in self.store.list_facts(None, "tombstones"):
            target = fact.superseded_by
            assert target == RETIRED or target in self.model or target in self.deleted
            assert not fact.pinned

    @invariant()
    def generation_counts_write_transactions(self) -> None:
        assert self.store.generation() == self.generation


StoreMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)
TestStoreAgainstModel = StoreMachine.TestCase
