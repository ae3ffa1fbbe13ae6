"""The offline summariser: no model runs. It merges the largest group of near-duplicate
facts in the batch into one summary, and proposes nothing when the batch has no
near-duplicates. Deterministic, so a fresh machine can run the whole flow and tests can
predict it exactly.

Facts whose words mostly overlap merge into every distinct sentence of the group. Facts
that say the same thing in other words (paraphrases: their stored vectors of the bundled
model have a cosine of at least MEANING_SIMILARITY and their words pass `paraphrases`,
ADR 0066) are joined too; such a
group's summary is its most complete text, not a concatenation of paraphrases, and the
coverage guard lets a fact go only if every key detail of it is in that text."""

from __future__ import annotations

import re

import msgspec

from graymatter_tui.consolidation.prompt import prompt_hash, structured_prompt
from graymatter_tui.consolidation.summarisers.base import BatchMeaning, Reachability, Reply
from graymatter_tui.core.details import detail_key, key_details
from graymatter_tui.core.disjoint_sets import DisjointSets
from graymatter_tui.core.lexicon import STOPWORDS
from graymatter_tui.core.model import BatchItem
from graymatter_tui.core.summariser_names import SummariserName
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.embedding.model_files import MODEL_ID

SIMILARITY = 0.8
# The cosine from which two facts' vectors of the bundled model may be paraphrases
# (benchmarks/meaning_merge_bench.py, ADR 0066): under every labelled duplicate pair of
# benchmarks/conflict_pairs.tsv (the lowest: 0.898); every other labelled pair that
# `paraphrases` lets through on its words is at most 0.732. Another model's cosines are
# on another scale, so its vectors join nothing.
MEANING_SIMILARITY = 0.88
_WORD = re.compile(r"\w+")
_ENGLISH = Analyzer("english")
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


def compatible(a: str, b: str) -> bool:
    """Neither text has a key detail (an identifier, number, name…) the other lacks, or
    one's details are all among the other's."""
    first, second = _details(a), _details(b)
    return first <= second or second <= first


_NEGATION = frozenset("not no never none nobody nothing neither nor without cannot t".split())


def _negated(text: str) -> bool:
    """Whether the text says no to something ("not", "never", "isn't"…)."""
    return any(w.casefold() in _NEGATION for w in _WORD.findall(text))


def paraphrases(a: str, b: str, cosine: float, threshold: float) -> bool:
    """Whether two facts whose vectors have `cosine` say the same thing in other words:
    close enough in meaning, their key details compatible, both or neither saying no,
    and not the same words but one swapped for another. A vector barely tells a word
    from its opposite ("enabled" and "disabled", "warm" and "cold": 0.94 with the
    bundled model), so such a swap is left to the words, which keep both."""
    if cosine < threshold or not compatible(a, b) or _negated(a) != _negated(b):
        return False
    first, second = _stems(a), _stems(b)
    return not (len(first - second) == 1 and len(second - first) == 1)


def _stems(text: str) -> set[str]:
    """The text's words (stopwords left out) as English stems: "tracks" is "tracked"."""
    return set(_ENGLISH.terms(" ".join(sorted(_words(text)))))


def meaning_threshold(model: str) -> float | None:
    """The cosine from which vectors of `model` are paraphrases; None for a model whose
    scale was not measured."""
    return MEANING_SIMILARITY if model.startswith(f"{MODEL_ID}@") else None


def clusters(batch: list[BatchItem]) -> list[list[BatchItem]]:
    """Groups of near-duplicates by words (single-link), in batch order. Two facts are
    near-duplicates when their words mostly overlap and neither has a key detail (an
    identifier, number, name…) that the other lacks, so 'incident INC-1' and
    'incident INC-2' are never merged."""
    return [g for g in _word_groups(batch) if len(g) > 1]


