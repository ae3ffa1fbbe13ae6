"""The local summariser merges paraphrases by meaning (ADR 0066), from the vectors the real
local embedder stored (the bundled model, offline; loaded once per module): a cycle keeps
the fuller text and consumes the paraphrase, never joins paraphrases whose key details
differ or a word swapped for its opposite, and without vectors does what the word path
alone does. Both backends."""

from __future__ import annotations

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.meaning import batch_meaning
from graymatter_tui.consolidation.summarisers.base import BatchMeaning
from graymatter_tui.consolidation.summarisers.local import (
    MEANING_SIMILARITY,
    LocalSummariser,
    clusters,
    merge,
    paraphrases,
    proposals,
)
from graymatter_tui.core.model import BatchItem, CycleRecord
from graymatter_tui.embedding.local import LocalEmbedder
from graymatter_tui.embedding.worker import Worker
from graymatter_tui.storage import NewFact
from tests.support.backends import AnyStore

pytestmark = pytest.mark.usefixtures("clean_graymatter_env", "own_model_cache")
AGENT = "agent-a"
MODEL = "minilm-l6-v2-int8@win256"
OPTIONS = CycleOptions(threshold=3)

FULLER = "The staging database listens on port 5432."
SHORTER = "Staging's database port is 5432."
ACRONYM = "The staging DB port is 5432."  # "DB": one key detail more
EXTENDED = "The staging database listens on port 5432. Use the VPN to reach it."
FILLERS = [
    "Coffee machine on floor three is broken.",
    "Parking garage closes early on fridays.",
    "Quarterly report due in april.",
]


def _seed(store: AnyStore, texts: list[str]) -> dict[str, str]:
    """Each text as a live fact of AGENT, and as many strong ones as there are texts, so
    the cycle's batch (the weakest half) is exactly `texts`: text -> id."""
    now = store.now()
    strong = [f"Strong note {word} stays out of the batch." for word in "abcdefghij"]
    facts = store.put_many(
        NewFact(AGENT, text, created_at=now, accessed_at=now, weight=weight)
        for weight, text in [(0.2, t) for t in texts] + [(0.9, t) for t in strong[: len(texts)]]
    )
    return {f.text: f.id for f in facts if f.text in texts}


def _embed(store: AnyStore, embedder: LocalEmbedder) -> None:
    """What the background embedder does: every queued fact gets its vectors."""
    result = Worker(store, embedder).drain()
    assert result.backlog == 0 and store.embed_model() == (MODEL, 384)


def _batch(store: AnyStore, ids: dict[str, str]) -> list[BatchItem]:
    return [BatchItem(id=fact_id, text=text, weight=1.0) for text, fact_id in ids.items()]


def _select(record: CycleRecord) -> dict[str, object]:
    return next(s.details for s in record.stages if s.stage == "select")


