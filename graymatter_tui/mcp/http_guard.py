"""The HTTP transport's door: where it may listen (checked, then bound before anything is
announced), the bearer token it demands, and the ASGI wrapper that checks it before the MCP
app sees a request.

The token lives in a 0600 file in the store's directory (for a PostgreSQL store, in a
directory of the local data dir named after the database), made on first use. It is compared in
constant time, accepted only in the Authorization header (a token in a URL ends up in
logs and shell history), and never written to any log. `/healthz` is the one path that
answers without it.
"""

from __future__ import annotations

import errno
import hashlib
import hmac
import ipaddress
import json
import os
import secrets
import socket
import stat
from collections.abc import Awaitable, Callable, MutableMapping
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

from graymatter_tui.core.errors import GraymatterError, InvalidInput, StoreError
from graymatter_tui.core.store_url import StoreUrl

TOKEN_FILE = "mcp-token"
MAX_BODY_BYTES = 1024 * 1024  # a 64 KiB fact, JSON-escaped, fits many times over
BACKLOG = 2048  # uvicorn's own default

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class CannotListen(GraymatterError):
    """The address cannot be listened on: the port is taken, not this machine's, or
    reserved."""


def parse_bind(value: str, *, allow_remote: bool) -> tuple[str, int]:
    """HOST:PORT (or [v6]:PORT). Anything but a loopback address needs `allow_remote`."""
    host, sep, port_text = value.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port_text.isdigit() or not 0 < int(port_text) < 65536:
        raise InvalidInput(f"--http wants HOST:PORT (for example 127.0.0.1:8765), got {value!r}")
    if not allow_remote and not _is_loopback(host):
        raise InvalidInput(
            f"refusing to listen on {host}: it is not a loopback address, so other machines "
            "could reach the store. Pass --allow-remote to mean it"
        )
    return host, int(port_text)


def address_text(host: str, port: int) -> str:
    """HOST:PORT as a person types it and a URL holds it ([v6]:PORT)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def url_of(host: str, port: int) -> str:
    """Where a client reaches the server listening on HOST:PORT."""
    return f"http://{address_text(host, port)}/mcp"


def is_wildcard(host: str) -> bool:
    """0.0.0.0 or ::, every address of the machine: no client can connect to it by that name."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def listen(host: str, port: int) -> list[socket.socket]:
    """Sockets bound and listening on every address HOST has (as uvicorn would bind them),
    made before the server says it is serving, so a taken port is one clear error."""
    shown = address_text(host, port)
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        raise CannotListen(f"cannot listen on {shown}: {_reason(exc)}") from None
    addresses = list(dict.fromkeys((family, address) for family, _, _, _, address in found))
    sockets: list[socket.socket] = []
    unavailable: OSError | None = None
    try:
        for family, address in addresses:
            sock = socket.socket(family, socket.SOCK_STREAM)
            sockets.append(sock)
            # Past a stopped server's lingering connections; never past a live listener.
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            try:
                sock.bind(address)
            except OSError as exc:
                if exc.errno != errno.EADDRNOTAVAIL:
                    raise
                unavailable = exc  # a family this machine has no address in (no IPv6)
                sockets.pop().close()
                continue
            sock.listen(BACKLOG)
        if not sockets:
            raise unavailable or OSError(errno.EADDRNOTAVAIL, "no address to listen on")
    except OSError as exc:
        for sock in sockets:
            sock.close()
        raise CannotListen(f"cannot listen on {shown}: {_reason(exc)}") from None
    return sockets


def _reason(exc: OSError) -> str:
    text = exc.strerror or str(exc)
    return text[:1].lower() + text[1:]


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def token_home(location: StoreUrl, data_dir: Path) -> Path:
    """Where the token of the server over `location` lives (nothing is created): an LMDB
    store's own directory; for a database, this machine's data dir, one directory per
    database (named by a digest of the URL without its password, so no secret reaches a
    file name)."""
    if location.path is not None:
        return location.path
    digest = hashlib.sha256(location.redacted.encode()).hexdigest()[:16]
    return data_dir / "mcp-tokens" / digest


def token_dir(location: StoreUrl, data_dir: Path) -> Path:
    """`token_home`, made (0700) for a database's server if it is not there yet."""
    directory = token_home(location, data_dir)
    if location.path is not None:
        return directory
    try:
        directory.mkdir(parents=True, exist_ok=True, mode=0o700)
    except OSError as exc:
        raise StoreError(f"cannot create {directory}: {exc.strerror or exc}") from None
    return directory


def load_or_create_token(data_dir: Path) -> str:
    """The server's token, made (0600, never replacing anything) on first use."""
    path = data_dir / TOKEN_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        return _read_token(path)
    except OSError as exc:
        raise StoreError(f"cannot create {path}: {exc.strerror or exc}") from None
    token = secrets.token_urlsafe(32)
    with os.fdopen(fd, "w") as fh:
        fh.write(token + "\n")
    return token


def _read_token(path: Path) -> str:
    try:
        # O_NONBLOCK: a FIFO put in its place must be refused, not waited on.
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        raise StoreError(f"cannot read {path}: {exc.strerror or exc}") from None
    with os.fdopen(fd) as fh:
        info = os.fstat(fh.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise StoreError(f"{path} is not a regular file; not using it as the token")
        if info.st_mode & 0o077:
            raise StoreError(
                f"{path} can be read by other users (mode {stat.S_IMODE(info.st_mode):o}); "
                "make it 0600 or delete it to get a new token"
            )
        token = fh.read(256).strip()
    if len(token) < 32:
        raise StoreError(f"{path} holds no usable token; delete it to get a new one")
    return token


def guarded(app: ASGIApp, token: str, *, max_body: int = MAX_BODY_BYTES) -> ASGIApp:
    """`app` behind the bearer token, with /healthz open and bodies capped at `max_body`."""
    expected = f"Bearer {token}".encode()

    async def guard(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)  # lifespan: the MCP app's own start and stop
            return
        if scope.get("path") == "/healthz":
            await _answer(send, 200, {"status": "ok"})
            return
        if _token_in_query(scope):
            await _answer(send, 401, {"error": "send the token in the Authorization header"})
            return
        given = dict(scope.get("headers") or []).get(b"authorization", b"")
        if not hmac.compare_digest(given, expected):
            await _answer(send, 401, {"error": "missing or wrong bearer token"})
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > max_body):
            await _answer(send, 413, {"error": f"request body over {max_body} bytes"})
            return
        body = await _read_body(receive, max_body)
        if body is None:
            await _answer(send, 413, {"error": f"request body over {max_body} bytes"})
            return
        await app(scope, _replay(body, receive), send)

    return guard


def _token_in_query(scope: Scope) -> bool:
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    return any(key.lower() in ("token", "access_token", "auth") for key in query)


async def _read_body(receive: Receive, max_body: int) -> bytes | None:
    """The whole body, or None once it passes `max_body` (a body sent in chunks, with no
    length, is counted as it arrives)."""
    parts: list[bytes] = []
    seen = 0
    while True:
        message = await receive()
        if message.get("type") != "http.request":
            return b"".join(parts)  # the client left; the app sees an empty body
        chunk = message.get("body", b"")
        seen += len(chunk)
        if seen > max_body:
            return None
        parts.append(chunk)
        if not message.get("more_body", False):
            return b"".join(parts)


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the client's disconnect, when it comes

    return replay


async def _answer(send: Send, status: int, body: dict[str, str]) -> None:
    raw = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(raw)).encode())]
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="graymatter-tui"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": raw})
