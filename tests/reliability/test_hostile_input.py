"""Hostile text, files and models: shown literally, stored and exported byte for byte,
refused clearly, and never allowed to hang a cycle past its time budget."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.consolidation.cycle import Cycle, CycleOptions
from graymatter_tui.consolidation.invariants import check_invariants
from graymatter_tui.consolidation.summarisers.ollama import OllamaSummariser
from graymatter_tui.core.textsafe import MAX_TEXT_BYTES
from graymatter_tui.storage import NewFact
from tests.support.ollama_fake import FakeOllama, RecordedRequest, Reply
from tests.support.over_socket import OllamaOverSocket

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
# A 2-byte "é" at the 64 KiB limit: AT_LIMIT is exactly 65536 bytes (allowed); in
# OVER_LIMIT the "é" straddles the limit, 65536 characters but 65537 bytes (refused).
AT_LIMIT = "x" * (MAX_TEXT_BYTES - 2) + "é"
OVER_LIMIT = "x" * (MAX_TEXT_BYTES - 1) + "é"
HOSTILE = [
    "[bold red]not bold[/] [@click=app.quit]click[/]",
    "\x1b]52;c;aGVsbG8=\x07 clipboard write",
    "\x1b[2J\x1b[H cursor moves",
    "\u202e bidi override \u2066isolate\u2069",
    "NUL \x00 inside",
    "line one\nline two\ttabbed\r\ncarriage",
    AT_LIMIT,
]


def cli(*args: str, path: Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args, "--dir", str(path)],
        capture_output=True,
        env={**os.environ, "GRAYMATTER_NOW": "2026-11-30T12:00:00Z"},
        timeout=60,
    )


def test_hostile_text_round_trips_byte_for_byte(tmp_path: Path) -> None:
    source, copy = tmp_path / "a", tmp_path / "b"
    with LmdbStore.open(source) as store:
        ids = [store.put("agent", text).id for text in HOSTILE]
    export = tmp_path / "out.jsonl"
    assert cli("export", "--out", str(export), path=source).returncode == 0
    assert cli("import", str(export), path=copy).returncode == 0
    with LmdbStore.open(copy) as store:
        for fact_id, text in zip(ids, HOSTILE, strict=True):
            assert store.require(fact_id).text.encode() == text.encode()
    listing = cli("list", "agent", path=source)
    assert listing.returncode == 0
    assert b"\x1b" not in listing.stdout and b"\x07" not in listing.stdout
    assert b"\x00" not in listing.stdout
    assert b"[bold red]not bold[/]" in listing.stdout
    as_json = cli("list", "agent", "--json", path=source)
    assert b"\x1b" not in as_json.stdout
    texts = {f["text"] for f in json.loads(as_json.stdout)}
    assert texts == set(HOSTILE)


def test_one_byte_over_64_kib_is_refused_on_remember_and_import(tmp_path: Path) -> None:
    assert len(AT_LIMIT.encode()) == MAX_TEXT_BYTES == 65536
    assert len(OVER_LIMIT.encode()) == MAX_TEXT_BYTES + 1
    source, copy = tmp_path / "a", tmp_path / "b"
    assert cli("remember", "agent", AT_LIMIT, path=source).returncode == 0
    over = cli("remember", "agent", OVER_LIMIT, path=source)
    assert over.returncode == 1
    assert over.stderr.decode().splitlines() == [
        "graymatter-tui: error: text is 65537 bytes; the limit is 65536 bytes (64 KiB)"
    ]
    with LmdbStore.open(source) as store:
        assert [f.text for f in store.list_facts("agent", "all")] == [AT_LIMIT]
    # An export edited to carry the longer text is refused whole on import.
    export = tmp_path / "out.jsonl"
    assert cli("export", "--out", str(export), path=source).returncode == 0
    header, line = export.read_text(encoding="utf-8").splitlines()
    entry = json.loads(line)
    entry["fact"]["text"] = OVER_LIMIT
    export.write_text(f"{header}\n{json.dumps(entry, ensure_ascii=False)}\n", encoding="utf-8")
    refused = cli("import", str(export), path=copy)
    assert refused.returncode == 1
    assert b"line 2: text is 65537 bytes" in refused.stderr
    with LmdbStore.open(copy) as store:
        assert store.list_facts(None, "all") == []


def test_undecodable_argv_bytes_are_refused_clearly(tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable.encode(),
            b"-m",
            b"graymatter_tui",
            b"remember",
            b"agent",
            b"bad \xff\xfe bytes",
            b"--dir",
            str(tmp_path / "s").encode(),
        ],
        capture_output=True,
        timeout=60,
    )
    assert done.returncode == 1
    assert b"not valid UTF-8" in done.stderr
    assert b"Traceback" not in done.stderr


def test_symlinked_data_dirs(tmp_path: Path) -> None:
    real = tmp_path / "real"
    with LmdbStore.open(real) as store:
        fact = store.put("agent", "through a link")
    link = tmp_path / "link"
    link.symlink_to(real)
    shown = cli("show", fact.id, path=link)
    assert shown.returncode == 0 and b"through a link" in shown.stdout
    dangling = tmp_path / "dangling"
    dangling.symlink_to(tmp_path / "nowhere")
    done = cli("status", path=dangling)
    assert done.returncode == 1 and b"Traceback" not in done.stderr
    assert not (tmp_path / "nowhere").exists()
    to_file = tmp_path / "to-file"
    (tmp_path / "a-file").write_text("keep me")
    to_file.symlink_to(tmp_path / "a-file")
    done = cli("status", path=to_file)
    assert done.returncode == 1 and b"not a directory" in done.stderr
    assert (tmp_path / "a-file").read_text() == "keep me"


def _store_with_batch(path: Path) -> LmdbStore:
    store = LmdbStore.open(path, clock_fn=lambda: NOW)
    store.put_many(
        NewFact(
            agent_id="agent", text=f"fact {i} about ticket SUP-{1000 + i}", weight=0.2 + i / 100
        )
        for i in range(30)
    )
    return store


def test_a_trickling_server_is_cut_off_at_the_deadline(tmp_path: Path) -> None:
    store = _store_with_batch(tmp_path / "s")
    before = store.list_facts("agent", "all")
    with OllamaOverSocket() as server:
        proposal = json.dumps({"summary": "x", "consumes": []})
        server.set_default(Reply.trickle(proposal * 50, delay=0.05, chunk=4))
        started = time.monotonic()
        record = Cycle(
            store,
            "agent",
            OllamaSummariser(server.url, "llama3.2", timeout=1.0),
            CycleOptions(threshold=10),
        ).run_sync()
        elapsed = time.monotonic() - started
    assert record.outcome == "failed"
    assert len(server.generate_requests) == 2  # one retry, then give up
    assert elapsed < 20  # uncut, two attempts would trickle for ~50 s
    after = store.list_facts("agent", "all")
    assert [f.text for f in after] == [f.text for f in before]
    store.close()


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(max_size=10), children, max_size=5)
    ),
    max_leaves=25,
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    summary=st.one_of(st.text(max_size=200), JSON_VALUES),
    extra_ids=st.lists(
        st.sampled_from(["pinned", "tomb", "other", "summary", "dup", "bogus"]), max_size=6
    ),
    take=st.integers(min_value=0, max_value=20),
    raw=st.one_of(st.none(), st.text(max_size=300)),
)
def test_hostile_proposals_only_ever_consume_batch_facts(
    tmp_path_factory,
    summary,
    extra_ids,
    take,
    raw,  # type: ignore[no-untyped-def]
) -> None:
    path = tmp_path_factory.mktemp("hostile")
    store = _store_with_batch(path / "s")
    pinned = store.pin(store.fact_ids("agent")[-1]).id
    tomb = store.retire(store.fact_ids("agent")[-2]).id
    other = store.put("someone-else", "not yours SUP-1").id
    lookup = {"pinned": pinned, "tomb": tomb, "other": other, "bogus": "01J" + "Z" * 23}

    def respond(request: RecordedRequest) -> Reply:
        shown = [line[2:28] for line in request.prompt.splitlines() if line.startswith("- ")]
        ids = shown[:take] + [lookup.get(e, shown[0] if shown else "") for e in extra_ids]
        if raw is not None:
            return Reply.text(raw)
        return Reply.proposal(summary if isinstance(summary, str) else json.dumps(summary), ids)

    server = FakeOllama()
    server.set_responder(respond)
    record = Cycle(
        store,
        "agent",
        OllamaSummariser(server.url, "llama3.2", timeout=5.0, transport=server.transport),
        CycleOptions(threshold=10),
    ).run_sync()
    assert server.errors == []
    assert set(record.consumed) <= set(record.batch)
    assert pinned not in record.consumed and tomb not in record.consumed
    assert store.require(pinned).is_live and store.require(other).is_live
    assert all(check.ok for check in check_invariants(store))
    store.close()
