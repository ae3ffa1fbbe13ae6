"""Stores this user may read but not write: every read command works, every write says the
store is read-only for this user and writes nothing. A read command never creates a store.

Permission cases run the CLI as `nobody` (root ignores file modes); the read-only mount
case runs as root inside a private mount namespace, where even root cannot write.

LMDB only: file modes and mounts of a store directory.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.core.errors import StoreError
from graymatter_tui.storage import NewFact
from tests.conftest import FIXED_NOW, clean_env, run_graymatter
from tests.support.unprivileged import (
    BATCH_AS_ROOT,
    BatchRun,
    batch_answers,
    cli_batch_as_nobody,
    give_to_nobody,
    public_tmp,
    python_as_nobody,
)

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

READ_ONLY = "is read-only for this user"
LOCKLESS = "without LMDB's reader lock"
AGENT = "ops"


@dataclass
class Seeded:
    path: Path
    ids: list[str]
    pinned: str
    cycle: str


def seed(path: Path) -> Seeded:
    with LmdbStore.open(path) as store:
        facts = store.put_many(
            [
                NewFact(AGENT, "Deploys happen on Tuesdays."),
                NewFact(AGENT, "The deploy key is in the vault.", pinned=True),
                NewFact(AGENT, "Staging listens on port 5432."),
            ]
        )
        record = Cycle(store, AGENT, None).run_sync()
    return Seeded(path, [f.id for f in facts], facts[1].id, record.cycle_id)


def digest(path: Path) -> str:
    return hashlib.sha256((path / "data.mdb").read_bytes()).hexdigest()


# ---- the kinds of store this user cannot write -----------------------------------------------

# Runs a batch of CLI commands (arguments, stdin) as this user, each as its own command.
Runner = Callable[[list[BatchRun]], list[subprocess.CompletedProcess[str]]]


def _another_users_store(path: Path) -> None:
    path.chmod(0o755)  # root's store, readable by everyone
    for name in ("data.mdb", "lock.mdb"):
        (path / name).chmod(0o644)


def _own_store_0500(path: Path) -> None:
    give_to_nobody(path)
    for name in ("data.mdb", "lock.mdb"):
        (path / name).chmod(0o400)
    path.chmod(0o500)


def _own_data_file_0400(path: Path) -> None:
    give_to_nobody(path)
    (path / "data.mdb").chmod(0o400)  # the lock file stays writable


@dataclass(frozen=True)
class Case:
    prepare: Callable[[Path], None]
    lockless: bool  # lock.mdb cannot be written: readers go without LMDB's lock


CASES = {
    "another user's store (0755, 0644)": Case(_another_users_store, lockless=True),
    "own store, directory 0500, files 0400": Case(_own_store_0500, lockless=True),
    "own store, data.mdb 0400": Case(_own_data_file_0400, lockless=False),
    "read-only mount": Case(lambda path: None, lockless=True),
}


def on_read_only_mount(path: Path) -> Runner:
    """Run the CLI as root with `path` bind-mounted read-only over itself."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs root and unshare(1) for a private read-only mount")

    def run(runs: list[BatchRun]) -> list[subprocess.CompletedProcess[str]]:
        script = 'mount --bind -o ro "$1" "$1" || exit 97; shift; exec "$@"'
        done = subprocess.run(
            [
                "unshare",
                "-m",
                "sh",
                "-c",
                script,
                "sh",
                str(path),
                sys.executable,
                "-c",
                BATCH_AS_ROOT,
                json.dumps(runs),
            ],
            capture_output=True,
            text=True,
            encoding="utf-8",
            env=clean_env({"GRAYMATTER_NOW": FIXED_NOW}),
            cwd="/",
            stdin=subprocess.DEVNULL,
            timeout=300,
            check=False,
        )
        if done.returncode == 97 or done.stderr.startswith("unshare:"):
            pytest.skip(f"cannot make a private read-only mount here: {done.stderr.strip()}")
        return batch_answers(runs, done)

    return run


