"""A per-process copy of the postings recall reads, as arrays, for processes that rank
many queries (the MCP server, the TUI): the same keyword scores as the store's index
gives, to the last bit, without a Python step per posting (ADR 0074).

A LoCoMo question at 100k facts reads ~3,000 postings and looks up ~4,000 more, each a
store read and a few dict updates in Python: 10-40 ms. Here each term's postings are read
from the store once, kept as two arrays (the facts' slots, the weights' codes), and a
query is a handful of array operations per term.

Never stale: every read checks the index's stamp (`KeywordIndex.index_stamp`, one or two
key reads) in the same snapshot the scores are read in, and an agent whose stamp moved is
copied again, term by term, as queries need them. A snapshot that cannot be stamped (a
write in progress, memory as it was) is scored from the store. Bounded: past
`MAX_POSTINGS` postings held, the terms used longest ago are dropped.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import TYPE_CHECKING

from graymatter_tui.recall.ranking import (
    POSTINGS_PER_TERM,
    KeywordPlan,
    _keyword_scores,
    impact,
    keyword_plan,
)
from graymatter_tui.storage import KeywordIndex

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    Slots = npt.NDArray[np.int32]
    Floats = npt.NDArray[np.float64]

# Postings held across every agent: 8 bytes each (32 MB). A 100k-fact store holds about
# a million in all; a query reads a few of its terms.
MAX_POSTINGS = 4_000_000


class _Postings:
    """One term's postings: each fact's slot and its (count, length) pair's code, in the
    store's order (oldest fact first)."""

    __slots__ = ("codes", "slots")

    def __init__(self, slots: Slots, codes: Slots) -> None:
        self.slots = slots
        self.codes = codes


class _AgentCopy:
    """One agent's copied terms, valid for one stamp of its index."""

    def __init__(self, stamp: Hashable) -> None:
        self.stamp = stamp
        self.ids: list[str] = []  # slot -> fact id
        self.slot_of: dict[str, int] = {}
        self.terms: OrderedDict[str, _Postings] = OrderedDict()  # least recently used first
        self.code_of: dict[tuple[int, int], int] = {}
        self.weights: list[float] = []  # code -> `impact(count, length)`
        self.held = 0  # postings

    def postings(self, tx: KeywordIndex, agent: str, term: str) -> _Postings:
        import numpy as np

        found = self.terms.get(term)
        if found is not None:
            self.terms.move_to_end(term)
            return found
        slot_of, ids, code_of, weights = self.slot_of, self.ids, self.code_of, self.weights
        slots: list[int] = []
        codes: list[int] = []
        for fact_id, count, length in tx.iter_postings(agent, term):
            slot = slot_of.get(fact_id)
            if slot is None:
                slot = slot_of[fact_id] = len(ids)
                ids.append(fact_id)
            pair = (count, length)
            code = code_of.get(pair)
            if code is None:
                code = code_of[pair] = len(weights)
                weights.append(impact(count, length))
            slots.append(slot)
            codes.append(code)
        found = _Postings(np.array(slots, dtype=np.int32), np.array(codes, dtype=np.int32))
        self.terms[term] = found
        self.held += len(slots)
        return found


class KeywordCache:
    """`scores(tx, agent, terms)`: `recall.rank`'s keyword scores from copied postings.
    Safe to share between threads: one lock, held for a query's few array operations."""

    def __init__(self, max_postings: int = MAX_POSTINGS) -> None:
        self.max_postings = max_postings
        self._agents: dict[str, _AgentCopy] = {}
        self._lock = threading.Lock()
        # What the last calls did, for tests and benches: copies made again, terms read.
        self.renewed = 0
        self.terms_read = 0

    def scores(self, tx: KeywordIndex, agent: str, terms: list[str]) -> dict[str, float]:
        stamp = tx.index_stamp(agent)
        if stamp is None:
            return _keyword_scores(tx, agent, terms)
        plan = keyword_plan(tx, agent, terms)
        if plan is None:
            return {}
        with self._lock:
            copy = self._agents.get(agent)
            if copy is None or copy.stamp != stamp:
                if copy is not None:
                    self.renewed += 1
                copy = self._agents[agent] = _AgentCopy(stamp)
            wanted = [*plan.rare, *plan.common]
            postings = {}
            for term, _idf in wanted:
                if term not in copy.terms:
                    self.terms_read += 1
                postings[term] = copy.postings(tx, agent, term)
            # A copy that disagrees with the snapshot's document frequencies was taken of
            # another state (a writer that moved no stamp): read it all again.
            if any(len(postings[t].slots) != plan.frequencies[t] for t, _ in wanted):
                self.renewed += 1
                copy = self._agents[agent] = _AgentCopy(stamp)
                postings = {t: copy.postings(tx, agent, t) for t, _ in wanted}
            found = _score(copy, plan, postings)
            self._trim(keep=set(postings))
            return found

    def _trim(self, keep: set[str]) -> None:
        """Drop the terms used longest ago until at most `max_postings` are held."""
        held = sum(copy.held for copy in self._agents.values())
        for copy in list(self._agents.values()):
            while held > self.max_postings and copy.terms:
                term, oldest = next(iter(copy.terms.items()))
                if term in keep:
                    break
                del copy.terms[term]
                copy.held -= len(oldest.slots)
                held -= len(oldest.slots)


def _score(copy: _AgentCopy, plan: KeywordPlan, postings: dict[str, _Postings]) -> dict[str, float]:
    """`ranking._keyword_scores` over arrays: each fact gets the same additions in the
    same order (one per term), so every score is the same float."""
    import numpy as np

    size = len(copy.ids)
    score = np.zeros(size)
    matched = np.zeros(size)
    hit = np.zeros(size, dtype=bool)
    weights = np.array(copy.weights)
    for term, idf in plan.rare:
        found = postings[term]
        slots = found.slots
        score[slots] += weights[found.codes] * idf
        matched[slots] += idf
        hit[slots] = True
    for term, idf in plan.common:
        # Its newest postings (the last in the store's order), and every fact found so far.
        found = postings[term]
        chosen = hit[found.slots]
        chosen[-POSTINGS_PER_TERM:] = True
        slots = found.slots[chosen]
        score[slots] += weights[found.codes[chosen]] * idf
        matched[slots] += idf
        hit[slots] = True
    where = np.flatnonzero(hit)
    values = score[where] * (matched[where] / plan.total)
    ids = copy.ids
    return dict(zip([ids[i] for i in where.tolist()], values.tolist(), strict=True))
