"""The check every counted-words test makes of what a person reads: no "1 <plural>" and no
"(s)" anywhere in it."""

from __future__ import annotations

import re

# Plural nouns the CLI and the TUI count; "1 <one of these>" (with at most one word
# between, as in "1 live facts" or "1 agent changes") is always wrong.
PLURALS = (
    "facts|tombstones|probes|agents|times|records|changes|checks|warnings|entries|results|"
    "writes|ids|invariants|proposals|receipts|bytes|characters|dims|nodes|edges|aliases|"
    "checkpoints|marks|vectors|texts|cycles|reverts"
)
ONE_WITH_A_PLURAL = re.compile(rf"(?<![\d.,:/-])\b1 (?:[a-z]+ )?(?:{PLURALS})\b")


def words_ok(text: str) -> str:
    """`text`, after checking that it counts nothing as "1 <plural>" and says no "(s)"."""
    assert "(s)" not in text, text
    found = ONE_WITH_A_PLURAL.findall(text)
    assert not found, (found, text)
    return text
