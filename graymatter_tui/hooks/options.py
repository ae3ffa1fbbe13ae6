"""The hook command's own flags: what `hooks install` writes after the executable and
what the hook reads back. Parsed by hand (no click: the hook runs on every prompt and
pays for every import), and written back by `args()`, so the two cannot drift apart."""

from __future__ import annotations

from dataclasses import dataclass

from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.review_modes import REVIEW_MODES

CLIENT = "claude-code"
CLIENTS = (CLIENT,)
# `mcp --review` spells "no review" as off (DESIGN.md) or none (0.4.0); the hook takes both.
REVIEW_CHOICES = ("off", *REVIEW_MODES)


@dataclass(frozen=True)
class HookOptions:
    """How the hook serves: which store, which agent (None: the project's), and the same
    limits an MCP server takes (`--read-only`, `--review`); `consolidate` lets SessionEnd
    start a consolidation cycle in the background."""

    client: str = CLIENT
    data_dir: str | None = None
    store: str | None = None
    agent: str | None = None
    read_only: bool = False
    review: str = "none"
    consolidate: bool = False

    def args(self) -> list[str]:
        """The flags that give these options back through `parse`."""
        out = ["--client", self.client]
        if self.data_dir is not None:
            out += ["--dir", self.data_dir]
        if self.store is not None:
            out += ["--store", self.store]
        if self.agent is not None:
            out += ["--agent", self.agent]
        if self.read_only:
            out.append("--read-only")
        if self.review != "none":
            out += ["--review", self.review]
        if self.consolidate:
            out.append("--consolidate")
        return out


_VALUED = {"--client", "--dir", "--store", "--agent", "--review"}
_FLAGS = {"--read-only", "--consolidate"}


def parse(argv: list[str]) -> HookOptions:
    """The options in `argv` (the hook's arguments, without the program name);
    InvalidInput names the first one that is wrong."""
    values: dict[str, str] = {}
    flags: set[str] = set()
    position = 0
    while position < len(argv):
        word = argv[position]
        name, equals, inline = word.partition("=")
        if name in _VALUED:
            if equals:
                value = inline
            elif position + 1 < len(argv):
                position += 1
                value = argv[position]
            else:
                raise InvalidInput(f"{name} needs a value")
            values[name] = value
        elif word in _FLAGS:
            flags.add(word)
        else:
            raise InvalidInput(f"unknown argument {word[:60]!r}")
        position += 1
    client = values.get("--client", CLIENT)
    if client not in CLIENTS:
        raise InvalidInput(f"unknown client {client[:60]!r}; this hook knows {', '.join(CLIENTS)}")
    review = values.get("--review", "none")
    if review not in REVIEW_CHOICES:
        raise InvalidInput(f"--review must be one of {', '.join(REVIEW_CHOICES)}")
    if "--dir" in values and "--store" in values:
        raise InvalidInput("give --store or --dir, not both")
    return HookOptions(
        client=client,
        data_dir=values.get("--dir"),
        store=values.get("--store"),
        agent=values.get("--agent"),
        read_only="--read-only" in flags,
        review="none" if review == "off" else review,
        consolidate="--consolidate" in flags,
    )
