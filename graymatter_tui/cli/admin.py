"""Store-wide commands: status, export, import, demo."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import click

from graymatter_tui import exchange
from graymatter_tui.cli.common import common_options, open_store, settings_for
from graymatter_tui.cli.output import emit_json, say
from graymatter_tui.cli.progress import stderr_progress
from graymatter_tui.demo import create_demo
from graymatter_tui.errors import Conflict, InvalidInput
from graymatter_tui.overview import status_payload
from graymatter_tui.store import ON_CONFLICT, ImportConflicts, ImportIssue, OnConflict, Store
from graymatter_tui.textsafe import neutralise, validate_agent

MAX_LISTED = 10


@click.command()
@common_options
def status(data_dir: Path | None, as_json: bool) -> None:
    """Totals, counters and per-agent figures."""
    payload = status_payload(open_store(data_dir))
    if as_json:
        emit_json(payload)
        return
    say(f"store      {neutralise(payload['data_dir'], one_line=True)}")
    say(
        f"facts      {payload['live_facts']} live · {payload['tombstones']} tombstones · "
        f"{payload['pinned']} pinned"
    )
    say(
        f"cycles     {payload['cycles']} run · {payload['consolidations']} applied "
        f"({payload['facts_consumed']} facts consumed) · {payload['reverts']} reverted"
    )
    say(
        f"size       {payload['file_bytes'] / 1e6:.1f} MB on disk · map "
        f"{payload['map_used'] / 1e6:.1f} of {payload['map_size'] / 1e6:.0f} MB used"
    )
    if payload["agents"]:
        say("")
        say(f"{'agent':<32} {'live':>7} {'tombs':>7} {'pinned':>7} {'avg w':>7}")
        for a in payload["agents"]:
            name = neutralise(a["agent_id"], one_line=True)
            if len(name) > 32:
                name = name[:31] + "…"
            say(
                f"{name:<32} {a['live_facts']:>7} {a['tombstones']:>7} {a['pinned']:>7} "
                f"{a['avg_weight']:>7.3f}"
            )


def _write_output(data: bytes, out: Path | None) -> None:
    if out is None:
        sys.stdout.buffer.write(data)
        sys.stdout.buffer.flush()
        return
    if out.is_dir():
        raise InvalidInput(f"--out {out} is a directory; give a file name")
    parent = out.parent if str(out.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(dir=parent, prefix=f".{out.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, out)
    except OSError as exc:
        raise InvalidInput(f"cannot write {out}: {exc.strerror or exc}") from None


@click.command()
@click.option(
    "--format",
    "fmt",
    type=click.Choice(exchange.FORMATS),
    default="jsonl",
    show_default=True,
    help="jsonl: facts and journal; json: upstream memories.json; markdown: for reading.",
)
@click.option("--out", type=click.Path(path_type=Path), default=None, help="File (default stdout).")
@click.option("--agent", default=None, help="Only this agent's facts.")
@common_options
def export(
    fmt: str, out: Path | None, agent: str | None, data_dir: Path | None, as_json: bool
) -> None:
    """Export every fact (tombstones included)."""
    if agent is not None:
        validate_agent(agent)
    store = open_store(data_dir)
    if fmt == "jsonl":
        with stderr_progress(as_json) as progress:
            data = b"".join(line + b"\n" for line in exchange.export_jsonl(store, agent, progress))
    elif fmt == "json":
        with stderr_progress(as_json) as progress:
            data = exchange.export_json(store, agent, progress) + b"\n"
    else:
        with stderr_progress(as_json) as progress:
            text = exchange.export_markdown(store, agent, progress)
        if out is None and sys.stdout.isatty():
            text = neutralise(text)
        data = text.encode("utf-8")
    _write_output(data, out)
    if out is not None:
        if as_json:
            emit_json({"out": str(out), "format": fmt, "bytes": len(data)})
        else:
            say(f"exported to {neutralise(str(out), one_line=True)} ({fmt}, {len(data)} bytes)")


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
    """Import our jsonl export or upstream's memories.json (all or nothing; IDs kept)."""
    if str(file) == "-":
        data = sys.stdin.buffer.read()
    else:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InvalidInput(f"cannot read {file}: {exc.strerror or exc}") from None
    store = open_store(data_dir)
    with stderr_progress(as_json) as progress:
        try:
            result = exchange.import_file(store, data, on_conflict=on_conflict, progress=progress)
        except ImportConflicts as exc:
            raise Conflict(
                f"nothing imported: {exc}; --on-conflict keep-store keeps the store's rows "
                "and imports the rest"
            ) from None
    if as_json:
        emit_json(
            {
                "facts_added": result.facts_added,
                "facts_skipped": result.facts_skipped,
                "records_added": result.records_added,
                "records_skipped": result.records_skipped,
                "conflicts": [_issue(i) for i in result.conflicts],
                "kept_store_state": [_issue(i) for i in result.kept_store_state],
            }
        )
        return
    say(
        f"imported {result.facts_added} facts ({result.facts_skipped} already present) and "
        f"{result.records_added} journal records ({result.records_skipped} already present)"
    )
    for label, issues in (
        ("kept the store's row (conflict)", result.conflicts),
        ("kept the store's state", result.kept_store_state),
    ):
        if issues:
            say(f"{label}: {len(issues)}")
            for issue in issues[:MAX_LISTED]:
                say(f"  {neutralise(str(issue), one_line=True)}")
            if len(issues) > MAX_LISTED:
                say(f"  … and {len(issues) - MAX_LISTED} more (--json lists them all)")


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
@common_options
def demo(data_dir: Path | None, as_json: bool) -> None:
    """Create a realistic demo store (three agents, a few hundred facts)."""
    settings = settings_for(data_dir)
    store = Store.open(settings.data_dir)
    added = create_demo(store)
    if as_json:
        emit_json({"data_dir": str(settings.data_dir), "facts_added": added})
    elif added:
        where = neutralise(str(settings.data_dir), one_line=True)
        say(f"demo store ready in {where}: {added} facts")
    else:
        say(f"demo data already present in {neutralise(str(settings.data_dir), one_line=True)}")
