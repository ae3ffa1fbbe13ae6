"""Semantic near-duplicates and possible updates between two facts, by text similarity.

Two facts are on the same subject when their content words (the key details taken out)
overlap enough and each names the same things: a key detail that names something (a
person or company, a ticket or run id, a URL, a hyphenated service or host name) found
on one side only means another subject ("ticket SUP-6344" is not "ticket SUP-2775"),
and so does a content word swapped for another ("gateway runs 3 replicas" against
"ledger runs 3 replicas"). A fact on the same subject whose key details are all already
held is a duplicate; one whose values differ (numbers, dates, times, versions) is a
possible update, and so is one where only the person or company named after the subject
differs ("the on-call lead for checkout is Maria Lopez" against "… is Daniel Kim"). The
verdict names the details that differ on each side.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from graymatter_tui.core.details import (
    CLOCK_TIME,
    ISO_DATE,
    content_words,
    detail_key,
    fold,
    key_details,
    without_addresses,
)
from graymatter_tui.core.lexicon import CALENDAR, EMAIL, URL, WORD
from graymatter_tui.core.model import BY_MEANING
from graymatter_tui.core.pair_details import (
    CLOCK_12,
    CLOCK_24,
    CLOCK_WORD,
    WEEKDAY,
    WRITTEN_DATE,
    pair_details,
)

SAME_SUBJECT = 0.34
DUPLICATE_SUBJECT = 0.5
# Of the shorter fact's subject words, the share the other must hold too.
SHARED_SUBJECT = 0.6
# The embedding model's cosine (all-MiniLM-L6-v2) at and above which two facts say the
# same kind of thing, and below which a pair the words call alike is only related:
# measured on the labelled pairs (benchmarks/conflict_bench.py --meaning).
SAME_MEANING = 0.78
UNLIKE_MEANING = 0.6

DetailKind = Literal["value", "name", "id"]
# How a date, a time or a weekday is written: such details are of one kind ("time").
TIME_FORMS = (ISO_DATE, CLOCK_TIME, WRITTEN_DATE, CLOCK_12, CLOCK_24, CLOCK_WORD, WEEKDAY)
# "SUP-6344", "EXP-785", "INC2291": a ticket, run or incident, not a value of one.
_TICKET = re.compile(r"[A-Z]{2,}[-_]?\d{2,}")
# "billing-api", "search-indexer": a service or host named in lower case.
_COMPOUND = re.compile(r"\b[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)+\b")


@dataclass(frozen=True)
class PairVerdict:
    kind: str  # "duplicate", "possible_update", "related" or "unrelated"
    similarity: float
    only_new: list[str] = field(default_factory=list)
    only_old: list[str] = field(default_factory=list)
    # The embedding model's cosine, when the verdict was given by meaning.
    cosine: float | None = None

    def reason(self) -> str:
        by = "" if self.cosine is None else f" {BY_MEANING}{self.cosine:.2f})"
        if self.kind == "duplicate":
            return f"same meaning; every key detail is already held{by}"
        if self.kind == "possible_update":
            new = ", ".join(self.only_new) or "none"
            old = ", ".join(self.only_old) or "none"
            return f"details differ: new {new}; held {old}{by}"
        return self.kind


@dataclass(frozen=True)
class TextProfile:
    """What the verdict reads of one text: its subject words and its key details."""

    subject: frozenset[str]
    details: dict[str, str]  # detail key -> the detail as written
    kinds: dict[str, DetailKind] = field(default_factory=dict)  # detail key -> its kind
    opening: frozenset[str] = frozenset()  # keys of the names the text opens with
    words: frozenset[str] = frozenset()  # every word of the text, folded
    folded: str = ""  # the text, folded
    head: str = ""  # the first subject word: what the sentence is about, most often
    # Asked of every pair (the write path compares one fact with a dozen), so kept here:
    stems: frozenset[str] = frozenset()  # each word's first six letters, as subject words
    starts: frozenset[str] = frozenset()  # each word's first 4, 5 and 6 letters


def detail_kind(detail: str) -> DetailKind:
    """ "id" for what names one thing among many of its kind (ticket and run ids, URLs,
    hyphenated service names), "name" for a person, company or product named in
    capitals or an email address, "value" for the rest (numbers, dates, times,
    versions, month and day names)."""
    if URL.fullmatch(detail) or _TICKET.fullmatch(detail) or _COMPOUND.fullmatch(detail):
        return "id"
    if EMAIL.fullmatch(detail):
        return "name"
    words = WORD.findall(detail)
    if words and not any(c.isdigit() for c in detail) and detail[:1].isupper():
        return "value" if all(fold(w) in CALENDAR for w in words) else "name"
    return "value"


@lru_cache(maxsize=4096)
def profile(text: str) -> TextProfile:
    """The text's profile, computed once per text (the write path compares one new fact
    with many held ones, and a long-lived server sees the same held ones again)."""
    extra, rest = pair_details(text)
    found = key_details(rest)
    plain = without_addresses(rest)
    if "-" in plain:
        found += _COMPOUND.findall(plain)
    details = {detail_key(d): d for d in found}
    kinds = {key: detail_kind(d) for key, d in details.items()}
    for key, written, kind in extra:
        details.setdefault(key, written)
        kinds.setdefault(key, "id" if kind == "id" else "value")
    # An address is left out of the subject's words whole: "escalations@…" does not take
    # the word "escalations" from the sentence around it.
    addresses = set()
    if plain is not rest:
        addresses = {detail_key(d) for d in EMAIL.findall(rest) + URL.findall(rest)}
    detail_words = {w for key in details if key not in addresses for w in key.split()}
    subject = frozenset(w[:6] for w in content_words(plain) if w not in detail_words)
    head = fold(text.lstrip())
    opening = frozenset(
        key
        for key, kind in kinds.items()
        if kind != "value" and head.startswith(fold(details[key]))
    )
    words = frozenset(WORD.findall(head))
    first = next((w[:6] for w in content_words(text) if w[:6] in subject), "")
    stems = frozenset(w[:6] for w in words)
    # A subject word is a content word (4 letters or more) cut to six: `starts` holds
    # every subject word that begins one of the text's words.
    starts = frozenset(w[:n] for w in words for n in (4, 5, 6) if len(w) >= n)
    return TextProfile(subject, details, kinds, opening, words, head, first, stems, starts)


def compare(new: str, old: str, cosine: float | None = None) -> PairVerdict:
    """How the fact `new` stands to the held fact `old`; `cosine`, when known, is the
    embedding model's similarity of the two (see `compare_profiles`)."""
    return compare_profiles(profile(new), profile(old), cosine)


