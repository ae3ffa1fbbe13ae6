"""The throwaway cluster itself: it runs, it wants a password, each test has its own database."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import psycopg
import pytest

from tests.conftest import clean_env
from tests.support.postgres import Cluster

ROOT = Path(__file__).resolve().parents[2]


def test_each_test_gets_an_empty_database_of_its_own(pg_url: str) -> None:
    with psycopg.connect(pg_url) as conn:
        tables = conn.execute(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'"
        ).fetchone()
        name = conn.execute("SELECT current_database()").fetchone()
    assert tables == (0,)
    assert name is not None and name[0].startswith("gm_test_")


def test_the_cluster_refuses_a_wrong_password(pg_cluster: Cluster) -> None:
    with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
        psycopg.connect(pg_cluster.url("postgres", password="wrong"), connect_timeout=5)


def test_the_server_listens_on_a_socket_in_its_temp_dir(pg_cluster: Cluster) -> None:
    assert (pg_cluster.socket_dir / f".s.PGSQL.{pg_cluster.port}").exists()


def test_without_postgresql_the_tests_fail_with_a_clear_line_never_skip(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "tests/pg/test_cluster.py::test_each_test_gets_an_empty_database_of_its_own"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**clean_env(), "GRAYMATTER_TEST_PG_BIN": str(tmp_path / "nowhere")},
        timeout=300,
        check=False,
    )  # fmt: skip
    assert done.returncode != 0
    assert "1 error" in done.stdout and "skipped" not in done.stdout
    assert "the PostgreSQL tests need a throwaway cluster" in done.stdout
    assert "holds no initdb" in done.stdout
