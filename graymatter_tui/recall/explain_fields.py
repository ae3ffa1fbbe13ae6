"""Why a recalled fact ranked where it did, per signal: the JSON keys and the line for
people shared by `recall --explain` and MCP's `memory_search` with `explain: true`.

Each signal has a rank (None where the fact is absent from it) and a score in its own
unit: cosine similarity for vector, the TF-IDF weight for keyword, and for recency the
fact's age (newer ranks first). The fused score is the hit's `score`."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from graymatter_tui.core.clock import parse_time, short_age
from graymatter_tui.recall.ranking import Hit


def signal_fields(hit: Hit, now: datetime) -> dict[str, Any]:
    seconds = max((now - parse_time(hit.fact.created_at)).total_seconds(), 0.0)
    return {
        "vector_rank": hit.vector_rank,
        "vector_score": _rounded(hit.vector_score),
        "keyword_rank": hit.keyword_rank,
        "keyword_score": _rounded(hit.keyword_score),
        "recency_rank": hit.recency_rank,
        "age": short_age(now, hit.fact.created_at),
        "age_seconds": int(seconds),
    }


def signal_summary(fields: Mapping[str, Any]) -> str:
    """`vector rank 2 (cosine 0.7071) · keyword – · recency rank 1 (age 3d)`."""
    vector = (
        f"vector rank {fields['vector_rank']} (cosine {fields['vector_score']:.4f})"
        if fields["vector_rank"] is not None
        else "vector –"
    )
    keyword = (
        f"keyword rank {fields['keyword_rank']} (tf-idf {fields['keyword_score']:.4f})"
        if fields["keyword_rank"] is not None
        else "keyword –"
    )
    recency = f"recency rank {fields['recency_rank']} (age {fields['age']})"
    return f"{vector} · {keyword} · {recency}"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
