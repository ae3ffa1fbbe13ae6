"""The hook's work for one event, done where it cannot hold up the client: in a forked
child the caller stops waiting for after `DEADLINE_SECONDS` (`entry` runs it directly when
no helper answers; the helper runs it for each request it is handed).

It reads the event (JSON, as Claude Code sends it), does the event's work (`events`) and
returns what to print as Claude Code reads it: a JSON object `{"hookSpecificOutput":
{"hookEventName": …, "additionalContext": …}}`, with `systemMessage` for a line the person
should see, or nothing. Whatever goes wrong — input that is not JSON or not there, an
unknown event, a prompt of megabytes, a store it cannot open, a bug, a store whose lock
another process holds for too long — the answer is nothing, and one line goes to the hook
log under the data dir (`hook_log`). Nothing here ever makes the hook exit non-zero
(exit 2 would block a compaction or erase a prompt)."""

from __future__ import annotations

import contextlib
import io
import json
import os
import select
import signal
import time
from pathlib import Path
from typing import Any, BinaryIO

from graymatter_tui.core import provenance
from graymatter_tui.core.config import Settings, default_data_dir
from graymatter_tui.core.errors import GraymatterError, InvalidInput
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.hooks import hook_log, options
from graymatter_tui.hooks.project import agent_for_directory, project_dir
from graymatter_tui.hooks.wire import DEADLINE_SECONDS, MAX_INPUT_BYTES


class HookFailure(Exception):
    """A failure worth one log line, already worded for it."""


def _settings(hook: options.HookOptions | None) -> Settings:
    if hook is None:
        return Settings.from_env()
    return Settings.from_env(data_dir=hook.data_dir, store=hook.store)


def _read_event(stream: BinaryIO) -> dict[str, Any]:
    raw = stream.read(MAX_INPUT_BYTES + 1)
    if len(raw) > MAX_INPUT_BYTES:
        raise HookFailure(f"the event on stdin is over {MAX_INPUT_BYTES // (1024 * 1024)} MiB")
    if not raw.strip():
        raise HookFailure("no event on stdin")
    try:
        payload = json.loads(raw)
    except ValueError as exc:
        raise HookFailure(f"the event on stdin is not JSON ({exc})") from None
    if not isinstance(payload, dict):
        raise HookFailure("the event on stdin is not a JSON object")
    return payload


def _agent(hook: options.HookOptions, payload: dict[str, Any]) -> str:
    if hook.agent is not None:
        return validate_agent(hook.agent)
    return agent_for_directory(project_dir(payload.get("cwd")))


def respond(event: str, context: str, message: str) -> str:
    """The stdout Claude Code reads for `event` ("" for nothing to say)."""
    from graymatter_tui.hooks.events import INJECTING

    if event not in INJECTING or not (context or message):
        return ""
    out: dict[str, Any] = {}
    if context:
        out["hookSpecificOutput"] = {"hookEventName": event, "additionalContext": context}
    if message:
        out["systemMessage"] = message
    return json.dumps(out, ensure_ascii=False)


class Progress:
    """How far a run got, for its log line when it fails: the data dir once the options
    are read, the event once the input is."""

    def __init__(self) -> None:
        self.data_dir: Path | None = None
        self.event = "-"


def run(
    argv: list[str], stdin: BinaryIO, progress: Progress | None = None
) -> tuple[str, list[str]]:
    """Handle one event: (stdout text, lines for the log)."""
    from graymatter_tui.hooks import events

    progress = progress or Progress()
    hook = options.parse(argv)
    settings = _settings(hook)
    progress.data_dir = settings.data_dir
    provenance.name_process(provenance.hook_source(hook.client))
    payload = _read_event(stdin)
    event = payload.get("hook_event_name")
    if not isinstance(event, str) or event not in events.HANDLERS:
        shown = event[:60] if isinstance(event, str) else repr(event)[:60]
        raise HookFailure(f"not an event this hook handles: {shown}")
    progress.event = event
    current = events.Run(hook, event, payload, settings, _agent(hook, payload))
    try:
        reply = events.HANDLERS[event](current)
    except GraymatterError as exc:
        raise HookFailure(str(exc)) from None
    return respond(event, reply.context, reply.message), current.notes


