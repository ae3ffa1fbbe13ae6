"""Every refusal of `migrate` is one line on stderr, exit 1 (a malformed --from or --to:
a usage error, exit 2), no traceback, no password, and changes nothing on either side."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from subprocess import CompletedProcess

import psycopg
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.postgres import PgStore
from graymatter_tui.storage import NewFact
from tests.support.ports import refusing_port
from tests.support.postgres import Cluster

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

Run = Callable[..., CompletedProcess[str]]
SECRET = "not-the-password-7731"


def _refused(done: CompletedProcess[str], *wanted: str) -> str:
    assert done.returncode == 1, (done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
    for part in wanted:
        assert part in lines[0], lines[0]
    return lines[0]


def _export(run_cli: Run, *location: str) -> str:
    done = run_cli("export", "--format", "jsonl", "--out", "-", *location)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture
def source(run_cli: Run, cli_dir: Path) -> Path:
    """A small store: a few facts, a cycle-free journal, one probe."""
    with LmdbStore.open(cli_dir) as store:
        store.put_many(NewFact("ann", f"the deploy key rotates in week {i}") for i in range(20))
        store.add_probe("ann", "deploy key")
    return cli_dir


def test_a_target_holding_facts_is_refused_and_kept(
    run_cli: Run, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "busy"
    with LmdbStore.open(target) as store:
        store.put("bob", "bob's own fact")
    before = _export(run_cli, "--dir", str(target))
    done = run_cli("migrate", "--from", str(source), "--to", str(target))
    _refused(done, "already holds 1 fact;", "nothing was copied", "--allow-non-empty")
    assert _export(run_cli, "--dir", str(target)) == before


def test_a_postgres_target_holding_facts_is_refused_and_kept(
    run_cli: Run, source: Path, pg_url: str
) -> None:
    with PgStore.open(pg_url) as store:
        store.put("bob", "bob's own fact")
    before = _export(run_cli, "--store", pg_url)
    _refused(run_cli("migrate", "--from", str(source), "--to", pg_url), "already holds")
    assert _export(run_cli, "--store", pg_url) == before


def test_allow_non_empty_adds_to_the_target_and_counts_both(
    run_cli: Run, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "busy"
    with LmdbStore.open(target) as store:
        own = store.put("bob", "bob's own fact")
    done = run_cli("migrate", "--from", str(source), "--to", str(target), "--allow-non-empty")
    assert done.returncode == 0, done.stderr
    with LmdbStore.open(target, read_only=True) as store:
        assert store.find(own.id) == own
        assert len(store.all_facts()) == 21 and len(store.probes()) == 1
    assert json.loads(run_cli("doctor", "--json", "--dir", str(target)).stdout)["ok"]


def test_allow_non_empty_still_refuses_an_id_both_hold(
    run_cli: Run, source: Path, tmp_path: Path
) -> None:
    target = tmp_path / "copy"
    assert run_cli("migrate", "--from", str(source), "--to", str(target)).returncode == 0
    with LmdbStore.open(source) as store:
        store.put("ann", "one more fact, so the copy is no longer identical")
    before = _export(run_cli, "--dir", str(target))
    done = run_cli("migrate", "--from", str(source), "--to", str(target), "--allow-non-empty")
    _refused(done, "already holds 21 of the source's ids or keys", "nothing was copied")
    assert _export(run_cli, "--dir", str(target)) == before


@pytest.mark.parametrize("side", ["to", "from"])
def test_a_wrong_password_is_refused_without_printing_it(
    run_cli: Run, source: Path, pg_cluster: Cluster, side: str, tmp_path: Path
) -> None:
    name = pg_cluster.new_database()
    try:
        wrong = pg_cluster.url(name, password=SECRET)
        args = (
            ("--from", str(source), "--to", wrong)
            if side == "to"
            else ("--from", wrong, "--to", str(tmp_path / "t"))
        )
        line = _refused(run_cli("migrate", *args), "refused the user name or password")
        assert SECRET not in line and "***" in line
        assert not (tmp_path / "t").exists()
    finally:
        pg_cluster.drop_database(name)


def test_nothing_listening_is_refused(run_cli: Run, source: Path, pg_cluster: Cluster) -> None:
    with refusing_port() as port:
        url = pg_cluster.url("nowhere", password=SECRET).replace(
            f":{pg_cluster.port}/", f":{port}/"
        )
        done = run_cli(
            "migrate",
            "--from",
            str(source),
            "--to",
            url,
            env={"GRAYMATTER_PG_CONNECT_TIMEOUT": "3"},
        )
    line = _refused(done, "connection refused")
    assert SECRET not in line


def test_a_database_of_another_application_is_refused_and_untouched(
    run_cli: Run, source: Path, pg_cluster: Cluster
) -> None:
    name = pg_cluster.new_database()
    try:
        url = pg_cluster.url(name)
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("CREATE TABLE invoices (id int PRIMARY KEY, total numeric)")
            conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
        _refused(run_cli("migrate", "--from", str(source), "--to", url), "another application")
        with psycopg.connect(url, autocommit=True) as conn:
            tables = conn.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            ).fetchall()
            assert tables == [("invoices",)]
            assert conn.execute("SELECT total FROM invoices").fetchall() == [(Decimal("9.5"),)]
    finally:
        pg_cluster.drop_database(name)


def test_the_same_store_twice_is_refused(run_cli: Run, source: Path, pg_url: str) -> None:
    for target in (str(source), f"lmdb:{source}", f"{source}/."):
        _refused(run_cli("migrate", "--from", str(source), "--to", target), "same store")
    _refused(run_cli("migrate", "--from", pg_url, "--to", pg_url), "same store")


def test_a_source_with_no_store_is_refused_and_nothing_is_created(
    run_cli: Run, tmp_path: Path
) -> None:
    missing, target = tmp_path / "no-store-here", tmp_path / "target"
    _refused(
        run_cli("migrate", "--from", str(missing), "--to", str(target)),
        f"there is no store at lmdb:{missing}",
    )
    assert not missing.exists() and not target.exists()


def test_an_empty_postgres_database_is_no_source(run_cli: Run, pg_url: str, tmp_path: Path) -> None:
    _refused(
        run_cli("migrate", "--from", pg_url, "--to", str(tmp_path / "t")),
        "there is no store at postgresql://",
    )
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://ann@db/memory", "unknown store URL scheme 'mysql'"),
        ("postgresql://ann:pw@db:99999/memory", "port that is not a number"),
        ("postgresql://ann:pw@db", "names no database"),
        ("lmdb:", "names no directory"),
        ("   ", "the store location is empty"),
    ],
)
def test_a_bad_url_is_refused(
    run_cli: Run, source: Path, tmp_path: Path, url: str, message: str
) -> None:
    for args, flag in (
        (("--from", str(source), "--to", url), "--to"),
        (("--from", url, "--to", str(tmp_path / "t")), "--from"),
    ):
        done = run_cli("migrate", *args)
        assert done.returncode == 2, (done.stdout, done.stderr)  # a bad flag value
        assert "Traceback" not in done.stderr and done.stdout == ""
        assert done.stderr.splitlines()[-1].startswith(f"Error: Invalid value for '{flag}': ")
        assert message in done.stderr and "pw" not in done.stderr
    assert not (tmp_path / "t").exists()


def test_both_ends_are_required(run_cli: Run, source: Path) -> None:
    assert run_cli("migrate", "--from", str(source)).returncode == 2
