"""The audit trail through the real CLI: after a revert, `show`, `list`, `journal` and
every export say which revert retired the summary and what it had consumed; a dry run
keeps no record and is not counted; a cycle whose process is interrupted or killed after
decay is in the journal. On both backends where the store answers; the signals are sent
to a real subprocess on LMDB."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from graymatter_tui.core.model import CycleRecord
from tests.conftest import FIXED_NOW, clean_env
from tests.engine.helpers import AGENT
from tests.engine.test_cycle_cli import (
    RunCli,
    applied_in_process,
    as_json,
    consolidate,
    merge_first,
    ollama_env,
    peek,
    seed_weighted,
)
from tests.support.backends import CliStore
from tests.support.ollama_fake import Reply
from tests.support.over_socket import OllamaOverSocket


@pytest.fixture
def server() -> Iterator[OllamaOverSocket]:
    with OllamaOverSocket() as running:
        yield running


@pytest.fixture
def reverted(cli_store: CliStore, server: OllamaOverSocket) -> tuple[CycleRecord, CycleRecord]:
    """(the applied cycle, its revert) on the CLI's store."""
    with peek(cli_store) as store:
        seed_weighted(store)
    record = applied_in_process(cli_store, server, 3)
    with peek(cli_store) as store:
        revert = store.revert(record.cycle_id)
    return record, revert


def test_show_names_the_revert_and_lists_what_it_restored(
    any_cli: RunCli, reverted: tuple[CycleRecord, CycleRecord]
) -> None:
    record, revert = reverted
    text = as_json(any_cli("show", record.summary_id, "--json"))
    assert text["fact"]["superseded_by"] == "agent"
    assert text["fact"]["retired_by"] == revert.cycle_id
    assert text["retirement"]["cycle_id"] == revert.cycle_id
    assert text["retirement"]["kind"] == "revert"
    assert [f["id"] for f in text["restored"]] == record.consumed
    assert all(f["superseded_by"] == "" for f in text["restored"])
    assert text["cycle"]["reverted"] is True
    assert text["consumed"] == []  # the key keeps its meaning: live receipts

    done = any_cli("show", record.summary_id)
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert f"retired by revert {revert.cycle_id} of cycle {record.cycle_id}" in out
    assert "retired by agent" not in out
    assert f"consumed 3 facts, restored by revert {revert.cycle_id}:" in out
    for fact_id in record.consumed:
        assert f"  ↺ {fact_id}  " in out
    assert f"cycle {record.cycle_id}: applied (ollama), reverted by {revert.cycle_id}" in out


def test_list_marks_the_summary_a_revert_retired(
    any_cli: RunCli, reverted: tuple[CycleRecord, CycleRecord]
) -> None:
    record, revert = reverted
    facts = as_json(any_cli("list", AGENT, "--state", "all", "--json"))
    marked = {f["id"]: f["retired_by"] for f in facts if "retired_by" in f}
    assert marked == {record.summary_id: revert.cycle_id}
    line = next(
        row
        for row in as_json_lines(any_cli("list", AGENT, "--state", "tombstones"))
        if row.startswith(record.summary_id)
    )
    assert f"{record.summary_id} ↺ " in line
    assert f"[retired by revert {revert.cycle_id}]" in line


def as_json_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_journal_marks_a_reverted_cycle_in_text_and_json(
    any_cli: RunCli, reverted: tuple[CycleRecord, CycleRecord]
) -> None:
    record, revert = reverted
    lines = as_json_lines(any_cli("journal", AGENT))
    original = next(line for line in lines if record.cycle_id in line)
    assert " applied ↺ " in original
    undoing = next(line for line in lines if revert.cycle_id in line)
    assert " applied ↺ " not in undoing
    records = {r["cycle_id"]: r for r in as_json(any_cli("journal", AGENT, "--json"))}
    assert records[record.cycle_id]["reverted"] is True
    assert records[record.cycle_id]["reverted_by"] == revert.cycle_id
    assert records[revert.cycle_id]["reverted"] is False
    shown = as_json_lines(any_cli("journal", "show", record.cycle_id))
    assert "applied ↺" in shown[0]