@pytest.fixture(params=list(CASES))
def unwritable(request: pytest.FixtureRequest) -> Iterator[tuple[Seeded, Runner, Case]]:
    case = CASES[request.param]
    with public_tmp() as base:
        seeded = seed(base / "store")
        case.prepare(seeded.path)
        runner = on_read_only_mount(seeded.path) if request.param == "read-only mount" else None
        yield seeded, runner or cli_batch_as_nobody, case


def reads(s: Seeded) -> dict[tuple[str, ...], Callable[[str], None]]:
    """Each read command and a check of what it printed."""

    def facts(out: str) -> None:
        assert sorted(f["id"] for f in json.loads(out)) == sorted(s.ids)

    def shown(out: str) -> None:
        assert json.loads(out)["fact"]["id"] == s.pinned

    def status(out: str) -> None:
        assert json.loads(out)["live_facts"] == 3

    def journal(out: str) -> None:
        assert [r["cycle_id"] for r in json.loads(out)] == [s.cycle]

    def record(out: str) -> None:
        assert json.loads(out)["cycle_id"] == s.cycle

    def export(out: str) -> None:
        lines = [json.loads(line) for line in out.splitlines()]
        assert sum(line["type"] == "fact" for line in lines) == 3

    def recall(out: str) -> None:
        assert s.pinned in [hit["id"] for hit in json.loads(out)]

    def doctor(out: str) -> None:
        report = json.loads(out)
        by_name = {c["name"]: c for c in report["checks"]}
        assert by_name["store"]["status"] == "ok", report
        assert "read-only" in by_name["data_dir"]["detail"] + by_name["files"]["detail"]
        walker = by_name["integrity"]
        if walker["status"] == "fail" and "cannot start the integrity walker" in walker["detail"]:
            # This interpreter lives where nobody may not execute it (under /root here); a
            # user's own interpreter is theirs to run. Everything else must hold.
            assert [c["name"] for c in report["checks"] if c["status"] == "fail"] == ["integrity"]
            return
        assert report["ok"] is True, report
        assert walker["status"] == "ok"

    d = "--dir", str(s.path)
    return {
        ("list", *d, "--state", "all", "--json"): facts,
        ("show", s.pinned, *d, "--json"): shown,
        ("status", *d, "--json"): status,
        ("journal", *d, "--json"): journal,
        ("journal", "show", s.cycle, *d, "--json"): record,
        ("export", *d): export,
        ("recall", AGENT, "deploy key", "--preview", *d, "--json"): recall,
        ("doctor", *d, "--json"): doctor,
    }


def test_every_read_command_reads_a_store_it_cannot_write(
    unwritable: tuple[Seeded, Runner, Case],
) -> None:
    seeded, run, case = unwritable
    before = digest(seeded.path)
    checks = reads(seeded)
    answers = run([(args, None) for args in checks])
    for (args, check), done in zip(checks.items(), answers, strict=True):
        assert done.returncode == (1 if '"integrity","status":"fail"' in done.stdout else 0), (
            args,
            done.stderr,
        )
        check(done.stdout)
        notes = done.stderr.strip().splitlines()
        if case.lockless and args[0] != "doctor":
            assert len(notes) == 1 and LOCKLESS in notes[0], (args, done.stderr)
            assert notes[0].startswith("graymatter-tui: note:")
        elif args[0] != "doctor":
            assert notes == [], (args, done.stderr)
    assert digest(seeded.path) == before


