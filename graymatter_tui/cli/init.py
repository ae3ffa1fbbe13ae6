"""`init`: wire this store into agent clients in one command: our MCP server's entry
written into each chosen client's own config file (what `mcp --print-config` prints for
pasting), with every serving flag, and nobody else's entry touched (ADR 0056).

- `.mcp.json` of the project for Claude Code; Cursor's `~/.cursor/mcp.json`, or the
  project's `.cursor/mcp.json` with `--project`; Codex's `~/.codex/config.toml` (a
  `[mcp_servers.graymatter]` table, every other byte of the file kept); Claude Desktop's
  config.
- A file of one project gets `--agent` set to the project's agent (its directory's name,
  as the hooks derive it) unless `--agent` says otherwise; a file shared by every project
  names no agent unless asked.
- Every file is checked before any is written: one that cannot be changed (not JSON or
  TOML, read-only, a combination the client cannot express) is refused with one line and
  nothing at all is written. Backups and atomic writes as `exchange.client_files` says.
- `--hooks` also installs the Claude Code hooks in the project, with the same flags."""

from __future__ import annotations

import copy
import shlex
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from graymatter_tui.cli.common import common_options, settings_for
from graymatter_tui.cli.mcp import _bind_form
from graymatter_tui.cli.output import emit_json, fail, note, one_line, say
from graymatter_tui.cli.params import checked_by, usage_error
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.review_modes import REVIEW_MODES
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.exchange import client_files
from graymatter_tui.hooks import claude_settings
from graymatter_tui.hooks import options as hook_options
from graymatter_tui.hooks.project import agent_for_directory
from graymatter_tui.mcp.client_config import (
    CLIENTS,
    SERVER_KEY,
    TOKEN_VARIABLE,
    Entry,
    NotExpressible,
    Remote,
    Serving,
    client_entry,
    config_file,
    detected,
    entry,
    snippet,
)
from graymatter_tui.mcp.http_guard import parse_bind


@dataclass
class Plan:
    """One file's change, worked out before anything is written."""

    client: str
    snapshot: client_files.Snapshot
    new_text: str
    changed: bool
    before: object  # our entry as it was (None: there was none)
    after: object  # our entry as it will be
    agent: str | None
    wired: Entry
    backup: Path | None = None

    def receipt(self, dry_run: bool) -> dict[str, Any]:
        action = "unchanged"
        if self.changed:
            action = "added" if self.before is None else "updated"
        out: dict[str, Any] = {
            "client": self.client,
            "file": str(self.snapshot.path),
            "through_symlink": str(self.snapshot.real) if self.snapshot.linked else None,
            "action": action,
            "changed": self.changed and not dry_run,
            "entry": self.after,
            "previous": self.before,
            "agent": self.agent,
            "backup": str(self.backup) if self.backup is not None else None,
        }
        if dry_run:
            out["diff"] = client_files.diff(self.snapshot, self.new_text) if self.changed else ""
        return out


def _json_plan(
    client: str, path: Path, server: dict[str, Any], agent: str | None, wired: Entry
) -> Plan:
    snapshot = client_files.read(path)
    data = client_files.json_object(snapshot)
    servers = data.get("mcpServers")
    if servers is not None and not isinstance(servers, dict):
        raise client_files.Refused(f'{path}: its "mcpServers" is not an object; nothing changed')
    before = copy.deepcopy(servers.get(SERVER_KEY)) if servers else None
    changed = before != server
    if changed:
        data = copy.deepcopy(data)
        data.setdefault("mcpServers", {})[SERVER_KEY] = server
    text = client_files.json_text(data, snapshot.text) if changed else (snapshot.text or "")
    return Plan(client, snapshot, text, changed, before, server, agent, wired)


