"""Bad input through the real CLI: the right exit code, one clear line on stderr, nothing lost.

"Nothing lost" is checked two ways after every refused command: `list --state all --json`
and `status --json` (the real commands, run in-process with click's runner because they
only read) give what they gave before, and `data.mdb` is byte-for-byte unchanged.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import lmdb
import pytest
from click.testing import CliRunner

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.cli import cli
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.storage import NewFact

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]

UNKNOWN_ID = "01JC0000000000000000000001"
PREFIX = "graymatter-tui: error:"
TERMINAL_CONTROLS = ("\x1b", "\x07", "\x9b", "\x9d", "\u202e")


def one_line_error(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    """Assert a clean failure and return its one stderr line."""
    assert done.returncode == code, (done.args, done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip("\n").splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(PREFIX), lines[0]
    assert not any(c in done.stderr for c in TERMINAL_CONTROLS)
    return lines[0]


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def snapshot(data_dir: Path) -> tuple[Any, Any, str]:
    """What `list --state all --json` and `status --json` print, and data.mdb's hash."""
    runner = CliRunner()
    out = []
    for args in (["list", "--state", "all", "--json"], ["status", "--json"]):
        result = runner.invoke(cli, ["--dir", str(data_dir), *args], catch_exceptions=False)
        assert result.exit_code == 0, result.output
        out.append(json.loads(result.output))
    LmdbStore.open(data_dir).close()  # the runner left the store registered in this process
    return out[0], out[1], digest(data_dir / "data.mdb")


@pytest.fixture
def seeded(cli_dir: Path) -> Iterator[dict[str, str]]:
    """A store with live, pinned, revised and retired facts; checked unchanged at teardown."""
    with LmdbStore.open(cli_dir) as store:
        facts = store.put_many(
            [
                NewFact("support-bot", "Acme wants invoices by email."),
                NewFact("support-bot", "Refunds need a lead.", pinned=True),
                NewFact("ops-agent", "Port 5432."),
                NewFact("ops-agent", "Backups at 02:00."),
            ]
        )
        revision, _ = store.revise(facts[2].id, "Port 6543.")
        store.retire(facts[3].id)
    ids = {
        "live": facts[0].id,
        "pinned": facts[1].id,
        "revised": facts[2].id,
        "revision": revision.id,
        "retired": facts[3].id,
    }
    before = snapshot(cli_dir)
    assert len(before[0]) == 5
    yield ids
    assert snapshot(cli_dir) == before


# ---- refused commands on a good store ---------------------------------------------------

BIG = "x" * 65537
CASES: list[tuple[str, tuple[str, ...], str | None, str]] = [
    ("empty text", ("remember", "a", ""), None, "text is empty"),
    ("whitespace text", ("remember", "a", "  \n\t  "), None, "text is empty"),
    ("text over 64 KiB", ("remember", "a", BIG), None, "65537 bytes"),
    ("text over 64 KiB on stdin", ("remember", "a", "-"), BIG, "65537 bytes"),
    ("invalid UTF-8 on stdin", ("remember", "a", "-"), "\udcff", "UTF-8"),
    ("empty agent", ("remember", "", "text"), None, "agent name is empty"),
    ("agent of 257 bytes", ("remember", "a" * 257, "text"), None, "257 bytes"),
    ("agent with U+0001", ("remember", "bad\x01agent", "text"), None, "U+0001"),
    ("agent with bidi override", ("remember", "a\u202eb", "text"), None, "U+202E"),
    ("revise to empty text", ("revise", "{live}", " "), None, "text is empty"),
    ("show unknown id", ("show", UNKNOWN_ID), None, f"no fact with id {UNKNOWN_ID}"),
    ("pin unknown id", ("pin", UNKNOWN_ID), None, f"no fact with id {UNKNOWN_ID}"),
    ("revise unknown id", ("revise", UNKNOWN_ID, "new"), None, f"no fact with id {UNKNOWN_ID}"),
    ("retire unknown id", ("retire", UNKNOWN_ID), None, f"no fact with id {UNKNOWN_ID}"),
    ("show malformed id", ("show", "not-an-id"), None, "not a fact id"),
    ("show id with ESC", ("show", "\x1b[2J" + "0" * 22), None, "not a fact id"),
    ("pin a tombstone", ("pin", "{revised}"), None, "tombstone"),
    ("revise a tombstone", ("revise", "{revised}", "again"), None, "tombstone"),
    ("retire a tombstone", ("retire", "{retired}"), None, "tombstone"),
    ("retire a pinned fact", ("retire", "{pinned}"), None, "pinned"),
    ("import a missing file", ("import", "/nonexistent/graymatter.jsonl"), None, "cannot read"),
    ("export to a missing dir", ("export", "--out", "/nonexistent/x.jsonl"), None, "cannot write"),
    ("bad GRAYMATTER_NOW", ("remember", "a", "x", "--env", "GRAYMATTER_NOW=soon"), None, "RFC"),
]


