"""Naming a store: a path, lmdb:PATH or a PostgreSQL URL; the password never shows."""

from __future__ import annotations

from pathlib import Path

import pytest

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.store_url import parse_store_url

SECRET = "s3cr%40t"  # percent-encoded "s3cr@t"


def test_a_path_and_an_lmdb_url_name_the_lmdb_store(tmp_path: Path) -> None:
    plain = parse_store_url(str(tmp_path / "s"))
    prefixed = parse_store_url(f"lmdb:{tmp_path / 's'}")
    assert plain.backend == prefixed.backend == "lmdb"
    assert plain.path == prefixed.path == tmp_path / "s"
    assert plain.redacted == f"lmdb:{tmp_path / 's'}"


def test_a_relative_path_with_a_colon_is_still_a_path() -> None:
    assert parse_store_url("notes:2026").backend == "lmdb"


@pytest.mark.parametrize("scheme", ["postgresql", "postgres", "PostgreSQL"])
def test_both_postgres_schemes_name_the_postgres_backend(scheme: str) -> None:
    url = parse_store_url(f"{scheme}://ann:{SECRET}@db.example:6543/memory")
    assert url.backend == "postgresql"
    assert url.database == "memory"
    assert url.hosts == ("db.example:6543",)
    assert url.path is None


def test_the_password_is_in_no_printable_form() -> None:
    raw = f"postgresql://ann:{SECRET}@db.example/memory?sslmode=require&password=other"
    url = parse_store_url(raw)
    assert url.redacted == (
        "postgresql://ann:***@db.example/memory?sslmode=require&password=%2A%2A%2A"
    )
    for shown in (url.redacted, repr(url), str(url), f"{url}", repr([url])):
        assert "s3cr" not in shown and "other" not in shown
    assert url.secret_conninfo == raw


def test_a_url_without_a_password_shows_its_user() -> None:
    assert parse_store_url("postgresql://ann@h/db").redacted == "postgresql://ann@h/db"
    assert parse_store_url("postgresql:///db").redacted == "postgresql:///db"


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("mysql://ann:pw@h/db", "unknown store URL scheme 'mysql'"),
        ("http://h/db", "unknown store URL scheme 'http'"),
        ("postgresql://ann:pw@h", "names no database"),
        ("postgresql://ann:pw@h/", "names no database"),
        ("postgresql://ann:pw@h:99999/db", "port that is not a number"),
        ("postgresql://ann:pw@h:abc/db", "port that is not a number"),
        ("postgresql://ann:pw@[::1/db", r"unclosed .\[."),
        ("postgresql://ann:pw@h/db\x00x", "NUL byte"),
        ("postgresql://ann:pw@h/" + "d" * 10_000, "longer than 4096"),
        ("", "empty"),
        ("lmdb:", "names no directory"),
    ],
)
def test_hostile_locations_get_a_clear_error_without_the_password(raw: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message) as caught:
        parse_store_url(raw)
    assert "pw" not in str(caught.value).replace("postgresql://USER:PASSWORD", "")
    assert "\n" not in str(caught.value)
