"""Anthropic Messages API. Its plain-text summary consumes the whole batch (the path predates
structured proposals; upstream GrayMatter gives it the same meaning).
The API key travels only in a header and is redacted from every message."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec

from graymatter_tui.consolidation.prompt import prompt_hash, text_prompt
from graymatter_tui.consolidation.summarisers.base import Reachability, Reply, redact
from graymatter_tui.consolidation.summarisers.http import post_with_retry
from graymatter_tui.core.model import BatchItem
from graymatter_tui.core.summariser_names import SummariserName

API_VERSION = "2023-06-01"


class AnthropicSummariser:
    name = SummariserName.ANTHROPIC.value

    def __init__(
        self,
        api_key: str,
        base_url: str,
        model: str,
        timeout: float,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._key = api_key
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self._transport = transport

    def __repr__(self) -> str:
        return f"AnthropicSummariser(model={self.model!r}, base_url={self.base_url!r})"

    async def propose(self, batch: list[BatchItem]) -> Reply:
        prompt = text_prompt(batch)
        common: dict[str, Any] = {
            "structured": False,
            "prompt_sha256": prompt_hash(prompt),
            "model": self.model,
        }
        if not self._key:
            return Reply(error="ANTHROPIC_API_KEY is not set", **common)
        result = await post_with_retry(
            f"{self.base_url}/v1/messages",
            {
                "model": self.model,
                "max_tokens": 512,
                "messages": [{"role": "user", "content": prompt}],
            },
            where=f"the Anthropic API at {self.base_url}",
            deadline=self.timeout,
            headers={"x-api-key": self._key, "anthropic-version": API_VERSION},
            transport=self._transport,
        )
        common["attempts"] = result.attempts
        if result.error:
            return Reply(error=redact(result.error, self._key), **common)
        if result.status != 200:
            # Redact the whole body first: a cut could split the key and hide it from redact.
            detail = redact(result.body.decode("utf-8", errors="replace"), self._key)[:200]
            return Reply(
                error=f"the Anthropic API answered HTTP {result.status}: {detail}", **common
            )
        try:
            body = msgspec.json.decode(result.body)
            blocks = body.get("content", []) if isinstance(body, dict) else []
            text = next(
                (
                    b["text"]
                    for b in blocks
                    if isinstance(b, dict) and isinstance(b.get("text"), str)
                ),
                "",
            )
        except msgspec.DecodeError:
            return Reply(invalid="the Anthropic API's reply is not JSON", **common)
        return Reply(raw=text, **common)

    async def check(self) -> Reachability:
        if not self._key:
            return Reachability(False, "ANTHROPIC_API_KEY is not set")
        return Reachability(True, f"API key set; model {self.model} (not contacted)")
