"""`migrate` LMDB -> PostgreSQL -> LMDB with the real CLI on the demo store after a
cycle, a revert, a second cycle, a pin, a probe, a checkpoint, an alias and review
proposals (one pending, one rejected): the exports are byte-identical, doctor passes on
every hop, and what the export does not carry (checkpoints, aliases, the review queue,
the graph, receipts, counters) is equal too."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from subprocess import CompletedProcess

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.core import clock
from graymatter_tui.storage import StoreSnapshot
from tests.conftest import FIXED_NOW

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

Run = Callable[..., CompletedProcess[str]]
AGENT = "ops-agent"


def _ok(done: CompletedProcess[str]) -> CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def build_rich_demo(run_cli: Run, cli_dir: Path) -> None:
    """The demo store, then everything a migration must carry that the demo lacks."""
    _ok(run_cli("demo"))
    first = json.loads(_ok(run_cli("consolidate", AGENT, "--llm", "local", "--json")).stdout)
    assert first["outcome"] == "applied"
    _ok(run_cli("revert", first["cycle_id"]))
    second = json.loads(_ok(run_cli("consolidate", AGENT, "--llm", "local", "--json")).stdout)
    assert second["outcome"] == "applied"
    newest = json.loads(_ok(run_cli("list", AGENT, "--limit", "3", "--json")).stdout)
    _ok(run_cli("pin", next(f["id"] for f in newest if not f["pinned"])))
    _ok(run_cli("probe", "add", AGENT, "staging database port"))
    now = clock.parse_time(FIXED_NOW)
    with LmdbStore.open(cli_dir, clock_fn=lambda: now) as store:
        store.save_checkpoint(AGENT, '{"step": 3, "note": "half way"}')
        store.add_alias(AGENT, "db", ["database", "postgres"])
        live = store.list_facts(AGENT, limit=2)
        store.hold_change(AGENT, "update", live[0].text, "Held: " + live[0].text)
        rejected = store.hold_change(AGENT, "forget", live[1].text, "")
        store.reject_proposal(rejected.id, "keep it")


def _export(run_cli: Run, *location: str) -> bytes:
    done = _ok(run_cli("export", "--format", "jsonl", "--out", "-", *location))
    return done.stdout.encode()


def _doctor(run_cli: Run, *location: str) -> None:
    done = run_cli("doctor", "--json", *location)
    report = json.loads(done.stdout)
    assert report["ok"], [c for c in report["checks"] if c["status"] == "fail"]
    assert done.returncode == 0


def _without_feed(snap: StoreSnapshot) -> tuple[object, ...]:
    return (snap.stem_language, snap.demo, snap.facts, snap.records, snap.probes, snap.rows)


def test_lmdb_to_postgres_to_lmdb_keeps_everything(
    run_cli: Run, cli_dir: Path, tmp_path: Path, pg_url: str
) -> None:
    build_rich_demo(run_cli, cli_dir)
    _doctor(run_cli)
    back = tmp_path / "back"
    with LmdbStore.open(cli_dir, read_only=True) as source:
        # the demo's duplicates and possible updates, and the two agents' changes held
        held, pending = len(source.proposals()), source.pending_count()
    assert held == pending + 1 and pending > 1

    there = json.loads(
        _ok(run_cli("migrate", "--from", str(cli_dir), "--to", pg_url, "--json")).stdout
    )
    _doctor(run_cli, "--store", pg_url)
    home = json.loads(_ok(run_cli("migrate", "--from", pg_url, "--to", str(back), "--json")).stdout)
    _doctor(run_cli, "--dir", str(back))

    original = _export(run_cli)
    assert b'"exported_at":"2026-03-01T12:00:00.000000Z"' in original.split(b"\n", 1)[0]
    assert _export(run_cli, "--store", pg_url) == original
    assert _export(run_cli, "--dir", str(back)) == original

    for report in (there, home):
        assert report["already_copied"] is False
        assert report["facts"] > 300 and report["records"] == 4  # two cycles, a revert, a rejection
        assert report["probes"] == 1
        assert report["rows"]["checkpoints"] == 1 and report["rows"]["aliases"] == 1
        assert report["rows"]["proposals"] == held
        assert report["counters"]["review_pending"] == pending
        assert report["rows"]["graph_nodes"] > 0 and report["rows"]["extracted"] > 0
        assert report["counters"]["consolidations"] == 2 and report["counters"]["reverts"] == 1
        assert "invariants I-1…I-6" in report["verified"]
        assert "***" in (report["source"] + report["target"])
        assert pg_url.split("@")[0].split(":")[-1] not in json.dumps(report)

    with (
        LmdbStore.open(cli_dir, read_only=True) as first,
        LmdbStore.open(back, read_only=True) as last,
    ):
        before, after = first.snapshot(), last.snapshot()
        assert _without_feed(after) == _without_feed(before)
        assert after.counters | {"activity_seq": 0} == before.counters | {"activity_seq": 0}
        # The feed came along, and each hop added one entry per agent saying so.
        assert after.activity[: len(before.activity)] == before.activity
        moved = after.activity[len(before.activity) :]
        assert len(moved) == 2 * len({f.agent_id for f in before.facts})
        assert all("facts migrated from" in e.text for e in moved)
        assert first.latest_checkpoint(AGENT) == last.latest_checkpoint(AGENT)
        assert first.aliases(AGENT) == last.aliases(AGENT)
        assert first.pending_count() == last.pending_count() == pending
    with PgStore.open(pg_url, read_only=True) as middle:
        assert _without_feed(middle.snapshot()) == _without_feed(before)
    with LmdbStore.open(back) as last:
        # A pair raised before the migration is not asked again after it.
        asked = [p for p in last.proposals(status="pending") if p.action == "possible_update"]
        for pair in asked[:20]:
            raised = last.remember(pair.agent_id, pair.text).held
            assert all(i.held_id != pair.held_id for i in raised), pair.id


def test_running_it_again_finds_the_copy_and_writes_nothing(
    run_cli: Run, cli_dir: Path, pg_url: str
) -> None:
    build_rich_demo(run_cli, cli_dir)
    _ok(run_cli("migrate", "--from", str(cli_dir), "--to", pg_url))
    with PgStore.open(pg_url, read_only=True) as store:
        generation = store.generation()
    again = _ok(run_cli("migrate", "--from", str(cli_dir), "--to", pg_url))
    assert "already holds this copy" in again.stdout
    with PgStore.open(pg_url, read_only=True) as store:
        assert store.generation() == generation


def test_the_summary_names_what_was_copied_and_verified(
    run_cli: Run, cli_dir: Path, tmp_path: Path
) -> None:
    _ok(run_cli("demo"))
    done = _ok(run_cli("migrate", "--from", str(cli_dir), "--to", f"lmdb:{tmp_path / 'copy'}"))
    lines = done.stdout.splitlines()
    assert lines[0] == f"migrated {cli_dir} -> {tmp_path / 'copy'}"
    assert any(line.split()[:2] == ["facts", str(_fact_count(cli_dir))] for line in lines)
    assert lines[-1].startswith("verified: facts per agent and state")
    assert done.stderr == ""  # no bar: stderr is not a terminal


def _fact_count(directory: Path) -> int:
    with LmdbStore.open(directory, read_only=True) as store:
        return len(store.all_facts())


def test_when_stays_as_it_was(run_cli: Run, cli_dir: Path, tmp_path: Path) -> None:
    """Times, weights, access counts and sources are the source's, not the copy's."""
    _ok(run_cli("demo"))
    later = "2027-01-01T00:00:00Z"
    _ok(
        run_cli(
            "migrate",
            "--from",
            str(cli_dir),
            "--to",
            str(tmp_path / "c"),
            env={"GRAYMATTER_NOW": later},
        )
    )
    with (
        LmdbStore.open(cli_dir, read_only=True) as a,
        LmdbStore.open(tmp_path / "c", read_only=True) as b,
    ):
        assert a.all_facts() == b.all_facts()
        assert all(datetime.fromisoformat(f.created_at[:19]).year < 2027 for f in b.all_facts())


FIXTURE = Path(__file__).parents[1] / "fixtures" / "store-0.4.0" / "store"


def test_a_previous_release_store_migrates_and_is_never_written(
    run_cli: Run, tmp_path: Path, pg_url: str
) -> None:
    """The source is opened read-only: a schema-4 store is read as it is, not upgraded,
    and not one byte of its data file changes."""
    source = tmp_path / "old"
    shutil.copytree(FIXTURE, source)
    before = (source / "data.mdb").read_bytes()
    done = run_cli("migrate", "--from", str(source), "--to", pg_url, "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["rows"]["checkpoints"] == 1 and report["rows"]["proposals"] == 1
    assert (source / "data.mdb").read_bytes() == before
    assert _export(run_cli, "--store", pg_url) == _export(run_cli, "--dir", str(source))
    _doctor(run_cli, "--store", pg_url)


def test_without_from_the_configured_store_is_the_source(
    run_cli: Run, cli_dir: Path, tmp_path: Path
) -> None:
    _ok(run_cli("demo"))
    done = _ok(run_cli("migrate", "--to", str(tmp_path / "copy"), "--json"))
    assert json.loads(done.stdout)["source"] == str(cli_dir)
    assert _export(run_cli, "--dir", str(tmp_path / "copy")) == _export(run_cli)
