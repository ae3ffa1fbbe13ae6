"""Scripted summarisers for the gate, answering through the scripted Ollama (real httpx).

Each reads the batch from the prompt's `- <id>: <text>` rows, exactly as a model would see
it, and answers with a proposal. One is lossless; one rewords every fact but keeps each
detail (a guard must let it consume everything); the others lose information in the ways
real models do, while still claiming to consume everything they were shown.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

from tests.support.ollama_fake import RecordedRequest, Reply

ROW = re.compile(r"^- ([0-9A-Z]{26}): (.*)$", re.MULTILINE)
NUMBER = re.compile(r"\d+")
MARKER = re.compile(r"\b[A-Z]{2}-\d{4}\b|\b\d{5}\b")
_WORDS = "zero one two three four five six seven eight nine".split()
SMALL_WORDS = re.compile(r"\b(?:the|for|is|from|has|to|after|about|were|was|of|at)\b ", re.I)


def rows(request: RecordedRequest) -> list[tuple[str, str]]:
    return ROW.findall(request.prompt)


def _stable_share(text: str, share: float) -> bool:
    digest = hashlib.sha256(text.encode()).digest()
    return digest[0] / 255 < share


def lossless(request: RecordedRequest) -> Reply:
    batch = rows(request)
    return Reply.proposal(" ".join(text for _, text in batch), [i for i, _ in batch])


def terse_notes(request: RecordedRequest) -> Reply:
    """Rewrites every fact as a terse note (small words dropped), no name, marker or number
    lost: nothing is held verbatim, yet every detail survives."""
    batch = rows(request)
    return Reply.proposal(
        "; ".join(SMALL_WORDS.sub("", t) for _, t in batch), [i for i, _ in batch]
    )


def drop_markers(request: RecordedRequest) -> Reply:
    """Drops the key marker of about half the facts, still consumes them all."""
    batch = rows(request)
    kept = [MARKER.sub("", t) if _stable_share(t, 0.5) else t for _, t in batch]
    return Reply.proposal(" ".join(kept), [i for i, _ in batch])


def truncate(request: RecordedRequest) -> Reply:
    """Summarises only as much as fits in 400 characters, consumes everything."""
    batch = rows(request)
    return Reply.proposal(" ".join(t for _, t in batch)[:400], [i for i, _ in batch])


def paraphrase_numbers(request: RecordedRequest) -> Reply:
    """Writes numbers out digit by digit in words ("48213" -> "four eight two one three")."""
    batch = rows(request)

    def spell(match: re.Match[str]) -> str:
        return " ".join(_WORDS[int(d)] for d in match.group())

    return Reply.proposal(" ".join(NUMBER.sub(spell, t) for _, t in batch), [i for i, _ in batch])


def hallucinate() -> Callable[[RecordedRequest], Reply]:
    """Summarises half of the batch, but claims all of it plus ids it was never shown
    (invented ones and ones from earlier prompts)."""
    remembered: list[str] = []

    def respond(request: RecordedRequest) -> Reply:
        batch = rows(request)
        half = batch[: len(batch) // 2]
        invented = [f"01J{n:023d}" for n in range(3)]
        claims = [i for i, _ in batch] + invented + remembered[-5:]
        remembered.extend(i for i, _ in batch)
        return Reply.proposal(" ".join(t for _, t in half), claims)

    return respond


SUMMARISERS: dict[str, Callable[[], Callable[[RecordedRequest], Reply]]] = {
    "lossless": lambda: lossless,
    "terse notes": lambda: terse_notes,
    "drops markers": lambda: drop_markers,
    "truncates": lambda: truncate,
    "paraphrases numbers": lambda: paraphrase_numbers,
    "consumes unseen ids": hallucinate,
}
