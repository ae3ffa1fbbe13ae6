"""The embedder in the background of the long-running processes: a real MCP server in a
subprocess and the TUI under `run_test`, both against the scripted server over loopback.
Writes return while the server holds its answer; the backlog drains once it answers, and
drains again after a failure (back-off, not a give-up)."""

from __future__ import annotations

import logging
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from textual.pilot import Pilot

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding.background import BackgroundEmbedder
from graymatter_tui.embedding.ollama import OllamaEmbedder
from graymatter_tui.tui.app import GraymatterApp
from tests.mcp_server.client import ROOT, Agent, server_env
from tests.support.embedding_fake import EmbeddingOverSocket, Fault
from tests.tui.helpers import make_app, open_store, running, screen_text, wait_until

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
AGENT = "ops-agent"
TEXTS = ["Payments go through Polar", "We never deploy on fridays", "The outage hit billing"]


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running_server:
        yield running_server


def _wait(condition: Callable[[], bool], what: str, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@asynccontextmanager
async def _mcp(data_dir: Path, url: str) -> AsyncIterator[Agent]:
    env = server_env() | {"GRAYMATTER_EMBED": "ollama", "GRAYMATTER_EMBED_URL": url}
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "graymatter_tui", "mcp", "--dir", str(data_dir)],
        env=env,
        cwd=str(ROOT),
    )
    async with (
        stdio_client(params) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield Agent(session)


async def test_the_mcp_server_embeds_in_the_background(
    tmp_path: Path, server: EmbeddingOverSocket
) -> None:
    data = tmp_path / "data"
    server.hold = threading.Event()  # the server answers nothing until released
    async with _mcp(data, server.url) as agent:
        for text in TEXTS:  # each write returns while the embedding server holds
            await agent.ok("memory_add", agent_id=AGENT, text=text)
        with LmdbStore.open(data, read_only=True) as store:
            assert store.embed_state().vectors == 0
            server.hold.set()
            _wait(lambda: store.embed_state().vectors == 3, "3 vectors")
            state = store.embed_state()
            assert (state.model, state.dimension, state.backlog) == ("nomic-embed-text", 768, 0)


@pytest.fixture
def embeds_with(
    server: EmbeddingOverSocket, monkeypatch: pytest.MonkeyPatch, clean_graymatter_env: None
) -> None:
    """The app's background embedder talks to the scripted server (set after the
    environment is cleaned)."""
    monkeypatch.setenv("GRAYMATTER_EMBED", "ollama")
    monkeypatch.setenv("GRAYMATTER_EMBED_URL", server.url)


@pytest.mark.usefixtures("embeds_with")
async def test_the_tui_embeds_in_the_background(tmp_path: Path) -> None:
    with open_store(tmp_path / "store") as store:
        app = make_app(store)
        async with running(app) as pilot:
            assert app.embedder is not None
            for text in TEXTS:
                store.put(AGENT, text)
            app.embedder.nudge()
            await wait_until(
                pilot, lambda: store.embed_state().vectors == 3, timeout=60, what="3 vectors"
            )
            assert store.embed_backlog() == 0
            assert "Traceback" not in screen_text(app) and not app.last_error
        assert app.embedder is not None and not app.embedder._thread.is_alive()


def test_a_server_that_is_down_leaves_the_backlog_and_is_retried(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    for text in TEXTS:
        store.put(AGENT, text)
    server.script(Fault.status(500), Fault.status(503))
    embedder = BackgroundEmbedder(
        store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0), idle=0.05, max_backoff=0.2
    )
    embedder.start()
    try:
        _wait(lambda: store.embed_state().vectors == 3, "3 vectors after two failures")
    finally:
        embedder.stop()
    assert embedder.failures == 0 and embedder.last_error == ""
    assert len(server.embed_requests()) >= 3  # two refused, then the batch that stored
    assert store.embed_backlog() == 0


def test_a_write_never_waits_for_the_embedder(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    server.hold = threading.Event()
    embedder = BackgroundEmbedder(
        store, OllamaEmbedder(server.url, "nomic-embed-text", 30.0), idle=0.05
    )
    embedder.start()
    try:
        store.put(AGENT, TEXTS[0])
        embedder.nudge()
        _wait(lambda: len(server.embed_requests()) == 1, "the held request")
        fact = store.put(AGENT, TEXTS[1])  # while the embedder's request is held
        assert store.find(fact.id) is not None
        assert store.embed_backlog() == 2
        server.hold.set()
        _wait(lambda: store.embed_state().vectors == 2, "2 vectors")
    finally:
        server.hold.set()
        embedder.stop()


async def test_an_agent_finds_a_paraphrase_through_memory_search(
    tmp_path: Path, server: EmbeddingOverSocket
) -> None:
    data = tmp_path / "data"
    async with _mcp(data, server.url) as agent:
        for text in TEXTS:
            await agent.ok("memory_add", agent_id=AGENT, text=text)
        with LmdbStore.open(data, read_only=True) as store:
            _wait(lambda: store.embed_state().vectors == 3, "3 vectors")
        text, structured = await agent.ok(
            "memory_search", agent_id=AGENT, query="who is our invoice supplier", explain=True
        )
    assert "Payments go through Polar" in text
    assert structured["facts"][0] == "Payments go through Polar"
    why = structured["explain"][0]
    assert why["vector_rank"] == 1 and why["keyword_rank"] is None


@asynccontextmanager
async def _embedding_app(
    tmp_path: Path,
) -> AsyncIterator[tuple[LmdbStore, GraymatterApp, BackgroundEmbedder, Pilot[None]]]:
    """The TUI over a store of one fact, once its embedder has given that fact a vector."""
    with open_store(tmp_path / "store") as store:
        store.put(AGENT, "The first fact, so the app has an agent")
        app = make_app(store)
        async with running(app) as pilot:
            assert app.embedder is not None
            app.embedder.nudge()
            await wait_until(
                pilot, lambda: store.embed_state().vectors == 1, timeout=60, what="a vector"
            )
            yield store, app, app.embedder, pilot


@pytest.mark.usefixtures("embeds_with")
async def test_the_tuis_own_vector_writes_redraw_no_fact_but_anothers_write_does(
    tmp_path: Path, server: EmbeddingOverSocket
) -> None:
    async with _embedding_app(tmp_path) as (store, app, embedder, pilot):
        for count, text in enumerate(TEXTS, start=2):
            server.hold = threading.Event()  # the vector waits: the write is heard first
            written = store.put(AGENT, text)
            put_at = store.generation()
            await wait_until(pilot, lambda g=put_at: app.generation == g, what="the write")
            await wait_until(  # the Facts pane reads it in a worker, then draws it
                pilot, lambda t=written.text: t in screen_text(app), what="the fact drawn"
            )
            server.hold.set()
            embedder.nudge()
            await wait_until(
                pilot,
                lambda g=put_at: app.vectors_generation == g + 1,
                timeout=60,
                what=f"vector {count} heard",
            )
            assert store.embed_state().vectors == count
            assert app.generation == put_at  # no pane read every fact again for it
        worker = embedder.worker
        assert worker.own_writes(put_at, put_at + 1) == {"vectors"}
        assert worker.own_writes(put_at - 1, put_at + 1) is None  # the put between


@pytest.mark.usefixtures("embeds_with")
async def test_a_pair_the_tuis_embedder_holds_moves_the_review_queue_not_the_facts(
    tmp_path: Path, server: EmbeddingOverSocket
) -> None:
    """The two texts share no word the write path's check goes by, and mean the same to
    the concept table (money, schedule): the meaning pass holds them. Its write moves the
    Review tab and the top bar's count; the Facts tab (at 1M facts, a million ids read
    again) stays as it is."""
    older = "Payments are billed on fridays at 9:00."
    newer = "Invoices now go out every weekend at 11:00."
    async with _embedding_app(tmp_path) as (store, app, embedder, pilot):
        server.hold = threading.Event()
        store.put(AGENT, older)
        store.put(AGENT, newer)
        assert store.pending_count() == 0  # the words see two subjects
        put_at = store.generation()
        await wait_until(pilot, lambda: app.generation == put_at, what="the writes")
        await wait_until(pilot, lambda: newer in screen_text(app), what="the facts drawn")
        server.hold.set()
        embedder.nudge()
        await wait_until(
            pilot, lambda: app.review_generation > put_at, timeout=60, what="the pair held"
        )
        assert store.pending_count() == 1
        assert app.generation == put_at  # the Facts tab read nothing again
        assert embedder.worker.own_writes(put_at, app.review_generation) == {
            "vectors",
            "review",
        }
        await wait_until(
            pilot, lambda: "[1 TO REVIEW]" in screen_text(app), what="the top bar's count"
        )
        await pilot.press("7")
        await wait_until(
            pilot, lambda: "Invoices now go out" in screen_text(app), what="the Review tab"
        )


def test_a_configured_embedder_loads_numpy_on_its_own_thread_not_the_callers(
    tmp_path: Path,
) -> None:
    """The TUI builds its embedder before its first frame: building it imports nothing
    heavy (numpy alone is 0.1 s); the worker, and numpy with it, come on first use."""
    code = (
        "import sys\n"
        "from graymatter_tui.backends.lmdb import LmdbStore\n"
        "from graymatter_tui.embedding import background, query\n"
        "with LmdbStore.open(sys.argv[1]) as store:\n"
        "    vectors = query.from_env(store)\n"
        "    embedder = background.from_env(store)\n"
        "    print(type(embedder).__name__, vectors is not None, 'numpy' in sys.modules)\n"
        "    embedder.worker\n"
        "    print('numpy' in sys.modules)\n"
    )
    env = {**server_env(), "GRAYMATTER_EMBED": "local"}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "store")],
        capture_output=True, text=True, timeout=60, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["BackgroundEmbedder", "True", "False", "True"]


