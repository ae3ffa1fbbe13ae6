"""The values a store takes and returns, the same for every backend: requests (a new
fact, an apply), outcomes of the cycle's store operations, and import results."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Generic, Literal, Protocol, TypeVar

import msgspec

from graymatter_tui.core.confidence import Confidence
from graymatter_tui.core.errors import Conflict, InvalidInput
from graymatter_tui.core.lifespan import Ending, Moment
from graymatter_tui.core.model import ActivityEntry, CycleRecord, Fact, Probe, ReviewProposal
from graymatter_tui.core.retirement import Retirement
from graymatter_tui.core.textsafe import canonical_id, validate_agent, validate_query
from graymatter_tui.core.words import counted

# Facts (and graph entries) that decay below this weight are pruned.
PRUNE_BELOW = 0.01


def validate_fact_id(value: str) -> str:
    """A fact id given in any case, in its canonical (upper-case) form; InvalidInput for
    anything that is not a ULID."""
    canonical = canonical_id(value)
    if canonical is None:
        raise InvalidInput(f"not a fact id: {value!r} (expected a 26-character ULID)")
    return canonical


def validate_cycle_id(value: str) -> str:
    """A journal record's id given in any case, in its canonical (upper-case) form."""
    canonical = canonical_id(value)
    if canonical is None:
        raise InvalidInput(f"not a cycle id: {value!r} (expected a 26-character ULID)")
    return canonical


# ---- probes (ADR 0039) ------------------------------------------------------------------
# recall.MAX_QUERY_BYTES: the store cannot import recall (recall reads the store), so the
# limit is repeated here and a test keeps the two equal.
MAX_PROBE_QUERY_BYTES = 4096
MAX_PROBE_K = 50
# What saving a probe did: a new probe, a new k for the one already there, or nothing.
ProbeOutcome = Literal["added", "updated", "unchanged"]


def validate_probe(agent: str, query: str, k: int) -> None:
    """Refuse a probe no cycle could use (before any transaction, and on import)."""
    validate_agent(agent)
    validate_query(query, MAX_PROBE_QUERY_BYTES)
    if not 1 <= k <= MAX_PROBE_K:
        raise InvalidInput(f"k must be between 1 and {MAX_PROBE_K}, got {k}")


def validate_probe_id(value: str) -> str:
    """A probe id given in any case, in its canonical (upper-case) form."""
    canonical = canonical_id(value)
    if canonical is None:
        raise InvalidInput(f"not a probe id: {value[:40]!r} (expected a 26-character ULID)")
    return canonical


# ---- probe runs: probes scored on a schedule or on demand ---------------------------------
# The shortest and longest interval `probe schedule --every` takes.
MIN_PROBE_EVERY = 60
MAX_PROBE_EVERY = 366 * 86_400
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 7 * 86_400}


def parse_interval(raw: str) -> int:
    """`90s`, `15m`, `6h`, `1d`, `2w` (or combined, `1h30m`) as seconds; InvalidInput for
    anything else, or outside 1 minute … 366 days."""
    text = raw.strip().lower()
    total, number = 0, ""
    for char in text:
        if char.isdigit():
            number += char
        elif char in _UNITS and number:
            total += int(number) * _UNITS[char]
            number = ""
        else:
            number = "?"
            break
    if not text or number:
        raise InvalidInput(
            f"not an interval: {raw[:40]!r} (expected a number and a unit, like 30m, 6h or 1d)"
        )
    if not MIN_PROBE_EVERY <= total <= MAX_PROBE_EVERY:
        raise InvalidInput(f"the interval must be between 1m and 366d, got {raw[:40]!r}")
    return total


def interval_text(seconds: int) -> str:
    """Seconds as `parse_interval` reads them, largest units first (`6h`, `1h30m`)."""
    out = ""
    for unit, size in sorted(_UNITS.items(), key=lambda item: -item[1]):
        if unit == "w":
            continue  # days read better than weeks and days
        if seconds >= size:
            out += f"{seconds // size}{unit}"
            seconds %= size
    return out or "0s"


@dataclass(frozen=True)
class ProbeSchedule:
    """How often every agent's probes are scored (`every` seconds; None: no schedule),
    when they last were (RFC 3339, "" never), and when the next run is due."""

    every: int | None
    last_run_at: str = ""
    next_due_at: str = ""


