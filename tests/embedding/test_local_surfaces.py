"""The local model (REAL, offline) through what a person and an agent see: the default
embedder of the CLI, `doctor`'s real check, `status`, and what recall says when it falls
back to keyword and recency because the model is missing or damaged: a line on stderr
(`recall`), a structured `vector` key (MCP `memory_search`, its text unchanged), and the
TUI's recall preview and Status tab.

A damaged model is a user's model directory (GRAYMATTER_EMBED_MODEL_PATH) holding a copy
of the bundled files, pinned by GRAYMATTER_EMBED_MODEL_SHA256: embedded with while whole,
then truncated or altered, so the store's vectors are that model's and the query must
be embedded by it."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.widgets import DataTable

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding.model_files import BUNDLED_MODEL_SHA256, VENDORED, bundled
from graymatter_tui.mcp.replies import search_reply
from tests.conftest import run_graymatter
from tests.mcp_server.client import connected_with
from tests.tui.helpers import make_app, open_store, running, settle, static_text, wait_until

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")
RunCli = Callable[..., subprocess.CompletedProcess[str]]
AGENT = "ops"
FACTS = [
    "Deploys to production happen on Tuesdays and Thursdays.",
    "The office coffee machine needs descaling every month.",
    "Payments go through Polar; invoices are sent on the first of the month.",
]
QUERY = "which days do we ship releases to prod"


@pytest.fixture(autouse=True)
def _own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))


@pytest.fixture
def model_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "team-model"
    directory.mkdir()
    shutil.copyfile(bundled().model, directory / "model.onnx")
    shutil.copyfile(VENDORED / "tokenizer.json", directory / "tokenizer.json")
    return directory


def _own(model_dir: Path, tmp_path: Path) -> dict[str, str]:
    return {
        "GRAYMATTER_EMBED": "local",
        "GRAYMATTER_EMBED_MODEL_PATH": str(model_dir),
        "GRAYMATTER_EMBED_MODEL_SHA256": BUNDLED_MODEL_SHA256,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }


def _damage(model_dir: Path) -> None:
    path = model_dir / "model.onnx"
    with open(path, "r+b") as file:
        file.truncate(path.stat().st_size - 4096)


def _embedded(run_cli: RunCli, env: dict[str, str]) -> None:
    for text in FACTS:
        assert run_cli("remember", AGENT, text).returncode == 0
    done = run_cli("embed", "--json", env=env)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["embedded"] == len(FACTS)


# ---- the CLI -------------------------------------------------------------------------
def test_unset_means_the_local_model_end_to_end(run_cli: RunCli, tmp_path: Path) -> None:
    # GRAYMATTER_EMBED removed, not "none": the product's own default.
    default = {"GRAYMATTER_EMBED": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for text in FACTS:
        assert run_cli("remember", AGENT, text).returncode == 0
    status = json.loads(run_cli("status", "--json", env=default).stdout)
    assert (status["embedder"], status["embedder_model"]) == ("local", "minilm-l6-v2-int8@win256")
    assert status["embed_model"] is None  # a write never embeds
    done = run_cli("embed", env=default)
    assert done.returncode == 0, done.stderr
    assert (
        "embedded 3 facts with minilm-l6-v2-int8@win256 (dimension 384); 0 waiting" in done.stdout
    )
    found = run_cli("recall", AGENT, QUERY, "-k", "1", "--explain", env=default)
    assert found.returncode == 0 and found.stderr == ""
    assert FACTS[0] in found.stdout and ", rank 1) + keyword" in found.stdout
    assert "keyword –" in found.stdout  # found by meaning alone
    text = run_cli("status", env=default).stdout
    assert "embedding  minilm-l6-v2-int8@win256 · 384 dims · 0 facts waiting" in text
    assert "embedder   local · minilm-l6-v2-int8@win256" in text


def test_recall_says_on_stderr_when_the_model_failed(
    run_cli: RunCli, model_dir: Path, tmp_path: Path
) -> None:
    env = _own(model_dir, tmp_path)
    _embedded(run_cli, env)
    whole = run_cli("recall", AGENT, QUERY, "-k", "1", env=env)
    assert whole.returncode == 0 and whole.stderr == "" and FACTS[0] in whole.stdout
    _damage(model_dir)
    fallen = run_cli("recall", AGENT, "deploys production", "-k", "1", env=env)
    assert fallen.returncode == 0
    assert FACTS[0] in fallen.stdout  # keyword still finds it
    lines = fallen.stderr.splitlines()
    assert len(lines) == 1, fallen.stderr
    assert lines[0].startswith(
        "graymatter-tui: warning: ranked on keyword and recency only: the embedder failed: "
    )
    assert "not the pinned 8199be6f699a395f" in lines[0] and "Traceback" not in fallen.stderr
    as_json = run_cli("recall", AGENT, "deploys production", "--json", env=env)
    assert json.loads(as_json.stdout)[0]["text"] == FACTS[0]  # stdout stays JSON only
    assert "the embedder failed" in as_json.stderr


def test_recall_explain_says_why_vectors_took_no_part(run_cli: RunCli, tmp_path: Path) -> None:
    env = {"GRAYMATTER_EMBED": "local", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    run_cli("remember", AGENT, FACTS[0])
    quiet = run_cli("recall", AGENT, "deploys", env=env)
    assert quiet.returncode == 0 and quiet.stderr == ""  # nothing failed: nothing said
    explained = run_cli("recall", AGENT, "deploys", "--explain", env=env)
    assert "note: ranked on keyword and recency only: this store has no vectors yet" in (
        explained.stderr
    )


def test_doctor_checks_the_model_for_real(run_cli: RunCli, model_dir: Path, tmp_path: Path) -> None:
    run_cli("remember", AGENT, FACTS[0])
    default = {"GRAYMATTER_EMBED": "", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    done = run_cli("doctor", "--json", env=default)
    assert done.returncode == 0, done.stdout
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    assert checks["embedder"]["status"] == "ok"
    detail = checks["embedder"]["detail"]
    assert detail.startswith("local: minilm-l6-v2-int8@win256: loaded in ")
    assert "(sha256 8199be6f699a… verified), 384 dims, the probe embedded in" in detail
    env = _own(model_dir, tmp_path)
    _damage(model_dir)
    configured = run_cli("doctor", "--json", env=env)
    assert configured.returncode == 0  # only configured: a warning
    checks = {c["name"]: c for c in json.loads(configured.stdout)["checks"]}
    assert checks["embedder"]["status"] == "warn"
    assert "not the pinned 8199be6f699a395f" in checks["embedder"]["detail"]
    assert checks["embedder"]["detail"].endswith(
        "recall ranks on keyword and recency until it works"
    )
    named = run_cli("doctor", "--embed", "local", env=env)
    assert named.returncode == 1  # named: a failure
    assert "✗ embedder" in named.stdout and "1 check failed: embedder." in named.stdout
    off = run_cli("doctor", "--json", env={"GRAYMATTER_EMBED": "none"})
    checks = {c["name"]: c for c in json.loads(off.stdout)["checks"]}
    assert checks["embedder"] == {
        "name": "embedder",
        "status": "ok",
        "detail": "none configured (GRAYMATTER_EMBED=none): recall ranks on keyword and recency",
    }


# ---- MCP -------------------------------------------------------------------------------
async def test_memory_search_says_whether_vectors_took_part(
    run_cli: RunCli, cli_dir: Path, model_dir: Path, tmp_path: Path
) -> None:
    env = _own(model_dir, tmp_path)
    _embedded(run_cli, env)
    args = ["--dir", str(cli_dir), "--read-only"]
    async with connected_with(args, "probe", env) as agent:
        text, structured = await agent.ok("memory_search", agent_id=AGENT, query=QUERY, top_k=1)
    assert structured["vector"] == {"used": True}
    assert structured["facts"] == [FACTS[0]]
    assert text == search_reply(AGENT, QUERY, [FACTS[0]]).text  # upstream's words
    _damage(model_dir)
    async with connected_with(args, "probe", env) as agent:
        text, structured = await agent.ok(
            "memory_search", agent_id=AGENT, query="deploys production", top_k=1
        )
    vector = structured["vector"]
    assert (vector["used"], vector["failed"]) == (False, True)
    assert "not the pinned 8199be6f699a395f" in vector["reason"]
    assert text == search_reply(AGENT, "deploys production", [FACTS[0]]).text
    async with connected_with(args, "probe", {"GRAYMATTER_EMBED": "none"}) as agent:
        _, structured = await agent.ok("memory_search", agent_id=AGENT, query="deploys")
    assert structured["vector"] == {
        "used": False,
        "reason": "embeddings are off (GRAYMATTER_EMBED=none)",
        "failed": False,
    }


# ---- the TUI ---------------------------------------------------------------------------
async def test_the_tui_says_when_the_model_failed(
    tmp_path: Path, model_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    env = _own(model_dir, tmp_path)
    path = tmp_path / "store"
    store: LmdbStore = open_store(path)
    for text in FACTS:
        store.put(AGENT, text)
    store.close()
    # Embedded by another process while the model was whole (this one never loads it
    # whole: a model loaded before the damage would go on working, as it should).
    done = run_graymatter("embed", "--dir", str(path), env=env)
    assert done.returncode == 0, done.stderr
    _damage(model_dir)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    store = open_store(path)
    try:
        store.put(AGENT, "A fact written after the model broke waits for its vector.")
        app = make_app(store, agent=AGENT)
        async with running(app, size=(120, 36)) as pilot:
            await pilot.press("R")
            await settle(pilot)
            await pilot.press(*"deploys production", "enter")
            table = app.screen.query_one(DataTable)
            await wait_until(pilot, lambda: table.row_count > 0, what="the keyword ranking")
            info = static_text(app, "#recall-info")
            assert "vectors not used (the embedder failed): " in info
            assert "not the pinned 8199be6f699a395f" in info
            await pilot.press("escape")
            await settle(pilot)
            await pilot.press("5")
            await wait_until(
                pilot,
                lambda: "NOT embedding" in static_text(app, "#status-body"),
                what="the background embedder's failure",
                timeout=30,
            )
            status = static_text(app, "#status-body")
            assert "1 fact waiting" in status
            assert "the last recall preview ranked without vectors" in status
    finally:
        store.close()
