"""ULIDs are case-insensitive: every command that takes a fact, journal record, proposal or
probe id finds it however the id is cased, and answers with the canonical (upper-case)
id. Something that is not a ULID in any case is still refused. Through the real CLI on
both backends."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.core import provenance
from tests.support.backends import CliStore

Run = Callable[..., subprocess.CompletedProcess[str]]
AGENT = "ops"


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stdout, done.stderr)
    assert done.stderr == ""
    return done.stdout


def mixed(value: str) -> str:
    """The id with every other letter in lower case (digits stay as they are)."""
    return "".join(c.lower() if i % 2 else c for i, c in enumerate(value))


def test_fact_commands_take_an_id_in_any_case(any_cli: Run, cli_store: CliStore) -> None:
    with cli_store.open() as store:
        older = store.put(AGENT, "Backups run at 02:00.")
        newer = store.put(AGENT, "Staging listens on port 5432.")
    low = newer.id.lower()
    assert low != newer.id

    shown = json.loads(ok(any_cli("show", low, "--json")))
    assert shown["fact"]["id"] == newer.id
    assert f"id: {newer.id}" in ok(any_cli("show", mixed(newer.id)))
    assert ok(any_cli("pin", low)).strip() == f"pinned {newer.id}"
    assert json.loads(ok(any_cli("unpin", low, "--json")))["pinned"] is False
    page = json.loads(ok(any_cli("list", "--before", low, "--json")))
    assert [f["id"] for f in page] == [older.id]

    revised = ok(any_cli("revise", low, "Staging listens on port 6543."))
    assert revised.startswith(f"revised {newer.id} -> ")
    revision_id = revised.split()[-1]
    assert json.loads(ok(any_cli("retire", revision_id.lower(), "--json")))["superseded_by"]
    with cli_store.open() as store:
        assert store.require(newer.id).superseded_by == revision_id
        assert store.require(revision_id).is_retired


def test_review_journal_and_revert_take_an_id_in_any_case(
    any_cli: Run, cli_store: CliStore
) -> None:
    with cli_store.open() as store:
        fact = store.put(AGENT, "Port 5432.")
        store.put(AGENT, "Port 7000.")
        with provenance.writing_as("mcp:claude-code"):
            approved = store.hold_change(AGENT, "update", "Port 5432.", "Port 5433.")
            rejected = store.hold_change(AGENT, "forget", "Port 7000.", "")

    assert json.loads(ok(any_cli("review", "show", approved.id.lower(), "--json")))["id"] == (
        approved.id
    )
    decision = json.loads(ok(any_cli("review", "approve", mixed(approved.id), "--json")))
    assert decision["id"] == approved.id and decision["status"] == "approved"
    record_id = decision["record"]["cycle_id"]
    said = ok(any_cli("review", "reject", rejected.id.lower(), "--reason", "keep it"))
    assert said.strip() == f"rejected forget {rejected.id}: keep it"

    replayed = json.loads(ok(any_cli("journal", "show", record_id.lower(), "--json")))
    assert replayed["cycle_id"] == record_id
    reverted = ok(any_cli("revert", record_id.lower()))
    assert reverted.startswith(f"reverted cycle {record_id}: 1 fact live again")
    with cli_store.open() as store:
        assert store.require(fact.id).is_live
        assert store.require_proposal(rejected.id).status == "rejected"


def test_probe_remove_takes_an_id_in_any_case(any_cli: Run, cli_store: CliStore) -> None:
    with cli_store.open() as store:
        probe, _ = store.add_probe(AGENT, "staging port", 5)
    removed = json.loads(ok(any_cli("probe", "remove", probe.id.lower(), "--json")))
    assert removed["id"] == probe.id
    with cli_store.open() as store:
        assert store.probes(AGENT) == []


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("show", "01jc00000000000000000000u1"), "not a fact id"),  # U is not base32
        (("pin", "01jc0000000000000000000001x"), "not a fact id"),  # 27 characters
        (("journal", "show", "01jc00000000000000000000l1"), "not a cycle id"),
        (("review", "show", "01jc00000000000000000000o1"), "not a proposal id"),
        (("probe", "remove", "01jc00000000000000000000i1"), "not a probe id"),
        (("review", "approve", "01jc00000000000000000000i"), "not a proposal id"),
        (("revert", "01jc00000000000000000000-1"), "not a cycle id"),
    ],
)
def test_what_is_not_a_ulid_in_any_case_is_still_refused(
    run_cli: Run, cli_dir: Path, args: tuple[str, ...], said: str
) -> None:
    done = run_cli(*args)
    assert done.returncode == 1, (done.returncode, done.stderr)
    assert said in done.stderr and done.stderr.count("\n") == 1  # refused before any open
    assert not cli_dir.exists()


def test_canonical_id_upper_cases_ascii_base32_only() -> None:
    from graymatter_tui.core.textsafe import canonical_id

    ulid = "01JC0000000000000000000001"
    assert canonical_id(ulid.lower()) == ulid
    assert canonical_id(mixed("01jcabcdefghjkmnpqrstvwxyz")) == "01JCABCDEFGHJKMNPQRSTVWXYZ"
    # Look-alikes that case-insensitive matching would take, and a trailing newline.
    for bad in ("01JC000000000000000000000\u212a", "01JC000000000000000000000\u017f", ulid + "\n"):
        assert canonical_id(bad) is None
