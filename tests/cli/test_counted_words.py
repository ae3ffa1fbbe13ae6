"""Counts read as a person says them: "1 tombstone", "2 tombstones", never "1 tombstones"
or "fact(s)", in what the real CLI prints for a store holding one, then two, of each
thing (on both backends); `doctor`'s columns stay aligned whatever its check names; and
`status` shows LMDB's map only for an LMDB store that exists."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.words import counted
from graymatter_tui.storage import NewFact
from tests.engine.helpers import AGENT, NOW, prompt_rows, seed_weighted
from tests.support.backends import CliStore
from tests.support.counted_words import words_ok
from tests.support.ollama_fake import RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stdout


def test_counted_takes_the_number_of_its_count() -> None:
    assert counted(0, "fact") == "0 facts"
    assert counted(1, "fact") == "1 fact"
    assert counted(2, "fact") == "2 facts"
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(3, "entry", "entries") == "3 entries"
    assert counted(1, "fact was", "facts were") == "1 fact was"
    assert counted(2, "agent change") == "2 agent changes"
    assert counted(1, "write", at_least=True) == "1+ writes"  # more may follow
    assert counted(5, "write", at_least=True) == "5+ writes"


# ---- one, then two, of everything -------------------------------------------------------
def _consume_weakest(n: int) -> Callable[[RecordedRequest], Reply]:
    """A proposal consuming the `n` weakest prompt rows into a summary without their words."""

    def reply(request: RecordedRequest) -> Reply:
        rows = prompt_rows(request.prompt)[:n]
        return Reply.proposal("plain notes about the garden", [fid for fid, _ in rows])

    return reply


@pytest.mark.parametrize("n", [1, 2])
def test_every_count_takes_its_number(any_cli: RunCli, cli_store: CliStore, n: int) -> None:
    """A store with n tombstones, n probes (each losing a fact to the cycle), n changes
    held for review, n agents and a fact recalled n times: every command says n of each
    in the number n takes."""
    s = "" if n == 1 else "s"
    with cli_store.open(clock_fn=lambda: NOW) as store:
        weakest = seed_weighted(store)[:n]
        for fact in weakest:  # each probe finds one fact the cycle consumes
            store.add_probe(AGENT, fact.text.split()[2])
        for i in range(n):
            store.hold_change(AGENT, "add", "", f"Held change number {i}.")
        other = AGENT if n == 1 else "other-agent"  # n agents in all
        [recalled] = store.put_many([NewFact(other, "Recalled often.", access_count=n)])

    with OllamaOverSocket() as server:
        server.set_responder(_consume_weakest(n))
        env = {"GRAYMATTER_OLLAMA_URL": server.url, "GRAYMATTER_OLLAMA_TIMEOUT": "5"}
        done = any_cli("consolidate", AGENT, "--llm", "ollama", env=env)
        assert server.errors == []
    assert done.returncode == 0, done.stderr
    cycle = words_ok(ok(done))
    assert f"would consume {n} of " in cycle and "batch facts" in cycle
    assert f"{n} fact{s} tombstoned" in cycle
    assert f"probes would lose {n} fact{s}" in cycle
    assert f"{n} consumed · " in cycle
    lose = (
        "1 probe of its agent loses 1 fact it"
        if n == 1
        else "2 probes of its agent lose 2 facts they"
    )
    assert f"although {lose} used to find" in words_ok(done.stderr)

    [record] = json.loads(ok(any_cli("journal", "--json")))
    assert words_ok(ok(any_cli("journal", "show", record["cycle_id"]))) == cycle
    words_ok(ok(any_cli("journal")))

    status = words_ok(ok(any_cli("status")))
    assert f" · {n} tombstone{s} · " in status
    assert f"1 applied ({n} fact{s} consumed)" in status
    assert f"stemming english · {n} probe{s}" in status
    assert f"review     {n} agent change{s} waiting for a decision" in status

    summary = words_ok(ok(any_cli("show", record["summary_id"])))
    assert f"consumed {n} fact{s}:" in summary
    assert f"({n} time{s})" in words_ok(ok(any_cli("show", recalled.id)))

    doctor = words_ok(ok(any_cli("doctor")))
    assert f"live facts across {n} agent{s};" in doctor
    assert f"review queue  {n} agent change{s} waiting for a decision" in doctor

    assert len(words_ok(ok(any_cli("probe", "list"))).splitlines()) == n
    assert len(words_ok(ok(any_cli("review", "list"))).splitlines()) == n
    words_ok(ok(any_cli("list", "--state", "all")))
    words_ok(ok(any_cli("activity")))

    reverted = words_ok(ok(any_cli("revert", record["cycle_id"])))
    assert f": {n} fact{s} live again, summary" in reverted
    records = json.loads(ok(any_cli("journal", "--json")))
    [revert] = [r["cycle_id"] for r in records if r["kind"] == "revert"]
    assert f"restored {n} fact{s}," in words_ok(ok(any_cli("journal", "show", revert)))


@pytest.mark.parametrize("n", [1, 2])
def test_import_and_migrate_count_what_they_copied(run_cli: RunCli, tmp_path: Path, n: int) -> None:
    s = "" if n == 1 else "s"
    source = tmp_path / "source"
    with LmdbStore.open(source) as store:
        store.put_many([NewFact(f"agent-{i}", f"Fact number {i}.") for i in range(n)])
        for i in range(n):
            store.add_probe("agent-0", f"query {i}")
    exported = tmp_path / "export.jsonl"
    ok(run_cli("export", "--dir", str(source), "--out", str(exported)))
    imported = words_ok(ok(run_cli("import", "--dir", str(tmp_path / "copy"), str(exported))))
    assert imported.startswith(f"imported {n} fact{s} (0 already present) and 0 journal records")
    assert f"; {n} probe{s}" in imported

    migrated = words_ok(
        ok(run_cli("migrate", "--from", str(source), "--to", str(tmp_path / "migrated")))
    )
    assert f"across {n} agent{s}" in migrated
    assert f"also         {n} probe{s}, 0 checkpoints" in migrated


# ---- doctor --------------------------------------------------------------------------------
def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _damage_the_review_counter(path: Path) -> None:
    """The pending counter set by hand: doctor's review-queue check fails."""
    import lmdb

    env = lmdb.open(str(path), max_dbs=32)
    with env.begin(write=True) as txn:
        txn.put(b"review_pending", b"3", db=env.open_db(b"meta", txn=txn))
    env.close()


