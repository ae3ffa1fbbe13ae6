"""Probe runs (`probe run`, `probe schedule`, `probe run --due`) and the history they
feed (`status --history`) through the real CLI.

A scripted sequence of probe runs, a cycle, a revert and a review decision, each at its
own pinned time, gives an exact series, on both backends (`any_cli`). Bad input, refused
in one line, and what a store of an earlier release shows, stay on LMDB.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from graymatter_tui.core.model import CycleRecord
from tests.conftest import clean_env
from tests.engine.helpers import AGENT, NOW, prompt_rows, seed_weighted
from tests.support.backends import CliStore
from tests.support.ollama_fake import RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket

Run = Callable[..., subprocess.CompletedProcess[str]]

# The sequence's moments, an hour apart from the seeded store's NOW (2026-03-01 12:00).
T = {n: f"2026-03-01T{12 + n:02d}:00:00Z" for n in range(1, 8)}
NOTHING = "xylophone quartz"  # no seeded fact holds either word


def _consume_three(request: RecordedRequest) -> Reply:
    """The first three prompt rows (the weakest facts) into a summary without their own
    words: a probe of the weakest fact's word loses it."""
    rows = prompt_rows(request.prompt)[:3]
    return Reply.proposal("plain notes about the garden", [fid for fid, _ in rows])


def _at(moment: str) -> dict[str, str]:
    return {"GRAYMATTER_NOW": moment}


def _ok(done: subprocess.CompletedProcess[str]) -> subprocess.CompletedProcess[str]:
    assert done.returncode == 0, done.stderr
    return done


def test_a_scripted_sequence_gives_the_exact_series(any_cli: Run, cli_store: CliStore) -> None:
    with cli_store.open(clock_fn=lambda: NOW) as store:
        weakest = seed_weighted(store)[0]  # 30 facts
        word = weakest.text.split()[2]
        store.add_probe(AGENT, word)
        store.add_probe(AGENT, "garden", 3)
        store.add_probe(AGENT, NOTHING)
        held = store.hold_change(AGENT, "add", "", "The garden gate is green.")

    runs = json.loads(_ok(any_cli("probe", "run", "--json", env=_at(T[1]))).stdout)
    assert [(r["kind"], r["outcome"], r["trigger"]) for r in runs] == [
        ("probe_run", "scored", "cli")
    ]
    assert (runs[0]["probe_hits"], runs[0]["probe_hit_rate"]) == (2, 0.6667)
    with OllamaOverSocket() as server:
        server.set_responder(_consume_three)
        env = {
            **_at(T[2]),
            "GRAYMATTER_OLLAMA_URL": server.url,
            "GRAYMATTER_OLLAMA_TIMEOUT": "5",
        }
        cycle = json.loads(
            _ok(any_cli("consolidate", AGENT, "--llm", "ollama", "--json", env=env)).stdout
        )
        assert server.errors == []
    assert cycle["outcome"] == "applied" and len(cycle["consumed"]) == 3
    _ok(any_cli("probe", "run", AGENT, env=_at(T[3])))
    _ok(any_cli("revert", cycle["cycle_id"], env=_at(T[4])))
    _ok(any_cli("review", "reject", held.id, "--reason", "not now", env=_at(T[5])))
    _ok(any_cli("probe", "run", "--agent", AGENT, env=_at(T[6])))

    points = json.loads(_ok(any_cli("status", "--history", "--json", env=_at(T[7]))).stdout)
    keys = (
        "event", "outcome", "trigger", "probes", "probe_hits", "probe_hit_rate",
        "probes_lost", "live_facts", "tombstones", "consolidations", "facts_consumed",
        "reverts", "review_decisions",
    )  # fmt: skip
    assert [tuple(p[k] for k in keys) for p in points] == [
        ("probe_run", "scored", "cli", 3, 2, 0.6667, 0, 30, 0, 0, 0, 0, 0),
        ("consolidate", "applied", "", 3, 1, 0.3333, 1, None, None, 1, 3, 0, 0),
        ("probe_run", "scored", "cli", 3, 1, 0.3333, 0, 28, 3, 1, 3, 0, 0),
        ("revert", "applied", "", 0, 0, None, 0, None, None, 1, 3, 1, 0),
        ("review", "rejected", "", 0, 0, None, 0, None, None, 1, 3, 1, 1),
        # The revert retired the summary: 30 live again, the summary a tombstone.
        ("probe_run", "scored", "cli", 3, 2, 0.6667, 0, 30, 1, 1, 3, 1, 1),
    ]
    assert [p["at"][:19] for p in points] == [T[n][:19] for n in (1, 2, 3, 4, 5, 6)]
    assert all(p["agent_id"] == AGENT for p in points)
    assert points[1]["record_id"] == cycle["cycle_id"]
    # One agent asked for: the same points.
    alone = json.loads(any_cli("status", "--history", "--agent", AGENT, "--json").stdout)
    assert alone == points

    table = _ok(any_cli("status", "--history", env=_at(T[7]))).stdout.splitlines()
    assert table[:8] == [
        f"agent {AGENT}",
        "time (UTC)       event             hits   live  tombs applied used revert review",
        "2026-03-01 13:00 probe run          2/3     30      0       0    0      0      0",
        "2026-03-01 14:00 cycle applied      1/3      –      –       1    3      0      0",
        "2026-03-01 15:00 probe run          1/3     28      3       1    3      0      0",
        "2026-03-01 16:00 revert               –      –      –       1    3      1      0",
        "2026-03-01 17:00 review rejected      –      –      –       1    3      1      1",
        "2026-03-01 18:00 probe run          2/3     30      1       1    3      1      1",
    ]
    assert all(len(line) <= 80 for line in table)


