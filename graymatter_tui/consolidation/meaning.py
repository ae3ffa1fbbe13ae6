"""How close in meaning the facts of a cycle's batch are, read from the vectors the
background embedder already stored: no model is loaded and nothing is embedded here. A
store without vectors (the embedder `none`, or not reached these facts yet) gives None.

Two facts' score is the lowest, over every piece of either, of that piece's best cosine
to a piece of the other: each fact has a close counterpart in the other for all it says.
One piece each (a short fact): their plain cosine."""

from __future__ import annotations

from collections.abc import Sequence

from graymatter_tui.consolidation.summarisers.base import BatchMeaning
from graymatter_tui.core.model import BatchItem
from graymatter_tui.storage import MemoryStore


def batch_meaning(
    store: MemoryStore, agent: str, batch: Sequence[BatchItem]
) -> BatchMeaning | None:
    """The pairwise meaning of `batch`'s facts that hold a vector; None when fewer than
    two do."""
    found = store.fact_vectors(agent, [item.id for item in batch])
    if found is None:
        return None
    ids = sorted(item.id for item in batch if item.id in found.rows)
    if len(ids) < 2:
        return None
    pairs: dict[tuple[str, str], float] = {}
    for x, first in enumerate(ids):
        for second in ids[x + 1 :]:
            cosines = found.rows[first] @ found.rows[second].T
            score = min(cosines.max(axis=1).min(), cosines.max(axis=0).min())
            pairs[(first, second)] = round(float(score), 6)
    return BatchMeaning(found.model, pairs)
