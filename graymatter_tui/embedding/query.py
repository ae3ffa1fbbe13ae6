"""Recall's vector signal (`vector_signal.QueryVectors`) over the store's vectors: embed
the query with a short timeout, then search the agent's blocks, or, in a long-running
process, an in-RAM copy of them kept exact (`vector_cache`, ADR 0045). Any failure gives
None (recall then ranks on keyword and recency); nothing here raises into recall.

What happened to the last query's vector signal, in the thread that asked, is
`last_use()`: used, or why not, and whether the embedder failed (the model missing or
damaged, the server down). The CLI, the MCP server and the TUI say so (ADR 0058). Right after
a query, `similarities` gives the cosines of recall's keyword candidates from the same
query vector (recall.vector_signal.CandidateSimilarity)."""

from __future__ import annotations

import contextlib
import logging
import threading
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from graymatter_tui.embedding.settings import EmbedSettings
from graymatter_tui.embedding.vector_cache import VectorCache
from graymatter_tui.storage import MemoryStore

if TYPE_CHECKING:  # numpy loads when a vector is first needed, not when the TUI starts
    import numpy as np
    import numpy.typing as npt

    from graymatter_tui.embedding.base import Embedder

    Vector = npt.NDArray[np.float32]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class VectorUse:
    """Whether a recall had its vector signal, and if not, why (one line). `failed`: the
    embedder itself failed, rather than there being no vectors to compare yet."""

    used: bool
    reason: str = ""
    failed: bool = False

    def as_json(self) -> dict[str, Any]:
        found: dict[str, Any] = {"used": self.used}
        if not self.used:
            found.update(reason=self.reason, failed=self.failed)
        return found


NEVER_EMBEDDED = (
    "this store has no vectors yet (`graymatter-tui embed` makes them; so do the TUI and "
    "the MCP server while they run)"
)
OFF = VectorUse(False, "embeddings are off (GRAYMATTER_EMBED=none)")
NOT_ASKED = VectorUse(False, "no query was ranked yet")


def use_of(vectors: object | None) -> VectorUse:
    """The last recall's VectorUse in this thread: OFF without an embedder; another
    implementation of recall's QueryVectors, which does not report its use, counts as
    used."""
    if vectors is None:
        return OFF
    if isinstance(vectors, StoreQueryVectors):
        return vectors.last_use()
    return VectorUse(True)


class StoreQueryVectors:
    def __init__(
        self,
        store: MemoryStore,
        embedder: Embedder,
        timeout: float,
        *,
        cache: bool = False,
        on_cache_built: Callable[[], None] | None = None,
    ) -> None:
        self.store = store
        # Only a process that answers many queries gains from copying the vectors to RAM.
        self.cache = VectorCache(store, on_cache_built) if cache else None
        self.embedder = embedder
        self.timeout = timeout
        self.last_error = ""  # why the last query had no vector signal, for diagnostics
        self._last = threading.local()
        self.latest = NOT_ASKED  # the last query's, from any thread (the TUI's Status tab)

    def warm(self) -> None:
        """Load a local model on a daemon thread now, so the first query of a long-running
        process (the MCP server) does not wait for it; only when the store holds vectors
        of its model. Servers are not called."""
        from graymatter_tui.embedding.local import LocalEmbedder

        embedder = self.embedder
        if not isinstance(embedder, LocalEmbedder):
            return
        try:
            if self.store.embed_model()[0] != embedder.model:
                return  # no vectors of this model to compare with: queries won't embed
        except Exception:  # the first query says what is wrong
            return

        def load() -> None:
            try:
                embedder.runtime()
            except Exception as exc:  # said by the first query instead
                log.info("the local model did not load: %s", exc)

        threading.Thread(target=load, name="graymatter-model-load", daemon=True).start()

    def last_use(self) -> VectorUse:
        use = getattr(self._last, "use", None)
        return use if isinstance(use, VectorUse) else NOT_ASKED

    def nearest(self, agent: str, query: str, limit: int) -> list[tuple[str, float]] | None:
        found, use = self._nearest(agent, query, limit)
        self._last.use = self.latest = use
        return found

    def _nearest(
        self, agent: str, query: str, limit: int
    ) -> tuple[list[tuple[str, float]] | None, VectorUse]:
        try:
            name, dimension = self.store.embed_model()
            wanted = self.embedder.model
            if name is None:
                return None, VectorUse(False, NEVER_EMBEDDED)
            if name == wanted and dimension is None:
                # No vectors of this model yet: don't load the model or call the server.
                waiting = self.store.embed_backlog()
                return None, VectorUse(False, f"no fact has a vector yet ({waiting} waiting)")
            if name != wanted:
                why = f"this store's vectors are of {name}, not {wanted} (the next embedder run"
                return None, VectorUse(False, f"{why} makes them again)")
            if not query.strip():
                return None, VectorUse(False, "the query is blank")
            self.embedder.dimension = dimension
            vector = self.embedder.embed([query], timeout=self.timeout)[0]
            # The query's vector, for `similarities` in this thread.
            self._last.vector = (query, name, vector)
            if self.cache is not None:
                found = self.cache.nearest(agent, name, vector, limit)
            else:
                found = self.store.nearest(agent, name, vector, limit)
        except Exception as exc:  # never into recall: it ranks without vectors instead
            self.last_error = str(exc) or type(exc).__name__
            log.debug("no vector signal: %s", self.last_error)
            return None, VectorUse(False, self.last_error, failed=True)
        if found is None:
            return None, VectorUse(False, f"no fact of {agent} has a vector yet")
        return found, VectorUse(True)

    def similarities(self, agent: str, query: str, fact_ids: Sequence[str]) -> dict[str, float]:
        """`CandidateSimilarity`: the cosines of `fact_ids` to the query `nearest` just
        embedded (never embedded again: another query gets an empty answer)."""
        last = getattr(self._last, "vector", None)
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


def from_env(
    store: MemoryStore,
    *,
    cache: bool = False,
    on_cache_built: Callable[[], None] | None = None,
    model_process: bool = False,
) -> StoreQueryVectors | None:
    """The vector signal GRAYMATTER_EMBED configures for `store`, or None (embeddings
    off). `cache`: keep the vectors in RAM for repeated queries (TUI, MCP server), calling
    `on_cache_built` once each agent's copy is built. `model_process`: a local model
    runs in a process of its own (ADR 0083). A bad setting raises InvalidInput, as every
    setting does."""
    from graymatter_tui.embedding.factory import from_settings

    settings = EmbedSettings.from_env()
    embedder = from_settings(settings, model_process=model_process)
    if embedder is None:
        return None
    return StoreQueryVectors(
        store, embedder, settings.query_timeout, cache=cache, on_cache_built=on_cache_built
    )