def test_probe_runs_show_in_the_journal_and_cannot_be_reverted(
    any_cli: Run, cli_store: CliStore
) -> None:
    with cli_store.open(clock_fn=lambda: NOW) as store:
        seed_weighted(store, n=6)
        store.add_probe(AGENT, "garden", 3)
        store.add_probe(AGENT, NOTHING)
    (run,) = json.loads(_ok(any_cli("probe", "run", "--json")).stdout)
    listed = json.loads(any_cli("journal", "--json").stdout)
    assert [r["cycle_id"] for r in listed] == [run["cycle_id"]]
    assert listed[0]["kind"] == "probe_run" and listed[0]["live_facts"] == 6
    line = any_cli("journal").stdout.strip()
    assert "probe_run" in line and "scored" in line and "probes 1/2 found something" in line
    shown = any_cli("journal", "show", run["cycle_id"]).stdout
    assert "1 of 2 probes found something (50%) · 6 live, 0 tombstones, 0 pinned" in shown
    assert "✓ top 3   garden  (3 found)" in shown
    assert f"✗ top 8   {NOTHING}  (finds nothing)" in shown
    refused = any_cli("revert", run["cycle_id"])
    assert refused.returncode == 1 and refused.stderr.count("\n") == 1
    assert "is a probe run: it changed no fact" in refused.stderr
    # A run moves no counter: status is as it was.
    status = json.loads(any_cli("status", "--json").stdout)
    assert (status["cycles"], status["consolidations"], status["reverts"]) == (0, 0, 0)
    doctor = any_cli("doctor", "--json")
    assert doctor.returncode == 0, doctor.stdout


def test_the_schedule_runs_when_due_and_once(any_cli: Run, cli_store: CliStore) -> None:
    with cli_store.open(clock_fn=lambda: NOW) as store:
        seed_weighted(store, n=4)
        store.add_probe(AGENT, "garden", 2)
    shown = json.loads(_ok(any_cli("probe", "schedule", "--json", env=_at(T[1]))).stdout)
    assert shown == {"every": None, "every_seconds": None, "last_run_at": None, "next_due_at": None}
    nothing = _ok(any_cli("probe", "run", "--due", env=_at(T[1])))
    assert nothing.stdout.startswith("no run due: there is no probe schedule")
    every = "--every", "1h30m"
    set_ = json.loads(_ok(any_cli("probe", "schedule", *every, "--json", env=_at(T[1]))).stdout)
    # Never run yet: due at once.
    assert set_ == {
        "every": "1h30m",
        "every_seconds": 5400,
        "last_run_at": None,
        "next_due_at": "2026-03-01T13:00:00.000000Z",
    }
    (due,) = json.loads(_ok(any_cli("probe", "run", "--due", "--json", env=_at(T[1]))).stdout)
    assert due["trigger"] == "schedule" and due["probe_hits"] == 1
    assert json.loads(any_cli("probe", "run", "--due", "--json", env=_at(T[1])).stdout) == []
    later = _ok(any_cli("probe", "run", "--due", env=_at(T[2])))
    assert later.stdout.strip() == (
        "no run due: probes are scored every 1h30m, next at 2026-03-01 14:30:00 UTC"
    )
    assert len(json.loads(any_cli("probe", "run", "--due", "--json", env=_at(T[3])).stdout)) == 1
    # A run by hand of every agent's probes counts as the schedule's last run.
    _ok(any_cli("probe", "run", env=_at(T[4])))
    shown = json.loads(any_cli("probe", "schedule", "--json", env=_at(T[4])).stdout)
    assert shown["last_run_at"] == "2026-03-01T16:00:00.000000Z"
    assert shown["next_due_at"] == "2026-03-01T17:30:00.000000Z"
    text = any_cli("probe", "schedule", env=_at(T[4])).stdout.splitlines()
    assert text[0] == (
        "probes are scored every 1h30m · last run 2026-03-01 16:00:00 UTC · "
        "next due 2026-03-01 17:30:00 UTC"
    )
    off = json.loads(_ok(any_cli("probe", "schedule", "--off", "--json")).stdout)
    assert off["every"] is None
    assert json.loads(any_cli("probe", "run", "--due", "--json", env=_at(T[7])).stdout) == []
    triggers = [p["trigger"] for p in json.loads(any_cli("status", "--history", "--json").stdout)]
    assert triggers == ["schedule", "schedule", "cli"]


