"""Probes in the store: saved, listed, removed, each write in the activity feed; hostile
queries refused with nothing written; the same query twice is one probe."""

from __future__ import annotations

import re
import threading
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.errors import Conflict, InvalidInput, NotFound
from graymatter_tui.exchange.transfer import export_bytes, import_file
from graymatter_tui.recall import ranking as recall
from graymatter_tui.storage import MAX_PROBE_QUERY_BYTES, ProbeScore, interval_text, parse_interval
from graymatter_tui.storage.probe_ops import MAX_PER_AGENT
from tests.support.backends import AnyStore

UNKNOWN = "01JC0000000000000000000001"


def test_the_probe_query_limit_is_recalls() -> None:
    assert MAX_PROBE_QUERY_BYTES == recall.MAX_QUERY_BYTES


def test_add_list_remove_and_each_write_is_in_the_feed(any_store: AnyStore) -> None:
    first, created = any_store.add_probe("ops", "staging database restarts", 5)
    assert created and first.k == 5 and first.agent_id == "ops"
    second, _ = any_store.add_probe("ops", "deploy runbook")
    other, _ = any_store.add_probe("dev", "build cache")
    assert [p.id for p in any_store.probes("ops")] == [first.id, second.id]
    assert {p.id for p in any_store.probes()} == {first.id, second.id, other.id}
    assert any_store.remove_probe(first.id) == first
    assert [p.id for p in any_store.probes("ops")] == [second.id]
    actions = [(e.action, e.agent_id) for e in any_store.activity()]
    assert actions[:4] == [("probe", "ops"), ("probe", "dev"), ("probe", "ops"), ("probe", "ops")]
    assert "removed" in any_store.activity()[0].text


def test_the_same_query_again_is_the_same_probe(any_store: AnyStore) -> None:
    probe, _ = any_store.add_probe("ops", "deploy runbook", 8)
    generation = any_store.generation()
    again, created = any_store.add_probe("ops", "deploy runbook", 8)
    assert again == probe and not created
    assert any_store.generation() == generation  # nothing was written
    wider, created = any_store.add_probe("ops", "deploy runbook", 12)
    assert not created and wider.id == probe.id and wider.k == 12
    assert any_store.probes("ops") == [wider]


