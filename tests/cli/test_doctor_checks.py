"""`doctor` says exactly what is wrong with the data dir and its files for this user, and a
summariser it was asked to check that does not answer is not "good".

Permission cases run doctor as `nobody` (root may use any mode, so only an unprivileged
user shows what the owner of the store would meet)."""

from __future__ import annotations

import json
import socket
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from tests.conftest import run_graymatter
from tests.support.over_socket import OllamaOverSocket
from tests.support.unprivileged import (
    cli_as_nobody,
    cli_batch_as_nobody,
    give_to_nobody,
    public_tmp,
)

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def seed(path: Path) -> Path:
    with LmdbStore.open(path) as store:
        store.put("agent", "a fact")
    return path


def report(done: subprocess.CompletedProcess[str]) -> dict[str, dict[str, Any]]:
    assert "Traceback" not in done.stderr, done.stderr
    return {c["name"]: c for c in json.loads(done.stdout)["checks"]}


@pytest.fixture
def nobodys_store() -> Iterator[Path]:
    with public_tmp() as base:
        path = seed(base / "store")
        give_to_nobody(path)
        yield path


# ---- the data dir and its files, as their owner sees them ------------------------------------


def _dir_mode_0(path: Path) -> None:
    path.chmod(0)


def _dir_mode_0300(path: Path) -> None:
    path.chmod(0o300)  # may write and enter, may not list


def _data_file_mode_0(path: Path) -> None:
    (path / "data.mdb").chmod(0)


def _lock_file_mode_0(path: Path) -> None:
    (path / "lock.mdb").chmod(0)


BROKEN: dict[str, tuple[Callable[[Path], None], str, list[str]]] = {
    "data dir mode 000": (_dir_mode_0, "data_dir", ["mode 000", "cannot list or enter it"]),
    "data dir mode 300": (_dir_mode_0300, "data_dir", ["mode 300", "cannot list it"]),
    "data.mdb mode 000": (_data_file_mode_0, "files", ["data.mdb (mode 000", "cannot read it"]),
    "lock.mdb mode 000": (_lock_file_mode_0, "files", ["lock.mdb (mode 000", "cannot read it"]),
}


@pytest.mark.parametrize("problem", list(BROKEN))
def test_doctor_fails_and_says_what_this_user_cannot_do(nobodys_store: Path, problem: str) -> None:
    make, name, needles = BROKEN[problem]
    make(nobodys_store)
    doctor = ("doctor", "--dir", str(nobodys_store))
    done, human = cli_batch_as_nobody([((*doctor, "--json"), None), (doctor, None)])
    assert done.returncode == 1, done.stdout
    checks = report(done)
    assert checks[name]["status"] == "fail", checks
    for needle in needles:
        assert needle in checks[name]["detail"], checks[name]
    assert "uid 65534" in checks[name]["detail"]
    assert human.returncode == 1
    assert f"✗ {name}" in human.stdout
    assert "Everything looks good" not in human.stdout


def test_doctor_warns_about_a_store_this_user_may_only_read(nobodys_store: Path) -> None:
    nobodys_store.chmod(0o500)
    done = cli_as_nobody("doctor", "--dir", str(nobodys_store), "--json")
    checks = report(done)
    assert checks["data_dir"]["status"] == "warn"
    assert "read-only for this user" in checks["data_dir"]["detail"]
    assert checks["store"]["status"] == "ok"


def test_a_mode_that_locks_out_the_owner_is_a_warning_even_for_root(tmp_path: Path) -> None:
    path = seed(tmp_path / "store")
    path.chmod(0)
    try:
        done = run_graymatter("doctor", "--dir", str(path), "--json")
        human = run_graymatter("doctor", "--dir", str(path))
    finally:
        path.chmod(0o700)
    checks = report(done)
    if checks["data_dir"]["status"] == "fail":
        pytest.skip("not running as root: the owner's own case is covered above")
    assert checks["data_dir"]["status"] == "warn", checks["data_dir"]
    assert "its owner may not read/write/enter it" in checks["data_dir"]["detail"]
    assert "Everything looks good" not in human.stdout
    assert "Not everything is good" in human.stdout


