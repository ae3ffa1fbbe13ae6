"""Schema 4: the recall index holds Snowball stems in the store's language. A store of
an older schema (the 0.3.0 release's fixture) is re-indexed on its first writable open,
in the upgrade's one transaction, with progress reported; a read-only open leaves it
unstemmed and still answers as before. A new store takes its language from
GRAYMATTER_LANGUAGE (or GRAYMATTER_STEM_LANGUAGE) or --stem-language (default English).

LMDB only: an LMDB fixture's upgrade.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import lmdb
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.backends.lmdb.schema import SCHEMA_VERSION
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.core.tokens import Analyzer
from graymatter_tui.recall.ranking import rank
from graymatter_tui.storage import NewFact
from tests.cli.test_progress import run_with_terminal_stderr
from tests.conftest import clean_env
from tests.recall.helpers import Index, index_contents

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")

RELEASE = Path(__file__).resolve().parent.parent / "fixtures" / "store-0.3.0"
AGENT = "ops-agent"
ROOT = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path) -> Path:
    target = tmp_path / "store"
    shutil.copytree(RELEASE / "store", target)
    return target


def _meta(path: Path, key: bytes) -> bytes | None:
    env = lmdb.open(str(path), max_dbs=32, readonly=True, lock=False)
    try:
        with env.begin() as txn:
            meta = env.open_db(b"meta", txn=txn, create=False)
            raw = txn.get(key, db=meta)
            return None if raw is None else bytes(raw)
    finally:
        env.close()


def _expected(store: LmdbStore, agent: str, analyzer: Analyzer) -> Index:
    terms: dict[str, int] = {}
    postings: dict[tuple[str, str], tuple[int, int]] = {}
    for fact in store.list_facts(agent, "live"):
        counts = analyzer.term_counts(fact.text)
        for term, count in counts.items():
            terms[term] = terms.get(term, 0) + 1
            postings[(term, fact.id)] = (count, min(sum(counts.values()), 65535))
    return terms, postings


def test_the_upgrade_reindexes_every_live_fact_with_stems(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    assert _meta(path, b"stem_language") is None
    with LmdbStore.open(path, read_only=True) as store:
        assert store.info().stem_language == "none"
        # Unstemmed: "alert server" shares no token with "Disk alerts … build servers."
        assert rank(store, AGENT, "alert server") == []
        assert rank(store, AGENT, "alerts servers")  # as before
    reports: list[tuple[str, int, int]] = []
    with LmdbStore.open(path, progress=lambda *a: reports.append(a)) as store:
        agents = [a.agent_id for a in store.agents()]
        live = sum(a.live_facts for a in store.agents())
        assert store.info().stem_language == "english"
        for agent in agents:
            assert index_contents(store, agent) == _expected(store, agent, Analyzer("english"))
        hits = rank(store, AGENT, "alert server")
        assert hits and hits[0].fact.text.startswith("Disk alerts fire")
        # An identifier is found as written.
        ticket = rank(store, AGENT, "INC-8496")
        assert ticket and "INC-8496" in ticket[0].fact.text
    indexing = [r for r in reports if r[0] == "re-indexing"]
    assert indexing[0] == ("re-indexing", 0, live) and indexing[-1] == ("re-indexing", live, live)
    # then schema 6 dates the store's tombstones (tests/store/test_lifespan_migration.py)
    assert reports[len(indexing) :] and all(
        r[0] == "dating tombstones" for r in reports[len(indexing) :]
    )
    assert _meta(path, b"stem_language") == b"english"
    assert _meta(path, b"schema_version") == str(SCHEMA_VERSION).encode()


def test_a_later_open_does_not_reindex(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    with LmdbStore.open(path):
        pass
    reports: list[tuple[str, int, int]] = []
    with LmdbStore.open(path, progress=lambda *a: reports.append(a)):
        pass
    assert reports == []


def test_the_upgrade_takes_the_language_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _copy(tmp_path)
    monkeypatch.setenv("GRAYMATTER_LANGUAGE", "none")
    with LmdbStore.open(path) as store:
        assert store.info().stem_language == "none"
        assert index_contents(store, AGENT) == _expected(store, AGENT, Analyzer("none"))
        assert rank(store, AGENT, "alert server") == []


def test_the_upgrade_grows_a_map_too_small_for_the_reindex(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    size = (path / "data.mdb").stat().st_size
    with LmdbStore.open(path, map_size=size) as store:
        assert store.info().schema_version == SCHEMA_VERSION
        assert index_contents(store, AGENT) == _expected(store, AGENT, Analyzer("english"))


def test_a_new_store_takes_its_language_once(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "de", stem_language="German") as store:
        store.put(AGENT, "Die Zahlungen laufen über Polar.")
        assert store.info().stem_language == "german"
        assert rank(store, AGENT, "Zahlung")
    with LmdbStore.open(tmp_path / "de", stem_language="french") as store:
        assert store.info().stem_language == "german"  # an existing store keeps its own
    with pytest.raises(GraymatterError, match="unknown stemming language 'klingon'"):
        LmdbStore.open(tmp_path / "x", stem_language="klingon")


def test_an_unknown_language_in_a_store_is_refused_clearly(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        store.put(AGENT, "payments")
    env = lmdb.open(str(tmp_path / "s"), max_dbs=32)
    with env.begin(write=True) as txn:
        txn.put(b"stem_language", b"klingon", db=env.open_db(b"meta", txn=txn))
    env.close()
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", "recall", AGENT, "payments"],
        env=clean_env({"GRAYMATTER_DIR": str(tmp_path / "s")}),
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "stemming language 'klingon'" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1


def test_the_cli_shows_the_upgrade_on_a_terminal(tmp_path: Path) -> None:
    path = _copy(tmp_path)
    code, out, err = run_with_terminal_stderr(["remember", AGENT, "after the upgrade"], path)
    assert code == 0 and len(out.strip()) == 26  # the new fact's id
    text = err.decode()
    assert "re-indexing" in text and "100%" in text and text.endswith("\r\x1b[K")


def test_the_cli_chooses_the_language_of_a_new_store(tmp_path: Path) -> None:
    env = clean_env({"GRAYMATTER_DIR": str(tmp_path / "s")})
    run = [sys.executable, "-m", "graymatter_tui"]
    done = subprocess.run(
        [*run, "--stem-language", "russian", "remember", AGENT, "Правила оплаты"],
        env=env,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stderr
    status = subprocess.run([*run, "status", "--json"], env=env, capture_output=True, text=True)
    assert json.loads(status.stdout)["stem_language"] == "russian"
    found = subprocess.run(
        [*run, "recall", AGENT, "правило", "--json"], env=env, capture_output=True, text=True
    )
    assert "Правила оплаты" in found.stdout
    bad = subprocess.run(
        [*run, "--stem-language", "klingon", "status"], env=env, capture_output=True, text=True
    )
    assert bad.returncode == 2  # a bad flag value is a usage error
    assert "Invalid value for '--stem-language': unknown stemming language 'klingon'" in (
        bad.stderr
    )
    assert "Traceback" not in bad.stderr


def test_the_two_variables_must_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAYMATTER_STEM_LANGUAGE", "german")
    with LmdbStore.open(tmp_path / "a") as store:
        assert store.info().stem_language == "german"
    monkeypatch.setenv("GRAYMATTER_LANGUAGE", "German")
    with LmdbStore.open(tmp_path / "b") as store:
        assert store.info().stem_language == "german"
    monkeypatch.setenv("GRAYMATTER_LANGUAGE", "french")
    with pytest.raises(GraymatterError, match="name different languages"):
        LmdbStore.open(tmp_path / "c")
    monkeypatch.delenv("GRAYMATTER_STEM_LANGUAGE")
    monkeypatch.setenv("GRAYMATTER_LANGUAGE", "elvish")
    with pytest.raises(GraymatterError, match="GRAYMATTER_LANGUAGE: unknown stemming language"):
        LmdbStore.open(tmp_path / "d")


def test_changing_the_language_of_a_store_reindexes_it(tmp_path: Path) -> None:
    with LmdbStore.open(tmp_path / "s") as store:
        store.put_many(NewFact(AGENT, t) for t in ["Payments go through Polar.", "INC-9418 closed"])
        assert rank(store, AGENT, "payment")
        reports: list[tuple[str, int, int]] = []
        assert store.set_stem_language("None", progress=lambda *a: reports.append(a)) == 2
        assert reports[-1] == ("re-indexing", 2, 2)
        assert store.info().stem_language == "none"
        assert index_contents(store, AGENT) == _expected(store, AGENT, Analyzer("none"))
        assert rank(store, AGENT, "payment") == []  # keyword only now
        with pytest.raises(GraymatterError, match="unknown stemming language"):
            store.set_stem_language("klingon")
        assert store.info().stem_language == "none"  # nothing changed
        store.set_stem_language("english")
        assert index_contents(store, AGENT) == _expected(store, AGENT, Analyzer("english"))
        assert rank(store, AGENT, "payment")[0].fact.text == "Payments go through Polar."
