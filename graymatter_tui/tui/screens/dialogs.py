"""Small modal dialogs: confirm, text entry, choose from a list, a store that is not there."""

from __future__ import annotations

from typing import Literal, get_args

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, OptionList, Static, TextArea
from textual.widgets.option_list import Option

from graymatter_tui.tui.widgets.literal import literal


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS = [
        Binding("escape,n", "answer(False)", "No", id="confirm-no"),
        Binding("y", "answer(True)", "Yes", id="confirm-yes"),
    ]

    def __init__(self, question: str, detail: str = "", *, yes: str = "Yes") -> None:
        super().__init__()
        self.question = question
        self.detail = detail
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(literal(self.question), classes="dialog-title", markup=False)
            if self.detail:
                yield Static(
                    literal(self.detail, one_line=False), classes="dialog-detail", markup=False
                )
            with Horizontal(classes="dialog-buttons"):
                yield Button(f"{self.yes} (y)", id="yes", variant="error")
                yield Button("Cancel (n)", id="no")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, value: bool) -> None:
        self.dismiss(value)


class TextEntryScreen(ModalScreen[str | None]):
    """Multi-line text entry (add or revise a fact). ctrl+s saves, esc cancels."""

    BINDINGS = [
        Binding("escape", "cancel", "Cancel", id="entry-cancel"),
        Binding("ctrl+s", "save", "Save", id="entry-save", priority=True),
    ]

    def __init__(self, title: str, initial: str = "", *, hint: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.initial = initial
        self.hint = hint

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static(literal(self.title_text), classes="dialog-title", markup=False)
            yield TextArea(self.initial, id="entry-text", soft_wrap=True, show_line_numbers=False)
            yield Label(self.hint or "ctrl+s save · esc cancel", classes="dialog-hint")

    def on_mount(self) -> None:
        self.query_one(TextArea).focus()

    def action_save(self) -> None:
        self.dismiss(self.query_one(TextArea).text)

    def action_cancel(self) -> None:
        self.dismiss(None)


class LineEntryScreen(ModalScreen[str | None]):
    """One line of text (a file name, an agent name)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="line-cancel")]

    def __init__(self, title: str, initial: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.initial = initial

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide"):
            yield Static(literal(self.title_text), classes="dialog-title", markup=False)
            yield Input(self.initial, id="line-text")

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ChooseScreen(ModalScreen[str | None]):
    """Pick one of several values (agents, summarisers)."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choose-cancel")]

    def __init__(self, title: str, choices: list[tuple[str, str]], current: str = "") -> None:
        super().__init__()
        self.title_text = title
        self.choices = choices
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Static(literal(self.title_text), classes="dialog-title", markup=False)
            options = [Option(literal(label), id=value) for value, label in self.choices]
            yield OptionList(*options, id="choices", markup=False)

    def on_mount(self) -> None:
        option_list = self.query_one(OptionList)
        for index, (value, _label) in enumerate(self.choices):
            if value == self.current:
                option_list.highlighted = index
        option_list.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_cancel(self) -> None:
        self.dismiss(None)


NoStoreAnswer = Literal["create", "read-only", "quit"]


class NoStoreScreen(ModalScreen[NoStoreAnswer]):
    """The place the person named holds no store: create one there, look at it empty and
    read-only, or quit (to fix a mistyped path). Nothing is created before the answer."""

    BINDINGS = [
        Binding("c", "answer('create')", "Create it", id="no-store-create"),
        Binding("r,escape", "answer('read-only')", "Read-only", id="no-store-read-only"),
        Binding("q", "answer('quit')", "Quit", id="no-store-quit"),
    ]

    def __init__(self, location: str) -> None:
        super().__init__()
        self.location = location

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog wide", id="no-store"):
            yield Static(
                literal(f"There is no store at {self.location}"),
                classes="dialog-title",
                markup=False,
            )
            yield Static(
                literal(
                    "Nothing has been created there. Create a new, empty store there, "
                    "look at it empty and read-only (nothing is created), or quit to "
                    "check the path.",
                    one_line=False,
                ),
                classes="dialog-detail",
                markup=False,
            )
            with Horizontal(classes="dialog-buttons"):
                yield Button("Create it (c)", id="create", variant="primary")
                yield Button("Read-only, empty (r)", id="read-only")
                yield Button("Quit (q)", id="quit")

    def on_mount(self) -> None:
        self.query_one("#quit", Button).focus()  # a blind enter creates nothing

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_answer(str(event.button.id))

    def action_answer(self, answer: str) -> None:
        if answer in get_args(NoStoreAnswer):
            self.dismiss(answer)  # type: ignore[arg-type]