def test_every_write_command_says_the_store_is_read_only(
    unwritable: tuple[Seeded, Runner, Case],
) -> None:
    seeded, run, _case = unwritable
    before = digest(seeded.path)
    # A file import accepts: a bad one is refused before the store is opened.
    line = json.dumps(
        {
            "id": "01KJMMA2G04J2TVMQ78GTHSH09",
            "agent_id": AGENT,
            "text": "x",
            "created_at": "2026-03-01T12:00:00Z",
        }
    )
    first = seeded.ids[0]
    writes: list[tuple[tuple[str, ...], str | None]] = [
        (("remember", AGENT, "a new fact"), None),
        (("pin", first), None),
        (("unpin", seeded.pinned), None),
        (("revise", first, "changed"), None),
        (("retire", first), None),
        (("recall", AGENT, "deploy key"), None),  # records the access: a write
        (("consolidate", AGENT), None),
        (("revert", seeded.cycle), None),
        (("import", "-"), line + "\n"),
        (("demo",), None),
    ]
    d = "--dir", str(seeded.path)
    answers = run([((*args, *d), stdin) for args, stdin in writes])
    for (args, _stdin), done in zip(writes, answers, strict=True):
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        lines = done.stderr.strip().splitlines()
        assert len(lines) == 1, (args, done.stderr)
        assert lines[0].startswith("graymatter-tui: error: the store at ")
        assert READ_ONLY in lines[0] and "nothing was written" in lines[0], lines[0]
        assert "Traceback" not in done.stderr and done.stdout == ""
    assert digest(seeded.path) == before


# ---- the TUI on a store this user cannot write -----------------------------------------------

# Everything the app loads lazily, imported while the interpreter's own files (under /root
# here) can still be read.
TUI_IMPORTS = """
from pathlib import Path
import termios, tty, fcntl, select, selectors, signal
import textual.drivers.linux_driver, textual.drivers.headless_driver, textual.pilot
import textual.widgets._toast, textual.widgets._toast as _t, textual.notifications
import rich.traceback
import graymatter_tui.tui.app
from graymatter_tui.tui.app import GraymatterApp
# Read the stylesheet now, as root: the checkout may lie where `nobody` cannot read it.
GraymatterApp.CSS = (Path(graymatter_tui.tui.app.__file__).parent / "app.tcss").read_text()
GraymatterApp.CSS_PATH = None


async def _warm_up():
    # Textual imports many modules only when a screen first needs them: run the app once,
    # as root, on a scratch store, so none is left to import after the privilege drop.
    import tempfile, shutil
    from graymatter_tui.core.config import Settings
    from graymatter_tui.backends.lmdb import LmdbStore
    scratch = tempfile.mkdtemp()
    scratch_store = LmdbStore.open(Path(scratch) / "s")
    scratch_store.put("ops", "warm-up")
    warm = GraymatterApp(store=scratch_store, settings=Settings.from_env(data_dir=scratch))
    warm.animation_level = "none"
    async with warm.run_test(size=(120, 36), notifications=True) as pilot:
        await pilot.pause()
        await pilot.press("p")
        await pilot.pause()
        warm.exit()
    scratch_store.close()
    shutil.rmtree(scratch)


import asyncio
asyncio.run(_warm_up())
"""

TUI_SNIPPET = """
path, flag = sys.argv[1], sys.argv[2] == "--read-only"
store, settings, read_only = graymatter_tui.cli.launch.open_for_tui(
    data_dir=Path(path), demo=False, read_only=flag, llm=None
)
app = GraymatterApp(store=store, settings=settings, read_only=read_only, agent="ops")
app.animation_level = "none"

async def main():
    async with app.run_test(size=(120, 36), notifications=True) as pilot:
        await pilot.pause()
        topbar = str(app.query_one("#topbar").content)
        await pilot.press("p")
        await pilot.pause()
        notes = [(n.severity, n.message) for n in app._notifications]
        app.exit()
    print(json.dumps({"read_only": read_only, "topbar": topbar, "notes": notes,
                      "live": len(store.list_facts("ops"))}))

asyncio.run(main())
"""


@pytest.mark.parametrize("flag", ["--read-only", "(no flag)"])
def test_the_tui_opens_a_store_it_cannot_write_read_only(flag: str) -> None:
    with public_tmp() as base:
        seeded = seed(base / "store")
        _another_users_store(seeded.path)
        before = digest(seeded.path)
        done = python_as_nobody(
            TUI_SNIPPET,
            str(seeded.path),
            flag,
            imports=TUI_IMPORTS,
        )
        assert done.returncode == 0, done.stderr
        shown = json.loads(done.stdout.strip().splitlines()[-1])
        assert shown["read_only"] is True
        assert "[READ-ONLY] [NO LOCK]" in shown["topbar"]  # lock.mdb is root's
        assert shown["live"] == 3
        assert ["warning", "Read-only mode: changes are disabled."] in shown["notes"]
        assert digest(seeded.path) == before


