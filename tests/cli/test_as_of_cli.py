"""`list --as-of` and `recall --as-of`, run as the real CLI on both backends: each past
moment of a store taken through a revision, a retirement, a consolidation and its revert
lists exactly the facts a copy of the store saved at that moment lists as live (LMDB: the
directory copied; PostgreSQL: `list --json` run then), each with what happened to it since;
recall ranks over the facts live then. Bad moments are one clear line: a value that is no
moment, or one in the future, is a usage error (exit 2); a moment the store cannot answer
(before it existed, a record of another agent, an unknown record) is an error (exit 1)."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from graymatter_tui.core import clock
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage.values import ApplyRequest
from tests.cli.test_cli_bad_input import one_line_error
from tests.conftest import invoke_graymatter
from tests.support.backends import CliStore
from tests.support.clock import ManualClock

Run = Callable[..., subprocess.CompletedProcess[str]]
START = datetime(2026, 2, 1, 10, tzinfo=UTC)


@dataclass
class Story:
    moments: dict[str, str] = field(default_factory=dict)  # label -> RFC 3339 time
    live: dict[str, set[str]] = field(default_factory=dict)  # label -> live ids then
    ids: dict[str, str] = field(default_factory=dict)
    cycle: str = ""
    revert: str = ""


def _at(minutes: int) -> str:
    return clock.format_time(START.replace(minute=minutes))


def _ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.stdout, done.stderr)
    return done.stdout


def _live_ids(run: Run, env: dict[str, str] | None = None) -> set[str]:
    return {f["id"] for f in json.loads(_ok(run("list", "--json", env=env)))}


def _save(story: Story, label: str, at: str, run: Run, cli_store: CliStore, tmp: Path) -> None:
    """The store as it stands at `at`: a copy of its directory listed (LMDB), or its live
    facts listed now (PostgreSQL)."""
    live = _live_ids(run, {"GRAYMATTER_NOW": at})
    if cli_store.backend == "lmdb":
        copy = tmp / f"copy-{len(story.live)}"
        shutil.copytree(cli_store.location, copy)
        env = {"GRAYMATTER_DIR": str(copy), "GRAYMATTER_NOW": at}
        copied = {f["id"] for f in json.loads(_ok(invoke_graymatter("list", "--json", env=env)))}
        assert copied == live
    story.moments[label] = at
    story.live[label] = live


@pytest.fixture
def story(any_cli: Run, cli_store: CliStore, tmp_path: Path) -> Story:
    s = Story()

    def at(minutes: int) -> dict[str, str]:
        return {"GRAYMATTER_NOW": _at(minutes)}

    texts = {
        "port": "The staging database listens on port 5432.",
        "vpn": "Staging's database is reached through the VPN.",
        "backups": "Backups run nightly at 02:00 UTC.",
        "rota": "The on-call rota is in the wiki.",
    }
    for key, text in texts.items():
        s.ids[key] = _ok(any_cli("remember", "ops", text, env=at(1))).strip()
    s.ids["refunds"] = _ok(any_cli("remember", "support", "Refunds need a lead.", env=at(1)))
    s.ids["refunds"] = s.ids["refunds"].strip()
    _save(s, "added", _at(1), any_cli, cli_store, tmp_path)
    revised = json.loads(
        _ok(any_cli("revise", s.ids["backups"], "Backups run at 03:00.", "--json", env=at(2)))
    )
    s.ids["backups v2"] = revised["id"]
    _save(s, "revised", _at(2), any_cli, cli_store, tmp_path)
    _ok(any_cli("retire", s.ids["rota"], env=at(3)))
    _save(s, "retired", _at(3), any_cli, cli_store, tmp_path)
    tick = ManualClock(START.replace(minute=4))
    with cli_store.open(clock_fn=tick) as store:  # a consolidation of the port facts
        s.cycle = store.unused_id(store.now())
        port, vpn = s.ids["port"], s.ids["vpn"]
        outcome = store.apply_consolidation(
            ApplyRequest(
                cycle_id=s.cycle,
                agent_id="ops",
                summary="Staging's database: port 5432, through the VPN.",
                consume=[port, vpn],
                snapshot={port: texts["port"], vpn: texts["vpn"]},
            ),
            CycleRecord(cycle_id=s.cycle, agent_id="ops", started_at=_at(4), finished_at=_at(4)),
        )
        assert outcome.applied and outcome.summary is not None
        s.ids["summary"] = outcome.summary.id
    _save(s, "consolidated", _at(4), any_cli, cli_store, tmp_path)
    reverted = json.loads(_ok(any_cli("revert", s.cycle, "--json", env=at(5))))
    s.revert = reverted["cycle_id"]
    _save(s, "reverted", _at(5), any_cli, cli_store, tmp_path)
    return s


def _listed(run: Run, *args: str) -> list[dict[str, object]]:
    return json.loads(_ok(run("list", *args, "--json", env={"GRAYMATTER_NOW": _at(30)})))


def test_each_moment_lists_what_the_store_saved_then_listed(any_cli: Run, story: Story) -> None:
    assert story.live["reverted"] == story.live["retired"]  # the revert undid the cycle
    for label, at in story.moments.items():
        listed = _listed(any_cli, "--as-of", at)
        assert {f["id"] for f in listed} == story.live[label], label
        assert all(f["then"] == "live" for f in listed)
        ids = [f["id"] for f in listed]
        assert ids == sorted(ids, reverse=True), label  # newest first, as `list`
    just_before = _listed(any_cli, "ops", "--as-of", story.cycle)
    assert {f["id"] for f in just_before} == {
        i for i in story.live["retired"] if i != story.ids["refunds"]
    }


def test_json_says_what_happened_to_each_fact_since(any_cli: Run, story: Story) -> None:
    listed = {f["id"]: f for f in _listed(any_cli, "ops", "--as-of", story.moments["added"])}
    port = listed[story.ids["port"]]
    assert port["now"] == "live"
    later = port["later"]
    assert isinstance(later, list)
    assert [(e["event"], e["record"]) for e in later] == [
        ("consumed", story.cycle),
        ("restored", story.revert),
    ]
    assert later[0]["by"] == story.ids["summary"]
    backups = listed[story.ids["backups"]]
    assert backups["now"] == "tombstone"
    assert [(e["event"], e["by"]) for e in backups["later"]] == [  # type: ignore[union-attr]
        ("revised", story.ids["backups v2"])
    ]
    rota = listed[story.ids["rota"]]
    assert [e["event"] for e in rota["later"]] == ["retired"]  # type: ignore[union-attr]
    assert not any(f["approximate"] for f in listed.values())
    summary = {
        f["id"]: f for f in _listed(any_cli, "ops", "--as-of", story.moments["consolidated"])
    }[story.ids["summary"]]
    assert [(e["event"], e["record"]) for e in summary["later"]] == [  # type: ignore[union-attr]
        ("retired", story.revert)
    ]


def test_text_output_heads_the_list_with_the_moment_and_marks_each_change(
    any_cli: Run, story: Story
) -> None:
    out = _ok(any_cli("list", "ops", "--as-of", story.cycle, env={"GRAYMATTER_NOW": _at(30)}))
    lines = out.splitlines()
    assert lines[0].startswith(f"as of just before record {story.cycle}")
    assert "3 live facts of ops" in lines[0]
    assert f"consumed by cycle {story.cycle} into summary {story.ids['summary']}" in out
    assert f"live again: revert {story.revert}" in out
    assert "since then: 2 consumed, 2 made live again by a revert" in lines[0]
    assert "note:" not in out  # every time here was recorded, none estimated


def test_recall_ranks_over_the_facts_live_then(any_cli: Run, story: Story) -> None:
    env = {"GRAYMATTER_NOW": _at(30)}
    now = json.loads(_ok(any_cli("recall", "ops", "backups nightly", "--json", env=env)))
    assert story.ids["backups"] not in {h["id"] for h in now}  # revised since
    v2 = json.loads(_ok(any_cli("show", story.ids["backups v2"], "--json", env=env)))["fact"]
    assert v2["access_count"] == 1  # a plain recall records the access
    then = json.loads(
        _ok(
            any_cli(
                "recall",
                "ops",
                "backups nightly",
                "--as-of",
                story.moments["added"],
                "--json",
                env=env,
            )
        )
    )
    assert then[0]["id"] == story.ids["backups"]
    assert then[0]["then"] == "live" and then[0]["now"] == "tombstone"
    summary = json.loads(
        _ok(
            any_cli(
                "recall",
                "ops",
                "staging database",
                "--as-of",
                story.moments["consolidated"],
                "--json",
                env=env,
            )
        )
    )
    ids = {h["id"] for h in summary}
    assert story.ids["summary"] in ids  # live then, retired by the revert since
    assert not ids & {story.ids["port"], story.ids["vpn"]}  # consumed then
    # an as-of recall records no access, even of a fact live then and now
    port = story.ids["port"]
    before = json.loads(_ok(any_cli("show", port, "--json", env=env)))["fact"]
    args = ("recall", "ops", "staging port", "--as-of", story.moments["added"], "--json")
    found = json.loads(_ok(any_cli(*args, env=env)))
    assert port in {h["id"] for h in found}
    after = json.loads(_ok(any_cli("show", port, "--json", env=env)))["fact"]
    assert after["access_count"] == before["access_count"]
    assert after["accessed_at"] == before["accessed_at"]


BAD_VALUES = [
    ("not a moment", "yesterday-ish", "neither a time"),
    ("no time zone", "2026-02-01T10:00:00", "no time zone"),
    ("not a date", "2026-02-31", "not a date"),
    ("in the future", "2026-03-02T00:00:00Z", "is in the future"),
]


@pytest.mark.parametrize(("value", "said"), [pytest.param(v, s, id=n) for n, v, s in BAD_VALUES])
@pytest.mark.parametrize("command", [("list",), ("recall", "ops", "port")], ids=["list", "recall"])
def test_a_value_that_names_no_moment_is_a_usage_error(
    run_cli: Run, cli_dir: Path, command: tuple[str, ...], value: str, said: str
) -> None:
    done = run_cli(*command, "--as-of", value)  # GRAYMATTER_NOW is 2026-03-01T12:00:00Z
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[-1].startswith("Error: Invalid value for '--as-of'") and said in lines[-1]
    assert not cli_dir.exists()  # refused before any store was opened


def test_a_moment_the_store_cannot_answer_is_one_line_exit_1(any_cli: Run, story: Story) -> None:
    env = {"GRAYMATTER_NOW": _at(30)}
    before = one_line_error(any_cli("list", "--as-of", "2025-01-01", env=env))
    assert "the store did not exist yet at 2025-01-01 00:00:00 UTC" in before
    other = one_line_error(any_cli("list", "support", "--as-of", story.cycle, env=env))
    assert f"record {story.cycle} is of agent 'ops', not 'support'" in other
    other = one_line_error(any_cli("recall", "support", "refunds", "--as-of", story.cycle, env=env))
    assert "is of agent 'ops'" in other
    unknown = one_line_error(any_cli("list", "--as-of", "01JC0000000000000000000001", env=env))
    assert "no journal record with id 01JC0000000000000000000001" in unknown


def test_no_store_at_all_is_said_as_such(run_cli: Run, cli_dir: Path) -> None:
    done = run_cli("list", "--as-of", "2026-02-01")
    line = done.stderr.splitlines()[-1]
    assert done.returncode == 1 and line.startswith("graymatter-tui: error:")
    assert f"there is no store at {cli_dir} yet" in line
    assert not cli_dir.exists()


def test_a_fact_live_then_is_not_marked_as_the_tombstone_it_is_now(
    any_cli: Run, story: Story
) -> None:
    env = {"GRAYMATTER_NOW": _at(30)}
    backups = story.ids["backups"]
    then = _ok(any_cli("list", "ops", "--as-of", story.moments["added"], env=env)).splitlines()
    (line,) = [n for n, text in enumerate(then) if text.startswith(backups)]
    assert then[line].startswith(f"{backups}   ")  # no † (nor ★, ↺) in the mark column
    assert then[line + 1].strip().endswith(f"revised into {story.ids['backups v2']}")
    now = _ok(any_cli("list", "ops", "--state", "tombstones", env=env))
    assert f"{backups} † " in now  # as plain `list` marks it today
    gone = _ok(
        any_cli(
            "list", "ops", "--as-of", story.moments["retired"], "--state", "tombstones", env=env
        )
    )
    assert f"{story.ids['rota']} † " in gone and f"{backups} † " in gone


def test_a_store_older_than_its_endings_marks_each_estimate(tmp_path: Path) -> None:
    """The 0.3.0 release store (no activity feed), read as it is: its endings are derived
    now, a cycle's consumption dated at the cycle's end and marked ~, said once on stderr."""
    store = tmp_path / "old"
    shutil.copytree(Path(__file__).resolve().parents[1] / "fixtures/store-0.3.0/store", store)
    env = {"GRAYMATTER_DIR": str(store), "GRAYMATTER_NOW": "2026-12-21T00:00:00Z"}
    done = invoke_graymatter("list", "ops-agent", "--as-of", "2026-12-19", env=env)
    assert done.returncode == 0, done.stderr
    marked = [line for line in done.stdout.splitlines() if "consumed by cycle" in line]
    assert len(marked) == 2 and all(line.strip().startswith("↳ ~2026-12-20") for line in marked)
    notes = [line for line in done.stderr.splitlines() if "are estimates" in line]
    assert len(notes) == 1 and notes[0].startswith("graymatter-tui: note: times marked ~")
    assert "estimates" not in done.stdout
    as_json = invoke_graymatter("list", "ops-agent", "--as-of", "2026-12-19", "--json", env=env)
    consumed = [f for f in json.loads(as_json.stdout) if f["later"]]
    assert len(consumed) == 2 and all(f["approximate"] for f in consumed)
    assert all(f["later"][0]["approximate"] for f in consumed)
