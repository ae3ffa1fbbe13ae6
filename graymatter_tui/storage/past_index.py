"""The keyword index of a past moment: recall ranks over the facts that were live then
(`recall --as-of`), with the store's own ranking code.

A fact live then and now answers from the store's postings; a fact that has stopped
being live since (a tombstone now, or pruned) is no longer in the postings, so its text
is analysed here, as the store analyses text. Document frequencies count the facts live
then, so idf is that of the memory as it was. Nothing is written.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import msgspec

from graymatter_tui.core.model import Fact
from graymatter_tui.storage.protocol import KeywordIndex
from graymatter_tui.storage.transaction import epoch_ms
from graymatter_tui.storage.values import PastFact, PastFacts

MAX_LENGTH = 65_535  # a posting's length field, as the backends clip it


class PastIndex:
    """`KeywordIndex` over the facts live at `past.moment` (of `past.agent`)."""

    def __init__(self, base: KeywordIndex, past: PastFacts) -> None:
        self._base = base
        self._agent = past.agent
        self._members: dict[str, PastFact] = {p.fact_id: p for p in past.facts if p.then == "live"}
        self._postings: dict[str, dict[str, tuple[int, int]]] = {}
        self._gone: dict[str, tuple[dict[str, int], int]] | None = None

    def _fact(self, item: PastFact) -> Fact | None:
        return item.fact if item.fact is not None else self._base.find(item.fact_id)

    def _gone_counts(self) -> dict[str, tuple[dict[str, int], int]]:
        """Term counts and length of each member that is not live now."""
        if self._gone is None:
            self._gone = {}
            for fact_id, item in self._members.items():
                if item.now == "live":
                    continue
                fact = self._fact(item)
                if fact is None:
                    continue
                terms = self._base.terms(fact.text)
                counts: dict[str, int] = {}
                for term in terms:
                    counts[term] = counts.get(term, 0) + 1
                self._gone[fact_id] = (counts, min(len(terms), MAX_LENGTH))
        return self._gone

    def _of(self, agent: str, term: str) -> dict[str, tuple[int, int]]:
        """fact id → (count, length) of every member holding `term`."""
        if agent != self._agent:
            return {}
        found = self._postings.get(term)
        if found is None:
            members = self._members
            found = {
                fact_id: (count, length)
                for fact_id, count, length in self._base.iter_postings(agent, term)
                if fact_id in members
            }
            for fact_id, (counts, length) in self._gone_counts().items():
                if term in counts:
                    found[fact_id] = (counts[term], length)
            self._postings[term] = found
        return found

    # ---- KeywordIndex --------------------------------------------------------------------
    def live_count(self, agent: str) -> int:
        return len(self._members) if agent == self._agent else 0

    def terms(self, text: str) -> list[str]:
        return self._base.terms(text)

    def document_frequency(self, agent: str, term: str) -> int:
        return len(self._of(agent, term))

    def iter_postings(
        self, agent: str, term: str, newest: int | None = None
    ) -> Iterator[tuple[str, int, int]]:
        found = self._of(agent, term)
        ids = sorted(found)
        if newest is not None:
            ids = ids[::-1][:newest]
        for fact_id in ids:
            count, length = found[fact_id]
            yield fact_id, count, length

    def posting(self, agent: str, term: str, fact_id: str) -> tuple[int, int] | None:
        return self._of(agent, term).get(fact_id)

    def postings_of(
        self, agent: str, term: str, fact_ids: Sequence[str]
    ) -> dict[str, tuple[int, int]]:
        found = self._of(agent, term)
        return {i: found[i] for i in fact_ids if i in found}

    def find(self, fact_id: str) -> Fact | None:
        """A fact live then, as it stood: live (its `superseded_by` cleared); None for
        any other."""
        item = self._members.get(fact_id)
        fact = None if item is None else self._fact(item)
        if fact is None or fact.is_live:
            return fact
        return msgspec.structs.replace(fact, superseded_by="")

    def index_stamp(self, agent: str) -> None:
        """Never copied: the past is read once per question."""
        return None

    def live_span(self, agent: str) -> tuple[int, int] | None:
        """`created_at` (epoch ms) of the oldest and newest facts live then (first and last
        by id), for recall's recency prior over the memory as it was."""
        if agent != self._agent or not self._members:
            return None
        oldest, newest = self.find(min(self._members)), self.find(max(self._members))
        if oldest is None or newest is None:
            return None
        return epoch_ms(oldest.created_at), epoch_ms(newest.created_at)
