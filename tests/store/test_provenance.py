"""Every fact records who wrote it, and every write leaves one activity entry naming the
source, the agent and the action, in the order the store committed them. On both backends,
but for the feed of several processes (LMDB's multi-process writers, run as subprocesses)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import provenance
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import ApplyRequest, NewFact
from tests.support.backends import AnyStore

ROOT = Path(__file__).resolve().parents[2]


def test_each_write_names_its_source_and_action(any_store: AnyStore) -> None:
    store = any_store
    with provenance.writing_as("mcp:claude-code"):
        first = store.put("ops", "The deploy runbook is in the wiki.")
        revised, _ = store.revise(first.id, "The deploy runbook is in Notion.")
    store.pin(revised.id)
    store.unpin(revised.id)
    gone = store.put("ops", "Temporary note.")
    store.retire(gone.id)
    replacement, tombs = store.supersede_text("ops", revised.text, "Runbook: Notion, page 4.")
    with provenance.writing_as(provenance.DEMO):
        store.put_many([NewFact("ops", "bulk one"), NewFact("ops", "bulk two")])
    feed = store.activity()
    assert store.require(first.id).source == "mcp:claude-code"
    assert revised.source == "mcp:claude-code"
    assert gone.source == provenance.LIBRARY and replacement.source == provenance.LIBRARY
    assert [(e.action, e.source) for e in reversed(feed)] == [
        ("add", "mcp:claude-code"),
        ("update", "mcp:claude-code"),
        ("pin", "api"),
        ("unpin", "api"),
        ("add", "api"),
        ("forget", "api"),
        ("update", "api"),
        ("add", "demo"),
    ]
    assert [e.seq for e in feed] == list(range(len(feed), 0, -1))
    assert feed[0].count == 2 and feed[0].text == "2 facts"
    assert feed[1].fact_id == replacement.id and feed[1].count == len(tombs) == 1
    assert all(e.agent_id == "ops" for e in feed)


def _merge_into_rack_3(store: AnyStore, shown: dict[str, str]) -> tuple[str, ApplyRequest]:
    """A new cycle's id and its request consuming the facts `shown` (id -> the text the
    summariser saw) into one summary."""
    cycle = store.unused_id(store.now())
    request = ApplyRequest(
        cycle_id=cycle,
        agent_id="ops",
        summary="Alpha is on rack 3.",
        consume=list(shown),
        snapshot=shown,
    )
    return cycle, request


def test_a_consolidation_summary_is_written_by_the_consolidation(any_store: AnyStore) -> None:
    store = any_store
    a = store.put("ops", "Alpha was moved to rack 3.")
    b = store.put("ops", "Alpha runs on rack 3.")
    cycle, request = _merge_into_rack_3(store, {a.id: a.text, b.id: b.text})
    outcome = store.apply_consolidation(request, CycleRecord(cycle_id=cycle, agent_id="ops"))
    assert outcome.summary is not None
    assert outcome.summary.source == provenance.CONSOLIDATION
    store.revert(cycle)
    feed = store.activity(limit=2)
    assert [e.action for e in feed] == ["revert", "consolidation"]
    assert feed[1].cycle_id == cycle and feed[1].count == 2


def test_reading_the_feed_after_a_write_number_gives_only_newer_writes(any_store: AnyStore) -> None:
    store = any_store
    # Facts sharing no word, so no write holds a pair for review (an entry of its own).
    for word in ("apples", "pears", "plums", "grapes", "melons"):
        store.put("ops", f"{word} ripen")
    mark = store.last_activity()
    store.put("ops", "cherries")
    newer = store.activity(after=mark)
    page = store.activity(before=3)
    assert [e.text for e in newer] == ["cherries"]
    assert [e.seq for e in page] == [2, 1]


_WRITER = """
import sys
from graymatter_tui.core import provenance
from graymatter_tui.backends.lmdb import LmdbStore
provenance.name_process(sys.argv[2])
with LmdbStore.open(sys.argv[1]) as store:
    for n in range(50):
        store.put("shared", f"{sys.argv[2]} fact {n}")
"""


def test_writes_from_several_processes_share_one_ordered_feed(tmp_path: Path) -> None:
    path = tmp_path / "s"
    LmdbStore.open(path).close()
    writers = [
        subprocess.Popen([sys.executable, "-c", _WRITER, str(path), name], cwd=ROOT)
        for name in ("mcp:one", "mcp:two", "cli")
    ]
    assert all(w.wait(timeout=120) == 0 for w in writers)
    with LmdbStore.open(path, read_only=True) as store:
        feed = store.activity(limit=1000)
        facts = store.list_facts("shared")
    # Beside each add, the pairs the writes made ("mcp:one fact 7" may update "… fact 6")
    # are held for review, each an entry of its own, in the same order.
    adds = [e for e in feed if e.action == "add"]
    assert len(adds) == len(facts) == 150
    assert {e.action for e in feed} <= {"add", "review"}
    assert sorted(e.seq for e in feed) == list(range(1, len(feed) + 1))
    by_source = {e.source for e in feed}
    assert by_source == {"mcp:one", "mcp:two", "cli"}
    assert {f.source for f in facts} == by_source


def test_a_client_name_is_made_safe_to_store_and_show() -> None:
    assert provenance.mcp_source("claude-code") == "mcp:claude-code"
    assert provenance.mcp_source("\x1b[31mevil\u202e name") == "mcp:31mevil-name"
    assert provenance.mcp_source(None) == "mcp:unnamed-client"
    assert provenance.mcp_source("x" * 500) == "mcp:" + "x" * provenance.MAX_CLIENT_NAME


def test_only_sources_this_program_writes_are_accepted_from_a_file() -> None:
    for good in ("cli", "tui", "import", "consolidation", "demo", "api", "mcp:claude-code"):
        assert provenance.is_valid(good), good
    made = provenance.mcp_source("\x1b]0;title\x07 Cursor IDE")
    assert provenance.is_valid(made)
    for bad in ("", "mcp:", "root", "mcp:\x1b[31m", "mcp:" + "x" * 49, "cli\n", "MCP:x"):
        assert not provenance.is_valid(bad), bad


def test_a_refused_apply_commits_nothing_and_moves_no_generation(any_store: AnyStore) -> None:
    store = any_store
    fact = store.put("ops", "Alpha runs on rack 3.")
    cycle, request = _merge_into_rack_3(store, {fact.id: "what the summariser saw, since changed"})
    generation, feed = store.generation(), store.last_activity()
    outcome = store.apply_consolidation(request, CycleRecord(cycle_id=cycle, agent_id="ops"))
    assert not outcome.applied and "changed meanwhile" in outcome.reason
    assert store.generation() == generation and store.last_activity() == feed
    assert store.find_record(cycle) is None