@dataclass(frozen=True)
class ProbeScore:
    """One probe's top k now, best first, as a probe run found it."""

    probe: Probe
    found: list[str]


def decay_weight(weight: float, hours_stale: float, half_life_hours: float) -> float:
    """`min(weight, 2^(-hours/half_life))`: recomputed from staleness, so idempotent."""
    fresh = math.exp(-math.log(2) * max(hours_stale, 0.0) / half_life_hours)
    return min(weight, fresh)


# ---- facts -------------------------------------------------------------------------------
@dataclass(frozen=True)
class NewFact:
    """A fact to insert in bulk (demo data, benchmarks): times default to the store clock."""

    agent_id: str
    text: str
    created_at: datetime | None = None
    accessed_at: datetime | None = None
    access_count: int = 0
    weight: float = 1.0
    pinned: bool = False
    fact_id: str | None = None
    confidence: Confidence | None = None


@dataclass(frozen=True)
class ShowResult:
    fact: Fact
    replaced_by: Fact | None
    consumed: list[Fact]
    cycle: CycleRecord | None
    # A fact retired by a revert or an approved review: that record; and for a summary a
    # revert retired, the facts it had consumed, live again.
    retirement: Retirement | None = None
    restored: list[Fact] = field(default_factory=list)


# ---- the consolidation cycle ------------------------------------------------------------
@dataclass(frozen=True)
class WeightChange:
    id: str
    before: float
    after: float


@dataclass(frozen=True)
class DecayOutcome:
    examined: int
    changed: int
    largest_drops: list[WeightChange]


# Builds a cycle's journal record from what its decay did; the record is saved in the
# decay's own transaction, so a cycle that changed weights is journaled even if its
# process dies before the cycle ends (ADR 0050).
JournalDecay = Callable[[DecayOutcome], CycleRecord]


@dataclass(frozen=True)
class Selection:
    live: int
    candidates: list[tuple[float, str]]
    batch: list[tuple[float, Fact]]


@dataclass(frozen=True)
class ApplyRequest:
    """What review decided, plus the batch snapshot the decision was made on."""

    cycle_id: str
    agent_id: str
    summary: str
    consume: list[str]
    snapshot: dict[str, str]  # id -> text as shown to the summariser


@dataclass
class ApplyOutcome:
    applied: bool
    reason: str = ""
    summary: Fact | None = None
    consumed: list[str] = field(default_factory=list)
    record: CycleRecord | None = None  # the journal record as committed, when applied


T = TypeVar("T")


@dataclass(frozen=True)
class TrialApply(Generic[T]):
    """What `trial_apply` saw: `look` of the index before the apply and after it, in one
    write transaction that was then abandoned. `applied` is False when the proposal has
    gone stale (`reason` says why; there is no `after`)."""

    applied: bool
    before: T
    after: T | None = None
    reason: str = ""
    consumed: list[str] = field(default_factory=list)
    summary_id: str = ""  # the summary's id in the trial only: a real apply mints another


@dataclass(frozen=True)
class PruneOutcome:
    pruned: list[Fact]
    record: CycleRecord  # the journal record as committed, with the pruned copies


# ---- the knowledge graph ---------------------------------------------------------------
class EntityLike(Protocol):
    @property
    def id(self) -> str: ...
    @property
    def label(self) -> str: ...
    @property
    def type(self) -> str: ...


@dataclass(frozen=True)
class ExtractOutcome:
    examined: int
    extracted: int
    skipped_unchanged: int
    nodes_touched: int
    edges_touched: int


@dataclass(frozen=True)
class EntityCount:
    """An entity (`name:maria lopez`, `ident:sup-12`, `email:…`, `url:…`) and how many live
    facts mention it (for a neighbour: mention it together with the entity asked about)."""

    id: str
    label: str
    type: str
    facts: int


@dataclass(frozen=True)
class EntityIndex:
    """The entities an agent's live facts mention, most mentioned first (then by label).
    `pending` live facts were neither extracted by a cycle nor by this read (a read
    extracts at most `graph_ops.READ_EXTRACT_LIMIT` itself): they are not counted."""

    entities: list[EntityCount]
    live: int
    pending: int = 0


