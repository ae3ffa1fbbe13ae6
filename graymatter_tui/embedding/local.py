"""The local embedder (GRAYMATTER_EMBED=local, the default; ADR 0058): all-MiniLM-L6-v2
as int8 ONNX, run in this process on onnxruntime with the HF `tokenizers` tokenizer. No
server, nothing downloaded: the weights come from an installed package, the tokenizer is
vendored, both are checked against their sha256 before the first use in a process.

A vector is the mean of the model's last hidden states over the attention mask, L2
normalised (the graph does not pool). A fact's pieces are windows of the model's own
length (ADR 0058): at most `max_tokens - 2` word-pieces plus [CLS]/[SEP], cut at word
boundaries, each overlapping the one before by 32; a fact scores its best window.

onnxruntime, tokenizers and numpy are imported on the first embedding, not when the
embedder is built: `list`, `show` and the TUI's first paint never load them. One loaded
model serves every embedder of the process (the TUI's background embedder and its
recall preview share it); its runs take turns, one batch of at most TOKEN_BUDGET padded
word-pieces at a time, so a query waits for one short run, not a whole batch."""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from graymatter_tui.embedding.base import DimensionChanged, EmbedError
from graymatter_tui.embedding.int8_rows import rows_first_pieces
from graymatter_tui.embedding.model_files import ModelFiles, stored_name, verify
from graymatter_tui.embedding.model_files import bundled as bundled_files
from graymatter_tui.embedding.model_files import own as own_files
from graymatter_tui.embedding.onnx_import import onnxruntime
from graymatter_tui.embedding.settings import DEFAULT_THREADS, DEFAULT_TIMEOUT, EmbedSettings

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

    from graymatter_tui.embedding.base import Matrix

log = logging.getLogger(__name__)

OVERLAP = 32  # word-pieces each window shares with the one before it
# Windows per fact: 64 windows of 254 word-pieces cover 16,256 word-pieces, more than a
# 64 KiB fact of English prose holds (about 14,000). When a text needs more, the overlap
# shrinks (to none); what lies past 64 full windows is found by keyword only.
MAX_WINDOWS = 64
BACK_OFF = 24  # word-pieces a cut may move back to reach whitespace
# Padded word-pieces per onnxruntime run: 32 short texts, or 4 full windows. Larger runs
# were no faster on one thread and held far more memory (32 full windows: +1.3 GB).
TOKEN_BUDGET = 1024
MAX_ROWS_PER_RUN = 32
PROBE_TEXT = "graymatter checks the embedding model"


