"""Row sources for the fact lists: facts fetched from the store a page at a time, only
for the rows being drawn, and formatted as literal text (never markup).

Given a `background` (the pane's way to read off the UI thread), a row whose fact is not
held yet is drawn as `LOADING` while its page is read in a worker, and the list is drawn
again when it lands: drawing never waits on the store. Without one (tests, benchmarks),
`fact` reads the page there and then."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.cache import LRUCache

from graymatter_tui.core import clock
from graymatter_tui.core.confidence import shown
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import CycleRecord, Fact
from graymatter_tui.core.retirement import Retirement, retirement_of
from graymatter_tui.core.textsafe import neutralise
from graymatter_tui.tui.widgets.row_styles import NO_COLOUR, RowStyles

T = TypeVar("T")
PAGE = 64
CACHED_FACTS = 32 * PAGE
LOADING = "  …"  # a row whose fact is being read
BAR_CELLS = 8
_BLOCKS = " ▏▎▍▌▋▊▉█"
PLAIN = Style.null()  # every segment has a real style: NO_COLOR's filter reads them all
DIM = Style(dim=True)
STRUCK = Style(strike=True)


def fit(segments: list[Segment], width: int) -> list[Segment]:
    """Cut the row to `width` cells, ending in "…" when text was cut off."""
    used = 0
    out: list[Segment] = []
    for segment in segments:
        length = cell_len(segment.text)
        if used + length <= width:
            out.append(segment)
            used += length
            continue
        room = width - used - 1
        if room > 0:
            out.append(Segment(set_cell_size(segment.text, room), segment.style or PLAIN))
        out.append(Segment("…", DIM))
        break
    return out


def column(text: str, cells: int, style: Style) -> list[Segment]:
    """`text` in exactly `cells` cells: cut with "…" when too long, padded (plain) when short."""
    cut = fit([Segment(text, style)], cells)
    return [*cut, Segment(" " * (cells - sum(cell_len(s.text) for s in cut)), PLAIN)]


# The cells before a tombstone's text: " ▍▍▍▍ 0.10    99d ".
TOMBSTONE_LEAD = 18


def tombstone_text_cells(width: int) -> int:
    """The tombstone's own text gets two fifths of what the fixed columns leave, 12 to 48
    cells; the receipt (the summary that replaced it) gets the rest."""
    return max(12, min(48, (width - TOMBSTONE_LEAD) * 2 // 5))


def tombstone_header(width: int) -> str:
    """Column titles aligned with `TombstoneRows.row` at the same width."""
    lead = " " + "weight".ljust(10) + "prune".rjust(6) + " "
    return lead + "tombstone".ljust(tombstone_text_cells(width)) + " → [cycle] summary"


# The columns of a live fact's row, in cells; `fact_header` titles them from the same
# numbers, so the titles stay over their columns.
PIN_CELLS = 3  # " ★ "
NUMBER_CELLS = 5  # " 0.99" after the bar
AGE_CELLS = 6  # "   17d", or "age ↑" over it with a space before
USES_CELLS = 5  # "   12"
GAP = "  "
# The column each sort orders by, and its direction: newest first is the youngest age
# first (ascending), heaviest first the largest weight first (descending).
SORT_MARKS = {"recency": ("age", "↑"), "weight": ("weight", "↓")}


def fact_header(sort: str = "recency") -> str:
    """Column titles over `FactRows.row`: pin, weight (bar and number), age, uses, text;
    the column the list is sorted by carries the sort's direction (`weight ↓`)."""
    sorted_by, arrow = SORT_MARKS.get(sort, ("", ""))

    def title(name: str) -> str:
        return f"{name} {arrow}" if name == sorted_by else name

    return (
        "pin".ljust(PIN_CELLS)
        + title("weight").rjust(BAR_CELLS + NUMBER_CELLS)
        + title("age").rjust(AGE_CELLS)
        + "uses".rjust(USES_CELLS)
        + GAP
        + "text"
    )


