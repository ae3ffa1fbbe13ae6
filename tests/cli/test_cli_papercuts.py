"""Small command-line behaviours people trip over: a no-op revision, the newline `echo`
adds on standard input, and a reader that closes the pipe early (`| head`)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.model import CycleRecord
from graymatter_tui.storage import NewFact
from tests.conftest import FIXED_NOW, clean_env

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]


# ---- revise with unchanged text -------------------------------------------------------------


def test_revise_with_unchanged_text_is_refused_and_writes_nothing(
    run_cli: RunCli, cli_dir: Path
) -> None:
    fact_id = run_cli("remember", "a", "Port 5432.").stdout.strip()
    before = run_cli("list", "a", "--state", "all", "--json").stdout
    status = json.loads(run_cli("status", "--json").stdout)

    done = run_cli("revise", fact_id, "Port 5432.")
    assert done.returncode == 1, done
    assert done.stderr.strip() == "graymatter-tui: error: text is unchanged; nothing revised"
    assert done.stdout == ""
    assert run_cli("list", "a", "--state", "all", "--json").stdout == before
    assert json.loads(run_cli("status", "--json").stdout)["generation"] == status["generation"]

    # the same text on standard input, newline and all, is unchanged too
    done = run_cli("revise", fact_id, "-", input="Port 5432.\n")
    assert done.returncode == 1 and "text is unchanged" in done.stderr
    # a real change still works
    assert run_cli("revise", fact_id, "Port 6543.").returncode == 0


# ---- standard input keeps no trailing newline ------------------------------------------------


@pytest.mark.parametrize(
    ("sent", "stored"),
    [
        ("Port 5432.\n", "Port 5432."),
        ("Port 5432.\r\n", "Port 5432."),
        ("Port 5432.\n\n\r\n\n", "Port 5432."),
        ("line one\nline two\n", "line one\nline two"),
        ("  indented, trailing spaces kept  \n", "  indented, trailing spaces kept  "),
        ("no newline", "no newline"),
        ("\nleading newline kept\n", "\nleading newline kept"),
    ],
)
def test_text_on_stdin_loses_its_trailing_newlines(run_cli: RunCli, sent: str, stored: str) -> None:
    remembered = json.loads(run_cli("remember", "a", "-", "--json", input=sent).stdout)
    assert remembered["text"] == stored
    revised = json.loads(
        run_cli("revise", remembered["id"], "-", "--json", input=sent + "v2\n").stdout
    )
    assert revised["text"] == sent + "v2"


def test_only_newlines_on_stdin_is_empty_text(run_cli: RunCli) -> None:
    done = run_cli("remember", "a", "-", input="\n\r\n\n")
    assert done.returncode == 1 and "text is empty" in done.stderr


# ---- a reader that stops reading ------------------------------------------------------------


@pytest.fixture
def big_store(cli_dir: Path) -> Path:
    """Enough facts and journal records that every command below prints far more than a
    pipe holds (64 KiB), so the writer is still writing when the reader has gone."""
    with LmdbStore.open(cli_dir) as store:
        store.put_many(NewFact("a", f"fact number {i} " + "padding " * 12) for i in range(2000))
        records = [
            CycleRecord(
                cycle_id=f"01KJ{i:022d}",
                agent_id="a",
                outcome="skipped",
                summariser="none",
                started_at="2026-03-01T12:00:00Z",
            )
            for i in range(1500)
        ]
        store.write(lambda tx: [tx.put_record(r) for r in records])
    return cli_dir


READ_A_LITTLE_THEN_QUIT = "import sys; sys.stdin.buffer.read(200)"


@pytest.mark.parametrize(
    "args",
    [("list",), ("list", "--json"), ("export",), ("export", "--format", "json"), ("journal",)],
    ids=lambda a: " ".join(a),
)
def test_a_closed_pipe_ends_the_command_quietly(big_store: Path, args: tuple[str, ...]) -> None:
    env = clean_env({"GRAYMATTER_DIR": str(big_store), "GRAYMATTER_NOW": FIXED_NOW})
    reader = subprocess.Popen(
        [sys.executable, "-c", READ_A_LITTLE_THEN_QUIT], stdin=subprocess.PIPE
    )
    assert reader.stdin is not None
    writer = subprocess.Popen(
        [sys.executable, "-m", "graymatter_tui", *args],
        stdout=reader.stdin,
        stderr=subprocess.PIPE,
        env=env,
    )
    reader.stdin.close()  # only the writer holds the pipe's write end now
    _out, err = writer.communicate(timeout=120)
    assert reader.wait(timeout=60) == 0
    assert err == b""
    assert writer.returncode == 0