@pytest.mark.parametrize(
    ("query", "message"),
    [
        ("", "query is empty"),
        ("   ", "query is empty"),
        ("x" * (MAX_PROBE_QUERY_BYTES + 1), "limit is 4096 bytes"),
        ("é" * (MAX_PROBE_QUERY_BYTES // 2 + 1), "limit is 4096 bytes"),
        ("deploy\x1b[31m runbook", "control character (U+001B)"),
        ("deploy\nrunbook", "control character (U+000A)"),
        ("deploy \u202eknoobnur", "control character (U+202E)"),
        ("the of and", "no words recall can search for"),
        ("bad \udcff surrogate", "not valid UTF-8"),
    ],
)
def test_hostile_queries_are_refused_and_nothing_is_written(
    any_store: AnyStore, query: str, message: str
) -> None:
    generation = any_store.generation()
    with pytest.raises(InvalidInput, match=re.escape(message)):
        any_store.add_probe("ops", query)
    assert any_store.probes() == [] and any_store.generation() == generation


def test_a_query_at_the_limit_is_kept(any_store: AnyStore) -> None:
    query = ("cobalt " * 600)[:MAX_PROBE_QUERY_BYTES]
    probe, _ = any_store.add_probe("ops", query)
    assert any_store.probes("ops")[0].query == query == probe.query


@pytest.mark.parametrize("k", [0, -1, 51])
def test_k_out_of_range_is_refused(any_store: AnyStore, k: int) -> None:
    with pytest.raises(InvalidInput, match="k must be between 1 and 50"):
        any_store.add_probe("ops", "deploy runbook", k)


def test_bad_agent_and_unknown_or_malformed_ids(any_store: AnyStore) -> None:
    with pytest.raises(InvalidInput, match="agent name contains a control"):
        any_store.add_probe("o\x07ps", "deploy runbook")
    with pytest.raises(NotFound, match="no probe with id"):
        any_store.remove_probe(UNKNOWN)
    with pytest.raises(InvalidInput, match="not a probe id"):
        any_store.remove_probe("../../etc")


def test_an_agent_has_at_most_so_many_probes(any_store: AnyStore) -> None:
    for n in range(MAX_PER_AGENT):
        any_store.add_probe("ops", f"query number{n}")
    with pytest.raises(Conflict, match="remove one first"):
        any_store.add_probe("ops", "one more query")
    any_store.add_probe("dev", "another agent is not counted")


def test_probes_round_trip_through_the_jsonl_export(any_store: AnyStore, tmp_path: Path) -> None:
    any_store.put("ops", "Staging database restarts nightly.")
    probe, _ = any_store.add_probe("ops", "staging restarts", 3)
    data = export_bytes(any_store, "jsonl")
    assert b'"type":"probe"' in data
    assert b"probe" not in export_bytes(any_store, "json")  # memories.json stays upstream-shaped
    with LmdbStore.open(tmp_path / "copy") as copy:
        result = import_file(copy, data)
        assert result.probes_added == 1
        assert copy.probes() == [probe]
        assert import_file(copy, data).probes_added == 0  # a second import changes nothing


def test_a_bad_probe_line_refuses_the_whole_import(any_store: AnyStore) -> None:
    line = b'{"type":"probe","probe":{"id":"01JC0000000000000000000001","agent_id":"ops",'
    data = (
        b'{"type":"fact","fact":{"id":"01JC0000000000000000000002","agent_id":"ops",'
        b'"text":"kept","created_at":"2026-01-01T00:00:00Z"}}\n'
        + line
        + b'"query":"\\u001b[2J","k":8}}\n'
    )
    with pytest.raises(InvalidInput, match="line 2: probe: query contains a control"):
        import_file(any_store, data)
    assert any_store.all_facts() == [] and any_store.probes() == []


# ---- probe runs and their schedule ---------------------------------------------------------
@pytest.mark.parametrize(
    ("raw", "seconds"),
    [("90s", 90), ("15m", 900), ("6h", 21_600), ("1d", 86_400), ("2w", 1_209_600),
     ("1h30m", 5_400), (" 6H ", 21_600), ("366d", 366 * 86_400)],
)  # fmt: skip
def test_intervals_read_as_people_write_them(raw: str, seconds: int) -> None:
    assert parse_interval(raw) == seconds
    assert parse_interval(interval_text(seconds)) == seconds


@pytest.mark.parametrize("raw", ["", "6", "h", "6x", "-1h", "1.5h", "59s", "367d", "6h ago"])
def test_bad_intervals_are_refused(raw: str) -> None:
    with pytest.raises(InvalidInput):
        parse_interval(raw)


def test_of_many_asking_at_once_one_gets_the_due_run(any_store: AnyStore) -> None:
    any_store.set_probe_schedule(3600)
    barrier = threading.Barrier(4)
    got: list[bool] = []

    def ask() -> None:
        barrier.wait()
        got.append(any_store.claim_probe_run())

    threads = [threading.Thread(target=ask) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert sorted(got) == [False, False, False, True]
    assert any_store.claim_probe_run() is False  # not due again for an hour


def test_a_run_is_a_journal_record_and_an_activity_entry_moving_no_counter(
    any_store: AnyStore,
) -> None:
    any_store.put("ops", "The staging database restarts nightly.")
    probe, _ = any_store.add_probe("ops", "staging database", 3)
    counters = any_store.counters()
    score = ProbeScore(probe=probe, found=["01JC0000000000000000000002"])
    record = any_store.record_probe_run("ops", [score], "cli")
    assert (record.kind, record.outcome, record.trigger) == ("probe_run", "scored", "cli")
    assert (record.live_facts, record.tombstones, record.pinned) == (1, 0, 0)
    assert record.probes[0].after == score.found and record.reason == "1 of 1 probe found something"
    assert any_store.records() == [record]
    assert any_store.counters() == counters
    entry = any_store.activity()[0]
    assert (entry.action, entry.cycle_id) == ("probe", record.cycle_id)
    assert any_store.probe_schedule().last_run_at == ""  # one agent's run is not the schedule's
