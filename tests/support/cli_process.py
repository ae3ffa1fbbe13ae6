"""Running the CLI for a test: in this process through `graymatter_tui.cli.main`, or in a
real `python -m graymatter_tui` subprocess.

Most CLI tests are about what a command does, not about the process it runs in, and a
fresh interpreter costs about half a second here. `run_in_process` gives such a test the
same thing a subprocess would: the same `main()` (its own error handling and exit codes),
an environment that is exactly the subprocess's (`clean_env`, installed for the call and
taken away after it), standard streams that are real files (an export to stdout writes
to file descriptor 1 itself) with the subprocess's encodings, and a process state that
starts as a new process's (the provenance name, the id generator, no local embedding model
loaded) and is put back after.

A run goes to a real subprocess whenever in-process would not be the same:
- a store is already open in this process (LMDB opens a directory once per process: the
  CLI would be handed the test's own store, clock and all);
- no subcommand (the TUI) or `mcp` (a server that owns its process and signals; not
  `mcp --print-config`, which only prints);
- GRAYMATTER_TEST_CLI=subprocess, which sends every run to a subprocess (the whole suite
  can still be run that way, e.g. to check that nothing depends on in-process running).
Tests whose subject is the process boundary (exit status of a crash, signals, stdin,
broken pipes) call `run_graymatter` or their own subprocess directly.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import os
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable, Mapping

# Read once, at import: the tests' fixtures remove GRAYMATTER_* from the environment.
FORCE_SUBPROCESS = os.environ.get("GRAYMATTER_TEST_CLI", "").strip() == "subprocess"
# Runs that own their process: the TUI (no subcommand) and the MCP server.
_OWN_PROCESS = frozenset({"mcp"})
# What decides the encodings of a new interpreter's standard streams.
_STREAM_VARIABLES = ("PYTHONIOENCODING", "PYTHONUTF8", "LANG", "LC_ALL", "LC_CTYPE", "PATH")


@functools.cache
def _subprocess_streams(env_key: tuple[tuple[str, str], ...]) -> dict[str, object]:
    """The encodings and error handlers a `python -m graymatter_tui` subprocess with
    this environment gets on its standard streams (asked once of a real one)."""
    probe = (
        "import json, sys; print(json.dumps({n: [getattr(sys, n).encoding, "
        "getattr(sys, n).errors] for n in ('stdin', 'stdout', 'stderr')}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        env=dict(env_key),
        timeout=60,
        check=True,
        stdin=subprocess.DEVNULL,
    )
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


def _subcommand(args: tuple[str, ...]) -> str | None:
    """The subcommand `args` name, or None for the TUI (options before it are skipped,
    with the value of those that take one)."""
    from graymatter_tui.cli import cli

    takes_value = {
        name
        for param in cli.params
        if not getattr(param, "is_flag", False) and param.param_type_name == "option"
        for name in param.opts
    }
    index = 0
    while index < len(args):
        arg = args[index]
        if arg in ("--help", "-h", "--version"):
            return arg
        if arg.startswith("-"):
            index += 2 if arg in takes_value else 1
            continue
        return arg
    return None


def store_open_here() -> bool:
    """Whether this process holds an open LMDB store (the CLI would share it)."""
    from graymatter_tui.backends.lmdb import registry

    return any(not opened.closed for opened in registry._open.values())


def wants_subprocess(args: tuple[str, ...]) -> bool:
    if FORCE_SUBPROCESS or store_open_here():
        return True
    command = _subcommand(args)
    if command == "mcp" and "--print-config" in args:
        return False  # prints a client's snippet and ends: no server starts
    return command is None or command in _OWN_PROCESS


def _stream(data: bytes, streams: Mapping[str, object], name: str, mode: str) -> io.TextIOWrapper:
    raw = tempfile.TemporaryFile(mode="w+b", buffering=0)  # noqa: SIM115 (closed by the caller)
    if data:
        raw.write(data)
        raw.seek(0)
    buffered: io.BufferedIOBase = (
        io.BufferedReader(raw) if mode == "r" else io.BufferedWriter(raw)  # type: ignore[arg-type]
    )
    encoding, errors = streams[name]  # type: ignore[misc]
    return io.TextIOWrapper(buffered, encoding=encoding, errors=errors, write_through=False)


def _read_back(stream: io.TextIOWrapper) -> str:
    with contextlib.suppress(OSError, ValueError):
        stream.flush()
    raw = stream.buffer.raw  # type: ignore[attr-defined]
    raw.seek(0)
    data: bytes = raw.read()
    return data.decode("utf-8", errors="replace")


def _exit_status(code: object) -> tuple[int, str]:
    """What the interpreter makes of `sys.exit(code)`: the status, and what it prints."""
    if code is None:
        return 0, ""
    if isinstance(code, int):
        return code & 0xFF, ""
    return 1, f"{code}\n"


def run_in_process(
    args: tuple[str, ...],
    data: bytes,
    env: Mapping[str, str],
) -> subprocess.CompletedProcess[str]:
    """`python -m graymatter_tui ARGS` with `data` on stdin and exactly `env`, run through
    `main()` in this process."""
    from graymatter_tui.backends.lmdb import registry
    from graymatter_tui.cli import main
    from graymatter_tui.core import provenance
    from graymatter_tui.embedding import local
    from graymatter_tui.storage import ids

    streams = _subprocess_streams(
        tuple((name, env[name]) for name in _STREAM_VARIABLES if name in env)
    )
    saved_env = dict(os.environ)
    saved_streams = (sys.stdin, sys.stdout, sys.stderr, sys.argv)
    saved_ids = (ids._seeded, ids._last_ms, ids._last_time, ids._last_random)
    saved_source = provenance._process_source
    saved_models = (dict(local._LOADED), dict(local._FAILED))
    stdin = _stream(data, streams, "stdin", "r")
    stdout = _stream(b"", streams, "stdout", "w")
    stderr = _stream(b"", streams, "stderr", "w")
    before = set(registry._open.values())
    status = 0
    try:
        os.environ.clear()
        os.environ.update(env)
        # A new process: unseeded ids, nothing minted yet, writing as the library.
        ids.seed_ids(None)
        provenance.name_process(provenance.LIBRARY)
        # ... and no local model loaded or refused yet (each is checked once per process).
        local._LOADED.clear()
        local._FAILED.clear()
        sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
        sys.argv = [os.path.join(os.path.dirname(main.__code__.co_filename), "__main__.py")]
        sys.argv += list(args)
        try:
            main()
            sys.stdout.flush()
        except SystemExit as exc:
            status, printed = _exit_status(exc.code)
            sys.stderr.write(printed)
        except BaseException:  # what the interpreter does with an uncaught exception
            traceback.print_exc(file=sys.stderr)
            status = 1
        out, err = _read_back(stdout), _read_back(stderr)
    finally:
        sys.stdin, sys.stdout, sys.stderr, sys.argv = saved_streams
        os.environ.clear()
        os.environ.update(saved_env)
        ids._seeded, ids._last_ms, ids._last_time, ids._last_random = saved_ids
        provenance.name_process(saved_source)
        local._LOADED.clear()
        local._LOADED.update(saved_models[0])
        local._FAILED.clear()
        local._FAILED.update(saved_models[1])
        # A process that ends closes what it left open; so does this run.
        for opened in set(registry._open.values()) - before:
            close: Callable[[], None] | None = getattr(opened, "close", None)
            if close is not None and not opened.closed:
                close()
        for stream in (stdin, stdout, stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
    return subprocess.CompletedProcess(
        [sys.executable, "-m", "graymatter_tui", *args], status, out, err
    )
