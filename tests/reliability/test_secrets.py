"""An API key never appears in the journal, exports, errors, `doctor` or `status` output,
even when the server echoes every header it received back in its error body."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support.cli_process import run_in_process, wants_subprocess

KEY = "sk-ant-api03-RECOGNISABLE-FAKE-KEY-0123456789abcdef"


class EchoHeaders(BaseHTTPRequestHandler):
    """Answers 401 with every request header in the body, the worst case for a leak."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(
            {"type": "error", "error": {"message": "invalid x-api-key", "saw": dict(self.headers)}}
        ).encode()
        self.send_response(401)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def echo_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoHeaders)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def run(path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "ANTHROPIC_API_KEY": KEY,
        "ANTHROPIC_BASE_URL": url,
        "GRAYMATTER_CONSOLIDATE_LLM": "anthropic",
        "GRAYMATTER_NOW": "2026-11-30T12:00:00Z",
    }
    if not wants_subprocess(args):  # the CLI's main() here, as a subprocess would run it
        return run_in_process((*args, "--dir", str(path)), b"", env)
    return subprocess.run(
        [sys.executable, "-m", "graymatter_tui", *args, "--dir", str(path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )


def test_the_key_never_leaks(tmp_path: Path, echo_server: str) -> None:
    path = tmp_path / "store"
    for i in range(30):
        assert (
            run(path, echo_server, "remember", "agent", f"fact {i} about SUP-{1000 + i}").returncode
            == 0
        )
    outputs = [
        run(path, echo_server, "consolidate", "agent"),
        run(path, echo_server, "consolidate", "agent", "--json"),
        run(path, echo_server, "journal", "--json"),
        run(path, echo_server, "journal"),
        run(path, echo_server, "export"),
        run(path, echo_server, "export", "--format", "json"),
        run(path, echo_server, "export", "--format", "markdown"),
        run(path, echo_server, "doctor", "--json"),
        run(path, echo_server, "doctor"),
        run(path, echo_server, "status", "--json"),
    ]
    consolidate = json.loads(outputs[1].stdout)
    assert consolidate["outcome"] == "failed"
    assert "401" in consolidate["reason"]  # the failure is reported, with the server's words
    for done in outputs:
        assert KEY not in done.stdout and KEY not in done.stderr
        assert "RECOGNISABLE" not in done.stdout + done.stderr
    raw = (path / "data.mdb").read_bytes()
    assert KEY.encode() not in raw and b"RECOGNISABLE" not in raw