def _fallback_data_dir(argv: list[str]) -> Path:
    """Where to log when the run failed before its settings were made: the `--dir` or
    `--store` of the command even when the rest of it is wrong, else the default."""
    wanted: dict[str, str] = {}
    for position, word in enumerate(argv):
        name, equals, value = word.partition("=")
        if name in ("--dir", "--store"):
            if equals:
                wanted[name] = value
            elif position + 1 < len(argv):
                wanted[name] = argv[position + 1]
    try:
        return Settings.from_env(data_dir=wanted.get("--dir"), store=wanted.get("--store")).data_dir
    except (GraymatterError, ValueError, OSError):
        pass
    try:
        return _settings(None).data_dir
    except (GraymatterError, ValueError, OSError):
        return default_data_dir()


def outcome_here(argv: list[str], stdin: BinaryIO) -> dict[str, Any]:
    """The run's result as a plain object: what to print, what to log, and where."""
    progress = Progress()
    result: dict[str, Any] = {"text": "", "log": []}
    try:
        text, notes = run(argv, stdin, progress)
        result["text"] = text
        result["log"] = [["ok", note] for note in notes]
    except (HookFailure, InvalidInput) as exc:
        result["log"] = [[hook_log.FAILED, str(exc)]]
    except BaseException as exc:  # a bug, or the store's own failure: never the session's
        result["log"] = [[hook_log.FAILED, f"{type(exc).__name__}: {exc}"]]
    result["data_dir"] = str(progress.data_dir or _fallback_data_dir(argv))
    result["event"] = progress.event
    return result


def _in_child(argv: list[str], stdin: BinaryIO) -> dict[str, Any] | None:
    """`outcome_here` computed in a forked child, waited for at most `DEADLINE_SECONDS`.

    A store write can wait on another process's lock inside the LMDB library, holding
    Python's lock meanwhile, so nothing in the process doing the work could give up on
    time; the parent can. On the deadline the child is killed (its open transaction
    never commits: nothing is half-written) and None is returned."""
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: do the work, hand back the outcome, go
        os.close(read_end)
        try:
            data = json.dumps(outcome_here(argv, stdin)).encode()
            view = memoryview(data)
            while view:
                view = view[os.write(write_end, view) :]
        finally:
            os._exit(0)
    os.close(write_end)
    chunks: list[bytes] = []
    deadline = time.monotonic() + DEADLINE_SECONDS
    try:
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([read_end], [], [], max(left, 0))
            if not ready:
                os.kill(pid, signal.SIGKILL)
                return None
            chunk = os.read(read_end, 65536)
            if not chunk:
                break
            chunks.append(chunk)
    finally:
        os.close(read_end)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, 0)
    try:
        outcome = json.loads(b"".join(chunks))
    except ValueError:
        return {"text": "", "log": [[hook_log.FAILED, "the hook's worker died"]], "event": "-"}
    return outcome if isinstance(outcome, dict) else None


def _event_name(raw: bytes) -> str:
    try:
        name = json.loads(raw).get("hook_event_name")
    except (ValueError, AttributeError):
        return "-"
    return name[:60] if isinstance(name, str) else "-"


def gave_up(raw: bytes) -> dict[str, Any]:
    return {
        "text": "",
        "log": [[hook_log.FAILED, f"gave up after {DEADLINE_SECONDS:g} s (a store busy?)"]],
        "event": _event_name(raw),
    }


def write_log(outcome: dict[str, Any], argv: list[str]) -> None:
    where = Path(outcome.get("data_dir") or _fallback_data_dir(argv))
    for kind, line in outcome.get("log", []):
        hook_log.write(where, str(outcome.get("event", "-")), str(kind), str(line))


def handle(argv: list[str], raw: bytes) -> str:
    """One event from start to end in a forked child: what to print ("" for nothing),
    the log lines written. Never raises (see the module's doc)."""
    outcome = _in_child(argv, io.BytesIO(raw)) or gave_up(raw)
    write_log(outcome, argv)
    text = outcome.get("text")
    return text if isinstance(text, str) else ""
