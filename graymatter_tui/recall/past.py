"""Recall as it was (`recall --as-of`): the store's own ranking, over the facts that were
live at a past moment.

The keyword signal is TF-IDF over that set (`storage.past_index`); recency orders it by
id as always. The vector signal uses the vectors the store holds now: a fact live then
and now has one (when it has been embedded), a fact that has stopped being live since
lost its vector then, so it ranks on keyword and recency alone. Nothing is written: no
access is recorded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar, Unpack, cast

from graymatter_tui.core.lifespan import AsOf
from graymatter_tui.recall.ranking import Hit, RankOptions, rank
from graymatter_tui.storage import KeywordIndex, MemoryStore, PastFacts

T = TypeVar("T")


class _PastView:
    """What `rank` reads of a store (only `read_index`), answered over the past set."""

    def __init__(self, store: MemoryStore, past: PastFacts) -> None:
        self._store = store
        self._past = past

    def read_index(self, fn: Callable[[KeywordIndex], T]) -> T:
        return self._store.read_past_index(self._past, fn)


def live_then(past: PastFacts) -> int:
    return sum(1 for p in past.facts if p.then == "live")


def rank_as_of(
    store: MemoryStore, agent: str, query: str, as_of: AsOf, **options: Unpack[RankOptions]
) -> tuple[list[Hit], PastFacts]:
    """The top facts of `agent` live at the moment `as_of` names, and that moment's facts
    (for what happened to each since). Raises as `MemoryStore.past_facts` does."""
    past = store.past_facts(agent, as_of, with_facts=False)
    view = cast(MemoryStore, _PastView(store, past))  # rank reads only `read_index`
    return rank(view, agent, query, **options), past