def test_exports_say_which_revert_retired_it_and_import_back(
    any_cli: RunCli, reverted: tuple[CycleRecord, CycleRecord], tmp_path: Path
) -> None:
    record, revert = reverted
    markdown = any_cli("export", "--format", "markdown").stdout
    assert f"retired by revert {revert.cycle_id} of cycle {record.cycle_id}" in markdown
    upstream = json.loads(any_cli("export", "--format", "json").stdout)
    summary = next(f for f in upstream if f["id"] == record.summary_id)
    assert summary["superseded_by"] == "agent"  # upstream's shape, as upstream writes it
    assert "retired_by" not in summary
    jsonl = tmp_path / "memory.jsonl"
    assert any_cli("export", "--out", str(jsonl)).returncode == 0
    facts = [
        json.loads(line)["fact"]
        for line in jsonl.read_text().splitlines()
        if json.loads(line)["type"] == "fact"
    ]
    assert {f["id"]: f.get("retired_by") for f in facts}[record.summary_id] == revert.cycle_id
    # The copy imported elsewhere tells the same story, from the journal it carries.
    elsewhere = {"GRAYMATTER_DIR": str(tmp_path / "elsewhere"), "GRAYMATTER_STORE": ""}
    imported = any_cli("import", str(jsonl), env=elsewhere)
    assert imported.returncode == 0, imported.stderr
    again = as_json(any_cli("show", record.summary_id, "--json", env=elsewhere))
    assert again["fact"]["retired_by"] == revert.cycle_id
    assert [f["id"] for f in again["restored"]] == record.consumed


def test_a_dry_run_keeps_no_record_and_status_does_not_count_it(
    any_cli: RunCli, cli_store: CliStore, server: OllamaOverSocket
) -> None:
    with peek(cli_store) as store:
        seed_weighted(store)
    done = any_cli("consolidate", AGENT, "--dry-run", "--json")  # no summariser
    record = as_json(done)
    assert record["outcome"] == "dry_run"
    assert record["reason"] == "dry run: no summariser configured: decay and prune only"
    server.set_responder(merge_first(3))
    code, planned = consolidate(any_cli, server, "--dry-run")
    assert (code, planned["outcome"]) == (0, "dry_run")
    assert as_json(any_cli("journal", "--json")) == []
    assert as_json(any_cli("status", "--json"))["cycles"] == 0


# ---- a cycle whose process ends early ---------------------------------------------------
def _start_consolidate(cli_dir: Path, server: OllamaOverSocket) -> subprocess.Popen[bytes]:
    env = clean_env(
        {"GRAYMATTER_DIR": str(cli_dir), "GRAYMATTER_NOW": FIXED_NOW, **ollama_env(server)}
    )
    return subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "consolidate", AGENT, "--llm", "ollama"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )


def _wait_for_the_call(server: OllamaOverSocket, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while not server.generate_requests:
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, "the summariser was never called"
        time.sleep(0.05)


@pytest.mark.parametrize("how", ["sigkill", "sigint"])
def test_a_cycle_whose_process_ends_during_propose_is_journaled(
    run_cli: RunCli, cli_dir: Path, server: OllamaOverSocket, how: str
) -> None:
    with peek(CliStore.lmdb(cli_dir)) as store:
        seed_weighted(store)
    server.script(Reply.hang(60))
    process = _start_consolidate(cli_dir, server)
    _wait_for_the_call(server, process)  # decay has committed by now
    process.send_signal(signal.SIGKILL if how == "sigkill" else signal.SIGINT)
    _out, err = process.communicate(timeout=60)
    records = as_json(run_cli("journal", "--json"))
    assert len(records) == 1
    record = records[0]
    assert record["stages"][0]["stage"] == "decay"
    if how == "sigkill":
        assert process.returncode == -signal.SIGKILL
        assert record["outcome"] == ""  # the process died: the journal says unfinished
        assert " unfinished " in as_json_lines(run_cli("journal"))[0] + " "
    else:
        assert process.returncode == 130
        assert record["outcome"] == "skipped"
        assert record["reason"] == "interrupted (ctrl+c) before propose"
        assert b"journaled as skipped" in err
        assert b"Traceback" not in err
    assert as_json(run_cli("status", "--json"))["cycles"] == 1
