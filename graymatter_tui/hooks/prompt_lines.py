"""`remember:` lines in a prompt: what a person asks the memory to keep, at once and in
their words, without waiting for the model to decide to call a tool.

A line whose first word is `remember:` (any case, after any indentation) stores the rest
of the line as one fact of the project's agent; `remember shared:` stores it under the
shared namespace `__shared__`. Each line is one fact, so a prompt may remember several.
What is stored is the rest of the line as typed (surrounding spaces dropped); nothing
after the colon stores nothing. A line holding what looks like a secret
(`core.secrets`), a control or bidi character, or more than a fact may hold, is refused
with the reason, and nothing of it is stored. The remember lines are taken out of the
prompt before it is used as a recall query."""

from __future__ import annotations

import re
from dataclasses import dataclass

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.secrets import find_secret
from graymatter_tui.core.textsafe import validate_text

SHARED_AGENT = "__shared__"
_REMEMBER = re.compile(r"^[ \t]*remember(?:[ \t]+(shared))?[ \t]*:(.*)$", re.IGNORECASE)
# Controls other than tab, DEL, C1 controls and bidi overrides: a typed line never needs
# them, an injected one might (the MCP tools refuse the same).
_HOSTILE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
# Prompts are read this far for remember lines; a longer paste is not a note to keep.
MAX_SCANNED_CHARS = 1024 * 1024


@dataclass(frozen=True)
class Remember:
    """One `remember:` line: the text to store (empty when there was none), where, and
    why it must not be stored (None when it may)."""

    text: str
    shared: bool
    refusal: str | None


@dataclass(frozen=True)
class ParsedPrompt:
    remembers: list[Remember]
    rest: str  # the prompt without its remember lines: what recall is asked


def _refusal(text: str) -> str | None:
    if not text:
        return "nothing follows the colon"
    secret = find_secret(text)
    if secret is not None:
        return f"it holds what looks like {secret}; memory never keeps secrets"
    bad = _HOSTILE.search(text)
    if bad:
        return f"it holds a control character (U+{ord(bad.group()):04X})"
    try:
        validate_text(text)
    except InvalidInput as exc:
        return str(exc)
    return None


def parse(prompt: str) -> ParsedPrompt:
    """The remember lines of `prompt`, in order, and the rest of it."""
    scanned = prompt[:MAX_SCANNED_CHARS]
    if "remember" not in scanned.lower():
        return ParsedPrompt([], prompt)
    remembers: list[Remember] = []
    rest: list[str] = []
    for line in scanned.splitlines():
        found = _REMEMBER.match(line)
        if found is None:
            rest.append(line)
            continue
        text = found.group(2).strip(" \t")
        remembers.append(Remember(text, found.group(1) is not None, _refusal(text)))
    return ParsedPrompt(remembers, "\n".join(rest) + prompt[MAX_SCANNED_CHARS:])
