"""`hooks install|uninstall|status`: our hooks in a coding agent client's settings
(Claude Code), so memory is recalled and `remember:` lines stored without the model
deciding to call a tool (ADR 0055). The file rules are `exchange.client_files`'."""

from __future__ import annotations

import copy
import shlex
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import click

from graymatter_tui.cli.common import common_options, settings_for
from graymatter_tui.cli.output import emit_json, fail, note, one_line, say
from graymatter_tui.cli.params import checked_by
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.exchange import client_files
from graymatter_tui.hooks import claude_settings, hook_log
from graymatter_tui.hooks import options as hook_options
from graymatter_tui.hooks.project import agent_for_directory

CLIENT_HELP = "The client whose settings to change (only claude-code has hooks)."
PROJECT_HELP = (
    "A project: its .claude/settings.local.json (this machine's, not committed) instead of "
    "~/.claude/settings.json, and its agent fixed to the project's."
)
DAY = 24 * 3600


def _shown(settings: Settings) -> str:
    """The store as a person reads it: the directory, or the URL without its password."""
    location = settings.location
    return str(location.path) if location.path is not None else location.redacted


def _client_option(fn: Any) -> Any:
    return click.option(
        "--client",
        type=click.Choice(hook_options.CLIENTS),
        default=hook_options.CLIENT,
        show_default=True,
        help=CLIENT_HELP,
    )(fn)


def _project_option(fn: Any) -> Any:
    return click.option(
        "--project",
        type=click.Path(path_type=Path, file_okay=False),
        default=None,
        help=PROJECT_HELP,
    )(fn)


def _settings_file(project: Path | None) -> tuple[Path, str]:
    if project is None:
        return claude_settings.user_settings_path(), "user"
    return claude_settings.project_settings_path(project.absolute()), "project"


def _hook_options(
    settings: Settings,
    agent: str | None,
    project: Path | None,
    read_only: bool,
    review: str,
    consolidate: bool,
) -> hook_options.HookOptions:
    """The hook's flags: the store by absolute path (or a database by its URL without the
    password), and the agent: given, else fixed to the project's, else left to each
    session's project directory."""
    location = settings.location
    if agent is None and project is not None:
        agent = agent_for_directory(project)
    return hook_options.HookOptions(
        data_dir=str(location.path.absolute()) if location.path is not None else None,
        store=location.without_password if location.path is None else None,
        agent=agent,
        read_only=read_only,
        review="none" if review == "off" else review,
        consolidate=consolidate,
    )


def _load(path: Path) -> tuple[client_files.Snapshot, dict[str, Any]]:
    snapshot = client_files.read(path)
    return snapshot, client_files.json_object(snapshot)


def _found(items: list[claude_settings.Found]) -> list[dict[str, Any]]:
    return [{"event": f.event, "command": f.command, "timeout": f.timeout} for f in items]