def compare_profiles(
    new: TextProfile, old: TextProfile, cosine: float | None = None
) -> PairVerdict:
    """The verdict from words and key details alone (`cosine` None: the write path,
    where no vector exists yet), or, given the model's `cosine` of the two texts, by
    meaning: at `SAME_MEANING` or above they say the same kind of thing (whatever the
    words: "avoids coffee" is "doesn't drink coffee"), and the key details decide
    (every one of the new fact's already held: a duplicate; some replaced: a possible
    update; only added: related); below it, the words' verdict, where a duplicate or an
    update the model finds far apart (under `UNLIKE_MEANING`) is only related."""
    if cosine is not None:
        return _by_meaning(new, old, cosine)
    return _by_words(new, old)


def _by_meaning(new: TextProfile, old: TextProfile, cosine: float) -> PairVerdict:
    if cosine >= UNLIKE_MEANING and _says_it_changed(new) and not _says_it_changed(old):
        # "We moved the CI off Jenkins; it now runs on GitHub Actions": the new fact says
        # it replaces something, and the model finds the two on one subject.
        # What it names instead is the point ("GitHub Actions"); another ticket or run
        # id is still another subject.
        only_new, only_old = _differing(new, old)
        ids = [k for k in _named_only(new, old) if new.kinds.get(k) == "id"]
        ids += [k for k in _named_only(old, new) if old.kinds.get(k) == "id"]
        if not ids and (only_new or only_old or new.subject != old.subject):
            return PairVerdict("possible_update", cosine, only_new, only_old, cosine)
    if cosine < SAME_MEANING:
        verdict = _by_words(new, old)
        if verdict.kind in ("duplicate", "possible_update") and cosine < UNLIKE_MEANING:
            return PairVerdict("related", verdict.similarity)
        return verdict
    only_new, only_old = _differing(new, old)
    if not only_new:
        return PairVerdict("duplicate", cosine, cosine=cosine)
    # Alike in meaning yet about another ticket, customer or person ("the workaround for
    # ticket SUP-8062 …" / "… SUP-1475 …"): what the words call two subjects stays two.
    if not _same_named_subject(new, old, _named_only(new, old), _named_only(old, new)):
        return PairVerdict("related", cosine)
    # An update replaces a detail with one of its kind (a date with a date, a name with
    # a name); one that adds a name where the other gives a date only adds to it.
    if _classes(new, only_new) & _classes(old, only_old):
        return PairVerdict("possible_update", cosine, only_new, only_old, cosine)
    return PairVerdict("related", cosine)


