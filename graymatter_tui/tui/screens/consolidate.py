"""Consolidate: run a cycle stage by stage and read the proposal as a diff before apply.

Store stages run in a thread (LMDB write transactions begin and commit there), as does
every read (a new cycle's id, the probes and the texts their results name); the model
call is awaited in an async worker so `esc` can cancel it and the UI never freezes.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from functools import partial

from rich.console import Group, RenderableType
from rich.style import Style
from rich.table import Table
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from graymatter_tui.consolidation.cycle import (
    STAGE_TITLES,
    STAGES,
    Cycle,
    CycleOptions,
    stage_state,
)
from graymatter_tui.consolidation.summarisers import factory as summarisers
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.model import SUMMARY_MARK, Probe, ProbeResult
from graymatter_tui.core.summariser_names import KINDS, SUMMARISERS
from graymatter_tui.core.words import counted
from graymatter_tui.storage import MemoryStore
from graymatter_tui.tui.messages import StoreMoved
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Reach, Read
from graymatter_tui.tui.screens.dialogs import ChooseScreen, ConfirmScreen
from graymatter_tui.tui.screens.layout import is_short
from graymatter_tui.tui.screens.probe_panel import ProbePanel
from graymatter_tui.tui.widgets import stages
from graymatter_tui.tui.widgets.diff_view import DiffView
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.stages import (
    StageStyles,
    add_result,
    mark_cell,
    mark_of,
    stage_grid,
)
from graymatter_tui.tui.widgets.themed import component_styles, redraw_on_theme_change

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
SUMMARISER_CHOICES = [(name.value, f"{name} — {kind.label}") for name, kind in KINDS.items()]


REACH_TEXT = {"checking": "checking…", "none": "✓ nothing to contact", "ok": "✓ ", "failed": "✗ "}

# Colours of the summariser's name, the outcome and notes (app.tcss); stage marks are
# the `stage--*` classes.
SUMMARISER = "consolidate--summariser"
APPLIED = "consolidate--applied"
NOT_APPLIED = "consolidate--not-applied"
NOTE = "consolidate--note"


def reach_text(reach: Reach) -> str:
    return REACH_TEXT[reach.state] + reach.detail


class ConsolidatePane(Vertical, Pane, can_focus=True):
    TITLE = "Consolidate"
    COMPONENT_CLASSES = {*stages.COMPONENT_CLASSES, SUMMARISER, APPLIED, NOT_APPLIED, NOTE}
    PARTS = (ProbePanel,)
    BINDINGS = [
        Action(
            "n",
            "next_stage",
            "Next stage",
            id="cycle-next",
            title="Step cycle",
            tooltip="Run the next stage of the cycle",
        ),
        Action(
            "a",
            "apply",
            "Apply",
            id="cycle-apply",
            title="Apply proposal",
            tooltip="Apply the reviewed proposal",
        ),
        Action(
            "r",
            "reject",
            "Reject",
            id="cycle-reject",
            title="Reject proposal",
            tooltip="Discard the reviewed proposal",
        ),
        Action(
            "p",
            "repropose",
            "Propose again",
            id="cycle-repropose",
            tooltip="Ask the summariser again for the cycle under review",
        ),
        Action(
            "g",
            "run_to_end",
            "Run to end",
            id="cycle-run",
            title="Run cycle to the end",
            tooltip="Run every remaining stage",
        ),
        Action(
            "c", "new_cycle", "New cycle", id="cycle-new", tooltip="Start a new consolidation cycle"
        ),
        Action(
            "m",
            "choose_summariser",
            "Summariser",
            id="cycle-summariser",
            title="Choose summariser",
            tooltip=" · ".join(SUMMARISERS),
        ),
        Action(
            "escape",
            "cancel",
            "Cancel call",
            id="cycle-cancel",
            tooltip="Cancel the running call to the summariser",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.cycle: Cycle | None = None
        self.busy = False
        self._call_started: float | None = None
        self._worker: Worker[None] | None = None
        self._note = ""
        self._ticking = False
        self._probes: list[Probe] = []
        self._texts: dict[str, str] = {}  # fact id -> text, of the facts probe results name
        self._stopping = False  # the app is closing: no further stage starts

    def compose(self) -> ComposeResult:
        yield Static("", id="summariser-line", classes="pane-bar-line", markup=False)
        yield Static("", id="stepper", markup=False)
        yield Static("", id="call-status", markup=False)
        yield DiffView(id="diff")
        yield ProbePanel(id="probes")

    def on_mount(self) -> None:
        self.set_interval(0.1, self._tick)
        self.watch(self.app, "reach", self.render_state, init=False)
        self.watch(self.app, "agent", self._agent_changed, init=False)
        self.render_state()
        redraw_on_theme_change(self, self.render_state)

    def _styles(self) -> dict[str, Style]:
        """The stage marks' and this pane's own colours in the current theme."""
        return {
            **stages.stage_styles(self),
            **component_styles(self, (SUMMARISER, APPLIED, NOT_APPLIED, NOTE)),
        }

    def read(self) -> Read:
        """The cycle is this pane's own; of the store it shows only the agent's probes
        (and the texts of the facts the cycle's probe results name)."""
        store, agent = self.host.store, self.host.agent
        results = list(self.cycle.record.probes) if self.cycle is not None else []

        def job() -> Draw:
            return partial(self._probes_read, store.probes(agent), _texts(store, results))

        return job

    def _probes_read(self, probes: list[Probe], texts: dict[str, str]) -> None:
        self._probes = probes
        self._texts = texts
        self._show_probes()

    def _show_probes(self) -> None:
        cycle = self.cycle
        results = cycle.record.probes if cycle is not None else []
        texts = dict(self._texts)
        if cycle is not None:
            texts[SUMMARY_MARK] = cycle.record.summary_text
        styles = self._styles()
        self.query_one(ProbePanel).show(
            self._probes,
            results,
            texts,
            {"lost": styles[NOT_APPLIED] + Style(bold=True), "changed": styles[NOTE]},
        )

    # ---- rendering -----------------------------------------------------------------------
    def render_state(self) -> None:
        settings = self.host.settings
        line = Text(no_wrap=True, overflow="ellipsis")
        line.append(" Summariser ", style="bold")
        line.append(settings.summariser, style=self._styles()[SUMMARISER])
        line.append(f"  {reach_text(self.host.reach)}", style="dim")
        line.append("   m", style="bold")
        line.append(" change\n")
        # The cycle's settings on a line of their own, so a long reachability line
        # never pushes them off a narrow terminal.
        line.append(
            f" guard {settings.guard} · threshold {settings.threshold} · "
            f"max batch {settings.max_batch} · half-life {settings.half_life_hours:.0f} h",
            style="dim",
        )
        self.query_one("#summariser-line", Static).update(line)
        self.query_one("#stepper", Static).update(self._stepper())
        self._show_diff()
        self._show_probes()

    def _show_diff(self) -> None:
        """Before review, what the model proposed; from review on, what review made of it."""
        view = self.query_one(DiffView)
        cycle = self.cycle
        if cycle is None:
            view.show_record(None)
        elif cycle.next_stage == "review" and cycle.reply is not None and not cycle.decided:
            view.show_proposal(cycle.record, cycle.reply.raw, structured=cycle.reply.structured)
        else:
            view.show_record(cycle.record)

    def on_resize(self) -> None:
        # The stepper folds up on a short terminal and unfolds on a tall one.
        self.query_one("#stepper", Static).update(self._stepper())

    def _stepper(self) -> RenderableType:
        cycle = self.cycle
        styles = self._styles()
        if cycle is None:
            out = Text()
            out.append(" No cycle yet. ", style="dim")
            out.append("n", style="bold")
            out.append(" starts one and runs the first stage; ", style="dim")
            out.append("g", style="bold")
            out.append(" runs it to the end.", style="dim")
            if self._note:
                out.append("\n")
                out.append_text(literal(f" {self._note}", styles[NOTE]))
            return out
        head = Text(overflow="ellipsis")
        head.append(f" cycle {cycle.record.cycle_id} · agent ", style="dim")
        head.append_text(literal(cycle.agent, "bold"))
        head.append(f" · {cycle.record.summariser}", style="dim")
        parts: list[RenderableType] = [head]
        compact = is_short(self.app)
        if compact:
            parts.append(self._progress(cycle, styles))
        grid = stage_grid()
        done = {r.stage: r for r in cycle.record.stages}
        shown = [self._detail_stage(cycle)] if compact else list(STAGES)
        for stage in shown:
            result = done.get(stage) if stage else None
            if result is not None:
                add_result(grid, result, STAGE_TITLES[result.stage], styles)
        for stage in STAGES:
            if stage == cycle.next_stage:
                marker = SPINNER[int(time.monotonic() * 10) % len(SPINNER)] if self.busy else "▶"
                hint = "running…" if self.busy else self._hint(stage)
                grid.add_row(
                    mark_cell(marker, styles["next"] + Style(bold=True)),
                    Text(
                        STAGE_TITLES[stage], style=styles["next"] + Style(bold=True, reverse=True)
                    ),
                    Text(hint, style=styles["next"]),
                )
            elif stage not in done and not compact:
                grid.add_row(mark_cell("·", "dim"), Text(STAGE_TITLES[stage], style="dim"), "")
        parts.append(grid)
        tail = Text()
        if cycle.done:
            outcome = cycle.record.outcome
            color = styles[APPLIED if outcome == "applied" else NOT_APPLIED]
            if not compact:
                tail.append("\n")
            tail.append(f" Outcome: {outcome}", style=color + Style(bold=True))
            if cycle.record.reason:
                tail.append_text(literal(f" — {cycle.record.reason}"))
            tail.append("   (c new cycle)", style="dim")
        if self._note:
            tail.append("\n" if tail else "")
            tail.append_text(literal(f" {self._note}", styles[NOTE]))
        if tail:
            parts.append(tail)
        return Group(*parts)

    @staticmethod
    def _detail_stage(cycle: Cycle) -> str | None:
        """The one result a folded stepper shows: the stage that failed, threw its work
        away or had nothing to propose, else apply once it has run, else the latest."""
        results = cycle.record.stages
        for result in results:
            if stage_state(result) in ("failed", "discarded", "skipped"):
                return result.stage
        if any(r.stage == "apply" for r in results):
            return "apply"
        return results[-1].stage if results else None

    @staticmethod
    def _progress(cycle: Cycle, styles: StageStyles) -> Table:
        """Every stage on one line: ✓ done (✗ failed or discarded), ▶ next, · to come;
        on a narrow terminal it wraps under itself."""
        done = {r.stage: r for r in cycle.record.stages}
        out = Text()
        for stage in STAGES:
            title = STAGE_TITLES[stage].split()[0] if stage != "graph_decay" else "Graph"
            result = done.get(stage)
            if result is not None:
                mark, style = mark_of(result, styles)
                out.append(mark, style=style)
                out.append(title + " ")
            elif stage == cycle.next_stage:
                out.append("▶" + title, style=styles["next"] + Style(bold=True))
                out.append(" ")
            else:
                out.append("·" + title + " ", style="dim")
        grid = Table.grid(expand=True)
        grid.add_column(width=2)
        grid.add_column(ratio=1)
        grid.add_row("", out)
        return grid

    def _hint(self, stage: str) -> str:
        if stage == "apply" and self.cycle and not self.cycle.decided:
            return "a apply · r reject · p propose again"
        if stage == "propose":
            return "n call the summariser · esc cancels a running call"
        return "n next"

    def _tick(self) -> None:
        status = self.query_one("#call-status", Static)
        if self._call_started is None:
            if self._ticking:
                self._ticking = False
                status.update("")
                status.display = False
            return
        self._ticking = True
        status.display = True
        elapsed = time.monotonic() - self._call_started
        spin = SPINNER[int(elapsed * 10) % len(SPINNER)]
        status.update(
            Text(
                f" {spin} waiting for {self.host.settings.summariser}: {elapsed:5.1f} s   "
                "(esc cancels)",
                style=self._styles()[NOTE] + Style(bold=True),
            )
        )
        self.query_one("#stepper", Static).update(self._stepper())

    # ---- running stages --------------------------------------------------------------
    def _cycle_maker(self) -> Callable[[], Cycle]:
        """A new cycle with the settings and agent of now, made in a thread (it reads the
        store for an unused id)."""
        settings, store, agent = self.host.settings, self.host.store, self.host.agent
        return lambda: Cycle(
            store,
            agent,
            summarisers.from_settings(settings),
            CycleOptions.from_settings(settings),
        )

    def _start(
        self, *, one: bool = False, through_review: bool = False, to_end: bool = False
    ) -> None:
        if self.busy:
            self.app.notify("A stage is still running.", severity="warning")
            return
        if not self.host.may_mutate():
            return
        self._note = ""
        make = self._cycle_maker() if self.cycle is None or self.cycle.done else None
        self.busy = True
        self._worker = self._run(
            self.cycle, make, one=one, through_review=through_review, to_end=to_end
        )

    @work(exclusive=True, group="cycle", exit_on_error=False)
    async def _run(
        self,
        cycle: Cycle | None,
        make: Callable[[], Cycle] | None,
        *,
        one: bool,
        through_review: bool,
        to_end: bool,
    ) -> None:
        store = self.host.store
        try:
            if make is not None:
                try:
                    cycle = await asyncio.to_thread(make)
                except GraymatterError as exc:
                    self.app.notify(literal(exc).plain, severity="error", markup=False)
                    return
                self.cycle = cycle
            assert cycle is not None
            while not cycle.done and not self._stopping:
                stage = cycle.next_stage
                if stage == "propose":
                    self._call_started = time.monotonic()
                    try:
                        await cycle.propose()
                    finally:
                        self._call_started = None
                        self._tick()  # the "waiting for" line goes now, not at the next tick
                else:
                    await asyncio.to_thread(cycle.advance)
                    if cycle.record.probes:  # the texts of the facts its probes name
                        results = list(cycle.record.probes)
                        self._texts = await asyncio.to_thread(_texts, store, results)
                self.render_state()
                if one or (through_review and stage == "review"):
                    break
                if not to_end and cycle.at_review and not cycle.decided:
                    break
        finally:
            self.busy = False
            self.render_state()
            # The stages wrote: the panes read again, as after any write of this process.
            self.host.read_in_thread(self, store.generation, self._wrote, group="cycle-generation")

    def _wrote(self, generation: int) -> None:
        self.app.post_message(StoreMoved(generation))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker:
            return
        if event.state == WorkerState.CANCELLED:
            self._note = "Model call cancelled: n asks again, c abandons this cycle."
            self.busy = False
            self._call_started = None
            self.render_state()
        elif event.state == WorkerState.ERROR:
            error = event.worker.error
            self.busy = False
            self._call_started = None
            self._note = f"Stage failed: {error}" if error else "Stage failed"
            self.app.notify(
                literal(self._note + " — ctrl+r retries").plain, severity="error", markup=False
            )
            self.render_state()

    # ---- actions ---------------------------------------------------------------------
    def action_next_stage(self) -> None:
        cycle = self.cycle
        if cycle is not None and cycle.at_review and not cycle.decided:
            self.app.notify("The proposal waits for you: a applies it, r rejects it.")
            return
        self._start(one=True)

    def action_run_to_end(self) -> None:
        self._start(to_end=True)

    def action_new_cycle(self) -> None:
        if self.busy:
            self.app.notify("Cancel the running call first (esc).", severity="warning")
            return
        cycle = self.cycle
        if cycle is None or cycle.done or not cycle.started:
            self._forget_cycle()
            return

        def answered(yes: bool | None) -> None:
            if yes and self.cycle is cycle:
                self.host.run_write(
                    "cycle abandoned", lambda: cycle.cancel("abandoned by the user (c)")
                )
                self._forget_cycle()

        self.app.push_screen(
            ConfirmScreen(
                f"Abandon cycle {cycle.record.cycle_id}?",
                _abandon_detail(cycle),
                yes="Abandon",
            ),
            answered,
        )

    def _forget_cycle(self) -> None:
        self.cycle = None
        self._note = ""
        self.render_state()

    def write_before_closing(self) -> Callable[[], object] | None:
        """The app is closing: no further stage starts and a running model call is
        cancelled; a store stage already running finishes (it cannot be interrupted).
        Then an unfinished cycle is journaled with how it ended: its record exists
        since decay, and this gives it its end."""
        cycle = self.cycle
        self._stopping = True
        if self.busy and self._worker is not None and self._call_started is not None:
            self._worker.cancel()
        if cycle is None or cycle.done or not (cycle.started or self.busy):
            return None

        def close() -> None:
            while self.busy:  # the running store stage; the app bounds the wait
                time.sleep(0.02)
            if cycle.started and not cycle.done:
                cycle.cancel("left when the TUI was closed")

        return close

    def action_apply(self) -> None:
        cycle = self.cycle
        if cycle is None or not cycle.at_review or cycle.decided:
            self.app.notify(_why_nothing_to_apply(cycle), severity="warning", markup=False)
            return
        if not cycle.record.probes_lost:
            self._start(to_end=True)
            return
        # A flagged cycle stays appliable, but only once the person has read the flag.
        losing = [p for p in cycle.record.probes if p.lost]
        detail = "\n".join(
            f"{p.query[:60]} — loses {len(p.lost)} of its top {p.k}" for p in losing[:5]
        )

        def answered(yes: bool | None) -> None:
            if yes:
                self._start(to_end=True)

        self.app.push_screen(
            ConfirmScreen(
                f"Apply although {counted(len(losing), 'probe')} would lose "
                f"{counted(cycle.record.probes_lost, 'fact')} "
                f"{'it finds' if len(losing) == 1 else 'they find'} now?",
                detail,
                yes="Apply",
            ),
            answered,
        )

    def action_reject(self) -> None:
        cycle = self.cycle
        if cycle is None or not cycle.at_review or self.busy:
            self.app.notify("Nothing to reject: step to review first (n).", severity="warning")
            return

        def after(_result: object) -> None:
            self.render_state()

        self.host.run_write("proposal rejected; nothing applied", cycle.reject, after)

    def action_repropose(self) -> None:
        cycle = self.cycle
        if cycle is None or self.busy:
            return
        if cycle.next_stage == "propose" and not cycle.decided:
            # Nothing proposed yet (a call was cancelled): asking again is just proposing.
            self._start(through_review=True)
            return
        try:
            cycle.repropose()
        except GraymatterError as exc:
            self.app.notify(literal(exc).plain, severity="warning", markup=False)
            return
        self._start(through_review=True)

    def on_probe_panel_remove(self, event: ProbePanel.Remove) -> None:
        if not self.host.may_mutate():
            return
        store, probe = self.host.store, event.probe
        self.host.run_write(f"probe removed: {probe.query}", lambda: store.remove_probe(probe.id))

    def action_cancel(self) -> None:
        if self.busy and self._worker is not None and self._call_started is not None:
            self._worker.cancel()
        elif self.busy:
            self.app.notify("A store stage is finishing; it cannot be interrupted.")

    def action_choose_summariser(self) -> None:
        if self.busy:
            return

        def chosen(value: str | None) -> None:
            if value:
                # The app probes the new summariser; this pane and Status follow its reach.
                self.host.settings = self.host.settings.with_overrides(summariser=value)
                self.render_state()

        self.app.push_screen(
            ChooseScreen("Summariser", SUMMARISER_CHOICES, self.host.settings.summariser), chosen
        )

    def _agent_changed(self) -> None:
        cycle = self.cycle
        if cycle is not None and not cycle.done and cycle.started and not self.busy:
            self.host.run_write(
                "cycle abandoned (agent changed)",
                lambda: cycle.cancel("abandoned when the agent was changed"),
            )
        if not self.busy:
            self.cycle = None
        self.render_state()


def _abandon_detail(cycle: Cycle) -> str:
    """What abandoning keeps: the stages already committed, and the journal's record."""
    decay = next((r for r in cycle.record.stages if r.stage == "decay"), None)
    lines = []
    if decay is not None and decay.details.get("changed"):
        lines.append(f"Decay already {decay.summary}.")
    lines.append("Committed stages stay; the journal keeps the cycle with how it ended.")
    return "\n".join(lines)


def _why_nothing_to_apply(cycle: Cycle | None) -> str:
    """The warning for `a` when there is no proposal to apply, saying why."""
    if cycle is None:
        return "Nothing to apply: no cycle yet (n starts one)."
    record = cycle.record
    if cycle.done or cycle.decided:
        said = {
            "applied": "this cycle's proposal was already applied",
            "failed": "the summariser failed",
            "discarded": "the proposal was discarded",
            "skipped": "there was nothing to summarise",
            "dry_run": "this was a dry run",
        }.get(record.outcome, "the cycle has ended")
        reason = f": {record.reason}" if record.reason and record.outcome != "applied" else ""
        return f"Nothing to apply: {said}{reason}. c starts a new cycle."
    return f"Nothing to apply yet: the cycle is before {cycle.next_stage} (n steps to review)."


def _texts(store: MemoryStore, results: list[ProbeResult]) -> dict[str, str]:
    """fact id -> text of the facts `results` name (a read: in a thread)."""
    wanted = sorted({i for r in results for i in (*r.before, *r.after) if i != SUMMARY_MARK})
    return {f.id: f.text for f in store.find_many(wanted) if f is not None} if wanted else {}
