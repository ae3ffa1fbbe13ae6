"""An honest `QueryVectors` for tests: the query and every live fact of the agent are
embedded with the fixed concept table (`tests.support.concepts.concept_vector`), and the
nearest are found by brute-force cosine. No stored vectors, no server: it is what the
stored pipeline answers when its vectors are current, in a few lines, so recall's fusion
can be tested on its own. `stale` adds answers a lagging vector store could give (ids of
facts since retired or revised, or of no fact at all) to check recall re-reads them.

It also answers `CandidateSimilarity.similarities` (the cosine of chosen facts), so a
keyword match outside the nearest answer is fused with its own cosine; `unembedded` names
facts it has no vector for (an embedder behind), which get recall's stand-in.

`per_sentence=True` embeds each sentence of a fact and scores the fact by its best
sentence (what a pipeline that embeds long facts in chunks would answer); without it a
fact has one vector for its whole text, so a summary of many facts is diluted
(docs/decisions/0038 measures the difference)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from graymatter_tui.storage import MemoryStore
from tests.support.concepts import concept_dimension, concept_vector

DIMENSION = 64  # plenty for the table; the cosine does not depend on the padding
_SENTENCE_END = re.compile(r"(?<=[.;!?])\s+")


class ConceptVectors:
    def __init__(
        self,
        store: MemoryStore,
        *,
        stale: list[tuple[str, float]] | None = None,
        per_sentence: bool = False,
        unembedded: set[str] | None = None,
    ):
        self._store = store
        self._stale = stale or []
        self._per_sentence = per_sentence
        # Facts that have no vector yet (an embedder behind): never answered for.
        self.unembedded = unembedded or set()
        self.asked: list[tuple[str, str, int]] = []
        self.asked_similarities: list[list[str]] = []

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        self.asked.append((agent, query, limit))
        scored = list(self._scored(agent, query).items())
        scored += self._stale
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:limit]

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        """`CandidateSimilarity`: the same cosines as `nearest`, for the facts asked."""
        self.asked_similarities.append(list(fact_ids))
        scored = self._scored(agent, query)
        return {i: scored[i] for i in fact_ids if i in scored}

    def _scored(self, agent: str, query: str) -> dict[str, float]:
        wanted = concept_vector(query, DIMENSION)
        return {
            fact.id: max(
                _cosine(wanted, concept_vector(part, DIMENSION)) for part in self._parts(fact.text)
            )
            for fact in self._store.list_facts(agent, "live")
            if fact.id not in self.unembedded
        }

    def _parts(self, text: str) -> list[str]:
        if not self._per_sentence:
            return [text]
        return [part for part in _SENTENCE_END.split(text) if part.strip()] or [text]


def _cosine(a: list[float], b: list[float]) -> float:
    # Both are unit vectors, zero past the table's axes: the same sum, without the zeros.
    used = concept_dimension()
    return sum(x * y for x, y in zip(a[:used], b[:used], strict=True))


class NoVectors:
    """A signal that has nothing for any query (no embedder, server down): None."""

    def __init__(self) -> None:
        self.asked = 0

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        self.asked += 1
        return None
