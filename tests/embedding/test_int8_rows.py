"""The model's int8 tables are looked up before they become float32 (int8_rows), with
the same numbers out, and any graph it cannot rewrite is left exactly as it was."""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import numpy as np
import onnxruntime as ort
import pytest

from graymatter_tui.embedding import int8_rows, local
from graymatter_tui.embedding import protobuf_wire as wire
from graymatter_tui.embedding.model_files import bundled

pytestmark = pytest.mark.usefixtures("clean_graymatter_env", "own_model_cache")
FLOAT, INT8, INT64 = 1, 3, 7
ROWS, WIDTH = 6, 4


def _tensor(name: str, array: np.ndarray, kind: int, external: bool = False) -> bytes:
    out = b"".join(wire.field(1, d) for d in array.shape) + wire.field(2, kind)
    out += wire.field(8, name) + wire.field(9, array.tobytes())
    if external:
        out += wire.field(14, 1)
    return out


def _value(name: str, kind: int, shape: tuple[int | str, ...]) -> bytes:
    dims = b"".join(
        wire.field(1, wire.field(1, d) if isinstance(d, int) else wire.field(2, d)) for d in shape
    )
    return wire.field(1, name) + wire.field(
        2, wire.field(1, wire.field(1, kind) + wire.field(2, dims))
    )


def _node(op: str, inputs: list[str], output: str, **ints: int) -> bytes:
    out = b"".join(wire.field(1, i) for i in inputs) + wire.field(2, output)
    out += wire.field(3, f"node_{output}") + wire.field(4, op)
    for name, value in ints.items():
        out += wire.field(5, wire.field(1, name) + wire.field(3, value) + wire.field(20, 2))
    return out


def _model(
    scale_shape: tuple[int, ...] = (ROWS, 1),
    table_read_twice: bool = False,
    external: bool = False,
) -> tuple[bytes, np.ndarray, np.ndarray]:
    """out = Gather(Mul(Cast(q), scale), ids) [+ a second reader of the float table]."""
    rng = np.random.default_rng(7)
    q = rng.integers(-128, 128, size=(ROWS, WIDTH), dtype=np.int8)
    scale = rng.random(scale_shape, dtype=np.float32) / 50
    nodes = [
        _node("Cast", ["q"], "q_f", to=FLOAT),
        _node("Mul", ["q_f", "scale"], "table"),
        _node("Gather", ["table", "ids"], "out", axis=0),
    ]
    outputs = [_value("out", FLOAT, ("N", WIDTH))]
    if table_read_twice:
        nodes.append(_node("Identity", ["table"], "whole"))
        outputs.append(_value("whole", FLOAT, (ROWS, WIDTH)))
    graph = b"".join(wire.field(1, n) for n in nodes) + wire.field(2, "lookup")
    graph += wire.field(5, _tensor("q", q, INT8, external)) + wire.field(
        5, _tensor("scale", scale, FLOAT)
    )
    graph += wire.field(11, _value("ids", INT64, ("N",)))
    graph += b"".join(wire.field(12, o) for o in outputs)
    graph += wire.field(13, _value("table", FLOAT, (ROWS, WIDTH)))
    opset = wire.field(1, "") + wire.field(2, 17)
    model = wire.field(1, 8) + wire.field(2, "test") + wire.field(7, graph) + wire.field(8, opset)
    return model, q, scale


def _ops(model: bytes) -> list[tuple[str, list[str]]]:
    graph = next(f for f in wire.fields(model) if f.number == 7)
    nodes = [int8_rows._node(f) for f in wire.fields(graph.data) if f.number == 1]
    return [(n.op, n.inputs) for n in nodes]


def _run(model: bytes, ids: list[int]) -> np.ndarray:
    session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
    out: np.ndarray = session.run(["out"], {"ids": np.array(ids, dtype=np.int64)})[0]
    return out