@pytest.mark.parametrize("failing", [1, 2])
def test_doctor_counts_its_failed_checks(run_cli: RunCli, cli_dir: Path, failing: int) -> None:
    with LmdbStore.open(cli_dir) as store:
        store.hold_change("agent", "add", "", "Held for review.")
    if failing == 2:
        _damage_the_review_counter(cli_dir)
    env = {"GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{_closed_port()}"}
    done = run_cli("doctor", "--llm", "ollama", env=env)
    assert done.returncode == 1
    last = words_ok(done.stdout).strip().splitlines()[-1]
    if failing == 1:
        assert last == "1 check failed: summariser."
    else:
        assert last == "2 checks failed: review queue, summariser."
        assert "the pending counter says 3 but 1 proposal is pending" in done.stdout


def test_a_configured_summariser_that_does_not_answer_is_one_warning(
    run_cli: RunCli, cli_dir: Path
) -> None:
    with LmdbStore.open(cli_dir) as store:
        store.put("agent", "a fact")
    env = {
        "GRAYMATTER_CONSOLIDATE_LLM": "ollama",
        "GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{_closed_port()}",
    }
    done = run_cli("doctor", env=env)
    assert done.returncode == 0
    last = words_ok(done.stdout).strip().splitlines()[-1]
    assert last == "Not everything is good: 1 warning: summariser."


def test_doctor_keeps_its_columns_aligned(any_cli: RunCli, cli_store: CliStore) -> None:
    """Every detail starts in one column, after the longest check name shown."""
    with cli_store.open() as store:
        store.put("agent", "a fact")
    checks = json.loads(any_cli("doctor", "--json").stdout)["checks"]
    names = [c["name"] for c in checks]
    assert "review queue" in names and "embeddings" in names
    lines = ok(any_cli("doctor")).splitlines()[: len(checks)]
    starts = set()
    for line, check in zip(lines, checks, strict=True):
        assert line[4:].startswith(check["name"]), line
        starts.add(line.index(check["detail"][:20], 4 + len(check["name"])))
    assert starts == {4 + max(map(len, names)) + 2}, lines


# ---- status: LMDB's map only where there is an LMDB store ------------------------------------
def _size_line(status: str) -> str:
    [line] = [line for line in status.splitlines() if line.startswith("size ")]
    return line


def test_status_shows_a_map_only_for_an_lmdb_store_that_exists(
    any_cli: RunCli, cli_store: CliStore
) -> None:
    # No store yet (a directory without one, a database without our tables): nothing
    # created, and no map, file or database size of a store that is not there.
    done = any_cli("status")
    line = _size_line(ok(done))
    assert "map" not in line and "MB" not in line and "no store" in line, line
    payload: dict[str, Any] = json.loads(ok(any_cli("status", "--json")))
    assert payload["store_exists"] is False
    assert (payload["file_bytes"], payload["map_size"], payload["map_used"]) == (0, 0, 0)
    if cli_store.backend == "lmdb":
        assert not Path(cli_store.location).exists()

    any_cli("remember", "agent", "a fact")
    line = _size_line(ok(any_cli("status")))
    payload = json.loads(ok(any_cli("status", "--json")))
    assert payload["store_exists"] is True
    keys = ["data_dir", "schema_version", "engine", "live_facts", "tombstones", "pinned"]
    keys += ["consolidations", "facts_consumed", "reverts", "cycles", "generation"]
    keys += ["file_bytes", "map_size", "map_used", "agents", "stem_language", "embed_model"]
    keys += ["embed_dim", "embed_backlog", "pending_reviews", "probes"]
    assert list(payload)[: len(keys)] == keys  # the keys of 0.6.0 stay, in their order
    if cli_store.backend == "lmdb":
        assert re.search(r"MB on disk · map \d+\.\d of \d+ MB used$", line), line
        assert payload["map_size"] > 0
    else:
        assert re.search(r"\d+\.\d MB in the database$", line), line
        assert "map" not in line and payload["map_size"] == 0