@dataclass(frozen=True)
class GraphDecayOutcome:
    nodes: int
    edges: int
    nodes_removed: int
    edges_removed: int


# ---- import ----------------------------------------------------------------------------
OnConflict = Literal["refuse", "keep-store"]
ON_CONFLICT: tuple[OnConflict, ...] = ("refuse", "keep-store")
MAX_NAMED = 5  # problems named in one message; the rest are counted


@dataclass(frozen=True)
class ImportIssue:
    """One row of the file the store already holds differently."""

    kind: Literal["fact", "cycle"]
    id: str
    where: str  # "line 7" (jsonl) or "item 3" (array)
    reason: str

    def __str__(self) -> str:
        return f"{self.where}: {self.kind} {self.id}: {self.reason}"


@dataclass(frozen=True)
class ImportResult:
    facts_added: int
    facts_skipped: int  # already present: identical, state kept, or in conflict
    records_added: int
    records_skipped: int
    conflicts: list[ImportIssue] = field(default_factory=list)
    kept_store_state: list[ImportIssue] = field(default_factory=list)
    probes_added: int = 0
    review_held: int = 0  # duplicates and possible updates the imported facts made


class ImportConflicts(Conflict):
    """The file holds ids the store holds differently; nothing was imported."""

    def __init__(self, conflicts: list[ImportIssue]) -> None:
        self.conflicts = conflicts
        shown = "; ".join(map(str, conflicts[:MAX_NAMED]))
        more = f"; and {len(conflicts) - MAX_NAMED} more" if len(conflicts) > MAX_NAMED else ""
        differ = counted(len(conflicts), "row differs", "rows differ")
        super().__init__(f"{differ} from the store's: {shown}{more}")


@dataclass(frozen=True)
class Checkpoint:
    """An agent's saved working state: `state` is the JSON object it sent, as sent."""

    id: str
    agent_id: str
    created_at: str
    state: str | None


# ---- the review queue ------------------------------------------------------------------
@dataclass(frozen=True)
class Remembered:
    """A fact as written, and the review items (duplicate, possible update) it raised."""

    fact: Fact
    held: list[ReviewProposal]


@dataclass(frozen=True)
class ReviewDecision:
    """A held change as decided, and the journal record of the decision. `applied` is
    False for a rejection and for an approval discarded as stale (its reason says why)."""

    proposal: ReviewProposal
    record: CycleRecord
    applied: bool


@dataclass(frozen=True)
class VectorBlocks:
    """An agent's vector blocks at one store generation (`Store.vector_blocks_since`): the
    numbers of all blocks, and the rows and ids of those changed since the asked
    generation. What a per-process vector cache needs to stay exact (ADR 0045)."""

    generation: int
    model: str
    dimension: int
    block_rows: int  # rows a block holds when full: row r of block b is b * block_rows + r
    blocks: tuple[int, ...]  # every block of the agent, ascending
    changed: dict[int, tuple[Any, tuple[str, ...]]]  # block -> (float32 rows, ids; "" free)


@dataclass(frozen=True)
class FactVectors:
    """The stored vectors of some facts (`Store.fact_vectors`): each fact's rows (one per
    piece, unit float32) of the store's one model."""

    model: str
    dimension: int
    rows: dict[str, Any]  # fact id -> float32 matrix, one row per piece


@dataclass(frozen=True)
class EmbedState:
    """Where the store's embeddings stand (ADR 0034)."""

    model: str | None  # None: the store has never embedded
    dimension: int | None  # None until the first vectors of `model` are stored
    backlog: int  # live facts waiting for a vector
    vectors: int  # live facts holding one of `model`


# ---- moving a store between backends (ADR 0046) ------------------------------------------
# Counters a migration carries: the journal's (I-5 checks them against it), the review
# queue's pending count, and the activity feed's last write number.
MOVED_COUNTERS = (
    "consolidations",
    "facts_consolidated",
    "reverts",
    "cycles",
    "review_pending",
    "activity_seq",
)


# ---- memory as it was (`past_ops`) -----------------------------------------------------
PastState = Literal["live", "tombstone"]
NowState = Literal["live", "tombstone", "pruned"]