async def _quit_once_asked(
    store: LmdbStore, server: EmbeddingOverSocket, *, requests: int
) -> GraymatterApp:
    """The TUI over `store` (holding TEXTS), quit with `q` once the model has been asked
    `requests` times; the app, ended, its embedder maybe still running."""
    for text in TEXTS:
        store.put(AGENT, text)
    app = make_app(store)
    async with app.run_test() as pilot:
        assert app.embedder is not None
        app.embedder.nudge()
        await wait_until(
            pilot,
            lambda: len(server.embed_requests()) == requests,
            timeout=60,
            what=f"{requests} requests",
        )
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.is_running, what="the app ended")
    return app


@pytest.mark.usefixtures("embeds_with")
async def test_quitting_the_tui_drops_the_models_answer_and_leaves_the_batch_queued(
    tmp_path: Path, server: EmbeddingOverSocket
) -> None:
    """`q` while the model's answer is in flight and no pair check is owed: the app ends
    at once and owes the store nothing (the process may end and the store close under the
    request); the answer, when it comes, is not written: the batch stays queued."""
    server.hold = threading.Event()
    with open_store(tmp_path / "store") as store:
        app = await _quit_once_asked(store, server, requests=1)
        embedder = app.embedder
        assert embedder is not None
        told: list[str] = []
        assert app.finish_background(0.0, notice=told.append, notice_after=0.0)
        assert told == [] and embedder.alive  # settled while its request is still held
        server.hold.set()
        assert embedder.wait(60)
        assert store.embed_state().vectors == 0
        assert store.embed_backlog() == len(TEXTS)


