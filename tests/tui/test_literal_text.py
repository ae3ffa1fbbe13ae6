"""Stored text becomes display text in one place per front end: the TUI's `literal`
(tui/widgets/literal.py) and row sources (tui/widgets/fact_rows.py), the CLI's `say`/`one_line`
(cli/output.py), a Markdown export written to a terminal (exchange/transfer.py), the block a
hook gives a coding agent (hooks/context.py) and the managed block of an instruction file
(exchange/managed_block.py). A screen or
command that called `neutralise` itself could also forget to: this keeps it to those."""

from __future__ import annotations

import ast
from pathlib import Path

from rich.text import Text

import graymatter_tui
from graymatter_tui.tui.widgets.literal import literal

PACKAGE = Path(graymatter_tui.__file__).parent
ALLOWED = {
    "core/textsafe.py",
    "tui/widgets/literal.py",
    "tui/widgets/fact_rows.py",
    "cli/output.py",
    "exchange/transfer.py",
    "hooks/context.py",
    "exchange/managed_block.py",
    "mcp/server.py",  # its one stderr line, a scheduled probe run's failure
}


def imports_neutralise(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and any(a.name == "neutralise" for a in node.names):
            return True
        if isinstance(node, ast.Attribute) and node.attr == "neutralise":
            return True
    return False


def test_only_the_display_helpers_neutralise() -> None:
    users = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name == "textsafe.py" or imports_neutralise(path)
    }
    assert users == ALLOWED, (
        "show stored text with widgets.literal.literal (TUI) or cli.output.say/one_line "
        f"(CLI) instead of calling neutralise: {sorted(users - ALLOWED)}"
    )


def test_literal_is_text_that_is_never_markup() -> None:
    shown = literal("[bold]x[/] \x1b[2J\u202e\nnext")
    assert isinstance(shown, Text)
    assert shown.plain == "[bold]x[/] ␛[2J<U+202E>⏎next"
    assert not shown.spans
    assert literal("a\nb", one_line=False).plain == "a\nb"
