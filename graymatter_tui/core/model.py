"""Plain typed records shared by every layer. No I/O here.

Field names of `Fact` are upstream GrayMatter's JSON names so exports interoperate.
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import msgspec

# `superseded_by` value for a fact retired by hand with no replacement.
RETIRED = "agent"

FactState = Literal["live", "tombstones", "all"]
FACT_STATES: tuple[FactState, ...] = ("live", "tombstones", "all")

# How a cycle ended; a record still being written has "" (no outcome yet).
# A probe run (kind "probe_run") is "scored": it changes no fact.
Outcome = Literal["applied", "discarded", "failed", "skipped", "dry_run", "rejected", "scored"]


class Fact(msgspec.Struct, frozen=True, kw_only=True, gc=False):
    id: str
    agent_id: str
    text: str
    created_at: str
    accessed_at: str
    access_count: int = 0
    weight: float = 1.0
    superseded_by: str = ""
    pinned: bool = False
    pinned_at: str | None = None
    cycle_id: str = ""
    # Pass-through fields from upstream stores, kept on import and export.
    confidence: str | None = None
    kind: str | None = None
    # Who wrote the fact (`graymatter_tui.core.provenance`): cli, tui, import, consolidation,
    # demo, mcp:<client>. None for facts written before stores recorded it (schema 3).
    source: str | None = None

    @property
    def is_live(self) -> bool:
        return self.superseded_by == ""

    @property
    def is_tombstone(self) -> bool:
        return self.superseded_by != ""

    @property
    def is_retired(self) -> bool:
        return self.superseded_by == RETIRED


def fact_to_dict(fact: Fact) -> dict[str, Any]:
    """The CLI/JSON shape of a fact: every field under upstream GrayMatter's JSON name, the
    pass-through fields (`confidence`, `kind`) and our `source` only when set."""
    out: dict[str, Any] = msgspec.structs.asdict(fact)
    for key in ("confidence", "kind", "source"):
        if out[key] is None:
            del out[key]
    return out


ActivityAction = Literal[
    "add",
    "update",
    "forget",
    "pin",
    "unpin",
    "link",
    "consolidation",
    "revert",
    "import",
    "prune",
    "checkpoint",
    "alias",
    "review",
    "probe",
]
ACTIVITY_ACTIONS: tuple[ActivityAction, ...] = get_args(ActivityAction)


class ActivityEntry(msgspec.Struct, frozen=True, kw_only=True):
    """One write, as the Activity feed shows it: written in the same transaction as the
    write itself, by whichever process made it."""

    seq: int  # the store's write order, across every process
    at: str
    source: str
    agent_id: str
    action: ActivityAction
    text: str = ""  # the fact's text (clipped), or what the write did
    fact_id: str = ""
    cycle_id: str = ""
    count: int = 1  # facts the write touched


class AgentSummary(msgspec.Struct, frozen=True, kw_only=True):
    agent_id: str
    live_facts: int
    tombstones: int
    pinned: int
    avg_weight: float


class Counters(msgspec.Struct, frozen=True, kw_only=True):
    consolidations: int = 0
    facts_consolidated: int = 0
    reverts: int = 0
    cycles: int = 0


class StoreInfo(msgspec.Struct, frozen=True, kw_only=True):
    data_dir: str
    schema_version: int
    engine: str
    generation: int
    file_bytes: int
    map_size: int
    map_used: int
    created_at: str
    # Snowball language of the recall index; "none" (stores before schema 4: unstemmed).
    stem_language: str = "none"


class IgnoredId(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    reason: str


class GuardVerdict(msgspec.Struct, frozen=True, kw_only=True):
    """The coverage guard's decision for one fact the proposal wanted to consume."""

    id: str
    consumed: bool
    missing: list[str] = []


