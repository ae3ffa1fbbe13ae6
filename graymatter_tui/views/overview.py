"""Store-wide figures shared by `status` and the TUI's Status screen."""

from __future__ import annotations

from typing import TypedDict

from graymatter_tui.storage import MemoryStore


class AgentFigures(TypedDict):
    agent_id: str
    live_facts: int
    tombstones: int
    pinned: int
    avg_weight: float


class StatusPayload(TypedDict):
    """`status --json`: these keys, in this order, are part of the CLI's contract."""

    data_dir: str
    schema_version: int
    engine: str
    live_facts: int
    tombstones: int
    pinned: int
    consolidations: int
    facts_consumed: int
    reverts: int
    cycles: int
    generation: int
    file_bytes: int
    map_size: int
    map_used: int
    agents: list[AgentFigures]
    stem_language: str  # added in schema 4, after the keys above
    # Added with embeddings (schema 5): the store's model and dimension (None until
    # recorded) and the live facts waiting for a vector.
    embed_model: str | None
    embed_dim: int | None
    embed_backlog: int
    # Agents' changes held for a person (the review queue) and saved recall probes.
    pending_reviews: int
    probes: int
    # False where there is no store yet (a directory or a database without one): read
    # commands show it empty, and it has no file, map or database size of its own.
    store_exists: bool


def status_payload(store: MemoryStore) -> StatusPayload:
    """The figures, read in one snapshot: they agree with each other while others write,
    and on a server they cost one transaction, not one each."""
    exists = not store.absent
    return store.in_one_snapshot(lambda view: _payload(view, exists))


def status_and_weights(store: MemoryStore, agent: str) -> tuple[StatusPayload, list[float]]:
    """`status_payload` and the weights of `agent`'s live facts, in one snapshot."""
    exists = not store.absent

    def read(view: MemoryStore) -> tuple[StatusPayload, list[float]]:
        return _payload(view, exists), list(view.weights(agent, "live").values())

    return store.in_one_snapshot(read)


def _payload(store: MemoryStore, exists: bool) -> StatusPayload:
    agents = store.agents()
    counters = store.counters()
    info = store.info()
    embed_model, embed_dim = store.embed_model()
    return {
        "data_dir": info.data_dir,
        "schema_version": info.schema_version,
        "engine": info.engine,
        "live_facts": sum(a.live_facts for a in agents),
        "tombstones": sum(a.tombstones for a in agents),
        "pinned": sum(a.pinned for a in agents),
        "consolidations": counters.consolidations,
        "facts_consumed": counters.facts_consolidated,
        "reverts": counters.reverts,
        "cycles": counters.cycles,
        "generation": info.generation,
        # An absent store is shown through a scratch map of its own: none of its figures.
        "file_bytes": info.file_bytes if exists else 0,
        "map_size": info.map_size if exists else 0,
        "map_used": info.map_used if exists else 0,
        "agents": [
            {
                "agent_id": a.agent_id,
                "live_facts": a.live_facts,
                "tombstones": a.tombstones,
                "pinned": a.pinned,
                "avg_weight": a.avg_weight,
            }
            for a in agents
        ],
        "stem_language": info.stem_language,
        "embed_model": embed_model,
        "embed_dim": embed_dim,
        "embed_backlog": store.embed_backlog(),
        "pending_reviews": store.pending_count(),
        "probes": len(store.probes()),
        "store_exists": exists,
    }


def weight_histogram(weights: list[float], buckets: int = 10) -> list[int]:
    counts = [0] * buckets
    for weight in weights:
        counts[min(int(weight * buckets), buckets - 1)] += 1
    return counts


def size_text(payload: StatusPayload, *, grows_note: bool = False) -> str:
    """The status line about size: an LMDB store's file and map; a database's size; or,
    where there is no store yet, that there is none (LMDB's map is then a scratch one)."""
    if not payload["store_exists"]:
        return "nothing yet: there is no store here (the first write creates it)"
    on_disk = f"{payload['file_bytes'] / 1e6:.1f} MB"
    if not payload["map_size"]:  # a server holds the store: no map to show
        return f"{on_disk} in the database"
    used = payload["map_used"] / payload["map_size"]
    text = (
        f"{on_disk} on disk · map {payload['map_used'] / 1e6:.1f} of "
        f"{payload['map_size'] / 1e6:.0f} MB used"
    )
    return text + (f" ({used:.0%}; grows automatically)" if grows_note else "")