def count_text(count: int) -> str:
    """An access count in at most four cells: 9999, then 12k, then 3M."""
    if count < 10_000:
        return str(count)
    if count < 1_000_000:
        return f"{count // 1000}k"
    return f"{min(count // 1_000_000, 999)}M"


def weight_bar(weight: float, cells: int = BAR_CELLS) -> str:
    eighths = max(0, min(round(weight * cells * 8), cells * 8))
    full, part = divmod(eighths, 8)
    bar = "█" * full + (_BLOCKS[part] if part else "")
    return bar.ljust(cells)


def weight_style(weight: float, styles: RowStyles) -> Style:
    """A weight below 0.1 is near pruning: drawn in the theme's error colour."""
    return styles.weight_low if weight < 0.1 else styles.weight


def days_until_prune(fact: Fact, now: datetime, half_life_hours: float) -> float:
    """Days until decay takes the weight below 0.01 (0 when it already is)."""
    if fact.pinned:
        return math.inf
    if fact.weight < 0.01:
        return 0.0
    hours = (now - clock.parse_time(fact.accessed_at)).total_seconds() / 3600
    return max(half_life_hours * math.log2(100) - hours, 0.0) / 24


def confidence_tag(fact: Fact) -> list[Segment]:
    """`[verified] ` before the text of a fact with a confidence; nothing without one."""
    if fact.confidence is None:
        return []
    return [Segment(f"[{shown(fact.confidence)}] ", DIM)]


class Background(Protocol):
    """Run `job` (a store read) off the UI thread, then `then(result)` on it, or
    `failed()` when the read failed (the caller has said why)."""

    def __call__(
        self, job: Callable[[], T], then: Callable[[T], None], failed: Callable[[], None]
    ) -> None: ...


@dataclass
class Held:
    """What a fact list holds of the store: facts of the rows drawn lately (bounded, so
    scrolling through 1M facts keeps only the last few thousand in memory), the ids being
    read and those whose read failed. Row sources built from one read share it: a new
    filter's rows reuse the facts already read."""

    facts: LRUCache[str, Fact | None] = field(default_factory=lambda: LRUCache(CACHED_FACTS))
    summaries: LRUCache[str, Fact | None] = field(default_factory=lambda: LRUCache(CACHED_FACTS))
    retirements: LRUCache[str, Retirement | None] = field(
        default_factory=lambda: LRUCache(CACHED_FACTS)
    )
    pending: set[str] = field(default_factory=set)
    failed: set[str] = field(default_factory=set)


