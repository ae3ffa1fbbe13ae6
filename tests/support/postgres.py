"""A throwaway PostgreSQL cluster for the test session, and a fresh database per test.

The cluster is made with `initdb` in a temp dir and listens on a free loopback port and
on a unix socket in that dir; the suite never touches a system cluster. `initdb` refuses
to run as root and tests run as root on CI, so the server runs as `nobody` there. Every
connection uses a password (scram-sha-256), so the tests see password redaction for real.

fsync is off: the cluster is deleted at session end and no test crashes the machine, only
clients or a cleanly stopped server, whose writes the OS still holds. Flushing to disk
would only slow CREATE DATABASE and every commit on a shared machine.

When PostgreSQL cannot be found or started the fixture FAILS (never skips): a CI run
without the Postgres tests must not come out green.
"""

from __future__ import annotations

import glob
import os
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import quote

NOBODY = 65534
SUPERUSER = "graymatter_admin"
TEMPLATE = "gm_template"
# Debian's package puts its binaries here, not on PATH.
DEBIAN_BIN = "/usr/lib/postgresql/*/bin"


class ClusterUnavailable(RuntimeError):
    """PostgreSQL is not installed here or its cluster would not start."""


def find_bin_dir() -> Path:
    """The directory of `initdb` and `pg_ctl`: GRAYMATTER_TEST_PG_BIN, PATH, or the
    newest Debian version."""
    chosen = os.environ.get("GRAYMATTER_TEST_PG_BIN")
    if chosen:
        if not (Path(chosen) / "initdb").exists():
            raise ClusterUnavailable(f"GRAYMATTER_TEST_PG_BIN={chosen} holds no initdb")
        return Path(chosen)
    on_path = shutil.which("initdb")
    if on_path and shutil.which("pg_ctl"):
        return Path(on_path).parent
    versions = sorted(glob.glob(DEBIAN_BIN), key=lambda p: _version_key(Path(p).parent.name))
    for candidate in reversed(versions):
        if (Path(candidate) / "initdb").exists():
            return Path(candidate)
    raise ClusterUnavailable(
        "PostgreSQL is not installed: no initdb on PATH or in /usr/lib/postgresql/*/bin "
        "(install the Debian package `postgresql`, as .ci/run does, or set "
        "GRAYMATTER_TEST_PG_BIN)"
    )


def _version_key(name: str) -> tuple[int, ...]:
    return tuple(int(part) for part in name.split(".") if part.isdigit())


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class Cluster:
    """A running throwaway cluster; `url(db)` is a password URL for database `db`."""

    root: Path
    bin_dir: Path
    port: int
    password: str = field(repr=False)
    as_user: int | None
    _made: int = 0

    @property
    def socket_dir(self) -> Path:
        return self.root / "sock"

    def url(self, database: str, *, user: str = SUPERUSER, password: str | None = None) -> str:
        secret = quote(self.password if password is None else password, safe="")
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{database}"

    def admin(self, sql: str) -> None:
        """Run one statement as the superuser on the `postgres` database."""
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql.encode())

    def new_database(self, prefix: str = "gm_test") -> str:
        """A fresh empty database (a copy of the empty template); its name."""
        self._made += 1
        name = f"{prefix}_{os.getpid()}_{self._made}"
        self.admin(f'CREATE DATABASE "{name}" TEMPLATE {TEMPLATE}')
        return name

    def drop_database(self, name: str) -> None:
        self.admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.bin_dir / args[0]), *args[1:]],
            capture_output=True,
            text=True,
            user=self.as_user,
            group=self.as_user,
            extra_groups=[] if self.as_user is not None else None,
            cwd=self.root,
            timeout=120,
            check=False,
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -c listen_addresses=127.0.0.1 "
            f"-c unix_socket_directories={self.socket_dir} -c fsync=off "
            "-c max_connections=200 -c shared_buffers=32MB"
        )
        done = self._run(
            "pg_ctl", "-D", str(self.root / "data"), "-l", str(self.root / "server.log"),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip
        if done.returncode != 0:
            raise ClusterUnavailable(f"pg_ctl start failed: {done.stderr.strip()}\n{self.log()}")

    def stop(self) -> None:
        self._run("pg_ctl", "-D", str(self.root / "data"), "-m", "immediate", "-w", "stop")

    def log(self) -> str:
        try:
            return (self.root / "server.log").read_text(errors="replace")[-4000:]
        except OSError:
            return ""


def _init(root: Path, bin_dir: Path, as_user: int | None, password: str) -> Cluster:
    pwfile = root / "pw"
    pwfile.write_text(password)
    (root / "sock").mkdir()
    if as_user is not None:
        for path in (root, pwfile, root / "sock"):
            os.chown(path, as_user, as_user)
    cluster = Cluster(root, bin_dir, 0, password, as_user)
    done = cluster._run(
        "initdb", "-D", str(root / "data"), "-U", SUPERUSER, f"--pwfile={pwfile}",
        "-A", "scram-sha-256", "-E", "UTF8", "--locale=C", "--no-sync",
    )  # fmt: skip
    pwfile.unlink()
    if done.returncode != 0:
        raise ClusterUnavailable(f"initdb failed: {done.stderr.strip() or done.stdout.strip()}")
    return cluster


@contextmanager
def throwaway_cluster() -> Iterator[Cluster]:
    """initdb, start on a free port (a few tries: another process may take the port
    between choosing and binding it), yield, stop and delete."""
    bin_dir = find_bin_dir()
    as_user = NOBODY if os.geteuid() == 0 else None
    root = Path(tempfile.mkdtemp(prefix="gm-pg-"))
    root.chmod(0o755)
    cluster: Cluster | None = None
    try:
        cluster = _init(root, bin_dir, as_user, secrets.token_urlsafe(12) + "@:/%")
        for attempt in range(5):
            cluster.port = _free_port()
            try:
                cluster.start()
                break
            except ClusterUnavailable:
                if attempt == 4:
                    raise
        cluster.admin(f"CREATE DATABASE {TEMPLATE}")
        yield cluster
    finally:
        if cluster is not None:
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
