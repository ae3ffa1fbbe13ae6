"""The consolidation commands through the real CLI in a subprocess, against the scripted
Ollama and Anthropic fakes on a loopback socket (a subprocess cannot take a transport):
JSON shapes, exit codes, journal, revert, doctor and secret hygiene. Consolidate, journal,
revert and doctor run on both backends (`any_cli`, `seeded_any`); the human output, the
demo's local summariser, id validation and the summariser's secrets stay on LMDB."""

from __future__ import annotations

import json
import re
import socket
import subprocess
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers import OllamaSummariser
from graymatter_tui.core.model import CycleRecord
from tests.engine.helpers import AGENT, MODEL, NOW, prompt_rows, seed_weighted
from tests.support.anthropic_fake import Message
from tests.support.backends import AnyStore, CliStore
from tests.support.ollama_fake import RecordedRequest, Reply
from tests.support.over_socket import AnthropicOverSocket, OllamaOverSocket

RunCli = Callable[..., subprocess.CompletedProcess[str]]

RECORD_KEYS = {
    "cycle_id",
    "kind",
    "agent_id",
    "summariser",
    "model",
    "outcome",
    "reason",
    "batch",
    "consumed",
    "ignored",
    "summary_id",
    "pruned",
    "started_at",
    "finished_at",
}
REVERT_KEYS = {"reverted_cycle_id", "restored", "retired_summary_id"}
RFC3339 = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
FAKE_KEY = "sk-ant-TESTKEY-123456"


def _seed(where: CliStore) -> list[str]:
    """30 facts in the CLI's store; returns the batch a cycle will choose (weakest 15)."""
    with where.open(clock_fn=lambda: NOW) as store:
        facts = seed_weighted(store)
    return [f.id for f in facts[:15]]


@pytest.fixture
def seeded(cli_dir: Path) -> list[str]:
    return _seed(CliStore.lmdb(cli_dir))


@pytest.fixture
def seeded_any(cli_store: CliStore) -> list[str]:
    return _seed(cli_store)


@pytest.fixture
def server() -> Iterator[OllamaOverSocket]:
    with OllamaOverSocket() as running:
        yield running
    assert running.errors == []


def ollama_env(server: OllamaOverSocket) -> dict[str, str]:
    return {"GRAYMATTER_OLLAMA_URL": server.url, "GRAYMATTER_OLLAMA_TIMEOUT": "5"}


def merge_first(n: int) -> Callable[[RecordedRequest], Reply]:
    """A responder consuming the first `n` rows of the prompt, keeping their words."""

    def respond(request: RecordedRequest) -> Reply:
        rows = prompt_rows(request.prompt)[:n]
        return Reply.proposal("; ".join(text for _, text in rows), [fid for fid, _ in rows])

    return respond


def consolidate(
    run_cli: RunCli, server: OllamaOverSocket, *extra: str, now: str | None = None
) -> tuple[int, Any]:
    env = ollama_env(server)
    if now:
        env["GRAYMATTER_NOW"] = now
    done = run_cli("consolidate", AGENT, "--llm", "ollama", "--json", *extra, env=env)
    assert done.stderr == ""
    return done.returncode, json.loads(done.stdout)


@contextmanager
def peek(where: CliStore) -> Iterator[AnyStore]:
    """The CLI's store opened in this process (reads are cheaper than another subprocess)."""
    store = where.open(clock_fn=lambda: NOW)
    try:
        yield store
    finally:
        store.close()


def applied_in_process(where: CliStore, server: OllamaOverSocket, n: int) -> CycleRecord:
    """Run one applied cycle on the CLI's store without a subprocess."""
    server.set_responder(merge_first(n))
    with peek(where) as store:
        summariser = OllamaSummariser(server.url, MODEL, 5.0)
        record = Cycle(store, AGENT, summariser, CycleOptions()).run_sync()
    assert record.outcome == "applied", record.reason
    return record


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


# ---------------------------------------------------------------- consolidate


