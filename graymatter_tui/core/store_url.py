"""Which store a person named: a path (or `lmdb:PATH`) is the LMDB store, a
`postgresql://` or `postgres://` URL is the PostgreSQL backend.

A URL may carry a password. `StoreUrl.redacted` is the form for every message, log and
status line; the password is never in it, nor in `repr` or `str`. Only the backend that
connects reads `StoreUrl.secret_conninfo`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal
from urllib.parse import parse_qsl, quote, unquote, urlencode

from graymatter_tui.core.errors import InvalidInput

Backend = Literal["lmdb", "postgresql"]
POSTGRES_SCHEMES = ("postgresql", "postgres")
MAX_LENGTH = 4096
HIDDEN = "***"
# Query parameters of a libpq URL that hold a secret.
SECRET_PARAMS = frozenset({"password", "sslpassword"})
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_PORT = re.compile(r"^[0-9]{1,5}$")
_EXAMPLE = "give a directory, lmdb:PATH or postgresql://USER:PASSWORD@HOST:PORT/DATABASE"


@dataclass(frozen=True)
class StoreUrl:
    backend: Backend
    path: Path | None  # the LMDB store's directory; None for PostgreSQL
    redacted: str
    # The URL as given (password included) for the driver alone; kept out of repr.
    secret_conninfo: str = field(default="", repr=False, compare=False)
    database: str = ""
    hosts: tuple[str, ...] = ()
    # The URL with no password at all (for a config file; libpq finds it in ~/.pgpass).
    without_password: str = ""

    def __str__(self) -> str:
        return self.redacted


def parse_store_url(raw: str) -> StoreUrl:
    """The store `raw` names; InvalidInput (whose message never holds a password) when it
    names none."""
    if "\x00" in raw:
        raise InvalidInput("the store location holds a NUL byte")
    if len(raw) > MAX_LENGTH:
        raise InvalidInput(f"the store location is longer than {MAX_LENGTH} characters")
    if not raw.strip():
        raise InvalidInput(f"the store location is empty; {_EXAMPLE}")
    if raw.startswith("lmdb:"):
        return _lmdb(raw[len("lmdb:") :])
    scheme = _SCHEME.match(raw)
    if scheme is None:
        return _lmdb(raw)
    name = scheme.group(1).lower()
    if name not in POSTGRES_SCHEMES:
        raise InvalidInput(f"unknown store URL scheme {name!r}; {_EXAMPLE}")
    return _postgres(raw, len(scheme.group(0)))


def _lmdb(path: str) -> StoreUrl:
    if not path:
        raise InvalidInput(f"lmdb: names no directory; {_EXAMPLE}")
    return lmdb_url(Path(path))


def lmdb_url(directory: Path) -> StoreUrl:
    """The LMDB store in `directory`."""
    directory = directory.expanduser()
    return StoreUrl("lmdb", directory, f"lmdb:{directory}", without_password=str(directory))


def _postgres(raw: str, start: int) -> StoreUrl:
    rest, _, query = raw[start:].partition("?")
    rest = rest.split("#", 1)[0]
    netloc, slash, path = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    if not at:
        hostlist = netloc
    user, colon, _password = userinfo.partition(":")
    hosts = tuple(_check_host(h) for h in hostlist.split(",")) if hostlist else ()
    database = unquote(path) if slash else ""
    if not database:
        raise InvalidInput(f"the PostgreSQL URL names no database; {_EXAMPLE}")
    if "/" in database:
        raise InvalidInput("the PostgreSQL URL's database name holds a '/'")
    params = parse_qsl(query, keep_blank_values=True)
    shown_params = [(k, HIDDEN if k in SECRET_PARAMS else v) for k, v in params]
    shown_user = f"{user}:{HIDDEN}@" if colon else (f"{user}@" if at else "")
    place = f"{','.join(hosts)}/{quote(database, safe='')}"
    shown = f"postgresql://{shown_user}{place}"
    if shown_params:
        shown += "?" + urlencode(shown_params)
    bare = f"postgresql://{user + '@' if user else ''}{place}"
    bare_params = [(k, v) for k, v in params if k not in SECRET_PARAMS]
    if bare_params:
        bare += "?" + urlencode(bare_params)
    return StoreUrl("postgresql", None, shown, raw, database, hosts, bare)


def _check_host(entry: str) -> str:
    host, port = entry, ""
    if entry.startswith("["):  # an IPv6 address, maybe with a port after "]"
        end = entry.find("]")
        if end < 0:
            raise InvalidInput("the PostgreSQL URL has an unclosed '[' in its host")
        host, port = entry[: end + 1], entry[end + 1 :].removeprefix(":")
    elif ":" in entry:
        host, port = entry.rsplit(":", 1)
    if port and (not _PORT.match(port) or not 0 < int(port) < 65536):
        raise InvalidInput("the PostgreSQL URL has a port that is not a number from 1 to 65535")
    if any(c.isspace() for c in host):
        raise InvalidInput("the PostgreSQL URL has a space in its host name")
    return entry