def _classes(side: TextProfile, details: list[str]) -> set[str]:
    found: set[str] = set()
    for detail in details:
        kind = side.kinds.get(detail_key(detail), "value")
        if kind == "value":
            found.add("time" if _is_time(detail) else "number")
        else:
            found.add("name")  # an id is a name of its kind
    return found


def _is_time(detail: str) -> bool:
    words = WORD.findall(fold(detail))
    return bool(
        any(p.fullmatch(detail) for p in TIME_FORMS)
        or (words and all(w in CALENDAR for w in words))
    )


# Words with which a fact says it replaces what held before, in the languages recall
# stems: "now", "no longer", "switched to", "moved", "jetzt", "désormais", "ahora"…
_CHANGED = re.compile(
    r"\b(?:now|no longer|any ?more|switched|moved|changed|replaced|instead|upgraded|"
    r"downgraded|reassigned|renamed|migrated|increased|decreased|raised|lowered|"
    r"jetzt|nicht mehr|maintenant|désormais|ne \w+ plus|ahora|ya no|agora|já não|"
    r"adesso|ora|non più)\b",
    re.IGNORECASE,
)


def _says_it_changed(side: TextProfile) -> bool:
    return _CHANGED.search(side.folded) is not None


def _differing(new: TextProfile, old: TextProfile) -> tuple[list[str], list[str]]:
    """The key details each side holds that the other does not say at all."""
    # A detail the other side says too, there not as a detail ("Postgres" opening one
    # sentence, inside the other), differs in wording only.
    only_new = [
        v for k, v in new.details.items() if k not in old.details and not _said(k, new, old)
    ]
    only_old = [
        v for k, v in old.details.items() if k not in new.details and not _said(k, old, new)
    ]
    return only_new, only_old


