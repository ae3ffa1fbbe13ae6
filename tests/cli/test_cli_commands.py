"""Every fact and store command through the real CLI in a subprocess, on both backends
(`any_cli`), but for `--dir` itself and the demo (which keeps its own LMDB store). An
export is imported into a fresh LMDB store, so on PostgreSQL the round trip crosses
backends."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from ulid import ULID

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.schema import SCHEMA_VERSION
from graymatter_tui.backends.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION
from graymatter_tui.core.model import fact_to_dict
from graymatter_tui.storage import NewFact
from tests.support.backends import CliStore

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]

FIXED_STAMP = "2026-03-01T12:00:00.000000Z"  # conftest's GRAYMATTER_NOW as stored
ULID_RE = re.compile(r"^[0-9A-HJKMNP-TV-Z]{26}$")
FACT_KEYS = {
    "id",
    "agent_id",
    "text",
    "created_at",
    "accessed_at",
    "access_count",
    "weight",
    "superseded_by",
    "pinned",
    "pinned_at",
    "cycle_id",
}
STATUS_KEYS = {
    "data_dir",
    "schema_version",
    "live_facts",
    "tombstones",
    "pinned",
    "consolidations",
    "facts_consumed",
    "reverts",
    "cycles",
    "agents",
}
AGENT_KEYS = {"agent_id", "live_facts", "tombstones", "pinned", "avg_weight"}


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    return done.stdout


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(done))


def by_id(facts: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {f["id"]: f for f in facts}


def stored_facts(where: CliStore | Path) -> dict[str, dict[str, Any]]:
    """Every fact in the store `where` names, read in-process (to check what a command
    wrote)."""
    with where.open() if isinstance(where, CliStore) else LmdbStore.open(where) as store:
        return by_id([fact_to_dict(f) for f in store.all_facts()])


@pytest.fixture
def seeded(cli_store: CliStore) -> dict[str, str]:
    """A store in `cli_store` with two agents, a pin, a revision and a retirement."""
    with cli_store.open() as store:
        facts = store.put_many(
            [
                NewFact("support-bot", "Acme wants invoices by email.", weight=0.75),
                NewFact("support-bot", "Refunds over $500 need a lead.", access_count=4),
                NewFact("ops-agent", "Staging DB is on port 5432.", pinned=True),
                NewFact("ops-agent", "Deploys on Tuesdays.\nNever on Fridays.", weight=0.5),
                NewFact("ops-agent", "Backups run at 02:00 UTC."),
            ]
        )
        revision, _ = store.revise(facts[1].id, "Refunds over $400 need a lead.")
        store.retire(facts[4].id)
    return {
        "invoices": facts[0].id,
        "refunds_old": facts[1].id,
        "refunds_new": revision.id,
        "pinned": facts[2].id,
        "deploys": facts[3].id,
        "retired": facts[4].id,
    }


# ---- remember ---------------------------------------------------------------------------


def test_remember_prints_the_new_id(any_cli: RunCli) -> None:
    out = ok(any_cli("remember", "support-bot", "Acme prefers email."))
    fact_id = out.strip()
    assert ULID_RE.match(fact_id)
    assert out == fact_id + "\n"  # only the id on stdout
    listed = as_json(any_cli("list", "--json"))
    assert [(f["id"], f["agent_id"], f["text"]) for f in listed] == [
        (fact_id, "support-bot", "Acme prefers email.")
    ]


def test_remember_json_prints_the_whole_fact(any_cli: RunCli) -> None:
    fact = as_json(any_cli("remember", "ops-agent", "Port 5432.", "--json"))
    assert set(fact) >= FACT_KEYS
    assert ULID_RE.match(fact["id"])
    assert fact["agent_id"] == "ops-agent"
    assert fact["text"] == "Port 5432."
    assert fact["created_at"] == fact["accessed_at"] == FIXED_STAMP
    assert fact["access_count"] == 0
    assert fact["weight"] == 1.0
    assert fact["superseded_by"] == ""
    assert fact["pinned"] is False
    assert fact["pinned_at"] is None
    assert fact["cycle_id"] == ""
    assert as_json(any_cli("show", fact["id"], "--json"))["fact"] == fact


def test_remember_reads_stdin_for_dash(any_cli: RunCli, cli_store: CliStore) -> None:
    text = "first line\n  second line with ünïcödé\n\ttabbed\n"
    fact = as_json(any_cli("remember", "research-agent", "-", "--json", input=text))
    assert fact["text"] == text.removesuffix("\n")  # trailing newlines go, as in $(...)
    assert stored_facts(cli_store) == {fact["id"]: fact}


def test_remember_pin(any_cli: RunCli, cli_store: CliStore) -> None:
    fact = as_json(any_cli("remember", "ops-agent", "Two approvals.", "--pin", "--json"))
    assert fact["pinned"] is True
    assert fact["pinned_at"] == FIXED_STAMP
    assert stored_facts(cli_store) == {fact["id"]: fact}


def test_graymatter_now_sets_created_at(any_cli: RunCli) -> None:
    fact = as_json(
        any_cli(
            "remember",
            "a",
            "as of then",
            "--json",
            env={"GRAYMATTER_NOW": "2025-12-31T23:30:00.123456789-01:00"},
        )
    )
    assert fact["created_at"] == "2026-01-01T00:30:00.123456Z"
    assert ULID.from_str(fact["id"]).milliseconds == 1767227400123


# ---- list -------------------------------------------------------------------------------


def test_list_human_and_json(any_cli: RunCli, seeded: dict[str, str]) -> None:
    listed = as_json(any_cli("list", "--json"))
    ids = [f["id"] for f in listed]
    live = {seeded[k] for k in ("invoices", "refunds_new", "pinned", "deploys")}
    assert set(ids) == live
    assert ids == sorted(ids, reverse=True)  # newest first
    assert all(set(f) >= FACT_KEYS for f in listed)
    assert all(f["superseded_by"] == "" for f in listed)

    human = ok(any_cli("list")).splitlines()
    assert len(human) == 4
    assert [line.split()[0] for line in human] == ids
    assert any("ops-agent: Staging DB is on port 5432." in line for line in human)
    pinned_line = next(line for line in human if line.startswith(seeded["pinned"]))
    assert "★" in pinned_line
    # a multi-line text stays on one row
    assert any("Deploys on Tuesdays.⏎Never on Fridays." in line for line in human)

    ops = as_json(any_cli("list", "ops-agent", "--json"))
    assert {f["id"] for f in ops} == {seeded["pinned"], seeded["deploys"]}
    ops_human = ok(any_cli("list", "ops-agent"))
    assert "Staging DB is on port 5432." in ops_human
    assert "ops-agent:" not in ops_human  # the agent column is dropped for one agent


def test_list_states(any_cli: RunCli, seeded: dict[str, str]) -> None:
    tombs = as_json(any_cli("list", "--state", "tombstones", "--json"))
    assert {f["id"]: f["superseded_by"] for f in tombs} == {
        seeded["refunds_old"]: seeded["refunds_new"],
        seeded["retired"]: "agent",
    }
    human = ok(any_cli("list", "--state", "tombstones"))
    assert len(human.splitlines()) == 2
    assert "†" in human
    everything = as_json(any_cli("list", "--state", "all", "--json"))
    assert len(everything) == 6
    assert [f["id"] for f in everything] == sorted(seeded.values(), reverse=True)


def test_list_paging(any_cli: RunCli, seeded: dict[str, str]) -> None:
    full = [f["id"] for f in as_json(any_cli("list", "--state", "all", "--json"))]
    pages: list[str] = []
    before: list[str] = []
    for _ in range(5):
        page = as_json(any_cli("list", "--state", "all", "--limit", "4", "--json", *before))
        assert len(page) <= 4
        pages += [f["id"] for f in page]
        if len(page) < 4:
            break
        before = ["--before", page[-1]["id"]]
    assert pages == full
    assert len(full) == 6


def test_list_of_an_empty_store(any_cli: RunCli, cli_store: CliStore) -> None:
    """A read command where there is no store yet (no directory, or a database without
    our tables) shows an empty store and creates nothing, on either backend."""
    assert as_json(any_cli("list", "--json")) == []
    done = any_cli("list")
    assert ok(done).strip() == "no facts"
    assert f"no store at {cli_store.shown} yet" in done.stderr
    assert as_json(any_cli("status", "--json"))["live_facts"] == 0
    if cli_store.backend == "postgres":
        import psycopg

        with psycopg.connect(cli_store.location) as conn:
            tables = conn.execute(
                "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
            ).fetchone()
        assert tables == (0,)  # the reads created nothing


# ---- show and curation --------------------------------------------------------------------


def test_show_after_revise(any_cli: RunCli) -> None:
    old = as_json(any_cli("remember", "a", "version one", "--json"))
    revision = as_json(any_cli("revise", old["id"], "version two", "--json"))
    assert revision["text"] == "version two"
    assert revision["id"] != old["id"]
    assert set(revision) >= FACT_KEYS

    shown = as_json(any_cli("show", old["id"], "--json"))
    assert set(shown) >= {"fact", "replaced_by", "consumed", "cycle"}
    assert shown["fact"]["id"] == old["id"]
    assert shown["fact"]["text"] == "version one"
    assert shown["fact"]["superseded_by"] == revision["id"]
    assert shown["replaced_by"] == revision
    assert shown["consumed"] == []
    assert shown["cycle"] is None

    newer = as_json(any_cli("show", revision["id"], "--json"))
    assert newer["fact"] == revision
    assert newer["replaced_by"] is None

    human = ok(any_cli("show", old["id"]))
    assert f"superseded by {revision['id']}" in human
    assert f"replaced by {revision['id']}" in human
    assert "version one" in human and "version two" in human


def test_pin_unpin_revise_retire_json(any_cli: RunCli, cli_store: CliStore) -> None:
    fact = as_json(any_cli("remember", "a", "curate me", "--json"))
    pinned = as_json(any_cli("pin", fact["id"], "--json"))
    assert set(pinned) >= FACT_KEYS
    assert pinned["id"] == fact["id"]
    assert pinned["pinned"] is True and pinned["pinned_at"] == FIXED_STAMP
    assert as_json(any_cli("pin", fact["id"], "--json")) == pinned  # idempotent

    unpinned = as_json(any_cli("unpin", fact["id"], "--json"))
    assert unpinned["pinned"] is False and unpinned["pinned_at"] is None
    assert {k: v for k, v in unpinned.items() if not k.startswith("pinned")} == {
        k: v for k, v in fact.items() if not k.startswith("pinned")
    }

    revision = as_json(any_cli("revise", fact["id"], "curated", "--json"))
    assert revision["text"] == "curated" and revision["superseded_by"] == ""
    retired = as_json(any_cli("retire", revision["id"], "--json"))
    assert retired["id"] == revision["id"]
    assert retired["superseded_by"] == "agent"
    assert retired["text"] == "curated"

    stored = stored_facts(cli_store)
    assert stored[fact["id"]]["superseded_by"] == revision["id"]
    assert stored[revision["id"]] == retired
    assert len(stored) == 2


def test_curation_human_output(any_cli: RunCli, seeded: dict[str, str]) -> None:
    fact_id = seeded["invoices"]
    assert ok(any_cli("pin", fact_id)).strip() == f"pinned {fact_id}"
    assert ok(any_cli("unpin", fact_id)).strip() == f"unpinned {fact_id}"
    out = ok(any_cli("revise", fact_id, "y")).strip()
    match = re.fullmatch(rf"revised {fact_id} -> ([0-9A-Z]{{26}})", out)
    assert match
    assert ok(any_cli("retire", match.group(1))).strip() == f"retired {match.group(1)}"


def test_revise_reads_stdin_for_dash(any_cli: RunCli, cli_store: CliStore) -> None:
    fact_id = ok(any_cli("remember", "a", "old")).strip()
    revision = as_json(any_cli("revise", fact_id, "-", "--json", input="new\ntext"))
    assert revision["text"] == "new\ntext"
    assert stored_facts(cli_store)[fact_id]["superseded_by"] == revision["id"]


# ---- status and --dir -------------------------------------------------------------------


def test_status_json(any_cli: RunCli, seeded: dict[str, str], cli_store: CliStore) -> None:
    status = as_json(any_cli("status", "--json"))
    assert set(status) >= STATUS_KEYS
    assert status["data_dir"] == cli_store.shown
    # Each backend numbers its own schema (ADR 0041).
    expected = SCHEMA_VERSION if cli_store.backend == "lmdb" else PG_SCHEMA_VERSION
    assert status["schema_version"] == expected and SCHEMA_VERSION == 6
    assert status["stem_language"] == "english"  # a new store's default
    assert (status["live_facts"], status["tombstones"], status["pinned"]) == (4, 2, 1)
    for key in ("consolidations", "facts_consumed", "reverts", "cycles"):
        assert status[key] == 0
    agents = {a["agent_id"]: a for a in status["agents"]}
    assert all(set(a) >= AGENT_KEYS for a in status["agents"])
    assert set(agents) == {"support-bot", "ops-agent"}
    ops = agents["ops-agent"]
    assert (ops["live_facts"], ops["tombstones"], ops["pinned"]) == (2, 1, 1)
    assert ops["avg_weight"] == pytest.approx(0.75)
    support = agents["support-bot"]
    assert (support["live_facts"], support["tombstones"], support["pinned"]) == (2, 1, 0)
    assert support["avg_weight"] == pytest.approx(0.875)
    assert (status["pending_reviews"], status["probes"]) == (0, 0)


def test_status_counts_probes_and_changes_waiting_for_review(
    any_cli: RunCli, seeded: dict[str, str], cli_store: CliStore
) -> None:

    with cli_store.open() as store:
        store.add_probe("ops-agent", "staging database")
        store.hold_change("ops-agent", "add", "", "Held: the runbook moved.")
    status = as_json(any_cli("status", "--json"))
    assert (status["pending_reviews"], status["probes"]) == (1, 1)
    text = any_cli("status").stdout
    assert "1 probe\n" in text and "review     1 agent change waiting for a decision" in text

    human = ok(any_cli("status"))
    assert "4 live" in human and "2 tombstones" in human and "1 pinned" in human
    assert "ops-agent" in human and "support-bot" in human


def test_dir_flag_before_and_after_the_subcommand(
    run_cli: RunCli, tmp_path: Path, cli_dir: Path
) -> None:
    other = str(tmp_path / "elsewhere")
    fact = as_json(run_cli("--dir", other, "remember", "a", "lives elsewhere", "--json"))
    assert [f["id"] for f in as_json(run_cli("list", "--json", "--dir", other))] == [fact["id"]]
    assert as_json(run_cli("--dir", other, "status", "--json"))["data_dir"] == other
    assert set(stored_facts(Path(other))) == {fact["id"]}
    assert not cli_dir.exists()  # GRAYMATTER_DIR was overridden, never created


# ---- demo -------------------------------------------------------------------------------


def test_demo_creates_three_agents_once(run_cli: RunCli, tmp_path: Path) -> None:
    first = as_json(run_cli("demo", "--json"))
    assert first["facts_added"] >= 250
    status = as_json(run_cli("status", "--json"))
    assert {a["agent_id"] for a in status["agents"]} == {
        "support-bot",
        "research-agent",
        "ops-agent",
    }
    assert status["live_facts"] == first["facts_added"] >= 250
    assert all(a["pinned"] >= 1 for a in status["agents"])
    assert all(0 < a["avg_weight"] < 1 for a in status["agents"])
    facts = as_json(run_cli("list", "--state", "all", "--json"))
    assert len(facts) == first["facts_added"]

    second = as_json(run_cli("demo", "--json"))
    assert second["facts_added"] == 0
    assert as_json(run_cli("status", "--json")) == status  # not even the generation moved

    # the same clock gives the same demo, id for id
    other = tmp_path / "other-demo"
    assert "demo store ready" in ok(run_cli("demo", "--dir", str(other)))
    assert stored_facts(other) == by_id(facts)


# ---- export and import --------------------------------------------------------------------


def test_export_jsonl_to_stdout_and_file(
    any_cli: RunCli, seeded: dict[str, str], tmp_path: Path, cli_store: CliStore
) -> None:
    stdout = ok(any_cli("export"))
    lines = [json.loads(line) for line in stdout.splitlines()]
    assert lines[0]["type"] == "header"
    assert lines[0]["format"] == "graymatter-tui"
    exported = [line["fact"] for line in lines if line["type"] == "fact"]
    assert by_id(exported) == stored_facts(cli_store)

    out = tmp_path / "export.jsonl"
    said = ok(any_cli("export", "--format", "jsonl", "--out", str(out)))
    assert str(out) in said
    assert out.read_text("utf-8") == stdout  # same clock, same bytes
    meta = as_json(any_cli("export", "--out", str(out), "--json"))
    assert meta == {"out": str(out), "format": "jsonl", "bytes": len(stdout.encode())}


def test_export_json_is_upstream_shaped(
    any_cli: RunCli, seeded: dict[str, str], tmp_path: Path
) -> None:
    items = json.loads(ok(any_cli("export", "--format", "json")))
    assert isinstance(items, list) and len(items) == 6
    facts = by_id(items)
    live = facts[seeded["invoices"]]
    assert "superseded_by" not in live  # upstream omits it for live facts
    assert live["weight"] == 0.75
    assert facts[seeded["refunds_old"]]["superseded_by"] == seeded["refunds_new"]
    assert facts[seeded["retired"]]["superseded_by"] == "agent"
    assert facts[seeded["pinned"]]["pinned"] is True
    out = tmp_path / "memories.json"
    ok(any_cli("export", "--format", "json", "--out", str(out)))
    assert json.loads(out.read_text("utf-8")) == items


def test_export_markdown(any_cli: RunCli, seeded: dict[str, str], tmp_path: Path) -> None:
    text = ok(any_cli("export", "--format", "markdown"))
    assert text.startswith("# graymatter-tui memory export")
    assert "## ops-agent" in text and "## support-bot" in text
    for fact_text in ("Acme wants invoices by email.", "Refunds over $400 need a lead."):
        assert fact_text in text
    assert f"superseded by {seeded['refunds_new']}" in text
    assert "retired" in text and "pinned" in text
    out = tmp_path / "memory.md"
    ok(any_cli("export", "--format", "markdown", "--out", str(out)))
    assert out.read_text("utf-8") == text


@pytest.mark.parametrize("fmt", ["jsonl", "json"])
def test_export_import_round_trip(
    any_cli: RunCli, seeded: dict[str, str], tmp_path: Path, cli_store: CliStore, fmt: str
) -> None:
    out = tmp_path / f"export.{fmt}"
    ok(any_cli("export", "--format", fmt, "--out", str(out)))
    fresh = {"GRAYMATTER_DIR": str(tmp_path / "fresh"), "GRAYMATTER_STORE": ""}

    result = as_json(any_cli("import", str(out), "--json", env=fresh))
    assert result["facts_added"] == 6 and result["facts_skipped"] == 0

    original = stored_facts(cli_store)
    copied = by_id(as_json(any_cli("list", "--state", "all", "--json", env=fresh)))
    assert set(copied) == set(original)
    for fact_id, fact in original.items():
        twin = copied[fact_id]
        for key in ("agent_id", "text", "superseded_by", "pinned", "pinned_at", "created_at"):
            assert twin[key] == fact[key], (fact_id, key)
    if fmt == "json":  # upstream's shape has no provenance: the copy was written by import
        assert {f["source"] for f in copied.values()} == {"import"}
        original = {i: {**f, "source": "import"} for i, f in original.items()}
    assert copied == original  # every field, in fact
    assert copied[seeded["refunds_old"]]["superseded_by"] == seeded["refunds_new"]
    assert copied[seeded["retired"]]["superseded_by"] == "agent"

    again = ok(any_cli("import", str(out), env=fresh))
    assert "imported 0 facts (6 already present)" in again
    status = as_json(any_cli("status", "--json", env=fresh))
    assert (status["live_facts"], status["tombstones"], status["pinned"]) == (4, 2, 1)
    assert stored_facts(tmp_path / "fresh") == copied


def test_import_from_stdin(any_cli: RunCli, seeded: dict[str, str], tmp_path: Path) -> None:
    data = ok(any_cli("export"))
    fresh = {"GRAYMATTER_DIR": str(tmp_path / "fresh"), "GRAYMATTER_STORE": ""}
    result = as_json(any_cli("import", "-", "--json", input=data, env=fresh))
    assert result["facts_added"] == 6


def _ulid_at(ms: int, tail: int) -> str:
    return str(ULID.from_bytes(ms.to_bytes(6, "big") + tail.to_bytes(10, "big")))


def test_import_upstream_memories_json(
    any_cli: RunCli, tmp_path: Path, cli_store: CliStore
) -> None:
    base = 1_768_046_587_000  # 2026-01-10T12:03:07Z
    old, new, pinned, retired, alias = (_ulid_at(base + i, 7 + i) for i in range(5))
    zero = "0001-01-01T00:00:00Z"
    upstream = [
        {
            "id": old,
            "agent_id": "go-agent",
            "text": "The API key rotates monthly.",
            "created_at": "2026-01-10T14:03:07.123456789+02:00",
            "accessed_at": "2026-01-11T09:15:00.5+02:00",
            "access_count": 3,
            "weight": 0.8125,
            "embedding": [0.12, -0.5, 0.33, 1e-7],
            "superseded_by": new,
            "pinned_at": zero,
        },
        {
            "id": new,
            "agent_id": "go-agent",
            "text": "The API key rotates weekly.",
            "created_at": "2026-01-10T14:03:07.987654321+02:00",
            "accessed_at": "2026-01-10T14:03:07.987654321+02:00",
            "access_count": 0,
            "weight": 1,
            "embedding": [0.1, 0.2],
            "confidence": "verified",
            "pinned_at": zero,
        },
        {
            "id": pinned,
            "agent_id": "go-agent",
            "text": "Never log secrets.",
            "created_at": "2026-01-10T14:03:08+02:00",
            "accessed_at": "2026-01-12T10:00:00.000000001+02:00",
            "access_count": 12,
            "weight": 1,
            "pinned": True,
            "pinned_at": "2026-01-12T08:00:00.25+02:00",
        },
        {
            "id": retired,
            "agent_id": "other-agent",
            "text": "Old office address.",
            "created_at": "2026-01-10T14:03:09+02:00",
            "accessed_at": "2026-01-10T14:03:09+02:00",
            "access_count": 0,
            "weight": 0.3,
            "superseded_by": "agent",
            "pinned_at": zero,
        },
        {
            "id": alias,
            "agent_id": "other-agent",
            "text": "k8s = kubernetes",
            "created_at": "2026-01-10T14:03:10.1+02:00",
            "accessed_at": "2026-01-10T14:03:10.1+02:00",
            "access_count": 0,
            "weight": 1,
            "kind": "alias",
            "alias_source": "usage",
            "pinned_at": zero,
        },
    ]
    path = tmp_path / "memories.json"
    path.write_text(json.dumps(upstream, indent=2), "utf-8")

    result = as_json(any_cli("import", str(path), "--json"))
    assert result["facts_added"] == 5
    facts = stored_facts(cli_store)
    assert set(facts) == {old, new, pinned, retired, alias}

    assert facts[old]["created_at"] == "2026-01-10T12:03:07.123456Z"
    assert facts[old]["accessed_at"] == "2026-01-11T07:15:00.500000Z"
    assert facts[old]["access_count"] == 3
    assert facts[old]["weight"] == 0.8125
    assert facts[old]["superseded_by"] == new
    assert facts[old]["pinned"] is False and facts[old]["pinned_at"] is None
    assert "embedding" not in facts[old]

    assert facts[new]["superseded_by"] == ""
    assert facts[new]["confidence"] == "verified"
    assert facts[new]["weight"] == 1.0

    assert facts[pinned]["pinned"] is True
    assert facts[pinned]["pinned_at"] == "2026-01-12T06:00:00.250000Z"
    assert facts[pinned]["accessed_at"] == "2026-01-12T08:00:00.000000Z"

    assert facts[retired]["superseded_by"] == "agent"
    assert facts[alias]["kind"] == "alias"

    status = as_json(any_cli("status", "--json"))
    assert (status["live_facts"], status["tombstones"], status["pinned"]) == (3, 2, 1)
    shown = as_json(any_cli("show", old, "--json"))
    assert shown["replaced_by"]["id"] == new

    again = as_json(any_cli("import", str(path), "--json"))
    assert (again["facts_added"], again["facts_skipped"]) == (0, 5)
