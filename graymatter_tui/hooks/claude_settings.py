"""Our hooks in a Claude Code settings file: which file, which entries, and how to add
and remove them without touching anyone else's (ADR 0055).

Claude Code reads hooks from `~/.claude/settings.json` (every project of this user;
`CLAUDE_CONFIG_DIR` moves it), a project's `.claude/settings.json` (committed, shared
with the team) and its `.claude/settings.local.json` (this machine's, kept out of git).
`hooks install` writes the user file, or with `--project DIR` that project's local file:
the command holds this machine's absolute paths (the hook executable, the store), which
do not belong in a file the team shares.

The structure is Claude Code's documented one: `{"hooks": {EVENT: [{"matcher": …,
"hooks": [{"type": "command", "command": …, "timeout": SECONDS}]}]}}`. Ours is one
matcher group per event holding one handler; the matcher is left out (it matches every
source of SessionStart, every trigger of PreCompact, every reason of SessionEnd, and
UserPromptSubmit takes none). The command is in shell form (a quoted string, no `args`
array), which every version of Claude Code runs; `args` (exec form) is newer.

A handler is ours when its command runs `graymatter-tui-hook` (any path to it) or
`python -m graymatter_tui.hooks`. Installing again replaces ours in place (a new path
or new flags), keeps one per event, and leaves every other group, handler and setting as
it was; removing takes out only ours, and a group left empty by that."""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from graymatter_tui.hooks.options import HookOptions

EVENTS = ("SessionStart", "UserPromptSubmit", "PreCompact", "SessionEnd")
# Seconds before Claude Code cancels the hook. Ours finish in well under one; these bound
# a store that is busy or unreachable (the hook itself gives up after 8 s, with a log
# line). SessionEnd's is explicit because Claude Code's default for it is 1.5 s.
TIMEOUTS = {"SessionStart": 10, "UserPromptSubmit": 10, "PreCompact": 10, "SessionEnd": 10}
HOOK_SCRIPT = "graymatter-tui-hook"
HOOK_MODULE = "graymatter_tui.hooks"
CONFIG_DIR_VARIABLE = "CLAUDE_CONFIG_DIR"


def user_settings_path() -> Path:
    configured = os.environ.get(CONFIG_DIR_VARIABLE, "").strip()
    base = Path(configured).expanduser() if configured else Path.home() / ".claude"
    return base / "settings.json"


def project_settings_path(project: Path, *, shared: bool = False) -> Path:
    name = "settings.json" if shared else "settings.local.json"
    return project / ".claude" / name


def hook_command() -> list[str]:
    """The hook executable beside this Python (the venv this program runs from), by
    absolute path; else this Python running the module."""
    beside = Path(sys.executable).parent / HOOK_SCRIPT
    if beside.is_file():
        return [str(beside.absolute())]
    return [str(Path(sys.executable).absolute()), "-m", HOOK_MODULE]


def command_line(hook: HookOptions) -> str:
    return shlex.join([*hook_command(), *hook.args()])


def is_ours(handler: object) -> bool:
    if not isinstance(handler, dict) or handler.get("type") != "command":
        return False
    command = handler.get("command")
    if not isinstance(command, str):
        return False
    try:
        words = shlex.split(command)
    except ValueError:
        return False
    if not words:
        return False
    if Path(words[0]).name == HOOK_SCRIPT:
        return True
    return len(words) >= 3 and words[1] == "-m" and words[2] == HOOK_MODULE


@dataclass(frozen=True)
class Found:
    event: str
    command: str
    timeout: object


def ours(settings: dict[str, Any]) -> list[Found]:
    """Our handlers in `settings`, event by event."""
    out: list[Found] = []
    for event, handler in _handlers(settings):
        if is_ours(handler) and isinstance(handler, dict):
            out.append(Found(event, str(handler.get("command")), handler.get("timeout")))
    return out


def others(settings: dict[str, Any]) -> int:
    """How many handlers in `settings` are someone else's."""
    return sum(1 for _, handler in _handlers(settings) if not is_ours(handler))


def _handlers(settings: dict[str, Any]) -> Iterator[tuple[str, object]]:
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return
    for event, groups in hooks.items():
        if not isinstance(groups, list):
            continue
        for group in groups:
            handlers = group.get("hooks") if isinstance(group, dict) else None
            if isinstance(handlers, list):
                for handler in handlers:
                    yield str(event), handler


class BadShape(ValueError):
    """The settings' `hooks` is not shaped as Claude Code documents it."""


def _check_shape(settings: dict[str, Any]) -> dict[str, Any]:
    hooks = settings.setdefault("hooks", {})
    if not isinstance(hooks, dict):
        raise BadShape('its "hooks" is not an object')
    for event in EVENTS:
        groups = hooks.get(event)
        if groups is not None and not isinstance(groups, list):
            raise BadShape(f'its "hooks"."{event}" is not a list')
    return hooks


@dataclass
class Change:
    added: list[Found] = field(default_factory=list)
    removed: list[Found] = field(default_factory=list)

    @property
    def changed(self) -> bool:
        return bool(self.added or self.removed)


def _strip_ours(hooks: dict[str, Any], event: str, change: Change) -> int | None:
    """Take our handlers out of `event`'s groups (and groups left empty); the index
    where our group stood (None: there was none)."""
    groups = hooks.get(event)
    if not isinstance(groups, list):
        return None
    at: int | None = None
    kept: list[Any] = []
    for group in groups:
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if not isinstance(handlers, list):
            kept.append(group)
            continue
        mine = [h for h in handlers if is_ours(h)]
        if not mine:
            kept.append(group)
            continue
        for handler in mine:
            change.removed.append(Found(event, str(handler.get("command")), handler.get("timeout")))
        rest = [h for h in handlers if not is_ours(h)]
        if at is None:
            at = len(kept)
        if rest:
            kept.append({**group, "hooks": rest})
    if kept:
        hooks[event] = kept
    else:
        del hooks[event]
    return at


def install(settings: dict[str, Any], command: str) -> Change:
    """Put our handler (`command`) in every event of `settings`, in place of ours if there
    was one. Changes `settings`; the change is empty when it was already so."""
    hooks = _check_shape(settings)
    change = Change()
    for event in EVENTS:
        wanted = {"type": "command", "command": command, "timeout": TIMEOUTS[event]}
        current = [h for _, h in _handlers({"hooks": {event: hooks.get(event, [])}})]
        if [h for h in current if is_ours(h)] == [wanted] and _ours_alone(hooks, event):
            continue
        step = Change()
        at = _strip_ours(hooks, event, step)
        groups = hooks.setdefault(event, [])
        groups.insert(len(groups) if at is None else at, {"hooks": [wanted]})
        change.removed += step.removed
        change.added.append(Found(event, command, TIMEOUTS[event]))
    if not hooks:
        del settings["hooks"]
    return change


def _ours_alone(hooks: dict[str, Any], event: str) -> bool:
    """Whether our handler sits in a group of its own (as `install` puts it)."""
    for group in hooks.get(event, []):
        handlers = group.get("hooks") if isinstance(group, dict) else None
        if isinstance(handlers, list) and any(is_ours(h) for h in handlers):
            return len(handlers) == 1 and set(group) == {"hooks"}
    return False


def uninstall(settings: dict[str, Any]) -> Change:
    """Take every handler of ours out of `settings` (changes it)."""
    change = Change()
    hooks = settings.get("hooks")
    if not isinstance(hooks, dict):
        return change
    for event in list(hooks):
        if isinstance(hooks.get(event), list):
            _strip_ours(hooks, event, change)
    if not hooks and change.changed:
        del settings["hooks"]
    return change
