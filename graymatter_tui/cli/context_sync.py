"""`context-sync`: keep an agent's pinned facts in a project's instruction file (CLAUDE.md,
AGENTS.md) between markers, so a client that reads only that file still knows them
(ADR 0057). The file is created if missing; everything outside the block is left as it
is; a block edited by hand is refused unless `--force`; a backup comes first."""

from __future__ import annotations

from pathlib import Path

import click

from graymatter_tui.cli.common import common_options, open_reader
from graymatter_tui.cli.output import emit_json, fail, note, one_line, say
from graymatter_tui.cli.params import checked_by
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.exchange import client_files, managed_block
from graymatter_tui.hooks.project import agent_for_directory


@click.command(name="context-sync")
@click.option(
    "--file",
    "file_name",
    type=click.Path(path_type=Path, dir_okay=False),
    default=Path("CLAUDE.md"),
    show_default=True,
    help="The instruction file (CLAUDE.md, AGENTS.md, …), relative to the project.",
)
@click.option(
    "--project",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The project (default: the current directory).",
)
@click.option(
    "--agent",
    default=None,
    callback=checked_by(validate_agent),
    help="Whose pinned facts (default: the project's agent, as the hooks name it).",
)
@click.option("--force", is_flag=True, help="Replace the block even if it was edited by hand.")
@click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")
@common_options
def context_sync(
    file_name: Path,
    project: Path | None,
    agent: str | None,
    force: bool,
    dry_run: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Write the agent's pinned facts into the instruction file's managed block."""
    directory = (project or Path.cwd()).absolute()
    path = file_name if file_name.is_absolute() else directory / file_name
    who = agent or agent_for_directory(directory)
    try:
        with open_reader(data_dir, as_json=as_json) as store:
            pinned = store.pinned_facts(who)
        pinned.reverse()  # oldest first: a new pin adds a line at the end
        snapshot = client_files.read(path)
        synced = managed_block.sync(snapshot.text, who, [f.text for f in pinned], force=force)
        changed = synced.action != "unchanged"
        backup = None
        if changed and not dry_run:
            # A forced sync may throw away a hand edit: keep the file as it is now too.
            backup = client_files.write(snapshot, synced.text, keep_current=force)
    except GraymatterError as exc:
        fail(str(exc))
    receipt = {
        "file": str(path),
        "through_symlink": str(snapshot.real) if snapshot.linked else None,
        "agent": who,
        "action": synced.action,
        "changed": changed and not dry_run,
        "dry_run": dry_run,
        "facts": synced.shown,
        "left_out": synced.left_out,
        "backup": str(backup) if backup is not None else None,
    }
    if as_json:
        if dry_run:
            receipt["diff"] = client_files.diff(snapshot, synced.text) if changed else ""
        emit_json(receipt)
        return
    if dry_run:
        if changed:
            click.echo(client_files.diff(snapshot, synced.text), nl=False)
        note("dry run: nothing was written")
        return
    name = one_line(str(path))
    if not changed:
        say(f"{name}: the pinned facts of {one_line(who)} are up to date ({synced.shown})")
        return
    say(f"{name}: {synced.action} the block of {synced.shown} pinned facts of {one_line(who)}")
    if synced.left_out:
        note(f"{synced.left_out} more pinned facts did not fit in the block")
    if backup is not None:
        say(f"  backup: {one_line(str(backup))}")
