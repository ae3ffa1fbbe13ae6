"""The keyword index as recall reads it on PostgreSQL: postings oldest first, the newest N
newest first, and one fact's posting (its vectors: tests/conformance/test_same_vectors.py)."""

from __future__ import annotations

from typing import Any

from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.storage import NewFact


def test_postings_in_both_orders_and_one_posting(pg_url: str) -> None:
    with PgStore.open(pg_url) as store:
        facts = store.put_many([NewFact("a", f"lamp number {i} lamp") for i in range(5)])
        store.retire(facts[2].id)

        def read(index: Any) -> tuple[list[str], list[str], Any, Any]:
            (term,) = index.terms("lamp")
            oldest_first = [p[0] for p in index.iter_postings("a", term)]
            newest_two = [p[0] for p in index.iter_postings("a", term, 2)]
            return (
                oldest_first,
                newest_two,
                index.posting("a", term, facts[0].id),
                index.posting("a", term, facts[2].id),
            )

        oldest_first, newest_two, held, retired = store.read_index(read)
    live = [f.id for f in facts if f.id != facts[2].id]
    assert oldest_first == sorted(live)
    assert newest_two == sorted(live, reverse=True)[:2]
    assert held == (2, 4)  # "lamp" twice in a fact of four tokens ("number" and the digit)
    assert retired is None
