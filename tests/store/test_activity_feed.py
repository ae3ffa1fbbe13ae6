"""Reading the activity feed through a filter, a page at a time (activity_feed.read_page):
pages continue where the last ended, with no entry twice and none missed, and a scan
limit bounds how much one read looks through. Filters and write numbers run on both
backends; the long paging runs on LMDB only, its entries written in one raw transaction
(5000 single writes would take PostgreSQL a minute) through the shared `read_page`."""

from __future__ import annotations

from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.core import provenance
from graymatter_tui.views.activity_feed import FeedFilter, read_page
from tests.support.backends import AnyStore


def _feed(store: LmdbStore, count: int) -> None:
    """`count` entries: every third one from mcp:claude for agent ops, the rest from cli
    for agent dev."""

    def write(tx: Tx) -> None:
        for n in range(count):
            if n % 3 == 0:
                tx.source = "mcp:claude"
                tx.log("add", "ops", text=f"entry {n}")
            else:
                tx.source = "cli"
                tx.log("add", "dev", text=f"entry {n}")

    store.write(write)


def _writes(store: AnyStore, count: int) -> None:
    """`_feed`'s entries, one write each, through the operations both backends share.
    Each text its own word, with no number: no write holds a pair for review."""
    for n in range(count):
        with provenance.writing_as("mcp:claude" if n % 3 == 0 else "cli"):
            store.put("ops" if n % 3 == 0 else "dev", f"entry {_word(n)}")


def _word(n: int) -> str:
    letters = "abcdefghijklmnopqrstuvwxyz"
    return "".join(letters[(n // 26**i) % 26] for i in range(4))


def _all_pages(store: AnyStore, wanted: FeedFilter, want: int, scan: int | None) -> list[int]:
    seqs: list[int] = []
    before = None
    for _ in range(10_000):
        page = read_page(store, wanted, want=want, before=before, scan_limit=scan)
        seqs += [e.seq for e in page.entries]
        if page.next_before is None:
            return seqs
        before = page.next_before
    raise AssertionError("the pages never ended")


def test_pages_of_a_filter_cover_every_match_once(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        _feed(store, 5000)
        everything = [e.seq for e in store.activity()]
        from_ops = [s for s in everything if (s - 1) % 3 == 0]  # entry n has write n + 1
        from_cli = [s for s in everything if (s - 1) % 3 != 0]
        cases = (
            (FeedFilter(), everything),
            (FeedFilter(agent="ops"), from_ops),
            (FeedFilter(source="mcp:claude"), from_ops),
            (FeedFilter(source="cli", agent="dev"), from_cli),
        )
        for wanted, expected in cases:
            for want, scan in ((7, None), (500, None), (500, 100), (1, 1)):
                assert _all_pages(store, wanted, want, scan) == expected, (wanted, want, scan)


def test_a_scan_limit_bounds_one_read_and_says_where_to_go_on(any_store: AnyStore) -> None:
    _writes(any_store, 150)
    page = read_page(any_store, FeedFilter(agent="nobody"), want=10, scan_limit=100)
    assert page.entries == [] and page.next_before == 51 and page.newest == 150
    rest = read_page(any_store, FeedFilter(agent="nobody"), want=10, before=51)
    assert rest.entries == [] and rest.next_before is None


def test_source_mcp_matches_every_mcp_client(any_store: AnyStore) -> None:
    for client in ("claude", "cursor"):
        with provenance.writing_as(f"mcp:{client}"):
            any_store.put("ops", f"from {client}")
    with provenance.writing_as("mcpish"):
        any_store.put("ops", "not an MCP client")
    page = read_page(any_store, FeedFilter(source="mcp"), want=10)
    assert [e.text for e in page.entries] == ["from cursor", "from claude"]


def test_newer_than_a_write_number(any_store: AnyStore) -> None:
    _writes(any_store, 30)
    page = read_page(any_store, FeedFilter(agent="ops"), want=100, after=20)
    assert [e.seq for e in page.entries] == [28, 25, 22]
    assert page.newest == 30
