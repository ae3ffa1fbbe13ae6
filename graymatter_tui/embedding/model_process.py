"""The local model in a process of its own (ADR 0083): `ChildModelEmbedder` is the local
embedder whose pieces and vectors come from `model_child`, so the process that uses it
(the TUI) never imports onnxruntime or holds the model. The vectors are the same, bit for
bit: the child runs the same `LocalEmbedder`.

One child per model (files and thread count) per process, shared by each of its
embedders (the TUI's background embedder and its recall preview take turns, as they do
over one loaded model), started on first use and again on the next use after it ended.
It ends when this process does: its stdin closes. A child that ends, answers something
malformed or does not answer within ANSWER_SECONDS is stopped, and that use fails with
an EmbedError naming what happened (the embedder backs off and tries again; recall
ranks without vectors), never with a hang or a wrong vector."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections import OrderedDict, deque
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

from graymatter_tui.embedding.base import EmbedError
from graymatter_tui.embedding.model_wire import (
    Reader,
    WireError,
    header_line,
    payload_size,
    vectors_of,
)

if TYPE_CHECKING:  # the TUI imports this module at start-up: `local` loads when used
    from graymatter_tui.embedding.base import Matrix
    from graymatter_tui.embedding.local import LocalEmbedder
    from graymatter_tui.embedding.model_files import ModelFiles

# The longest one answer may take, the model's load in a new child included (1-2 s here;
# a batch of full windows ~1 s), before the child is taken for hung and stopped.
ANSWER_SECONDS = 120.0
MAX_CHILDREN = 2  # models kept running at once by one process (one, but for a switch)
STDERR_LINES = 8  # of a child's last words kept, to say why it ended
PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
# The child runs this very package, installed or not, and never a module of the working
# directory (-P: a directory holding a `numpy.py` must not change what it imports).
BOOTSTRAP = (
    "# graymatter-tui: the local embedding model (ADR 0083)\n"
    "import sys\n"
    "if sys.argv[1] not in sys.path: sys.path.insert(0, sys.argv[1])\n"
    "from graymatter_tui.embedding.model_child import main\n"
    "sys.exit(main(sys.argv[2:]))\n"
)


class ModelChild:
    """One model process, started when first asked and again after it ended."""

    def __init__(
        self, command: list[str], where: str, *, answer_seconds: float = ANSWER_SECONDS
    ) -> None:
        self.command = command
        self.where = where
        self.answer_seconds = answer_seconds
        self._turn = threading.Lock()  # one request and its answer at a time
        self._process: subprocess.Popen[bytes] | None = None
        self._reader: Reader | None = None
        self._said: deque[str] = deque(maxlen=STDERR_LINES)
        self._listener: threading.Thread | None = None
        self._asked = 0
        self._closing = False  # asked to let the child go while a use held the turn

    @property
    def pid(self) -> int | None:
        process = self._process
        return None if process is None or process.poll() is not None else process.pid

    def ask(self, request: dict[str, Any], wait: float) -> tuple[dict[str, Any], bytearray]:
        """The answer's header and bytes; EmbedError when the child said it failed, or
        when waiting for a turn took longer than `wait` s (another use's answer)."""
        if not self._turn.acquire(timeout=max(0.0, wait)):
            raise EmbedError(f"{self.where} was busy for longer than the time allowed")
        try:
            return self._ask(request)
        finally:
            if self._closing:
                self._let_go()
            self._turn.release()

    def close(self) -> None:
        """Let the child go (its stdin ends; it ends after any answer it is making). Never
        waits: while a use waits for an answer, that use lets it go when it has it."""
        self._closing = True
        if self._turn.acquire(blocking=False):
            try:
                self._let_go()
            finally:
                self._turn.release()

    def _let_go(self) -> None:
        process, self._process, self._reader = self._process, None, None
        self._closing = False
        if process is not None and process.stdin is not None:
            process.stdin.close()

    def _ask(self, request: dict[str, Any]) -> tuple[dict[str, Any], bytearray]:
        process, reader = self._running()
        self._asked += 1
        asked = self._asked
        try:
            _write_all(process, header_line({**request, "id": asked}))
            deadline = time.monotonic() + self.answer_seconds
            header = reader.header(deadline)
            payload = reader.exactly(payload_size(header), deadline)
            if header.get("id") != asked:
                raise WireError(f"an answer to request {header.get('id')!r}, not {asked}")
        except (OSError, WireError) as exc:
            raise EmbedError(self._lost(process, exc)) from None
        if "error" in header:
            raise EmbedError(" ".join(str(header["error"]).split())[:500])
        return header, payload

    def _running(self) -> tuple[subprocess.Popen[bytes], Reader]:
        process, reader = self._process, self._reader
        if process is not None and reader is not None and process.poll() is None:
            return process, reader
        try:
            process = subprocess.Popen(
                self.command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,  # a ctrl-c in our terminal is not for it
            )
        except OSError as exc:
            raise EmbedError(f"{self.where}: cannot start its process: {exc}") from None
        assert process.stdout is not None and process.stderr is not None
        self._said.clear()
        self._listener = threading.Thread(
            target=_listen, args=(process.stderr, self._said), name="graymatter-model-stderr"
        )
        self._listener.daemon = True
        self._listener.start()
        self._process, self._reader = process, Reader(process.stdout.fileno())
        return process, self._reader

    def _lost(self, process: subprocess.Popen[bytes], exc: BaseException) -> str:
        """Stop a child that cannot be trusted with another request; why, in words."""
        if isinstance(exc, WireError) and str(exc) == "no answer in time":
            what = f"did not answer within {self.answer_seconds:g} s and was stopped"
        elif process.poll() is not None or isinstance(exc, OSError) or str(exc) == "it ended":
            what = "ended"
        else:
            what = f"answered something unreadable ({exc}) and was stopped"
        if process.poll() is None:
            process.kill()
        try:
            code = process.wait(timeout=5.0)
        except subprocess.TimeoutExpired:
            code = None
        if self._listener is not None:
            self._listener.join(timeout=1.0)  # its last words
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
        self._process, self._reader = None, None
        if what == "ended" and code is not None:
            what = f"ended (exit {code})" if code >= 0 else f"ended (signal {-code})"
        said = next((line for line in reversed(self._said) if line.strip()), "")
        return f"{self.where}: its process {what}" + (f": {said.strip()[:300]}" if said else "")


def model_command(files: ModelFiles, threads: int) -> list[str]:
    """The command that runs the model of `files` in a process of its own."""
    from graymatter_tui.embedding.model_child import spec_of

    return [sys.executable, "-P", "-c", BOOTSTRAP, PACKAGE_ROOT, spec_of(files, threads)]


def _write_all(process: subprocess.Popen[bytes], data: bytes) -> None:
    assert process.stdin is not None
    view = memoryview(data)
    while view:
        view = view[os.write(process.stdin.fileno(), view) :]


def _listen(stream: IO[bytes], said: deque[str]) -> None:
    """Keep a child's last lines on stderr (never printed: the TUI owns the terminal)."""
    try:
        for line in stream:
            said.append(line.decode("utf-8", "replace").rstrip())
    except (OSError, ValueError):  # the pipe was closed under it: the child was let go
        pass


_CHILDREN: OrderedDict[tuple[ModelFiles, int], ModelChild] = OrderedDict()
_CHILDREN_LOCK = threading.Lock()


def child_for(files: ModelFiles, threads: int, where: str) -> ModelChild:
    """This process's child for the model of `files` (made, not started, when new)."""
    key = (files, threads)
    with _CHILDREN_LOCK:
        child = _CHILDREN.get(key)
        if child is None:
            child = _CHILDREN[key] = ModelChild(model_command(files, threads), where)
            while len(_CHILDREN) > MAX_CHILDREN:
                _CHILDREN.popitem(last=False)[1].close()  # never waits (`close`)
        _CHILDREN.move_to_end(key)
        return child


def running_pids() -> list[int]:
    """The process ids of this process's model processes that run now."""
    with _CHILDREN_LOCK:
        children = list(_CHILDREN.values())
    return [pid for child in children if (pid := child.pid) is not None]


NOTE_SECONDS = 5.0  # how often the resident sizes are read again
_note: list[tuple[float, tuple[int, ...], str]] = []  # (when, pids, the note): the last


def resident_note() -> str:
    """The model processes running now and their resident size ("" when none runs).
    Sizes are read at most every NOTE_SECONDS and rounded to 10 MB (the TUI's Status tab
    draws its overview again for each change of the line); a process started or ended
    shows at once."""
    pids = tuple(running_pids())
    now = time.monotonic()
    if _note and _note[0][1] == pids and now - _note[0][0] < NOTE_SECONDS:
        return _note[0][2]
    said = []
    for pid in pids:
        try:
            status = Path(f"/proc/{pid}/status").read_text()
            kb = next(int(line.split()[1]) for line in status.splitlines() if line[:6] == "VmRSS:")
        except (OSError, StopIteration, ValueError, IndexError):
            said.append(f"the model runs in process {pid}")
            continue
        said.append(f"the model runs in process {pid} ({round(kb / 10240) * 10} MB)")
    _note[:] = [(now, pids, "; ".join(said))]
    return _note[0][2]


class ChildModelEmbedder:
    """The Embedder protocol over a model process; otherwise what `local` says."""

    name = "local"

    def __init__(self, local: LocalEmbedder, *, child: ModelChild | None = None) -> None:
        """`child`: the process to ask, rather than this process's one for the model."""
        self.local = local
        self.dimension = local.dimension
        self._child = child

    @property
    def model(self) -> str:
        return self.local.model

    @property
    def where(self) -> str:
        return self.local.where

    @property
    def child(self) -> ModelChild:
        if self.local.problem is not None:
            raise self.local.problem  # the files cannot be found: no process would help
        if self._child is not None:
            return self._child
        assert self.local.files is not None
        return child_for(self.local.files, self.local.threads, self.where)

    def pieces(self, text: str) -> list[str]:
        header, _ = self.child.ask({"op": "pieces", "text": text}, self.local.timeout)
        pieces = header.get("pieces")
        if not isinstance(pieces, list) or not all(isinstance(p, str) for p in pieces):
            raise EmbedError(f"{self.where}: its process answered pieces that are not texts")
        return pieces

    def pieces_of(self, texts: list[str]) -> list[list[str]]:
        if not texts:
            return []
        header, _ = self.child.ask({"op": "pieces_of", "texts": texts}, self.local.timeout)
        found = header.get("pieces")
        if (
            not isinstance(found, list)
            or len(found) != len(texts)
            or not all(isinstance(p, list) and all(isinstance(q, str) for q in p) for p in found)
        ):
            raise EmbedError(f"{self.where}: its process answered pieces that are not texts")
        return found

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        import numpy as np

        from graymatter_tui.embedding.local import of_dimension

        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        request = {"op": "embed", "texts": texts}
        header, payload = self.child.ask(request, timeout or self.local.timeout)
        try:
            vectors = vectors_of(header, payload, len(texts))
        except WireError as exc:
            raise EmbedError(f"{self.where}: its process answered {exc}") from None
        return of_dimension(vectors, self.dimension, self.where)
