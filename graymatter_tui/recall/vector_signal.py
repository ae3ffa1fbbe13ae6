"""The seam between recall and embeddings: recall asks for the live facts of an agent
nearest in meaning to a query, and knows nothing of models, servers or how vectors are
stored. The embedding pipeline answers; without one, recall ranks on keywords alone.

A signal may also answer `CandidateSimilarity.similarities`: the cosine of the same query
to facts recall found by keyword, so a keyword match outside the nearest few is fused
with its own cosine rather than a stand-in (ADR 0061)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Protocol, runtime_checkable


class QueryVectors(Protocol):
    """The vector signal of recall."""

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        """Up to `limit` (fact id, cosine similarity) pairs of `agent`'s live facts, most
        similar first, compared only with vectors of the store's current model. None when
        there is no vector signal for this query (no embedder configured, no vectors yet,
        or the embedding server failed or was too slow): recall then ranks on keywords
        alone, as it does for any fact that has no vector yet."""
        ...


@runtime_checkable
class CandidateSimilarity(Protocol):
    """What a vector signal may add to `QueryVectors`: cosines of chosen facts."""

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        """The cosine of `query` to each of `fact_ids` that has a vector of the store's
        current model (a fact's best row, as `nearest` scores it); facts without one are
        left out. Asked right after `nearest` for the same query, so an implementation
        may reuse that query's vector; never raises (an empty answer instead)."""
        ...


class _NoVectors:
    """No vector signal at all, said explicitly (`rank(..., vectors=NO_VECTORS)`), where
    `vectors=None` means "the one the environment configures"."""

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        return None

    def __repr__(self) -> str:
        return "NO_VECTORS"


NO_VECTORS: Final[QueryVectors] = _NoVectors()
