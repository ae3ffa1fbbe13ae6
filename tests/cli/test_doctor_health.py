"""`doctor --health`: the health rules per agent through the real CLI, on both backends:
the JSON shape, the human report with its thresholds and named facts, exit 0 whatever
the rules find, `--agent`, and the flags it refuses. `doctor` without `--health` is
unchanged."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from typing import Any

from graymatter_tui.views.health import RULES, THRESHOLDS

Cli = Callable[..., subprocess.CompletedProcess[str]]
FINDING_KEYS = ["rule", "status", "detail", "threshold", "facts", "more"]


def _json(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def test_an_empty_store_is_a_well_formed_answer(any_cli: Cli) -> None:
    report = _json(any_cli("doctor", "--health", "--json"))
    assert list(report) == ["data_dir", "ok", "verdict", "thresholds", "agents"]
    assert (report["ok"], report["verdict"], report["agents"]) == (True, "ok", [])
    assert report["thresholds"] == json.loads(json.dumps(THRESHOLDS))
    human = any_cli("doctor", "--health")
    assert human.returncode == 0
    assert "No agents in " in human.stdout and "nothing to check" in human.stdout


def test_one_agent_one_fact(any_cli: Cli) -> None:
    fact_id = any_cli("remember", "ops", "the only fact").stdout.strip()
    report = _json(any_cli("doctor", "--health", "--json"))
    (agent,) = report["agents"]
    assert list(agent) == ["agent_id", "live_facts", "tombstones", "verdict", "findings"]
    assert (agent["agent_id"], agent["live_facts"], agent["tombstones"]) == ("ops", 1, 0)
    assert [f["rule"] for f in agent["findings"]] == list(RULES)
    for finding in agent["findings"]:
        assert list(finding) == FINDING_KEYS
        assert (finding["status"], finding["facts"], finding["more"]) == ("ok", [], 0)
        assert finding["threshold"]
    assert agent["verdict"] == report["verdict"] == "ok"
    assert fact_id  # written


def test_findings_exit_0_and_name_their_facts(any_cli: Cli) -> None:
    first = any_cli("remember", "ops", "Deploy on Friday!").stdout.strip()
    second = any_cli("remember", "ops", "deploy on  friday").stdout.strip()
    any_cli("remember", "dev", "a note of another agent")
    done = any_cli("doctor", "--health", "--json")
    report = _json(done)  # exit 0 with a failing rule
    assert report["ok"] is True and report["verdict"] == "fail"
    by_agent = {a["agent_id"]: a for a in report["agents"]}
    assert list(by_agent) == ["dev", "ops"]  # by name
    duplicates = next(f for f in by_agent["ops"]["findings"] if f["rule"] == "duplicates")
    assert duplicates["status"] == "fail"  # 2 of 2 live facts
    assert {f["id"] for f in duplicates["facts"]} == {first, second}
    assert by_agent["dev"]["verdict"] == "ok"
    human = any_cli("doctor", "--health")
    assert human.returncode == 0
    assert "✗ duplicates" in human.stdout
    assert "[info if any; warn ≥ 10%, fail ≥ 25%" in human.stdout  # thresholds said
    assert f"{first}  Deploy on Friday!" in human.stdout
    # the second is also held for review as a duplicate of the first: a pending pair
    assert human.stdout.rstrip().endswith(
        "Verdict fail: 1 failure (ops: duplicates) and 1 warning (ops: contradictions-pending)."
    )


def test_one_agent_with_agent(any_cli: Cli) -> None:
    any_cli("remember", "ops", "a fact")
    any_cli("remember", "dev", "another")
    report = _json(any_cli("doctor", "--health", "--agent", "dev", "--json"))
    assert [a["agent_id"] for a in report["agents"]] == ["dev"]
    unknown = any_cli("doctor", "--health", "--agent", "nope")
    assert unknown.returncode == 1
    assert unknown.stderr.strip().splitlines() == [
        "graymatter-tui: error: no agent 'nope' in this store (its agents: dev, ops)"
    ]
    assert unknown.stdout == ""


def test_flags_that_do_not_go_with_health(any_cli: Cli) -> None:
    alone = any_cli("doctor", "--agent", "ops")
    assert alone.returncode == 2 and "--agent is for --health" in alone.stderr
    with_llm = any_cli("doctor", "--health", "--llm", "local")
    assert with_llm.returncode == 2 and "--health does not call it" in with_llm.stderr


def test_doctor_without_health_is_unchanged(any_cli: Cli) -> None:
    any_cli("remember", "ops", "a fact")
    done = any_cli("doctor", "--json")
    assert list(json.loads(done.stdout)) == ["data_dir", "ok", "checks"]
