"""The command line. With no subcommand it opens the TUI."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from graymatter_tui import __version__
from graymatter_tui.cli import admin, cycles, facts
from graymatter_tui.cli.output import fail
from graymatter_tui.errors import GraymatterError


@click.group(invoke_without_command=True, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--dir",
    "data_dir",
    type=click.Path(path_type=Path, readable=False),
    default=None,
    help="Data directory.",
)
@click.option("--demo", is_flag=True, help="Create (or reuse) a demo store and open it.")
@click.option("--read-only", is_flag=True, help="Open the TUI with every mutation disabled.")
@click.option("--agent", default=None, help="Agent to show first.")
@click.option(
    "--llm",
    type=click.Choice(["ollama", "anthropic", "local", "none"]),
    default=None,
    help="Summariser for consolidation.",
)
@click.version_option(__version__, prog_name="graymatter-tui")
@click.pass_context
def cli(
    ctx: click.Context,
    data_dir: Path | None,
    demo: bool,
    read_only: bool,
    agent: str | None,
    llm: str | None,
) -> None:
    """graymatter-tui: browse, audit and consolidate AI-agent memory."""
    ctx.ensure_object(dict)
    ctx.obj["data_dir"] = data_dir
    if ctx.invoked_subcommand is None:
        from graymatter_tui.launch import launch_tui

        launch_tui(data_dir=data_dir, demo=demo, read_only=read_only, agent=agent, llm=llm)


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
):
    cli.add_command(command)


def main() -> None:
    try:
        cli.main(prog_name="graymatter-tui", standalone_mode=False)
    except click.exceptions.Abort:
        fail("aborted", 130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except GraymatterError as exc:
        fail(str(exc))
    except BrokenPipeError:
        sys.stderr.close()
        sys.exit(1)
    except KeyboardInterrupt:
        fail("interrupted", 130)
