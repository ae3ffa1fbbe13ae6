"""Opening a PostgreSQL store on the real throwaway cluster: the schema is made once and
marked as ours; a wrong password, an unreachable server, another application's database
and a newer schema each get one clear line, never the password."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import psycopg
import pytest

from graymatter_tui.backends.postgres import PgStore, schema
from graymatter_tui.backends.postgres.schema import SCHEMA_VERSION
from graymatter_tui.core.errors import ReadOnlyStore, StoreError
from tests.conftest import clean_env
from tests.support.ports import refusing_port
from tests.support.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]


def _refusal(url: str, **options: float) -> str:
    with pytest.raises(StoreError) as caught:
        PgStore.open(url, **options)
    message = str(caught.value)
    assert "\n" not in message
    return message


def _assert_no_password(message: str, cluster: Cluster) -> None:
    assert cluster.password not in message
    assert psycopg.conninfo.conninfo_to_dict(cluster.url("x"))["password"] not in message


def test_a_new_database_gets_our_schema_marked_as_ours(pg_url: str) -> None:
    with PgStore.open(pg_url) as store:
        info = store.info()
    assert info.schema_version == SCHEMA_VERSION
    assert info.engine.startswith("postgresql ")
    assert "***" in info.data_dir
    with psycopg.connect(pg_url) as conn:
        mark = conn.execute(
            "SELECT value FROM graymatter_meta WHERE key = 'application'"
        ).fetchone()
    assert mark == ("graymatter-tui",)


def test_reopening_keeps_the_facts(pg_url: str) -> None:
    with PgStore.open(pg_url) as store:
        fact = store.put("ann", "the deploy key rotates monthly")
    with PgStore.open(pg_url) as store:
        assert store.require(fact.id) == fact


def test_a_wrong_password_is_one_clear_line_without_it(pg_cluster: Cluster) -> None:
    message = _refusal(pg_cluster.url("postgres", password="not-the-password-123"))
    assert "refused the user name or password" in message
    assert "not-the-password-123" not in message
    assert "postgresql://graymatter_admin:***@127.0.0.1:" in message


def test_nothing_listening_on_the_port_is_a_clear_refusal(pg_cluster: Cluster) -> None:
    with refusing_port() as port:
        url = pg_cluster.url("postgres").replace(f":{pg_cluster.port}/", f":{port}/")
        message = _refusal(url, connect_timeout=2)
    assert "connection refused" in message
    _assert_no_password(message, pg_cluster)


def test_an_unreachable_host_fails_within_the_connect_timeout(pg_cluster: Cluster) -> None:
    # 192.0.2.0/24 is TEST-NET-1: never routed. Depending on the network this times out
    # or is refused at once as unreachable; either way one clear line.
    url = "postgresql://ann:hunter2-secret@192.0.2.1:5432/memory"
    message = _refusal(url, connect_timeout=1)
    assert "cannot use the PostgreSQL store postgresql://ann:***@192.0.2.1:5432/memory" in message
    assert "hunter2" not in message


def test_a_missing_database_is_named(pg_cluster: Cluster) -> None:
    message = _refusal(pg_cluster.url("no_such_db"))
    assert "has no database 'no_such_db'" in message
    _assert_no_password(message, pg_cluster)


def test_a_database_of_another_application_is_refused_and_left_alone(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE invoices (id int PRIMARY KEY, total numeric)")
        conn.execute("INSERT INTO invoices VALUES (1, 9.5)")
    message = _refusal(pg_url)
    assert "a database of another application" in message
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
        ).fetchall()
        assert tables == [("invoices",)]


def test_a_meta_table_naming_another_application_is_refused(pg_url: str) -> None:
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("CREATE TABLE graymatter_meta (key text PRIMARY KEY, value text)")
        conn.execute("INSERT INTO graymatter_meta VALUES ('application', 'other-tool')")
    assert "a database of another application" in _refusal(pg_url)


def test_a_newer_schema_is_refused_and_nothing_is_changed(pg_url: str) -> None:
    with PgStore.open(pg_url) as store:
        fact = store.put("ann", "kept through the refusal")
    newer = str(SCHEMA_VERSION + 1)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE graymatter_meta SET value = %s WHERE key = 'schema_version'", (newer,))
    message = _refusal(pg_url)
    assert f"schema version {newer}, newer than this graymatter-tui knows" in message
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT text FROM facts").fetchall() == [(fact.text,)]


_OPEN_AT_ONCE = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from graymatter_tui.backends.postgres import PgStore
    go = Path(sys.argv[2])
    while not go.exists():
        time.sleep(0.005)
    with PgStore.open(sys.argv[1]) as store:
        store.put("ann", "written by " + sys.argv[3])
        print(store.info().schema_version)
    """
)


