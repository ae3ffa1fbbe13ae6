"""Why a recalled fact ranked where it did, per signal: the JSON keys and the line for
people shared by `recall --explain` and MCP's `memory_search` with `explain: true`.

Each signal has a rank (None where the fact is absent from it) and a score in its own
unit: cosine similarity for vector, the TF-IDF weight for keyword (and that weight over
the query's best, `keyword_normalised`), and for recency the fact's age (newer ranks
first) and its position between the agent's oldest and newest fact (`recency`, 0 to 1).
`vector_part`, `keyword_part`, `recency_part` and `date_part` are what each added to the
fused score, the hit's `score`: their sum (ADR 0061). `date_match` says whether the fact
was written on a date the query names (null when it names none; ADR 0069).
`vector_stand_in` is true for a fact with no vector of its own yet, whose vector part
used the cosine of the farthest neighbour the signal returned.

Only when recall was asked to rank by confidence (a `min_confidence`, or a
`confidence_weight` above 0) two more keys say how: `confidence`, the fact's label (null
when it has none: unknown), and `confidence_factor`, what the parts' sum was multiplied
by to give the score (1 + w·c; ADR-016)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from graymatter_tui.core.clock import parse_time, short_age
from graymatter_tui.core.confidence import UNKNOWN, known
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
        "keyword_normalised": _rounded(hit.keyword_normalised),
        "recency": _rounded(hit.recency),
        "vector_part": _rounded(hit.vector_part),
        "keyword_part": _rounded(hit.keyword_part),
        "recency_part": _rounded(hit.recency_part),
        "date_match": hit.written_on_named_date if hit.dates_named else None,
        "date_part": _rounded(hit.date_part),
        "vector_stand_in": hit.vector_stand_in,
        **confidence_fields(hit),
    }


def confidence_fields(hit: Hit) -> dict[str, Any]:
    """`confidence` and `confidence_factor` when recall ranked by confidence, else none."""
    if hit.confidence_factor is None:
        return {}
    return {
        "confidence": known(hit.fact.confidence),
        "confidence_factor": _rounded(hit.confidence_factor),
    }


def signal_summary(fields: Mapping[str, Any]) -> str:
    """`vector 0.4123 (cosine 0.5890, rank 2) + keyword 0.3000 (tf-idf 1.2345, 1.00 of the
    best, rank 1) + recency 0.0000 (0.97 of the span, age 3d)`: each part of the fused
    score, and the signal's own score and rank behind it; `+ date 0.1500 (written on a
    date the query names)` when the query names one."""
    if fields["vector_stand_in"]:
        vector = f"vector {fields['vector_part']:.4f} (no vector yet: as the farthest neighbour)"
    elif fields["vector_score"] is not None:
        rank = fields["vector_rank"]
        where = f"rank {rank}" if rank is not None else "not among the nearest"
        cosine = fields["vector_score"]
        vector = f"vector {fields['vector_part']:.4f} (cosine {cosine:.4f}, {where})"
    else:
        vector = "vector –"
    keyword = (
        f"keyword {fields['keyword_part']:.4f} (tf-idf {fields['keyword_score']:.4f}, "
        f"{fields['keyword_normalised']:.2f} of the best, rank {fields['keyword_rank']})"
        if fields["keyword_rank"] is not None
        else "keyword –"
    )
    recency = (
        f"recency {fields['recency_part']:.4f} ({fields['recency']:.2f} of the span, "
        f"rank {fields['recency_rank']}, age {fields['age']})"
    )
    parts = f"{vector} + {keyword} + {recency}"
    if fields.get("date_match") is not None:
        written = "written on" if fields["date_match"] else "not written on"
        parts += f" + date {fields['date_part']:.4f} ({written} a date the query names)"
    if "confidence_factor" not in fields:
        return parts
    label = fields["confidence"] or UNKNOWN
    return f"({parts}) × confidence {fields['confidence_factor']:.4f} ({label})"


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 6)