# ---- a read command never creates a store ----------------------------------------------------

# Each read command on no store, and what an empty store answers.
EMPTY_READS: dict[tuple[str, ...], object] = {
    ("list", "--json"): [],
    ("list",): "no facts",
    ("status", "--json"): 0,  # live facts
    ("journal", "--json"): [],
    ("export",): "header",  # the only line
    ("recall", "a", "query", "--preview", "--json"): [],
}


def empty_answer(args: tuple[str, ...], out: str) -> object:
    if args[0] == "status":
        return json.loads(out)["live_facts"]
    if args[0] == "export":
        return "".join(json.loads(line)["type"] for line in out.splitlines())
    return json.loads(out) if "--json" in args else out.strip()


@pytest.mark.parametrize("args", list(EMPTY_READS), ids=" ".join)
@pytest.mark.parametrize("where", ["missing dir", "empty dir"])
def test_a_read_command_on_no_store_shows_an_empty_one_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...], where: str
) -> None:
    path = tmp_path / "nothing-here"
    if where == "empty dir":
        path.mkdir()
    done = run_graymatter("--dir", str(path), *args)
    assert done.returncode == 0, done.stderr
    assert empty_answer(args, done.stdout) == EMPTY_READS[args]
    if where == "missing dir":
        assert not path.exists()
    else:
        assert list(path.iterdir()) == []


@pytest.mark.parametrize(
    "args",
    [("show", "01KJMMA2G04J2TVMQ78GTHSH09"), ("journal", "show", "01KJMMA2G04J2TVMQ78GTHSH09")],
    ids=" ".join,
)
def test_a_lookup_on_no_store_is_not_found_and_creates_nothing(
    tmp_path: Path, args: tuple[str, ...]
) -> None:
    path = tmp_path / "nothing-here"
    done = run_graymatter("--dir", str(path), *args)
    assert done.returncode == 1 and "no " in done.stderr and "Traceback" not in done.stderr
    assert not path.exists()


def test_doctor_on_no_store_fails_and_creates_nothing(tmp_path: Path) -> None:
    for path in (tmp_path / "missing", tmp_path / "empty"):
        if path.name == "empty":
            path.mkdir()
        done = run_graymatter("--dir", str(path), "doctor", "--json")
        assert done.returncode == 1, done.stdout
        assert json.loads(done.stdout)["ok"] is False
        assert not (path / "data.mdb").exists()
    assert not (tmp_path / "missing").exists()


# ---- in-process: a store opened read-only ----------------------------------------------------


def test_a_store_opened_read_only_refuses_writes_clearly(tmp_path: Path) -> None:
    seeded = seed(tmp_path / "store")
    before = digest(seeded.path)
    store = LmdbStore.open(seeded.path, read_only=True)
    try:
        assert len(store.list_facts(AGENT)) == 3
        for write in (
            lambda: store.put(AGENT, "x"),
            lambda: store.pin(seeded.ids[0]),
            lambda: store.put_many([NewFact(AGENT, "y")]),
        ):
            with pytest.raises(StoreError) as caught:
                write()
            message = str(caught.value)
            assert "read-only" in message and "nothing was written" in message
            assert str(seeded.path) in message
    finally:
        store.close()
    assert digest(seeded.path) == before


def test_a_read_only_view_of_no_store_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none"
    store = LmdbStore.open(path, read_only=True)
    try:
        assert store.agents() == [] and store.records() == []
        assert store.info().data_dir == str(path)
        with pytest.raises(StoreError, match="nothing was written"):
            store.put(AGENT, "x")
    finally:
        store.close()
    assert not path.exists()
