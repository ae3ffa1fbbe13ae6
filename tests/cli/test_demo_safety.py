"""The demo never writes its fake facts into a store it did not create, unless asked to,
and `--demo` keeps its store in a place of its own, whatever GRAYMATTER_DIR says."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from itertools import chain
from pathlib import Path
from typing import Any

import msgspec
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.cli.launch import demo_dir, open_for_tui
from graymatter_tui.consolidation.cycle import Cycle
from graymatter_tui.core.config import default_data_dir
from graymatter_tui.exchange import demo
from graymatter_tui.exchange.demo import AGENTS
from graymatter_tui.storage import NewFact
from tests.conftest import run_graymatter

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RunCli = Callable[..., subprocess.CompletedProcess[str]]


def snapshot(path: Path) -> dict[str, Any]:
    with LmdbStore.open(path) as store:
        return {
            "facts": {f.id: msgspec.to_builtins(f) for f in store.all_facts()},
            "records": [msgspec.to_builtins(r) for r in store.records()],
            "generation": store.generation(),
        }


def one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> str:
    assert done.returncode == 1, (done.returncode, done.stdout, done.stderr)
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("graymatter-tui: error:"), done.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


# Stores holding something the demo did not put there: each must be refused.
def _live_fact(store: LmdbStore) -> None:
    store.put("my-agent", "My real memory: the deploy key is in the vault.")


def _tombstone_only(store: LmdbStore) -> None:
    store.retire(store.put("my-agent", "retired, but still mine").id)


def _journal_only(store: LmdbStore) -> None:
    fact = store.put("my-agent", "gone since")
    Cycle(store, "my-agent", None).run_sync()  # a journal record
    store.delete([fact.id])  # the store now holds only that record
    assert store.records() and not store.all_facts()


def _many_facts(store: LmdbStore) -> None:
    store.put_many(NewFact(f"agent-{i % 3}", f"note {i}") for i in range(50))


OTHER_DATA: dict[str, Callable[[LmdbStore], None]] = {
    "a live fact": _live_fact,
    "only a tombstone": _tombstone_only,
    "only a journal record": _journal_only,
    "fifty facts": _many_facts,
}


@pytest.fixture(params=list(OTHER_DATA))
def real_store(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    path = tmp_path / "real"
    with LmdbStore.open(path) as store:
        OTHER_DATA[request.param](store)
    return path


def test_demo_refuses_a_store_it_did_not_create(run_cli: RunCli, real_store: Path) -> None:
    before = snapshot(real_store)
    done = run_cli("demo", "--dir", str(real_store))
    one_line_error(done, str(real_store), "--into-existing")
    assert done.stdout == ""
    assert snapshot(real_store) == before  # not even the generation moved


def test_the_tui_demo_refuses_an_explicit_dir_it_did_not_create(real_store: Path) -> None:
    before = snapshot(real_store)
    done = run_graymatter("--demo", "--dir", str(real_store))
    one_line_error(done, str(real_store))
    assert snapshot(real_store) == before


def test_into_existing_adds_the_demo_when_asked(run_cli: RunCli, tmp_path: Path) -> None:
    path = tmp_path / "real"
    with LmdbStore.open(path) as store:
        mine = store.put("my-agent", "mine")
    added = json.loads(run_cli("demo", "--dir", str(path), "--into-existing", "--json").stdout)
    assert added["facts_added"] >= 250
    with LmdbStore.open(path) as store:
        assert store.require(mine.id).text == "mine"
        assert {a.agent_id for a in store.agents()} == {"my-agent", *AGENTS}
        assert not store.is_demo()  # a real store with demo facts mixed in is no demo store


@pytest.mark.parametrize("existing", [False, True], ids=["new dir", "empty store"])
def test_a_new_or_empty_store_becomes_a_demo_store(
    run_cli: RunCli, tmp_path: Path, existing: bool
) -> None:
    path = tmp_path / "demo"
    if existing:
        LmdbStore.open(path).close()
    first = json.loads(run_cli("demo", "--dir", str(path), "--json").stdout)
    assert first["facts_added"] >= 250
    with LmdbStore.open(path) as store:
        assert store.is_demo()
    before = snapshot(path)
    again = json.loads(run_cli("demo", "--dir", str(path), "--json").stdout)
    assert again["facts_added"] == 0
    assert snapshot(path) == before  # a no-op: not even the generation moved


# ---- where --demo keeps its store ------------------------------------------------------------


@pytest.fixture
def user_data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """platformdirs' user data dir on Linux follows XDG_DATA_HOME."""
    home = tmp_path / "xdg-data"
    monkeypatch.setenv("XDG_DATA_HOME", str(home))
    return home


