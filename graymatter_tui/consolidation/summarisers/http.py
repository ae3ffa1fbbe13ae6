"""HTTP plumbing shared by the network summarisers: one retry for transient failures
only, a total deadline per attempt, and a cap on how many bytes an answer may have."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from graymatter_tui.consolidation.summarisers.base import MAX_RESPONSE_BYTES

RETRYABLE_STATUS = frozenset({408, 429})
ATTEMPTS = 2


class TooLarge(Exception):
    pass


@dataclass(frozen=True)
class HttpResult:
    status: int = 0
    body: bytes = b""
    error: str = ""  # transport failure or refusal; empty when a status arrived
    attempts: int = 0
    retryable: bool = False


def describe_transport_error(exc: BaseException, where: str) -> str:
    if isinstance(exc, TimeoutError | httpx.TimeoutException):
        return f"{where} did not answer in time"
    if isinstance(exc, httpx.ConnectError):
        return f"cannot connect to {where}"
    if isinstance(exc, httpx.RemoteProtocolError):
        return f"{where} closed the connection before answering completely"
    return f"{where}: {type(exc).__name__}"


async def _one_attempt(
    client: httpx.AsyncClient, url: str, payload: dict[str, Any], headers: dict[str, str]
) -> tuple[int, bytes]:
    async with client.stream("POST", url, json=payload, headers=headers) as response:
        chunks: list[bytes] = []
        size = 0
        async for chunk in response.aiter_bytes():
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise TooLarge
            chunks.append(chunk)
        return response.status_code, b"".join(chunks)


async def post_with_retry(
    url: str,
    payload: dict[str, Any],
    *,
    where: str,
    deadline: float,
    headers: dict[str, str] | None = None,
    transport: httpx.AsyncBaseTransport | None = None,
    on_attempt: Callable[[int], Awaitable[None]] | None = None,
) -> HttpResult:
    """POST JSON; retry once on transport errors, 5xx, 408 and 429; never on other 4xx."""
    timeout = httpx.Timeout(deadline, connect=min(deadline, 10.0))
    last = HttpResult()
    async with httpx.AsyncClient(timeout=timeout, transport=transport) as client:
        for attempt in range(1, ATTEMPTS + 1):
            if on_attempt is not None:
                await on_attempt(attempt)
            try:
                async with asyncio.timeout(deadline):
                    status, body = await _one_attempt(client, url, payload, headers or {})
            except TooLarge:
                return HttpResult(
                    error=f"{where} sent more than {MAX_RESPONSE_BYTES // (1024 * 1024)} MiB; "
                    "refused",
                    attempts=attempt,
                )
            except (httpx.TransportError, TimeoutError) as exc:
                last = HttpResult(
                    error=describe_transport_error(exc, where), attempts=attempt, retryable=True
                )
                continue
            retryable = status >= 500 or status in RETRYABLE_STATUS
            last = HttpResult(status=status, body=body, attempts=attempt, retryable=retryable)
            if status == 200 or not retryable:
                return last
        return last
