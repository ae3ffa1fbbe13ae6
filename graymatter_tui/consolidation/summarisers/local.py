"""The offline summariser: no model. It merges the largest group of near-duplicate facts
in the batch into one summary that keeps every distinct sentence, and proposes nothing
when the batch has no near-duplicates. Deterministic, so a fresh machine can run the
whole flow and tests can predict it exactly."""

from __future__ import annotations

import re

import msgspec

from graymatter_tui.consolidation.prompt import prompt_hash, structured_prompt
from graymatter_tui.consolidation.summarisers.base import Reachability, Reply
from graymatter_tui.core.details import detail_key, key_details
from graymatter_tui.core.lexicon import STOPWORDS
from graymatter_tui.core.model import BatchItem
from graymatter_tui.core.summariser_names import SummariserName

SIMILARITY = 0.8
_WORD = re.compile(r"\w+")
_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def _words(text: str) -> set[str]:
    return {w.casefold() for w in _WORD.findall(text)} - STOPWORDS


def _similar(a: set[str], b: set[str]) -> bool:
    """One restates or extends the other (its words are a subset), or they share at least
    80% of their words."""
    if not a or not b:
        return False
    return a <= b or b <= a or len(a & b) / len(a | b) >= SIMILARITY


def _details(text: str) -> frozenset[str]:
    return frozenset(detail_key(d) for d in key_details(text))


def clusters(batch: list[BatchItem]) -> list[list[BatchItem]]:
    """Groups of near-duplicates (single-link), in batch order. Two facts are near-
    duplicates when their words mostly overlap and neither has a key detail (an
    identifier, number, name…) that the other lacks, so 'incident INC-1' and
    'incident INC-2' are never merged."""
    words = [_words(item.text) for item in batch]
    details = [_details(item.text) for item in batch]
    parent = list(range(len(batch)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(len(batch)):
        for j in range(i + 1, len(batch)):
            compatible = details[i] <= details[j] or details[j] <= details[i]
            if compatible and _similar(words[i], words[j]):
                parent[find(j)] = find(i)
    groups: dict[int, list[BatchItem]] = {}
    for i, item in enumerate(batch):
        groups.setdefault(find(i), []).append(item)
    return [g for g in groups.values() if len(g) > 1]


def merge(group: list[BatchItem]) -> str:
    """Every distinct sentence of the group, oldest fact first, each once. A sentence whose
    words appear, in order, inside a longer sentence of the group adds nothing and is
    left out."""
    found: list[tuple[str, str]] = []
    for item in sorted(group, key=lambda i: i.id):
        for sentence in _SENTENCE.split(" ".join(item.text.split())):
            key = " " + " ".join(_WORD.findall(sentence.casefold())) + " "
            if key.strip() and all(key != k for k, _ in found):
                found.append((key, sentence if sentence[-1:] in ".!?" else sentence + "."))
    kept = [
        sentence
        for key, sentence in found
        if not any(key != other and key in other for other, _ in found)
    ]
    return " ".join(kept)


class LocalSummariser:
    name = SummariserName.LOCAL.value
    model = "near-duplicate merge"

    async def propose(self, batch: list[BatchItem]) -> Reply:
        digest = prompt_hash(structured_prompt(batch))
        groups = clusters(batch)
        if not groups:
            return Reply(
                nothing="no near-duplicate facts in the batch",
                prompt_sha256=digest,
                model=self.model,
            )
        best = max(groups, key=lambda g: (len(g), [-ord(c) for c in min(i.id for i in g)]))
        proposal = {"summary": merge(best), "consumes": [i.id for i in best], "contradictions": []}
        return Reply(
            raw=msgspec.json.encode(proposal).decode(),
            attempts=1,
            prompt_sha256=digest,
            model=self.model,
        )

    async def check(self) -> Reachability:
        return Reachability(True, "offline near-duplicate merge (always available)")