def _word_groups(batch: list[BatchItem]) -> list[list[BatchItem]]:
    """Every fact in the group of its word near-duplicates (alone when it has none), in
    batch order."""
    words = [_words(item.text) for item in batch]
    details = [_details(item.text) for item in batch]
    sets = DisjointSets(len(batch))
    for i in range(len(batch)):
        for j in range(i + 1, len(batch)):
            compatible = details[i] <= details[j] or details[j] <= details[i]
            if compatible and _similar(words[i], words[j]):
                sets.join(i, j)
    return [[batch[i] for i in members] for members in sets.groups().values()]


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


def _oldest(group: list[BatchItem]) -> str:
    return min(item.id for item in group)


def _fullest(texts: list[tuple[str, str]]) -> str:
    """Of (text, oldest id) choices, the text with the most key details, then the
    longest, then the one of the oldest id."""
    ordered = sorted(texts, key=lambda t: (-len(_details(t[0])), -len(t[0]), t[1]))
    return ordered[0][0]


def proposals(
    batch: list[BatchItem], meaning: BatchMeaning | None = None
) -> list[tuple[list[BatchItem], str]]:
    """(facts, summary) of every group of near-duplicates, in batch order. Without
    `meaning` (or with vectors of an unmeasured model) these are `clusters` with their
    `merge`. With it, word groups are joined when a fact of one and a fact of the other
    have a cosine of at least the threshold and the key details of one group are all
    among the other's (single-link, in batch order); a group so joined is summarised by
    its fullest text, each word group's text being its merge."""
    words = _word_groups(batch)
    threshold = meaning_threshold(meaning.model) if meaning is not None else None
    if meaning is None or threshold is None:
        return [(g, merge(g)) for g in words if len(g) > 1]
    texts = [merge(g) if len(g) > 1 else g[0].text for g in words]
    details = [frozenset().union(*(_details(item.text) for item in g)) for g in words]
    sets = DisjointSets(len(words))

    def close(i: int, j: int) -> bool:
        for a in words[i]:
            for b in words[j]:
                cosine = meaning.cosine(a.id, b.id)
                if cosine is not None and paraphrases(a.text, b.text, cosine, threshold):
                    return True
        return False

    for i in range(len(words)):
        for j in range(i + 1, len(words)):
            root_i, root_j = sets.find(i), sets.find(j)
            if root_i == root_j:
                continue
            mine, theirs = details[root_i], details[root_j]
            if (mine <= theirs or theirs <= mine) and close(i, j):
                sets.join(root_i, root_j)
                details[root_i] = mine | theirs
    joined = sets.groups()
    found: list[tuple[list[BatchItem], str]] = []
    for members in joined.values():
        if len(members) == 1:
            group = words[members[0]]
            if len(group) > 1:
                found.append((group, texts[members[0]]))
            continue
        order = {item.id: n for n, item in enumerate(batch)}
        items = sorted((item for m in members for item in words[m]), key=lambda i: order[i.id])
        summary = _fullest([(texts[m], _oldest(words[m])) for m in members])
        found.append((items, summary))
    return found


class LocalSummariser:
    name = SummariserName.LOCAL.value
    model = "near-duplicate merge"

    async def propose(self, batch: list[BatchItem]) -> Reply:
        return await self.propose_with_meaning(batch, None)

    async def propose_with_meaning(
        self, batch: list[BatchItem], meaning: BatchMeaning | None
    ) -> Reply:
        """The largest group's summary (the oldest first fact breaks a tie); `meaning`,
        the cosines of the batch's stored vectors, also joins paraphrases."""
        digest = prompt_hash(structured_prompt(batch))
        groups = proposals(batch, meaning)
        if not groups:
            return Reply(
                nothing="no near-duplicate facts in the batch",
                prompt_sha256=digest,
                model=self.model,
            )
        best, summary = max(groups, key=lambda g: (len(g[0]), [-ord(c) for c in _oldest(g[0])]))
        proposal = {"summary": summary, "consumes": [i.id for i in best], "contradictions": []}
        return Reply(
            raw=msgspec.json.encode(proposal).decode(),
            attempts=1,
            prompt_sha256=digest,
            model=self.model,
        )

    async def check(self) -> Reachability:
        return Reachability(True, "offline near-duplicate merge (always available)")
