"""The local model served to the process that started it (`model_process`, ADR 0083).

The TUI runs its model here, so that neither the model's memory (~150 MB once loaded)
nor the interpreter-lock holds of tokenising and pooling are the UI's. This process
imports no store: it only turns texts into pieces and vectors.

The wire (`model_wire`): a request is one JSON line on stdin; the answer is one JSON
line on stdout, followed, for vectors, by their float32 bytes. stdin's end (the parent
ended or let it go) ends this process; so does nothing else: it has a session of its
own, so a ctrl-c in the parent's terminal does not reach it."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, BinaryIO

from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.embedding.local import LocalEmbedder
from graymatter_tui.embedding.model_files import ModelFiles
from graymatter_tui.embedding.model_wire import error_answer, header_line, vectors_answer
from graymatter_tui.embedding.native_heap import give_back

MAX_REQUEST_BYTES = 64 * 1024 * 1024  # a batch of 32 windows is ~50 KB
# Below the UI's priority: on a busy machine the backlog waits for the person, not the
# other way round (a query waits its turn the same way; it is one short run).
NICENESS = 10


def files_from_spec(spec: dict[str, Any]) -> ModelFiles:
    """The ModelFiles `spec_of` wrote."""
    return ModelFiles(
        model=Path(spec["model"]),
        tokenizer=Path(spec["tokenizer"]),
        model_sha256=spec["model_sha256"],
        tokenizer_sha256=spec["tokenizer_sha256"],
        label=spec["label"],
        max_tokens=int(spec["max_tokens"]),
        bundled=bool(spec["bundled"]),
    )


def spec_of(files: ModelFiles, threads: int) -> str:
    """`files` and the model's thread count, as this process's one argument."""
    return json.dumps(
        {
            "model": str(files.model),
            "tokenizer": str(files.tokenizer),
            "model_sha256": files.model_sha256,
            "tokenizer_sha256": files.tokenizer_sha256,
            "label": files.label,
            "max_tokens": files.max_tokens,
            "bundled": files.bundled,
            "threads": threads,
        }
    )


def answer(request: object, embedder: LocalEmbedder) -> bytes:
    """The answer to one request, as the bytes to write."""
    if not isinstance(request, dict) or not isinstance(request.get("id"), int):
        return error_answer(None, "a request the model process cannot read")
    ident = request["id"]
    op = request.get("op")
    try:
        if op == "pieces" and isinstance(request.get("text"), str):
            return header_line({"id": ident, "pieces": embedder.pieces(request["text"])})
        texts = request.get("texts")
        if isinstance(texts, list) and all(isinstance(t, str) for t in texts):
            if op == "pieces_of":
                return header_line({"id": ident, "pieces": embedder.pieces_of(texts)})
            if op == "embed":
                return vectors_answer(ident, embedder.embed(texts))
    except GraymatterError as exc:  # the model's own errors, one line each
        return error_answer(ident, str(exc))
    except Exception as exc:  # never end the process over one request
        return error_answer(ident, f"{type(exc).__name__}: {exc}")
    return error_answer(ident, f"a request the model process cannot read (op {op!r})")


def serve(requests: BinaryIO, answers: BinaryIO, embedder: LocalEmbedder) -> None:
    """Answer each request line until `requests` ends."""
    while True:
        line = requests.readline(MAX_REQUEST_BYTES + 1)
        if not line:
            return
        if len(line) > MAX_REQUEST_BYTES or not line.endswith(b"\n"):
            answers.write(error_answer(None, "a request longer than the model process reads"))
            answers.flush()
            return  # the rest of the line cannot be told from the next request
        try:
            request = json.loads(line)
        except ValueError:
            request = None
        answers.write(answer(request, embedder))
        answers.flush()
        if isinstance(request, dict) and request.get("op") == "embed":
            give_back()  # a run's freed buffers; nothing here waits on this process's lock


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # The answers get stdout's descriptor to themselves: anything a library's C code
    # prints goes to stderr, which the parent keeps the end of for its messages.
    os.nice(NICENESS)
    answers = os.fdopen(os.dup(1), "wb")
    os.dup2(2, 1)
    try:
        spec = json.loads(args[0])
        files = files_from_spec(spec)
        threads = int(spec["threads"])
    except (IndexError, ValueError, KeyError, TypeError) as exc:
        print(f"graymatter-tui model process: a bad argument: {exc}", file=sys.stderr)
        return 2
    serve(sys.stdin.buffer, answers, LocalEmbedder(files, threads=threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
