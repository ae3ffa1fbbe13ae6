"""`probe add/list/remove` through the real CLI: JSON shapes, exit codes, bad input.

Saving, listing, removing and a consolidation's probe check run on both backends
(`any_cli`); bad input, refused before the store is opened, and an old LMDB journal stay on LMDB.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.engine.helpers import AGENT, NOW, prompt_rows, seed_weighted
from tests.support.backends import CliStore
from tests.support.ollama_fake import RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_add_list_remove(any_cli: Run) -> None:
    added = any_cli("probe", "add", "ops", "staging database restarts", "--k", "5", "--json")
    assert added.returncode == 0, added.stderr
    probe = json.loads(added.stdout)
    assert probe["agent_id"] == "ops" and probe["k"] == 5 and probe["created"] is True
    assert set(probe) >= {"id", "agent_id", "query", "k", "created_at"}
    again = json.loads(
        any_cli("probe", "add", "ops", "staging database restarts", "--k", "5", "--json").stdout
    )
    assert again["id"] == probe["id"] and again["created"] is False
    any_cli("probe", "add", "dev", "build cache")
    listed = json.loads(any_cli("probe", "list", "ops", "--json").stdout)
    assert [p["id"] for p in listed] == [probe["id"]]
    assert len(json.loads(any_cli("probe", "list", "--json").stdout)) == 2
    text = any_cli("probe", "list")
    assert "staging database restarts" in text.stdout and "top 5" in text.stdout
    removed = any_cli("probe", "remove", probe["id"], "--json")
    assert removed.returncode == 0 and json.loads(removed.stdout)["id"] == probe["id"]
    assert json.loads(any_cli("probe", "list", "ops", "--json").stdout) == []


def test_adding_a_probe_again_with_another_k_says_it_updated_it(any_cli: Run) -> None:
    query = "staging database restarts"
    first = json.loads(any_cli("probe", "add", "ops", query, "--k", "5", "--json").stdout)
    assert (first["created"], first["updated"]) == (True, False)
    changed = any_cli("probe", "add", "ops", query, "--k", "9")
    assert changed.returncode == 0, changed.stderr
    assert changed.stdout.strip() == f"updated {first['id']}  ops  top 9  {query}"
    again = json.loads(any_cli("probe", "add", "ops", query, "--k", "3", "--json").stdout)
    assert again["id"] == first["id"] and again["k"] == 3
    assert (again["created"], again["updated"]) == (False, True)
    same = any_cli("probe", "add", "ops", query, "--k", "3")
    assert same.stdout.strip() == f"already a probe: {first['id']}  ops  top 3  {query}"
    unchanged = json.loads(any_cli("probe", "add", "ops", query, "--k", "3", "--json").stdout)
    assert (unchanged["created"], unchanged["updated"]) == (False, False)
    (listed,) = json.loads(any_cli("probe", "list", "ops", "--json").stdout)
    assert listed["k"] == 3


def test_bad_input_is_one_line_exit_1_and_nothing_is_saved(run_cli: Run) -> None:
    for args, message in (
        (("probe", "add", "ops", "x" * 4097), "limit is 4096 bytes"),
        (("probe", "add", "ops", "deploy\x1b]52;c;AAAA\x07"), "control character"),
        (("probe", "add", "ops", "   "), "query is empty"),
        (("probe", "remove", "01JC0000000000000000000001"), "no probe with id"),
        (("probe", "remove", "nonsense"), "not a probe id"),
    ):
        done = run_cli(*args)
        assert done.returncode == 1, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr
        assert "Traceback" not in done.stderr and "\x1b" not in done.stderr
    assert json.loads(run_cli("probe", "list", "--json").stdout) == []


def test_k_out_of_range_is_a_usage_error(run_cli: Run) -> None:
    done = run_cli("probe", "add", "ops", "deploy runbook", "--k", "0")
    assert done.returncode == 2


# ---- consolidate with a probe that loses a fact ------------------------------------------
def _drop_words(request: RecordedRequest) -> Reply:
    """Consume the first three prompt rows into a summary that drops their own words."""
    rows = prompt_rows(request.prompt)[:3]
    return Reply.proposal("plain notes about the garden", [fid for fid, _ in rows])


def test_consolidate_flags_a_probe_that_loses_a_fact_and_journals_it(
    any_cli: Run, cli_store: CliStore
) -> None:
    with cli_store.open(clock_fn=lambda: NOW) as store:
        weakest = seed_weighted(store)[0]
        word = weakest.text.split()[2]  # "plain note <word> about the garden"
        probe, _ = store.add_probe(AGENT, word)
        kept, _ = store.add_probe(AGENT, "garden", 3)
    with OllamaOverSocket() as server:
        server.set_responder(_drop_words)
        env = {"GRAYMATTER_OLLAMA_URL": server.url, "GRAYMATTER_OLLAMA_TIMEOUT": "5"}
        done = any_cli("consolidate", AGENT, "--llm", "ollama", "--json", env=env)
        assert server.errors == []
    assert done.returncode == 0, done.stderr  # flagged, still applied: exit codes unchanged
    assert done.stderr.count("\n") == 1
    assert (
        "warning: this cycle was applied although 1 probe of its agent loses 1 fact it used to find"
        in done.stderr
    )
    record = json.loads(done.stdout)
    assert record["outcome"] == "applied"
    by_id = {p["probe_id"]: p for p in record["probes"]}
    assert by_id[probe.id]["lost"] == [weakest.id] and by_id[probe.id]["after"] == []
    assert by_id[kept.id]["lost"] == []
    shown = json.loads(any_cli("journal", "show", record["cycle_id"], "--json").stdout)
    assert shown["probes"] == record["probes"]
    text = any_cli("journal", "show", record["cycle_id"]).stdout
    assert "probes, checked before apply:" in text
    assert f"LOSES 1    top 8   {word}" in text and f"lost: {weakest.id}" in text


def test_old_journal_records_without_probes_still_show(run_cli: Run, tmp_path: Path) -> None:
    """Records of the 0.4.0 fixture predate the field."""
    fixture = Path(__file__).parents[1] / "fixtures" / "store-0.4.0" / "store"
    shutil.copytree(fixture, tmp_path / "old")
    done = run_cli("journal", "--json", env={"GRAYMATTER_DIR": str(tmp_path / "old")})
    assert done.returncode == 0, done.stderr
    assert all(r["probes"] == [] for r in json.loads(done.stdout))
