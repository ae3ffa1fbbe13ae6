"""Import refuses receipt structure that cannot be true, names the line (or item) of the
offending fact, and imports nothing; `doctor` finds the same structure in a store that
already holds it (written before import checked). Ids the store holds with other content
are conflicts (ADR 0013): refused by default, or the store's rows kept on request."""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import CycleRecord, Fact, cycle_to_dict

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]
HEADER = json.dumps({"type": "header", "format": "graymatter-tui", "version": 1})
STAMP = "2026-02-01T10:00:00.000000Z"
IDS = [f"01KG00000000000000000000{i:02d}" for i in range(1, 30)]
A, B, C, D, E = IDS[:5]
CYCLE = "01KG0000000000000000000C01"


def fact(fact_id: str, text: str = "", agent: str = "x", **extra: Any) -> dict[str, Any]:
    return {
        "id": fact_id,
        "agent_id": agent,
        "text": text or f"fact {fact_id[-2:]}",
        "created_at": STAMP,
        "accessed_at": STAMP,
        **extra,
    }


def jsonl(*facts: dict[str, Any], records: tuple[dict[str, Any], ...] = ()) -> str:
    lines = [HEADER, *(json.dumps({"type": "fact", "fact": f}) for f in facts)]
    lines += [json.dumps({"type": "cycle", "record": r}) for r in records]
    return "\n".join(lines) + "\n"


