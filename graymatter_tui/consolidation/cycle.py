"""The consolidation cycle as explicit stages.

decay → select → propose → review → apply → prune → extract → graph_decay.

A `Cycle` can be advanced one stage at a time (the TUI shows each result) or run to the
end (the CLI). Store stages are synchronous (the TUI runs them in a thread worker);
`propose` is the only network call and is async so it can be cancelled. Nothing is
written outside a stage, so abandoning a cycle changes nothing beyond the stages already
committed, and every cycle ends with one journal record.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

import msgspec

from graymatter_tui.consolidation.meaning import batch_meaning
from graymatter_tui.consolidation.review import Review, review
from graymatter_tui.consolidation.summarisers.base import (
    JOURNAL_RESPONSE_CAP,
    BatchMeaning,
    ReadsMeaning,
    Reply,
    Summariser,
)
from graymatter_tui.core import clock
from graymatter_tui.core.config import (
    DEFAULT_GUARD,
    DEFAULT_HALF_LIFE_HOURS,
    DEFAULT_MAX_BATCH,
    DEFAULT_THRESHOLD,
    Settings,
    SummariserName,
)
from graymatter_tui.core.entities import extract_entities
from graymatter_tui.core.errors import Conflict
from graymatter_tui.core.model import BatchItem, CycleRecord, Outcome, StageResult
from graymatter_tui.core.textsafe import validate_agent
from graymatter_tui.core.words import counted
from graymatter_tui.recall.probes import ProbeCheck, check_probes
from graymatter_tui.storage import PRUNE_BELOW, ApplyRequest, DecayOutcome, MemoryStore

STAGES = ("decay", "select", "propose", "review", "apply", "prune", "extract", "graph_decay")
# How a stage's summary begins when the stage did not do its job. A journal record keeps
# only the summary text, so `stage_state` reads these back for the stepper and replays.
FAILED = "failed: "
DISCARDED = "discarded: "
UNUSABLE = "unusable answer: "
NO_PROPOSAL = "no proposal: "
NOT_RUN = "not run"
StageState = Literal["done", "failed", "discarded", "skipped", "not_run"]
_STATE_BY_PREFIX: tuple[tuple[str, StageState], ...] = (
    (FAILED, "failed"),
    (DISCARDED, "discarded"),
    (UNUSABLE, "discarded"),
    (NO_PROPOSAL, "skipped"),
    (NOT_RUN, "not_run"),
)


def stage_state(result: StageResult) -> StageState:
    """How a finished stage ended: done, failed (the call failed), discarded (an answer or
    a plan was thrown away, e.g. a stale apply), skipped (nothing proposed) or not_run."""
    for prefix, state in _STATE_BY_PREFIX:
        if result.summary.startswith(prefix):
            return state
    return "done"


STAGE_TITLES = {
    "decay": "Decay",
    "select": "Select batch",
    "propose": "Propose",
    "review": "Review",
    "apply": "Apply",
    "prune": "Prune",
    "extract": "Extract entities",
    "graph_decay": "Graph decay",
}


@dataclass(frozen=True)
class CycleOptions:
    threshold: int = DEFAULT_THRESHOLD
    max_batch: int = DEFAULT_MAX_BATCH
    half_life_hours: float = DEFAULT_HALF_LIFE_HOURS
    guard: str = DEFAULT_GUARD
    dry_run: bool = False

    @classmethod
    def from_settings(cls, settings: Settings, *, dry_run: bool = False) -> CycleOptions:
        return cls(
            threshold=settings.threshold,
            max_batch=settings.max_batch,
            half_life_hours=settings.half_life_hours,
            guard=settings.guard,
            dry_run=dry_run,
        )


class Cycle:
    def __init__(
        self,
        store: MemoryStore,
        agent: str,
        summariser: Summariser | None,
        options: CycleOptions | None = None,
    ) -> None:
        validate_agent(agent)
        self.store = store
        self.agent = agent
        self.summariser = summariser
        self.options = options or CycleOptions()
        started = store.now()
        self._started = time.monotonic()
        self.record = CycleRecord(
            cycle_id=store.unused_id(started),
            agent_id=agent,
            summariser=summariser.name if summariser else SummariserName.NONE.value,
            model=summariser.model if summariser else "",
            started_at=clock.format_time(started),
            guard_mode=self.options.guard,
        )
        self.position = 0
        self.batch: list[BatchItem] = []
        self.meaning: BatchMeaning | None = None
        self.reply: Reply | None = None
        self.review: Review | None = None
        self.probe_check = ProbeCheck()  # the probes' results at review (ADR 0039)
        self.decided = False  # an outcome other than "applied" was reached; apply is skipped
        self.done = False
        self.error = ""  # why the last store stage raised, if it did (the stage may be retried)

    # ---- navigation ------------------------------------------------------------------
    @property
    def next_stage(self) -> str | None:
        return None if self.done else STAGES[self.position]

    @property
    def results(self) -> list[StageResult]:
        return list(self.record.stages)

    @property
    def at_review(self) -> bool:
        """Review is finished and apply has not run: the moment to apply or reject."""
        return not self.done and self.next_stage == "apply"

    def _decide(self, outcome: Outcome, reason: str) -> None:
        if not self.decided:
            self.record.outcome = outcome
            self.record.reason = reason
            self.decided = True

    def _finish_stage(self, stage: str, summary: str, **details: Any) -> StageResult:
        result = StageResult(stage=stage, summary=summary, details=details)
        self.record.stages = [*self.record.stages, result]
        self.position += 1
        if self.position == len(STAGES):
            self._close()
        return result

    def _close(self) -> None:
        if self.options.dry_run and self.record.outcome in ("", "skipped"):
            # A dry run changes nothing, so it is never "skipped": it says what would have
            # happened. A summariser that failed or a plan discarded stays so (exit 3).
            why = self.record.reason or "the plan was not applied"
            self.record.outcome, self.record.reason = "dry_run", f"dry run: {why}"
        elif not self.record.outcome:
            self.record.outcome = "skipped"
        self.record.finished_at = clock.format_time(self.store.now())
        self.record.stages = [
            *self.record.stages[:-1],
            msgspec.structs.replace(
                self.record.stages[-1],
                details={
                    **self.record.stages[-1].details,
                    "cycle_ms": round((time.monotonic() - self._started) * 1000, 1),
                },
            ),
        ]
        self._save()
        self.done = True

    def _save(self) -> None:
        """Journal the record; a dry run writes nothing, so it keeps no record either."""
        if not self.options.dry_run:
            self.store.save_record(self.record)

    # ---- running -----------------------------------------------------------------------
    def advance(self) -> StageResult:
        """Run the next stage that needs no model call (store stages)."""
        stage = self.next_stage
        if stage is None:
            raise Conflict("the cycle has finished")
        if stage == "propose":
            raise Conflict("the next stage calls the summariser; use propose()")
        try:
            result = self._store_stages()[stage]()
        except Exception as exc:
            # Kept so that a cycle left after a failing stage is journaled as failed.
            self.error = f"{STAGE_TITLES[stage].lower()} failed: {exc}"
            raise
        self.error = ""
        return result

    def _store_stages(self) -> dict[str, Callable[[], StageResult]]:
        """The stages `advance` runs, by name: every stage but `propose`."""
        return {
            "decay": self._stage_decay,
            "select": self._stage_select,
            "review": self._stage_review,
            "apply": self._stage_apply,
            "prune": self._stage_prune,
            "extract": self._stage_extract,
            "graph_decay": self._stage_graph_decay,
        }

    async def step(self) -> StageResult:
        if self.next_stage == "propose":
            return await self.propose()
        return self.advance()

    async def run(self) -> CycleRecord:
        while not self.done:
            await self.step()
        return self.record

    def run_sync(self) -> CycleRecord:
        return asyncio.run(self.run())

    def reject(self) -> None:
        """Refuse the reviewed proposal: nothing is applied and the cycle ends here."""
        if not self.at_review:
            raise Conflict("there is no reviewed proposal to reject")
        self._decide("discarded", "rejected by the user at review")
        self.decided = True
        self.record.outcome, self.record.reason = "discarded", "rejected by the user at review"
        for stage in STAGES[self.position :]:
            self.record.stages = [
                *self.record.stages,
                StageResult(stage=stage, summary=f"{NOT_RUN}: proposal rejected"),
            ]
        self.position = len(STAGES)
        self.record.finished_at = clock.format_time(self.store.now())
        self._save()
        self.done = True

    def repropose(self) -> None:
        """Ask the summariser again: back to the propose stage, forgetting the last answer."""
        if self.done or self.position not in (STAGES.index("review"), STAGES.index("apply")):
            raise Conflict("a new proposal can be asked for only after propose and before apply")
        keep = STAGES.index("propose")
        self.record.stages = [s for s in self.record.stages if STAGES.index(s.stage) < keep]
        self.position = keep
        self.reply = None
        self.review = None
        self.probe_check = ProbeCheck()
        self.record.probes = []
        self.decided = False
        self.record.outcome = self.record.reason = ""
        self.record.proposal = None
        self.record.ignored, self.record.verdicts, self.record.contradictions = [], [], []
        self.record.summary_text = self.record.raw_response = ""

    @property
    def started(self) -> bool:
        """A stage has run: the cycle may have written (decay) and is journaled."""
        return bool(self.record.stages)

    def cancel(self, reason: str = "cancelled by the user") -> None:
        """Abandon the cycle before it ends; stages already committed stay committed, and
        the record says how it ended in the outcomes the CLI uses: a cycle whose
        summariser failed stays `failed`, a proposal left at review without a decision
        is `discarded`, anything else is `skipped`; the reason says where it was left."""
        if self.done:
            return
        stage = self.next_stage
        if self.decided:
            if self.record.outcome in ("failed", "discarded"):
                self.record.reason = f"{self.record.reason} (then {reason} before {stage})"
        elif self.error:
            self.record.outcome = "failed"
            self.record.reason = f"{self.error} (then {reason})"
        elif self.at_review:
            self.record.outcome = "discarded"
            self.record.reason = f"not applied: {reason} at review"
        else:
            self.record.outcome = "skipped"
            self.record.reason = f"{reason} before {stage}"
        self.decided = True
        self.record.finished_at = clock.format_time(self.store.now())
        self._save()
        self.done = True

    # ---- stages ------------------------------------------------------------------------
    def _stage_decay(self) -> StageResult:
        """Decay, journaling the cycle in the same transaction: from here on the cycle
        has changed the store, so its record exists however the cycle ends (ADR 0050)."""

        def journaled(outcome: DecayOutcome) -> CycleRecord:
            return msgspec.structs.replace(
                self.record, stages=[*self.record.stages, self._decay_result(outcome)]
            )

        outcome = self.store.decay(
            self.agent,
            self.options.half_life_hours,
            dry_run=self.options.dry_run,
            journal=journaled,
        )
        result = self._decay_result(outcome)
        return self._finish_stage(result.stage, result.summary, **result.details)

    def _decay_result(self, outcome: DecayOutcome) -> StageResult:
        verb = "would lower" if self.options.dry_run else "lowered"
        return StageResult(
            stage="decay",
            summary=(
                f"{verb} the weight of {outcome.changed} of {counted(outcome.examined, 'fact')}"
            ),
            details={
                "examined": outcome.examined,
                "changed": outcome.changed,
                "largest_drops": [
                    {"id": c.id, "before": round(c.before, 6), "after": round(c.after, 6)}
                    for c in outcome.largest_drops
                ],
            },
        )

    def _stage_select(self) -> StageResult:
        selection = self.store.selection(
            self.agent, self.options.half_life_hours, max_batch=self.options.max_batch
        )
        live, unpinned = selection.live, selection.candidates
        details: dict[str, Any] = {
            "live": live,
            "unpinned": len(unpinned),
            "threshold": self.options.threshold,
            "max_batch": self.options.max_batch,
        }
        if self.summariser is None:
            self._decide("skipped", "no summariser configured: decay and prune only")
            return self._finish_stage("select", "no summariser: nothing to summarise", **details)
        if live <= self.options.threshold:
            reason = (
                f"{counted(live, 'live fact')}, not more than the threshold of "
                f"{self.options.threshold}"
            )
            self._decide("skipped", reason)
            return self._finish_stage("select", reason, **details)
        size = len(selection.batch)
        self.batch = [
            BatchItem(id=f.id, text=f.text, weight=round(weight, 6))
            for weight, f in selection.batch
        ]
        if not self.batch:
            self._decide("skipped", "no unpinned facts to consolidate")
            return self._finish_stage("select", "no unpinned facts to consolidate", **details)
        self.record.batch = [item.id for item in self.batch]
        self.record.batch_facts = list(self.batch)
        why = f"the weakest {size} of {counted(len(unpinned), 'unpinned live fact')}" + (
            f" (capped at {self.options.max_batch})" if size == self.options.max_batch else ""
        )
        if isinstance(self.summariser, ReadsMeaning):
            # The stored vectors of the batch, read here (a store stage) so propose makes
            # no store call; a store without vectors leaves the stage as it was.
            self.meaning = batch_meaning(self.store, self.agent, self.batch)
            if self.meaning is not None:
                details["meaning_pairs"] = len(self.meaning.pairs)
        return self._finish_stage("select", why, batch=len(self.batch), **details)

    async def propose(self) -> StageResult:
        if self.next_stage != "propose":
            raise Conflict("the next stage is not propose")
        if self.decided or self.summariser is None:
            return self._finish_stage("propose", f"{NOT_RUN}: nothing to propose")
        started = time.monotonic()
        if isinstance(self.summariser, ReadsMeaning):
            reply = await self.summariser.propose_with_meaning(self.batch, self.meaning)
        else:
            reply = await self.summariser.propose(self.batch)
        latency = (time.monotonic() - started) * 1000
        self.reply = reply
        self.record.latency_ms = round(latency, 1)
        self.record.prompt_sha256 = reply.prompt_sha256
        self.record.raw_response = reply.raw[:JOURNAL_RESPONSE_CAP]
        if reply.model:
            self.record.model = reply.model
        details = {"attempts": reply.attempts, "latency_ms": round(latency, 1)}
        if reply.error:
            self._decide("failed", reply.error)
            return self._finish_stage("propose", f"{FAILED}{reply.error}", **details)
        if reply.nothing:
            self._decide("skipped", reply.nothing)
            return self._finish_stage("propose", f"{NO_PROPOSAL}{reply.nothing}", **details)
        if reply.invalid:
            self._decide("discarded", reply.invalid)
            return self._finish_stage("propose", f"{UNUSABLE}{reply.invalid}", **details)
        return self._finish_stage(
            "propose", f"answer received ({counted(len(reply.raw), 'character')})", **details
        )

    def _stage_review(self) -> StageResult:
        if self.decided or self.reply is None:
            return self._finish_stage("review", f"{NOT_RUN}: no answer to review")
        reviewed = review(
            self.reply.raw,
            self.batch,
            structured=self.reply.structured,
            agent=self.agent,
            guard_mode=self.options.guard,
            lookup=self.store.find,
        )
        self.review = reviewed
        plan = reviewed.plan
        if reviewed.proposal is not None:
            self.record.proposal = msgspec.to_builtins(reviewed.proposal)
        self.record.summary_text = plan.summary
        self.record.ignored = list(plan.ignored)
        self.record.verdicts = list(plan.verdicts)
        self.record.contradictions = list(plan.contradictions)
        kept = sum(1 for v in plan.verdicts if not v.consumed)
        details = {
            "consume": len(plan.consume),
            "ignored": len(plan.ignored),
            "kept_by_guard": kept,
            "guard": plan.guard_mode,
        }
        if not plan.applicable:
            self._decide("discarded", plan.discard_reason)
            return self._finish_stage("review", f"{DISCARDED}{plan.discard_reason}", **details)
        summary = f"would consume {len(plan.consume)} of {counted(len(self.batch), 'batch fact')}"
        if plan.ignored:
            summary += f", {counted(len(plan.ignored), 'id')} ignored"
        if kept:
            summary += f", {kept} kept by the coverage guard"
        # Before apply, every probe of the agent is ranked on the store as the apply would
        # leave it; a probe that would lose a fact flags the cycle (it stays appliable).
        self.probe_check = check_probes(self.store, self._apply_request())
        self.record.probes = list(self.probe_check.results)
        if self.probe_check.results:
            details["probes"] = len(self.probe_check.results)
            details["probes_lost"] = self.probe_check.lost
        if self.probe_check.note:
            details["probes_note"] = self.probe_check.note
        if self.probe_check.lost:
            summary += f"; probes would lose {counted(self.probe_check.lost, 'fact')}"
        return self._finish_stage("review", summary, **details)

    def _apply_request(self) -> ApplyRequest:
        assert self.review is not None
        plan = self.review.plan
        return ApplyRequest(
            cycle_id=self.record.cycle_id,
            agent_id=self.agent,
            summary=plan.summary,
            consume=list(plan.consume),
            snapshot={item.id: item.text for item in self.batch},
        )

    def _stage_apply(self) -> StageResult:
        if self.decided or self.review is None:
            return self._finish_stage("apply", NOT_RUN)
        if self.options.dry_run:
            self._decide("dry_run", "dry run: the plan was not applied")
            return self._finish_stage("apply", "dry run: nothing applied")
        outcome = self.store.apply_consolidation(self._apply_request(), self.record)
        if not outcome.applied:
            self._decide("discarded", outcome.reason)
            return self._finish_stage("apply", f"{DISCARDED}{outcome.reason}")
        assert outcome.summary is not None and outcome.record is not None
        self.record = outcome.record  # only now, after the commit
        self.decided = True
        return self._finish_stage(
            "apply",
            f"summary {outcome.summary.id} written; "
            f"{counted(len(outcome.consumed), 'fact')} tombstoned",
            summary_id=outcome.summary.id,
            consumed=len(outcome.consumed),
        )

    def _stage_prune(self) -> StageResult:
        if self.options.dry_run:
            candidates = self.store.selection(self.agent, self.options.half_life_hours).candidates
            doomed = [fact_id for weight, fact_id in candidates if weight < PRUNE_BELOW]
            return self._finish_stage(
                "prune",
                f"dry run: would remove {counted(len(doomed), 'fact')}",
                would_prune=len(doomed),
            )
        pending = msgspec.structs.replace(self.record, outcome=self.record.outcome or "skipped")
        outcome = self.store.prune(self.agent, pending)
        self.record = outcome.record
        return self._finish_stage(
            "prune",
            f"removed {counted(len(outcome.pruned), 'fact')} below weight {PRUNE_BELOW} "
            "(copied to the journal)",
            pruned=len(outcome.pruned),
        )

    def _stage_extract(self) -> StageResult:
        if self.options.dry_run:
            return self._finish_stage("extract", "dry run: not run")
        outcome = self.store.extract_graph(self.agent, extract_entities)
        return self._finish_stage(
            "extract",
            f"extracted {counted(outcome.extracted, 'new or changed fact')} "
            f"({outcome.skipped_unchanged} unchanged skipped)",
            extracted=outcome.extracted,
            unchanged=outcome.skipped_unchanged,
            nodes=outcome.nodes_touched,
            edges=outcome.edges_touched,
        )

    def _stage_graph_decay(self) -> StageResult:
        if self.options.dry_run:
            return self._finish_stage("graph_decay", "dry run: not run")
        outcome = self.store.decay_graph(self.agent, self.options.half_life_hours)
        return self._finish_stage(
            "graph_decay",
            f"{counted(outcome.nodes, 'node')} and {counted(outcome.edges, 'edge')} decayed; "
            f"{outcome.nodes_removed + outcome.edges_removed} removed",
            nodes=outcome.nodes,
            edges=outcome.edges,
            nodes_removed=outcome.nodes_removed,
            edges_removed=outcome.edges_removed,
        )
