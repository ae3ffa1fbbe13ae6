"""Connections to the server: a first direct connection (its failure is explained in one
line) and then a psycopg_pool pool. No message ever holds the password: every driver
message passes through `describe`, which names the server by the redacted URL and cuts
out the password wherever the driver might have echoed it."""

from __future__ import annotations

import os
from typing import Any

from graymatter_tui.backends.postgres.driver import psycopg_modules
from graymatter_tui.core.errors import InvalidInput, StoreError
from graymatter_tui.core.store_url import StoreUrl

CONNECT_TIMEOUT = 10.0  # seconds; GRAYMATTER_PG_CONNECT_TIMEOUT overrides
POOL_SIZE = 4


def connect_timeout_from_env() -> float:
    raw = os.environ.get("GRAYMATTER_PG_CONNECT_TIMEOUT", "").strip()
    if not raw:
        return CONNECT_TIMEOUT
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value <= 3600:
        raise InvalidInput(
            f"GRAYMATTER_PG_CONNECT_TIMEOUT must be seconds between 0 and 3600, got {raw!r}"
        )
    return value


def _secrets(url: StoreUrl) -> list[str]:
    """The password as given and as the driver decodes it, longest first."""
    psycopg, _ = psycopg_modules()
    found = set()
    try:
        params = psycopg.conninfo.conninfo_to_dict(url.secret_conninfo)
    except psycopg.Error:
        params = {}
    for key in ("password", "sslpassword"):
        value = params.get(key)
        if value:
            found.add(str(value))
    raw_userinfo = url.secret_conninfo.split("://", 1)[-1].split("/", 1)[0].rpartition("@")[0]
    if ":" in raw_userinfo:
        found.add(raw_userinfo.split(":", 1)[1])
    return sorted((s for s in found if s), key=len, reverse=True)


def scrub(message: str, url: StoreUrl) -> str:
    """`message` with the URL shown redacted and any trace of the password removed."""
    message = message.replace(url.secret_conninfo, url.redacted)
    for secret in _secrets(url):
        message = message.replace(secret, "***")
    return message


def describe(exc: BaseException, url: StoreUrl) -> StoreError:
    """One line saying what went wrong reaching `url`, without its password."""
    text = " ".join(str(exc).split())
    lowered = text.lower()
    where = url.redacted
    if "password authentication failed" in lowered or "no password supplied" in lowered:
        reason = "the server refused the user name or password"
    elif "timeout expired" in lowered or "timed out" in lowered:
        reason = "no answer within the connect timeout (is the host reachable?)"
    elif "connection refused" in lowered:
        reason = "connection refused (is PostgreSQL running there, on that port?)"
    elif "does not exist" in lowered and "database" in lowered:
        reason = f"the server has no database {url.database!r}"
    elif "could not translate host name" in lowered or "name or service not known" in lowered:
        reason = "unknown host name"
    else:
        reason = scrub(text, url) or type(exc).__name__
    return StoreError(f"cannot use the PostgreSQL store {where}: {reason}")


def connect_once(url: StoreUrl, timeout: float, *, name: str = "graymatter-tui") -> Any:
    """One autocommit connection, named `name` on the server (pg_stat_activity);
    StoreError (clear, password-free) when refused."""
    psycopg, _ = psycopg_modules()
    try:
        return psycopg.connect(
            url.secret_conninfo,
            autocommit=True,
            connect_timeout=max(1, round(timeout)),
            application_name=name,
        )
    except psycopg.Error as exc:
        raise describe(exc, url) from None


def open_pool(url: StoreUrl, timeout: float) -> Any:
    """A pool of autocommit connections (transactions are begun explicitly), checked
    before each use so a restarted server costs one reconnect, not an error."""
    psycopg, psycopg_pool = psycopg_modules()
    pool = psycopg_pool.ConnectionPool(
        url.secret_conninfo,
        min_size=1,
        max_size=POOL_SIZE,
        kwargs={
            "autocommit": True,
            "connect_timeout": max(1, round(timeout)),
            "application_name": "graymatter-tui",
        },
        check=psycopg_pool.ConnectionPool.check_connection,
        timeout=timeout,
        open=False,
        name="graymatter",
    )
    try:
        pool.open(wait=True, timeout=timeout)
    except (psycopg.Error, psycopg_pool.PoolTimeout) as exc:
        pool.close()
        raise describe(exc, url) from None
    return pool
