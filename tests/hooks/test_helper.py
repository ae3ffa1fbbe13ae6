"""The hook helper: after a first event, the next ones are answered by a process that has
the store's code loaded, with the same answers; a helper that is stale, gone or idle
never costs an event."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import textwrap
import time

from graymatter_tui.backends.lmdb import LmdbStore
from tests.hooks.conftest import Hook, stop_helpers
from tests.support import unprivileged

AGENT = "my-project"


def wait_for(predicate: object, seconds: float = 60) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if predicate():  # type: ignore[operator]
            return True
        time.sleep(0.1)
    return False


def helper_pid(hook: Hook) -> int | None:
    try:
        return int((hook.store / "hooks" / "helper.pid").read_text())
    except (OSError, ValueError):
        return None


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    return True


def seeded(hook: Hook) -> None:
    with LmdbStore.open(hook.store) as store:
        store.put(AGENT, "Invoices are rendered by the ledgerd service")


def modules_loaded_by_the_hook(hook: Hook, prompt: str, session: str) -> tuple[str, set[str]]:
    """Run one prompt's hook with -X importtime: its answer, and the modules it loaded."""
    import json

    payload = {"session_id": session, "hook_event_name": "UserPromptSubmit", "prompt": prompt}
    done = subprocess.run(
        [
            sys.executable,
            "-X",
            "importtime",
            "-m",
            "graymatter_tui.hooks",
            "--dir",
            str(hook.store),
        ],
        input=json.dumps(payload).encode(),
        capture_output=True,
        env=hook.env(),
        cwd=hook.project,
        timeout=60,
        check=True,
    )
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.decode().splitlines()}
    return done.stdout.decode(), loaded


def test_after_the_first_event_a_helper_answers_with_the_same_answer(hook: Hook) -> None:
    seeded(hook)
    first, loaded_first = modules_loaded_by_the_hook(hook, "ledgerd invoices?", "s1")
    assert "graymatter_tui.hooks.runner" in loaded_first  # done here: no helper yet
    assert wait_for(lambda: (hook.store / "hooks" / "helper.sock").exists())
    second, loaded = modules_loaded_by_the_hook(hook, "ledgerd invoices?", "s2")
    assert second == first and "Invoices are rendered by the ledgerd service" in second
    assert "graymatter_tui.hooks.runner" not in loaded  # the helper did the work
    assert not {"msgspec", "lmdb", "json", "re", "graymatter_tui.storage"} & loaded
    sock = hook.store / "hooks" / "helper.sock"
    assert stat.S_IMODE(sock.stat().st_mode) == 0o600
    assert stat.S_IMODE((hook.store / "hooks").stat().st_mode) == 0o700


def test_the_helper_runs_each_event_in_the_clients_environment(hook: Hook) -> None:
    seeded(hook)
    hook.prompt("remember: first")
    assert wait_for(lambda: helper_pid(hook) is not None)
    other = hook.project.parent / "Other Project"
    other.mkdir()
    hook.prompt("remember: second", env={"CLAUDE_PROJECT_DIR": str(other)})
    with LmdbStore.open(hook.store, read_only=True) as store:
        assert [f.text for f in store.list_facts("other-project")] == ["second"]
        assert "first" in [f.text for f in store.list_facts(AGENT)]


def test_a_helper_killed_without_a_word_costs_no_event(hook: Hook) -> None:
    seeded(hook)
    hook.prompt("ledgerd?")
    assert wait_for(lambda: helper_pid(hook) is not None)
    pid = helper_pid(hook)
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert wait_for(lambda: not alive(pid))
    assert (hook.store / "hooks" / "helper.sock").exists()  # left behind
    result = hook.prompt("ledgerd invoices?", session_id="after-kill")
    assert "ledgerd service" in result.context
    assert wait_for(lambda: helper_pid(hook) not in (None, pid))


STALE = textwrap.dedent(
    """
    import marshal, os, socket, sys
    path = sys.argv[1]
    server = socket.socket(socket.AF_UNIX)
    server.bind(path)
    server.listen(1)
    print("ready", flush=True)
    conn, _ = server.accept()
    while conn.recv(65536):
        pass
    conn.sendall(marshal.dumps({"stale": True}))
    conn.close()
    """
)


def test_a_stale_helper_is_passed_over_and_the_event_done_all_the_same(hook: Hook) -> None:
    seeded(hook)
    (hook.store / "hooks").mkdir(mode=0o700)
    server = subprocess.Popen(
        [sys.executable, "-c", STALE, str(hook.store / "hooks" / "helper.sock")],
        stdout=subprocess.PIPE,
    )
    try:
        assert server.stdout is not None and server.stdout.readline() == b"ready\n"
        result = hook.prompt("ledgerd invoices?")
        assert server.wait(timeout=30) == 0  # it was asked, and answered "stale"
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    assert "ledgerd service" in result.context


def test_an_idle_helper_leaves(hook: Hook) -> None:
    seeded(hook)
    hook.prompt("ledgerd?", env={"GRAYMATTER_HOOK_HELPER_IDLE": "2"})
    assert wait_for(lambda: helper_pid(hook) is not None)
    pid = helper_pid(hook)
    assert pid is not None
    assert wait_for(lambda: not alive(pid), 60)
    assert not (hook.store / "hooks" / "helper.sock").exists()


def test_the_helper_can_be_turned_off(hook: Hook) -> None:
    seeded(hook)
    off = {"GRAYMATTER_HOOK_HELPER": "off"}
    hook.prompt("ledgerd?", env=off)
    hook.prompt("ledgerd invoices?", env=off, session_id="again")
    time.sleep(2)
    assert helper_pid(hook) is None and not (hook.store / "hooks" / "helper.sock").exists()


def test_another_user_is_not_answered(hook: Hook) -> None:
    """The peer's uid is checked: even with the socket opened to everyone, a connection
    from another user is closed unanswered, and the helper stays."""
    with unprivileged.public_tmp() as public:
        hook.store = public / "store"
        seeded(hook)
        hook.prompt("ledgerd?")
        assert wait_for(lambda: helper_pid(hook) is not None)
        sock = hook.store / "hooks" / "helper.sock"
        for directory in (hook.store, hook.store / "hooks"):
            directory.chmod(0o755)
        sock.chmod(0o666)
        done = unprivileged.python_as_nobody(
            """
            import marshal, socket
            s = socket.socket(socket.AF_UNIX)
            s.connect(sys.argv[1])
            try:
                s.sendall(marshal.dumps({"stamp": "", "argv": [], "raw": b""}))
                s.shutdown(socket.SHUT_WR)
                print(repr(s.recv(100)))
            except ConnectionError:
                print("closed")
            """,
            str(sock),
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() in ("b''", "closed")  # closed without a word
        pid = helper_pid(hook)
        assert pid is not None and alive(pid)
        stop_helpers(public)