def test_consolidate_applied_prints_the_record(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str], cli_store: CliStore
) -> None:
    server.set_responder(merge_first(3))
    code, record = consolidate(any_cli, server)
    assert code == 0
    assert set(record) >= RECORD_KEYS
    assert not REVERT_KEYS & set(record)
    assert record["kind"] == "consolidate"
    assert record["agent_id"] == AGENT
    assert record["summariser"] == "ollama"
    assert record["model"] == MODEL
    assert record["outcome"] == "applied"
    assert record["reason"] == ""
    assert record["batch"] == seeded_any
    assert record["consumed"] == seeded_any[:3]
    assert record["ignored"] == []
    assert len(record["summary_id"]) == 26
    assert record["pruned"] == []
    assert RFC3339.match(record["started_at"]) and RFC3339.match(record["finished_at"])
    assert record["started_at"].startswith("2026-03-01T12:00:00")
    with peek(cli_store) as store:
        assert store.receipts(record["summary_id"]) == seeded_any[:3]
        assert store.require(record["summary_id"]).cycle_id == record["cycle_id"]
        assert store.require_record(record["cycle_id"]).outcome == "applied"


def test_consolidate_human_output(
    run_cli: RunCli, server: OllamaOverSocket, seeded: list[str]
) -> None:
    server.set_responder(merge_first(2))
    done = run_cli("consolidate", AGENT, "--llm", "ollama", env=ollama_env(server))
    assert done.returncode == 0, done.stderr
    assert "applied" in done.stdout.splitlines()[0]
    for fact_id in seeded[:2]:
        assert fact_id in done.stdout


def test_consolidate_not_applied_exits_3(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str], cli_store: CliStore
) -> None:
    server.script(
        Reply.text("The garden notes are all about watering."),
        Reply.proposal("orphan", ["01JZZZZZZZZZZZZZZZZZZZZZZZ"]),
        Reply.error(400, "bad request"),
        Reply.model_not_found(""),
    )
    for outcome, words in (
        ("discarded", "not valid JSON"),
        ("discarded", "nothing to consume"),
        ("failed", "HTTP 400"),
        ("failed", "ollama pull"),
    ):
        code, record = consolidate(any_cli, server)
        assert code == 3
        assert record["outcome"] == outcome
        assert words in record["reason"]
        assert record["summary_id"] == ""
    with peek(cli_store) as store:
        assert len(store.list_facts(AGENT, "live")) == 30
        assert store.list_facts(AGENT, "tombstones") == []
        counters = store.counters()
    assert (counters.consolidations, counters.facts_consolidated, counters.cycles) == (0, 0, 4)


def test_consolidate_skipped_exits_0(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str]
) -> None:
    code, record = consolidate(any_cli, server, "--threshold", "30")
    assert code == 0
    assert record["outcome"] == "skipped"
    assert server.generate_requests == []
    done = any_cli("consolidate", AGENT, "--json")  # no summariser configured
    assert done.returncode == 0
    record = json.loads(done.stdout)
    assert (record["outcome"], record["summariser"]) == ("skipped", "none")


def test_dry_run_exits_0_and_changes_nothing(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str], cli_store: CliStore
) -> None:
    with peek(cli_store) as store:
        before = store.all_facts()
    server.set_responder(merge_first(4))
    code, record = consolidate(any_cli, server, "--dry-run")
    assert code == 0
    assert record["outcome"] == "dry_run"
    assert record["consumed"] == [] and record["summary_id"] == ""
    assert len(server.generate_requests) == 1
    with peek(cli_store) as store:
        assert store.all_facts() == before
        assert store.counters().consolidations == 0