def test_two_processes_opening_a_new_database_at_once_both_succeed(
    pg_url: str, tmp_path: Path
) -> None:
    go = tmp_path / "go"
    children = [
        subprocess.Popen(
            [sys.executable, "-c", _OPEN_AT_ONCE, pg_url, str(go), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env=clean_env(),
        )
        for name in ("first", "second", "third")
    ]
    go.touch()
    results = [child.communicate(timeout=120) for child in children]
    assert [child.returncode for child in children] == [0, 0, 0], results
    assert [out.strip() for out, _ in results] == [str(SCHEMA_VERSION)] * 3
    with PgStore.open(pg_url) as store:
        assert len(store.list_facts("ann")) == 3


def test_without_psycopg_the_package_imports_and_a_postgres_url_names_the_extra(
    pg_url: str,
) -> None:
    code = textwrap.dedent(
        """
        import sys
        sys.modules["psycopg"] = None  # as if the extra were not installed
        sys.modules["psycopg_pool"] = None
        import graymatter_tui.cli, graymatter_tui.backends.postgres, graymatter_tui.core.store_url
        from graymatter_tui.core.errors import StoreError
        from graymatter_tui.backends.postgres import PgStore
        try:
            PgStore.open(sys.argv[1])
        except StoreError as exc:
            print(exc)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code, pg_url],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=clean_env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "install graymatter-tui[postgres]" in done.stdout


def test_an_older_schema_is_upgraded_step_by_step_keeping_the_facts(
    pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patched:  # a graymatter-tui that knew only step 1
        patched.setattr(schema, "STEPS", schema.STEPS[:1])
        patched.setattr(schema, "SCHEMA_VERSION", 1)
        with PgStore.open(pg_url) as store:
            fact = store.put("ann", "written at schema version 1")
            assert store.info().schema_version == 1
    with PgStore.open(pg_url) as store:
        assert store.info().schema_version == SCHEMA_VERSION
        assert store.require(fact.id) == fact
        saved = store.save_checkpoint("ann", '{"at": "v2"}')  # a table of step 2
        assert store.latest_checkpoint("ann") == saved


def test_a_read_only_open_reads_and_refuses_every_write(pg_url: str) -> None:
    with PgStore.open(pg_url) as store:
        fact = store.put("ann", "readable by a read-only open")
        generation = store.generation()
    with PgStore.open(pg_url, read_only=True) as reader:
        assert reader.read_only_reason == "opened read-only"
        assert reader.require(fact.id) == fact
        for write in (
            lambda: reader.put("ann", "never written"),
            lambda: reader.touch([fact.id]),
            lambda: reader.pin(fact.id),
        ):
            with pytest.raises(ReadOnlyStore, match="opened read-only; nothing was written"):
                write()
        assert reader.generation() == generation


def test_a_read_only_open_of_an_empty_database_creates_nothing(pg_url: str) -> None:
    message = _refusal_read_only(pg_url)
    assert "holds no graymatter-tui store yet" in message
    with psycopg.connect(pg_url) as conn:
        assert conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone() == (0,)


def _refusal_read_only(url: str) -> str:
    with pytest.raises(StoreError) as caught:
        PgStore.open(url, read_only=True)
    return str(caught.value)
