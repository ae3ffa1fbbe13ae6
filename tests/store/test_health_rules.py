"""The health rules of `doctor --health` (views.health): each rule over a store built to
trigger it and one built not to, on both backends; the facts a finding names, capped;
deterministic (the same store, the same report, whatever the clock says)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import msgspec
import numpy as np
import pytest

from graymatter_tui.core.model import CycleRecord, Fact, ReviewProposal
from graymatter_tui.recall.probes import check_probes
from graymatter_tui.storage import ApplyRequest, NewFact
from graymatter_tui.views import health
from graymatter_tui.views.health import Finding, check_health
from tests.support.backends import AnyStore
from tests.support.clock import ManualClock

AGENT = "ops"
T0 = datetime(2026, 2, 1, 9, tzinfo=UTC)


def _finding(store: AnyStore, rule: str, model: str | None = None) -> Finding:
    (agent,) = check_health(store, AGENT, embed_model=model).agents
    assert [f.rule for f in agent.findings] == list(health.RULES)
    return next(f for f in agent.findings if f.rule == rule)


def _spread(n: int, text: str = "a plain note number {i} about the staging host") -> list[NewFact]:
    """`n` facts a day apart (no burst), each text its own."""
    return [NewFact(AGENT, text.format(i=i), created_at=T0 + timedelta(days=i)) for i in range(n)]


# ---- supersede loop ------------------------------------------------------------------
@pytest.mark.parametrize(("retired", "status"), [(3, "ok"), (5, "warn"), (9, "fail")])
def test_tombstone_ratio(any_store: AnyStore, retired: int, status: str) -> None:
    facts = any_store.put_many(_spread(12))
    for fact in facts[:retired]:
        any_store.retire(fact.id)
    found = _finding(any_store, "supersede-loop")
    assert found.status == status
    assert f"{retired} of 12 facts are tombstones" in found.detail
    assert "warn ≥ 40%, fail ≥ 70%" in found.threshold


def test_a_tiny_agent_is_no_supersede_loop(any_store: AnyStore) -> None:
    facts = any_store.put_many(_spread(3))
    for fact in facts[:2]:
        any_store.retire(fact.id)
    assert _finding(any_store, "supersede-loop").status == "ok"  # 2 of 3, under 10 facts


# ---- dumping -------------------------------------------------------------------------
def test_a_burst_of_short_facts_is_dumping(any_store: AnyStore) -> None:
    any_store.put_many(_spread(20))
    burst = any_store.put_many(
        NewFact(AGENT, f"ok {i}", created_at=T0 + timedelta(days=40, minutes=5 * i))
        for i in range(9)
    )
    found = _finding(any_store, "dumping")
    assert found.status == "warn"
    assert "1 burst of short facts (9 facts)" in found.detail
    assert "2026-03-13T09:00:00Z and 2026-03-13T09:40:00Z" in found.detail
    assert [f.id for f in found.facts] == [f.id for f in reversed(burst)]  # newest first


@pytest.mark.parametrize("shape", ["spread over more than an hour", "long texts", "seven"])
def test_no_dumping(any_store: AnyStore, shape: str) -> None:
    minutes, text, n = {
        "spread over more than an hour": (9, "ok {i}", 8),  # 8 facts over 63 minutes
        "long texts": (1, "a long fact that says a great deal about the staging host {i}", 8),
        "seven": (1, "ok {i}", 7),
    }[shape]
    any_store.put_many(
        NewFact(AGENT, text.format(i=i), created_at=T0 + timedelta(minutes=minutes * i))
        for i in range(n)
    )
    found = _finding(any_store, "dumping")
    assert (found.status, found.facts) == ("ok", ())


# ---- weak decisions and policies ------------------------------------------------------
def test_weak_decisions_near_pruning_should_be_pinned(any_store: AnyStore) -> None:
    weak = any_store.put_many(
        [
            NewFact(AGENT, "We decided to deploy on Tuesdays", weight=0.03),
            NewFact(AGENT, "The refund POLICY is 30 days", weight=0.04),
        ]
    )
    any_store.put_many(
        [
            NewFact(AGENT, "Never deploy on Fridays", weight=0.03, pinned=True),  # pinned
            NewFact(AGENT, "You must rotate the keys", weight=0.5),  # strong
            NewFact(AGENT, "The sky over the office was grey", weight=0.02),  # no decision
            NewFact(AGENT, "Policyholders get a discount", weight=0.02),  # a word inside one
        ]
    )
    found = _finding(any_store, "near-prune-critical")
    assert found.status == "warn"
    assert "consider pinning" in found.detail
    assert {f.id for f in found.facts} == {f.id for f in weak}


def test_strong_or_pinned_decisions_are_fine(any_store: AnyStore) -> None:
    any_store.put_many(
        [
            NewFact(AGENT, "Never deploy on Fridays", weight=0.03, pinned=True),
            NewFact(AGENT, "You must rotate the keys", weight=0.06),
        ]
    )
    assert _finding(any_store, "near-prune-critical").status == "ok"


# ---- duplicates ----------------------------------------------------------------------
@pytest.mark.parametrize(("extra", "status"), [(0, "ok"), (1, "info"), (2, "warn"), (6, "fail")])
def test_duplicates_by_normalised_text(any_store: AnyStore, extra: int, status: str) -> None:
    any_store.put_many(_spread(20 - extra))
    twins = any_store.put_many(
        NewFact(AGENT, ["Deploy on  FRIDAY!", "deploy on friday", "Deploy, on Friday."][i % 3])
        for i in range(extra + (1 if extra else 0))
    )
    found = _finding(any_store, "duplicates")
    assert found.status == status
    assert {f.id for f in found.facts} == {f.id for f in twins}


def test_normalised_text() -> None:
    assert health.normalised("  Deploy, on\tFRIDAY! ") == "deploy on friday"
    assert health.normalised("Ärger — über «Straße»") == "ärger über strasse"


# ---- semantic duplicates -------------------------------------------------------------
def _embed(store: AnyStore, vectors: dict[str, list[float]]) -> list[Fact]:
    """Facts of the given texts with the given vectors, of model `m`."""
    store.start_embedding("m", 4)
    facts = store.put_many(NewFact(AGENT, text) for text in vectors)
    rows = [(AGENT, f.id, f.text) for f in facts]
    matrix = np.array([vectors[f.text] for f in facts], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    assert store.store_vectors("m", rows, matrix) == (len(facts), 0)
    return facts


def test_near_duplicates_by_meaning(any_store: AnyStore) -> None:
    facts = _embed(
        any_store,
        {
            "Deploys go out on Friday": [1, 0.1, 0, 0],
            "We ship releases every Friday": [1, 0.12, 0.01, 0],
            "The ledger database is backed up nightly": [0, 0, 1, 0],
            "Alerts fire at 80% disk": [0, 1, 0, 0.2],
        },
    )
    found = _finding(any_store, "semantic-duplicates", "m")
    assert found.status == "fail"  # 2 of 4 compared
    assert {f.id for f in found.facts} == {facts[0].id, facts[1].id}


def test_no_near_duplicates_by_meaning(any_store: AnyStore) -> None:
    _embed(
        any_store,
        {"Deploys go out on Friday": [1, 0, 0, 0], "Backups run nightly": [0, 1, 0, 0]},
    )
    assert _finding(any_store, "semantic-duplicates", "m").status == "ok"


def test_alike_facts_with_other_details_are_not_duplicates(any_store: AnyStore) -> None:
    """Disk alerts at 74% and at 22%: alike by meaning, but two facts (or an update of
    one), not one said twice; a detail only one of them adds does not part them."""
    facts = _embed(
        any_store,
        {
            "Disk alerts fire at 74% usage on the build servers": [1, 0.1, 0, 0],
            "Disk alerts fire at 22% usage on the build servers": [1, 0.11, 0, 0],
            "Globex support hours are 9:00-17:00 CET": [0, 0, 1, 0.1],
            "Globex support hours are 9:00-17:00 CET on weekdays": [0, 0, 1, 0.11],
        },
    )
    found = _finding(any_store, "semantic-duplicates", "m")
    assert {f.id for f in found.facts} == {facts[2].id, facts[3].id}


def test_more_vectors_than_it_reads_are_not_checked(
    any_store: AnyStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    _embed(any_store, {"Deploys go out on Friday": [1, 0, 0, 0], "Deploys, Friday": [1, 0, 0, 0]})
    monkeypatch.setitem(health.THRESHOLDS["semantic-duplicates"], "most_vectors", 1)
    found = _finding(any_store, "semantic-duplicates", "m")
    assert (found.status, found.facts) == ("info", ())
    assert found.detail == "not checked: 2 facts have a vector (it reads at most 1)"


def test_without_vectors_the_meaning_rule_says_it_did_not_look(any_store: AnyStore) -> None:
    any_store.put_many(_spread(3))
    found = _finding(any_store, "semantic-duplicates")
    assert (found.status, found.detail) == (
        "ok",
        "not checked: no vectors stored (no embedder ran)",
    )


# ---- embedding coverage --------------------------------------------------------------
def test_embedding_coverage(any_store: AnyStore) -> None:
    facts = _embed(any_store, {"Deploys go out on Friday": [1, 0, 0, 0]})
    waiting = any_store.put_many(_spread(3))
    found = _finding(any_store, "embedding-coverage", "m")
    assert found.status == "warn"  # 1 of 4
    assert found.detail.startswith("1 of 4 live facts have a vector of m (25%)")
    assert {f.id for f in found.facts} == {f.id for f in waiting}
    assert facts[0].id not in {f.id for f in found.facts}
    # Another model configured: none of these vectors count.
    other = _finding(any_store, "embedding-coverage", "other-model")
    assert other.detail.startswith("0 of 4 live facts") and other.status == "warn"
    assert "the store's vectors are of m" in other.detail


def test_full_coverage_and_embeddings_off(any_store: AnyStore) -> None:
    _embed(any_store, {"Deploys go out on Friday": [1, 0, 0, 0], "Backups": [0, 1, 0, 0]})
    assert _finding(any_store, "embedding-coverage", "m").status == "ok"
    off = _finding(any_store, "embedding-coverage", None)
    assert (off.status, off.detail) == ("ok", "embeddings are off (GRAYMATTER_EMBED=none)")


# ---- probes a cycle changed, summaries reverted ---------------------------------------
def _cycle(store: AnyStore, consume: list[Fact], summary: str, n: int) -> CycleRecord:
    """An applied consolidation of `consume`, its probes checked as a cycle checks them."""
    live = store.list_facts(AGENT)
    request = ApplyRequest(
        cycle_id=f"01KJ00000000000000000000{n:02d}",
        agent_id=AGENT,
        summary=summary,
        consume=[f.id for f in consume],
        snapshot={f.id: f.text for f in live},
    )
    check = check_probes(store, request)
    record = CycleRecord(cycle_id=request.cycle_id, agent_id=AGENT, probes=check.results)
    outcome = store.apply_consolidation(request, record)
    assert outcome.applied and outcome.record is not None
    return outcome.record


def test_a_probe_that_lost_its_fact(any_store: AnyStore) -> None:
    cobalt, quartz, _ = any_store.put_many(
        NewFact(AGENT, t)
        for t in ["the cobalt key opens the shed", "the quartz lamp is lit", "saffron jar"]
    )
    any_store.add_probe(AGENT, "cobalt key")
    record = _cycle(any_store, [cobalt, quartz], "the quartz lamp is lit in the attic", 1)
    assert record.probes_lost == 1
    found = _finding(any_store, "probes-changed")
    assert found.status == "warn"
    assert "1 probe lost 1 fact it found" in found.detail
    assert [f.id for f in found.facts] == [cobalt.id]
    # Reverted, the cycle no longer counts; its summary was reverted instead.
    any_store.revert(record.cycle_id)
    assert _finding(any_store, "probes-changed").status == "ok"
    reverted = _finding(any_store, "summaries-reverted")
    assert reverted.status == "info"  # one of one: under the two a warning needs
    assert [f.id for f in reverted.facts] == [record.summary_id]


def test_a_cycle_that_keeps_every_probe_answer(any_store: AnyStore) -> None:
    _cobalt, quartz, lamp = any_store.put_many(
        NewFact(AGENT, t)
        for t in ["the cobalt key opens the shed", "the quartz lamp is lit", "a lamp of quartz"]
    )
    any_store.add_probe(AGENT, "cobalt key")
    _cycle(any_store, [quartz, lamp], "the quartz lamp is lit", 1)
    found = _finding(any_store, "probes-changed")
    assert (found.status, found.facts) == ("ok", ())
    assert _finding(any_store, "summaries-reverted").status == "ok"


def test_summaries_reverted_often(any_store: AnyStore) -> None:
    facts = any_store.put_many(_spread(6))
    first = _cycle(any_store, facts[0:2], "notes 0 and 1 about the staging host", 1)
    second = _cycle(any_store, facts[2:4], "notes 2 and 3 about the staging host", 2)
    _cycle(any_store, facts[4:6], "notes 4 and 5 about the staging host", 3)
    any_store.revert(first.cycle_id)
    any_store.revert(second.cycle_id)
    found = _finding(any_store, "summaries-reverted")
    assert found.status == "warn"
    assert found.detail.startswith("2 of 3 applied consolidations reverted (67%)")
    assert {f.id for f in found.facts} == {first.summary_id, second.summary_id}


# ---- contradictions in review ---------------------------------------------------------
def test_held_updates_are_no_contradictions(any_store: AnyStore) -> None:
    any_store.put(AGENT, "Deploys go out on Friday")
    any_store.hold_change(AGENT, "update", "Deploys go out on Friday", "Deploys go out Monday")
    found = _finding(any_store, "contradictions-pending")
    assert (found.status, found.facts) == ("ok", ())


def test_held_contradictions_are_counted(any_store: AnyStore) -> None:
    """The kinds `duplicate` and `possible_update` are compared by their name: a held
    change of either kind counts (made here from a held update, as a store will hold
    them)."""
    fact = any_store.put(AGENT, "Deploys go out on Friday")
    held = any_store.hold_change(AGENT, "update", fact.text, "Deploys go out Monday")
    proposals: list[ReviewProposal] = [
        msgspec.structs.replace(held, action=action)  # type: ignore[arg-type]
        for action in ("duplicate", "possible_update", "update")
    ]
    found = health.contradiction_finding(proposals)
    assert found.status == "warn"
    assert found.detail.startswith("2 possible contradictions waiting in review")
    assert [f.id for f in found.facts] == [fact.id]


# ---- every rule, named facts, determinism ---------------------------------------------
def test_a_finding_names_at_most_ten_facts_and_counts_the_rest(any_store: AnyStore) -> None:
    any_store.put_many(
        NewFact(AGENT, "same text", created_at=T0 + timedelta(days=i)) for i in range(25)
    )
    found = _finding(any_store, "duplicates")
    assert (len(found.facts), found.more) == (10, 15)


def test_one_agent_one_fact(any_store: AnyStore) -> None:
    any_store.put(AGENT, "the only fact")
    (agent,) = check_health(any_store, embed_model=None).agents
    assert (agent.agent_id, agent.live_facts, agent.tombstones) == (AGENT, 1, 0)
    assert {f.rule: f.status for f in agent.findings} == dict.fromkeys(health.RULES, "ok")


def test_every_agent_by_name_and_an_unknown_one(any_store: AnyStore) -> None:
    any_store.put("zeta", "z")
    any_store.put("alpha", "a")
    report = check_health(any_store)
    assert [a.agent_id for a in report.agents] == ["alpha", "zeta"]
    from graymatter_tui.core.errors import NotFound

    with pytest.raises(NotFound, match="no agent 'nope' in this store"):
        check_health(any_store, "nope")


def test_the_report_does_not_depend_on_the_clock(
    any_store: AnyStore, store_clock: ManualClock
) -> None:
    any_store.put_many(_spread(12))
    any_store.put_many(NewFact(AGENT, f"ok {i}", created_at=T0, weight=0.02) for i in range(9))
    first = health.report_to_dict(check_health(any_store, embed_model="m"))
    store_clock.advance(hours=24 * 365)
    assert health.report_to_dict(check_health(any_store, embed_model="m")) == first


def test_normalising_many_at_once_is_normalising_each() -> None:
    """The bulk path (ASCII as bytes, the rest together, the separator held by a text)
    gives exactly what one text at a time gives."""
    import random

    rng = random.Random(7)
    alphabet = [*'aB c,.!\t\n_-é ÄßŞ«»—\x1c\x00\u00a0\u2003\x85\r\x0b\\"', "  ", "ﬁ", "①"]
    for _ in range(3000):
        texts = [
            "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
            for _ in range(rng.randint(0, 6))
        ]
        for each in (texts, [t.replace("\x00", "") for t in texts]):
            assert health.normalised_all(each) == [health.normalised(t) for t in each]
        keys = [rng.choice("abcde") for _ in range(rng.randint(0, 6))]
        assert health.repeated(keys) == {k for k in keys if keys.count(k) > 1}


def test_times_come_from_the_ids() -> None:
    from graymatter_tui.storage.ids import new_id

    moments = [T0, T0 + timedelta(milliseconds=1), T0 + timedelta(days=400)]
    ids = [new_id(m) for m in moments]
    assert health.ulid_ms(ids).tolist() == [int(m.timestamp() * 1000) for m in moments]
    assert health.ulid_ms([ids[0].lower(), "not-a-ulid"]).tolist() == [
        int(T0.timestamp() * 1000),
        -1,
    ]


@pytest.mark.parametrize("state", ["live", "tombstones", "all"])
def test_texts_are_the_facts_texts_in_every_state_and_page(any_store: AnyStore, state: str) -> None:
    """`texts` (what the rules read; on LMDB a walk of the fact rows) gives exactly the
    ids and texts `list_facts` gives, newest first, page by page, with tombstones and
    another agent's facts around them."""
    facts = any_store.put_many(_spread(15))
    any_store.put_many(NewFact("ops2", f"the other agent's fact {i}") for i in range(3))
    any_store.put_many(NewFact("op", f"a prefix of the name {i}") for i in range(2))
    for fact in facts[::3]:
        any_store.retire(fact.id)
    want = [(f.id, f.text) for f in any_store.list_facts(AGENT, state)]  # type: ignore[arg-type]
    ids, texts = any_store.texts(AGENT, state)  # type: ignore[arg-type]
    assert list(zip(ids, texts, strict=True)) == want and want
    pages: list[tuple[str, str]] = []
    before = None
    while True:
        ids, texts = any_store.texts(AGENT, state, limit=4, before=before)  # type: ignore[arg-type]
        if not ids:
            break
        pages += zip(ids, texts, strict=True)
        before = ids[-1]
    assert pages == want