def _split_env(args: tuple[str, ...], ids: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    argv: list[str] = []
    env: dict[str, str] = {}
    it = iter(args)
    for arg in it:
        if arg == "--env":
            key, _, value = next(it).partition("=")
            env[key] = value
        else:
            argv.append(arg.format(**ids) if arg.startswith("{") else arg)
    return argv, env


@pytest.mark.parametrize(
    ("args", "stdin", "needle"),
    [pytest.param(args, stdin, needle, id=name) for name, args, stdin, needle in CASES],
)
def test_refused_command_leaves_the_store_unchanged(
    run_cli: RunCli,
    seeded: dict[str, str],
    args: tuple[str, ...],
    stdin: str | None,
    needle: str,
) -> None:
    argv, env = _split_env(args, seeded)
    data = stdin.encode("utf-8", "surrogateescape") if stdin is not None else None
    done = run_cli(*argv, input=data, env=env)
    line = one_line_error(done)
    assert needle in line
    assert done.stdout == ""
    # (the seeded fixture checks list/status/data.mdb at teardown)


def test_json_flag_does_not_change_error_reporting(run_cli: RunCli, seeded: dict[str, str]) -> None:
    done = run_cli("pin", seeded["retired"], "--json")
    assert "tombstone" in one_line_error(done)
    assert done.stdout == ""


# ---- usage errors -----------------------------------------------------------------------

USAGE = [
    ("remember without text", ("remember", "a")),
    ("remember without anything", ("remember",)),
    ("bad --state", ("list", "--state", "bad")),
    ("unknown command", ("frobnicate",)),
]


@pytest.mark.parametrize("args", [pytest.param(a, id=n) for n, a in USAGE])
def test_usage_errors_exit_2(
    run_cli: RunCli, seeded: dict[str, str], args: tuple[str, ...]
) -> None:
    done = run_cli(*args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    assert "Usage:" in done.stderr or "Error:" in done.stderr
    assert done.stdout == ""


# A flag's value refused while the command line is parsed: exit 2, click's usage lines and
# one "Error:" line naming the flag, and no store created or opened. (Bad ARGUMENTS that
# would be stored, such as an empty TEXT or AGENT, stay errors about data: exit 1.)
BAD_FLAG_VALUES = [
    ("recall --weights", ("recall", "a", "q", "--weights", "a,b"), "'--weights'"),
    ("recall --weights zero", ("recall", "a", "q", "--weights", "0,0"), "'--weights'"),
    ("list --before", ("list", "--before", "not-an-id"), "'--before'"),
    ("export --agent", ("export", "--agent", "bad\x01agent"), "'--agent'"),
    ("embed --agent", ("embed", "--agent", ""), "'--agent'"),
    ("embed --agent and AGENT", ("embed", "--agent", "a", "b"), "two agents given"),
    ("activity --source", ("activity", "--source", "clii"), "'--source': unknown source"),
    ("--stem-language", ("--stem-language", "klingon", "status"), "'--stem-language'"),
    ("--store scheme", ("list", "--store", "ftp://host/db"), "'--store'"),
    ("--store empty", ("remember", "a", "x", "--store", " "), "'--store'"),
    ("--dir with --store", ("--dir", "{tmp}/d", "list", "--store", "{tmp}/s"), "not both"),
    ("--dir with --store, TUI", ("--dir", "{tmp}/d", "--store", "{tmp}/s"), "not both"),
    ("--demo with --store", ("--demo", "--store", "{tmp}/s"), "--demo keeps its own store"),
    ("TUI --agent", ("--agent", "a\u202eb"), "'--agent'"),
    ("mcp --agent", ("mcp", "--agent", ""), "'--agent'"),
    ("mcp --http", ("mcp", "--http", "8765"), "'--http'"),
    ("mcp --http remote", ("mcp", "--http", "0.0.0.0:8765"), "--allow-remote"),
    ("migrate --to", ("migrate", "--to", "mysql://ann@db/memory"), "'--to'"),
    ("migrate --from", ("migrate", "--from", "lmdb:", "--to", "{tmp}/t"), "'--from'"),
]


@pytest.mark.parametrize(
    ("args", "said"), [pytest.param(a, s, id=n) for n, a, s in BAD_FLAG_VALUES]
)
def test_a_bad_flag_value_is_a_usage_error_and_creates_nothing(
    run_cli: RunCli, cli_dir: Path, tmp_path: Path, args: tuple[str, ...], said: str
) -> None:
    before = sorted(tmp_path.iterdir())
    done = run_cli(*(a.replace("{tmp}", str(tmp_path)) for a in args))
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == "" and "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Usage: graymatter-tui"), done.stderr
    assert lines[-1].startswith("Error: ") and said in lines[-1], done.stderr
    assert not any(c in done.stderr for c in TERMINAL_CONTROLS)
    assert sorted(tmp_path.iterdir()) == before  # nothing created, GRAYMATTER_DIR included
    assert not cli_dir.exists()


# ---- NUL cannot pass through argv: the Store API refuses it ------------------------------


def test_nul_in_an_agent_name_is_invalid_input(store: LmdbStore) -> None:
    store.put("a", "keep")
    generation = store.generation()
    before = store.list_facts(None, "all")
    with pytest.raises(InvalidInput, match="U\\+0000"):
        store.put("bad\x00agent", "text")
    with pytest.raises(InvalidInput):
        store.put_many([NewFact("ok", "fine"), NewFact("\x00", "text")])
    assert store.list_facts(None, "all") == before
    assert store.generation() == generation
    assert [a.agent_id for a in store.agents()] == ["a"]


# ---- bad import files -------------------------------------------------------------------


def _fact_line(fact_id: str, text: str, **extra: Any) -> str:
    fact = {
        "id": fact_id,
        "agent_id": "imported",
        "text": text,
        "created_at": "2026-02-01T10:00:00Z",
        **extra,
    }
    return json.dumps({"type": "fact", "fact": fact})


HEADER = json.dumps({"type": "header", "format": "graymatter-tui", "version": 1})
ID_A = "01KG0000000000000000000001"
ID_B = "01KG0000000000000000000002"
ID_C = "01KG0000000000000000000003"


@pytest.mark.parametrize(
    ("lines", "needles"),
    [
        pytest.param(
            [
                HEADER,
                _fact_line(ID_A, "good one"),
                '{"type": "fact", "fact": {',
                _fact_line(ID_B, "b"),
            ],
            ["nothing imported", "line 3", "malformed JSON"],
            id="malformed line in the middle",
        ),
        pytest.param(
            [HEADER, _fact_line(ID_A, "first"), _fact_line(ID_B, "b"), _fact_line(ID_A, "again")],
            ["nothing imported", "line 4", "duplicate id", ID_A, "line 2"],
            id="duplicate id",
        ),
        pytest.param(
            [_fact_line(ID_A, "ok"), _fact_line("nope", "x"), _fact_line(ID_B, " ")],
            ["nothing imported", "2 bad entries", "line 2", "line 3"],
            id="every bad line is named",
        ),
        pytest.param(
            [_fact_line(ID_A, "ok"), _fact_line(ID_B, "x", created_at="last tuesday")],
            ["line 2", "created_at"],
            id="bad timestamp",
        ),
        pytest.param(
            [_fact_line(ID_A, "ok", weight=1.5)],
            ["line 1", "weight"],
            id="weight out of range",
        ),
        pytest.param(
            [_fact_line(ID_A, "orphan", superseded_by=ID_C)],
            ["nothing imported", ID_C, "neither in the file nor in the store"],
            id="tombstone pointing at nothing",
        ),
        pytest.param(
            ["[{", ""],
            ["nothing imported", "malformed"],
            id="malformed upstream array",
        ),
        pytest.param(
            [
                json.dumps(
                    [
                        {
                            "id": ID_A,
                            "agent_id": "x",
                            "text": "t",
                            "created_at": "2026-01-01T00:00:00Z",
                        },
                        {
                            "id": ID_A,
                            "agent_id": "x",
                            "text": "u",
                            "created_at": "2026-01-01T00:00:00Z",
                        },
                    ]
                )
            ],
            ["nothing imported", "item 2", "duplicate id"],
            id="upstream duplicate id",
        ),
        pytest.param([HEADER], ["nothing imported", "no facts"], id="header only"),
    ],
)
def test_bad_import_imports_nothing(
    run_cli: RunCli, seeded: dict[str, str], tmp_path: Path, lines: list[str], needles: list[str]
) -> None:
    path = tmp_path / "bad-import.jsonl"
    path.write_text("\n".join(lines) + "\n", "utf-8")
    line = one_line_error(run_cli("import", str(path)))
    for needle in needles:
        assert needle in line, line


def test_bad_import_on_stdin_imports_nothing(run_cli: RunCli, seeded: dict[str, str]) -> None:
    data = "\n".join([_fact_line(ID_A, "good"), "not json at all", _fact_line(ID_B, "b")])
    line = one_line_error(run_cli("import", "-", input=data))
    assert "nothing imported" in line and "line 2" in line


# ---- a store that cannot be opened --------------------------------------------------------


def _make_real_store(path: Path) -> None:
    with LmdbStore.open(path) as store:
        store.put_many([NewFact("a", f"fact {i}") for i in range(20)])


def _data_dir_is_a_file(path: Path) -> Path:
    path.write_text("I am not a directory\n")
    return path


def _zero_byte(path: Path) -> Path:
    _make_real_store(path)
    os.truncate(path / "data.mdb", 0)
    return path / "data.mdb"


def _garbage(path: Path) -> Path:
    path.mkdir()
    (path / "data.mdb").write_bytes(os.urandom(64 * 1024))
    return path / "data.mdb"


def _newer_schema(path: Path) -> Path:
    _make_real_store(path)
    env = lmdb.open(str(path), max_dbs=16)
    meta = env.open_db(b"meta")
    with env.begin(write=True) as txn:
        txn.put(b"schema_version", b"99", db=meta)
    env.close()
    return path / "data.mdb"


def _truncated(path: Path) -> Path:
    _make_real_store(path)
    with LmdbStore.open(path) as store:
        store.put_many([NewFact("a", "y" * 3000) for _ in range(300)])
    os.truncate(path / "data.mdb", 3 * 4096)
    return path / "data.mdb"


BROKEN: dict[str, tuple[Callable[[Path], Path], str]] = {
    "data dir is a file": (_data_dir_is_a_file, "not a directory"),
    "zero-byte data.mdb": (_zero_byte, "empty"),
    "garbage data.mdb": (_garbage, "not an LMDB database"),
    "newer schema": (_newer_schema, "newer"),
    "truncated data.mdb": (_truncated, "truncated"),
}


@pytest.mark.parametrize(
    ("problem", "command"),
    [(problem, ("remember", "a", "new fact")) for problem in BROKEN]
    + [("zero-byte data.mdb", ("list", "--state", "all")), ("garbage data.mdb", ("status",))],
)
def test_unusable_store_is_reported_and_kept(
    run_cli: RunCli, tmp_path: Path, problem: str, command: tuple[str, ...]
) -> None:
    make, needle = BROKEN[problem]
    data_dir = tmp_path / "broken"
    damaged = make(data_dir)
    before = damaged.read_bytes()
    line = one_line_error(run_cli(*command, env={"GRAYMATTER_DIR": str(data_dir)}))
    assert needle in line
    assert damaged.read_bytes() == before  # never overwritten or "repaired"


# ---- hostile text is shown literally --------------------------------------------------------

HOSTILE = (
    "copy \x1b]52;c;SGVsbG8gd29ybGQ=\x07 then \x1b[2J\x1b[31mred\x1b[0m "
    "c1 \x9b1;31m osc8 \x1b]8;;http://evil.example\x1b\\link\x1b]8;;\x1b\\ "
    "[bold]not bold[/bold] [link=http://x]y[/link] \u202eevil\u202c bell\x07 end"
)


def test_hostile_text_is_neutralised_in_human_output(run_cli: RunCli) -> None:
    remembered = run_cli("remember", "[red]agent[/red]", HOSTILE)
    fact_id = remembered.stdout.strip()
    assert remembered.returncode == 0, remembered.stderr

    outputs = {
        "list": run_cli("list"),
        "list agent": run_cli("list", "[red]agent[/red]"),
        "show": run_cli("show", fact_id),
    }
    for name, done in outputs.items():
        assert done.returncode == 0, (name, done.stderr)
        for control in TERMINAL_CONTROLS:
            assert control not in done.stdout, (name, repr(control))
        assert "[bold]not bold[/bold]" in done.stdout, name
        assert "[link=http://x]y[/link]" in done.stdout, name
        assert "red" in done.stdout and "end" in done.stdout, name
    assert "[red]agent[/red]" in outputs["list"].stdout
    assert "[red]agent[/red]" in outputs["show"].stdout

    listed = run_cli("list", "--json")
    assert listed.returncode == 0
    assert not any(c in listed.stdout for c in TERMINAL_CONTROLS)  # escaped inside JSON
    (fact,) = json.loads(listed.stdout)
    assert fact["text"] == HOSTILE
    assert fact["agent_id"] == "[red]agent[/red]"


def test_revised_hostile_text_is_neutralised_in_the_receipt(run_cli: RunCli) -> None:
    fact_id = run_cli("remember", "a", "plain").stdout.strip()
    assert run_cli("revise", fact_id, HOSTILE).returncode == 0
    shown = run_cli("show", fact_id)
    assert shown.returncode == 0
    assert "replaced by" in shown.stdout
    assert not any(c in shown.stdout for c in TERMINAL_CONTROLS)
    assert "[bold]not bold[/bold]" in shown.stdout


def test_import_refuses_a_hostile_cycle_id(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "hostile.jsonl"
    path.write_text(_fact_line(ID_A, "t", cycle_id="\x1b]52;c;SGk=\x07\x1b[2J") + "\n", "utf-8")
    done = run_cli("import", str(path))
    assert done.returncode == 1
    assert "line 1" in done.stderr and "cycle_id" in done.stderr
    assert not any(c in done.stderr for c in TERMINAL_CONTROLS)
    assert run_cli("show", ID_A).returncode == 1  # nothing was imported


def test_import_refuses_a_hostile_cycle_record(run_cli: RunCli, tmp_path: Path) -> None:
    record = {
        "cycle_id": ID_C,
        "agent_id": "imported",
        "outcome": "\x1b]52;c;SGk=\x07",
        "summariser": "\x1b[2J",
    }
    path = tmp_path / "hostile.jsonl"
    path.write_text(
        _fact_line(ID_A, "t", cycle_id=ID_C)
        + "\n"
        + json.dumps({"type": "cycle", "record": record})
        + "\n",
        "utf-8",
    )
    done = run_cli("import", str(path))
    assert done.returncode == 1
    assert "line 2" in done.stderr and "outcome" in done.stderr
    assert not any(c in done.stderr for c in TERMINAL_CONTROLS)
    assert run_cli("show", ID_A).returncode == 1  # all or nothing: the fact is not imported
