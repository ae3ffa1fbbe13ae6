"""`migrate --from URL --to URL`: copy a whole store to another backend, verified."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from graymatter_tui.backends.opening import open_location
from graymatter_tui.cli.common import common_options, settings_for
from graymatter_tui.cli.output import emit_json, one_line, say
from graymatter_tui.cli.params import checked_by
from graymatter_tui.cli.progress import stderr_progress
from graymatter_tui.core.errors import Conflict, InvalidInput
from graymatter_tui.core.store_url import StoreUrl, parse_store_url
from graymatter_tui.core.words import counted
from graymatter_tui.exchange.migration import MigrationReport, migrate
from graymatter_tui.storage import MemoryStore, TargetNotEmpty

NOT_EMPTY_HINT = (
    "; give an empty target, or --allow-non-empty to add to it (ids it shares with the "
    "source are refused)"
)


def _same_place(a: StoreUrl, b: StoreUrl) -> bool:
    """Whether two locations name one store: the same directory, or the same database
    on the same hosts (whoever connects)."""
    if a.path is not None and b.path is not None:
        return a.path.resolve() == b.path.resolve()
    return a.backend == b.backend and (a.hosts, a.database) == (b.hosts, b.database)


def _open_source(location: StoreUrl) -> MemoryStore:
    """The source, read-only: nothing is created or upgraded, and no store is no source."""
    source = open_location(location, read_only=True)
    if source.absent:
        source.close()
        raise InvalidInput(f"there is no store at {location.redacted}; nothing was migrated")
    return source


def report_dict(report: MigrationReport) -> dict[str, Any]:
    return {
        "source": report.source,
        "target": report.target,
        "already_copied": report.already_copied,
        "facts": report.facts,
        "records": report.records,
        "probes": report.probes,
        "rows": report.rows,
        "activity": report.activity,
        "counters": report.counters,
        "agents": [
            {"agent_id": a.agent_id, "live": a.live, "tombstones": a.tombstones, "pinned": a.pinned}
            for a in report.agents
        ],
        "verified": list(report.verified),
        "inherited_violations": report.inherited,
        "seconds": {k: round(v, 3) for k, v in report.seconds.items()},
        "vectors": None
        if report.vectors is None
        else {
            "mode": report.vectors.mode,
            "model": report.vectors.model,
            "dimension": report.vectors.dimension,
            "copied": report.vectors.copied,
            "queued": report.vectors.queued,
        },
    }


def vectors_line(report: MigrationReport) -> str:
    """What became of the source's embedding vectors, in words."""
    load = report.vectors
    if load is None:
        return "left as the target has them"
    model = one_line(load.model or "?")
    waiting = counted(load.queued, "fact")
    if load.mode == "copy":
        dims = f" ({load.dimension} dimensions)" if load.dimension else ""
        return (
            f"{counted(load.copied, 'fact')} with vectors of {model}{dims} copied, none "
            f"embedded again; {waiting} waiting for one"
        )
    if load.mode == "queue":
        return f"not copied: the target holds vectors of {model}; {waiting} queued for it"
    if load.mode == "switch":
        return f"not copied: the target's embedder uses {model}; {waiting} queued for it"
    if load.model is not None:
        return f"none in the source; {waiting} queued for the target's {model}"
    return "none (the source has never embedded)"


def print_report(report: MigrationReport) -> None:
    live = sum(a.live for a in report.agents)
    tombs = sum(a.tombstones for a in report.agents)
    pinned = sum(a.pinned for a in report.agents)
    rows = report.rows
    c = report.counters
    if report.already_copied:
        say(f"{report.target} already holds this copy of {report.source}; nothing written")
    else:
        say(f"migrated {report.source} -> {report.target}")
    say(
        f"  facts        {report.facts} ({live} live, {counted(tombs, 'tombstone')}, "
        f"{pinned} pinned) across {counted(len(report.agents), 'agent')}"
    )
    say(
        f"  journal      {counted(report.records, 'record')}; "
        f"consolidations {c['consolidations']}, "
        f"facts consolidated {c['facts_consolidated']}, reverts {c['reverts']}, "
        f"cycles {c['cycles']}"
    )
    also = [
        counted(report.probes, "probe"),
        counted(rows["checkpoints"], "checkpoint"),
        counted(rows["aliases"], "alias", "aliases"),
        f"{counted(rows['proposals'], 'review proposal')} ({c['review_pending']} pending)",
        counted(rows["receipts"], "receipt"),
        f"graph {counted(rows['graph_nodes'], 'node')} and {counted(rows['graph_edges'], 'edge')}",
        counted(rows["extracted"], "extraction mark"),
    ]
    say(f"  also         {', '.join(also)}")
    if report.activity:
        feed = f"{counted(report.activity, 'entry', 'entries')} copied"
    elif report.already_copied:
        feed = "left as the target has it"
    else:
        feed = "not copied (the target has a feed of its own)"
    say(f"  activity     {feed}")
    say(f"  vectors      {vectors_line(report)}")
    timing = ", ".join(f"{k} {v:.1f} s" for k, v in report.seconds.items())
    say(f"verified: {', '.join(report.verified)} ({timing})")
    if report.inherited:
        broken = counted(len(report.inherited), "invariant")
        say(f"note: the source breaks {broken} too; copied as is")


@click.command(name="migrate")
@click.option(
    "--from",
    "source_url",
    default=None,
    metavar="URL",
    callback=checked_by(parse_store_url),
    help="The store to copy (default: the one --store/--dir or the environment name).",
)
@click.option(
    "--to",
    "target_url",
    required=True,
    metavar="URL",
    callback=checked_by(parse_store_url),
    help="The store to copy into.",
)
@click.option(
    "--allow-non-empty",
    is_flag=True,
    help="Copy into a store that holds something already (shared ids are refused).",
)
@common_options
def migrate_cmd(
    source_url: StoreUrl | None,
    target_url: StoreUrl,
    allow_non_empty: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Copy a whole store to another (LMDB directory or postgresql:// URL, either way):
    facts, journal, counters, probes, checkpoints, aliases, the review queue, the graph
    and the embedding vectors, in one transaction; then verify the copy. The source is
    only read. Vectors of another model than the target's embedder uses (GRAYMATTER_EMBED)
    are not copied: the facts are queued for it."""
    from graymatter_tui.embedding.settings import EmbedSettings

    source_at = source_url if source_url is not None else settings_for(data_dir).location
    target_at = target_url
    if _same_place(source_at, target_at):
        raise InvalidInput(f"--from and --to name the same store ({source_at.redacted})")
    embedding = EmbedSettings.from_env()
    embed_model = embedding.model if embedding.enabled else None
    source = _open_source(source_at)
    try:
        target = open_location(target_at)
        try:
            with stderr_progress(as_json) as bar:
                try:
                    report = migrate(
                        source,
                        target,
                        allow_non_empty=allow_non_empty,
                        progress=bar,
                        embed_model=embed_model,
                    )
                except TargetNotEmpty as exc:
                    raise Conflict(str(exc) + NOT_EMPTY_HINT) from None
        finally:
            target.close()
    finally:
        source.close()
    if as_json:
        emit_json(report_dict(report))
    else:
        print_report(report)
