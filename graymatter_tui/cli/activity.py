"""`activity`: the store's write feed, every process's, newest first; `--follow` prints
new writes as they come, until interrupted."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

import click
import msgspec

from graymatter_tui.backends.opening import open_location
from graymatter_tui.cli.common import common_options, open_reader, settings_for
from graymatter_tui.cli.output import emit_json, note, one_line, say
from graymatter_tui.cli.params import checked_by
from graymatter_tui.core import provenance
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.model import ActivityEntry
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.storage import MemoryStore
from graymatter_tui.views.activity_feed import ANY_HOOK, ANY_MCP, FeedFilter, read_page

FOLLOW_SECONDS = 0.5  # the TUI's poll interval
DEFAULT_LIMIT = 50


def _source(value: str) -> str:
    """A source a write can have, or `mcp` for every MCP client (`hook` for every
    client's hooks)."""
    if value in (ANY_MCP, ANY_HOOK) or provenance.is_valid(value):
        return value
    known = ", ".join(sorted(provenance.KNOWN))
    raise InvalidInput(
        f"unknown source {one_line(value[:60])!r}; give one of {known}, mcp:<client>, mcp, "
        "hook:<client> or hook"
    )


def entry_line(entry: ActivityEntry) -> str:
    """`2026-11-30 12:00:05 #42 mcp:claude ops add  The deploy runbook…` on one line."""
    what = entry.action if entry.count <= 1 else f"{entry.action} ×{entry.count}"
    ref = entry.fact_id or entry.cycle_id
    return (
        f"{entry.at[:19].replace('T', ' ')} #{entry.seq} {one_line(entry.source)} "
        f"{one_line(entry.agent_id)} {what}  {one_line(entry.text)}" + (f"  [{ref}]" if ref else "")
    )


def _print(entry: ActivityEntry, as_json: bool) -> None:
    if as_json:
        emit_json(msgspec.to_builtins(entry))
    else:
        say(entry_line(entry))


def _follow(
    store: MemoryStore,
    reopen: Callable[[], MemoryStore],
    wanted: FeedFilter,
    newest: int,
    as_json: bool,
) -> None:
    """Print each new matching write, oldest first, until interrupted (exit 0). A store
    that did not exist yet is opened once another process has created it."""
    try:
        while True:
            time.sleep(FOLLOW_SECONDS)
            if store.absent:
                store.close()
                store = reopen()
            if store.last_activity() <= newest:
                continue
            fresh = store.activity(after=newest)
            newest = fresh[0].seq
            for entry in reversed(fresh):
                if wanted.matches(entry):
                    _print(entry, as_json)
    except KeyboardInterrupt:
        return


@click.command()
@click.argument("agent", required=False)
@click.option(
    "--source",
    default=None,
    callback=checked_by(_source),
    help="Only writes of this source (cli, tui, demo, import, consolidation, api, "
    "mcp:<client>; 'mcp' for every MCP client).",
)
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=DEFAULT_LIMIT,
    show_default=True,
    help="At most N writes.",
)
@click.option(
    "--follow",
    is_flag=True,
    help="After the newest N (oldest first), print new writes as they come until "
    "interrupted; with --json, one entry per line.",
)
@common_options
def activity(
    agent: str | None,
    source: str | None,
    limit: int,
    follow: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Every write to the store, from every process, newest first (all agents unless
    AGENT is given)."""
    if agent is not None:
        validate_agent(agent)
    wanted = FeedFilter(source or "", agent or "")
    store = open_reader(data_dir, as_json=as_json)
    page = read_page(store, wanted, want=limit)
    if follow:
        # ctrl+c is the way to stop following, whenever it comes: while the first page
        # prints as much as while waiting.
        try:
            newest = page.newest
            for entry in reversed(page.entries):
                _print(entry, as_json)
            where = "no store there yet; waiting for one" if store.absent else "following"
            note(f"{where}: {store.location} (ctrl+c stops)")
            location = settings_for(data_dir).location
            _follow(
                store, partial(open_location, location, read_only=True), wanted, newest, as_json
            )
        except KeyboardInterrupt:
            pass
        return
    if as_json:
        emit_json([msgspec.to_builtins(e) for e in page.entries])
        return
    for entry in page.entries:
        say(entry_line(entry))
    if not page.entries:
        say(f"no writes match {wanted.describe()}" if wanted.active else "no writes yet")