@pytest.mark.parametrize("graymatter_dir", ["/", "/tmp", "relative/dir", ""])
def test_the_demo_dir_does_not_depend_on_graymatter_dir(
    user_data_home: Path, monkeypatch: pytest.MonkeyPatch, graymatter_dir: str
) -> None:
    if graymatter_dir:
        monkeypatch.setenv("GRAYMATTER_DIR", graymatter_dir)
    chosen = demo_dir()
    assert chosen == user_data_home / "graymatter-tui-demo"
    default = default_data_dir()
    assert default not in chosen.parents and chosen != default  # never inside a store


def test_demo_opens_its_own_marked_store(
    user_data_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GRAYMATTER_DIR", "/")
    store, settings, read_only = open_for_tui(data_dir=None, demo=True, read_only=False, llm=None)
    try:
        assert store.path == user_data_home / "graymatter-tui-demo"
        assert store.is_demo() and not read_only
        assert settings.summariser == "local"
        assert len(store.agents()) == len(AGENTS)
    finally:
        store.close()
    assert not Path("/graymatter-tui-demo").exists()


def test_the_demo_holds_its_duplicates_and_possible_updates_for_review(
    run_cli: RunCli, tmp_path: Path
) -> None:
    path = tmp_path / "demo"
    assert run_cli("demo", "--dir", str(path)).returncode == 0
    items = json.loads(run_cli("review", "list", "--dir", str(path), "--json").stdout)
    pairs = {(p["action"], p["target"], p["text"]) for p in items}
    assert {p["action"] for p in items} == {"duplicate", "possible_update"}
    # The possible updates are exactly the ones the demo writes on purpose (a threshold
    # raised, a freeze moved, a replica count changed), not the generator's noise.
    updates = {(old, new) for kind, old, new in pairs if kind == "possible_update"}
    assert updates == set(chain(*demo._UPDATES.values()))
    assert (
        "Deploy freeze for search-indexer starts on July 2.",
        "Deploy freeze for search-indexer starts on January 13.",
    ) in updates
    # and the duplicates are the clusters' own, each within one cluster
    clusters = [set(c) for c in chain(*demo._DUPLICATES.values())]
    duplicates = [(old, new) for kind, old, new in pairs if kind == "duplicate"]
    assert duplicates
    assert all(any({old, new} <= c for c in clusters) for old, new in duplicates)
    listed = run_cli("review", "list", "--dir", str(path)).stdout
    assert "possible_update" in listed and "Disk alerts fire at 80%" in listed
    # every pair is about one subject: the same tickets, runs, customers and services
    # (another customer's ticket is another fact, not an update of it)
    named = re.compile(
        r"\b[A-Z]{2,}-\d+\b|" + "|".join(re.escape(n) for n in [*demo._CUSTOMERS, *demo._SERVICES])
    )
    for item in items:
        held, new = (m["text"] for m in item["matches"])
        assert set(named.findall(held)) == set(named.findall(new)), (held, new)
    assert len(items) < 15  # of 300 facts; 92 when every template filled at random
    with LmdbStore.open(path, read_only=True) as store:
        assert store.pending_count() == len(items)
        held = [e for e in store.activity(limit=50) if e.action == "review"]
    # a bulk write: one activity entry per agent, not one per item
    assert sorted(e.agent_id for e in held) == sorted(AGENTS)
    assert sum(e.count for e in held) == len(items)
