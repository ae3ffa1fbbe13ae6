"""Encoding of stored values: JSON via msgspec, so the store stays human-inspectable."""

from __future__ import annotations

import msgspec

from graymatter_tui.core.model import ActivityEntry, CycleRecord, Fact, ReviewProposal

encode = msgspec.json.Encoder().encode
decode_fact = msgspec.json.Decoder(Fact).decode
decode_record = msgspec.json.Decoder(CycleRecord).decode
decode_ids = msgspec.json.Decoder(list[str]).decode
decode_activity = msgspec.json.Decoder(ActivityEntry).decode
decode_proposal = msgspec.json.Decoder(ReviewProposal).decode


class TextOnly(msgspec.Struct):
    """A fact row read for its text alone; msgspec skips the other fields."""

    text: str


decode_text = msgspec.json.Decoder(TextOnly).decode


class TextAndState(msgspec.Struct):
    """A fact row read for its text and whether it is a tombstone."""

    text: str
    superseded_by: str = ""


decode_text_and_state = msgspec.json.Decoder(TextAndState).decode


class AgentCounts(msgspec.Struct, kw_only=True):
    live: int = 0
    tombstones: int = 0
    pinned: int = 0
    weight_sum: float = 0.0

    def count(self, fact: Fact, sign: int) -> None:
        """Add (`sign` 1) or take away (-1) `fact`: both backends keep counts this way."""
        if fact.is_live:
            self.live += sign
            self.weight_sum += sign * fact.weight
            if fact.pinned:
                self.pinned += sign
        else:
            self.tombstones += sign


decode_counts = msgspec.json.Decoder(AgentCounts).decode