def _by_words(new: TextProfile, old: TextProfile) -> PairVerdict:
    a, b = new.subject, old.subject
    shared = a & b
    sim = len(shared) / len(a | b) if a and b else 0.0
    # Real overlap: most of the shorter fact's subject words are the other's too.
    overlap = len(shared) / min(len(a), len(b)) if a and b else 0.0
    same_subject = (
        sim >= SAME_SUBJECT
        and overlap >= SHARED_SUBJECT
        and new.head in b | {""}
        and old.head in a | {""}
    )
    if sim < DUPLICATE_SUBJECT and not same_subject:  # neither kind: no detail to read
        return PairVerdict("related" if sim >= SAME_SUBJECT / 2 else "unrelated", sim)
    only_new, only_old = _differing(new, old)
    # A duplicate shares a key detail or two subject words: "while following" says
    # nothing that "before following 2" does not, yet it is not the same fact.
    grounded = len(shared) >= 2 or bool(new.details.keys() & old.details.keys())
    # What is named on one side only: another customer, ticket, service, person ("API"
    # a name in one and the sentence's first word in the other is named in both).
    named_new = _named_only(new, old)
    named_old = _named_only(old, new)
    gone, came = _unalike(a - b, b - a, old), _unalike(b - a, a - b, new)
    swapped = bool(gone) and bool(came)  # a subject word exchanged for another
    if (
        sim >= DUPLICATE_SUBJECT
        and not only_new
        and grounded
        and not named_old
        and not (swapped and len(gone) == len(came) and len(shared) >= 2 * len(gone))
    ):
        return PairVerdict("duplicate", sim)
    if (
        same_subject
        and only_new
        and only_old
        and grounded
        and not swapped
        and _same_named_subject(new, old, named_new, named_old)
    ):
        return PairVerdict("possible_update", sim, only_new, only_old)
    if sim >= SAME_SUBJECT / 2:
        return PairVerdict("related", sim)
    return PairVerdict("unrelated", sim)


def _same_named_subject(
    new: TextProfile, old: TextProfile, named_new: set[str], named_old: set[str]
) -> bool:
    """Whether what the two facts name leaves them one subject: nothing named on one side
    only, or (no value differing) only a person or company named after the subject, as
    the holder of a role is ("the on-call lead is …"). An id on one side only, a name the
    fact opens with, or a name differing beside a value means two subjects."""
    if not named_new and not named_old:
        return True
    if not named_new or not named_old:
        return False  # a name added or dropped, beside the values that differ
    values_differ = any(new.kinds.get(k) == "value" for k in new.details if k not in old.details)
    values_differ = values_differ or any(
        old.kinds.get(k) == "value" for k in old.details if k not in new.details
    )
    if values_differ:
        return False
    shared = new.subject & old.subject
    for keys, side in ((named_new, new), (named_old, old)):
        if any(side.kinds.get(k) == "id" or k in side.opening for k in keys):
            return False
        # The holder of a role is named after what the fact is about; a name before
        # it ("Maria Lopez at Acme Corp prefers …") is part of the subject.
        # (A subject word inside the name itself, "escalations@…", does not count.)
        plain = side.folded
        for k in keys:
            written = fold(side.details[k])
            plain = plain.replace(written, " " * len(written))
        last = max((_last_at(plain, w) for w in shared), default=-1)
        if any(side.folded.find(fold(side.details[k])) < last for k in keys):
            return False
    return True


def _last_at(text: str, stem: str) -> int:
    """Where the last word beginning with `stem` starts in `text`, or -1."""
    found = [m.start() for m in re.finditer(rf"\b{re.escape(stem)}", text)]
    return found[-1] if found else -1


def _said(key: str, side: TextProfile, other: TextProfile) -> bool:
    """Whether the name `key` of `side` is in the other text too, every word of it, there
    not a key detail ("Postgres" opening a sentence); a value is compared whole."""
    if side.kinds.get(key) != "name" or "@" in side.details.get(key, key):
        return False  # a value, an id or an address is compared whole
    return {w[:6] for w in WORD.findall(key)} <= other.stems


def _named_only(side: TextProfile, other: TextProfile) -> set[str]:
    return {
        key
        for key in side.details
        if key not in other.details
        and side.kinds.get(key) != "value"
        and not _said(key, side, other)
    }


def _unalike(words: frozenset[str], others: frozenset[str], other: TextProfile) -> set[str]:
    """`words` with no counterpart among `others` sharing its first three letters
    ("kept" and "keeps", "owner" and "owns" are alike: a paraphrase, not a swap) and
    not the start of a word of the `other` text at all (there a key detail, not a
    subject word)."""
    heads = {o[:3] for o in others}
    return {w for w in words if w[:3] not in heads and w not in other.starts}
