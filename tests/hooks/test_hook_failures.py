"""A hook never breaks the session it serves: whatever it is sent, whatever state the
store is in, it exits 0 with nothing on stdout or stderr and logs one line under the data
dir; nothing is half-written. And it stays lean: the modules it loads."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.hooks import hook_log
from graymatter_tui.hooks.wire import DEADLINE_SECONDS
from tests.hooks.conftest import ROOT, Hook

AGENT = "my-project"


def event(name: str = "UserPromptSubmit", **fields: object) -> bytes:
    return json.dumps({"session_id": "s", "hook_event_name": name, **fields}).encode()


def assert_silent_failure(hook: Hook, done: subprocess.CompletedProcess[bytes], words: str) -> None:
    assert done.returncode == 0
    assert done.stdout == b"" and done.stderr == b""
    failures = [line for line in hook.log_lines() if hook_log.outcome_of(line) == "failed"]
    assert len(failures) == 1, hook.log_lines()
    assert words in failures[0]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"", "no event on stdin"),
        (b"   \n", "no event on stdin"),
        (b"{not json", "not JSON"),
        (b"\xff\xfe\x00garbage", "not JSON"),
        (b'["a", "list"]', "not a JSON object"),
        (event("Notification"), "not an event this hook handles: Notification"),
        (json.dumps({"session_id": "s"}).encode(), "not an event this hook handles"),
        (b'{"hook_event_name": 7}', "handles: 7"),
    ],
)
def test_malformed_or_unknown_input_is_logged_and_answered_with_nothing(
    hook: Hook, data: bytes, words: str
) -> None:
    assert_silent_failure(hook, hook.raw(data), words)


def test_an_event_of_over_eight_megabytes_is_not_read(hook: Hook) -> None:
    huge = event(prompt="x" * (9 * 1024 * 1024))
    assert_silent_failure(hook, hook.raw(huge), "over 8 MiB")


def test_a_prompt_that_is_not_text_injects_nothing(hook: Hook) -> None:
    done = hook.raw(event(prompt={"not": "text"}))
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_unknown_flags_in_the_hook_command_are_logged(hook: Hook) -> None:
    assert_silent_failure(hook, hook.raw(event(prompt="hi"), "--bogus"), "unknown argument")


def test_a_store_that_cannot_be_opened_is_logged(hook: Hook) -> None:
    hook.store.mkdir()
    (hook.store / "data.mdb").write_bytes(b"this is not an LMDB file" * 200)
    done = hook.raw(event("SessionStart", source="startup"))
    assert_silent_failure(hook, done, "SessionStart failed")
    assert (hook.store / "data.mdb").read_bytes() == b"this is not an LMDB file" * 200


def test_a_data_dir_that_is_a_file_fails_quietly(hook: Hook, tmp_path: Path) -> None:
    blocker = tmp_path / "blocker"
    blocker.write_text("a file, not a directory")
    done = hook.raw(event(prompt="remember: x"), "--dir", str(blocker), default_store=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")
    assert blocker.read_text() == "a file, not a directory"


def test_a_bug_is_logged_with_its_kind_not_shown(hook: Hook) -> None:
    # An agent name the store refuses (a control character) reaches the store's check.
    done = hook.raw(event(prompt="remember: x"), "--agent", "bad\x01name")
    assert_silent_failure(hook, done, "control character")


def test_the_log_stays_bounded(hook: Hook, tmp_path: Path) -> None:
    data_dir = tmp_path / "logged"
    for _ in range(2000):
        hook_log.write(data_dir, "UserPromptSubmit", "failed", "x" * 300)
    sizes = [p.stat().st_size for p in (data_dir / "hooks").glob("hook.log*")]
    assert len(sizes) == 2 and sum(sizes) <= 2 * hook_log.MAX_LOG_BYTES + 1024
    assert oct((data_dir / "hooks").stat().st_mode)[-3:] == "700"


HOLD_LOCK = textwrap.dedent(
    """
    import sys, time
    from graymatter_tui.backends.lmdb import LmdbStore
    store = LmdbStore.open(sys.argv[1])
    def hold(tx):
        print("holding", flush=True)
        time.sleep(float(sys.argv[2]))
    store.write(hold)
    """
)


def test_a_store_whose_write_lock_is_held_gives_up_in_time_and_writes_nothing(
    hook: Hook,
) -> None:
    with LmdbStore.open(hook.store) as store:
        store.put(AGENT, "already here")
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD_LOCK, str(hook.store), "60"],
        stdout=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"holding\n"
        started = time.monotonic()
        done = hook.raw(event(prompt="remember: blocked write"))
        waited = time.monotonic() - started
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    assert DEADLINE_SECONDS - 1 < waited < DEADLINE_SECONDS + 20
    assert_silent_failure(hook, done, "gave up after 8 s")
    with LmdbStore.open(hook.store, read_only=True) as store:
        assert [f.text for f in store.list_facts(AGENT)] == ["already here"]


def test_the_hook_loads_no_textual_mcp_click_http_or_numpy() -> None:
    probe = (
        "import sys, graymatter_tui.hooks.entry, graymatter_tui.hooks.events;"
        "print(sorted(m for m in ('textual', 'mcp', 'click', 'httpx', 'numpy', 'uvicorn',"
        " 'psycopg', 'platformdirs') if m in sys.modules))"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=True,
    )
    assert done.stdout.strip() == "[]"


def test_run_by_hand_on_a_terminal_it_says_what_it_is(hook: Hook) -> None:
    import pty

    pid, fd = pty.fork()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, "-m", "graymatter_tui.hooks"])
    out = b""
    try:
        while chunk := os.read(fd, 1024):
            out += chunk
    except OSError:
        pass
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert b"reads a hook event as JSON on stdin" in out


def test_doctor_and_status_show_the_hooks_failures(hook: Hook) -> None:
    from tests.hooks.conftest import run_cli

    with LmdbStore.open(hook.store) as store:
        store.put(AGENT, "a fact")
    hook.raw(b"{not json")
    doctor = run_cli(hook, "doctor", "--dir", str(hook.store), "--json")
    checks = {c["name"]: c for c in json.loads(doctor.stdout)["checks"]}
    assert checks["hooks"]["status"] == "warn"
    assert "1 hook failure in the last day" in checks["hooks"]["detail"]
    assert "not JSON" in checks["hooks"]["detail"]
    assert doctor.returncode == 0  # a warning, not a failed check
    status = run_cli(hook, "hooks", "status", "--dir", str(hook.store), "--json")
    log = json.loads(status.stdout)["log"]
    assert log["failures_last_day"] == 1 and "not JSON" in log["last_failure"]
