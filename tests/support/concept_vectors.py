"""An honest `QueryVectors` for tests: the query and every live fact of the agent are
embedded with the fixed concept table (`tests.support.concepts.concept_vector`), and the
nearest are found by brute-force cosine. No stored vectors, no server: it is what the
stored pipeline answers when its vectors are current, in a few lines, so recall's fusion
can be tested on its own. `stale` adds answers a lagging vector store could give (ids of
facts since retired or revised, or of no fact at all) to check recall re-reads them."""

from __future__ import annotations

from graymatter_tui.store import MemoryStore
from tests.support.concepts import concept_vector

DIMENSION = 64  # plenty for the table; the cosine does not depend on the padding


class ConceptVectors:
    def __init__(self, store: MemoryStore, *, stale: list[tuple[str, float]] | None = None):
        self._store = store
        self._stale = stale or []
        self.asked: list[tuple[str, str, int]] = []

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        self.asked.append((agent, query, limit))
        wanted = concept_vector(query, DIMENSION)
        scored = [
            (fact.id, _cosine(wanted, concept_vector(fact.text, DIMENSION)))
            for fact in self._store.list_facts(agent, "live")
        ]
        scored += self._stale
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:limit]


def _cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))  # both are unit vectors


class NoVectors:
    """A signal that has nothing for any query (no embedder, server down): None."""

    def __init__(self) -> None:
        self.asked = 0

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        self.asked += 1
        return None