class Runtime:
    """A loaded model: the tokenizers and the onnxruntime session. Build with `load`."""

    def __init__(self, files: ModelFiles, threads: int) -> None:
        ort = onnxruntime()
        from tokenizers import Tokenizer

        self.files = files
        self.lock = threading.Lock()
        try:
            tokenizer = Tokenizer.from_file(str(files.tokenizer))
        except Exception as exc:  # tokenizers raises its own Exception subclasses
            raise EmbedError(
                f"{files.where}: cannot read {files.tokenizer}: {_first(exc)}"
            ) from None
        # The TRAP of the vendored tokenizer.json: truncation at 128 and padding fixed at
        # 128. Texts are cut at the model's window instead, and each run is padded to its
        # own longest text (`_run`), never to a fixed length. One tokenizer, read once (a
        # read holds the interpreter's lock ~30 ms and keeps ~8 MB): it sees texts whole
        # (`windows`) and truncates only while `embed` encodes, the two taking turns.
        tokenizer.no_truncation()
        tokenizer.no_padding()
        pad = tokenizer.token_to_id("[PAD]")
        self.pad = 0 if pad is None else pad
        self.tokenizer = tokenizer
        self.tokenizing = threading.Lock()
        self.unknown = tokenizer.token_to_id("[UNK]")
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # No arena and no memory pattern: a run's buffers go back when it ends, so the
        # process stays at the model's ~220 MB instead of keeping its largest batch's.
        options.enable_cpu_mem_arena = False
        options.enable_mem_pattern = False
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        try:
            with _graph(files) as graph:
                self.session = ort.InferenceSession(
                    graph, sess_options=options, providers=["CPUExecutionProvider"]
                )
        except Exception as exc:  # onnxruntime raises its own, for a file it cannot run
            raise EmbedError(f"{files.where}: cannot load {files.model}: {_first(exc)}") from None
        self.inputs = {i.name for i in self.session.get_inputs()}
        missing = {"input_ids", "attention_mask"} - self.inputs
        if missing:
            raise EmbedError(
                f"{files.where}: {files.model} takes no {', '.join(sorted(missing))}: not a "
                "sentence-embedding model of the BERT kind"
            )
        outputs = [o.name for o in self.session.get_outputs()]
        self.output = "sentence_embedding" if "sentence_embedding" in outputs else outputs[0]

    # ---- pieces ------------------------------------------------------------------------
    def windows(self, text: str) -> list[str]:
        """`text` as windows of at most max_tokens - 2 word-pieces, cut at word
        boundaries, overlapping by OVERLAP (less when MAX_WINDOWS would not cover it);
        [] when the model knows none of its word-pieces (only emoji, symbols, blanks)."""
        with self.tokenizing:
            encoding = self.tokenizer.encode(text, add_special_tokens=False)
        ids = encoding.ids
        if not ids or all(i == self.unknown for i in ids):
            return []
        size = self.files.max_tokens - 2
        count = len(ids)
        if count <= size:
            return [text]
        offsets = encoding.offsets
        words = [-1 if w is None else w for w in encoding.word_ids]
        # A cut falls before a word-piece that starts a word: after whitespace when one is
        # near ("08:15" and "INC-4012" stay whole), else where the model's own word starts
        # (a long URL has no whitespace), never inside a word.
        spaced = [offsets[i][0] == 0 or text[offsets[i][0] - 1].isspace() for i in range(count)]

        def cut(position: int, floor: int) -> int:
            for back in range(position, max(floor, position - BACK_OFF), -1):
                if spaced[back]:
                    return back
            while position > floor and words[position] == words[position - 1]:
                position -= 1
            return position

        overlap = OVERLAP
        if 1 + math.ceil((count - size) / (size - overlap)) > MAX_WINDOWS:
            overlap = max(0, size - math.ceil((count - size) / (MAX_WINDOWS - 1)))
        found: list[str] = []
        start = 0
        while start < count and len(found) < MAX_WINDOWS:
            end = min(count, start + size)
            if end < count:
                end = cut(end, start + 1)
            found.append(text[offsets[start][0] : offsets[end - 1][1]])
            if end >= count:
                break
            start = cut(max(end - overlap, start + 1), start + 1)
        return found

    # ---- vectors -----------------------------------------------------------------------
    def embed(self, texts: list[str], deadline: float) -> Matrix:
        """Unit rows, in order. Runs over texts sorted by length (less padding), each of
        at most TOKEN_BUDGET padded word-pieces; the lock is taken per run."""
        import numpy as np

        encodings = self._encode_cut(texts) if texts else []
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lambda i: lengths[i])
        out: Matrix | None = None
        position = 0
        while position < len(order):
            run = [order[position]]
            longest = lengths[order[position]]
            while position + len(run) < len(order) and len(run) < MAX_ROWS_PER_RUN:
                candidate = lengths[order[position + len(run)]]
                if max(longest, candidate) * (len(run) + 1) > TOKEN_BUDGET:
                    break
                longest = max(longest, candidate)
                run.append(order[position + len(run)])
            pooled = self._run([encodings[i].ids for i in run], longest, deadline)
            if out is None:
                out = np.zeros((len(texts), pooled.shape[1]), dtype=np.float32)
            out[run] = pooled
            position += len(run)
        if out is None:
            return np.zeros((0, 0), dtype=np.float32)
        return out

    def _encode_cut(self, texts: list[str]) -> list[Any]:
        """`texts` as the model reads them: special tokens added, cut at its window."""
        with self.tokenizing:
            self.tokenizer.enable_truncation(max_length=self.files.max_tokens)
            try:
                encodings: list[Any] = self.tokenizer.encode_batch(texts)
            finally:
                self.tokenizer.no_truncation()
        return encodings

    def _run(self, rows: list[list[int]], width: int, deadline: float) -> Matrix:
        import numpy as np

        ids = np.full((len(rows), width), self.pad, dtype=np.int64)
        mask = np.zeros((len(rows), width), dtype=np.int64)
        for index, row in enumerate(rows):
            ids[index, : len(row)] = row
            mask[index, : len(row)] = 1
        feeds: dict[str, npt.NDArray[np.int64]] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self.inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        wait = deadline - time.monotonic()
        if wait <= 0 or not self.lock.acquire(timeout=wait):
            raise EmbedError(f"{self.files.where} was busy for longer than the time allowed")
        try:
            result: Any = self.session.run([self.output], feeds)[0]
        except Exception as exc:  # onnxruntime's own errors: one line, nothing stored
            raise EmbedError(f"{self.files.where} failed: {_first(exc)}") from None
        finally:
            self.lock.release()
        hidden = np.asarray(result, dtype=np.float32)
        if hidden.ndim == 3:  # last_hidden_state: mean over the real word-pieces
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        elif hidden.ndim == 2:  # already pooled
            pooled = hidden
        else:
            raise EmbedError(f"{self.files.where} answered an output of shape {hidden.shape}")
        if not np.isfinite(pooled).all():
            raise EmbedError(f"{self.files.where} made a vector with NaN or infinite components")
        norms = np.linalg.norm(pooled.astype(np.float64), axis=1, keepdims=True)
        if not (norms > 0).all():
            raise EmbedError(f"{self.files.where} made an all-zero vector")
        unit: Matrix = (pooled / norms).astype(np.float32)
        return unit


