"""The seam between recall and embeddings: recall asks for the live facts of an agent
nearest in meaning to a query, and knows nothing of models, servers or how vectors are
stored. The embedding pipeline answers; without one, recall ranks on keyword and recency."""

from __future__ import annotations

from typing import Protocol


class QueryVectors(Protocol):
    """The vector signal of recall."""

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        """Up to `limit` (fact id, cosine similarity) pairs of `agent`'s live facts, most
        similar first, compared only with vectors of the store's current model. None when
        there is no vector signal for this query (no embedder configured, no vectors yet,
        or the embedding server failed or was too slow): recall then ranks on keyword and
        recency alone, as it does for any fact that has no vector yet."""
        ...
