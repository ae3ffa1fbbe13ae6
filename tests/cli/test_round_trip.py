"""`export` then `import` into another store reproduces the store: facts, journal, receipts
and counters, so `doctor` passes there and `status` says what it said at the source.
Through the real CLI in subprocesses, from a store built by the real engine."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.storage import NewFact
from tests.cli.rich_store import build_rich_store

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]
# What differs between two stores holding the same data.
PLACE_KEYS = ("data_dir", "generation", "file_bytes", "map_size", "map_used")


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stdout, done.stderr)
    return done.stdout


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(done))


def status(run_cli: RunCli, where: Path) -> dict[str, Any]:
    payload = as_json(run_cli("status", "--json", env={"GRAYMATTER_DIR": str(where)}))
    return {k: v for k, v in payload.items() if k not in PLACE_KEYS}


def doctor(run_cli: RunCli, where: Path) -> dict[str, Any]:
    done = run_cli("doctor", "--json", env={"GRAYMATTER_DIR": str(where)})
    report: dict[str, Any] = json.loads(done.stdout)
    failed = [c for c in report["checks"] if c["status"] == "fail"]
    assert done.returncode == (1 if failed else 0)
    return report


def failures(report: dict[str, Any]) -> list[str]:
    return [f"{c['name']}: {c['detail']}" for c in report["checks"] if c["status"] == "fail"]


def contents(path: Path) -> dict[str, Any]:
    """Facts, journal, receipts and counters, read in-process."""
    with LmdbStore.open(path) as store:
        facts = {f.id: f for f in store.all_facts()}
        records = store.records()
        summaries = {r.summary_id for r in records if r.summary_id} | set(facts)
        return {
            "facts": facts,
            "records": records,
            "receipts": {i: store.receipts(i) for i in sorted(summaries)},
            "counters": store.counters(),
            "agents": store.agents(),
        }


@pytest.fixture
def source(tmp_path: Path) -> Path:
    path = tmp_path / "source"
    build_rich_store(path).close()
    return path


def test_jsonl_round_trip_reproduces_the_store(
    run_cli: RunCli, source: Path, tmp_path: Path
) -> None:
    assert failures(doctor(run_cli, source)) == []
    out = tmp_path / "export.jsonl"
    ok(run_cli("export", "--out", str(out), env={"GRAYMATTER_DIR": str(source)}))
    target = tmp_path / "target"

    result = as_json(run_cli("import", str(out), "--json", env={"GRAYMATTER_DIR": str(target)}))
    assert result["records_added"] == 5

    assert failures(doctor(run_cli, target)) == []
    assert status(run_cli, target) == status(run_cli, source)
    assert status(run_cli, target)["cycles"] == 4
    assert contents(target) == contents(source)
    assert result["conflicts"] == []

    # importing the same file again changes nothing, counters included
    again = as_json(run_cli("import", str(out), "--json", env={"GRAYMATTER_DIR": str(target)}))
    assert (again["facts_added"], again["records_added"]) == (0, 0)
    assert again["conflicts"] == [] and again["kept_store_state"] == []
    assert contents(target) == contents(source)


def test_importing_into_a_store_with_its_own_history_adds_up_the_counters(
    run_cli: RunCli, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    ok(run_cli("export", "--out", str(out), env={"GRAYMATTER_DIR": str(source)}))
    target = tmp_path / "busy-target"
    build_rich_store(target).close()  # its own facts and cycles (other ids)
    before = contents(target)["counters"]

    ok(run_cli("import", str(out), env={"GRAYMATTER_DIR": str(target)}))
    after = contents(target)["counters"]
    added = contents(source)["counters"]
    assert after.cycles == before.cycles + added.cycles
    assert after.consolidations == before.consolidations + added.consolidations
    assert after.facts_consolidated == before.facts_consolidated + added.facts_consolidated
    assert after.reverts == before.reverts + added.reverts
    assert failures(doctor(run_cli, target)) == []


def test_memories_json_round_trip_carries_every_fact(
    run_cli: RunCli, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "memories.json"
    ok(
        run_cli(
            "export", "--format", "json", "--out", str(out), env={"GRAYMATTER_DIR": str(source)}
        )
    )
    target = tmp_path / "target"
    result = as_json(run_cli("import", str(out), "--json", env={"GRAYMATTER_DIR": str(target)}))
    assert result["records_added"] == 0  # upstream's format has no journal

    # Upstream's shape has no provenance: every copy was written here by the import.
    copied = contents(target)["facts"]
    assert {f.source for f in copied.values()} == {"import"}
    originals = {
        i: msgspec.structs.replace(f, source="import") for i, f in contents(source)["facts"].items()
    }
    assert copied == originals
    assert contents(target)["agents"] == contents(source)["agents"]
    assert failures(doctor(run_cli, target)) == []


def test_import_then_recall_finds_the_imported_facts(
    run_cli: RunCli, source: Path, tmp_path: Path
) -> None:
    out = tmp_path / "export.jsonl"
    ok(run_cli("export", "--out", str(out), env={"GRAYMATTER_DIR": str(source)}))
    target = {"GRAYMATTER_DIR": str(tmp_path / "target")}
    ok(run_cli("import", str(out), env=target))
    here = as_json(run_cli("recall", "ops", "staging database", "--preview", "--json", env=target))
    there = as_json(
        run_cli(
            "recall",
            "ops",
            "staging database",
            "--preview",
            "--json",
            env={"GRAYMATTER_DIR": str(source)},
        )
    )
    assert here == there and here


def test_a_second_import_of_new_facts_only_adds_them(run_cli: RunCli, tmp_path: Path) -> None:
    source = tmp_path / "grows"
    with LmdbStore.open(source) as store:
        store.put_many(NewFact("a", f"fact {i}") for i in range(5))
    first = tmp_path / "first.jsonl"
    ok(run_cli("export", "--out", str(first), env={"GRAYMATTER_DIR": str(source)}))
    with LmdbStore.open(source) as store:
        store.put_many(NewFact("a", f"later fact {i}") for i in range(3))
    second = tmp_path / "second.jsonl"
    ok(run_cli("export", "--out", str(second), env={"GRAYMATTER_DIR": str(source)}))
    target = {"GRAYMATTER_DIR": str(tmp_path / "target")}
    ok(run_cli("import", str(first), env=target))
    result = as_json(run_cli("import", str(second), "--json", env=target))
    assert (result["facts_added"], result["facts_skipped"]) == (3, 5)
    assert contents(tmp_path / "target")["facts"] == contents(source)["facts"]


ULID_VALUE = re.compile(r'"([0-9A-HJKMNP-TV-Z]{26})"')


def lower_case_ids(path: Path) -> int:
    """Rewrite every id in the file in lower case, as another tool might; returns how
    many it rewrote."""
    text, count = ULID_VALUE.subn(lambda m: f'"{m.group(1).lower()}"', path.read_text())
    path.write_text(text)
    return count


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_ids_in_lower_case_import_as_the_canonical_ids(
    run_cli: RunCli, source: Path, tmp_path: Path, fmt: str
) -> None:
    with LmdbStore.open(source) as store:
        store.add_probe("ops", "staging database", 3)
    out = tmp_path / f"export.{fmt}"
    ok(run_cli("export", "--format", fmt, "--out", str(out), env={"GRAYMATTER_DIR": str(source)}))
    assert lower_case_ids(out) > 20  # facts, receipts, cycles, records' lists, the probe
    target = tmp_path / "target"

    ok(run_cli("import", str(out), env={"GRAYMATTER_DIR": str(target)}))

    assert failures(doctor(run_cli, target)) == []  # every receipt resolves
    imported, original = contents(target), contents(source)
    if fmt == "json":  # upstream's shape: facts only, written here by the import
        assert set(imported["facts"]) == set(original["facts"])
        return
    assert imported == original
    assert status(run_cli, target) == status(run_cli, source)
    with LmdbStore.open(source) as there, LmdbStore.open(target) as here:
        assert here.probes() == there.probes()
    again = as_json(run_cli("import", str(out), "--json", env={"GRAYMATTER_DIR": str(target)}))
    assert (again["facts_added"], again["records_added"], again["conflicts"]) == (0, 0, [])