def _gitignore_note(path: Path, project: Path | None) -> None:
    """A project's local settings belong out of git: say so if git would commit them."""
    git = shutil.which("git")
    if project is None or git is None:
        return
    try:
        inside = subprocess.run(
            [git, "-C", str(project), "rev-parse", "--is-inside-work-tree"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if inside.stdout.strip() != "true":
            return
        ignored = subprocess.run(
            [git, "-C", str(project), "check-ignore", "-q", str(path)],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return
    if ignored.returncode == 1:
        note(
            f"{path} is not ignored by git; it holds this machine's paths: add "
            ".claude/settings.local.json to the project's .gitignore"
        )


def _apply(
    action: str,
    path: Path,
    scope: str,
    project: Path | None,
    dry_run: bool,
    as_json: bool,
    change_fn: Any,
    extra: dict[str, Any],
) -> None:
    try:
        snapshot, data = _load(path)
        changed = copy.deepcopy(data)
        try:
            change = change_fn(changed)
        except claude_settings.BadShape as exc:
            raise client_files.Refused(
                f"{path} is not Claude Code settings as documented ({exc}); nothing changed"
            ) from None
        new_text = client_files.json_text(changed, snapshot.text)
        backup: Path | None = None
        if change.changed and not dry_run:
            backup = client_files.write(snapshot, new_text)
    except InvalidInput as exc:
        fail(str(exc))
    receipt = {
        "client": hook_options.CLIENT,
        "action": action,
        "file": str(path),
        "scope": scope,
        "through_symlink": str(snapshot.real) if snapshot.linked else None,
        "changed": change.changed and not dry_run,
        "dry_run": dry_run,
        "added": _found(change.added),
        "removed": _found(change.removed),
        "backup": str(backup) if backup is not None else None,
        **extra,
    }
    if as_json:
        if dry_run:
            receipt["diff"] = client_files.diff(snapshot, new_text) if change.changed else ""
        emit_json(receipt)
        return
    if dry_run:
        if change.changed:
            click.echo(client_files.diff(snapshot, new_text), nl=False)
        note(f"dry run: {path} not changed" if change.changed else f"{path}: nothing to change")
        return
    _say_receipt(action, path, snapshot, change, backup)
    if action == "install" and change.changed:
        _gitignore_note(path, project)


def _say_receipt(
    action: str,
    path: Path,
    snapshot: client_files.Snapshot,
    change: claude_settings.Change,
    backup: Path | None,
) -> None:
    where = one_line(str(path))
    if snapshot.linked:
        where += f" (a link to {one_line(str(snapshot.real))})"
    if not change.changed:
        if action == "install":
            say(f"graymatter's hooks are already installed in {where}; nothing changed")
        else:
            say(f"no graymatter hooks in {where}; nothing changed")
        return
    events = ", ".join(dict.fromkeys(f.event for f in (change.added or change.removed)))
    verb = "installed" if action == "install" else "removed"
    if action == "install" and change.removed:
        verb = "updated"
    say(f"{verb} graymatter's hooks ({events}) in {where}")
    if backup is not None:
        say(f"  backup of the file as it was: {one_line(str(backup))}")
    if action == "install":
        say(f"  command: {one_line(change.added[0].command)}")


@click.group(name="hooks")
def hooks() -> None:
    """Hooks for coding agents (Claude Code): recall injected at session start and on
    every prompt, `remember:` lines stored, checkpoints before compaction and at the end."""


@hooks.command(name="install")
@_client_option
@_project_option
@click.option(
    "--agent",
    default=None,
    callback=checked_by(validate_agent),
    help="The agent whose memory the hooks use (default: the project directory's name).",
)
@click.option("--read-only", is_flag=True, help="Recall only; store nothing.")
@click.option(
    "--review",
    type=click.Choice(hook_options.REVIEW_CHOICES),
    default="off",
    show_default=True,
    help="As `mcp --review`: all holds remember: lines for review; curation or all leave "
    "consolidation to a person.",
)
@click.option(
    "--consolidate",
    is_flag=True,
    help="At SessionEnd, start a consolidation cycle in the background (at most one a day; "
    "uses the configured summariser).",
)
@click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")
@common_options
def install_cmd(
    client: str,
    project: Path | None,
    agent: str | None,
    read_only: bool,
    review: str,
    consolidate: bool,
    dry_run: bool,
    data_dir: Path | None,
    as_json: bool,
) -> None:
    """Add graymatter's hooks to the client's settings (again: brings them up to date).
    Other hooks and settings are left as they are; the file is backed up first."""
    del client  # one client has hooks
    settings = settings_for(data_dir)
    hook = _hook_options(settings, agent, project, read_only, review, consolidate)
    command = claude_settings.command_line(hook)
    path, scope = _settings_file(project)
    if settings.location.path is None:
        note("the hooks name the database without its password: ~/.pgpass or PGPASSWORD gives it")
    _apply(
        "install",
        path,
        scope,
        project,
        dry_run,
        as_json,
        lambda data: claude_settings.install(data, command),
        {"command": command, "agent": hook.agent, "store": _shown(settings)},
    )


@hooks.command(name="uninstall")
@_client_option
@_project_option
@click.option("--dry-run", is_flag=True, help="Show the change as a diff; write nothing.")
@common_options
def uninstall_cmd(
    client: str, project: Path | None, dry_run: bool, data_dir: Path | None, as_json: bool
) -> None:
    """Remove graymatter's hooks (and only them) from the client's settings, whichever
    store they name (`--dir`/`--store` are taken, as by every command, and not needed)."""
    del client, data_dir
    path, scope = _settings_file(project)
    _apply("uninstall", path, scope, project, dry_run, as_json, claude_settings.uninstall, {})


def _file_status(path: Path, scope: str) -> dict[str, Any]:
    out: dict[str, Any] = {"file": str(path), "scope": scope, "exists": path.exists()}
    try:
        snapshot, data = _load(path)
    except InvalidInput as exc:
        return {**out, "error": str(exc), "installed": [], "commands": [], "other_hooks": 0}
    found = claude_settings.ours(data)
    return {
        **out,
        "through_symlink": str(snapshot.real) if snapshot.linked else None,
        "error": None,
        "installed": list(dict.fromkeys(f.event for f in found)),
        "missing": [e for e in claude_settings.EVENTS if e not in {f.event for f in found}],
        "commands": list(dict.fromkeys(f.command for f in found)),
        "other_hooks": claude_settings.others(data),
    }


def _options_of(command: str) -> hook_options.HookOptions | None:
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    start = 3 if len(words) >= 3 and words[1] == "-m" else 1
    try:
        return hook_options.parse(words[start:])
    except InvalidInput:
        return None


@hooks.command(name="status")
@_client_option
@_project_option
@common_options
def status_cmd(client: str, project: Path | None, data_dir: Path | None, as_json: bool) -> None:
    """Where the hooks are installed, the agent a project's sessions use, and the hook
    log's newest lines (failures of the last day counted)."""
    del client
    directory = (project or Path.cwd()).absolute()
    files = [
        _file_status(claude_settings.user_settings_path(), "user"),
        _file_status(claude_settings.project_settings_path(directory, shared=True), "project"),
        _file_status(claude_settings.project_settings_path(directory), "project-local"),
    ]
    commands = [c for f in files for c in f["commands"]]
    hook = _options_of(commands[-1]) if commands else None  # the project's own wins
    if hook is not None and data_dir is None and (hook.data_dir or hook.store):
        settings = Settings.from_env(data_dir=hook.data_dir, store=hook.store)
    else:
        settings = settings_for(data_dir)
    agent = hook.agent if hook is not None and hook.agent else agent_for_directory(directory)
    tail = hook_log.read_tail(settings.data_dir, 10, since=time.time() - DAY)
    result = {
        "client": hook_options.CLIENT,
        "files": files,
        "installed": bool(commands),
        "project": str(directory),
        "agent": agent,
        "store": _shown(settings),
        "log": {
            "file": str(tail.path),
            "lines": tail.lines,
            "failures_last_day": tail.failures,
            "last_failure": tail.last_failure,
        },
    }
    if as_json:
        emit_json(result)
        return
    for f in files:
        name = one_line(f["file"])
        if f["error"]:
            say(f"  ✗ {name}: {one_line(f['error'])}")
        elif f["installed"]:
            missing = f" (missing: {', '.join(f['missing'])})" if f["missing"] else ""
            say(f"  ✓ {name}: {', '.join(f['installed'])}{missing}")
            for command in f["commands"]:
                say(f"      {one_line(command)}")
        else:
            what = "no graymatter hooks" if f["exists"] else "not there"
            say(f"  · {name}: {what}")
    if sum(1 for f in files if f["installed"]) > 1:
        note("the hooks are installed in more than one file: Claude Code runs each of them")
    say(f"project {one_line(str(directory))}: agent {one_line(agent)}, store {result['store']}")
    say(f"hook log {one_line(str(tail.path))}: {tail.failures} failure(s) in the last day")
    for line in tail.lines[-5:]:
        say(f"  {one_line(line)}")
    if not commands:
        say("not installed: graymatter-tui hooks install [--project DIR]")
