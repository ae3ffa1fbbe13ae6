"""Row source for entity lists (the Graph tab): how many live facts mention each entity,
its kind, and its label as literal text (never markup)."""

from __future__ import annotations

from collections.abc import Sequence

from rich.segment import Segment

from graymatter_tui.storage import EntityCount
from graymatter_tui.tui.widgets.fact_rows import DIM, PLAIN, fit
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.row_styles import NO_COLOUR, RowStyles

COUNT_CELLS = 6  # " 12345"
KIND_CELLS = 7  # "email  "
# What the extractor's kinds are called in a list (entities.py: name, ident, email, url).
KINDS = {"name": "name", "ident": "id", "email": "email", "url": "url"}


def entity_header(count_title: str = "facts") -> str:
    """Column titles over `EntityRows.row`."""
    return count_title.rjust(COUNT_CELLS) + " " + "kind".ljust(KIND_CELLS - 1) + "entity"


class EntityRows:
    """Entities (or a filter's matches among them, by position), most mentioned first."""

    def __init__(self, entities: Sequence[EntityCount], positions: Sequence[int] | None = None):
        self.entities = entities
        self.positions = positions

    def __len__(self) -> int:
        return len(self.entities) if self.positions is None else len(self.positions)

    def entity(self, index: int) -> EntityCount | None:
        if not 0 <= index < len(self):
            return None
        return self.entities[index if self.positions is None else self.positions[index]]

    def index_of(self, entity_id: str) -> int | None:
        for index in range(len(self)):
            entity = self.entity(index)
            if entity is not None and entity.id == entity_id:
                return index
        return None

    def row(self, index: int, width: int, styles: RowStyles = NO_COLOUR) -> list[Segment]:
        entity = self.entity(index)
        if entity is None:
            return []
        kind = KINDS.get(entity.type, entity.type)
        return fit(
            [
                Segment(str(entity.facts).rjust(COUNT_CELLS) + " ", DIM),
                Segment(literal(kind).plain[: KIND_CELLS - 2].ljust(KIND_CELLS - 1), DIM),
                Segment(literal(entity.label).plain, PLAIN),
            ],
            width,
        )
