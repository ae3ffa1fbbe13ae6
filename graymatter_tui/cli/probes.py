"""`probe`: the recall queries every consolidation cycle of an agent is checked against
before apply (ADR 0039): add, list, remove; run scores them now, schedule scores them
every so often (`probe run --due` from cron, a running MCP server or TUI)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from graymatter_tui.cli.common import common_options, open_reader, open_store
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.core.model import CycleRecord, Probe, cycle_to_dict, probe_to_dict
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.recall.probes import NO_PROBES, run_due, run_probes, runnable
from graymatter_tui.storage import (
    MAX_PROBE_K,
    ProbeOutcome,
    ProbeSchedule,
    interval_text,
    parse_interval,
    validate_probe_id,
)

_SAID: dict[ProbeOutcome, str] = {
    "added": "added ",
    "updated": "updated ",
    "unchanged": "already a probe: ",
}


def probe_line(probe: Probe) -> str:
    return one_line(f"{probe.id}  {probe.agent_id}  top {probe.k}  {probe.query}")


@click.group(name="probe")
def probe() -> None:
    """Saved recall probes: queries each cycle is checked against before apply, also
    scored now (run) or every so often (schedule)."""


@probe.command(name="add")
@click.argument("agent")
@click.argument("query")
@click.option(
    "--k",
    "k",
    type=click.IntRange(min=1, max=MAX_PROBE_K),
    default=8,
    show_default=True,
    help="How many top results the probe watches.",
)
@common_options
def add(agent: str, query: str, k: int, data_dir: Path | None, as_json: bool) -> None:
    """Save QUERY as a probe of AGENT (the same query again is the same probe; with
    another --k, that probe is updated to it)."""
    saved, outcome = open_store(data_dir).save_probe(agent, query, k)
    if as_json:
        emit_json(
            {**probe_to_dict(saved), "created": outcome == "added", "updated": outcome == "updated"}
        )
        return
    say(_SAID[outcome] + probe_line(saved))


@probe.command(name="list")
@click.argument("agent", required=False)
@common_options
def list_probes(agent: str | None, data_dir: Path | None, as_json: bool) -> None:
    """Probes of AGENT (every agent's without one), oldest first."""
    probes = open_reader(data_dir, as_json=as_json).probes(agent)
    if as_json:
        emit_json([probe_to_dict(p) for p in probes])
        return
    if not probes:
        say("no probes")
    for saved in probes:
        say(probe_line(saved))


@probe.command(name="remove")
@click.argument("probe_id", metavar="ID")
@common_options
def remove(probe_id: str, data_dir: Path | None, as_json: bool) -> None:
    """Remove the probe with this ID."""
    probe_id = validate_probe_id(probe_id)  # before the open: a bad id creates nothing
    removed = open_store(data_dir).remove_probe(probe_id)
    if as_json:
        emit_json(probe_to_dict(removed))
        return
    say("removed " + probe_line(removed))


def _run_payload(record: CycleRecord) -> dict[str, Any]:
    """A probe run's journal record (as `journal show` gives it) with its hit rate."""
    hits, total = hits_of(record)
    return {
        **cycle_to_dict(record),
        "probe_hits": hits,
        "probe_hit_rate": round(hits / total, 4) if total else None,
    }


def hits_of(record: CycleRecord) -> tuple[int, int]:
    """(probes that find something, probes scored) of a probe run."""
    return sum(1 for p in record.probes if p.after), len(record.probes)


def run_lines(record: CycleRecord) -> list[str]:
    """A probe run's figures and each probe's answer, under a line naming the record."""
    hits, total = hits_of(record)
    rate = f" ({hits / total:.0%})" if total else ""
    lines = [
        f"  {hits} of {counted(total, 'probe')} found something{rate} · {record.live_facts} "
        f"live, {counted(record.tombstones, 'tombstone')}, {record.pinned} pinned · "
        f"asked by {record.trigger or 'unknown'}"
    ]
    for result in record.probes:
        said = f"{len(result.after)} found" if result.after else "finds nothing"
        mark = "✓" if result.after else "✗"
        lines.append(one_line(f"  {mark} top {result.k:<3} {result.query}  ({said})"))
    return lines


def print_run(record: CycleRecord) -> None:
    say(one_line(f"{record.agent_id}: probes scored, record {record.cycle_id}"))
    for line in run_lines(record):
        say(line)


@probe.command(name="run")
@click.argument("agent_arg", metavar="[AGENT]", required=False, callback=checked_by(validate_agent))
@click.option(
    "--agent",
    "agent_opt",
    metavar="A",
    default=None,
    callback=checked_by(validate_agent),
    help="Only this agent's probes (the same as AGENT).",
)
@click.option(
    "--due",
    is_flag=True,
    help="Run only if the schedule (`probe schedule`) says a run is due: for cron.",
)
@common_options
def run(
    agent_arg: str | None,
    agent_opt: str | None,
    due: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Score every probe now (AGENT's only, with one) and keep the results in the journal:
    one record per agent (kind probe_run), with its live facts and tombstones."""
    if agent_arg is not None and agent_opt is not None and agent_arg != agent_opt:
        raise usage_error("give the agent once: AGENT or --agent")
    agent = agent_arg if agent_arg is not None else agent_opt
    if due and agent is not None:
        raise usage_error("--due runs the schedule, which scores every agent's probes")
    if not due:
        # Checked on a read-only open first: a store with nothing to score is not created.
        with open_reader(data_dir, as_json=True) as reader:
            runnable(reader, agent)
    store = open_store(data_dir)
    if due:
        records = run_due(store)
        if records is None:
            if as_json:
                emit_json([])
                return
            say(_nothing_due(store.probe_schedule()))
            return
    else:
        records = run_probes(store, agent, "cli")
    if as_json:
        emit_json([_run_payload(r) for r in records])
        return
    if not records:
        say(NO_PROBES)
    for record in records:
        print_run(record)


def _nothing_due(schedule: ProbeSchedule) -> str:
    if schedule.every is None:
        return "no run due: there is no probe schedule (set one with `probe schedule --every 6h`)"
    return f"no run due: probes are scored every {interval_text(schedule.every)}, next at " + (
        schedule.next_due_at[:19].replace("T", " ") + " UTC"
    )


def schedule_payload(schedule: ProbeSchedule) -> dict[str, Any]:
    return {
        "every": interval_text(schedule.every) if schedule.every is not None else None,
        "every_seconds": schedule.every,
        "last_run_at": schedule.last_run_at or None,
        "next_due_at": schedule.next_due_at or None,
    }


def schedule_lines(schedule: ProbeSchedule) -> list[str]:
    last = schedule.last_run_at[:19].replace("T", " ") + " UTC" if schedule.last_run_at else "never"
    if schedule.every is None:
        return [
            "no probe schedule: probes are scored at each cycle and by `probe run` "
            f"(last run of every agent's: {last})",
            "set one with `graymatter-tui probe schedule --every 6h`",
        ]
    due = schedule.next_due_at[:19].replace("T", " ") + " UTC"
    return [
        f"probes are scored every {interval_text(schedule.every)} · last run {last} · "
        f"next due {due}",
        "due runs are made by `graymatter-tui probe run --due` (put it in cron), "
        "and by a running MCP server or TUI",
    ]


@probe.command(name="schedule")
@click.option(
    "--every",
    "every",
    metavar="INTERVAL",
    default=None,
    callback=checked_by(parse_interval),
    help="Score every agent's probes this often: 30m, 6h, 1d, 1h30m (1m to 366d).",
)
@click.option("--off", is_flag=True, help="No scheduled runs (cycles still score probes).")
@common_options
def schedule_cmd(every: int | None, off: bool, data_dir: Path | None, as_json: bool) -> None:
    """Show the probe schedule, or set it (--every) or turn it off (--off)."""
    if every is not None and off:
        raise usage_error("give --every or --off, not both")
    if every is None and not off:
        current = open_reader(data_dir, as_json=as_json).probe_schedule()
    else:
        current = open_store(data_dir).set_probe_schedule(None if off else every)
    if as_json:
        emit_json(schedule_payload(current))
        return
    for line in schedule_lines(current):
        say(line)