def test_bad_input_is_one_line_and_creates_nothing(run_cli: Run, cli_dir: Path) -> None:
    for args, code, message in (
        (("probe", "run"), 1, "no probes to score: add one with `graymatter-tui probe add"),
        (("probe", "run", "--agent", "nobody"), 1, "no agent 'nobody' in this store"),
        (("probe", "run", "--json"), 1, "no probes to score"),
    ):
        done = run_cli(*args)
        assert done.returncode == code, (args, done.stderr)
        assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
        assert done.stdout == "" and "Traceback" not in done.stderr
    assert not cli_dir.exists()  # nothing to score created no store
    empty = _ok(run_cli("status", "--history"))
    assert empty.stdout.startswith("no history yet: it grows with each cycle and probe run")
    assert json.loads(_ok(run_cli("status", "--history", "--json")).stdout) == []
    assert not cli_dir.exists()
    for args, message in (
        (("probe", "schedule", "--every", "6x"), "not an interval: '6x'"),
        (("probe", "schedule", "--every", "6"), "not an interval: '6'"),
        (("probe", "schedule", "--every", "0m"), "between 1m and 366d"),
        (("probe", "schedule", "--every", "400d"), "between 1m and 366d"),
        (("probe", "schedule", "--every", "6h", "--off"), "give --every or --off, not both"),
        (("probe", "run", "a", "--agent", "b"), "give the agent once"),
        (("probe", "run", "--due", "--agent", "a"), "--due runs the schedule"),
        (("status", "--agent", "a"), "--agent goes with --history"),
        (("status", "--history", "--agent", "bad\x1bname"), "control character"),
    ):
        done = run_cli(*args)
        assert done.returncode == 2, (args, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr
    assert not cli_dir.exists()
    run_cli("remember", "ops", "The deploy runbook lives in the wiki.")
    unknown = run_cli("status", "--history", "--agent", "nobody")
    assert unknown.returncode == 1 and unknown.stderr.count("\n") == 1
    assert "no agent 'nobody' in this store" in unknown.stderr
    no_probes = run_cli("probe", "run", "ops")
    assert no_probes.returncode == 1
    assert "agent 'ops' has no probes: add one with `graymatter-tui probe add ops QUERY`" in (
        no_probes.stderr
    )
    quiet = _ok(run_cli("status", "--history", "--agent", "ops"))
    assert quiet.stdout.startswith("no history of ops yet")


def test_a_store_of_an_earlier_release_shows_its_cycles_as_history(
    run_cli: Run, tmp_path: Path
) -> None:
    """The 0.7.0 fixture's journal predates probe runs: its cycles are points, with no
    probe figures or counts, and a probe run can be added to it."""
    fixture = Path(__file__).parents[1] / "fixtures" / "store-0.7.0" / "store"
    shutil.copytree(fixture, tmp_path / "old")
    old = ("--dir", str(tmp_path / "old"))
    records = json.loads(_ok(run_cli("journal", *old, "--json")).stdout)
    points = json.loads(_ok(run_cli("status", *old, "--history", "--json")).stdout)
    finished = [r for r in records if r["outcome"] not in ("", "dry_run")]
    assert sorted(p["record_id"] for p in points) == sorted(r["cycle_id"] for r in finished)
    assert points and all(p["live_facts"] is None for p in points)
    for agent in {p["agent_id"] for p in points}:
        mine = [r for r in finished if r["agent_id"] == agent]
        last = [p for p in points if p["agent_id"] == agent][-1]
        assert last["consolidations"] == sum(
            1 for r in mine if r["kind"] == "consolidate" and r["outcome"] == "applied"
        )
        assert last["facts_consumed"] == sum(
            len(r["consumed"])
            for r in mine
            if r["kind"] == "consolidate" and r["outcome"] == "applied"
        )
        assert last["reverts"] == sum(1 for r in mine if r["kind"] == "revert")
    agent = points[0]["agent_id"]
    _ok(run_cli("probe", "add", agent, "deploy", *old))
    later = _at("2027-01-01T00:00:00Z")  # after the fixture's own records
    (run,) = json.loads(_ok(run_cli("probe", "run", agent, "--json", *old, env=later)).stdout)
    after = json.loads(run_cli("status", *old, "--history", "--agent", agent, "--json").stdout)
    assert after[-1]["record_id"] == run["cycle_id"] and after[-1]["live_facts"] is not None


# ---- across processes -------------------------------------------------------------------
def _scheduled_store(directory: Path) -> None:
    """A store with one agent's probe and a schedule whose first run is due."""
    with CliStore.lmdb(directory).open(clock_fn=lambda: NOW) as store:
        seed_weighted(store, n=4)
        store.add_probe(AGENT, "garden", 2)
        store.set_probe_schedule(3600)


def test_processes_asking_at_once_make_the_due_run_once(tmp_path: Path) -> None:
    """Real processes, started together: the store hands the due run to one of them."""
    directory = tmp_path / "store"
    _scheduled_store(directory)
    env = clean_env({"GRAYMATTER_DIR": str(directory), "GRAYMATTER_NOW": T[1]})
    command = [sys.executable, "-m", "graymatter_tui", "probe", "run", "--due", "--json"]
    processes = [
        subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(3)
    ]
    answers = [process.communicate(timeout=120) for process in processes]
    assert [p.returncode for p in processes] == [0, 0, 0], [err for _out, err in answers]
    made = [run for out, _err in answers for run in json.loads(out)]
    assert len(made) == 1 and made[0]["trigger"] == "schedule"
    with CliStore.lmdb(directory).open() as store:
        assert [r.cycle_id for r in store.records()] == [made[0]["cycle_id"]]


def test_a_running_mcp_server_makes_the_due_run(tmp_path: Path) -> None:
    """`graymatter-tui mcp` (a real process, on stdio) runs a due schedule by itself;
    stopped by closing its stdin, it leaves exactly that run."""
    directory = tmp_path / "store"
    _scheduled_store(directory)
    env = clean_env({"GRAYMATTER_DIR": str(directory), "GRAYMATTER_NOW": T[1]})
    server = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", "mcp", "--agent", AGENT],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 60
        records: list[CycleRecord] = []
        while time.monotonic() < deadline and not records:
            with CliStore.lmdb(directory).open() as store:
                records = store.records()
            time.sleep(0.2)
    finally:
        _out, err = server.communicate(input=b"", timeout=60)  # stdin closed: it stops
    assert server.returncode == 0, err
    assert [(r.kind, r.trigger, r.agent_id) for r in records] == [("probe_run", "schedule", AGENT)]
    with CliStore.lmdb(directory).open() as store:
        assert len(store.records()) == 1
        assert store.probe_schedule().last_run_at == records[0].started_at


def test_migrate_carries_probe_runs_and_the_schedule(run_cli: Run, tmp_path: Path) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    _scheduled_store(source)
    _ok(run_cli("probe", "run", "--dir", str(source), env=_at(T[1])))
    _ok(run_cli("migrate", "--from", str(source), "--to", str(target)))
    for args in (("status", "--history", "--json"), ("probe", "schedule", "--json")):
        before = json.loads(run_cli(*args, "--dir", str(source), env=_at(T[2])).stdout)
        after = json.loads(run_cli(*args, "--dir", str(target), env=_at(T[2])).stdout)
        assert before and after == before


def test_export_and_import_keep_probe_runs_and_move_no_counter(
    run_cli: Run, tmp_path: Path
) -> None:
    source, target = tmp_path / "source", tmp_path / "target"
    _scheduled_store(source)
    _ok(run_cli("probe", "run", "--dir", str(source), env=_at(T[1])))
    _ok(run_cli("probe", "run", "--dir", str(source), env=_at(T[2])))
    dump = tmp_path / "all.jsonl"
    _ok(run_cli("export", "--out", str(dump), "--dir", str(source)))
    _ok(run_cli("import", str(dump), "--dir", str(target)))
    history = [
        json.loads(run_cli("status", "--history", "--json", "--dir", str(d)).stdout)
        for d in (source, target)
    ]
    assert len(history[0]) == 2 and history[1] == history[0]
    status = json.loads(_ok(run_cli("status", "--json", "--dir", str(target))).stdout)
    assert (status["cycles"], status["consolidations"], status["reverts"]) == (0, 0, 0)
    assert _ok(run_cli("doctor", "--json", "--dir", str(target))).returncode == 0
