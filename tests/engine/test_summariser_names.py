"""Summariser names are one closed set (graymatter_tui.core.summariser_names): settings refuse
any other name with an error that lists the valid ones, and the command line's help and
checks, the factory and the TUI's chooser all offer exactly that set."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable

import pytest

from graymatter_tui.consolidation.cycle import CycleOptions
from graymatter_tui.consolidation.summarisers.factory import from_settings
from graymatter_tui.core.config import Settings
from graymatter_tui.core.errors import InvalidInput
from graymatter_tui.core.summariser_names import SUMMARISERS, SummariserName

RunCli = Callable[..., subprocess.CompletedProcess[str]]
REFUSAL = f"unknown summariser 'bogus'; choose one of {', '.join(SUMMARISERS)}"


def test_the_set_is_the_four_documented_names() -> None:
    assert SUMMARISERS == ("ollama", "anthropic", "local", "none")


@pytest.mark.parametrize(
    "make",
    [
        lambda: Settings(summariser="bogus"),  # type: ignore[arg-type]
        lambda: Settings().with_overrides(summariser="bogus"),
    ],
    ids=["constructed", "overridden"],
)
def test_an_unknown_name_is_refused_naming_the_valid_ones(make: Callable[[], Settings]) -> None:
    with pytest.raises(InvalidInput) as refused:
        make()
    assert str(refused.value) == REFUSAL


def test_an_unknown_name_in_the_environment_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_CONSOLIDATE_LLM", "bogus")
    with pytest.raises(InvalidInput, match=re.escape(REFUSAL)):
        Settings.from_env(data_dir="/nonexistent")


def test_names_are_read_in_any_case(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_CONSOLIDATE_LLM", " Local ")
    settings = Settings.from_env(data_dir="/nonexistent")
    assert settings.summariser is SummariserName.LOCAL


@pytest.mark.parametrize("name", list(SummariserName))
def test_every_name_builds_the_summariser_it_names(name: SummariserName) -> None:
    built = from_settings(Settings(summariser=name, anthropic_api_key="k"))
    assert (built.name if built else "none") == name


def test_settings_and_the_cycle_share_their_defaults() -> None:
    settings, options = Settings(), CycleOptions()
    assert (options.threshold, options.max_batch, options.half_life_hours, options.guard) == (
        settings.threshold,
        settings.max_batch,
        settings.half_life_hours,
        settings.guard,
    )
    assert CycleOptions.from_settings(settings) == options


def test_the_tui_chooser_offers_exactly_the_set() -> None:
    from graymatter_tui.tui.screens.consolidate import SUMMARISER_CHOICES

    assert tuple(value for value, _ in SUMMARISER_CHOICES) == SUMMARISERS


@pytest.mark.parametrize("command", [[], ["consolidate"], ["doctor"]], ids=["tui", "cycle", "doc"])
def test_cli_help_lists_the_set(run_cli: RunCli, command: list[str]) -> None:
    done = run_cli(*command, "--help")
    assert done.returncode == 0, done.stderr
    assert f"[{'|'.join(SUMMARISERS)}]" in " ".join(done.stdout.split())


def test_cli_refuses_an_unknown_name_listing_the_set(run_cli: RunCli) -> None:
    flag = run_cli("consolidate", "agent", "--llm", "bogus")
    assert flag.returncode != 0
    assert all(f"'{name}'" in flag.stderr for name in SUMMARISERS)
    env = run_cli("consolidate", "agent", env={"GRAYMATTER_CONSOLIDATE_LLM": "bogus"})
    assert env.returncode == 1
    assert REFUSAL in env.stderr
    assert "Traceback" not in env.stderr