def _first(exc: BaseException) -> str:
    lines = str(exc).strip().splitlines()
    return " ".join(lines[0].split())[:300] if lines else type(exc).__name__


# One loaded model per (files, threads) in a process, and the last failure to load one
# (kept while the files are unchanged, so a broken install is not hashed per query).
_LOADED: dict[tuple[str, str, int, int], Runtime] = {}
_FAILED: dict[tuple[str, str, int, int], tuple[tuple[int, ...], EmbedError]] = {}
_LOADING = threading.Lock()


def _stat_key(files: ModelFiles) -> tuple[int, ...]:
    found: list[int] = []
    for path in (files.model, files.tokenizer):
        try:
            stat = path.stat()
            found += [stat.st_size, stat.st_ino, stat.st_mtime_ns, stat.st_ctime_ns]
        except OSError:
            found += [-1, -1, -1, -1]
    return tuple(found)


@contextmanager
def _graph(files: ModelFiles) -> Iterator[bytes | str]:
    """What onnxruntime loads: the model with its int8 tables looked up before they are
    made float32 (`int8_rows`: 35 MB less resident for the bundled model, the same
    vectors), or the file's path when there is nothing to rewrite.

    A rewritten model is handed over as an in-memory file where the system has them:
    onnxruntime keeps a model given as bytes for the session's whole life, and one read
    from a path only while it loads."""
    try:
        rewritten = rows_first_pieces(files.model.read_bytes())
    except OSError:
        rewritten = None  # onnxruntime opens the path and says why it cannot
    if rewritten is None:
        yield str(files.model)
        return
    held = _in_memory_file(rewritten)
    if held is None:
        yield b"".join(rewritten)
        return
    del rewritten  # the file holds it now: not twice in memory while onnxruntime loads
    descriptor, name = held
    try:
        yield name
    finally:
        os.close(descriptor)


def _in_memory_file(pieces: list[bytes | memoryview]) -> tuple[int, str] | None:
    """(descriptor, path) of an in-memory file holding `pieces` one after another; None
    where the system has none (not Linux), refuses one, or has no /proc to name it by."""
    try:
        descriptor = os.memfd_create("graymatter-model", os.MFD_CLOEXEC)
    except (AttributeError, OSError):
        return None
    name = f"/proc/self/fd/{descriptor}"
    try:
        for piece in pieces:
            view = memoryview(piece)
            while view:
                view = view[os.write(descriptor, view) :]
        if os.path.exists(name):
            return descriptor, name
    except OSError:
        pass
    os.close(descriptor)
    return None