class PastFact(msgspec.Struct, frozen=True):  # a Struct: 100k of them are made per read
    """A fact as it stood at a past moment: `then` live or a tombstone (`ended` says
    what made it one), `now` where it is today, `later` what happened to it since,
    oldest first. `fact` is the store's row today (a pruned fact's copy in the journal),
    or None when only the id was asked for (of a fact live now). `approximate`: a time
    in `later` or `ended` was derived after the fact (a store written before schema 6)."""

    fact_id: str
    fact: Fact | None
    then: PastState
    now: NowState
    later: list[Ending]
    ended: Ending | None = None
    approximate: bool = False

    def without_fact(self) -> PastFact:
        """The same, naming a fact that is live now by id only (the store's postings and
        rows answer for it); one that is not keeps its row (recall as of then analyses
        its text: one read here, not one round trip per fact later)."""
        if self.now != "live" or self.fact is None:
            return self
        return PastFact(
            self.fact_id, None, self.then, self.now, self.later, self.ended, self.approximate
        )


@dataclass(frozen=True)
class PastFacts:
    """The facts of one moment (`moment`), newest first. `derived`: the store keeps no
    endings yet (a store from before schema 6 read as it is), so every one was derived
    from its journal just now."""

    moment: Moment
    agent: str | None
    facts: list[PastFact]
    derived: bool = False

    @property
    def approximate(self) -> bool:
        return any(p.approximate for p in self.facts)


@dataclass(frozen=True)
class VectorSnapshot:
    """A store's embedding vectors as a migration carries them (ADR 0058): its model and
    dimension, the rows of its vector blocks in the layout both backends store
    (`vector_layout`; the block stamps aside, which are generations of that store), and
    the facts still waiting for a vector."""

    model: str | None = None  # None: the store has never embedded
    dimension: int | None = None
    rows: list[tuple[bytes, bytes]] = field(default_factory=list)  # key order
    queue: list[tuple[str, str]] = field(default_factory=list)  # (agent, fact id), key order


# How a migration's target takes the source's vectors (`vector_ops.copy_mode`).
VectorCopyMode = Literal["copy", "queue", "switch", "none"]


@dataclass(frozen=True)
class VectorLoad:
    """What a migration's target did with the source's vectors (`vector_ops.copy_mode`):
    `copied` facts came with their vectors, `queued` wait for one of `model`."""

    mode: VectorCopyMode
    model: str | None  # the target's model afterwards
    dimension: int | None
    copied: int
    queued: int


@dataclass(frozen=True)
class StoreSnapshot:
    """Everything a migration carries, read in one transaction (`MemoryStore.snapshot`).
    `rows` holds the tables copied row for row, as (key, value) bytes in the LMDB
    layout, which both backends read and write (`Tx.iter_rows`)."""

    stem_language: str
    demo: str | None  # when the demo claimed the store, if it did
    counters: dict[str, int]
    facts: list[Fact]  # by agent, oldest first
    records: list[CycleRecord]  # oldest first
    probes: list[Probe]
    rows: dict[str, list[tuple[bytes, bytes]]]
    activity: list[ActivityEntry]  # oldest first
    # Derived data (a function of each text and the model): not content, so `empty` and a
    # re-run's "already holds this copy" leave it aside.
    vectors: VectorSnapshot = field(default_factory=VectorSnapshot)
    # The probe schedule's meta rows (`probe_ops.SCHEDULE_KEY`, `LAST_RUN_KEY`), as set.
    probe_schedule: dict[str, str] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        """Holds no content (an activity feed alone is history, not content)."""
        return not (self.facts or self.records or self.probes or any(self.rows.values()))


@dataclass(frozen=True)
class LoadResult:
    """What `MemoryStore.load_snapshot` wrote."""

    facts: int
    records: int
    activity_copied: bool  # the feed came along (only into a store with no feed yet)
    vectors: VectorLoad = field(default_factory=lambda: VectorLoad("none", None, None, 0, 0))


class TargetNotEmpty(Conflict):
    """A migration's target holds something already; nothing was copied."""

    def __init__(self, held: str) -> None:
        self.held = held
        super().__init__(f"the target store already holds {held}; nothing was copied")
