"""Ollama: POST /api/generate with the JSON-constrained sampler, thinking off, and a
context window sized to the prompt."""

from __future__ import annotations

import time
from typing import Any

import httpx
import msgspec

from graymatter_tui.consolidation.prompt import context_tokens, prompt_hash, structured_prompt
from graymatter_tui.consolidation.summarisers.base import Reachability, Reply
from graymatter_tui.consolidation.summarisers.http import post_with_retry
from graymatter_tui.core.model import BatchItem
from graymatter_tui.core.summariser_names import SummariserName


def _error_text(body: bytes) -> str:
    try:
        obj = msgspec.json.decode(body)
        if isinstance(obj, dict) and isinstance(obj.get("error"), str):
            text: str = obj["error"]
            return text[:200]
    except msgspec.DecodeError:
        pass
    return body[:200].decode("utf-8", errors="replace")


class OllamaSummariser:
    name = SummariserName.OLLAMA.value

    def __init__(
        self,
        url: str,
        model: str,
        timeout: float,
        *,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self._transport = transport

    def request_body(self, prompt: str) -> dict[str, Any]:
        return {
            "model": self.model,
            "prompt": prompt,
            "stream": False,
            "format": "json",
            "think": False,
            "options": {"num_ctx": context_tokens(prompt), "temperature": 0},
        }

    async def propose(self, batch: list[BatchItem]) -> Reply:
        prompt = structured_prompt(batch)
        digest = prompt_hash(prompt)
        where = f"Ollama at {self.url}"
        result = await post_with_retry(
            f"{self.url}/api/generate",
            self.request_body(prompt),
            where=where,
            deadline=self.timeout,
            transport=self._transport,
        )
        common: dict[str, Any] = {
            "attempts": result.attempts,
            "prompt_sha256": digest,
            "model": self.model,
        }
        if result.error:
            return Reply(error=result.error, **common)
        if result.status == 404:
            return Reply(
                error=f"Ollama has no model {self.model!r} (run `ollama pull {self.model}`): "
                f"{_error_text(result.body)}",
                **common,
            )
        if result.status != 200:
            return Reply(
                error=f"Ollama answered HTTP {result.status}: {_error_text(result.body)}", **common
            )
        try:
            envelope = msgspec.json.decode(result.body)
        except msgspec.DecodeError:
            return Reply(invalid="Ollama's reply is not JSON", **common)
        if not isinstance(envelope, dict) or not isinstance(envelope.get("response"), str):
            return Reply(invalid="Ollama's reply has no 'response' text", **common)
        raw: str = envelope["response"]
        if envelope.get("done_reason") == "length":
            return Reply(
                raw=raw,
                invalid='the model\'s answer was cut off (done_reason "length"); '
                "the proposal is incomplete",
                **common,
            )
        return Reply(raw=raw, **common)

    async def check(self) -> Reachability:
        started = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=2.0, transport=self._transport) as client:
                version = await client.get(f"{self.url}/api/version")
                tags = await client.get(f"{self.url}/api/tags")
        except httpx.HTTPError:
            return Reachability(False, f"Ollama at {self.url} does not answer")
        if version.status_code != 200:
            return Reachability(False, f"Ollama at {self.url} answered HTTP {version.status_code}")
        try:
            number = msgspec.json.decode(version.content).get("version", "?")
            names = [m.get("name", "") for m in msgspec.json.decode(tags.content).get("models", [])]
        except (msgspec.DecodeError, AttributeError):
            return Reachability(False, f"Ollama at {self.url} sent an unexpected answer")
        wanted = self.model if ":" in self.model else f"{self.model}:latest"
        elapsed = (time.monotonic() - started) * 1000
        if wanted not in names and self.model not in names:
            return Reachability(
                False, f"Ollama {number} answers, but model {self.model!r} is not pulled"
            )
        return Reachability(
            True, f"Ollama {number} at {self.url}, model {self.model} ({elapsed:.0f} ms)"
        )
