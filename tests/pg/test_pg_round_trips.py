"""What a read costs on the wire, where every round trip is a network's delay: a snapshot
read says its isolation in BEGIN (no SET after it), a write on the same pooled connection
afterwards is not left read-only, and `status` is one transaction however many figures it
reads."""

from __future__ import annotations

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.views.overview import status_and_weights, status_payload
from tests.embedding.test_meaning_pairs import SCHOOL, SCHOOL_NOW, TOWNS
from tests.support.counting_proxy import CountingProxy

SNAPSHOT_BEGIN = "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"


def _begins(statements: list[str]) -> list[str]:
    return [s for s in statements if s.upper().startswith("BEGIN")]


def test_a_snapshot_read_is_begin_its_statement_and_commit(
    counted: tuple[CountingProxy, str],
) -> None:
    proxy, url = counted
    with PgStore.open(url) as store:
        store.put("ann", "a fact to count")
        with proxy.counting() as made:
            agents = store.agents()
        assert [a.live_facts for a in agents] == [1]
        sent = list(proxy.statements)
    assert _begins(sent) == [SNAPSHOT_BEGIN]
    assert not any("SET TRANSACTION" in s.upper() for s in sent)
    # The pool's liveness check (an empty query), BEGIN, the SELECT, COMMIT.
    assert made[0] == 4


def test_a_write_after_a_read_on_the_same_connection_is_not_read_only(
    counted: tuple[CountingProxy, str],
) -> None:
    proxy, url = counted
    with PgStore.open(url) as store:
        for i in range(3):  # the pool hands back the connection the read just used
            assert len(store.list_facts("ann")) == i
            with proxy.counting():
                store.put("ann", f"written after a read {i}")
            assert _begins(proxy.statements) == ["BEGIN ISOLATION LEVEL READ COMMITTED"]
        assert len(store.list_facts("ann")) == 3


def test_status_reads_every_figure_in_one_transaction(
    counted: tuple[CountingProxy, str],
) -> None:
    proxy, url = counted
    with PgStore.open(url) as store:
        store.put("ann", "the first fact")
        store.put("bob", "another agent's fact")
        store.add_probe("ann", "first fact")
        with proxy.counting():
            payload = status_payload(store)
        assert _begins(proxy.statements) == [SNAPSHOT_BEGIN]
        assert (payload["live_facts"], [a["agent_id"] for a in payload["agents"]]) == (
            2,
            ["ann", "bob"],
        )
        assert payload["probes"] == 1
        assert payload["generation"] == store.generation()
        with proxy.counting():
            again, weights = status_and_weights(store, "ann")
        assert _begins(proxy.statements) == [SNAPSHOT_BEGIN]
        assert again == payload
        assert weights == list(store.weights("ann", "live").values())


def test_holding_pairs_found_by_meaning_costs_the_same_round_trips_for_any_number(
    counted: tuple[CountingProxy, str],
) -> None:
    """The embedder's pass holds what it found in one read and one write whose round
    trips do not grow with the pairs: on a server 100 ms away, 64 pairs took a minute."""
    proxy, url = counted
    made = {}
    with PgStore.open(url) as store:
        for pairs in (4, 64):
            agent = f"agent-{pairs}"
            close = []
            assert store.pending_count() == (0 if pairs == 4 else 4)
            for i in range(pairs):
                older = store.put(agent, SCHOOL.format(TOWNS[i]))
                newer = store.put(agent, SCHOOL_NOW.format(TOWNS[i]))
                close.append((newer.id, {older.id: 0.95}))
            with proxy.counting() as trips:
                held = store.hold_close_pairs(agent, close)
            assert len(held) == pairs
            made[pairs] = trips[0]
        assert store.pending_count() == 68
    assert made[64] == made[4] <= 20
