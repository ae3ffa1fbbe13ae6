"""The command line. With no subcommand it opens the TUI."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import click

from graymatter_tui import __version__
from graymatter_tui.cli import (
    activity,
    admin,
    context_sync,
    cycles,
    embed,
    facts,
    hooks,
    init,
    mcp,
    migrate,
    probes,
    review,
)
from graymatter_tui.cli.common import BOTH_GIVEN, STORE_KEY, dir_option, store_option
from graymatter_tui.cli.output import fail
from graymatter_tui.cli.params import checked_by
from graymatter_tui.cli.progress import stderr_progress
from graymatter_tui.core import provenance
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.summariser_names import SUMMARISERS
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.tokens import LANGUAGE_VARIABLES, check_language


class _PipeClosed(Exception):
    """The reader of our standard output went away (`graymatter-tui list | head -1`)."""


class _Group(click.Group):
    # Click turns a broken pipe into exit 1; catch it first so `main` can end quietly.
    # make_context prints --help and --version; invoke runs the command.
    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except BrokenPipeError:
            raise _PipeClosed from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise _PipeClosed from None


@click.group(
    cls=_Group,
    invoke_without_command=True,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@dir_option(help_text="Data directory.")
@store_option
@click.option("--demo", is_flag=True, help="Create (or reuse) a demo store and open it.")
@click.option("--read-only", is_flag=True, help="Open the TUI with every mutation disabled.")
@click.option(
    "--agent", default=None, callback=checked_by(validate_agent), help="Agent to show first."
)
@click.option(
    "--llm",
    type=click.Choice(SUMMARISERS),
    default=None,
    help="Summariser for consolidation.",
)
@click.option(
    "--stem-language",
    default=None,
    metavar="LANGUAGE",
    callback=checked_by(check_language),
    help="Stemming language of a store this run creates or upgrades (default: "
    "$GRAYMATTER_LANGUAGE, else english; 'none' turns stemming off). An existing store "
    "keeps its own.",
)
@click.version_option(__version__, prog_name="graymatter-tui")
@click.pass_context
def cli(
    ctx: click.Context, /, data_dir: Path | None, stem_language: str | None, **tui_options: Any
) -> None:
    """graymatter-tui: browse, audit and consolidate AI-agent memory."""
    if stem_language is not None:
        # Read by every open that creates or upgrades a store, in this process and in
        # any it starts (the MCP server's clients run their own). Checked and folded
        # by its callback.
        for name in LANGUAGE_VARIABLES:
            os.environ[name] = stem_language
    ctx.ensure_object(dict)
    ctx.obj["data_dir"] = data_dir
    provenance.name_process(provenance.CLI)  # the TUI and the MCP server rename it
    if ctx.invoked_subcommand is None:
        from graymatter_tui.cli.launch import launch_tui

        store = ctx.meta.get(STORE_KEY)
        if store is not None and data_dir is not None:
            raise click.UsageError(BOTH_GIVEN, ctx=ctx)
        if store is not None and tui_options["demo"]:
            raise click.UsageError("--demo keeps its own store; give it no --store", ctx=ctx)
        # --demo, --read-only, --agent and --llm go to the TUI as they are.
        launch_tui(
            data_dir=data_dir,
            store=store,
            opening=stderr_progress(False),
            **tui_options,
        )


for command in (
    facts.remember,
    facts.list_facts,
    facts.show,
    facts.pin,
    facts.unpin,
    facts.revise,
    facts.retire,
    facts.recall_cmd,
    admin.status,
    admin.export,
    admin.import_,
    admin.demo,
    cycles.consolidate,
    cycles.journal,
    cycles.revert,
    cycles.doctor,
    embed.embed,
    activity.activity,
    mcp.mcp,
    review.review,
    probes.probe,
    migrate.migrate_cmd,
    hooks.hooks,
    init.init,
    context_sync.context_sync,
):
    cli.add_command(command)


def _end_quietly_after_a_closed_pipe() -> None:
    """Exit 0 with no message: the reader had all it wanted. Output still buffered would
    fail again when Python flushes at exit, so standard output now goes to /dev/null."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    sys.exit(0)


def main() -> None:
    try:
        cli.main(prog_name="graymatter-tui", standalone_mode=False)
        sys.stdout.flush()
    except (_PipeClosed, BrokenPipeError):
        _end_quietly_after_a_closed_pipe()
    except click.exceptions.Abort:
        fail("aborted", 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except GraymatterError as exc:
        fail(str(exc))
    except KeyboardInterrupt:
        fail("interrupted", 130)
