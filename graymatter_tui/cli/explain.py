"""`recall --explain`: why each fact ranked where it did, and what it superseded, in the
same keys MCP's `memory_search` gives with `explain: true` (plus the lineage's facts)."""

from __future__ import annotations

from typing import Any

from graymatter_tui.cli.output import one_line
from graymatter_tui.core.provenance import describe
from graymatter_tui.core.receipts import lineage_fields, lineage_summary
from graymatter_tui.recall.explain_fields import signal_fields, signal_summary
from graymatter_tui.recall.ranking import Hit, lineages
from graymatter_tui.storage import MemoryStore


def explanations(store: MemoryStore, agent: str, hits: list[Hit]) -> list[dict[str, Any]]:
    found = lineages(store, agent, [hit.fact.id for hit in hits])
    now = store.now()
    return [
        {
            **signal_fields(hit, now),
            "weight": hit.fact.weight,
            "pinned": hit.fact.pinned,
            "written_at": hit.fact.created_at,
            "source": hit.fact.source,
            **lineage_fields(found[hit.fact.id]),
        }
        for hit in hits
    ]


def explanation_lines(why: dict[str, Any]) -> list[str]:
    """Indented lines under a hit: each signal's rank and score, then the fact's weight
    and provenance, then one line per fact it replaced, nearest first. Stored text goes
    through `one_line` (neutralised) and `say`."""
    lines = [
        signal_summary(why),
        f"weight {why['weight']:.3f}{' · pinned' if why['pinned'] else ''} · "
        f"written {why['written_at']} by {one_line(describe(why['source']))}",
        f"lineage: {lineage_summary(why)}",
    ]
    for ancestor in why["lineage"]:
        indent = "  " * ancestor["depth"]
        if ancestor["pruned"]:
            lines.append(f"{indent}{ancestor['fact_id']}  (pruned; its copy is in the journal)")
        else:
            lines.append(f"{indent}{ancestor['fact_id']}  {one_line(ancestor['text'])}")
    return lines
