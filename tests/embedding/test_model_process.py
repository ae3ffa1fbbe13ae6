"""The local model in a process of its own (ADR 0083), REAL: real child processes over
real pipes, the bundled model. What it gives is what the model in this process gives,
bit for bit; a child that ends, hangs or says something malformed fails one use with an
EmbedError, never a hang or a wrong vector, and the next use starts another; the child
has a session of its own and ends with its parent; and the TUI that uses it never
loads onnxruntime."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from graymatter_tui.embedding import local
from graymatter_tui.embedding.base import DimensionChanged, EmbedError
from graymatter_tui.embedding.model_files import BUNDLED_MODEL_SHA256, VENDORED, bundled
from graymatter_tui.embedding.model_process import (
    ChildModelEmbedder,
    ModelChild,
    model_command,
    resident_note,
)
from graymatter_tui.embedding.model_wire import Reader
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings

ROOT = Path(__file__).resolve().parents[2]
TEXTS = [
    "Deploys stop at 17:00 on Fridays.",
    "数据库备份在凌晨五点半进行",
    "🙂🙂🙂",  # nothing the model reads: no piece
    "a line\nand a tab\tand a separator \u2028 in one fact",
    " ".join(f"word{i}" for i in range(700)),  # several windows
]


def _local(**settings: object) -> local.LocalEmbedder:
    return local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL, **settings))


def _hostile(script: str, *, answer_seconds: float = 5.0) -> ChildModelEmbedder:
    """The bundled model's embedder whose process is `script`, not the model's."""
    command = [sys.executable, "-c", textwrap.dedent(script)]
    return ChildModelEmbedder(
        _local(), child=ModelChild(command, "the test's model", answer_seconds=answer_seconds)
    )


def _gone(pid: int, within: float) -> bool:
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:  # our own child: reap it, or it stays a zombie that kill(0) still finds
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                return True
        except ChildProcessError:
            pass
        time.sleep(0.05)
    return False


@pytest.fixture(scope="module")
def in_process() -> local.LocalEmbedder:
    return _local()


@pytest.fixture
def own_child() -> ChildModelEmbedder:
    """The bundled model in a process of this test's own."""
    command = model_command(bundled(), 1)
    embedder = ChildModelEmbedder(_local(), child=ModelChild(command, "the local model"))
    yield embedder
    embedder.child.close()


@pytest.mark.usefixtures("own_model_cache")
def test_the_model_process_gives_the_same_pieces_and_vectors_bit_for_bit(
    in_process: local.LocalEmbedder,
) -> None:
    child = ChildModelEmbedder(_local())
    pieces = [child.pieces(text) for text in TEXTS]
    assert pieces == [in_process.pieces(text) for text in TEXTS]
    assert pieces[2] == [] and len(pieces[4]) > 1  # both kinds of fact were in it
    assert child.pieces_of(TEXTS) == pieces and child.pieces_of([]) == []
    flat = [piece for each in pieces for piece in each]
    vectors = child.embed(flat)
    assert vectors.dtype == np.float32 and vectors.flags.writeable
    assert np.array_equal(vectors, in_process.embed(flat))
    query = child.embed(["when do deploys stop"], timeout=2.0)
    assert np.array_equal(query, in_process.embed(["when do deploys stop"]))
    assert child.embed([]).shape[0] == 0
    # Every embedder of the process asks the one child of the model.
    assert ChildModelEmbedder(_local()).child is child.child


@pytest.mark.usefixtures("own_model_cache")
def test_two_threads_at_once_each_get_their_own_vectors(
    own_child: ChildModelEmbedder, in_process: local.LocalEmbedder
) -> None:
    got: dict[int, np.ndarray] = {}
    texts = {n: [f"fact {n} about deploys number {i}" for i in range(1 + n)] for n in range(6)}

    def ask(n: int) -> None:
        got[n] = own_child.embed(texts[n])

    threads = [threading.Thread(target=ask, args=(n,)) for n in texts]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for n, asked in texts.items():
        assert np.array_equal(got[n], in_process.embed(asked)), n


@pytest.mark.usefixtures("own_model_cache")
def test_vectors_of_another_dimension_than_the_stores_are_refused(
    own_child: ChildModelEmbedder,
) -> None:
    own_child.dimension = 10
    with pytest.raises(DimensionChanged, match="dimension 384, but this store's") as caught:
        own_child.embed(["a fact"])
    assert caught.value.found == 384