def test_local_summariser_applies_on_the_demo_store(run_cli: RunCli, cli_dir: Path) -> None:
    assert as_json(run_cli("demo", "--json"))["facts_added"] > 0
    outcomes = []
    for agent in ("support-bot", "research-agent", "ops-agent"):
        done = run_cli("consolidate", agent, "--llm", "local", "--json")
        record = json.loads(done.stdout)
        assert done.returncode == (3 if record["outcome"] in ("failed", "discarded") else 0)
        outcomes.append(record)
        if record["outcome"] == "applied":
            break
    applied = [r for r in outcomes if r["outcome"] == "applied"]
    assert applied, [(r["outcome"], r["reason"]) for r in outcomes]
    for record in applied:
        assert record["summariser"] == "local"
        assert len(record["consumed"]) >= 2
        assert set(record["consumed"]) <= set(record["batch"])
    with peek(CliStore.lmdb(cli_dir)) as store:
        assert all(c.ok for c in check_invariants(store))


# ---------------------------------------------------------------- journal and revert


def test_journal_show_and_revert(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str], cli_store: CliStore
) -> None:
    # One second apart: cycle ids are ULIDs, so "newest first" needs distinct instants
    # (two processes minting ids in the same millisecond order them at random).
    server.set_responder(merge_first(3))
    _, applied = consolidate(any_cli, server, now="2026-03-01T12:00:01Z")
    server.script(Reply.text("prose"))
    _, discarded = consolidate(any_cli, server, now="2026-03-01T12:00:02Z")
    _, skipped = consolidate(any_cli, server, "--threshold", "100", now="2026-03-01T12:00:03Z")

    shown = as_json(any_cli("journal", "show", applied["cycle_id"], "--json"))
    assert shown == applied

    later = {"GRAYMATTER_NOW": "2026-03-01T12:00:04Z"}
    revert = as_json(any_cli("revert", applied["cycle_id"], "--json", env=later))
    assert set(revert) >= REVERT_KEYS
    assert set(revert) >= RECORD_KEYS
    assert revert["kind"] == "revert"
    assert revert["reverted_cycle_id"] == applied["cycle_id"]
    assert revert["restored"] == applied["consumed"]
    assert revert["retired_summary_id"] == applied["summary_id"]

    journal = as_json(any_cli("journal", "--json"))
    assert [r["cycle_id"] for r in journal] == [
        revert["cycle_id"],
        skipped["cycle_id"],
        discarded["cycle_id"],
        applied["cycle_id"],
    ]
    assert [r["outcome"] for r in journal] == ["applied", "skipped", "discarded", "applied"]
    assert [r["kind"] for r in journal] == ["revert", "consolidate", "consolidate", "consolidate"]
    for entry in journal:
        assert set(entry) >= RECORD_KEYS
    assert journal[-1]["reverted_by"] == revert["cycle_id"]
    assert as_json(any_cli("journal", AGENT, "--json")) == journal
    with peek(cli_store) as store:
        assert len(store.list_facts(AGENT, "live")) == 30
        assert [f.id for f in store.list_facts(AGENT, "tombstones")] == [applied["summary_id"]]
        counters = store.counters()
    assert (counters.consolidations, counters.reverts) == (1, 1)

    done = any_cli("revert", discarded["cycle_id"], "--json")  # not an applied cycle
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("graymatter-tui: error:")
    assert discarded["cycle_id"] in lines[0]


def test_revert_and_journal_show_of_unknown_or_malformed_ids(
    run_cli: RunCli, seeded: list[str]
) -> None:
    for args in (("revert", "01JZZZZZZZZZZZZZZZZZZZZZZZ"), ("journal", "show", "not-a-cycle")):
        done = run_cli(*args, "--json")
        assert done.returncode == 1, args
        assert done.stdout == ""
        assert len(done.stderr.splitlines()) == 1
        assert "Traceback" not in done.stderr


# ---------------------------------------------------------------- doctor


