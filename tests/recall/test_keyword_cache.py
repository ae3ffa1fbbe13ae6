"""A long-running process's copy of the postings (`recall.keyword_cache`, ADR 0074) gives
the keyword scores the store's own index gives, to the last bit, whatever was written in
between: by this process, by another one, by a release that counts no index writes, or
after the store's stemming language changed."""

from __future__ import annotations

from datetime import timedelta
from itertools import pairwise

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.recall import ranking
from graymatter_tui.recall.keyword_cache import KeywordCache
from graymatter_tui.recall.ranking import POSTINGS_PER_TERM, RecallWeights, rank
from graymatter_tui.recall.vector_signal import NO_VECTORS
from graymatter_tui.storage import KeywordIndex, NewFact
from graymatter_tui.storage.transaction import INDEX_WRITES
from tests.conftest import run_graymatter
from tests.recall.helpers import AGENT, FIXED
from tests.support.backends import AnyStore

WORDS = ["deploy", "server", "backup", "rollout", "disk", "alert", "friday", "canary"]
QUERIES = ["deploy", "server backup", "disk alert friday", "canary rollout deploy", "nothing"]


def _both(store: AnyStore, cache: KeywordCache, query: str) -> tuple[object, object]:
    """The keyword scores of `query` from the store's index and from the copy, each read
    in one snapshot."""

    def read(tx: KeywordIndex) -> tuple[dict[str, float], dict[str, float]]:
        terms = tx.terms(query)
        return ranking._keyword_scores(tx, AGENT, terms), cache.scores(tx, AGENT, terms)

    return store.read_index(read)


def _same_everywhere(store: AnyStore, cache: KeywordCache) -> None:
    for query in QUERIES:
        direct, copied = _both(store, cache, query)
        assert copied == direct, query
        # And the whole answer, every explain field included.
        assert rank(store, AGENT, query, vectors=NO_VECTORS, keywords=cache) == rank(
            store, AGENT, query, vectors=NO_VECTORS
        )


def test_every_kind_of_write_is_seen(any_store: AnyStore) -> None:
    store, cache = any_store, KeywordCache()
    first = store.put(AGENT, "deploy the server on friday")
    store.put_many(NewFact(AGENT, f"{w} {WORDS[n % 8]} note {n}") for n, w in enumerate(WORDS * 3))
    _same_everywhere(store, cache)
    before = cache.renewed
    steps = [
        lambda: store.put(AGENT, "disk alert at ninety percent"),
        lambda: store.remember(AGENT, "canary rollout on friday"),
        lambda: store.revise(first.id, "deploy the backup server on monday"),
        lambda: store.retire_text(AGENT, "disk alert at ninety percent"),
        lambda: store.supersede_text(AGENT, "canary rollout on friday", "canary rollout paused"),
        lambda: store.set_stem_language("none"),
        lambda: store.put_many(NewFact(AGENT, f"server backup {n}") for n in range(3)),
    ]
    for step in steps:
        step()
        _same_everywhere(store, cache)
    assert cache.renewed == before + len(steps)


def test_a_read_that_changes_no_posting_keeps_the_copy(any_store: AnyStore) -> None:
    store, cache = any_store, KeywordCache()
    fact = store.put(AGENT, "deploy the server on friday")
    store.put(AGENT, "server backup at night")
    _same_everywhere(store, cache)
    read = cache.terms_read
    store.touch([fact.id])  # what a search records: no posting moves
    _same_everywhere(store, cache)
    assert cache.renewed == 0
    assert cache.terms_read == read


def test_a_write_that_counts_no_index_write_is_still_seen(any_store: AnyStore) -> None:
    """A release before this one moves postings without moving INDEX_WRITES: the agent's
    counts, also in the stamp, move with any such write."""
    store, cache = any_store, KeywordCache()
    fact = store.put(AGENT, "deploy the server on friday")
    store.put(AGENT, "deploying servers")  # "deploy" once stemmed, not after
    _same_everywhere(store, cache)
    for write in (
        lambda: store.put(AGENT, "deploy server again"),
        lambda: store.revise(fact.id, "deploy the server on monday"),
        lambda: store.retire_text(AGENT, "deploy server again"),
        lambda: store.set_stem_language("none"),
    ):
        write()
        store._write(lambda tx: tx.bump(INDEX_WRITES, -1))  # as an older release leaves it
        _same_everywhere(store, cache)