def _toml_plan(
    path: Path, server: dict[str, Any], table: str, agent: str | None, wired: Entry
) -> Plan:
    snapshot = client_files.read(path)
    document = client_files.toml_document(snapshot)
    servers = document.get("mcp_servers")
    if servers is not None and not isinstance(servers, dict):
        raise client_files.Refused(f"{path}: its mcp_servers is not a table; nothing changed")
    before = servers.get(SERVER_KEY) if servers else None
    changed = before != server
    text = snapshot.text or ""
    if changed:
        text = client_files.with_toml_table(snapshot.text, ["mcp_servers", SERVER_KEY], table)
        # Read back what would be written: ours as meant, everything else as it was.
        try:
            after = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            after = {"error": str(exc)}
        ours = (after.get("mcp_servers") or {}).get(SERVER_KEY)
        path_of_ours = ["mcp_servers", SERVER_KEY]
        if ours != server or client_files.without(after, path_of_ours) != client_files.without(
            document, path_of_ours
        ):
            raise client_files.Refused(
                f"{path} cannot be changed safely by a program (our table is spread over it, "
                f"or inline); add this by hand: {' '.join(table.split())}"
            )
    return Plan("codex", snapshot, text, changed, before, server, agent, wired)


def _plan(client: str, project: Path | None, serving: Serving) -> Plan:
    wired = entry(serving)
    server = client_entry(client, wired)
    path = config_file(client, project)
    if client == "codex":
        return _toml_plan(path, server, snippet(client, wired), serving.agent, wired)
    return _json_plan(client, path, server, serving.agent, wired)


def _project_scoped(client: str, project: Path | None) -> bool:
    return client == "claude-code" or (client == "cursor" and project is not None)


