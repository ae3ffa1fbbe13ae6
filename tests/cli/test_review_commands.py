"""`review list|show|approve|reject`, run as the real CLI: text shows a held change as a
diff, `--json` the proposal with its journal record; a stale approval is discarded with
exit 3; every hostile input is one clear line with exit 1 and changes nothing.

Deciding, showing and two processes racing run on both backends (`any_cli`); hostile
input, refused before the store is touched, and a tampered import stay on LMDB.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core import provenance
from tests.conftest import clean_env
from tests.support.backends import CliStore

Run = Callable[..., subprocess.CompletedProcess[str]]
AGENT = "agent-a"
OLD = "Staging database listens on port 5432."
NEW = "Staging database listens on port 5433."


def _held(cli_store: CliStore, action: str = "update", text: str = NEW) -> tuple[str, str]:
    """(fact id, proposal id) of a fact and an agent's held change to it."""
    with cli_store.open() as store:
        fact = store.put(AGENT, OLD)
        with provenance.writing_as("mcp:claude-code"):
            held = store.hold_change(AGENT, action, OLD, text)
    return fact.id, held.id


def test_list_and_show_draw_the_held_change_as_a_diff(any_cli: Run, cli_store: CliStore) -> None:
    fact_id, proposal_id = _held(cli_store)
    listed = any_cli("review", "list")
    assert listed.returncode == 0, listed.stderr
    assert proposal_id in listed.stdout and f"{OLD} → {NEW}" in listed.stdout
    as_json = json.loads(any_cli("review", "list", AGENT, "--json").stdout)
    assert [p["id"] for p in as_json] == [proposal_id]
    assert as_json[0]["matches"] == [{"id": fact_id, "text": OLD, "pinned": False, "cycle_id": ""}]
    assert json.loads(any_cli("review", "list", "nobody", "--json").stdout) == []
    shown = any_cli("review", "show", proposal_id)
    assert shown.returncode == 0, shown.stderr
    assert f"− {fact_id} {OLD}" in shown.stdout
    assert f"+ {'':<26} {NEW}" in shown.stdout
    assert "1 fact would be superseded by 1 new fact · pending" in shown.stdout
    assert "asked by mcp:claude-code" in shown.stdout
    payload = json.loads(any_cli("review", "show", proposal_id, "--json").stdout)
    assert payload["status"] == "pending" and payload["record"] is None


def test_approve_applies_and_show_of_the_tombstone_names_the_review(
    any_cli: Run, cli_store: CliStore
) -> None:
    fact_id, proposal_id = _held(cli_store)
    done = any_cli("review", "approve", proposal_id, "--json")
    assert done.returncode == 0, done.stderr
    payload = json.loads(done.stdout)
    record = payload["record"]
    assert payload["status"] == "approved" and payload["decided_by"] == "cli"
    assert record["kind"] == "review" and record["outcome"] == "applied"
    assert record["proposal_id"] == proposal_id and record["consumed"] == [fact_id]
    shown = json.loads(any_cli("show", fact_id, "--json").stdout)
    assert shown["replaced_by"]["text"] == NEW
    assert shown["replaced_by"]["source"] == "mcp:claude-code"
    assert shown["cycle"]["proposal_id"] == proposal_id
    receipt = any_cli("show", fact_id).stdout
    assert f"replaced by {record['summary_id']}:" in receipt
    assert (
        f"review {record['cycle_id']}: update asked by mcp:claude-code as proposal "
        f"{proposal_id}, applied by cli"
    ) in receipt
    replayed = any_cli("journal", "show", record["cycle_id"]).stdout
    assert f"update held as proposal {proposal_id}" in replayed
    assert "decided by cli" in replayed and "matched 1, made 1 tombstone" in replayed
    assert any_cli("review", "list").stdout.strip() == "nothing held for review"
    assert proposal_id in any_cli("review", "list", "--status", "all").stdout
    doctor = any_cli("doctor", "--json")
    assert json.loads(doctor.stdout)["ok"], doctor.stdout
    reverted = any_cli("revert", record["cycle_id"], "--json")
    assert reverted.returncode == 0, reverted.stderr
    assert json.loads(reverted.stdout)["restored"] == [fact_id]
    assert json.loads(any_cli("doctor", "--json").stdout)["ok"]


