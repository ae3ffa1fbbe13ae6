"""Recall's vector signal (`vector_signal.QueryVectors`) over the store's vectors: embed
the query with a short timeout, then search the agent's blocks, or, in a long-running
process, an in-RAM copy of them kept exact (`vector_cache`, ADR 0045). Any failure gives
None (recall then ranks on keyword and recency); nothing here raises into recall."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from graymatter_tui.embedding.settings import EmbedSettings
from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.storage import MemoryStore

if TYPE_CHECKING:  # numpy loads when a vector is first needed, not when the TUI starts
    from graymatter_tui.embedding.base import Embedder

log = logging.getLogger(__name__)


class StoreQueryVectors:
    def __init__(
        self, store: MemoryStore, embedder: Embedder, timeout: float, *, cache: bool = False
    ) -> None:
        self.store = store
        # Only a process that answers many queries gains from copying the vectors to RAM.
        self.cache = VectorCache(store) if cache else None
        self.embedder = embedder
        self.timeout = timeout
        self.last_error = ""  # why the last query had no vector signal, for diagnostics

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        try:
            name, dimension = self.store.embed_model()
            if name != self.embedder.model or dimension is None or not query.strip():
                return None  # no vectors of this model yet: don't call the server
            self.embedder.dimension = dimension
            vector = self.embedder.embed([query], timeout=self.timeout)[0]
            if self.cache is not None:
                return self.cache.nearest(agent, name, vector, limit)
            return self.store.nearest(agent, name, vector, limit)
        except Exception as exc:  # never into recall: it ranks without vectors instead
            self.last_error = str(exc) or type(exc).__name__
            log.debug("no vector signal: %s", self.last_error)
            return None


def from_env(store: MemoryStore, *, cache: bool = False) -> StoreQueryVectors | None:
    """The vector signal GRAYMATTER_EMBED configures for `store`, or None (embeddings
    off). `cache`: keep the vectors in RAM for repeated queries (TUI, MCP server). A bad
    setting raises InvalidInput, as every setting does."""
    from graymatter_tui.embedding.factory import from_settings

    settings = EmbedSettings.from_env()
    embedder = from_settings(settings)
    if embedder is None:
        return None
    return StoreQueryVectors(store, embedder, settings.query_timeout, cache=cache)
