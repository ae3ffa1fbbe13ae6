"""Seeded ids (GRAYMATTER_ID_SEED with a pinned clock) repeat from process to process, by
design: a demo comes out the same every time. Each process must still get ids that no fact
or cycle holds yet, or one write would overwrite another's row."""

from __future__ import annotations

import json
from collections.abc import Callable
from subprocess import CompletedProcess

RunCli = Callable[..., CompletedProcess[str]]
SEEDED = {"GRAYMATTER_ID_SEED": "7"}


def test_processes_with_one_seed_never_reuse_a_fact_id(run_cli: RunCli) -> None:
    made = []
    for agent, text in (("alice", "first"), ("bob", "second"), ("alice", "third")):
        done = run_cli("remember", agent, text, "--json", env=SEEDED)
        assert done.returncode == 0, done.stderr
        made.append(json.loads(done.stdout)["id"])
    assert len(set(made)) == 3
    listed = json.loads(run_cli("list", "--json").stdout)
    assert sorted(f["text"] for f in listed) == ["first", "second", "third"]
    doctor = run_cli("doctor", "--json")
    assert json.loads(doctor.stdout)["ok"] is True, doctor.stdout


def test_processes_with_one_seed_never_reuse_a_cycle_id(run_cli: RunCli) -> None:
    assert run_cli("remember", "ops", "a fact", env=SEEDED).returncode == 0
    cycles = []
    for _ in range(3):
        done = run_cli("consolidate", "ops", "--llm", "none", "--json", env=SEEDED)
        assert done.returncode == 0, done.stderr
        cycles.append(json.loads(done.stdout)["cycle_id"])
    assert len(set(cycles)) == 3
    journal = json.loads(run_cli("journal", "--json").stdout)
    assert sorted(r["cycle_id"] for r in journal) == sorted(cycles)
    status = json.loads(run_cli("status", "--json").stdout)
    assert status["cycles"] == 3
