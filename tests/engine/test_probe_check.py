"""Probes checked before apply (ADR 0039): the trial's ranking after apply is the
ranking a real apply leaves (checked on a copy of the store), nothing is written, and
`lost` / `replaced` / `displaced` say precisely what a cycle does to each probe."""

from __future__ import annotations

import random
import shutil
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.model import SUMMARY_MARK, CycleRecord, Fact
from graymatter_tui.recall import ranking as recall
from graymatter_tui.recall.probes import check_probes
from graymatter_tui.storage import ApplyRequest, NewFact
from graymatter_tui.storage.ids import seed_ids
from tests.engine.helpers import AGENT, MODEL, NOW, Clock
from tests.support.ollama_fake import FakeOllama, Reply

CYCLE_ID = "01KJ0000000000000000000009"
WORDS = ["cobalt", "lantern", "meadow", "quartz", "saffron", "tundra", "walnut", "zephyr"]


def _dump(store: LmdbStore) -> dict[str, list[tuple[bytes, bytes]]]:
    def run(tx: Any) -> dict[str, list[tuple[bytes, bytes]]]:
        return {
            name: [(bytes(k), bytes(v)) for k, v in tx.txn.cursor(db=db).iternext()]
            for name, db in vars(tx.dbs).items()
            if db is not None
        }

    return store.read(run)


def _seed(store: LmdbStore, rng: random.Random, n: int = 24) -> list[Fact]:
    texts = [
        " ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" note {i} about the staging host"
        for i in range(n)
    ]
    return store.put_many(NewFact(AGENT, t, weight=0.5) for t in texts)


def _request(facts: list[Fact], consume: list[Fact], summary: str) -> ApplyRequest:
    return ApplyRequest(
        cycle_id=CYCLE_ID,
        agent_id=AGENT,
        summary=summary,
        consume=[f.id for f in consume],
        snapshot={f.id: f.text for f in facts},
    )


@pytest.mark.parametrize("seed", range(6))
def test_the_trial_ranking_is_the_ranking_a_real_apply_leaves(tmp_path: Path, seed: int) -> None:
    rng = random.Random(seed)
    seed_ids(seed)
    clock = Clock(NOW)
    with LmdbStore.open(tmp_path / "a", clock_fn=clock) as store:
        facts = _seed(store, rng)
        for word in WORDS[:5]:
            store.add_probe(AGENT, word, rng.randint(2, 6))
        store.add_probe(AGENT, "staging host note", 5)
        # The apply comes later than the facts, as it always does: the summary is the
        # newest fact in the trial and in the real apply, whose ids differ.
        clock.advance(minutes=5)
        consume = rng.sample(facts, 6)
        summary = " ".join(rng.sample(WORDS, 2)) + " notes merged about the staging host"
        request = _request(facts, consume, summary)
        probes = store.probes(AGENT)
        untouched = _dump(store)
        generation = store.generation()
        check = check_probes(store, request)
        assert _dump(store) == untouched and store.generation() == generation
        before = [[h.fact.id for h in recall.rank(store, AGENT, p.query, k=p.k)] for p in probes]
    seed_ids(None)
    shutil.copytree(tmp_path / "a", tmp_path / "b")
    with LmdbStore.open(tmp_path / "b", clock_fn=clock) as copy:
        record = CycleRecord(cycle_id=CYCLE_ID, agent_id=AGENT)
        applied = copy.apply_consolidation(request, record)
        assert applied.applied and applied.summary is not None
        real = applied.summary.id
        after = [
            [
                SUMMARY_MARK if h.fact.id == real else h.fact.id
                for h in recall.rank(copy, AGENT, p.query, k=p.k)
            ]
            for p in probes
        ]
    assert [r.before for r in check.results] == before
    assert [r.after for r in check.results] == after


def _store_with(gm: LmdbStore, texts: list[str]) -> list[Fact]:
    return gm.put_many(NewFact(AGENT, t) for t in texts)