def load(files: ModelFiles, threads: int) -> Runtime:
    """The loaded model of `files`: verified (sha256) and loaded on the first call in a
    process, shared after. EmbedError, one line, when it cannot be."""
    key = (str(files.model), str(files.tokenizer), files.max_tokens, threads)
    with _LOADING:
        if key in _LOADED:
            return _LOADED[key]
        seen = _stat_key(files)
        failed = _FAILED.get(key)
        if failed is not None and failed[0] == seen:
            raise failed[1]
        started = time.monotonic()
        try:
            verify(files)
            runtime = Runtime(files, threads)
        except EmbedError as exc:
            _FAILED[key] = (seen, exc)
            raise
        except ImportError as exc:
            error = EmbedError(f"the local embedder needs onnxruntime and tokenizers: {exc}")
            _FAILED[key] = (seen, error)
            raise error from None
        _FAILED.pop(key, None)
        _LOADED[key] = runtime
        log.info("loaded %s in %.2f s", files.where, time.monotonic() - started)
        return runtime


class LocalEmbedder:
    name = "local"

    def __init__(
        self,
        files: ModelFiles | None = None,
        *,
        threads: int = DEFAULT_THREADS,
        timeout: float = DEFAULT_TIMEOUT,
        dimension: int | None = None,
        problem: EmbedError | None = None,
    ) -> None:
        """`problem`: the files could not even be found (the model's package is missing,
        the user's directory is wrong); every use then raises it, so recall says why."""
        self.files = files
        self.threads = threads
        self.timeout = timeout
        self.dimension = dimension
        self.problem = problem
        self._name: str | None = None

    @property
    def where(self) -> str:
        return self.files.where if self.files is not None else "the local model"

    @property
    def model(self) -> str:
        """What the store records as the maker of these vectors (`stored_name`); the
        EmbedError of files that cannot be found or read (never a placeholder name: the
        worker would switch the store to it)."""
        if self._name is None:
            if self.problem is not None:
                raise self.problem
            assert self.files is not None
            self._name = stored_name(self.files)
        return self._name

    def runtime(self) -> Runtime:
        if self.problem is not None:
            raise self.problem
        assert self.files is not None
        return load(self.files, self.threads)

    def pieces(self, text: str) -> list[str]:
        return self.runtime().windows(text)

    def pieces_of(self, texts: list[str]) -> list[list[str]]:
        runtime = self.runtime()
        return [runtime.windows(text) for text in texts]

    def embed(self, texts: list[str], *, timeout: float | None = None) -> Matrix:
        import numpy as np

        runtime = self.runtime()
        if not texts:
            return np.zeros((0, self.dimension or 0), dtype=np.float32)
        deadline = time.monotonic() + (timeout or self.timeout)
        return of_dimension(runtime.embed(texts, deadline), self.dimension, self.where)


def of_dimension(vectors: Matrix, dimension: int | None, where: str) -> Matrix:
    """`vectors`, when their dimension is the store's (or it has none yet);
    DimensionChanged otherwise."""
    if dimension is not None and vectors.shape[1] != dimension:
        raise DimensionChanged(
            f"{where} made vectors of dimension {vectors.shape[1]}, but this store's "
            f"vectors of the model have {dimension}; nothing stored",
            vectors.shape[1],
        )
    return vectors


def from_settings(settings: EmbedSettings, *, dimension: int | None = None) -> LocalEmbedder:
    """The local embedder `settings` describe. Finding its files reads no model; a
    problem with them is kept and raised on first use (recall then says why)."""
    try:
        files = (
            own_files(settings.model_path, settings.model_sha256, settings.model)
            if settings.model_path
            else bundled_files()
        )
    except EmbedError as exc:
        return LocalEmbedder(None, threads=settings.threads, timeout=settings.timeout, problem=exc)
    return LocalEmbedder(
        files, threads=settings.threads, timeout=settings.timeout, dimension=dimension
    )