def refused(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graymatter-tui: error: nothing imported")
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256((path / "data.mdb").read_bytes()).hexdigest()


def doctor_failures(run_cli: RunCli) -> dict[str, str]:
    done = run_cli("doctor", "--json")
    report = json.loads(done.stdout)
    return {c["name"]: c["detail"] for c in report["checks"] if c["status"] == "fail"}


@pytest.fixture
def store_with_a_fact(cli_dir: Path) -> Path:
    """The target store already holds one fact of agent y (id E) and one of x (id D)."""
    with LmdbStore.open(cli_dir) as store:
        store.write(
            lambda tx: [
                tx.write_fact(Fact(**fact(E, "store fact of y", agent="y")), None),
                tx.write_fact(Fact(**fact(D, "store fact of x", superseded_by="")), None),
            ]
        )
    return cli_dir


# ---- broken receipt structure is refused, by line or item --------------------------------

CASES = {
    "two facts superseding each other": (
        [fact(A, superseded_by=B), fact(B, superseded_by=A)],
        ["line 2", "line 3", "loop", f"{A} → {B} → {A}"],
    ),
    "a loop of three": (
        [fact(A, superseded_by=B), fact(B, superseded_by=C), fact(C, superseded_by=A)],
        ["3 broken receipts", "line 2", "line 3", "line 4", "loop"],
    ),
    "a receipt into another agent": (
        [fact(A, superseded_by=B), fact(B, agent="y")],
        ["line 2", A, "agent 'x'", B, "agent 'y'"],
    ),
    "a receipt pointing at nothing": (
        [fact(B), fact(A, superseded_by=C)],
        ["line 3", A, C, "neither in the file nor in the store"],
    ),
    "a receipt into a store fact of another agent": (
        [fact(A, superseded_by=E)],
        ["line 2", A, E, "agent 'y'"],
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_broken_receipts_are_refused_with_their_lines(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path, case: str
) -> None:
    facts, needles = CASES[case]
    path = tmp_path / "bad.jsonl"
    path.write_text(jsonl(*facts), "utf-8")
    before = digest(store_with_a_fact)
    line = refused(run_cli("import", str(path)))
    for needle in needles:
        assert needle in line, line
    assert digest(store_with_a_fact) == before


def test_broken_receipts_in_an_array_are_named_by_item(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "memories.json"
    items = [fact(C), fact(A, superseded_by=B), fact(B, superseded_by=A)]
    path.write_text(json.dumps(items), "utf-8")
    line = refused(run_cli("import", str(path)))
    assert "item 2" in line and "item 3" in line and "loop" in line


def test_a_loop_closed_through_the_store_is_refused(run_cli: RunCli, cli_dir: Path) -> None:
    """The store holds a tombstone pointing at an id it lacks (as an import without checks
    could leave); a file fact with that id pointing back closes a loop."""
    with LmdbStore.open(cli_dir) as store:
        store.write(lambda tx: tx.write_fact(Fact(**fact(B, superseded_by=A)), None))
    path = cli_dir.parent / "closing.jsonl"
    path.write_text(jsonl(fact(A, superseded_by=B)), "utf-8")
    line = refused(run_cli("import", str(path)))
    assert "line 2" in line and f"{A} → {B} → {A}" in line


def test_a_receipt_to_a_pruned_fact_is_accepted(run_cli: RunCli, tmp_path: Path) -> None:
    """Its target is gone, but its copy is in the journal (I-3 allows it)."""
    record = cycle_to_dict(
        CycleRecord(
            cycle_id=CYCLE, agent_id="x", outcome="skipped", pruned=[Fact(**fact(B, weight=0.001))]
        )
    )
    path = tmp_path / "pruned.jsonl"
    path.write_text(jsonl(fact(A, superseded_by=B), records=(record,)), "utf-8")
    result = json.loads(run_cli("import", str(path), "--json").stdout)
    assert result["facts_added"] == 1
    assert doctor_failures(run_cli) == {}


# ---- doctor finds the same structure in a store already holding it ------------------------


def test_doctor_reports_loops_and_receipts_into_other_agents(
    run_cli: RunCli, cli_dir: Path
) -> None:
    with LmdbStore.open(cli_dir) as store:
        store.write(
            lambda tx: [
                tx.write_fact(Fact(**f), None)
                for f in (
                    fact(A, superseded_by=B),
                    fact(B, superseded_by=C),
                    fact(C, superseded_by=A),
                    fact(D, superseded_by=E),
                    fact(E, agent="y"),
                )
            ]
        )
    failed = doctor_failures(run_cli)
    assert set(failed) == {"receipts"}, failed
    assert "loop" in failed["receipts"] and A in failed["receipts"]
    done = run_cli("doctor", "--json")
    report = json.loads(done.stdout)
    (receipts,) = [c for c in report["checks"] if c["name"] == "receipts"]
    assert receipts["status"] == "fail"


def test_doctor_reports_counters_that_disagree_with_the_journal(
    run_cli: RunCli, cli_dir: Path
) -> None:
    """What an import without counters left behind: records, but cycles = 0."""
    with LmdbStore.open(cli_dir) as store:
        record = CycleRecord(cycle_id=CYCLE, agent_id="x", outcome="skipped")
        store.write(lambda tx: tx.put_record(record))
    failed = doctor_failures(run_cli)
    assert "cycles counter 0 but 1 cycle record" in failed["I-5"]


# ---- conflicts (ADR 0013) ---------------------------------------------------------------


def test_an_id_the_store_holds_with_other_text_refuses_the_import(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path
) -> None:
    path = tmp_path / "clash.jsonl"
    path.write_text(jsonl(fact(A), fact(E, "another text", agent="y")), "utf-8")
    before = digest(store_with_a_fact)
    line = refused(run_cli("import", str(path)))
    for needle in ("line 3", E, "text", "--on-conflict keep-store"):
        assert needle in line, line
    assert digest(store_with_a_fact) == before


def test_keep_store_imports_the_rest_and_reports_each_conflict(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path
) -> None:
    path = tmp_path / "clash.jsonl"
    path.write_text(jsonl(fact(A), fact(E, "another text", agent="y")), "utf-8")
    result = json.loads(
        run_cli("import", str(path), "--on-conflict", "keep-store", "--json").stdout
    )
    assert (result["facts_added"], result["facts_skipped"]) == (1, 1)
    (conflict,) = result["conflicts"]
    assert conflict["id"] == E and conflict["line"] == 3 and "text" in conflict["reason"]
    with LmdbStore.open(store_with_a_fact) as store:
        assert store.require(E).text == "store fact of y"
        assert store.require(A).text == f"fact {A[-2:]}"
    human = run_cli("import", str(path), "--on-conflict", "keep-store")
    assert human.returncode == 0
    assert "kept the store's row (conflict): 1" in human.stdout and E in human.stdout


def test_newer_state_in_the_store_is_kept_and_reported(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path
) -> None:
    """Same fact, other weight and access count: not a conflict; the store's state stays."""
    path = tmp_path / "older.jsonl"
    older = fact(E, "store fact of y", agent="y", weight=0.5, access_count=7)
    path.write_text(jsonl(older), "utf-8")
    result = json.loads(run_cli("import", str(path), "--json").stdout)
    assert result["conflicts"] == []
    (kept,) = result["kept_store_state"]
    assert kept["id"] == E and kept["line"] == 2
    assert "weight" in kept["reason"] and "access_count" in kept["reason"]
    with LmdbStore.open(store_with_a_fact) as store:
        assert (store.require(E).weight, store.require(E).access_count) == (1.0, 0)


def test_a_different_receipt_is_a_conflict(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path
) -> None:
    path = tmp_path / "receipt.jsonl"
    path.write_text(jsonl(fact(A), fact(D, "store fact of x", superseded_by=A)), "utf-8")
    line = refused(run_cli("import", str(path)))
    assert "line 3" in line and D in line and "superseded_by" in line


def test_a_journal_record_with_other_content_is_a_conflict(
    run_cli: RunCli, cli_dir: Path, tmp_path: Path
) -> None:
    with LmdbStore.open(cli_dir) as store:
        store.save_record(CycleRecord(cycle_id=CYCLE, agent_id="x", outcome="skipped"))
    other = cycle_to_dict(CycleRecord(cycle_id=CYCLE, agent_id="x", outcome="discarded"))
    path = tmp_path / "journal.jsonl"
    path.write_text(jsonl(fact(A), records=(other,)), "utf-8")
    line = refused(run_cli("import", str(path)))
    assert "line 3" in line and CYCLE in line and "journal" in line
    result = json.loads(
        run_cli("import", str(path), "--on-conflict", "keep-store", "--json").stdout
    )
    assert result["records_added"] == 0 and result["conflicts"][0]["id"] == CYCLE
    assert doctor_failures(run_cli) == {}


def test_keep_store_refuses_rows_that_rely_on_a_kept_conflict(
    run_cli: RunCli, store_with_a_fact: Path, tmp_path: Path
) -> None:
    """A file fact superseded by the file's version of E cannot point at the store's E."""
    path = tmp_path / "relies.jsonl"
    lines = jsonl(fact(E, "another text", agent="y"), fact(A, agent="y", superseded_by=E))
    path.write_text(lines, "utf-8")
    before = digest(store_with_a_fact)
    line = refused(run_cli("import", str(path), "--on-conflict", "keep-store"))
    assert E in line and "line 3" in line
    assert digest(store_with_a_fact) == before


# ---- a failed import creates nothing -----------------------------------------------------


def _markdown_export(run_cli: RunCli, tmp_path: Path) -> bytes:
    """A real `export --format markdown` of a store with a fact in it."""
    source = {"GRAYMATTER_DIR": str(tmp_path / "source")}
    assert run_cli("remember", "ops", "Backups run at 02:00.", env=source).returncode == 0
    done = run_cli("export", "--format", "markdown", env=source)
    assert done.returncode == 0, done.stderr
    return done.stdout.encode()


FAILING_FILES: dict[str, tuple[Callable[[RunCli, Path], bytes], str]] = {
    "a markdown export": (_markdown_export, "markdown is an export-only format"),
    "a markdown export with a BOM and blank lines first": (
        lambda run, tmp: b"\xef\xbb\xbf\n\n" + _markdown_export(run, tmp),
        "markdown is an export-only format",
    ),
    "a malformed line": (lambda _r, _t: (jsonl(fact(A)) + "{not json\n").encode(), "line 3"),
    "an unknown format": (
        lambda _r, _t: b'{"type": "header", "format": "mem0"}\n',
        "header names an unknown format",
    ),
    "not UTF-8": (lambda _r, _t: b"\xff\xfe{}", "not UTF-8"),
    "an empty file": (lambda _r, _t: b"", "holds no facts"),
    # Read without fault; refused only by the store's checks, after it was opened.
    "a broken receipt": (
        lambda _r, _t: jsonl(fact(A, superseded_by=B)).encode(),
        "neither in the file nor in the store",
    ),
}


@pytest.mark.parametrize("suffix", [".jsonl", ".md"])
@pytest.mark.parametrize("case", sorted(FAILING_FILES))
def test_a_failed_import_creates_no_store(
    run_cli: RunCli, tmp_path: Path, case: str, suffix: str
) -> None:
    make, said = FAILING_FILES[case]
    path = tmp_path / f"incoming{suffix}"  # what the file is called says nothing
    path.write_bytes(make(run_cli, tmp_path))
    target = tmp_path / "new" / "data"
    line = refused(run_cli("import", str(path), env={"GRAYMATTER_DIR": str(target)}))
    assert said in line, line
    assert not (tmp_path / "new").exists()


def test_a_failed_import_into_an_existing_empty_directory_leaves_it_as_it_was(
    run_cli: RunCli, tmp_path: Path
) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("keep me")
    path = tmp_path / "bad.jsonl"
    path.write_text(jsonl(fact(A, superseded_by=B)), "utf-8")
    refused(run_cli("import", str(path), env={"GRAYMATTER_DIR": str(target)}))
    assert sorted(p.name for p in target.iterdir()) == ["notes.txt"]
    # and the same file, once fixed, imports there
    path.write_text(jsonl(fact(A, superseded_by=B), fact(B)), "utf-8")
    done = run_cli("import", str(path), env={"GRAYMATTER_DIR": str(target)})
    assert done.returncode == 0, done.stderr
    assert (target / "data.mdb").exists()
