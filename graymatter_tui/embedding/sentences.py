"""A fact's text cut into the pieces that get a vector each (ADR 0038): a summary holds
many details, and one vector for its whole text dilutes each of them; scored by its best
sentence, a fact answers a question about any one detail at full similarity."""

from __future__ import annotations

import re

# Per fact: bounds the vectors a long text costs (the rest joins the last piece). As many
# as a summary of a full default consolidation batch holds facts: at 16, a 32-fact
# summary's last piece pooled 17 sentences and the gate lost exact recall (ADR 0038).
MAX_PIECES = 32

# A sentence ends at . ! or ? followed by whitespace, or at a newline. A dot inside a
# token ("5.4 ms", "example.com") is not followed by whitespace, so it never splits.
_BOUNDARY = re.compile(r"(?<=[.!?])\s+|\s*\n\s*")


def sentences(text: str) -> list[str]:
    """The non-empty pieces of `text`, in order, at most MAX_PIECES; a text of one
    sentence (or of only blanks) is itself the one piece."""
    pieces = [piece.strip() for piece in _BOUNDARY.split(text)]
    pieces = [piece for piece in pieces if piece]
    if len(pieces) <= 1:
        return [text]
    if len(pieces) > MAX_PIECES:
        pieces = [*pieces[: MAX_PIECES - 1], " ".join(pieces[MAX_PIECES - 1 :])]
    return pieces
