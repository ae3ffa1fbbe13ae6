"""Running the real CLI (or a snippet) as an unprivileged user, and stores that this user
may read but not write.

Tests run as root on CI, and root ignores file modes, so a permission test run as root
proves nothing: these helpers drop to `nobody` in the child process. The interpreter may
live where `nobody` cannot execute it (here: under /root), so the child imports first and
drops its privileges before it touches any file of the test.
"""

from __future__ import annotations

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
_PRELUDE = textwrap.dedent(
    f"""
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
    os.setgroups([])
    os.setgid({NOBODY})
    os.setuid({NOBODY})
    """
)
_RUN_CLI = _PRELUDE + textwrap.dedent(
    """
    sys.argv = ["graymatter-tui", *sys.argv[1:]]
    graymatter_tui.cli.main()
    """
)


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
