"""Deterministic entity extraction for the knowledge graph (no model).

Entities: identifiers such as ABC-1234, emails, URLs and capitalised names. Each gets a
type-scoped id (`ident:abc-1234`, `email:…`, `url:…`, `name:maria lopez`); facts that
mention two entities link them with a co-mention edge.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from graymatter_tui.core.lexicon import EMAIL, STOPWORDS, URL

MAX_ENTITY_ID_BYTES = 100
IDENT = re.compile(r"\b[A-Z][A-Z0-9]{1,9}-\d{1,7}\b")
NAME = re.compile(r"\b[A-Z][\w'’-]+(?:\s+[A-Z][\w'’-]+)*")
SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+|\n)$")


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
        if not words or (len(words) == 1 and (at_start or words[0].casefold() in STOPWORDS)):
            continue
        add("name", " ".join(words))
    return sorted(found.values())