def test_counts_that_come_back_to_where_they_were_are_not_taken_for_no_write(
    any_store: AnyStore,
) -> None:
    """A fact written, a tombstone pruned and a fact retired leave the agent's counts as
    they were, with other postings: the count of index writes tells them apart."""
    store, cache = any_store, KeywordCache()
    kept = store.put(AGENT, "deploy the server on friday")
    store.retire(store.put(AGENT, "deploy an old server").id)
    before = store.read_index(lambda tx: tx.index_stamp(AGENT))
    _same_everywhere(store, cache)
    store.put(AGENT, "deploy the canary")
    store.delete([f.id for f in store.list_facts(AGENT, "tombstones")])
    store.retire(kept.id)
    stamp = store.read_index(lambda tx: tx.index_stamp(AGENT))
    assert stamp is not None and before is not None
    assert stamp[1:] == before[1:]  # the counts and the language: as they were
    _same_everywhere(store, cache)


def test_another_process_writing_is_seen(store: LmdbStore) -> None:
    cache = KeywordCache()
    store.put(AGENT, "deploy the server on friday")
    _same_everywhere(store, cache)
    done = run_graymatter("--dir", str(store.path), "remember", AGENT, "deploy canary server")
    assert done.returncode == 0, done.stderr
    direct, copied = _both(store, cache, "deploy")
    assert copied == direct
    assert len(direct) == 2


def test_a_common_term_is_capped_as_in_the_store(gm: LmdbStore) -> None:
    """A term over `POSTINGS_PER_TERM` facts adds its newest ones and its weight in every
    fact already found: the copy walks its arrays the same way."""
    gm.put_many(
        NewFact(AGENT, text, created_at=FIXED + timedelta(seconds=n))
        for n, text in enumerate(
            [
                *(f"zanzibar archive item {n}" for n in range(5)),
                "deploy deploy zanzibar",
                *(f"routine deploy of service {n}" for n in range(POSTINGS_PER_TERM + 200)),
                *(f"unrelated standup note {n}" for n in range(POSTINGS_PER_TERM + 300)),
            ]
        )
    )
    cache = KeywordCache()
    for query in ("deploy", "zanzibar deploy", "routine zanzibar service"):
        direct, copied = _both(gm, cache, query)
        assert copied == direct
    assert rank(gm, AGENT, "deploy", keywords=cache, weights=RecallWeights(1.0, 0.0)) == rank(
        gm, AGENT, "deploy", weights=RecallWeights(1.0, 0.0)
    )


def test_a_small_bound_drops_old_terms_and_answers_the_same(gm: LmdbStore) -> None:
    gm.put_many(NewFact(AGENT, f"{a} {b} {n}") for n, (a, b) in enumerate(pairwise(WORDS)))
    cache = KeywordCache(max_postings=3)
    for _ in range(2):
        for query in QUERIES:
            direct, copied = _both(gm, cache, query)
            assert copied == direct
    # Each word is in at most two facts: the last query's three terms, kept, hold six.
    assert sum(copy.held for copy in cache._agents.values()) <= 6


def test_a_write_in_progress_is_scored_from_the_store(gm: LmdbStore) -> None:
    """Inside a write (a trial apply's probes), the copy is neither used nor filled: the
    write's own postings are not yet counted in the stamp."""
    gm.put(AGENT, "deploy the server")
    cache = KeywordCache()
    found = gm._write(lambda tx: cache.scores(tx, AGENT, tx.terms("deploy")))
    assert len(found) == 1
    assert cache._agents == {}
    gm.read_index(lambda tx: cache.scores(tx, AGENT, tx.terms("deploy")))
    assert list(cache._agents) == [AGENT]  # and a read does fill it


OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("put"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=5)),
        st.tuples(st.just("retire"), st.integers(0, 50)),
        st.tuples(st.just("revise"), st.integers(0, 50)),
        st.tuples(st.just("query"), st.lists(st.sampled_from(WORDS), min_size=1, max_size=3)),
    ),
    min_size=1,
    max_size=25,
)


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(operations=OPERATIONS)
def test_any_sequence_of_writes_and_queries_agrees(
    gm: LmdbStore, operations: list[tuple[str, object]]
) -> None:
    """Writes and queries in any order over one store and one copy, kept across examples
    (so a copy taken in an earlier example must also be noticed as stale)."""
    cache = _SHARED
    for kind, value in operations:
        live = gm.list_facts(AGENT, "live")
        if kind == "put":
            gm.put(AGENT, " ".join(value))
        elif kind == "retire" and live:
            gm.retire(live[value % len(live)].id)
        elif kind == "revise" and live:
            target = live[value % len(live)]
            gm.revise(target.id, target.text + " " + WORDS[value % len(WORDS)])
        else:
            query = " ".join(value) if kind == "query" else "deploy"
            direct, copied = _both(gm, cache, query)
            assert copied == direct


_SHARED = KeywordCache()
