"""`--store URL` and GRAYMATTER_STORE, through the real CLI in a subprocess: a path,
`lmdb:PATH` and `postgresql://` name the store; the flag beats the environment and may
stand before or after the command name; `--store` with `--dir` is a usage error; a
malformed `--store` value is a usage error (exit 2), a store that cannot be reached or a
malformed GRAYMATTER_STORE one line with exit 1, and neither ever holds the password;
`status`, `doctor` and `mcp --print-config` name a PostgreSQL store without its password."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.conftest import run_graymatter
from tests.support.ports import refusing_port
from tests.support.postgres import Cluster

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def ok(done: subprocess.CompletedProcess[str]) -> str:
    assert done.returncode == 0, (done.args, done.returncode, done.stderr)
    return done.stdout


def as_json(done: subprocess.CompletedProcess[str]) -> Any:
    return json.loads(ok(done))


def one_line_error(done: subprocess.CompletedProcess[str], *secrets: str) -> str:
    """A refusal: exit 1, nothing on stdout, one line on stderr, no traceback and none of
    `secrets` (raw or percent-encoded) anywhere."""
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr
    for secret in secrets:
        for form in (secret, quote(secret, safe="")):
            assert form not in done.stderr and form not in done.stdout
    return lines[0]


def usage_error(done: subprocess.CompletedProcess[str], *secrets: str) -> str:
    """A usage error (exit 2): click's usage lines, then one `Error:` line, which is
    returned; nothing on stdout, no traceback and none of `secrets` anywhere."""
    assert done.returncode == 2, (done.returncode, done.stdout, done.stderr)
    assert done.stdout == ""
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert lines[0].startswith("Usage: graymatter-tui"), done.stderr
    assert lines[-1].startswith("Error: "), done.stderr
    for secret in secrets:
        for form in (secret, quote(secret, safe="")):
            assert form not in done.stderr and form not in done.stdout
    return lines[-1]


def texts(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [f["text"] for f in as_json(done)]


# ---- naming the store -------------------------------------------------------------------


@pytest.mark.parametrize("form", ["{path}", "lmdb:{path}"], ids=["path", "lmdb-url"])
def test_a_path_or_an_lmdb_url_is_the_lmdb_store(
    run_cli: RunCli, tmp_path: Path, cli_dir: Path, form: str
) -> None:
    where = tmp_path / "named"
    location = form.format(path=where)
    ok(run_cli("remember", "ops", "kept in the named store", "--store", location))
    with LmdbStore.open(where) as store:
        assert [f.text for f in store.all_facts()] == ["kept in the named store"]
    assert texts(run_cli("list", "--json", "--store", location)) == ["kept in the named store"]
    assert as_json(run_cli("status", "--json", "--store", location))["data_dir"] == str(where)
    assert not cli_dir.exists()  # the flag beat GRAYMATTER_DIR, which was never created


def test_a_postgresql_url_by_flag_or_by_environment(run_cli: RunCli, pg_url: str) -> None:
    ok(run_cli("remember", "ops", "kept in PostgreSQL", "--store", pg_url))
    by_env = {"GRAYMATTER_STORE": pg_url}
    assert texts(run_cli("list", "--json", env=by_env)) == ["kept in PostgreSQL"]
    ok(run_cli("remember", "ops", "written through the environment", env=by_env))
    assert sorted(texts(run_cli("list", "--json", "--store", pg_url))) == [
        "kept in PostgreSQL",
        "written through the environment",
    ]


def test_the_flag_beats_the_environment(run_cli: RunCli, pg_url: str, tmp_path: Path) -> None:
    lmdb = tmp_path / "flagged"
    env = {"GRAYMATTER_STORE": pg_url}
    ok(run_cli("remember", "ops", "in PostgreSQL", env=env))
    ok(run_cli("remember", "ops", "in LMDB", "--store", str(lmdb), env=env))
    assert texts(run_cli("list", "--json", env=env)) == ["in PostgreSQL"]
    assert texts(run_cli("list", "--json", "--store", str(lmdb), env=env)) == ["in LMDB"]
    # and GRAYMATTER_STORE beats GRAYMATTER_DIR (set by run_cli)
    assert texts(run_cli("list", "--json", "--store", pg_url)) == ["in PostgreSQL"]


def test_the_flag_before_or_after_the_command_name(run_cli: RunCli, pg_url: str) -> None:
    ok(run_cli("--store", pg_url, "remember", "ops", "before the command"))
    ok(run_cli("remember", "ops", "after the command", "--store", pg_url))
    listed = texts(run_cli("--store", pg_url, "list", "--json"))
    assert sorted(listed) == ["after the command", "before the command"]
    assert sorted(texts(run_cli("list", "--json", "--store", pg_url))) == sorted(listed)


@pytest.mark.parametrize(
    "args",
    [
        ("list", "--store", "{url}", "--dir", "{dir}"),
        ("--store", "{url}", "--dir", "{dir}", "list"),
        ("--dir", "{dir}", "list", "--store", "{url}"),
    ],
    ids=["both-after", "both-before", "split"],
)
def test_store_with_dir_is_refused(
    run_cli: RunCli, pg_cluster: Cluster, tmp_path: Path, args: tuple[str, ...]
) -> None:
    url = pg_cluster.url("never_made")
    filled = [a.format(url=url, dir=tmp_path / "d") for a in args]
    line = usage_error(run_cli(*filled), pg_cluster.password)
    assert line == "Error: give --store or --dir, not both"
    assert not (tmp_path / "d").exists()


# ---- bad locations: a usage error when malformed, else one line with exit 1; no password --


def test_bad_locations_are_one_line_without_the_password(
    run_cli: RunCli, pg_cluster: Cluster
) -> None:
    with refusing_port() as port:  # nothing listens there while the test runs
        _bad_locations_are_one_line_without_the_password(run_cli, pg_cluster, port)


def _bad_locations_are_one_line_without_the_password(
    run_cli: RunCli, pg_cluster: Cluster, port: int
) -> None:
    secret = "hunter2-Zq9@x"
    malformed = {
        "unknown scheme": (f"mysql://ann:{quote(secret)}@127.0.0.1/db", "unknown store URL scheme"),
        "bad port": (f"postgresql://ann:{quote(secret)}@127.0.0.1:99999/db", "port"),
    }
    unusable = {
        "wrong password": (pg_cluster.url("postgres", password=secret), "password"),
        "unreachable": (f"postgresql://ann:{quote(secret)}@127.0.0.1:{port}/db", str(port)),
    }
    for name, (url, said) in {**malformed, **unusable}.items():
        for args, env in (
            (("list", "--store", url), None),
            (("remember", "ops", "x", "--store", url), None),
            (("status",), {"GRAYMATTER_STORE": url}),
        ):
            done = run_cli(*args, env=env)
            if name in malformed and env is None:  # a bad flag value
                line = usage_error(done, secret)
                assert line.startswith("Error: Invalid value for '--store': "), line
            else:
                line = one_line_error(done, secret)
            assert said.lower() in line.lower(), (name, args, line)


def test_an_empty_store_url_is_refused(run_cli: RunCli) -> None:
    line = usage_error(run_cli("list", "--store", "  "))
    assert "empty" in line


# ---- status, doctor and the MCP snippet name PostgreSQL without the password -------------


def test_status_and_doctor_name_the_server_and_database(
    run_cli: RunCli, pg_url: str, pg_cluster: Cluster
) -> None:
    database = pg_url.rsplit("/", 1)[1]
    ok(run_cli("remember", "ops", "a fact", "--store", pg_url))
    for args in (("status", "--json"), ("status",), ("doctor", "--json"), ("doctor",)):
        done = run_cli(*args, "--store", pg_url)
        assert done.returncode == 0, done.stderr
        shown = done.stdout + done.stderr
        assert f"127.0.0.1:{pg_cluster.port}" in shown and database in shown, (args, shown)
        assert pg_cluster.password not in shown
        assert quote(pg_cluster.password, safe="") not in shown
    doctor = as_json(run_cli("doctor", "--json", "--store", pg_url))
    assert doctor["ok"] is True


def test_mcp_print_config_prints_no_password(tmp_path: Path) -> None:
    done = run_graymatter(
        "mcp",
        "--print-config",
        "claude-code",
        "--store",
        "postgresql://u:pw-Secret7@db.example:5432/memory",
    )
    assert done.returncode == 0, done.stderr
    assert "pw-Secret7" not in done.stdout + done.stderr
    assert "db.example" in done.stdout and "memory" in done.stdout


def test_a_database_without_a_store_reads_empty_and_doctor_says_so(
    run_cli: RunCli, pg_url: str
) -> None:
    """Reads show an empty store and create nothing; doctor fails on one line saying the
    database holds no store yet; the first write creates it."""
    shown = pg_url.split("://", 1)[1].split("@", 1)[1]
    status = as_json(run_cli("status", "--json", "--store", pg_url))
    assert status["live_facts"] == 0 and shown in status["data_dir"]
    done = run_cli("doctor", "--store", pg_url)
    assert done.returncode == 1
    assert "holds no store yet; a write creates it" in done.stdout
    failed = run_cli("doctor", "--json", "--store", pg_url)
    assert failed.returncode == 1 and json.loads(failed.stdout)["ok"] is False
    ok(run_cli("remember", "a", "the first fact", "--store", pg_url))
    assert as_json(run_cli("doctor", "--json", "--store", pg_url))["ok"] is True