def test_others_reading_the_files_is_a_warning(tmp_path: Path) -> None:
    path = seed(tmp_path / "store")
    (path / "data.mdb").chmod(0o644)
    checks = report(run_graymatter("doctor", "--dir", str(path), "--json"))
    assert checks["files"]["status"] == "warn"
    assert "data.mdb (mode 644" in checks["files"]["detail"]
    assert "others can read it" in checks["files"]["detail"]


# ---- the summariser ------------------------------------------------------------------------


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def store_dir(tmp_path: Path) -> Path:
    return seed(tmp_path / "store")


def test_a_named_summariser_that_does_not_answer_fails(store_dir: Path) -> None:
    env = {"GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}"}
    done = run_graymatter("doctor", "--dir", str(store_dir), "--llm", "ollama", "--json", env=env)
    assert done.returncode == 1
    assert json.loads(done.stdout)["ok"] is False
    assert report(done)["summariser"]["status"] == "fail"
    human = run_graymatter("doctor", "--dir", str(store_dir), "--llm", "ollama", env=env)
    assert human.returncode == 1
    assert "1 check failed: summariser." in human.stdout
    assert "Everything looks good" not in human.stdout


def test_the_configured_summariser_that_does_not_answer_warns(store_dir: Path) -> None:
    env = {
        "GRAYMATTER_CONSOLIDATE_LLM": "ollama",
        "GRAYMATTER_OLLAMA_URL": f"http://127.0.0.1:{closed_port()}",
    }
    done = run_graymatter("doctor", "--dir", str(store_dir), "--json", env=env)
    assert done.returncode == 0
    summariser = report(done)["summariser"]
    assert summariser["status"] == "warn"
    assert "configured" in summariser["detail"] and "decay and prune" in summariser["detail"]
    human = run_graymatter("doctor", "--dir", str(store_dir), env=env)
    assert human.returncode == 0
    assert human.stdout.strip().splitlines()[-1].startswith("Not everything is good")
    assert "summariser" in human.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("how", ["named", "configured"])
def test_a_summariser_that_answers_is_good(store_dir: Path, how: str) -> None:
    with OllamaOverSocket() as server:
        env = {"GRAYMATTER_OLLAMA_URL": server.url, "GRAYMATTER_OLLAMA_TIMEOUT": "5"}
        args = ["doctor", "--dir", str(store_dir)]
        if how == "named":
            args += ["--llm", "ollama"]
        else:
            env["GRAYMATTER_CONSOLIDATE_LLM"] = "ollama"
        done = run_graymatter(*args, env=env)
    assert done.returncode == 0, done.stdout
    assert done.stdout.strip().splitlines()[-1] == "Everything looks good."


def test_the_review_queue_counter_must_match_the_pending_proposals(store_dir: Path) -> None:
    import lmdb

    with LmdbStore.open(store_dir) as store:
        store.hold_change("agent", "add", "", "Held for review.")
    done = run_graymatter("doctor", "--dir", str(store_dir), "--json")
    assert report(done)["review queue"] == {
        "name": "review queue",
        "status": "ok",
        "detail": "1 agent change waiting for a decision",
    }
    # A damaged counter (here: set by hand) would make the TUI announce the wrong work.
    env = lmdb.open(str(store_dir), max_dbs=32)
    with env.begin(write=True) as txn:
        txn.put(b"review_pending", b"3", db=env.open_db(b"meta", txn=txn))
    env.close()
    done = run_graymatter("doctor", "--dir", str(store_dir), "--json")
    assert done.returncode == 1
    assert report(done)["review queue"]["detail"] == (
        "the pending counter says 3 but 1 proposal is pending"
    )