@click.command(name="init")
@click.option(
    "--client",
    "clients",
    type=click.Choice(CLIENTS),
    multiple=True,
    help="A client to wire (repeat for several; default: every one found on this machine).",
)
@click.option(
    "--project",
    type=click.Path(path_type=Path, file_okay=False),
    default=None,
    help="The project whose .mcp.json (Claude Code) or .cursor/mcp.json (Cursor) to write "
    "(default: the current directory for Claude Code; Cursor's own file otherwise).",
)
@click.option(
    "--agent",
    default=None,
    callback=checked_by(validate_agent),
    help="Agent id for calls that give none (default for a project's file: the project's).",
)
@click.option("--read-only", is_flag=True, help="The server answers searches, stores nothing.")
@click.option(
    "--review",
    type=click.Choice(("off", *REVIEW_MODES)),
    default="off",
    show_default=True,
    help="As `mcp --review`: hold agents' curation (or all) writes for a person.",
)
@click.option(
    "--http",
    "bind",
    metavar="HOST:PORT",
    default=None,
    callback=checked_by(_bind_form),
    help="Clients connect to a server at http://HOST:PORT/mcp (bearer token from "
    f"${TOKEN_VARIABLE}) instead of starting one.",
)
@click.option("--allow-remote", is_flag=True, help="Let --http name a non-loopback address.")
@click.option(
    "--hooks",
    "with_hooks",
    is_flag=True,
    help="Also install the Claude Code hooks in the project (with the same flags).",
)
@click.option("--dry-run", is_flag=True, help="Show each change as a diff; write nothing.")
@common_options
def init(
    clients: tuple[str, ...],
    project: Path | None,
    agent: str | None,
    read_only: bool,
    review: str,
    bind: str | None,
    allow_remote: bool,
    with_hooks: bool,
    dry_run: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Write this store's MCP server into each client's own config file, with every
    flag given. Other servers' entries are left as they are; files are backed up first;
    running it again changes nothing. `mcp --print-config` prints the same for pasting."""
    try:
        where = parse_bind(bind, allow_remote=allow_remote) if bind is not None else None
    except InvalidInput as exc:
        raise usage_error(str(exc)) from None
    chosen = list(dict.fromkeys(clients)) or [c for c in CLIENTS if detected(c)]
    if not chosen:
        fail("no agent client found on this machine; name one with --client", 1)
    if with_hooks and "claude-code" not in chosen:
        raise usage_error("--hooks installs Claude Code's hooks: add --client claude-code")
    settings = settings_for(data_dir)
    review = "none" if review == "off" else review
    directory = (project or Path.cwd()).absolute()
    project_agent = agent or agent_for_directory(directory)
    plans: list[Plan] = []
    try:
        for client in chosen:
            scoped = _project_scoped(client, project)
            serving = Serving(
                settings.location,
                project_agent if scoped else agent,
                read_only,
                review,
                where,
                allow_remote,
            )
            plans.append(_plan(client, project, serving))
        hook_plan = _hook_plan(settings, directory, project_agent, read_only, review, with_hooks)
        for plan in plans:
            if plan.changed:
                client_files.check_writable(plan.snapshot)
        if hook_plan is not None and hook_plan[2]:
            client_files.check_writable(hook_plan[0])
        if not dry_run:
            for plan in plans:
                if plan.changed:
                    plan.backup = client_files.write(plan.snapshot, plan.new_text)
            if hook_plan is not None and hook_plan[2]:
                hook_backup = client_files.write(hook_plan[0], hook_plan[1])
                hook_plan = (*hook_plan[:3], hook_backup)
    except NotExpressible as exc:  # flags this client cannot take: a usage error
        fail(str(exc), 2)
    except InvalidInput as exc:
        fail(str(exc))
    _report(plans, hook_plan, dry_run, as_json, settings.location.path is None)


HookPlan = tuple[client_files.Snapshot, str, bool, Path | None]


def _hook_plan(
    settings: Any, directory: Path, agent: str, read_only: bool, review: str, wanted: bool
) -> HookPlan | None:
    if not wanted:
        return None
    location = settings.location
    hook = hook_options.HookOptions(
        data_dir=str(location.path.absolute()) if location.path is not None else None,
        store=location.without_password if location.path is None else None,
        agent=agent,
        read_only=read_only,
        review=review,
    )
    path = claude_settings.project_settings_path(directory)
    snapshot = client_files.read(path)
    data = copy.deepcopy(client_files.json_object(snapshot))
    try:
        change = claude_settings.install(data, claude_settings.command_line(hook))
    except claude_settings.BadShape as exc:
        raise client_files.Refused(f"{path}: {exc}; nothing changed") from None
    return snapshot, client_files.json_text(data, snapshot.text), change.changed, None


def _report(
    plans: list[Plan], hook_plan: HookPlan | None, dry_run: bool, as_json: bool, database: bool
) -> None:
    if as_json:
        result: dict[str, Any] = {
            "dry_run": dry_run,
            "clients": [p.receipt(dry_run) for p in plans],
        }
        if hook_plan is not None:
            snapshot, text, changed, backup = hook_plan
            result["hooks"] = {
                "file": str(snapshot.path),
                "changed": changed and not dry_run,
                "backup": str(backup) if backup is not None else None,
                **(
                    {"diff": client_files.diff(snapshot, text) if changed else ""}
                    if dry_run
                    else {}
                ),
            }
        emit_json(result)
        return
    for plan in plans:
        name = f"{plan.client}: {one_line(str(plan.snapshot.path))}"
        if dry_run:
            if plan.changed:
                click.echo(client_files.diff(plan.snapshot, plan.new_text), nl=False)
            else:
                say(f"{name}: already wired; nothing to change")
            continue
        if not plan.changed:
            say(f"{name}: already wired; nothing changed")
            continue
        verb = "added" if plan.before is None else "updated"
        agent = f" (agent {one_line(plan.agent)})" if plan.agent else ""
        say(f"{name}: {verb} the {SERVER_KEY} server{agent}")
        if plan.backup is not None:
            say(f"  backup: {one_line(str(plan.backup))}")
        if isinstance(plan.wired, Remote):
            note(
                f"{plan.client} connects to a running server with the bearer token from "
                f"${TOKEN_VARIABLE} (see `graymatter-tui mcp --print-config {plan.client}`)"
            )
    if hook_plan is not None:
        snapshot, text, changed, backup = hook_plan
        name = f"claude-code hooks: {one_line(str(snapshot.path))}"
        if dry_run and changed:
            click.echo(client_files.diff(snapshot, text), nl=False)
        elif not changed:
            say(f"{name}: already installed; nothing changed")
        else:
            say(f"{name}: installed" + (f" (backup: {one_line(str(backup))})" if backup else ""))
    if dry_run:
        note("dry run: nothing was written")
    if database:
        note("the entries name the database without its password: ~/.pgpass or PGPASSWORD")
    remote = next((p.wired for p in plans if isinstance(p.wired, Remote)), None)
    if remote is not None:
        note(f"start the server the clients connect to: {shlex.join(remote.server.argv)}")
