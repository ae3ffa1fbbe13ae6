"""One JSON POST to an embedding server, with a total deadline and a size cap; every
failure becomes one EmbedError line naming the server. No retry here: the worker retries
a whole batch later, with back-off."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx
import msgspec

from graymatter_tui.embedding.base import EmbedError

# 2048 texts x 4096 dimensions as JSON numbers stays far below this.
MAX_RESPONSE_BYTES = 256 * 1024 * 1024


def redact(message: str, secret: str) -> str:
    return message.replace(secret, "[redacted]") if secret else message


def error_detail(body: bytes) -> str:
    """The server's own error text: Ollama's {"error": "..."}, OpenAI's {"error":
    {"message": "..."}}, or the start of the body."""
    try:
        parsed = json.loads(body)
    except ValueError:
        parsed = None
    if isinstance(parsed, dict):
        error = parsed.get("error")
        if isinstance(error, dict):
            error = error.get("message")
        if isinstance(error, str):
            return " ".join(error.split())[:200]
    return " ".join(body[:200].decode("utf-8", errors="replace").split())


class Connection:
    """One client per embedder, kept: building one loads the CA store (~0.14 s here), and
    a kept connection spares a TCP handshake per batch."""

    def __init__(self, transport: httpx.BaseTransport | None = None) -> None:
        self._transport = transport
        self._client: httpx.Client | None = None

    def client(self) -> httpx.Client:
        if self._client is None:
            self._client = httpx.Client(transport=self._transport)
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None


def post_json(
    connection: Connection,
    url: str,
    payload: dict[str, Any],
    *,
    where: str,
    timeout: float,
    headers: dict[str, str] | None = None,
) -> Any:
    """POST `payload`; the decoded JSON of a 200 answer, or EmbedError."""
    deadline = time.monotonic() + timeout
    client = connection.client()
    try:
        with client.stream(
            "POST", url, json=payload, headers=headers or {}, timeout=httpx.Timeout(timeout)
        ) as response:
            chunks: list[bytes] = []
            size = 0
            for chunk in response.iter_bytes():
                size += len(chunk)
                if size > MAX_RESPONSE_BYTES:
                    raise EmbedError(f"{where} sent more than 256 MiB; refused")
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("total deadline")
                chunks.append(chunk)
            status, body = response.status_code, b"".join(chunks)
    except httpx.TimeoutException:
        raise EmbedError(f"{where} did not answer within {timeout:g} s") from None
    except httpx.ConnectError:
        raise EmbedError(f"cannot connect to {where}") from None
    except httpx.RemoteProtocolError:
        raise EmbedError(f"{where} closed the connection before answering completely") from None
    except httpx.HTTPError as exc:
        raise EmbedError(f"{where}: {type(exc).__name__}") from None
    if status != 200:
        raise EmbedError(f"{where} answered HTTP {status}: {error_detail(body)}")
    try:
        return msgspec.json.decode(body)  # ~10x faster than json on 25k floats
    except msgspec.DecodeError:
        pass
    try:
        # Python's json also reads NaN and Infinity, which JSON lacks but a broken server
        # writes: validation then names them instead of calling the body "not JSON".
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        raise EmbedError(f"{where} sent a reply that is not JSON") from None
