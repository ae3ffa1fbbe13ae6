"""`probe add/list/remove` through the real CLI: JSON shapes, exit codes, bad input."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable

Run = Callable[..., subprocess.CompletedProcess[str]]


def test_add_list_remove(run_cli: Run) -> None:
    added = run_cli("probe", "add", "ops", "staging database restarts", "--k", "5", "--json")
    assert added.returncode == 0, added.stderr
    probe = json.loads(added.stdout)
    assert probe["agent_id"] == "ops" and probe["k"] == 5 and probe["created"] is True
    assert set(probe) >= {"id", "agent_id", "query", "k", "created_at"}
    again = json.loads(
        run_cli("probe", "add", "ops", "staging database restarts", "--k", "5", "--json").stdout
    )
    assert again["id"] == probe["id"] and again["created"] is False
    run_cli("probe", "add", "dev", "build cache")
    listed = json.loads(run_cli("probe", "list", "ops", "--json").stdout)
    assert [p["id"] for p in listed] == [probe["id"]]
    assert len(json.loads(run_cli("probe", "list", "--json").stdout)) == 2
    text = run_cli("probe", "list")
    assert "staging database restarts" in text.stdout and "top 5" in text.stdout
    removed = run_cli("probe", "remove", probe["id"], "--json")
    assert removed.returncode == 0 and json.loads(removed.stdout)["id"] == probe["id"]
    assert json.loads(run_cli("probe", "list", "ops", "--json").stdout) == []


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