class FactRows:
    """Live facts: pin star, weight bar, age, access count, text."""

    def __init__(
        self,
        ids: Sequence[str],
        fetch: Callable[[list[str]], list[Fact | None]],
        now: datetime,
        *,
        background: Background | None = None,
        loaded: Callable[[], object] | None = None,
        held: Held | None = None,
    ) -> None:
        self.ids = ids
        self._fetch = fetch
        self.now = now
        self._background = background
        self._loaded: Callable[[], object] = loaded or (lambda: None)
        self.held = held or Held()
        self._cache = self.held.facts

    def __len__(self) -> int:
        return len(self.ids)

    def fact(self, index: int) -> Fact | None:
        """The fact of row `index`, read now if it is not held (on the caller's thread)."""
        if not 0 <= index < len(self.ids):
            return None
        fact_id = self.ids[index]
        if fact_id not in self._cache:
            wanted = self._wanted(index)
            if fact_id not in wanted:  # being read off the UI thread: read it here too
                wanted.insert(0, fact_id)
            try:
                self._keep(self._read(wanted))
            except GraymatterError:
                return None  # drawn as unavailable
        return self._cache.get(fact_id)

    def read_ahead(self, ids: list[str]) -> Held:
        """Read now (a pane's read, in its worker) everything the rows of `ids` draw
        from, into this source's `held`, which is returned: rows drawn from it paint at
        once. Only for a `held` no other thread is using yet."""
        if ids:
            self._keep(self._read(ids))
        return self.held

    def held_fact(self, index: int) -> Fact | None:
        """The fact of row `index` if it is held, without reading the store."""
        if not 0 <= index < len(self.ids):
            return None
        return self._cache.get(self.ids[index])

    def id_at(self, index: int) -> str | None:
        return self.ids[index] if 0 <= index < len(self.ids) else None

    def _wanted(self, index: int) -> list[str]:
        """The ids of the page around row `index` that are not held or being read."""
        start = max(index - PAGE // 4, 0)
        pending = self.held.pending
        return [
            i for i in self.ids[start : start + PAGE] if not self._ready(i) and i not in pending
        ]

    def _ready(self, fact_id: str) -> bool:
        """Everything row `fact_id` draws from is held."""
        return fact_id in self._cache

    def _read(self, wanted: list[str]) -> dict[str, Any]:
        """What rows of `wanted` draw from (in a worker when there is a background)."""
        return {"facts": dict(zip(wanted, self._fetch(wanted), strict=True))}

    def _keep(self, found: dict[str, Any]) -> None:
        for fact_id, fact in found["facts"].items():
            self._cache[fact_id] = fact

    def _row_fact(self, index: int) -> Fact | str | None:
        """The fact to draw row `index` with: LOADING while its page is read off the UI
        thread, None when it is gone or its read failed."""
        if self._background is None:
            return self.fact(index)
        fact_id = self.ids[index]
        if self._ready(fact_id):
            return self._cache[fact_id]
        if fact_id in self.held.failed:
            return None
        if fact_id not in self.held.pending:
            wanted = self._wanted(index)
            self.held.pending.update(wanted)
            self._background(
                partial(self._read, wanted),
                partial(self._landed, wanted),
                partial(self._not_landed, wanted),
            )
        return LOADING

    def _landed(self, wanted: list[str], found: dict[str, Any]) -> None:
        self.held.pending.difference_update(wanted)
        self._keep(found)
        self._loaded()

    def _not_landed(self, wanted: list[str]) -> None:
        self.held.pending.difference_update(wanted)
        self.held.failed.update(wanted)  # unavailable until the list is read again
        self._loaded()

    def index_of(self, fact_id: str) -> int | None:
        try:
            return self.ids.index(fact_id)
        except ValueError:
            return None

    def row(self, index: int, width: int, styles: RowStyles = NO_COLOUR) -> list[Segment]:
        fact = self._row_fact(index)
        if isinstance(fact, str):
            return [Segment(fact, DIM)]
        if fact is None:
            return [Segment("  (unavailable)", DIM)]
        star = Segment((" ★ " if fact.pinned else "").ljust(PIN_CELLS), styles.pinned)
        bar_style = weight_style(fact.weight, styles)
        age = clock.short_age(self.now, fact.created_at)
        row = [
            star,
            Segment(weight_bar(fact.weight), bar_style),
            Segment(
                f"{fact.weight:4.2f}".rjust(NUMBER_CELLS)
                + age.rjust(AGE_CELLS)
                + count_text(fact.access_count).rjust(USES_CELLS)
                + GAP,
                DIM,
            ),
            *confidence_tag(fact),
            Segment(neutralise(fact.text, one_line=True), PLAIN),
        ]
        return fit(row, width)


class TombstoneRows(FactRows):
    """Tombstones with their receipt: what replaced them, the cycle, days until prune."""

    def __init__(
        self,
        ids: Sequence[str],
        fetch: Callable[[list[str]], list[Fact | None]],
        now: datetime,
        half_life_hours: float,
        find_record: Callable[[str], CycleRecord | None] | None = None,
        *,
        background: Background | None = None,
        loaded: Callable[[], object] | None = None,
        held: Held | None = None,
    ) -> None:
        super().__init__(ids, fetch, now, background=background, loaded=loaded, held=held)
        self.half_life_hours = half_life_hours
        self._summaries = self.held.summaries
        # The journal says which retired facts a revert or an approved review retired.
        self._find_record = find_record
        self._retirements = self.held.retirements

    def _read(self, wanted: list[str]) -> dict[str, Any]:
        """A page of tombstones with what their rows name: the summaries that replaced
        them and, for retired ones, the journal's word on what retired them."""
        found = super()._read(wanted)
        tombs = [f for f in found["facts"].values() if f is not None]
        targets = sorted(
            {
                f.superseded_by
                for f in tombs
                if not f.is_retired and f.superseded_by and f.superseded_by not in self._summaries
            }
        )
        found["summaries"] = dict(zip(targets, self._fetch(targets), strict=True))
        find = self._find_record
        found["retirements"] = {
            f.id: retirement_of(f, find)
            for f in tombs
            if find is not None and f.is_retired and f.id not in self._retirements
        }
        return found

    def _ready(self, fact_id: str) -> bool:
        if fact_id not in self._cache:
            return False
        fact = self._cache[fact_id]
        if fact is None:
            return True
        if fact.is_retired:
            return self._find_record is None or fact.id in self._retirements
        return not fact.superseded_by or fact.superseded_by in self._summaries

    def _keep(self, found: dict[str, Any]) -> None:
        super()._keep(found)
        for target, summary in found.get("summaries", {}).items():
            self._summaries[target] = summary
        for fact_id, retirement in found.get("retirements", {}).items():
            self._retirements[fact_id] = retirement

    def retirement_of(self, fact: Fact) -> Retirement | None:
        if self._find_record is None or not fact.is_retired:
            return None
        if fact.id not in self._retirements:
            if self._background is not None:
                return None  # read with its page; not held: not known
            try:
                self._retirements[fact.id] = retirement_of(fact, self._find_record)
            except GraymatterError:
                return None
        return self._retirements[fact.id]

    def summary_of(self, fact: Fact) -> Fact | None:
        target = fact.superseded_by
        if fact.is_retired or not target:
            return None
        if target not in self._summaries:
            if self._background is not None:
                return None  # read with its page; not held: not known
            try:
                self._summaries[target] = self._fetch([target])[0]
            except GraymatterError:
                return None
        return self._summaries[target]

    def row(self, index: int, width: int, styles: RowStyles = NO_COLOUR) -> list[Segment]:
        fact = self._row_fact(index)
        if isinstance(fact, str):
            return [Segment(fact, DIM)]
        if fact is None:
            return [Segment("  (gone)", DIM)]
        days = days_until_prune(fact, self.now, self.half_life_hours)
        text = neutralise(fact.text, one_line=True)
        cells = tombstone_text_cells(width)
        head = [
            Segment(f" {weight_bar(fact.weight, 4)}", weight_style(fact.weight, styles)),
            Segment(f" {fact.weight:4.2f} {days:>5.0f}d ", DIM),
            *column(text, cells, STRUCK),
            Segment(" ", PLAIN),
        ]
        if fact.is_retired:
            retirement = self.retirement_of(fact)
            if retirement is not None:
                mark = "↺ " if retirement.by_revert else "→ "
                return fit([*head, Segment(mark + retirement.short(), DIM)], width)
            return fit([*head, Segment("→ retired by agent", DIM)], width)
        summary = self.summary_of(fact)
        cycle = f"[{fact.cycle_id[-6:]}] " if fact.cycle_id else "[revise] "
        if summary is None:
            return fit([*head, Segment(f"→ {cycle}", DIM), Segment("summary pruned", DIM)], width)
        return fit(
            [
                *head,
                Segment(f"→ {cycle}", DIM),
                Segment(neutralise(summary.text, one_line=True), styles.summary),
            ],
            width,
        )