def test_doctor_on_a_healthy_store(
    any_cli: RunCli, server: OllamaOverSocket, seeded_any: list[str], cli_store: CliStore
) -> None:
    applied_in_process(cli_store, server, 5)
    done = any_cli("doctor", "--llm", "ollama", "--json", env=ollama_env(server))
    assert done.returncode == 0, done.stdout
    report = json.loads(done.stdout)
    assert report["ok"] is True
    for check in report["checks"]:
        assert set(check) == {"name", "status", "detail"}
        assert check["status"] in ("ok", "warn", "fail")
    by_name = {c["name"]: c for c in report["checks"]}
    for name in ("I-1", "I-2", "I-3", "I-4", "I-5", "I-6"):
        assert by_name[name]["status"] == "ok", by_name[name]
    # LMDB's files are walked; a server is named instead (its pages are its own).
    assert by_name["integrity" if cli_store.backend == "lmdb" else "server"]["status"] == "ok"
    assert by_name["summariser"]["status"] == "ok", by_name["summariser"]
    assert server.version in by_name["summariser"]["detail"]  # it asked /api/version


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_doctor_fails_when_the_named_summariser_is_unreachable(
    run_cli: RunCli, seeded: list[str]
) -> None:
    # Asked to check ollama by name, an ollama that does not answer is a failure (exit 1);
    # tests/cli/test_doctor_checks.py covers the configured-only case (a warning).
    done = run_cli(
        "doctor",
        "--llm",
        "ollama",
        "--json",
        env={"GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"},
    )
    assert done.returncode == 1, done.stdout
    report = json.loads(done.stdout)
    assert report["ok"] is False
    [summariser] = [c for c in report["checks"] if c["name"] == "summariser"]
    assert summariser["status"] == "fail"
    assert "does not answer" in summariser["detail"]
    assert [c["name"] for c in report["checks"] if c["status"] == "fail"] == ["summariser"]


def test_doctor_fails_when_an_invariant_is_broken(
    any_cli: RunCli, cli_store: CliStore, server: OllamaOverSocket, seeded_any: list[str]
) -> None:
    record = applied_in_process(cli_store, server, 3)
    with peek(cli_store) as store:
        store.delete([record.summary_id])  # a summary gone without a journal copy
    done = any_cli("doctor", "--json")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["ok"] is False
    failing = {c["name"] for c in report["checks"] if c["status"] == "fail"}
    assert "I-2" in failing


# ---------------------------------------------------------------- secrets


def test_anthropic_key_never_leaks(run_cli: RunCli, seeded: list[str]) -> None:
    with AnthropicOverSocket(key=FAKE_KEY) as server:
        server.set_responder(
            lambda request: Message.error(
                401,
                "authentication_error",
                f"invalid x-api-key: {request.headers['x-api-key']} (check it)",
            )
        )
        env = {
            "ANTHROPIC_API_KEY": FAKE_KEY,
            "ANTHROPIC_BASE_URL": server.url,
            "GRAYMATTER_CONSOLIDATE_MODEL": MODEL,
            "GRAYMATTER_ANTHROPIC_TIMEOUT": "5",
        }
        as_record = run_cli("consolidate", AGENT, "--llm", "anthropic", "--json", env=env)
        human = run_cli("consolidate", AGENT, "--llm", "anthropic", env=env)
        requests = server.message_requests
    assert len(requests) == 2  # 401 is not retried
    assert requests[0].headers["x-api-key"] == FAKE_KEY  # the key was sent, and echoed back
    assert requests[0].path == "/v1/messages"
    assert as_record.returncode == human.returncode == 3
    record = json.loads(as_record.stdout)
    assert record["outcome"] == "failed"
    assert record["summariser"] == "anthropic"
    assert "401" in record["reason"]
    assert "[redacted]" in record["reason"]
    outputs = [as_record.stdout, as_record.stderr, human.stdout, human.stderr]
    outputs.append(run_cli("journal", "--json").stdout)
    for fmt in ("jsonl", "json"):
        done = run_cli("export", "--format", fmt)
        assert done.returncode == 0, done.stderr
        outputs.append(done.stdout)
    for output in outputs:
        assert FAKE_KEY not in output
        assert "TESTKEY" not in output
