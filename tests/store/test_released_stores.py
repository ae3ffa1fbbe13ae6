"""Stores written by released versions keep opening, with nothing lost or changed.

Each `tests/fixtures/store-<version>/` was written by that release through its command
line (`tests/fixtures/make_store.py`), together with its own `export.jsonl` and
`status.json`. Today's code must read the same facts, journal and counters out of it
(fields added since may appear; none may vanish or change), find it healthy, and write
to it. A change of the store's format therefore needs a migration that passes here.

LMDB only: the released stores are LMDB files.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from subprocess import CompletedProcess
from typing import Any

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
RELEASES = sorted(p for p in FIXTURES.glob("store-*") if (p / "store" / "data.mdb").exists())
LATER = "2026-12-20T12:00:00Z"
RunCli = Callable[..., CompletedProcess[str]]
# Figures that describe the file rather than the memory it holds.
FILE_FIGURES = {"data_dir", "file_bytes", "map_size", "map_used", "generation", "schema_version"}


def _copy(release: Path, tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(release / "store", target)
    return target


def _lines(text: str) -> dict[str, dict[str, Any]]:
    """Export lines keyed by what they describe (header left out: it names its time)."""
    out: dict[str, dict[str, Any]] = {}
    for line in text.splitlines():
        entry = json.loads(line)
        if entry["type"] == "fact":
            out["fact " + entry["fact"]["id"]] = entry["fact"]
        elif entry["type"] == "cycle":
            out["cycle " + entry["record"]["cycle_id"]] = entry["record"]
    return out


def _missing_or_changed(old: dict[str, Any], new: dict[str, Any]) -> list[str]:
    return [key for key, value in old.items() if new.get(key, object()) != value]


def test_there_is_a_fixture_of_a_released_store() -> None:
    assert RELEASES, f"no released store fixture under {FIXTURES}"


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_a_released_store_reads_the_same(release: Path, tmp_path: Path, run_cli: RunCli) -> None:
    data = _copy(release, tmp_path)
    env = {"GRAYMATTER_DIR": str(data), "GRAYMATTER_NOW": LATER}

    status = run_cli("status", "--json", env=env)
    assert status.returncode == 0, status.stderr
    then = json.loads((release / "status.json").read_text())
    now = json.loads(status.stdout)
    for key, value in then.items():
        if key not in FILE_FIGURES:
            assert now[key] == value, f"status {key}: {now[key]!r}, the release said {value!r}"

    exported = run_cli("export", "--format", "jsonl", env=env)
    assert exported.returncode == 0, exported.stderr
    before = _lines((release / "export.jsonl").read_text())
    after = _lines(exported.stdout)
    assert set(after) == set(before)
    changed = {k: _missing_or_changed(v, after[k]) for k, v in before.items()}
    assert {k: v for k, v in changed.items() if v} == {}


@pytest.mark.parametrize("release", RELEASES, ids=lambda p: p.name)
def test_a_released_store_is_healthy_and_writable(
    release: Path, tmp_path: Path, run_cli: RunCli
) -> None:
    data = _copy(release, tmp_path)
    env = {"GRAYMATTER_DIR": str(data), "GRAYMATTER_NOW": LATER}
    doctor = run_cli("doctor", "--json", env=env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["ok"] is True

    added = run_cli("remember", "ops-agent", "Written by today's code.", "--json", env=env)
    assert added.returncode == 0, added.stderr
    fact_id = json.loads(added.stdout)["id"]
    shown = run_cli("show", fact_id, "--json", env=env)
    assert json.loads(shown.stdout)["fact"]["text"] == "Written by today's code."
    cycle = run_cli("consolidate", "ops-agent", "--llm", "local", "--json", env=env)
    assert cycle.returncode in (0, 3), cycle.stderr
    assert run_cli("doctor", env=env).returncode == 0


def test_date_words_release_0_8_took_for_names_stay_out_of_its_graph(tmp_path: Path) -> None:
    from graymatter_tui.backends.lmdb import LmdbStore
    from graymatter_tui.core.entities import extract_entities, names_nothing
    from graymatter_tui.storage.codec import decode_ids

    store = LmdbStore.open(_copy(FIXTURES / "store-0.8.0", tmp_path))
    try:
        agents = [a.agent_id for a in store.agents()]

        def recorded(tx: Any) -> set[str]:
            return {
                i
                for agent in agents
                for _key, raw in tx.extracted_rows(agent)
                for i in decode_ids(raw[64:])
            }

        noise = {i for i in store._read(recorded) if names_nothing(i)}
        assert {"name:july", "name:utc"} <= noise  # what 0.8 recorded
        listed = {
            e.id for agent in agents for e in store.entities(agent, extract_entities).entities
        }
        assert "name:maria lopez" in listed
        assert not listed & noise
    finally:
        store.close()