def test_a_stale_approval_is_discarded_with_exit_3(any_cli: Run, cli_store: CliStore) -> None:
    fact_id, proposal_id = _held(cli_store, "forget", "")
    assert any_cli("revise", fact_id, NEW).returncode == 0
    done = any_cli("review", "approve", proposal_id)
    assert done.returncode == 3, done.stderr
    assert f"discarded {proposal_id}, nothing applied: stale: fact {fact_id}" in done.stdout
    payload = json.loads(any_cli("review", "show", proposal_id, "--json").stdout)
    assert payload["status"] == "discarded"
    assert payload["record"]["outcome"] == "discarded"
    journal = json.loads(any_cli("journal", "--json").stdout)
    assert [r["kind"] for r in journal] == ["review"]


def test_reject_keeps_the_reason_verbatim_and_shows_it_neutralised(
    any_cli: Run, cli_store: CliStore
) -> None:
    _, proposal_id = _held(cli_store)
    markup = "[bold red]wrong port[/] — see ticket"
    done = any_cli("review", "reject", proposal_id, "--reason", markup)
    assert done.returncode == 0, done.stderr
    assert f"rejected update {proposal_id}: {markup}" in done.stdout
    payload = json.loads(any_cli("review", "show", proposal_id, "--json").stdout)
    assert payload["reason"] == markup and payload["record"]["outcome"] == "rejected"
    with cli_store.open() as store:
        assert [f.text for f in store.list_facts(AGENT)] == [OLD]


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("review", "approve", "not-a-ulid"), "not a proposal id: 'not-a-ulid'"),
        (("review", "show", "x" * 300), "not a proposal id"),
        (("review", "approve", "01JC0000000000000000000001"), "no proposal with id"),
        (("review", "reject", "01JC0000000000000000000001"), "no proposal with id"),
        (("review", "reject", "{id}", "--reason", "bell\x07"), "control character (U+0007)"),
        (("review", "reject", "{id}", "--reason", "a\nb"), "control character (U+000A)"),
    ],
)
def test_hostile_input_is_one_line_exit_1_and_changes_nothing(
    run_cli: Run, cli_dir: Path, args: tuple[str, ...], said: str
) -> None:
    _, proposal_id = _held(CliStore.lmdb(cli_dir))
    done = run_cli(*(a.replace("{id}", proposal_id) for a in args))
    assert done.returncode == 1, done.stdout
    assert said in done.stderr and done.stderr.count("\n") == 1
    assert "Traceback" not in done.stderr
    with LmdbStore.open(cli_dir, read_only=True) as store:
        assert store.require_proposal(proposal_id).pending


def test_deciding_twice_says_already_decided(any_cli: Run, cli_store: CliStore) -> None:
    _, proposal_id = _held(cli_store)
    assert any_cli("review", "reject", proposal_id).returncode == 0
    for verb in ("approve", "reject"):
        done = any_cli("review", verb, proposal_id)
        assert done.returncode == 1
        assert f"proposal {proposal_id} was already decided: rejected by cli" in done.stderr


def test_two_processes_approving_at_once_one_wins(cli_store: CliStore) -> None:
    fact_id, proposal_id = _held(cli_store)
    env = clean_env({**cli_store.env})
    command = [sys.executable, "-m", "graymatter_tui", "review", "approve", proposal_id]
    runs = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(2)
    ]
    results = [(p.wait(timeout=120), p.stderr.read().decode() if p.stderr else "") for p in runs]
    for p in runs:
        for stream in (p.stdout, p.stderr):
            if stream:
                stream.close()
    codes = sorted(code for code, _ in results)
    assert codes == [0, 1], results
    loser = next(err for code, err in results if code == 1)
    assert "already decided: approved" in loser
    with cli_store.open() as store:
        assert [f.text for f in store.list_facts(AGENT)] == [NEW]
        assert store.require(fact_id).is_tombstone
        assert len(store.records()) == 1  # one decision, one journal record
        assert store.pending_count() == 0


def test_review_records_survive_export_and_import(
    any_cli: Run, cli_store: CliStore, tmp_path: Path
) -> None:
    fact_id, proposal_id = _held(cli_store)
    record_id = json.loads(any_cli("review", "approve", proposal_id, "--json").stdout)["record"][
        "cycle_id"
    ]
    dump = tmp_path / "dump.jsonl"
    assert any_cli("export", "--out", str(dump)).returncode == 0
    copy = {"GRAYMATTER_DIR": str(tmp_path / "copy"), "GRAYMATTER_STORE": ""}
    imported = any_cli("import", str(dump), "--json", env=copy)
    assert imported.returncode == 0, imported.stderr
    assert json.loads(imported.stdout)["records_added"] == 1
    assert json.loads(any_cli("doctor", "--json", env=copy).stdout)["ok"]
    journal = json.loads(any_cli("journal", "--json", env=copy).stdout)
    assert [(r["kind"], r["proposal_id"]) for r in journal] == [("review", proposal_id)]
    assert any_cli("revert", record_id, env=copy).returncode == 0
    assert (
        json.loads(any_cli("show", fact_id, "--json", env=copy).stdout)["fact"]["superseded_by"]
        == ""
    )
    assert json.loads(any_cli("doctor", "--json", env=copy).stdout)["ok"]