# ---- the store read ------------------------------------------------------------------------
def test_fact_vectors_reads_each_facts_stored_rows(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    assert any_store.fact_vectors(AGENT, []) is None  # no model yet: nothing to read
    ids = _seed(any_store, [FULLER, SHORTER])
    other = any_store.put("agent-b", FULLER).id
    _embed(any_store, embedder)
    found = any_store.fact_vectors(AGENT, [ids[FULLER], ids[SHORTER], other, "01" + "0" * 24])
    assert found is not None and (found.model, found.dimension) == (MODEL, 384)
    assert sorted(found.rows) == sorted([ids[FULLER], ids[SHORTER]])  # other agent's, unknown: out
    expected = embedder.embed([FULLER, SHORTER])
    assert found.rows[ids[FULLER]].shape == (1, 384)
    assert abs(float(found.rows[ids[FULLER]][0] @ expected[0]) - 1.0) < 1e-4
    assert abs(float(found.rows[ids[SHORTER]][0] @ expected[1]) - 1.0) < 1e-4
    # The pair's meaning is their cosine, keyed by the sorted ids.
    meaning = batch_meaning(any_store, AGENT, _batch(any_store, ids))
    assert meaning is not None and meaning.model == MODEL
    cosine = meaning.cosine(ids[SHORTER], ids[FULLER])
    assert cosine is not None and abs(cosine - float(expected[0] @ expected[1])) < 1e-4


def test_a_fact_of_many_pieces_is_close_only_when_every_piece_is(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    ids = _seed(any_store, ["first note", "second note"])
    any_store.start_embedding(MODEL, 384)
    rows = embedder.embed([FULLER, "Use the VPN to reach it.", SHORTER])
    any_store.store_vectors(
        MODEL,
        [(AGENT, ids["first note"], "first note")] * 2
        + [(AGENT, ids["second note"], "second note")],
        rows,
    )
    found = any_store.fact_vectors(AGENT, list(ids.values()))
    assert found is not None and found.rows[ids["first note"]].shape == (2, 384)
    meaning = batch_meaning(any_store, AGENT, _batch(any_store, ids))
    assert meaning is not None
    # The VPN piece has no counterpart in the one-piece fact: the pair scores that piece.
    assert meaning.cosine(*ids.values()) == pytest.approx(float(rows[1] @ rows[2]), abs=1e-4)
    assert float(rows[1] @ rows[2]) < MEANING_SIMILARITY < float(rows[0] @ rows[2])


# ---- cycles --------------------------------------------------------------------------------
def test_a_paraphrase_is_consumed_by_the_fuller_text(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    ids = _seed(any_store, [SHORTER, FULLER, *FILLERS])
    _embed(any_store, embedder)
    assert clusters(_batch(any_store, ids)) == []  # the words alone join nothing
    record = Cycle(any_store, AGENT, LocalSummariser(), OPTIONS).run_sync()
    assert record.outcome == "applied", record.reason
    assert record.summary_text == FULLER  # the fuller text, not both paraphrases
    assert sorted(record.consumed) == sorted([ids[FULLER], ids[SHORTER]])
    assert _select(record)["meaning_pairs"] == 10  # 5 batch facts with vectors
    summary = any_store.require(record.summary_id)
    assert summary.is_live and summary.text == FULLER
    assert any_store.require(ids[SHORTER]).is_tombstone
    assert all(any_store.require(ids[t]).is_live for t in FILLERS)


def test_the_guard_still_judges_each_paraphrase(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    """The text with the most key details is the summary, even when shorter; under the
    strict guard the longer paraphrase's own words are missing from it, so it is kept:
    meaning proposes, the guard decides."""
    ids = _seed(any_store, [FULLER, ACRONYM, *FILLERS])
    _embed(any_store, embedder)
    strict = CycleOptions(threshold=3, guard="strict", dry_run=True)
    record = Cycle(any_store, AGENT, LocalSummariser(), strict).run_sync()
    assert record.summary_text == ACRONYM
    verdicts = {v.id: v for v in record.verdicts}
    assert verdicts[ids[ACRONYM]].consumed
    assert not verdicts[ids[FULLER]].consumed
    assert "word 'database'" in verdicts[ids[FULLER]].missing
    record = Cycle(any_store, AGENT, LocalSummariser(), OPTIONS).run_sync()
    assert record.outcome == "applied", record.reason
    assert sorted(record.consumed) == sorted([ids[FULLER], ids[ACRONYM]])


def test_paraphrases_whose_details_differ_are_not_merged(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    four = "CPU alert fires when usage stays above 80 percent for 10 minutes."
    two = "CPU alert fires when usage stays above 95 percent for 5 minutes."
    opposite = ("Autoscaling is enabled for the API.", "Autoscaling is disabled for the API.")
    ids = _seed(any_store, [four, two, *opposite, *FILLERS])
    _embed(any_store, embedder)
    meaning = batch_meaning(any_store, AGENT, _batch(any_store, ids))
    assert meaning is not None
    # Close in meaning, so only the details (a number; a word for its opposite) hold them apart.
    for a, b in [(four, two), opposite]:
        cosine = meaning.cosine(ids[a], ids[b])
        assert cosine is not None and cosine >= MEANING_SIMILARITY
    record = Cycle(any_store, AGENT, LocalSummariser(), OPTIONS).run_sync()
    assert record.outcome == "skipped" and record.consumed == []
    assert record.reason == "no near-duplicate facts in the batch"
    assert all(any_store.require(i).is_live for i in ids.values())


def test_a_paraphrase_joins_a_word_group_under_its_merge(
    any_store: AnyStore, embedder: LocalEmbedder
) -> None:
    ids = _seed(any_store, [SHORTER, FULLER, EXTENDED, *FILLERS])
    _embed(any_store, embedder)
    record = Cycle(any_store, AGENT, LocalSummariser(), OPTIONS).run_sync()
    assert record.outcome == "applied", record.reason
    assert record.summary_text == EXTENDED
    assert sorted(record.consumed) == sorted(ids[t] for t in (SHORTER, FULLER, EXTENDED))


def test_without_vectors_the_cycle_is_the_word_path(any_store: AnyStore) -> None:
    """GRAYMATTER_EMBED=none: no vectors, so only the word group merges (as before)."""
    ids = _seed(any_store, [SHORTER, FULLER, EXTENDED, *FILLERS])
    assert any_store.fact_vectors(AGENT, list(ids.values())) is None
    record = Cycle(any_store, AGENT, LocalSummariser(), OPTIONS).run_sync()
    assert record.outcome == "applied", record.reason
    word_group = [item for item in record.batch_facts if item.text in (FULLER, EXTENDED)]
    assert clusters(record.batch_facts) == [word_group]
    assert record.summary_text == merge(word_group) == EXTENDED
    assert sorted(record.consumed) == sorted([ids[FULLER], ids[EXTENDED]])
    assert any_store.require(ids[SHORTER]).is_live
    assert "meaning_pairs" not in _select(record)


# ---- the summariser on its own -----------------------------------------------------------
BATCH = [
    BatchItem(id="01A", text=SHORTER, weight=0.1),
    BatchItem(id="01B", text=FULLER, weight=0.1),
    BatchItem(id="01C", text=EXTENDED, weight=0.1),
    BatchItem(id="01D", text=FILLERS[0], weight=0.1),
]


@pytest.mark.parametrize(
    "meaning",
    [
        None,
        BatchMeaning(),
        BatchMeaning("nomic-embed-text", {("01A", "01B"): 0.99, ("01A", "01C"): 0.99}),
    ],
)
def test_no_measured_meaning_changes_nothing(meaning: BatchMeaning | None) -> None:
    """No vectors, or vectors of a model whose scale was not measured: today's groups."""
    assert proposals(BATCH, meaning) == [(BATCH[1:3], merge(BATCH[1:3]))]


async def test_the_reply_without_meaning_is_the_plain_proposal() -> None:
    summariser = LocalSummariser()
    plain = await summariser.propose(BATCH)
    assert await summariser.propose_with_meaning(BATCH, None) == plain
    assert plain.raw == (
        '{"summary":"The staging database listens on port 5432. Use the VPN to reach it.",'
        '"consumes":["01B","01C"],"contradictions":[]}'
    )
    close = BatchMeaning(MODEL, {("01A", "01B"): MEANING_SIMILARITY})
    joined = await summariser.propose_with_meaning(BATCH, close)
    assert joined.prompt_sha256 == plain.prompt_sha256  # the prompt is the same
    assert '"consumes":["01A","01B","01C"]' in joined.raw
    below = BatchMeaning(MODEL, {("01A", "01B"): MEANING_SIMILARITY - 0.001})
    assert (await summariser.propose_with_meaning(BATCH, below)).raw == plain.raw


def test_the_fullest_text_has_the_most_details_then_length() -> None:
    batch = [
        BatchItem(id="01A", text="Backups run nightly to the ledger store.", weight=0.1),
        BatchItem(id="01B", text="The nightly backup runs at 02:30.", weight=0.1),
    ]
    close = BatchMeaning(MODEL, {("01A", "01B"): 0.95})
    # Details differ ({} against {02:30}) but one's are among the other's: joined, and the
    # text with the time is kept although it is shorter.
    assert proposals(batch, close) == [(batch, "The nightly backup runs at 02:30.")]


def test_a_chain_of_paraphrases_never_joins_two_details() -> None:
    """A ~ B and B ~ C, but A names INC-1 and C names INC-2: B joins one of them only."""
    batch = [
        BatchItem(id="01A", text="Incident INC-1 took the checkout down for an hour.", weight=0.1),
        BatchItem(id="01B", text="An outage stopped checkout for sixty minutes.", weight=0.1),
        BatchItem(id="01C", text="For about an hour INC-2 made checkout unavailable.", weight=0.1),
    ]
    close = BatchMeaning(MODEL, {("01A", "01B"): 0.95, ("01B", "01C"): 0.95, ("01A", "01C"): 0.95})
    assert proposals(batch, close) == [(batch[:2], batch[0].text)]


def test_the_words_veto_what_the_vectors_cannot_tell() -> None:
    """The predicate the bench measures: close vectors are not enough."""
    four = "CPU alert fires when usage stays above 80 percent for 10 minutes."
    two = "CPU alert fires when usage stays above 95 percent for 5 minutes."
    assert not paraphrases(four, two, 0.99, MEANING_SIMILARITY)  # details differ
    on = "Autoscaling is enabled for the API."
    assert not paraphrases(on, "Autoscaling is disabled for the API.", 0.99, MEANING_SIMILARITY)
    assert not paraphrases(on, "Autoscaling isn't switched on for the API.", 0.99, 0.88)
    assert paraphrases(FULLER, SHORTER, MEANING_SIMILARITY, MEANING_SIMILARITY)
    assert not paraphrases(FULLER, SHORTER, MEANING_SIMILARITY - 0.01, MEANING_SIMILARITY)