def test_a_lookup_of_a_dequantised_table_reads_int8_rows_with_the_same_numbers() -> None:
    model, q, scale = _model()
    rewritten = int8_rows.gather_rows_first(model)
    assert rewritten is not None
    ops = _ops(rewritten)
    assert ("Gather", ["q", "ids"]) in ops and ("Gather", ["scale", "ids"]) in ops
    assert not any(op == "Cast" and inputs == ["q"] for op, inputs in ops)
    ids = [5, 0, 2, 2, 3]
    expected = q.astype(np.float32)[ids] * scale[ids]
    assert np.array_equal(_run(model, ids), expected)
    assert np.array_equal(_run(rewritten, ids), expected)
    # The float table is made no more, and its stated shape goes with it.
    graph = next(f for f in wire.fields(rewritten) if f.number == 7)
    shapes = [int8_rows._name(f) for f in wire.fields(graph.data) if f.number == 13]
    assert "table" not in shapes and all("table" not in inputs for _, inputs in ops)


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(_model(scale_shape=(1, WIDTH))[0], id="a scale per column"),
        pytest.param(_model(table_read_twice=True)[0], id="the float table read elsewhere"),
        pytest.param(_model(external=True)[0], id="weights in an external file"),
        pytest.param(b"", id="empty"),
        pytest.param(b"\xff" * 40, id="a number that never ends"),
        pytest.param(_model()[0][:-30], id="cut short"),
        pytest.param(b"\x0f\x01", id="a wire type ONNX never writes"),
        pytest.param(b"not a model at all, just text", id="text"),
    ],
)
def test_a_graph_it_cannot_rewrite_is_left_to_load_as_it_is(model: bytes) -> None:
    assert int8_rows.gather_rows_first(model) is None


def test_the_bundled_model_gives_bit_identical_vectors_with_its_tables_kept_int8() -> None:
    files = bundled()
    rewritten = int8_rows.gather_rows_first(files.model.read_bytes())
    assert rewritten is not None
    gathers = [inputs[0] for op, inputs in _ops(rewritten) if op == "Gather"]
    assert "inner.embeddings.word_embeddings.weight_q" in gathers
    runtime = local.load(files, 1)
    plain = ort.InferenceSession(str(files.model), providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(3)
    ids = rng.integers(1000, 30000, size=(3, 40), dtype=np.int64)
    feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
    feeds["token_type_ids"] = np.zeros_like(ids)
    ours = runtime.session.run([runtime.output], feeds)[0]
    theirs = plain.run([runtime.output], feeds)[0]
    assert np.array_equal(ours, theirs)


def test_the_wire_reader_keeps_every_field_it_does_not_know_byte_for_byte() -> None:
    message = wire.field(3, 300) + wire.field(9, b"\x00\x01") + b"\x15\x01\x02\x03\x04"
    found = list(wire.fields(message))
    assert [(f.number, f.wire) for f in found] == [(3, 0), (9, 2), (2, 5)]
    assert found[0].value == 300 and bytes(found[1].data) == b"\x00\x01"
    assert b"".join(bytes(f.raw) for f in found) == message
    packed = wire.field(1, wire.varint(384) + wire.varint(1))
    assert wire.packed_or_repeated(list(wire.fields(packed))) == [384, 1]


def test_the_rewritten_model_reaches_onnxruntime_as_a_file_closed_after_loading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = bundled()
    expected = int8_rows.gather_rows_first(files.model.read_bytes())
    with local._graph(files) as graph:
        assert isinstance(graph, str) and graph.startswith("/proc/self/fd/")
        assert Path(graph).read_bytes() == expected
    assert not Path(graph).exists()  # the descriptor is closed
    # Where the system has no in-memory files, the bytes themselves.
    monkeypatch.delattr(os, "memfd_create")
    with local._graph(files) as graph:
        assert graph == expected
    # A model with nothing to rewrite is loaded from its own path.
    plain = tmp_path / "model.onnx"
    plain.write_bytes(_model(scale_shape=(1, WIDTH))[0])
    with local._graph(dataclasses.replace(files, model=plain)) as graph:
        assert graph == str(plain)
