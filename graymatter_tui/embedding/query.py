"""Recall's vector signal (`vector_signal.QueryVectors`) over the store's vectors: embed
the query with a short timeout, then search the agent's blocks, or, in a long-running
process, an in-RAM copy of them kept exact (`vector_cache`, ADR 0045). Any failure gives
None (recall then ranks on keywords alone); nothing here raises into recall. Right after
a query, `similarities` gives the cosines of recall's keyword candidates from the same
query vector (recall.vector_signal.CandidateSimilarity)."""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING

from graymatter_tui.embedding.settings import EmbedSettings
from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.storage import MemoryStore, VectorBlockSource

if TYPE_CHECKING:  # numpy loads when a vector is first needed, not when the TUI starts
    import numpy as np
    import numpy.typing as npt

    from graymatter_tui.embedding.base import Embedder

    Vector = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


class StoreQueryVectors:
    def __init__(
        self, store: MemoryStore, embedder: Embedder, timeout: float, *, cache: bool = False
    ) -> None:
        self.store = store
        # Only a process that answers many queries gains from copying the vectors to RAM.
        wanted = cache and isinstance(store, VectorBlockSource)
        self.cache = VectorCache(store) if wanted and isinstance(store, VectorBlockSource) else None
        self.embedder = embedder
        self.timeout = timeout
        self.last_error = ""  # why the last query had no vector signal, for diagnostics
        self._last: tuple[str, str, Vector] | None = None  # (query, model, its vector)

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        try:
            name, dimension = self.store.embed_model()
            if name != self.embedder.model or dimension is None or not query.strip():
                return None  # no vectors of this model yet: don't call the server
            self.embedder.dimension = dimension
            vector = self.embedder.embed([query], timeout=self.timeout)[0]
            self._last = (query, name, vector)
            if self.cache is not None:
                return self.cache.nearest(agent, name, vector, limit)
            return self.store.nearest(agent, name, vector, limit)
        except Exception as exc:  # never into recall: it ranks without vectors instead
            self.last_error = str(exc) or type(exc).__name__
            log.debug("no vector signal: %s", self.last_error)
            return None

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        """`CandidateSimilarity`: the cosines of `fact_ids` to the query `nearest` just
        embedded (never embedded again: another query gets an empty answer)."""
        last = self._last
        if last is None or last[0] != query or not fact_ids:
            return {}
        _, name, vector = last
        try:
            if self.cache is not None:
                return self.cache.similarities(agent, name, vector, fact_ids)
            return self.store.similarities(agent, name, vector, fact_ids)
        except Exception as exc:  # as in `nearest`: recall uses its stand-in instead
            self.last_error = str(exc) or type(exc).__name__
            log.debug("no candidate cosines: %s", self.last_error)
            return {}


_CONFIGURED: weakref.WeakKeyDictionary[MemoryStore, tuple[EmbedSettings, StoreQueryVectors]] = (
    weakref.WeakKeyDictionary()
)
_CONFIGURED_LOCK = threading.Lock()


def configured(store: MemoryStore) -> StoreQueryVectors | None:
    """`from_env(store)`, kept per store while the settings stay the same: what
    `recall.rank` uses when its caller names no vector signal, so a program ranking many
    queries builds one embedder (a local model loads once), not one per query."""
    settings = EmbedSettings.from_env()
    if not settings.enabled:
        return None
    with _CONFIGURED_LOCK:
        try:
            held = _CONFIGURED.get(store)
        except TypeError:  # a store that cannot be weakly referenced: no keeping
            held = None
        if held is not None and held[0] == settings:
            return held[1]
    signal = from_env(store)
    if signal is not None:
        with _CONFIGURED_LOCK, contextlib.suppress(TypeError):
            _CONFIGURED[store] = (settings, signal)
    return signal


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