def test_lost_replaced_and_displaced(gm: LmdbStore) -> None:
    facts = _store_with(
        gm,
        [
            "the cobalt key opens the shed",  # consumed, its word dropped by the summary
            "the quartz lamp is in the attic",  # consumed, its words kept
            "the saffron jar is on the shelf",  # kept, untouched
            "a meadow path winds past the old stone wall by the river and the mill",  # kept
        ],
    )
    cobalt, quartz, saffron, meadow = facts
    probes = [
        gm.add_probe(AGENT, "cobalt key")[0],
        gm.add_probe(AGENT, "quartz lamp")[0],
        gm.add_probe(AGENT, "saffron jar")[0],
        gm.add_probe(AGENT, "meadow", 1)[0],
    ]
    summary = "the quartz lamp is in the attic, a meadow by the shed"
    check = check_probes(gm, _request(facts, [cobalt, quartz], summary))
    lost, replaced, same, pushed = check.results
    assert [r.probe_id for r in check.results] == [p.id for p in probes]
    assert (lost.before, lost.after, lost.lost) == ([cobalt.id], [], [cobalt.id])
    assert lost.verdict == "LOSES 1" and check.lost == 1
    assert (replaced.after, replaced.replaced, replaced.lost) == ([SUMMARY_MARK], [quartz.id], [])
    assert replaced.gained == [SUMMARY_MARK] and replaced.verdict == "changed"
    assert same.before == same.after == [saffron.id] and same.verdict == "unchanged"
    # A kept fact pushed below the top k is displaced, not lost: it is still live.
    assert (pushed.before, pushed.after) == ([meadow.id], [SUMMARY_MARK])
    assert pushed.displaced == [meadow.id] and pushed.lost == [] and pushed.verdict == "changed"
    assert all(f.is_live for f in gm.find_many(f.id for f in facts) if f is not None)


def test_no_probes_no_trial_and_a_stale_proposal_is_not_checked(gm: LmdbStore) -> None:
    facts = _store_with(gm, ["the cobalt key opens the shed", "the quartz lamp glows"])
    request = _request(facts, facts[:1], "a key")
    assert check_probes(gm, request).results == []
    gm.add_probe(AGENT, "cobalt")
    gm.revise(facts[0].id, "the cobalt key opens the gate")
    check = check_probes(gm, request)
    assert check.results == [] and "stale" in check.note


def test_a_read_only_store_says_probes_were_not_checked(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        facts = _store_with(store, ["the cobalt key opens the shed"])
        store.add_probe(AGENT, "cobalt")
    with LmdbStore.open(tmp_path / "s", read_only=True) as reader:
        check = check_probes(reader, _request(facts, facts, "a key"))
    assert check.results == [] and "read-only" in check.note


def _summariser(server: FakeOllama) -> OllamaSummariser:
    return OllamaSummariser(server.url, MODEL, 2.0, transport=server.transport)


async def test_a_cycle_checks_its_probes_at_review_and_journals_them(
    gm: LmdbStore, ollama: FakeOllama
) -> None:
    facts = gm.put_many(
        NewFact(AGENT, f"{word} note about the staging host", weight=0.2 + i / 100)
        for i, word in enumerate(WORDS)
    )
    probe, _ = gm.add_probe(AGENT, "cobalt")
    weakest = sorted(facts, key=lambda f: (f.weight, f.id))[:2]
    ollama.script(Reply.proposal("notes about the staging host", [f.id for f in weakest]))
    cycle = Cycle(gm, AGENT, _summariser(ollama), CycleOptions(threshold=4, guard="off"))
    while not cycle.at_review:
        await cycle.step()
    review = cycle.results[-1]
    assert review.details["probes"] == 1 and review.details["probes_lost"] == 1
    assert "probes would lose 1 fact" in review.summary
    assert [r.probe_id for r in cycle.record.probes] == [probe.id]
    assert cycle.record.probes[0].lost == [weakest[0].id]
    record = await cycle.run()
    assert record.outcome == "applied"  # flagged, still appliable
    journaled = gm.require_record(record.cycle_id)
    assert journaled.probes == cycle.record.probes and journaled.probes_lost == 1
