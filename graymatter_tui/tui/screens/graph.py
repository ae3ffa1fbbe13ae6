"""Graph: the entities the chosen agent's live facts mention (names, identifiers, emails,
URLs), each with how many live facts mention it, filtered as you type. `enter` on one
lists the facts that mention it (drawn as the Facts tab draws them; `enter` on a fact
opens its detail and receipt chain) and its neighbours, the entities mentioned with it;
`enter` on a neighbour moves to it, and `b` goes back to the previous one.

Every read runs in a thread worker (the store's `entities`, `facts_mentioning` and
`neighbours`); the lists are drawn line by line, so 100k facts cost what 100 do to show."""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.widgets import Input, Static

from graymatter_tui.core.entities import extract_entities
from graymatter_tui.core.words import counted
from graymatter_tui.storage import EntityCount, EntityIndex, MemoryStore
from graymatter_tui.tui.screens.actions import Action
from graymatter_tui.tui.screens.base import Draw, Pane, Read
from graymatter_tui.tui.screens.facts import READING
from graymatter_tui.tui.widgets.entity_rows import EntityRows, entity_header
from graymatter_tui.tui.widgets.fact_rows import PAGE, FactRows, Held, fact_header
from graymatter_tui.tui.widgets.literal import literal
from graymatter_tui.tui.widgets.text_index import TextIndex
from graymatter_tui.tui.widgets.virtual_list import VirtualList

T = TypeVar("T")
NO_FACTS = "No live facts."
NO_FACTS_SAID = "This agent has no live facts, so no entities yet."
NO_ENTITIES = "No entities."
NO_ENTITIES_SAID = (
    "None of this agent's live facts names a person or an organisation, an identifier "
    "(ABC-123), an email or a URL."
)
CHOOSE = "enter on an entity lists the facts that mention it and its neighbours."
HISTORY = 50  # entities `b` can go back through
# While the store keeps moving (the background embedder writes a batch every second or
# so), the entities are read again at most this often, and never sooner than READ_SHARE
# times the last read's own time after it: each read scans every live fact and holds
# the GIL meanwhile, so at 100k facts reads take at most a fifth of the time.
REREAD_SECONDS = 2.0
READ_SHARE = 4.0
# What a fact list and a neighbour list read together: (fact ids, neighbours, held facts).
Found = tuple[list[str], list[EntityCount]]
Detail = tuple[list[str], list[EntityCount], Held]


def no_match_text(query: str) -> str:
    return literal(f"No entity matches “{query}”.").plain


