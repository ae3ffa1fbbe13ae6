"""Deterministic entity extraction for the knowledge graph (no model).

Entities: identifiers such as ABC-1234, emails, URLs and capitalised names. Each gets a
type-scoped id (`ident:abc-1234`, `email:…`, `url:…`, `name:maria lopez`); facts that
mention two entities link them with a co-mention edge. Capitalised words that are parts
of dates and times (months, weekdays, "UTC", "PM") are never names, and split a run of
capitalised words ("Maria Lopez Friday" is Maria Lopez).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from graymatter_tui.core.lexicon import CALENDAR, EMAIL, STOPWORDS, TIME_WORDS, URL

MAX_ENTITY_ID_BYTES = 100
IDENT = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b")
NAME = re.compile(r"\b[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*")
SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")
# "on Fridays" as well as "on Friday".
NOT_NAMES = CALENDAR | TIME_WORDS | {f"{day}s" for day in CALENDAR if day.endswith("day")}
DANGLING = "-'’"  # left at a word's end where an identifier was taken out ("CC-BY-4.0")


@dataclass(frozen=True, order=True)
class Entity:
    id: str
    label: str
    type: str


def extract_entities(text: str) -> list[Entity]:
    found: dict[str, Entity] = {}

    def add(kind: str, label: str) -> None:
        key = f"{kind}:{label.casefold()}"
        if len(key.encode("utf-8", errors="surrogatepass")) > MAX_ENTITY_ID_BYTES:
            # Graph keys hold two entity ids beside the agent name, within LMDB's 511 bytes.
            digest = hashlib.sha256(key.encode("utf-8", errors="surrogatepass")).hexdigest()
            key = f"{kind}:#{digest[:24]}"
        found.setdefault(key, Entity(key, label, kind))

    rest = text
    for kind, pattern in (("url", URL), ("email", EMAIL)):
        for match in pattern.findall(rest):
            add(kind, match.rstrip(".,;:"))
        rest = pattern.sub(" ", rest)
    for match in IDENT.findall(rest):
        add("ident", match)
    rest = IDENT.sub(" ", rest)
    for match in NAME.finditer(rest):
        words = match.group().split()
        at_start = bool(SENTENCE_START.search(rest[: match.start()]))
        if at_start and (words[0].casefold() in STOPWORDS or len(words) >= 3):
            words = words[1:]  # "Yesterday Maria Lopez" -> "Maria Lopez"
        for first, run in _name_runs(words):
            # A lone capitalised word opening a sentence is as likely any word as a name.
            if len(run) == 1 and ((first and at_start) or run[0].casefold() in STOPWORDS):
                continue
            add("name", " ".join(run))
    return sorted(found.values())


def _name_runs(words: list[str]) -> list[tuple[bool, list[str]]]:
    """The runs of `words` between words that are never names, each with whether it
    starts at the first word."""
    runs: list[tuple[bool, list[str]]] = []
    current: list[str] = []
    for index, raw in enumerate(words):
        word = raw.rstrip(DANGLING)
        if len(word) < 2 or word.casefold() in NOT_NAMES:
            if current:
                runs.append((index == len(current), current))
            current = []
        else:
            current.append(word)
    if current:
        runs.append((len(words) == len(current), current))
    return runs


def names_nothing(entity_id: str) -> bool:
    """Whether an entity id an older release recorded is a date or time word taken for a
    name (`name:july`, `name:friday utc`): the graph's reads leave such ids out."""
    kind, _, label = entity_id.partition(":")
    return kind == "name" and all(word in NOT_NAMES for word in label.split())
