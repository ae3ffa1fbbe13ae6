"""Review: agents' changes held by `mcp --review`, every agent's, oldest first (the order
they were asked in), each drawn as a diff like a consolidation's proposal. a approves
(applied in one transaction, or discarded as stale with the reason), x rejects with a
reason, j/k move between them (ADR 0028)."""

from __future__ import annotations

from datetime import datetime
from functools import partial

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Static

from graymatter_tui.core import clock
from graymatter_tui.core.model import ReviewProposal
from graymatter_tui.core.review_modes import HELD_BY_MODE, REFLECT_ACTIONS
from graymatter_tui.core.words import counted
from graymatter_tui.storage import ReviewDecision
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.dialogs import LineEntryScreen
from graymatter_tui.tui.screens.journal import JournalTable
from graymatter_tui.tui.widgets.diff_view import DiffView
from graymatter_tui.tui.widgets.literal import literal

# Pending proposals shown at once; the queue is meant to be emptied, not browsed.
REVIEW_ROWS = 500


def empty_help() -> str:
    """Shown while nothing is held: the `mcp --review` modes that hold agents' changes
    here, and which changes each holds."""
    holding = [(mode, held) for mode, held in HELD_BY_MODE.items() if held]
    width = max(len(mode) for mode, _held in holding)
    lines = ["An agent's change waits here for you when its MCP server holds it:", ""]
    before: frozenset[str] = frozenset()
    for mode, held in holding:
        also = before <= held and bool(before)  # a wider mode: say only what it adds
        named = [
            action for action in REFLECT_ACTIONS if action in (held - before if also else held)
        ]
        says = ("also holds " if also else "holds ") + ", ".join(named)
        lines.append(f"  graymatter-tui mcp --review {mode:<{width}}  {says}")
        before = held
    lines += [
        "",
        "A fact written that duplicates or may update a live fact of its agent waits here",
        "too, as a duplicate or possible_update naming both facts.",
        "",
        "Each held change is drawn here as a diff: a approves it, x rejects it.",
    ]
    return "\n".join(lines)


def _what(proposal: ReviewProposal) -> str:
    if proposal.action == "duplicate":
        return f"{proposal.text} ≈ {proposal.target}"
    if proposal.action == "possible_update":
        return f"{proposal.target} → {proposal.text}"
    return proposal.text if proposal.action == "add" else proposal.target


class ReviewPane(Vertical, Pane):
    TITLE = "Review"
    FOCUS = "#review-table"
    # Pairs the embedder's pass holds move only the review queue and the feed (app.py).
    DEPENDS_ON = ("review_generation",)
    HELP_KEYS = (Binding("j,k", "", "Next / previous held change"),)
    BINDINGS = [
        Action(
            "a",
            "approve",
            "Approve",
            id="review-approve",
            tooltip="Apply the selected held change (discarded if its facts changed since)",
        ),
        Action(
            "x",
            "reject",
            "Reject",
            id="review-reject",
            tooltip="Refuse the selected held change, with a reason",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.proposals: list[ReviewProposal] = []

    def compose(self) -> ComposeResult:
        yield Static("", id="review-info", classes="pane-bar-line", markup=False)
        yield JournalTable(id="review-table", cursor_type="row")
        yield Static("", id="review-row", classes="pane-bar-line", markup=False)
        yield DiffView(id="review-diff")

    def read(self) -> Read:
        store = self.host.store

        def job() -> Draw:
            pending = store.proposals(status="pending", limit=REVIEW_ROWS)
            return partial(self._read_done, pending, store.now())

        return job

    def _read_done(self, pending: list[ReviewProposal], now: datetime) -> None:
        current = self.selected()
        self.proposals = list(reversed(pending))  # oldest first: decide in asking order
        table = self.query_one("#review-table", JournalTable)
        if not table.columns:
            for name in ("asked", "agent", "action", "by", "fact"):
                table.add_column(name)
        table.show_rows(
            [
                (
                    p.id,
                    (
                        Text(clock.short_age(now, p.created_at)),
                        literal(p.agent_id)[:20],
                        Text(p.action),
                        literal(p.source)[:24],
                        literal(_what(p))[:80],
                    ),
                )
                for p in self.proposals
            ]
        )
        if self.proposals and current is not None:
            index = next((i for i, p in enumerate(self.proposals) if p.id == current.id), 0)
            table.move_cursor(row=index)
        count = len(self.proposals)
        info = (
            f" {counted(count, 'held change')} to review, oldest first"
            " · a approves · x rejects · j/k next/prev"
            if count
            else " Nothing held for review"
        )
        self.query_one("#review-info", Static).update(info)
        self._show_selected()

    def selected(self) -> ReviewProposal | None:
        table = self.query_one("#review-table", DataTable)
        if not self.proposals or table.cursor_row < 0:
            return None
        return self.proposals[min(table.cursor_row, len(self.proposals) - 1)]

    def _show_selected(self) -> None:
        proposal = self.selected()
        line = Text(no_wrap=True, overflow="ellipsis")
        view = self.query_one("#review-diff", DiffView)
        if proposal is None:
            view.show_text("" if self.proposals else empty_help())
        else:
            line.append(" proposal ", style="dim")
            line.append(proposal.id, style="bold")
            if proposal.is_pair:
                said = f" · {proposal.agent_id} · {proposal.action.replace('_', ' ')}: "
                said += f"{proposal.why} · {proposal.found_how()}"
            else:
                said = f" · {proposal.agent_id} · asked by {proposal.source}"
            line.append_text(literal(said, "dim"))
            view.show_review(proposal)
        self.query_one("#review-row", Static).update(line)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._show_selected()

    def action_approve(self) -> None:
        proposal = self.selected()
        if proposal is None or not self.host.may_mutate():
            return
        store = self.host.store
        self.host.run_write(
            f"{proposal.action} {proposal.id} decided",
            lambda: store.approve_proposal(proposal.id),
            self._decided,
        )

    def action_reject(self) -> None:
        proposal = self.selected()
        if proposal is None or not self.host.may_mutate():
            return
        store = self.host.store

        def done(reason: str | None) -> None:
            if reason is None:
                return
            self.host.run_write(
                f"{proposal.action} {proposal.id} decided",
                lambda: store.reject_proposal(proposal.id, reason),
                self._decided,
            )

        self.app.push_screen(
            LineEntryScreen(f"Reject {proposal.action} {proposal.id}? Reason (enter to reject):"),
            done,
        )

    def _decided(self, decision: ReviewDecision) -> None:
        """Say what the decision did: a stale approval is no success."""
        proposal = decision.proposal
        if decision.applied:
            message = f"Approved {proposal.action}: journal record {decision.record.cycle_id}"
            self.app.notify(message, title="Applied", markup=False)
        elif proposal.status == "discarded":
            self.app.notify(
                literal(proposal.reason).plain,
                title="Discarded, nothing applied",
                severity="warning",
                markup=False,
            )
        else:
            self.app.notify(f"Rejected {proposal.action} {proposal.id}", markup=False)