@pytest.mark.usefixtures("own_model_cache")
def test_a_child_that_ended_between_uses_is_started_again_for_the_next(
    own_child: ChildModelEmbedder, in_process: local.LocalEmbedder
) -> None:
    first = own_child.embed(["a fact"])
    pid = own_child.child.pid
    assert pid is not None
    os.kill(pid, signal.SIGKILL)
    assert _gone(pid, 10)
    again = own_child.embed(["a fact"])
    assert own_child.child.pid not in (None, pid)
    assert np.array_equal(again, first)
    assert np.array_equal(again, in_process.embed(["a fact"]))


def test_a_child_killed_while_it_answers_fails_that_use_and_the_next_starts_another() -> None:
    script = """
        import os, signal, sys
        sys.stdin.readline()
        os.kill(os.getpid(), signal.SIGKILL)
        """
    embedder = _hostile(script)
    with pytest.raises(EmbedError, match=r"^the test's model: its process ended \(signal 9\)$"):
        embedder.embed(["a fact"])
    assert embedder.child.pid is None
    with pytest.raises(EmbedError, match=r"ended \(signal 9\)$"):
        embedder.embed(["a fact"])  # a new process (the same script) was asked


@pytest.mark.usefixtures("own_model_cache")
def test_the_child_has_a_session_of_its_own_and_ends_with_its_parent(tmp_path: Path) -> None:
    """A ctrl-c in the TUI's terminal goes to its process group: not the child's. And a
    parent that ends, even without a word (SIGKILL), lets its child go."""
    code = textwrap.dedent(
        """
        import os, sys, time
        from graymatter_tui.embedding import local
        from graymatter_tui.embedding.model_process import ChildModelEmbedder
        from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings
        embedder = ChildModelEmbedder(
            local.from_settings(EmbedSettings(embedder=EmbedderName.LOCAL))
        )
        embedder.embed(["a fact"])
        print(embedder.child.pid, os.getsid(embedder.child.pid), os.getsid(0), flush=True)
        time.sleep(60)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    assert parent.stdout is not None
    line = parent.stdout.readline()
    child, child_session, parent_session = (int(n) for n in line.split())
    assert child_session == child != parent_session
    parent.kill()
    parent.wait(10)
    assert _gone(child, 15), "the model's process outlived its parent"


@pytest.mark.parametrize(
    ("script", "said"),
    [
        pytest.param(
            "import sys; sys.stdin.readline(); print('not json', flush=True); sys.stdin.read()",
            r"answered something unreadable \(an answer that is not JSON: b'not json'\) and was",
            id="not-json",
        ),
        pytest.param(
            """
            import json, sys
            sys.stdin.readline()
            print(json.dumps({"id": 99, "rows": 1, "dim": 2}), flush=True)
            sys.stdout.buffer.write(b"\\0" * 8); sys.stdout.flush(); sys.stdin.read()
            """,
            r"answered something unreadable \(an answer to request 99, not 1\)",
            id="another-id",
        ),
        pytest.param(
            "import sys; sys.stdin.readline(); print('[1, 2]', flush=True); sys.stdin.read()",
            r"answered something unreadable \(an answer that is not an object",
            id="not-an-object",
        ),
        pytest.param(
            """
            import json, sys
            sys.stdin.readline()
            print(json.dumps({"id": 1, "rows": 1, "dim": -3}), flush=True); sys.stdin.read()
            """,
            r"answered something unreadable \(an answer of 1 rows of -3\)",
            id="negative-dimension",
        ),
        pytest.param(
            """
            import json, sys
            sys.stdin.readline()
            print(json.dumps({"id": 1, "rows": 1, "dim": 4}), flush=True)
            sys.stdout.buffer.write(b"\\0\\0"); sys.stdout.flush()
            """,
            r"ended \(exit 0\)$",
            id="vectors-cut-short",
        ),
        pytest.param(
            "import sys; print('the model cannot start here', file=sys.stderr); sys.exit(3)",
            r"ended \(exit 3\): the model cannot start here$",
            id="ends-at-once",
        ),
    ],
)
def test_a_child_that_says_something_malformed_fails_the_use_and_is_stopped(
    script: str, said: str
) -> None:
    embedder = _hostile(script)
    with pytest.raises(EmbedError, match=f"^the test's model: its process {said}"):
        embedder.embed(["a fact"])
    assert embedder.child.pid is None  # stopped: the next use starts another


@pytest.mark.parametrize(
    ("header", "payload", "said"),
    [
        ({"id": 1, "rows": 2, "dim": 2}, b"\0" * 16, r"2 rows of 2 for 1 text\b"),
        (
            {"id": 1, "rows": 1, "dim": 2},
            np.array([np.nan, 1], "<f4").tobytes(),
            "vectors with NaN",
        ),
    ],
    ids=["rows-for-another-count", "not-a-number"],
)
def test_vectors_that_cannot_be_the_answer_are_refused(
    header: dict[str, int], payload: bytes, said: str
) -> None:
    answer = json.dumps(header).encode() + b"\n" + payload
    script = f"""
        import sys
        sys.stdin.readline()
        sys.stdout.buffer.write({answer!r})
        sys.stdout.flush(); sys.stdin.read()
        """
    with pytest.raises(EmbedError, match=f"^the local model .*: its process answered {said}"):
        _hostile(script).embed(["a fact"])


def test_a_child_that_does_not_answer_is_stopped_after_its_time(tmp_path: Path) -> None:
    said = tmp_path / "pid"
    script = f"import os, sys, time; open({str(said)!r}, 'w').write(str(os.getpid()))\n"
    embedder = _hostile(script + "sys.stdin.readline(); time.sleep(60)", answer_seconds=0.5)
    started = time.monotonic()
    with pytest.raises(EmbedError, match=r"did not answer within 0.5 s and was stopped$"):
        embedder.embed(["a fact"])
    assert time.monotonic() - started < 10
    assert embedder.child.pid is None
    assert _gone(int(said.read_text()), 5)


@pytest.mark.parametrize(
    ("op", "answered"),
    [
        ("pieces", ["fine", 3]),
        ("pieces_of", [["fine"], [3]]),
        ("pieces_of", [["one fact's"], ["and another's"]]),  # two lists for one text
        ("pieces_of", "fine"),
    ],
)
def test_pieces_that_are_not_texts_are_refused(op: str, answered: object) -> None:
    script = f"""
        import json, sys
        sys.stdin.readline()
        print(json.dumps({{"id": 1, "pieces": {answered!r}}}), flush=True); sys.stdin.read()
        """
    embedder = _hostile(script)
    with pytest.raises(EmbedError, match="answered pieces that are not texts"):
        embedder.pieces("a fact") if op == "pieces" else embedder.pieces_of(["a fact"])


@pytest.mark.usefixtures("own_model_cache")
def test_the_child_answers_a_request_it_cannot_read_and_goes_on() -> None:
    command = model_command(bundled(), 1)
    process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=ROOT)
    assert process.stdin is not None and process.stdout is not None
    reader = Reader(process.stdout.fileno())
    try:
        for line, said in [
            (b"not json\n", {"id": None, "error": "a request the model process cannot read"}),
            (b'{"op": "embed", "texts": ["x"]}\n', {"id": None}),
            (b'{"id": 1, "op": "embed", "texts": "x"}\n', {"id": 1}),
            (b'{"id": 2, "op": "drop tables"}\n', {"id": 2}),
        ]:
            process.stdin.write(line)
            process.stdin.flush()
            header = reader.header(time.monotonic() + 60)
            assert header.items() >= said.items() and "cannot read" in header["error"]
        process.stdin.write(b'{"id": 3, "op": "pieces", "text": "still here"}\n')
        process.stdin.flush()
        assert reader.header(time.monotonic() + 60) == {"id": 3, "pieces": ["still here"]}
    finally:
        process.stdin.close()
        assert process.wait(30) == 0  # its stdin's end ends it


def test_a_damaged_model_says_in_the_child_what_it_says_in_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    directory = tmp_path / "team-model"
    directory.mkdir()
    (directory / "model.onnx").write_bytes(bundled().model.read_bytes()[:100_000])
    (directory / "tokenizer.json").write_bytes((VENDORED / "tokenizer.json").read_bytes())
    settings = {"model_path": str(directory), "model_sha256": BUNDLED_MODEL_SHA256}
    with pytest.raises(EmbedError) as here:
        _local(**settings).embed(["a fact"])
    child = ChildModelEmbedder(_local(**settings))
    with pytest.raises(EmbedError) as there:
        child.embed(["a fact"])
    assert str(there.value) == str(here.value)
    assert "sha256" in str(here.value)
    assert child.child.pid is not None  # a model that fails to load is an answer, not an end
    child.child.close()


def test_the_tui_embeds_without_loading_the_model_itself(tmp_path: Path) -> None:
    """In a process of its own (nothing else of the suite loaded): the TUI over a store
    of three facts gives them vectors, and its recall preview's query has one too, while
    onnxruntime and the tokenizer stay out of the TUI's process. The Status tab's
    embedder line names the model's process."""
    code = textwrap.dedent(
        """
        import asyncio, sys
        from graymatter_tui.backends.lmdb import LmdbStore
        from tests.tui.helpers import make_app, wait_until
        store = LmdbStore.open(sys.argv[1])
        for text in ["Deploys stop at 17:00 on Fridays.", "Backups run at 05:30.",
                     "The coffee machine needs descaling."]:
            store.put("ops", text)
        async def main():
            app = make_app(store, agent="ops")
            async with app.run_test() as pilot:
                app.embedder.nudge()
                await wait_until(pilot, lambda: app.embedder.stored == 3, timeout=90,
                                 what="the three facts embedded")
                found = app.query_vectors.nearest("ops", "when do deploys stop", 1)
                print(found[0][1] > 0.3, app.query_vectors.latest.used)
                pid = app.query_vectors.embedder.child.pid
                print(f"the model runs in process {pid} (" in app._embedding_now()[0])
                await pilot.press("q")
            app.finish_background()
        asyncio.run(main())
        print("onnxruntime" in sys.modules, "tokenizers" in sys.modules)
        """
    )
    env = {**os.environ, "GRAYMATTER_EMBED": "local", "XDG_CACHE_HOME": str(tmp_path / "c")}
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "store")],
        capture_output=True, text=True, timeout=180, check=False, env=env, cwd=ROOT,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "False", "False"], done.stdout