@pytest.mark.usefixtures("embeds_with")
async def test_quitting_the_tui_waits_for_the_pair_check_it_owes_and_says_so(
    tmp_path: Path, server: EmbeddingOverSocket, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One fact given its vector (its pair check owed until the queue is empty), the next
    one's answer hanging: after the quit the shell is told what it waits for, and once the
    model gives up the check runs before the embedder ends."""
    monkeypatch.setenv("GRAYMATTER_EMBED_BATCH", "1")
    server.script(Fault(), Fault.hang(60))
    with open_store(tmp_path / "store") as store:
        app = await _quit_once_asked(store, server, requests=2)
        embedder = app.embedder
        assert embedder is not None
        assert embedder.worker.owes_pair_check
        told: list[str] = []
        assert not app.finish_background(0.2, notice=told.append, notice_after=0.1)
        assert len(told) == 1 and "check the new facts for contradictions" in told[0]
        server.stopping.set()  # the hanging answer ends: the model failed
        assert app.finish_background(60) and not embedder.alive
        assert not embedder.worker.owes_pair_check
        assert store.embed_state().vectors == 1 and store.embed_backlog() == 2


def test_an_embedder_that_outlives_its_store_ends_without_a_traceback(
    tmp_path: Path, server: EmbeddingOverSocket, caplog: pytest.LogCaptureFixture
) -> None:
    """The store closed under a stopping embedder (a host that could not wait for it): the
    last pair check cannot run, and that is no error report on the terminal."""
    caplog.set_level(logging.INFO, logger="graymatter_tui.embedding.background")
    store = open_store(tmp_path / "store")
    for text in TEXTS:
        store.put(AGENT, text)
    embedder = BackgroundEmbedder(
        store, OllamaEmbedder(server.url, "nomic-embed-text", 30.0), batch=1, idle=0.05
    )
    embedder.worker.ensure_model()
    assert embedder.worker.step() == (1, 0, 0)  # one fact given its vector, check owed
    server.hold = threading.Event()  # the next fact's answer is held
    embedder.start()
    try:
        _wait(lambda: len(server.embed_requests()) == 2, "the second request")
        embedder.request_stop()
        store.close()
    finally:
        server.hold.set()
    assert embedder.wait(60)
    assert [r for r in caplog.records if r.levelname in ("ERROR", "CRITICAL")] == []
    assert any("pair check by meaning not done" in r.getMessage() for r in caplog.records)


def test_the_first_batch_waits_for_a_quiet_host_and_no_longer_than_its_bound(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    """The TUI starts its embedder at a pause in the keys (the model's import holds the
    interpreter's lock a key's frame waits for); a host that never pauses still gets its
    facts embedded once the bound has passed."""
    store.put(AGENT, TEXTS[0])
    quiet = threading.Event()
    waiting = BackgroundEmbedder(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0))
    waiting.start_later(0.01, quiet=quiet.is_set, quiet_within=60.0)
    try:
        time.sleep(0.5)
        assert not waiting.running and server.embed_requests() == []
        quiet.set()
        _wait(lambda: store.embed_state().vectors == 1, "the vector once quiet")
    finally:
        waiting.stop()
    store.put(AGENT, TEXTS[1])
    bounded = BackgroundEmbedder(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0))
    started = time.monotonic()
    bounded.start_later(0.01, quiet=lambda: False, quiet_within=0.3, pause_within=0.1)
    try:
        _wait(lambda: store.embed_state().vectors == 2, "the vector past the bound")
        assert time.monotonic() - started >= 0.3
    finally:
        bounded.stop()


def test_later_reads_and_writes_wait_for_a_quiet_host(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    """Past its first batch, the embedder reads the queue and stores a batch only at a
    pause in the host's keys: its store work holds the interpreter's lock, which a frame
    drawn meanwhile would wait for (ADR 0084). The model's call is not held back."""
    quiet = threading.Event()
    quiet.set()
    store.put(AGENT, TEXTS[0])
    embedder = BackgroundEmbedder(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0))
    embedder.start_later(0.01, quiet=quiet.is_set, pause_within=60.0)
    try:
        _wait(lambda: store.embed_state().vectors == 1, "the first vector")
        asked = len(server.embed_requests())
        quiet.clear()  # a person types: the next batch is not even read
        store.put(AGENT, TEXTS[1])
        embedder.nudge()
        time.sleep(0.5)
        assert len(server.embed_requests()) == asked and store.embed_state().vectors == 1
        server.hold = threading.Event()  # quiet again: read and sent, the answer held
        quiet.set()
        _wait(lambda: len(server.embed_requests()) == asked + 1, "the second request")
        quiet.clear()  # typing while the model works: its answer is not stored yet
        server.hold.set()
        _wait(lambda: not embedder.worker.waiting_on_model, "the model's answer")
        time.sleep(0.5)
        assert store.embed_state().vectors == 1
        quiet.set()
        _wait(lambda: store.embed_state().vectors == 2, "the vector once quiet")
    finally:
        embedder.stop()


def test_a_stop_ends_a_wait_for_a_quiet_host_and_leaves_the_batch_queued(
    store: LmdbStore, server: EmbeddingOverSocket
) -> None:
    store.put(AGENT, TEXTS[0])
    quiet = threading.Event()
    embedder = BackgroundEmbedder(store, OllamaEmbedder(server.url, "nomic-embed-text", 10.0))
    embedder.start_later(0.01, quiet=quiet.is_set, quiet_within=0.0, pause_within=60.0)
    _wait(lambda: embedder.running, "the first round")
    time.sleep(0.3)
    assert server.embed_requests() == []  # waiting before its first read
    started = time.monotonic()
    assert embedder.stop(timeout=10.0)
    assert time.monotonic() - started < 5.0  # not the 60 s of its bound
    state = store.embed_state()
    assert (state.vectors, state.backlog) == (0, 1)
