"""The backlog through the real CLI in subprocesses, against the scripted server over
loopback: facts written, status shows them waiting, `embed` drains, status shows none,
doctor reports full coverage, recall finds a paraphrase (these on both backends); and a
server that fails leaves everything as it was."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable, Iterator

import pytest

from tests.support.embedding_fake import EmbeddingOverSocket, Fault

RunCli = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture
def server() -> Iterator[EmbeddingOverSocket]:
    with EmbeddingOverSocket() as running:
        yield running


def _env(url: str, **extra: str) -> dict[str, str]:
    return {"GRAYMATTER_EMBED": "ollama", "GRAYMATTER_EMBED_URL": url, **extra}


def _status(run_cli: RunCli) -> dict[str, object]:
    done = run_cli("status", "--json")
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_backlog_is_shown_drained_and_covered(
    any_cli: RunCli, server: EmbeddingOverSocket
) -> None:
    run_cli = any_cli  # on both backends
    env = _env(server.url)
    assert run_cli("remember", "ops", "Payments go through Polar").returncode == 0
    status = _status(run_cli)
    assert (status["embed_model"], status["embed_dim"], status["embed_backlog"]) == (None, None, 0)
    first = run_cli("embed", "--json", env=env)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout) == {
        "agent": None,
        "model": "nomic-embed-text",
        "dimension": 768,
        "embedded": 1,
        "skipped": 0,
        "requeued": 1,
        "backlog": 0,
        "unreadable": 0,
        "held_for_review": 0,
    }
    for text in ("We deploy on fridays", "The outage hit billing", "Rotate the secrets"):
        assert run_cli("remember", "ops", text).returncode == 0  # no embedder configured
    status = _status(run_cli)
    assert (status["embed_model"], status["embed_dim"], status["embed_backlog"]) == (
        "nomic-embed-text",
        768,
        3,
    )
    text = run_cli("status").stdout
    assert "embedding  nomic-embed-text · 768 dims · 3 facts waiting" in text
    drained = run_cli("embed", "--agent", "ops", env=env)  # DESIGN.md: embed [--agent A]
    assert drained.returncode == 0, drained.stderr
    assert drained.stdout.strip() == (
        "embedded 3 facts of ops with nomic-embed-text (dimension 768); 0 waiting"
    )
    assert _status(run_cli)["embed_backlog"] == 0
    doctor = run_cli("doctor", "--json", env=env)
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["embeddings"]["status"] == "ok"
    assert checks["embeddings"]["detail"] == (
        "4 of 4 live facts have a vector of nomic-embed-text (100%); 0 waiting"
    )


def test_a_failing_server_is_one_line_and_loses_nothing(
    run_cli: RunCli, server: EmbeddingOverSocket
) -> None:
    env = _env(server.url)
    run_cli("remember", "ops", "Payments go through Polar")
    assert run_cli("embed", env=env).returncode == 0
    run_cli("remember", "ops", "We deploy on fridays")
    server.script(Fault.status(500))
    failed = run_cli("embed", env=env)
    assert failed.returncode == 1
    assert failed.stderr.strip().count("\n") == 0 and "Traceback" not in failed.stderr
    assert "answered HTTP 500" in failed.stderr and server.url in failed.stderr
    assert _status(run_cli)["embed_backlog"] == 1
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        dead = f"http://127.0.0.1:{probe.getsockname()[1]}"
    refused = run_cli("embed", env=_env(dead))
    assert refused.returncode == 1 and "cannot connect to Ollama at" in refused.stderr
    assert _status(run_cli)["embed_backlog"] == 1


@pytest.mark.parametrize(
    ("env", "said"),
    [
        ({"GRAYMATTER_EMBED": "none"}, "embeddings are off (GRAYMATTER_EMBED=none): set"),
        ({"GRAYMATTER_EMBED": "bert"}, "unknown embedder 'bert'"),
    ],
)
def test_embed_without_a_usable_setting_is_a_clear_error(
    run_cli: RunCli, env: dict[str, str], said: str
) -> None:
    done = run_cli("embed", env=env)
    assert done.returncode == 1 and said in done.stderr
    assert "Traceback" not in done.stderr


def test_recall_finds_a_paraphrase_through_the_cli_once_embedded(
    any_cli: RunCli, server: EmbeddingOverSocket
) -> None:
    run_cli = any_cli  # on both backends
    env = _env(server.url)
    for text in ("Payments go through Polar", "Standup moved to the afternoon"):
        assert run_cli("remember", "ops", text).returncode == 0
    question = "which billing vendor do we use"
    # No embedder: keyword and recency alone, and no fact shares a word with the question.
    assert json.loads(run_cli("recall", "ops", question, "--json").stdout) == []
    assert run_cli("embed", "--agent", "ops", env=env).returncode == 0
    found = run_cli("recall", "ops", question, "--json", "--explain", env=env)
    assert found.returncode == 0, found.stderr
    hits = json.loads(found.stdout)
    assert [h["text"] for h in hits] == ["Payments go through Polar"]
    assert hits[0]["vector_rank"] == 1 and hits[0]["keyword_rank"] is None
    # The embedding server down: recall still answers, on keyword and recency.
    down = run_cli("recall", "ops", "Polar payments", "--json", env=_env("http://127.0.0.1:9"))
    assert down.returncode == 0 and [h["text"] for h in json.loads(down.stdout)] == [
        "Payments go through Polar"
    ]
