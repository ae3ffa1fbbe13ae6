"""`probe`: the recall queries every consolidation cycle of an agent is checked against
before apply (ADR 0039): add, list, remove."""

from __future__ import annotations

from pathlib import Path

import click

from graymatter_tui.cli.common import common_options, open_reader, open_store
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.core.model import Probe, probe_to_dict
from graymatter_tui.storage import MAX_PROBE_K, ProbeOutcome, validate_probe_id

_SAID: dict[ProbeOutcome, str] = {
    "added": "added ",
    "updated": "updated ",
    "unchanged": "already a probe: ",
}


def probe_line(probe: Probe) -> str:
    return one_line(f"{probe.id}  {probe.agent_id}  top {probe.k}  {probe.query}")


@click.group(name="probe")
def probe() -> None:
    """Saved recall probes: queries each cycle is checked against before apply."""


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