class BatchItem(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    text: str
    weight: float


class StageResult(msgspec.Struct, frozen=True, kw_only=True):
    stage: str
    summary: str
    details: dict[str, Any] = {}


RecordKind = Literal["consolidate", "revert", "review", "probe_run"]

# ---- probes: saved recall queries every cycle of their agent is checked against -----------
# Stands for the cycle's summary in a probe's `after` list: the summary has no id until
# the apply commits (ADR 0039).
SUMMARY_MARK = "summary"


class Probe(msgspec.Struct, frozen=True, kw_only=True):
    """A recall query an agent's consolidation cycles are checked against before apply."""

    id: str
    agent_id: str
    query: str
    k: int = 8
    created_at: str = ""


def probe_to_dict(probe: Probe) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(probe)
    return out


class ProbeMove(msgspec.Struct, frozen=True, kw_only=True):
    id: str
    before: int  # 1-based rank before the cycle
    after: int  # 1-based rank after it


class ProbeResult(msgspec.Struct, frozen=True, kw_only=True):
    """What a cycle's apply would do to one probe's top k (ADR 0039). `before` and
    `after` are fact ids, best first; `after` holds `SUMMARY_MARK` where the summary
    ranks. `replaced`: consumed facts found before whose summary is found after.
    `lost`: consumed facts found before whose summary is not found after (the probe can
    no longer reach them at all; this flags the cycle). `displaced`: kept facts that fell
    below the top k (still live). `gained`: new in the top k. `moved`: in both, ranked
    differently."""

    probe_id: str
    query: str
    k: int
    before: list[str] = []
    after: list[str] = []
    lost: list[str] = []
    replaced: list[str] = []
    displaced: list[str] = []
    gained: list[str] = []
    moved: list[ProbeMove] = []

    @property
    def changed(self) -> bool:
        return self.before != self.after

    @property
    def verdict(self) -> str:
        """`unchanged`, `changed` or `LOSES n`, as the Consolidate screen and CLI say it."""
        if self.lost:
            return f"LOSES {len(self.lost)}"
        return "changed" if self.changed else "unchanged"


class CycleRecord(msgspec.Struct, kw_only=True):
    """One journal entry: a consolidation cycle, a decision on an agent's held change
    (kind "review", ADR 0027), or a revert of either."""

    cycle_id: str
    kind: RecordKind = "consolidate"
    agent_id: str
    summariser: str = ""
    model: str = ""
    outcome: Outcome | Literal[""] = ""
    reason: str = ""
    batch: list[str] = []
    batch_facts: list[BatchItem] = []
    consumed: list[str] = []
    ignored: list[IgnoredId] = []
    summary_id: str = ""
    summary_text: str = ""
    contradictions: list[str] = []
    pruned: list[Fact] = []
    started_at: str = ""
    finished_at: str = ""
    latency_ms: float = 0.0
    prompt_sha256: str = ""
    raw_response: str = ""
    proposal: dict[str, Any] | None = None
    guard_mode: str = ""
    verdicts: list[GuardVerdict] = []
    stages: list[StageResult] = []
    reverted_by: str = ""
    # Revert records only.
    reverted_cycle_id: str = ""
    restored: list[str] = []
    retired_summary_id: str = ""
    # Review records only: the held change decided (`batch` holds the facts it matched,
    # `consumed` those it made tombstones, `summary_id` the fact it wrote).
    proposal_id: str = ""
    action: str = ""
    target: str = ""
    asked_by: str = ""  # the agent's source (`mcp:<client>`)
    decided_by: str = ""  # the person's: `cli` or `tui`
    # Consolidation records: each probe of the agent checked at review against the store
    # as it would be after apply (ADR 0039). Absent from records written before.
    probes: list[ProbeResult] = []
    # Probe runs only: what asked for the run (`schedule`, `cli`, `tui`) and the
    # agent's facts when it ran (the size of its memory over time, `status --history`).
    trigger: str = ""
    live_facts: int = 0
    tombstones: int = 0
    pinned: int = 0

    @property
    def probes_lost(self) -> int:
        """Facts the probes would lose; a cycle with any is flagged before apply."""
        return sum(len(p.lost) for p in self.probes)


REVERT_KEYS = ("reverted_cycle_id", "restored", "retired_summary_id")
REVIEW_KEYS = ("proposal_id", "action", "target", "asked_by", "decided_by")
PROBE_RUN_KEYS = ("trigger", "live_facts", "tombstones", "pinned")


def cycle_to_dict(record: CycleRecord) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(record)
    out["pruned"] = [fact_to_dict(f) for f in record.pruned]
    # Added beside `reverted_by` (the revert's record id) so a script need not know that
    # an empty string means "not reverted".
    out["reverted"] = bool(record.reverted_by)
    if record.kind != "revert":
        for key in REVERT_KEYS:
            out.pop(key, None)
    if record.kind != "review":
        for key in REVIEW_KEYS:
            out.pop(key, None)
    if record.kind != "probe_run":
        for key in PROBE_RUN_KEYS:
            out.pop(key, None)
    return out


# ---- the review queue: an agent's change held until a person decides (ADR 0027) -----------
# An agent's change held (`mcp --review`), or a pair of live facts the write path found:
# `duplicate` (the newer says nothing the older does not) and `possible_update` (same
# subject, key details differ). Approving a pair item supersedes one fact with the other.
HeldAction = Literal["add", "update", "forget", "pin", "unpin", "duplicate", "possible_update"]
HELD_ACTIONS: tuple[HeldAction, ...] = get_args(HeldAction)
PAIR_ACTIONS: tuple[HeldAction, ...] = ("duplicate", "possible_update")
# What a pair item's `why` holds when the model's cosine found it (core.conflicts).
BY_MEANING = "(by meaning: cosine "
ReviewStatus = Literal["pending", "approved", "rejected", "discarded"]
REVIEW_STATUSES: tuple[ReviewStatus, ...] = get_args(ReviewStatus)


class HeldMatch(msgspec.Struct, frozen=True, kw_only=True):
    """A live fact the held change would act on, as it was when the change was held: the
    staleness fingerprint an approval compares with."""

    id: str
    text: str
    pinned: bool = False
    cycle_id: str = ""  # given back to the fact when an approval is reverted


class ReviewProposal(msgspec.Struct, frozen=True, kw_only=True):
    """An agent's update/forget/pin/unpin (or add) held for a person to approve or reject,
    or a pair of facts (`PAIR_ACTIONS`) found when the newer was written: `matches` holds
    both, the held one first; `target` is the held fact's text, `text` the newer's."""

    id: str
    agent_id: str
    action: HeldAction
    target: str = ""  # the exact text of the facts acted on (not for add)
    text: str = ""  # the new text (add, update)
    source: str = ""  # who asked: `mcp:<client>`; facts an approval writes carry it
    created_at: str = ""
    matches: list[HeldMatch] = []
    status: ReviewStatus = "pending"
    reason: str = ""  # why rejected or discarded
    decided_at: str = ""
    decided_by: str = ""
    record_id: str = ""  # the journal record of the decision
    # Pair items only (absent from proposals held before): the fact just written, the
    # live fact it was compared with, and why the pair was raised.
    fact_id: str = ""
    held_id: str = ""
    why: str = ""
    # The writer's confidence for the fact an add or update writes (None: not given).
    confidence: str | None = None

    @property
    def pending(self) -> bool:
        return self.status == "pending"

    @property
    def is_pair(self) -> bool:
        return self.action in PAIR_ACTIONS

    @property
    def found_by_meaning(self) -> bool:
        """A pair the embedder's pass found (the model's cosine), after the write."""
        return self.is_pair and BY_MEANING in (self.why or "")

    def found_how(self) -> str:
        """How a pair item came to be, for people: "found when cli wrote X" (the write
        path), or "found by meaning after cli wrote X" (the embedder's pass)."""
        how = "found by meaning after" if self.found_by_meaning else "found when"
        return f"{how} {self.source or 'unknown'} wrote {self.fact_id}"

    @property
    def kept_id(self) -> str:
        """A pair item: the fact an approval keeps (the newer of a possible update, the
        held one of a duplicate); the other becomes its tombstone."""
        return self.fact_id if self.action == "possible_update" else self.held_id

    @property
    def dropped_id(self) -> str:
        return self.held_id if self.action == "possible_update" else self.fact_id


def proposal_to_dict(proposal: ReviewProposal) -> dict[str, Any]:
    out: dict[str, Any] = msgspec.to_builtins(proposal)
    if out["confidence"] is None:  # only when given, as on facts
        del out["confidence"]
    return out


class Proposal(msgspec.Struct, frozen=True, kw_only=True):
    """What a summariser proposes. Untrusted until review has turned it into a plan."""

    summary: str
    consumes: list[str]
    contradictions: list[str] = []


class ApplyPlan(msgspec.Struct, frozen=True, kw_only=True):
    """Review's decision: exactly what apply would do, and why everything else is left out."""

    summary: str
    consume: list[str]
    ignored: list[IgnoredId] = []
    verdicts: list[GuardVerdict] = []
    contradictions: list[str] = []
    guard_mode: str = "keys"
    discard_reason: str = ""

    @property
    def applicable(self) -> bool:
        return not self.discard_reason and bool(self.consume)
