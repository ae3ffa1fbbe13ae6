"""`graymatter-tui recall` through the real CLI (its `main()`, in this process where that
is the same as a subprocess: tests/support/cli_process.py), against a real store.

The store is seeded in-process on a fixed clock and closed; every command then runs as
`graymatter-tui --dir DIR recall ...` with GRAYMATTER_NOW set one hour later, so
a recorded access is recognisable by its timestamp. Ranking, limits and recorded accesses
run on both backends (`seeded_any`, `--store`); the weights and bad input, which the CLI
reads before any store, stay on LMDB.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.recall.ranking import RecallWeights, rank
from tests.recall.helpers import AGENT, FIXED
from tests.support.backends import CliStore
from tests.support.cli_process import run_in_process, wants_subprocess
from tests.support.clock import ManualClock
from tests.support.suite_env import TEST_DEFAULTS

NOW_TEXT = "2026-03-01T13:00:00Z"  # one hour after the store was seeded
NOW_STORED = "2026-03-01T13:00:00.000000Z"
ERROR_PREFIX = "graymatter-tui: error:"

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


Where = Path | CliStore  # an LMDB data dir, or either backend's store


def run(
    data_dir: Where, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`python -m graymatter_tui --dir DATA_DIR ARGS` (`--store LOCATION` for a CliStore)
    with a pinned clock and no leaked GRAYMATTER_* settings."""
    named = (
        ["--store", data_dir.location]
        if isinstance(data_dir, CliStore)
        else ["--dir", str(data_dir)]
    )
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("GRAYMATTER_", "LMDB_"))}
    clean.update({"GRAYMATTER_NOW": NOW_TEXT, "PYTHONIOENCODING": "utf-8", "COLUMNS": "400"})
    clean.update(TEST_DEFAULTS)
    clean.update(env or {})
    if not wants_subprocess((*named, *args)):
        return run_in_process((*named, *args), b"", clean)
    done = subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *named, *args],
        capture_output=True,
        env=clean,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode("utf-8"), done.stderr.decode("utf-8")
    )


