"""What a hook puts in front of the model: small blocks of facts, within byte budgets.

Every injected byte is paid for on every later request of the session, so each block has
a budget (`SESSION_BUDGET`, `PROMPT_BUDGET`), each fact is one line cut at `FACT_BYTES`,
and what does not fit is counted, not shown. Facts are stored text, untrusted: control
and bidi characters are made visible and each fact stays on its line, so a fact cannot
pose as the block's own words. The wording states facts rather than giving orders, as
Claude Code's hook guide asks of injected context.

The prompt's recall query is `focused_query`: the prompt's rarest words in this memory
(at most `QUERY_WORDS`), so a pasted log of a thousand lines costs what a sentence costs,
and words most facts hold (which pick out nothing) are left out."""

from __future__ import annotations

import json
from collections.abc import Sequence

from graymatter_tui.core.model import Fact
from graymatter_tui.core.textsafe import neutralise
from graymatter_tui.storage import KeywordIndex

SESSION_BUDGET = 2048
PROMPT_BUDGET = 1024
FACT_BYTES = 280
QUERY_WORDS = 12
# A word held by more than this share of the agent's facts (and more than a handful)
# picks nothing out: a query of only such words recalls nothing.
SPECIFIC_SHARE = 0.05
SPECIFIC_FLOOR = 3
# How much of a prompt is read for query words.
QUERY_SCAN_CHARS = 16 * 1024
SHARED_AGENT = "__shared__"
_PUNCTUATION = "\"'`.,;:!?()[]{}<>*"


def quoted(name: str) -> str:
    return json.dumps(neutralise(name, one_line=True), ensure_ascii=False)


def clip(text: str, limit: int = FACT_BYTES) -> str:
    """`text` on one line, visible characters only, at most `limit` bytes of UTF-8."""
    flat = " ".join(neutralise(text, one_line=True).replace("\u23ce", " ").split())
    raw = flat.encode("utf-8")
    if len(raw) <= limit:
        return flat
    return raw[: limit - 3].decode("utf-8", errors="ignore").rstrip() + "…"


class _Budget:
    """Lines added while they fit in `limit` bytes (newline included)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.lines: list[str] = []

    def add(self, line: str) -> bool:
        size = len(line.encode("utf-8")) + 1
        if self.used + size > self.limit:
            return False
        self.lines.append(line)
        self.used += size
        return True

    def section(self, title: str, facts: Sequence[Fact], what: str) -> None:
        """A title and one line per fact; what does not fit is counted in one line."""
        if not facts:
            return
        if not self.add(title):
            return
        shown = 0
        for fact in facts:
            if not self.add(f"- {clip(fact.text)}"):
                break
            shown += 1
        left = len(facts) - shown
        if left:
            self.add(f"- … and {left} more {what} (memory_search finds them)")

    def text(self) -> str:
        return "\n".join(self.lines)


def session_block(
    agent: str,
    pinned: Sequence[Fact],
    recent: Sequence[Fact],
    shared: Sequence[Fact],
    *,
    compacted: bool = False,
    budget: int = SESSION_BUDGET,
) -> str:
    """The SessionStart block: the agent's pinned facts, its strongest recent ones, and
    the shared namespace's, in that order of importance within `budget`."""
    out = _Budget(budget)
    name = quoted(agent)
    again = " (shown again after the compaction)" if compacted else ""
    out.add(
        f"Long-term memory (graymatter) of agent {name}{again}: notes kept from earlier "
        f"sessions. memory_search with agent_id {name} finds more; a prompt line "
        '"remember: …" stores one.'
    )
    if not (pinned or recent or shared):
        out.add("It holds no facts yet.")
    out.section("Pinned:", pinned, "pinned facts")
    out.section("Recent:", recent, "recent facts")
    out.section(f"Shared (agent_id {quoted(SHARED_AGENT)}):", shared, "shared facts")
    return out.text()


def recall_block(
    agent: str, found: Sequence[Fact], shared: Sequence[Fact], *, budget: int = PROMPT_BUDGET
) -> str:
    """The UserPromptSubmit block: the facts recalled for this prompt ("" for none)."""
    if not (found or shared):
        return ""
    out = _Budget(budget)
    out.add(f"Memory recalled for this prompt (agent {quoted(agent)}):")
    for fact in found:
        if not out.add(f"- {clip(fact.text)}"):
            break
    if shared:
        out.add(f"Shared (agent_id {quoted(SHARED_AGENT)}):")
        for fact in shared:
            if not out.add(f"- {clip(fact.text)}"):
                break
    return out.text()


def _words(text: str) -> list[str]:
    """Distinct whitespace-separated words, punctuation at their edges dropped, in order."""
    seen: set[str] = set()
    out: list[str] = []
    for raw in text[:QUERY_SCAN_CHARS].split():
        word = raw.strip(_PUNCTUATION)
        key = word.casefold()
        if word and key not in seen:
            seen.add(key)
            out.append(word[:200])
    return out


def focused_query(index: KeywordIndex, agent: str, text: str) -> str:
    """The words of `text` that pick out facts of `agent`: held by some fact, by few
    enough to be specific, the rarest `QUERY_WORDS` of them in the prompt's order. ""
    when no word qualifies (nothing is recalled then)."""
    live = index.live_count(agent)
    if not live:
        return ""
    ceiling = max(SPECIFIC_FLOOR, SPECIFIC_SHARE * live)
    scored: list[tuple[int, int, str]] = []
    for position, word in enumerate(_words(text)):
        counts = [index.document_frequency(agent, term) for term in index.terms(word)]
        held = [count for count in counts if count]
        if held and min(held) <= ceiling:
            scored.append((min(held), position, word))
    chosen = sorted(scored)[:QUERY_WORDS]
    return " ".join(word for _, _, word in sorted(chosen, key=lambda item: item[1]))