def test_an_imported_review_record_with_a_bad_action_is_refused(
    run_cli: Run, cli_dir: Path, tmp_path: Path
) -> None:
    _, proposal_id = _held(CliStore.lmdb(cli_dir))
    assert run_cli("review", "approve", proposal_id).returncode == 0
    dump = tmp_path / "dump.jsonl"
    assert run_cli("export", "--out", str(dump)).returncode == 0
    tampered = tmp_path / "tampered.jsonl"
    tampered.write_text(dump.read_text().replace('"action":"update"', '"action":"explode"'))
    done = run_cli("import", str(tampered), env={"GRAYMATTER_DIR": str(tmp_path / "copy")})
    assert done.returncode == 1
    assert "review record has no valid 'action' and 'proposal_id'" in done.stderr


def test_remember_holds_a_possible_update_that_review_shows_and_approves(
    any_cli: Run,
) -> None:
    first = any_cli("remember", AGENT, OLD, "--json")
    old = json.loads(first.stdout)
    assert first.stderr == ""  # nothing to review yet
    done = any_cli("remember", AGENT, NEW)
    assert done.returncode == 0, done.stderr
    new_id = done.stdout.strip()  # stdout is still the id alone
    [item] = json.loads(any_cli("review", "list", "--json").stdout)
    assert (item["action"], item["held_id"], item["fact_id"]) == (
        "possible_update",
        old["id"],
        new_id,
    )
    assert done.stderr == (
        f"graymatter-tui: note: possible update of {old['id']} held for review as "
        f"{item['id']} (details differ: new 5433; held 5432)\n"
    )
    listed = any_cli("review", "list").stdout
    assert "possible_update" in listed and f"{OLD} → {NEW}" in listed
    shown = any_cli("review", "show", item["id"]).stdout
    assert "possible update: details differ: new 5433; held 5432" in shown
    assert f"found when cli wrote {new_id}" in shown
    assert f"− {old['id']} {OLD}" in shown and f"superseded by {new_id}, the newer fact" in shown
    assert f"  {new_id} {NEW}" in shown
    assert "the held fact would be superseded by the newer one · pending" in shown
    approved = any_cli("review", "approve", item["id"], "--json")
    assert approved.returncode == 0, approved.stderr
    record = json.loads(approved.stdout)["record"]
    assert record["action"] == "possible_update" and record["consumed"] == [old["id"]]
    receipt = json.loads(any_cli("show", old["id"], "--json").stdout)
    assert receipt["fact"]["superseded_by"] == new_id
    assert receipt["replaced_by"]["text"] == NEW
    assert any_cli("review", "list").stdout.strip() == "nothing held for review"
    reverted = any_cli("revert", record["cycle_id"])
    assert reverted.returncode == 0, reverted.stderr
    live = json.loads(any_cli("list", AGENT, "--json").stdout)
    assert sorted(f["text"] for f in live) == sorted([OLD, NEW])


def test_a_stale_pair_approval_exits_3_and_a_rejected_pair_is_not_asked_again(
    any_cli: Run,
) -> None:
    old_id = any_cli("remember", AGENT, OLD).stdout.strip()
    any_cli("remember", AGENT, NEW)
    [item] = json.loads(any_cli("review", "list", "--json").stdout)
    assert any_cli("retire", old_id).returncode == 0
    stale = any_cli("review", "approve", item["id"])
    assert stale.returncode == 3
    assert f"stale: fact {old_id} was forgotten meanwhile" in stale.stdout
    newer = any_cli("remember", AGENT, "Staging database listens on port 5434.").stdout.strip()
    [again] = json.loads(any_cli("review", "list", "--json").stdout)
    assert again["fact_id"] == newer
    rejected = any_cli("review", "reject", again["id"], "--reason", "both ports are real")
    assert rejected.returncode == 0, rejected.stderr
    copy = any_cli("remember", AGENT, "Staging database listens on port 5434.")
    assert copy.returncode == 0, copy.stderr
    [pending] = json.loads(any_cli("review", "list", "--json").stdout)
    # A duplicate of the copy held; the rejected pair is not asked again.
    assert (pending["action"], pending["held_id"]) == ("duplicate", newer)
    assert pending["fact_id"] == copy.stdout.strip()