def recall_json(data_dir: Where, *args: str, env: dict[str, str] | None = None) -> list[Any]:
    done = run(data_dir, "recall", *args, "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def access(data_dir: Where) -> dict[str, tuple[int, str]]:
    """id -> (access_count, accessed_at) of every fact, read with the real `list` command."""
    done = run(data_dir, "list", AGENT, "--state", "all", "--json")
    assert done.returncode == 0, done.stderr
    return {f["id"]: (f["access_count"], f["accessed_at"]) for f in json.loads(done.stdout)}


def one_line_error(done: subprocess.CompletedProcess[str], code: int = 1) -> str:
    assert done.returncode == code, (done.returncode, done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip("\n").splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(ERROR_PREFIX), lines[0]
    assert done.stdout == ""
    return lines[0]


def digest(data_dir: Where) -> str:
    """The LMDB file's bytes; on PostgreSQL, the write generation and the feed's last
    write (every write moves both)."""
    if isinstance(data_dir, CliStore) and data_dir.backend == "postgres":
        with data_dir.open() as store:
            return f"{store.generation()}/{store.last_activity()}"
    path = Path(data_dir.location) if isinstance(data_dir, CliStore) else data_dir
    return hashlib.sha256((path / "data.mdb").read_bytes()).hexdigest()


def _seed(where: CliStore) -> dict[str, str]:
    """Five facts of AGENT (oldest first, a minute apart: the first at recency 0, the
    last at 1) and one of another agent; their ids by name."""
    names = ["both", "router", "firmware", "printer", "weather"]
    clock = ManualClock(FIXED)
    with where.open(clock_fn=clock) as store:
        facts = []
        for text in (
            "router firmware upgrade scheduled",
            "router password rotated",
            "firmware notes for the printer",
            "printer toner low",
            "weather sunny today",
        ):
            facts.append(store.put(AGENT, text))
            clock.advance(minutes=1)
        store.put("other-agent", "router firmware upgrade scheduled")
    return {name: f.id for name, f in zip(names, facts, strict=True)}


@pytest.fixture
def seeded(tmp_path: Path) -> Iterator[tuple[Path, dict[str, str]]]:
    """The seeded store, on LMDB."""
    data_dir = tmp_path / "cli"
    yield data_dir, _seed(CliStore.lmdb(data_dir))


@pytest.fixture
def seeded_any(cli_store: CliStore) -> tuple[CliStore, dict[str, str]]:
    """The seeded store, on each backend."""
    return cli_store, _seed(cli_store)


def test_json_shape_and_order(seeded_any: tuple[CliStore, dict[str, str]]) -> None:
    data_dir, ids = seeded_any
    hits = recall_json(data_dir, AGENT, "router firmware")
    assert isinstance(hits, list)
    for hit in hits:
        assert set(hit) == {"id", "text", "score"}
        assert isinstance(hit["id"], str) and isinstance(hit["text"], str)
        assert isinstance(hit["score"], float) and hit["score"] > 0
    # Hand-derived: the fact matching both words leads; the two matching one word follow;
    # the other agent's identical fact and non-matching facts never appear.
    assert hits[0]["id"] == ids["both"]
    assert hits[0]["text"] == "router firmware upgrade scheduled"
    assert {h["id"] for h in hits} == {ids["both"], ids["router"], ids["firmware"]}
    assert [h["score"] for h in hits] == sorted((h["score"] for h in hits), reverse=True)
    # Same order and (rounded) scores as the library with its default weights: the CLI's
    # default must be the library's.
    with data_dir.open(clock_fn=lambda: FIXED) as store:
        expected = rank(store, AGENT, "router firmware", weights=RecallWeights())
    assert [h["id"] for h in hits] == [h.fact.id for h in expected]
    assert [h["score"] for h in hits] == [round(h.score, 6) for h in expected]


def test_no_match(seeded_any: tuple[CliStore, dict[str, str]]) -> None:
    data_dir, _ = seeded_any
    assert recall_json(data_dir, AGENT, "kubernetes") == []
    assert recall_json(data_dir, AGENT, "the and of") == []
    assert recall_json(data_dir, "nobody", "router") == []
    done = run(data_dir, "recall", AGENT, "kubernetes")
    assert done.returncode == 0
    assert done.stdout.strip() == "no matching facts"


def test_human_output(seeded: tuple[Path, dict[str, str]]) -> None:
    data_dir, ids = seeded
    done = run(data_dir, "recall", AGENT, "router firmware", "--preview")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 3
    score, fact_id, text = lines[0].split("  ", 2)
    assert float(score) > 0
    assert fact_id == ids["both"]
    assert text == "router firmware upgrade scheduled"


def test_k_limits_results(seeded_any: tuple[CliStore, dict[str, str]]) -> None:
    data_dir, ids = seeded_any
    everything = recall_json(data_dir, AGENT, "router firmware", "--preview")
    one = recall_json(data_dir, AGENT, "router firmware", "-k", "1", "--preview")
    two = recall_json(data_dir, AGENT, "router firmware", "-k", "2", "--preview")
    assert [h["id"] for h in one] == [ids["both"]]
    assert two == everything[:2]


def test_preview_does_not_record_access_but_recall_does(
    seeded_any: tuple[CliStore, dict[str, str]],
) -> None:
    data_dir, ids = seeded_any
    before = access(data_dir)
    assert all(count == 0 for count, _ in before.values())
    snapshot = digest(data_dir)

    previewed = recall_json(data_dir, AGENT, "router", "--preview")
    assert {h["id"] for h in previewed} == {ids["both"], ids["router"]}
    assert access(data_dir) == before
    assert digest(data_dir) == snapshot  # a preview writes nothing at all

    recalled = recall_json(data_dir, AGENT, "router")
    assert recalled == previewed
    after = access(data_dir)
    for fact_id, (count, stamp) in after.items():
        if fact_id in (ids["both"], ids["router"]):
            assert (count, stamp) == (1, NOW_STORED)
        else:
            assert (count, stamp) == before[fact_id]

    # "router password rotated" is the shorter match: with -k 1 only it is touched again.
    top = recall_json(data_dir, AGENT, "router", "-k", "1")
    assert [h["id"] for h in top] == [ids["router"]]
    again = access(data_dir)
    assert again[ids["router"]][0] == 2
    assert again[ids["both"]][0] == 1


def test_weights_option_and_environment(seeded: tuple[Path, dict[str, str]]) -> None:
    data_dir, ids = seeded
    newest_first = [ids["firmware"], ids["router"], ids["both"]]
    by_recency = recall_json(data_dir, AGENT, "router firmware", "--weights", "0,1", "--preview")
    assert [h["id"] for h in by_recency] == newest_first
    # Keyword weight 0: the score is the recency prior alone, each fact's place between
    # the agent's oldest (minute 0) and newest (minute 4) fact.
    assert [h["score"] for h in by_recency] == [0.5, 0.25, 0.0]
    from_env = recall_json(
        data_dir, AGENT, "router firmware", "--preview", env={"GRAYMATTER_RECALL_WEIGHTS": "0,1"}
    )
    assert from_env == by_recency
    # The option wins over the environment.
    overridden = recall_json(
        data_dir,
        AGENT,
        "router firmware",
        "--weights",
        "1,0",
        "--preview",
        env={"GRAYMATTER_RECALL_WEIGHTS": "0,1"},
    )
    assert overridden[0]["id"] == ids["both"]
    assert overridden[0]["score"] == 1.0  # the best keyword match, no prior
    # A strong prior lifts the newer one-word matches over the best keyword match.
    lifted = recall_json(data_dir, AGENT, "router firmware", "--weights", "1,10", "--preview")
    assert [h["id"] for h in lifted] == newest_first


def test_three_weights_name_vector_keyword_recency(seeded: tuple[Path, dict[str, str]]) -> None:
    # Without a vector signal the vector weight changes nothing; keyword and recency keep
    # the meaning they have in the two-number form.
    data_dir, _ = seeded
    for two, three in (("0,1", "0.5,0,1"), ("1,0", "1,1,0"), ("1.0,0.1", "1,1.0,0.1")):
        assert recall_json(
            data_dir, AGENT, "router firmware", "--weights", three, "--preview"
        ) == recall_json(data_dir, AGENT, "router firmware", "--weights", two, "--preview")


@pytest.mark.parametrize(
    ("args", "code", "needle"),
    [
        (["", "router"], 1, "agent name is empty"),
        (["   ", "router"], 1, "agent name is empty"),
        ([AGENT, "router", "-k", "0"], 2, "'-k'"),
        ([AGENT, "router", "-k", "1001"], 2, "'-k'"),
        ([AGENT, "router", "-k", "many"], 2, "'-k'"),
        ([AGENT, "router", "--weights", "banana"], 2, "banana"),
        ([AGENT, "router", "--weights", "1,2,3,4,5"], 2, "VECTOR,KEYWORD,RECENCY"),
        ([AGENT, "router", "--weights", "1"], 2, "KEYWORD,RECENCY"),
        ([AGENT, "router", "--weights", "-1,1"], 2, "non-negative"),
        ([AGENT, "router", "--weights", "0,0,0"], 2, "not all zero"),
        ([AGENT, "router", "--weights", "1,2,nan"], 2, "finite"),
        ([AGENT, "router", "--weights", "1,-1,1"], 2, "non-negative"),
        ([AGENT, "x" * 5000], 1, "4096 bytes"),
        ([AGENT, "é" * 2500], 1, "4096 bytes"),  # 2500 characters, 5000 bytes
    ],
    ids=[
        "empty-agent",
        "blank-agent",
        "k-zero",
        "k-too-big",
        "k-not-a-number",
        "weights-banana",
        "weights-five",
        "weights-one",
        "weights-negative",
        "weights-three-zero",
        "weights-three-nan",
        "weights-three-negative",
        "query-5000-bytes",
        "query-5000-utf8-bytes",
    ],
)
def test_bad_input(
    seeded: tuple[Path, dict[str, str]], args: list[str], code: int, needle: str
) -> None:
    data_dir, _ = seeded
    snapshot = digest(data_dir)  # unchanged bytes: nothing written, no access recorded
    done = run(data_dir, "recall", *args, "--json")
    if code == 2:  # click usage error: usage lines plus one "Error:" line
        assert done.returncode == 2, done.stderr
        assert "Traceback" not in done.stderr
        assert done.stdout == ""
        assert needle in done.stderr
    else:
        assert needle in one_line_error(done, code)
    assert digest(data_dir) == snapshot


def test_bad_weights_in_environment(seeded: tuple[Path, dict[str, str]]) -> None:
    data_dir, _ = seeded
    done = run(data_dir, "recall", AGENT, "router", env={"GRAYMATTER_RECALL_WEIGHTS": "banana"})
    assert "GRAYMATTER_RECALL_WEIGHTS: recall weights must be" in one_line_error(done)


def test_nan_weights_rejected(seeded: tuple[Path, dict[str, str]]) -> None:
    data_dir, _ = seeded
    done = run(data_dir, "recall", AGENT, "router", "--weights", "nan,1", "--json")
    assert done.returncode == 2, done.stderr  # a bad flag value: a usage error
    assert "Error: Invalid value for '--weights': recall weights must be finite" in done.stderr