class GraphPane(Vertical, Pane):
    TITLE = "Graph"
    FOCUS = "#entity-list"
    HELP_KEYS = (
        Binding("enter", "", "Entity: list its facts and neighbours"),
        Binding("enter", "", "Fact: open it and its receipt chain"),
        Binding("enter", "", "Neighbour: go to it"),
        Binding("tab", "", "Next list: entities, facts, neighbours"),
        Binding("escape", "", "Back to the entity list"),
    )
    BINDINGS = [
        Action(
            "slash",
            "focus_filter",
            "Filter",
            id="graph-filter",
            title="Filter entities",
            tooltip="Type to narrow the list of entities",
        ),
        Action(
            "b",
            "back",
            "Previous",
            id="graph-back",
            title="Previous entity",
            tooltip="Return to the entity shown before this one",
        ),
    ]

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.query_text = ""
        self._index: EntityIndex | None = None
        self._labels: TextIndex | None = None
        self._agent = ""  # the agent of what is shown
        self.entity: EntityCount | None = None  # the entity whose facts are shown
        self._history: list[str] = []
        self._quiet_until = 0.0  # no re-read for a store move before this (monotonic)
        self._read_began = 0.0
        self._waiting = False  # a timer will catch up once the quiet time is over

    def compose(self) -> ComposeResult:
        with Horizontal(classes="pane-bar"):
            yield Input(placeholder="/ filter entities as you type", id="graph-filter")
            yield Static("", id="graph-info", classes="pane-info", markup=False)
        with Horizontal(id="graph-body"):
            with Vertical(id="graph-entities"):
                yield Static(entity_header(), classes="list-header", markup=False)
                yield VirtualList(id="entity-list", empty_text=READING)
            with Vertical(id="graph-detail"):
                yield Static(CHOOSE, id="entity-title", classes="list-header", markup=False)
                yield Static(fact_header(), classes="list-header", markup=False)
                yield VirtualList(id="entity-facts", empty_text="")
                yield Static("", id="neighbour-title", classes="list-header", markup=False)
                yield VirtualList(id="entity-neighbours", empty_text="")

    @property
    def entity_list(self) -> VirtualList:
        return self.query_one("#entity-list", VirtualList)

    @property
    def fact_list(self) -> VirtualList:
        return self.query_one("#entity-facts", VirtualList)

    @property
    def neighbour_list(self) -> VirtualList:
        return self.query_one("#entity-neighbours", VirtualList)

    def cursor_entity(self) -> EntityCount | None:
        source = self.entity_list.source
        return source.entity(self.entity_list.cursor) if isinstance(source, EntityRows) else None

    # ---- staying current, without reading all the time ------------------------------------
    def invalidate(self) -> None:
        """The agent changed: read now, superseding a read in flight. The store moved
        (the other reason the app gives): a read in flight finishes first, and the next
        one waits until `REREAD_SECONDS` after the last was drawn."""
        if self.host.agent != self._agent:
            super().invalidate()
        else:
            self.store_moved()

    def catch_up(self) -> None:
        if self.stale and not self._supersede and self._index is not None:
            wait = self._quiet_until - time.monotonic()
            if wait > 0:
                if not self._waiting:
                    self._waiting = True
                    self.set_timer(wait, self._quiet_over)
                return
        super().catch_up()

    def _quiet_over(self) -> None:
        self._waiting = False
        self.catch_up()

    # ---- data ------------------------------------------------------------------------
    def read(self) -> Read:
        """The agent's entities again (after a write or an agent change), and the facts
        and neighbours of the entity shown, in one snapshot."""
        store, agent = self.host.store, self.host.agent
        if agent != self._agent:  # another agent: its own entities, none chosen yet
            self._agent = agent
            self.entity = None
            self._history = []
            self._clear_detail()
        keep = self.cursor_entity()
        shown = self.entity
        rows = FactRows([], store.find_many, store.now())
        self._read_began = time.monotonic()

        def job() -> Draw:
            def look(view: MemoryStore) -> tuple[EntityIndex, Found | None]:
                index = view.entities(agent, extract_entities)
                return index, None if shown is None else _read_detail(view, agent, shown.id)

            index, found = store.in_one_snapshot(look)
            detail = None if found is None else _with_rows(found, rows)
            return partial(self._read_done, index, shown, detail, keep)

        return job

    def _read_done(
        self,
        index: EntityIndex,
        shown: EntityCount | None,
        detail: Detail | None,
        keep: EntityCount | None,
    ) -> None:
        self._index = index
        now = time.monotonic()
        self._quiet_until = now + max(REREAD_SECONDS, READ_SHARE * (now - self._read_began))
        self._labels = TextIndex([e.id for e in index.entities], [e.label for e in index.entities])
        current = self.cursor_entity()
        self._show_entities(current.id if current is not None else keep.id if keep else None)
        # Unless another entity was chosen meanwhile (its own read draws it).
        chosen = self.entity.id if self.entity is not None else None
        if shown is not None and detail is not None and chosen == shown.id:
            self._show_detail(self._counted(shown), detail)

    def _counted(self, entity: EntityCount) -> EntityCount:
        """The entity as the latest read counts it (a neighbour's count is of the facts
        shared with another entity)."""
        if self._index is not None:
            for listed in self._index.entities:
                if listed.id == entity.id:
                    return listed
        return EntityCount(entity.id, entity.label, entity.type, 0)

    def _show_entities(self, keep_id: str | None = None) -> None:
        index = self._index
        if index is None:
            return
        positions = None
        if self.query_text and self._labels is not None:
            positions = self._labels.search(self.query_text.casefold())
        rows = EntityRows(index.entities, positions)
        cursor = rows.index_of(keep_id) if keep_id else None
        listing = self.entity_list
        if self.query_text:
            listing.empty_text = no_match_text(self.query_text)
        else:
            listing.empty_text = NO_FACTS if not index.live else NO_ENTITIES
        listing.set_source(rows, cursor=cursor or 0)
        if self.entity is None:  # the right side says what there is to do, or why not
            said = CHOOSE if index.entities else NO_ENTITIES_SAID if index.live else NO_FACTS_SAID
            self.query_one("#entity-title", Static).update(said)
        total = len(index.entities)
        info = counted(total, "entity", "entities")
        if self.query_text:
            info = f"{len(rows)} of {info}"
        info += f" · {counted(index.live, 'live fact')}"
        if index.pending:
            info += f" · {index.pending} not extracted yet"
        self.query_one("#graph-info", Static).update(info)

    def _clear_detail(self) -> None:
        self.query_one("#entity-title", Static).update(CHOOSE)
        self.query_one("#neighbour-title", Static).update("")
        self.fact_list.empty_text = ""
        self.fact_list.set_source(FactRows([], self.host.store.find_many, self.host.store.now()))
        self.neighbour_list.empty_text = ""
        self.neighbour_list.set_source(EntityRows([]))

    def open_entity(
        self, entity: EntityCount, *, then: VirtualList | None = None, remember: bool = True
    ) -> None:
        """Show the facts and neighbours of `entity` (read off the UI thread), then focus
        `then`; with `remember`, `b` comes back to the entity shown before."""
        if remember and self.entity is not None and self.entity.id != entity.id:
            self._history = [*self._history, self.entity.id][-HISTORY:]
        self.entity = entity
        self.query_one("#entity-title", Static).update(
            literal(f"Reading the facts that mention {entity.label}…")
        )
        store, agent = self.host.store, self.host.agent
        rows = FactRows([], store.find_many, store.now())

        def job() -> Detail:
            found = store.in_one_snapshot(lambda view: _read_detail(view, agent, entity.id))
            return _with_rows(found, rows)

        def done(detail: Detail) -> None:
            if self.entity is not None and self.entity.id == entity.id:
                self._show_detail(self._counted(entity), detail)
                if then is not None:
                    then.focus()

        self.host.read_in_thread(self, job, done, group="graph-entity")

    def _show_detail(self, entity: EntityCount, detail: Detail) -> None:
        fact_ids, neighbours, held = detail
        self.entity = entity
        store = self.host.store
        keep = self._cursor_fact_id()
        rows = FactRows(
            fact_ids,
            store.find_many,
            store.now(),
            background=self._in_background,
            loaded=self.fact_list.refresh,
            held=held,
        )
        self.query_one("#entity-title", Static).update(
            literal(f"{counted(len(fact_ids), 'live fact')} mention {entity.label}")
        )
        self.fact_list.empty_text = literal(f"No live fact mentions {entity.label} now.").plain
        at = rows.index_of(keep) if keep else None
        self.fact_list.set_source(rows, cursor=at or 0)
        said = (
            f"Neighbours: {counted(len(neighbours), 'entity', 'entities')} mentioned with it"
            if neighbours
            else "Neighbours: none"
        )
        self.query_one("#neighbour-title", Static).update(said)
        self.neighbour_list.empty_text = literal(
            f"No live fact mentions {entity.label} with another entity."
        ).plain
        self.neighbour_list.set_source(EntityRows(neighbours))

    def _cursor_fact_id(self) -> str | None:
        source = self.fact_list.source
        return source.id_at(self.fact_list.cursor) if isinstance(source, FactRows) else None

    def tick_clock(self) -> None:
        """Fact ages are relative to now: redraw them without a store read."""
        source = self.fact_list.source
        if isinstance(source, FactRows):
            source.now = self.host.store.now()
            self.fact_list.refresh()

    def _in_background(
        self, job: Callable[[], T], then: Callable[[T], None], failed: Callable[[], None]
    ) -> None:
        """The fact rows' page reads: off the UI thread, several at a time."""
        self.host.read_in_thread(
            self, job, then, group="graph-rows", exclusive=False, failed=lambda _exc: failed()
        )

    # ---- moving around ---------------------------------------------------------------
    def move_to(self, entity_id: str, *, then: VirtualList | None, remember: bool = True) -> bool:
        """Put the entity list's cursor on `entity_id` (clearing a filter that hides it)
        and show its facts; False when no live fact mentions it any more."""
        index = self._index
        found = next((e for e in index.entities if e.id == entity_id), None) if index else None
        if found is None:
            return False
        rows = self.entity_list.source
        at = rows.index_of(entity_id) if isinstance(rows, EntityRows) else None
        if at is None and self.query_text:
            self.query_one("#graph-filter", Input).value = ""
            self.query_text = ""
            self._show_entities(entity_id)
        else:
            self.entity_list.cursor = at or 0
        self.open_entity(found, then=then, remember=remember)
        return True

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        event.stop()
        if event.list is self.entity_list:
            entity = self.cursor_entity()
            if entity is not None:
                self.open_entity(entity, then=self.fact_list)
        elif event.list is self.fact_list:
            fact_id = self._cursor_fact_id()
            if fact_id is not None:
                self.host.show_fact(fact_id)
        elif event.list is self.neighbour_list:
            source = self.neighbour_list.source
            if isinstance(source, EntityRows):
                neighbour = source.entity(self.neighbour_list.cursor)
                if neighbour is not None and not self.move_to(
                    neighbour.id, then=self.neighbour_list
                ):
                    self.app.notify(
                        literal(f"No live fact mentions {neighbour.label} any more.").plain,
                        markup=False,
                    )

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.query_text = event.value
        current = self.cursor_entity()
        self._show_entities(current.id if current is not None else None)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self.entity_list.focus()

    def on_key(self, event: Any) -> None:
        if event.key != "escape":
            return
        if self.query_one("#graph-filter", Input).has_focus or any(
            widget.has_focus for widget in (self.fact_list, self.neighbour_list)
        ):
            self.entity_list.focus()
            event.stop()

    # ---- actions ---------------------------------------------------------------------
    def action_focus_filter(self) -> None:
        self.query_one("#graph-filter", Input).focus()

    def action_back(self) -> None:
        while self._history:
            entity_id = self._history[-1]
            self._history = self._history[:-1]
            if self.move_to(entity_id, then=None, remember=False):
                return
        self.app.notify("No entity to go back to.")


def _read_detail(view: MemoryStore, agent: str, entity_id: str) -> Found:
    """In a worker, in one snapshot: the facts that mention the entity and its neighbours."""
    fact_ids = view.facts_mentioning(agent, entity_id, extract_entities)
    return fact_ids, view.neighbours(agent, entity_id, extract_entities)


def _with_rows(found: Found, rows: FactRows) -> Detail:
    """In a worker: the first page of the facts read too, so that they paint at once."""
    fact_ids, neighbours = found
    return fact_ids, neighbours, rows.read_ahead(fact_ids[:PAGE])
