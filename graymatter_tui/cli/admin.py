"""Store-wide commands: status, export, import, demo."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graymatter_tui.backends.lmdb.files import DATA_FILE, LOCK_FILE
from graymatter_tui.cli.common import common_options, open_reader, settings_for
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.cli.progress import open_upgrading, stderr_progress
from graymatter_tui.core.errors import Conflict, GraymatterError, InvalidInput
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.exchange import transfer as exchange
from graymatter_tui.exchange.demo import create_demo
from graymatter_tui.storage import (
    ON_CONFLICT,
    ImportConflicts,
    ImportIssue,
    MemoryStore,
    OnConflict,
)
from graymatter_tui.views.history import LEGEND, agents_of, history_table
from graymatter_tui.views.history import history as history_points
from graymatter_tui.views.overview import size_text, status_payload

MAX_LISTED = 10


@click.command()
@click.option(
    "--history",
    is_flag=True,
    help="Quality and size over time, per agent: one point per journal record.",
)
@click.option(
    "--agent",
    metavar="A",
    default=None,
    callback=checked_by(validate_agent),
    help="With --history: only this agent.",
)
@common_options
def status(history: bool, agent: str | None, data_dir: Path | None, as_json: bool) -> None:
    """Totals, counters and per-agent figures; with --history, how they moved."""
    if history:
        _print_history(open_reader(data_dir, as_json=as_json), agent, as_json)
        return
    if agent is not None:
        raise usage_error("--agent goes with --history (status itself covers every agent)")
    payload = status_payload(open_reader(data_dir, as_json=as_json))
    embedder = _embedder_payload()
    if as_json:
        emit_json({**payload, **embedder})
        return
    say(f"store      {one_line(payload['data_dir'])}")
    say(
        f"facts      {payload['live_facts']} live · {counted(payload['tombstones'], 'tombstone')} "
        f"· {payload['pinned']} pinned"
    )
    say(
        f"cycles     {payload['cycles']} run · {payload['consolidations']} applied "
        f"({counted(payload['facts_consumed'], 'fact')} consumed) · {payload['reverts']} reverted"
    )
    say(f"size       {size_text(payload)}")
    say(f"recall     stemming {payload['stem_language']} · {counted(payload['probes'], 'probe')}")
    waiting = counted(payload["pending_reviews"], "agent change")
    say(f"review     {waiting} waiting for a decision")
    if payload["embed_model"] is None:
        say("embedding  none recorded")
    else:
        dim = payload["embed_dim"]
        dims = counted(dim, "dim") if dim else "dimension not known yet"
        say(
            f"embedding  {one_line(payload['embed_model'])} · {dims} · "
            f"{counted(payload['embed_backlog'], 'fact')} waiting"
        )
    say(f"embedder   {one_line(_embedder_line(embedder, payload['embed_model']))}")
    if payload["agents"]:
        say("")
        say(f"{'agent':<32} {'live':>7} {'tombs':>7} {'pinned':>7} {'avg w':>7}")
        for a in payload["agents"]:
            name = one_line(a["agent_id"])
            if len(name) > 32:
                name = name[:31] + "…"
            say(
                f"{name:<32} {a['live_facts']:>7} {a['tombstones']:>7} {a['pinned']:>7} "
                f"{a['avg_weight']:>7.3f}"
            )


def _print_history(store: MemoryStore, agent: str | None, as_json: bool) -> None:
    points = history_points(store, agent)
    if as_json:
        emit_json(points)
        return
    if not points:
        who = f" of {one_line(agent)}" if agent is not None else ""
        say(
            f"no history{who} yet: it grows with each cycle and probe run "
            "(`graymatter-tui probe run`, or `probe schedule --every 6h`)"
        )
        return
    for index, name in enumerate(agents_of(points)):
        if index:
            say("")
        say(f"agent {one_line(name)}")
        for line in history_table([p for p in points if p["agent_id"] == name]):
            say(line)
    say("")
    say(LEGEND)


def _embedder_payload() -> dict[str, str | None]:
    """The configured embedder and the model name its vectors get (added to `status`)."""
    from graymatter_tui.embedding.factory import from_settings
    from graymatter_tui.embedding.settings import EmbedSettings

    try:
        settings = EmbedSettings.from_env()
        embedder = from_settings(settings)
        model = None if embedder is None else embedder.model
    except GraymatterError as exc:
        return {"embedder": None, "embedder_model": None, "embedder_error": str(exc)}
    return {"embedder": settings.embedder.value, "embedder_model": model, "embedder_error": None}


def _embedder_line(payload: dict[str, str | None], stored: str | None) -> str:
    if payload["embedder_error"]:
        return f"not usable: {payload['embedder_error']}"
    if payload["embedder_model"] is None:
        return "none (GRAYMATTER_EMBED=none): recall ranks on keyword and recency"
    line = f"{payload['embedder']} · {payload['embedder_model']}"
    if stored != payload["embedder_model"]:
        line += (
            " · its vectors are not made yet: `graymatter-tui embed` makes them (so do the "
            "TUI and the MCP server while they run)"
        )
    return line


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(exchange.FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: facts and journal; json: upstream memories.json; markdown: for reading.",
)
@click.option(
    "--out",
    type=click.Path(path_type=Path, allow_dash=True),
    default=None,
    help="File to write (default, or '-': standard output). A FIFO or device is written "
    "through; a regular file is replaced atomically.",
)
@click.option(
    "--agent", default=None, callback=checked_by(validate_agent), help="Only this agent's facts."
)
@common_options
def export(
    fmt: str, out: Path | None, agent: str | None, data_dir: Path | None, as_json: bool
) -> None:
    """Export every fact (tombstones included)."""
    if out is not None and str(out) == "-":
        out = None
    terminal = out is None and sys.stdout.isatty()
    store = open_reader(data_dir, as_json=as_json)
    with stderr_progress(as_json) as progress:
        size = exchange.export_file(store, out, fmt, agent, terminal=terminal, progress=progress)
    if out is not None:
        if as_json:
            emit_json({"out": str(out), "format": fmt, "bytes": size})
        else:
            say(f"exported to {one_line(str(out))} ({fmt}, {counted(size, 'byte')})")


@click.command(name="import")
@click.argument("file", type=click.Path(path_type=Path, dir_okay=False, allow_dash=True))
@click.option(
    "--on-conflict",
    type=click.Choice(ON_CONFLICT),
    default="refuse",
    show_default=True,
    help="An id the store holds with other content: refuse the import, or keep the "
    "store's row and import the rest.",
)
@common_options
def import_(file: Path, on_conflict: OnConflict, data_dir: Path | None, as_json: bool) -> None:
    """Import our jsonl export or upstream's memories.json (all or nothing; IDs kept).
    A file that cannot be imported creates no store."""
    if str(file) == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {file}: {exc.strerror or exc}") from None
    settings = settings_for(data_dir)
    with stderr_progress(as_json) as progress:
        parsed = exchange.parse_import(data, progress)  # before the store is opened
        directory = settings.location.path
        new_store = directory is not None and not (directory / DATA_FILE).exists()
        created = None if directory is None else _missing_directory(directory)
        store = open_upgrading(settings)
        try:
            result = exchange.import_parsed(
                store, parsed, on_conflict=on_conflict, progress=progress
            )
        except ImportConflicts as exc:
            raise Conflict(
                f"nothing imported: {exc}; --on-conflict keep-store keeps the store's rows "
                "and imports the rest"
            ) from None
        except BaseException:
            if directory is not None and new_store:
                _remove_new_store(store, directory, created)
            raise
    if as_json:
        emit_json(
            {
                "facts_added": result.facts_added,
                "facts_skipped": result.facts_skipped,
                "records_added": result.records_added,
                "records_skipped": result.records_skipped,
                "conflicts": [_issue(i) for i in result.conflicts],
                "kept_store_state": [_issue(i) for i in result.kept_store_state],
                "probes_added": result.probes_added,
            }
        )
        return
    say(
        f"imported {counted(result.facts_added, 'fact')} ({result.facts_skipped} already "
        f"present) and {counted(result.records_added, 'journal record')} "
        f"({result.records_skipped} already present)"
        + (f"; {counted(result.probes_added, 'probe')}" if result.probes_added else "")
    )
    for label, issues in (
        ("kept the store's row (conflict)", result.conflicts),
        ("kept the store's state", result.kept_store_state),
    ):
        if issues:
            say(f"{label}: {len(issues)}")
            for issue in issues[:MAX_LISTED]:
                say(f"  {one_line(str(issue))}")
            if len(issues) > MAX_LISTED:
                say(f"  … and {len(issues) - MAX_LISTED} more (--json lists them all)")


def _missing_directory(path: Path) -> Path | None:
    """The topmost of `path` and its parents that does not exist (opening a store at
    `path` creates it and everything below); None when `path` exists."""
    top = None
    for candidate in (path, *path.parents):
        if candidate.exists() or candidate.is_symlink():
            break
        top = candidate
    return top


def _remove_new_store(store: MemoryStore, path: Path, top: Path | None) -> None:
    """Take away the empty store a failed import created at `path`, and the directories
    it made for it up to `top` (None: `path` was there), so a failed import leaves
    nothing behind. A store some other process wrote to meanwhile is kept, and so is a
    directory that holds anything else."""
    try:
        untouched = store.counters().cycles == 0 and not store.agents()
    except GraymatterError:
        untouched = False
    store.close()
    if not untouched:
        return
    try:
        for name in (DATA_FILE, LOCK_FILE):
            (path / name).unlink(missing_ok=True)
        current = path
        while top is not None:
            current.rmdir()  # refused for a directory someone put something else in
            if current == top:
                return
            current = current.parent
    except OSError:
        return  # what could not be removed stays; the import's own error is the news


def _issue(issue: ImportIssue) -> dict[str, object]:
    _, _, number = issue.where.partition(" ")
    return {
        "id": issue.id,
        "kind": issue.kind,
        "line": int(number) if number.isdigit() else None,
        "where": issue.where,
        "reason": issue.reason,
    }


@click.command()
@click.option(
    "--into-existing",
    is_flag=True,
    help="Add the demo's fake facts to a store that already holds other data.",
)
@common_options
def demo(into_existing: bool, data_dir: Path | None, as_json: bool) -> None:
    """Create a realistic demo store (three agents, a few hundred facts).

    Only a new or empty directory, or an earlier demo store, is filled unless
    --into-existing is given."""
    settings = settings_for(data_dir)
    store = open_upgrading(settings)
    added = create_demo(store, into_existing=into_existing)
    if as_json:
        emit_json({"data_dir": store.location, "facts_added": added})
    elif added:
        say(f"demo store ready in {one_line(store.location)}: {counted(added, 'fact')}")
    else:
        say(f"demo data already present in {one_line(store.location)}")
