"""Semantic near-duplicates and possible updates between two facts, by text similarity.

Two facts are on the same subject when their content words (the key details taken out)
overlap enough. A fact on the same subject whose key details (those the coverage guard
keeps: numbers, dates, identifiers, versions, names) are all already held is a duplicate;
one whose key details differ is a possible update, and the verdict names the details
that differ on each side.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache

from graymatter_tui.core.details import content_words, detail_key, key_details

SAME_SUBJECT = 0.34
DUPLICATE_SUBJECT = 0.5


@dataclass(frozen=True)
class PairVerdict:
    kind: str  # "duplicate", "possible_update", "related" or "unrelated"
    similarity: float
    only_new: list[str] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)

    def reason(self) -> str:
        if self.kind == "duplicate":
            return "same meaning; every key detail is already held"
        if self.kind == "possible_update":
            new = ", ".join(self.only_new) or "none"
            old = ", ".join(self.only_old) or "none"
            return f"details differ: new {new}; held {old}"
        return self.kind


@dataclass(frozen=True)
class TextProfile:
    """What the verdict reads of one text: its subject words and its key details."""

    subject: frozenset[str]
    details: dict[str, str]  # detail key -> the detail as written


@lru_cache(maxsize=4096)
def profile(text: str) -> TextProfile:
    """The text's profile, computed once per text (the write path compares one new fact
    with many held ones, and a long-lived server sees the same held ones again)."""
    details = {detail_key(d): d for d in key_details(text)}
    detail_words = {w for key in details for w in key.split()}
    subject = frozenset(w[:6] for w in content_words(text) if w not in detail_words)
    return TextProfile(subject, details)


def compare(new: str, old: str) -> PairVerdict:
    """How the fact `new` stands to the held fact `old`."""
    return compare_profiles(profile(new), profile(old))


def compare_profiles(new: TextProfile, old: TextProfile) -> PairVerdict:
    a, b = new.subject, old.subject
    sim = len(a & b) / len(a | b) if a and b else 0.0
    only_new = [v for k, v in new.details.items() if k not in old.details]
    only_old = [v for k, v in old.details.items() if k not in new.details]
    # A duplicate shares a key detail or two subject words: "while following" says
    # nothing that "before following 2" does not, yet it is not the same fact.
    grounded = len(a & b) >= 2 or bool(new.details.keys() & old.details.keys())
    if sim >= DUPLICATE_SUBJECT and not only_new and grounded:
        return PairVerdict("duplicate", sim)
    if sim >= SAME_SUBJECT and only_new and only_old and grounded:
        return PairVerdict("possible_update", sim, only_new, only_old)
    if sim >= SAME_SUBJECT / 2:
        return PairVerdict("related", sim)
    return PairVerdict("unrelated", sim)