@pytest.mark.usefixtures("own_model_cache")
def test_the_child_imports_nothing_from_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, in_process: local.LocalEmbedder
) -> None:
    (tmp_path / "numpy.py").write_text("raise ImportError('the numpy of the working directory')")
    (tmp_path / "graymatter_tui").mkdir()
    (tmp_path / "graymatter_tui" / "__init__.py").write_text("raise ImportError('not ours')")
    monkeypatch.chdir(tmp_path)
    child = ChildModelEmbedder(_local(), child=ModelChild(model_command(bundled(), 1), "it"))
    try:
        assert np.array_equal(child.embed(["a fact"]), in_process.embed(["a fact"]))
    finally:
        child.child.close()


@pytest.mark.usefixtures("own_model_cache")
def test_the_status_note_names_the_running_model_and_its_size() -> None:
    child = ChildModelEmbedder(_local())
    child.embed(["a fact"])
    pid = child.child.pid
    assert pid is not None
    found = re.search(rf"the model runs in process {pid} \((\d+) MB\)", resident_note())
    assert found is not None, resident_note()
    status = Path(f"/proc/{pid}/status").read_text()
    rss = int(re.search(r"VmRSS:\s+(\d+)", status).group(1)) / 1024  # type: ignore[union-attr]
    assert abs(int(found.group(1)) - rss) <= 15 and int(found.group(1)) % 10 == 0
    child.child.close()
    assert _gone(pid, 10)
    assert f"process {pid}" not in resident_note()  # an ended process goes at once


def test_letting_a_child_go_while_it_answers_waits_for_nothing(tmp_path: Path) -> None:
    """Only another model would let one go (at most two run); the use waiting for its
    answer gets it, and the child ends after."""
    said = tmp_path / "pid"
    answer = json.dumps({"id": 1, "rows": 1, "dim": 2}).encode() + b"\n"
    answer += np.array([0.6, 0.8], "<f4").tobytes()
    script = f"""
        import os, sys, time
        open({str(said)!r}, "w").write(str(os.getpid()))
        sys.stdin.readline(); time.sleep(0.5)
        sys.stdout.buffer.write({answer!r}); sys.stdout.flush()
        sys.stdin.read()  # until its stdin ends
        """
    embedder = _hostile(script)
    got: list[np.ndarray] = []
    asking = threading.Thread(target=lambda: got.append(embedder.embed(["a fact"])))
    asking.start()
    while not said.exists() or not said.read_text():
        time.sleep(0.01)
    started = time.monotonic()
    embedder.child.close()
    assert time.monotonic() - started < 0.1
    asking.join(10)
    assert got and np.allclose(got[0], [[0.6, 0.8]])
    assert _gone(int(said.read_text()), 5)
    assert embedder.child.pid is None
