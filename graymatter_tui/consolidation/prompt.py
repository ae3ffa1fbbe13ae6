"""Prompts sent to summarisers. Rows are `- <id>: <text>`, one per batch fact."""

from __future__ import annotations

import hashlib

from graymatter_tui.core.model import BatchItem

STRUCTURED_INSTRUCTIONS = (
    "The following are memory facts for an AI agent, each prefixed with its ID. "
    "Summarise them into a single concise paragraph (≤5 sentences) that preserves all key "
    "information, then list the IDs whose information the summary fully accounts for. "
    "Respond with ONLY a JSON object:\n"
    '{"summary":"<paragraph>","consumes":["<id>",...],"contradictions":["<optional note>",...]}'
)
TEXT_INSTRUCTIONS = (
    "The following are memory facts for an AI agent. Produce a single concise paragraph "
    "(≤5 sentences) that preserves all key information:"
)


def _one_line(text: str) -> str:
    return " ".join(text.split())


def structured_prompt(batch: list[BatchItem]) -> str:
    rows = "\n".join(f"- {item.id}: {_one_line(item.text)}" for item in batch)
    return f"{STRUCTURED_INSTRUCTIONS}\n\n{rows}"


def text_prompt(batch: list[BatchItem]) -> str:
    rows = "\n".join(f"- {_one_line(item.text)}" for item in batch)
    return f"{TEXT_INSTRUCTIONS}\n\n{rows}"


def prompt_hash(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8", errors="surrogatepass")).hexdigest()


def context_tokens(prompt: str, answer_tokens: int = 2048) -> int:
    """A context window large enough for the prompt and the answer, so Ollama never
    silently cuts the middle out of the prompt. Rounded up to a multiple of 1024."""
    estimate = len(prompt.encode("utf-8", errors="surrogatepass")) // 3 + answer_tokens
    return max(4096, -(-estimate // 1024) * 1024)
