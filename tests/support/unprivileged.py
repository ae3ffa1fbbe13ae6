"""Running the real CLI (or a snippet) as an unprivileged user, and stores that this user
may read but not write.

Tests run as root on CI, and root ignores file modes, so a permission test run as root
proves nothing: these helpers drop to `nobody` in the child process. The interpreter may
live where `nobody` cannot execute it (here: under /root), so the child imports first and
drops its privileges before it touches any file of the test.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.conftest import FIXED_NOW, clean_env

NOBODY = 65534

# Everything the child may import later is imported while it is still root: the checkout,
# the virtual environment and the interpreter may all lie in directories `nobody` cannot
# enter (a fresh clone in a 0700 temp dir, a venv under it, Python under /root). That is
# every module of the package, the standard modules the commands import lazily, and
# py-lmdb's lazily loaded parts (an Environment opened and closed once in a temp dir).
_IMPORT_ALL = textwrap.dedent(
    """
    import os, sys, heapq, json, asyncio, importlib, pkgutil, tempfile, shutil
    import subprocess, contextlib, errno, stat, struct, hashlib, textwrap, unicodedata
    import graymatter_tui
    for _module in pkgutil.walk_packages(graymatter_tui.__path__, "graymatter_tui."):
        if not _module.name.endswith("__main__"):
            importlib.import_module(_module.name)
    import lmdb
    _scratch = tempfile.mkdtemp()
    lmdb.open(_scratch, max_dbs=4, lib_version=0).close()
    lmdb.open(_scratch, readonly=True, lock=False, max_dbs=4, lib_version=0).close()
    shutil.rmtree(_scratch)
    """
)
_DROP = textwrap.dedent(
    f"""
    os.setgroups([])
    os.setgid({NOBODY})
    os.setuid({NOBODY})
    """
)
_PRELUDE = _IMPORT_ALL + _DROP
_RUN_CLI = _PRELUDE + textwrap.dedent(
    """
    sys.argv = ["graymatter-tui", *sys.argv[1:]]
    graymatter_tui.cli.main()
    """
)

# Several CLI runs in one child: each through the tests' in-process runner (the same
# `main()`, streams, exit status and environment as a subprocess of its own), after one
# interpreter start and one import of everything instead of one per command. The
# runner, and the stream encodings it asks a real interpreter for, are loaded first.
_BATCH_MARK = "graymatter-batch-answers:"
_BATCH_IMPORTS = textwrap.dedent(
    f"""
    import os, sys
    sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
    import tests.support.cli_process as _runner
    _runner._subprocess_streams(
        tuple((n, os.environ[n]) for n in _runner._STREAM_VARIABLES if n in os.environ)
    )
    """
)
_BATCH_RUNS = textwrap.dedent(
    f"""
    import json as _json
    _answers = []
    for _args, _stdin in _json.loads(sys.argv[1]):
        _done = _runner.run_in_process(
            tuple(_args), (_stdin or "").encode(), dict(os.environ)
        )
        _answers.append([_done.returncode, _done.stdout, _done.stderr])
    print({_BATCH_MARK!r} + _json.dumps(_answers))
    """
)
BATCH_AS_NOBODY = _BATCH_IMPORTS + _PRELUDE + _BATCH_RUNS
BATCH_AS_ROOT = _BATCH_IMPORTS + _IMPORT_ALL + _BATCH_RUNS

# A CLI run of a batch: the command's arguments and what it reads on stdin (or None).
BatchRun = tuple[tuple[str, ...], str | None]


def batch_answers(
    runs: list[BatchRun], done: subprocess.CompletedProcess[str]
) -> list[subprocess.CompletedProcess[str]]:
    """Each run's own exit status and streams, out of the child that ran them all."""
    marked = [line for line in done.stdout.splitlines() if line.startswith(_BATCH_MARK)]
    assert done.returncode == 0 and marked, (done.returncode, done.stdout, done.stderr)
    answers = json.loads(marked[-1][len(_BATCH_MARK) :])
    return [
        subprocess.CompletedProcess(["graymatter-tui", *args], code, out, err)
        for (args, _stdin), (code, out, err) in zip(runs, answers, strict=True)
    ]


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root to switch to the unprivileged user nobody (65534)")


@contextmanager
def public_tmp() -> Iterator[Path]:
    """A root-owned 0755 directory under /tmp that `nobody` can traverse (tmp_path cannot)."""
    need_root()
    path = Path(tempfile.mkdtemp(prefix="gm-perm-"))
    path.chmod(0o755)
    try:
        yield path
    finally:
        for root, dirs, _files in os.walk(path):
            for name in dirs:
                os.chmod(os.path.join(root, name), 0o700)
        shutil.rmtree(path, ignore_errors=True)


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    return clean_env({"GRAYMATTER_NOW": FIXED_NOW, **(extra or {})})


def _run(
    code: str, args: tuple[str, ...], env: Mapping[str, str] | None, input: str | None
) -> subprocess.CompletedProcess[str]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", code, *args],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=_env(env),
            cwd="/",
            input=input if input is not None else "",
            timeout=120,
            check=False,
        )
    except OSError as exc:
        pytest.skip(f"cannot start a subprocess as nobody: {exc}")
    if "PermissionError" in done.stderr and "setuid" in done.stderr:
        pytest.skip("cannot switch to the nobody user here")
    return done


def cli_as_nobody(
    *args: str, env: Mapping[str, str] | None = None, input: str | None = None
) -> subprocess.CompletedProcess[str]:
    """`graymatter-tui ARGS` as nobody."""
    return _run(_RUN_CLI, args, env, input)


def cli_batch_as_nobody(
    runs: list[BatchRun], env: Mapping[str, str] | None = None
) -> list[subprocess.CompletedProcess[str]]:
    """Each `graymatter-tui ARGS` of `runs`, as nobody, in one child process."""
    return batch_answers(runs, _run(BATCH_AS_NOBODY, (json.dumps(runs),), env, None))


def python_as_nobody(
    snippet: str, *args: str, imports: str = "", env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run `snippet` as nobody (after `imports`, run before the privilege drop);
    sys.argv[1:] are `args`."""
    code = textwrap.dedent(imports) + _PRELUDE + textwrap.dedent(snippet)
    return _run(code, args, env, None)


def give_to_nobody(path: Path) -> None:
    for root, dirs, files in os.walk(path):
        os.chown(root, NOBODY, NOBODY)
        for name in dirs + files:
            os.chown(os.path.join(root, name), NOBODY, NOBODY)
