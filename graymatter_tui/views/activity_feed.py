"""Reading the activity feed through a filter (by source, by agent), a page at a time.

The store keeps the feed in write order and knows no filter; a filter is applied here,
while reading, so the CLI and the TUI read it alike and neither holds the whole feed
(up to 100k entries) to find a few matching ones."""

from __future__ import annotations

from dataclasses import dataclass

from graymatter_tui.core.model import ActivityEntry
from graymatter_tui.core.provenance import HOOK_PREFIX, MCP_PREFIX
from graymatter_tui.storage import MemoryStore

# Entries read per store read while filtering: one short read transaction each, so a
# writer is never kept waiting on a long scan.
SCAN_PAGE = 2000
# A source filter of this name matches every MCP client (`mcp:<client>`).
ANY_MCP = MCP_PREFIX.rstrip(":")
# And this one every client's hooks (`hook:<client>`).
ANY_HOOK = HOOK_PREFIX.rstrip(":")
_GROUPS = {ANY_MCP: MCP_PREFIX, ANY_HOOK: HOOK_PREFIX}


@dataclass(frozen=True)
class FeedFilter:
    """Which entries to show: "" is any. `source` "mcp" matches every `mcp:<client>`,
    "hook" every `hook:<client>`."""

    source: str = ""
    agent: str = ""

    def matches(self, entry: ActivityEntry) -> bool:
        if self.agent and entry.agent_id != self.agent:
            return False
        if not self.source or entry.source == self.source:
            return True
        prefix = _GROUPS.get(self.source)
        return prefix is not None and entry.source.startswith(prefix)

    @property
    def active(self) -> bool:
        return bool(self.source or self.agent)

    def describe(self) -> str:
        """ "source mcp:claude · agent ops" (or "everything"), for a header or a message."""
        parts = []
        if self.source:
            parts.append(f"source {self.source}")
        if self.agent:
            parts.append(f"agent {self.agent}")
        return " · ".join(parts) or "everything"


@dataclass(frozen=True)
class FeedPage:
    """Matching entries newest first; `next_before` continues the read (None: the feed
    has nothing older); `newest` is the newest write number read (0: none)."""

    entries: list[ActivityEntry]
    next_before: int | None
    newest: int


def read_page(
    store: MemoryStore,
    feed_filter: FeedFilter,
    *,
    want: int,
    after: int = 0,
    before: int | None = None,
    scan_limit: int | None = None,
) -> FeedPage:
    """Up to `want` matching entries with write numbers in (after, before), newest first.
    Scans at most `scan_limit` entries (None: to the end), so a filter that matches
    little costs a bounded read; `next_before` says where to go on."""
    if not feed_filter.active:
        entries = store.activity(after=after, before=before, limit=want)
        more = len(entries) == want and entries[-1].seq > after + 1
        return FeedPage(
            entries,
            entries[-1].seq if more else None,
            entries[0].seq if entries else 0,
        )
    found: list[ActivityEntry] = []
    newest = 0
    scanned = 0
    while True:
        room = SCAN_PAGE if scan_limit is None else min(SCAN_PAGE, scan_limit - scanned)
        page = store.activity(after=after, before=before, limit=room)
        if page:
            newest = newest or page[0].seq
            before = page[-1].seq
        scanned += len(page)
        for entry in page:
            if feed_filter.matches(entry):
                found.append(entry)
                if len(found) == want:
                    return FeedPage(found, entry.seq, newest)
        if len(page) < room or before is None or before <= after + 1:
            return FeedPage(found, None, newest)
        if scan_limit is not None and scanned >= scan_limit:
            return FeedPage(found, before, newest)
