"""The CLI run in this process (`invoke_graymatter`, what `run_cli` and `any_cli` use) is
the CLI run as a real subprocess (`run_graymatter`): the same exit status, standard output
and standard error, byte for byte, for every kind of outcome — success, an error (1), a
usage error (2), input on stdin, an export written straight to file descriptor 1 and
non-ASCII text (timings aside). Each session runs on a store of its own; ids are seeded
and the clock pinned, so the two stores receive the same ids."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from tests.conftest import FIXED_NOW, clean_env, run_graymatter
from tests.support.cli_process import run_in_process

TIMINGS = re.compile(r'"(\w+_ms)":[0-9.]+')
Run = Callable[..., subprocess.CompletedProcess[str]]

SESSION: list[tuple[tuple[str, ...], str | None]] = [
    (("--version",), None),
    (("--help",), None),
    (("remember", "ops", "Deploys need two approvals — always"), None),
    (("remember", "ops", "-"), "read from stdin: the staging database listens on 5432\n"),
    (("remember", "ops", "a second fact about the staging database"), None),
    (("list", "ops", "--json"), None),
    (("list", "ops"), None),
    (("recall", "ops", "staging database", "--json"), None),
    (("status", "--json"), None),
    (("export",), None),
    (("export", "--format", "markdown"), None),
    (("show", "01KJMMA2G0AAAAAAAAAAAAAAAA"), None),  # no such fact: 1
    (("show", "not-an-id"), None),
    (("list", "--no-such-flag"), None),  # a usage error: 2
    (("remember", "ops", ""), None),
    (("consolidate", "ops", "--llm", "local", "--json"), None),
    (("journal", "--json"), None),
    (("doctor", "--json"), None),
]


def _session(run: Run, data_dir: Path) -> list[tuple[int, str, str]]:
    env = {"GRAYMATTER_DIR": str(data_dir), "GRAYMATTER_NOW": FIXED_NOW, "GRAYMATTER_ID_SEED": "7"}
    outcomes = []
    for args, stdin in SESSION:
        done = run(*args, input=stdin, env=env)
        same_place = (done.stdout + "\0" + done.stderr).replace(str(data_dir), "DATA_DIR")
        same_place = TIMINGS.sub(r'"\1":0', same_place)  # how long a stage took varies
        out, err = same_place.split("\0")
        outcomes.append((done.returncode, out, err))
    return outcomes


def _here(
    *args: str, input: str | bytes | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    data = input.encode("utf-8") if isinstance(input, str) else input
    return run_in_process(args, data or b"", clean_env(env))


def test_in_process_runs_answer_as_subprocesses_do(
    tmp_path: Path, clean_graymatter_env: None
) -> None:
    # This test compares the two ways, so "here" always runs in this process, even when
    # an earlier test file left a store of its own open (it is at another path: the CLI
    # shares nothing with it).
    here = _session(_here, tmp_path / "here")
    there = _session(run_graymatter, tmp_path / "there")
    for step, mine, theirs in zip(SESSION, here, there, strict=True):
        assert mine == theirs, step[0]
    codes = {code for code, _, _ in here}
    assert {0, 1, 2} <= codes  # every kind of outcome was compared
