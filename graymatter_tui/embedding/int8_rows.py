"""Gather int8 rows before they become float32 (ADR 0078).

The bundled model keeps each weight as int8 with a float32 scale, turned back into
float32 by a `Cast` and a `Mul` in the graph. onnxruntime folds those at load, so every
table is held as float32: the 30,522-row word table alone is 47 MB of the model's 160 MB
resident. A table that is only looked up (`Gather`) needs just the rows a text uses. The
graph is rewritten so the lookup comes first:

    Gather(Mul(Cast(q), scale), ids)  ->  Mul(Cast(Gather(q, ids)), Gather(scale, ids))

Each value is the same float32 product of the same two numbers, so the vectors are
bit-for-bit the ones the graph gave before. Only a per-row scale (shape [rows, 1]) is
rewritten; any other graph is loaded as it is."""

from __future__ import annotations

from dataclasses import dataclass, field

from graymatter_tui.embedding import protobuf_wire as wire

# Field numbers of onnx.proto's messages.
MODEL_GRAPH = 7
GRAPH_NODE, GRAPH_INITIALIZER, GRAPH_OUTPUT, GRAPH_VALUE_INFO = 1, 5, 12, 13
NODE_INPUT, NODE_OUTPUT, NODE_NAME, NODE_OP, NODE_ATTRIBUTE, NODE_DOMAIN = 1, 2, 3, 4, 5, 7
ATTRIBUTE_NAME, ATTRIBUTE_INT = 1, 3
TENSOR_DIMS, TENSOR_TYPE, TENSOR_NAME, TENSOR_LOCATION = 1, 2, 8, 14
VALUE_NAME = 1
INT8, FLOAT = 3, 1
EXTERNAL = 1


@dataclass
class Node:
    op: str
    inputs: list[str]
    outputs: list[str]
    domain: str = ""
    ints: dict[str, int] = field(default_factory=dict)  # integer attributes, by name
    raw: bytes = b""  # the node as read, written back when left alone

    def encode(self) -> bytes:
        if self.raw:
            return self.raw
        out = b"".join(wire.field(NODE_INPUT, name) for name in self.inputs)
        out += b"".join(wire.field(NODE_OUTPUT, name) for name in self.outputs)
        out += wire.field(NODE_NAME, self.outputs[0]) + wire.field(NODE_OP, self.op)
        for name, value in self.ints.items():
            attribute = wire.field(ATTRIBUTE_NAME, name) + wire.field(ATTRIBUTE_INT, value)
            out += wire.field(NODE_ATTRIBUTE, attribute + wire.field(20, 2))  # type INT
        return out


@dataclass(frozen=True)
class Tensor:
    dims: tuple[int, ...]
    kind: int
    external: bool


def gather_rows_first(model: bytes) -> bytes | None:
    """The model with every lookup of a dequantised table made on the int8 rows; None
    when there is none to rewrite or the bytes are not an ONNX model this can read (the
    caller loads the file as it is, and onnxruntime says what is wrong with it)."""
    pieces = rows_first_pieces(model)
    return None if pieces is None else b"".join(pieces)


def rows_first_pieces(model: bytes) -> list[bytes | memoryview] | None:
    """`gather_rows_first` as the pieces that make it, in order, most of them views of
    `model`: written out one by one, the weights are never copied into one new buffer
    (a join of the whole model holds the interpreter's lock ~15 ms)."""
    try:
        return _rewrite(model)
    except (wire.WireError, UnicodeDecodeError):
        return None


def _rewrite(model: bytes) -> list[bytes | memoryview] | None:
    top = list(wire.fields(model))
    graphs = [f for f in top if f.number == MODEL_GRAPH and f.wire == wire.BYTES]
    if len(graphs) != 1:
        return None
    parts = list(wire.fields(graphs[0].data))
    nodes = [_node(f) for f in parts if f.number == GRAPH_NODE]
    tensors = {name: t for name, t in map(_tensor, _of(parts, GRAPH_INITIALIZER))}
    if any(t.external for t in tensors.values()):
        return None  # its weights live beside the file: load it by path
    outputs = {_name(f) for f in _of(parts, GRAPH_OUTPUT)}
    made = {out: node for node in nodes for out in node.outputs}
    readers: dict[str, int] = {}
    for node in nodes:
        for name in node.inputs:
            readers[name] = readers.get(name, 0) + 1

    gone: set[str] = set()  # names of the values no node makes any more
    rewritten: list[Node] = []
    for node in nodes:
        found = _dequantised_lookup(node, made, readers, tensors, outputs)
        if found is None:
            rewritten.append(node)
            continue
        cast, scale_mul = found
        gone.update(cast.outputs + scale_mul.outputs)
        out, ids = node.outputs[0], node.inputs[1]
        rewritten += [
            Node("Gather", [cast.inputs[0], ids], [f"{out}/int8_rows"], ints={"axis": 0}),
            Node("Gather", [scale_mul.inputs[1], ids], [f"{out}/row_scales"], ints={"axis": 0}),
            Node("Cast", [f"{out}/int8_rows"], [f"{out}/float_rows"], ints={"to": FLOAT}),
            Node("Mul", [f"{out}/float_rows", f"{out}/row_scales"], [out]),
        ]
    if not gone:
        return None
    kept = [node for node in rewritten if not set(node.outputs) & gone]
    # Pieces, not a copy: the weights stay views of the file's bytes until written out.
    graph: list[bytes | memoryview] = []
    written_nodes = False
    for part in parts:
        if part.number == GRAPH_NODE:
            if not written_nodes:  # the nodes stay together, in the order they run
                graph += [wire.field(GRAPH_NODE, node.encode()) for node in kept]
                written_nodes = True
        elif not (part.number == GRAPH_VALUE_INFO and _name(part) in gone):
            graph.append(part.raw)
    pieces: list[bytes | memoryview] = []
    for part in top:
        if part is graphs[0]:
            size = sum(len(piece) for piece in graph)
            pieces += [wire.varint(MODEL_GRAPH << 3 | wire.BYTES), wire.varint(size), *graph]
        else:
            pieces.append(part.raw)
    return pieces


def _dequantised_lookup(
    node: Node,
    made: dict[str, Node],
    readers: dict[str, int],
    tensors: dict[str, Tensor],
    outputs: set[str],
) -> tuple[Node, Node] | None:
    """(Cast, Mul) when `node` is Gather(Mul(Cast(int8 table), per-row scale), ids) on
    axis 0, and the float table is read by nothing else."""
    if node.op != "Gather" or node.domain or node.ints.get("axis", 0) != 0:
        return None
    if len(node.inputs) != 2:
        return None
    table = made.get(node.inputs[0])
    if table is None or table.op != "Mul" or table.domain or len(table.inputs) != 2:
        return None
    cast = made.get(table.inputs[0])
    if cast is None or cast.op != "Cast" or cast.domain or cast.ints.get("to") != FLOAT:
        return None
    quantised = tensors.get(cast.inputs[0])
    scale = tensors.get(table.inputs[1])
    if quantised is None or quantised.kind != INT8 or len(quantised.dims) != 2:
        return None
    if scale is None or scale.kind != FLOAT or scale.dims != (quantised.dims[0], 1):
        return None
    shared = (node.inputs[0], table.inputs[0])
    if any(readers.get(name) != 1 or name in outputs for name in shared):
        return None
    return cast, table


def _node(found: wire.Field) -> Node:
    parts = list(wire.fields(found.data))
    ints: dict[str, int] = {}
    for attribute in _of(parts, NODE_ATTRIBUTE):
        inner = list(wire.fields(attribute.data))
        names = [f.text for f in inner if f.number == ATTRIBUTE_NAME]
        values = [f.value for f in inner if f.number == ATTRIBUTE_INT]
        if names and values and isinstance(values[0], int):
            ints[names[0]] = _signed(values[0])
    texts = {number: [f.text for f in parts if f.number == number] for number in (1, 2, 4, 7)}
    return Node(
        op=(texts[NODE_OP] or [""])[0],
        inputs=texts[NODE_INPUT],
        outputs=texts[NODE_OUTPUT],
        domain=(texts[NODE_DOMAIN] or [""])[0],
        ints=ints,
        raw=bytes(found.data),
    )


def _tensor(found: wire.Field) -> tuple[str, Tensor]:
    parts = list(wire.fields(found.data))
    kind = next((f.value for f in parts if f.number == TENSOR_TYPE), 0)
    location = next((f.value for f in parts if f.number == TENSOR_LOCATION), 0)
    dims = wire.packed_or_repeated([f for f in parts if f.number == TENSOR_DIMS])
    tensor = Tensor(tuple(dims), kind if isinstance(kind, int) else 0, location == EXTERNAL)
    name = next((f.text for f in parts if f.number == TENSOR_NAME), "")
    return name, tensor


def _of(parts: list[wire.Field], number: int) -> list[wire.Field]:
    return [f for f in parts if f.number == number and f.wire == wire.BYTES]


def _name(found: wire.Field) -> str:
    """The name of a ValueInfoProto."""
    return next((f.text for f in wire.fields(found.data) if f.number == VALUE_NAME), "")


def _signed(value: int) -> int:
    """An int64 attribute as written (two's complement in ten bytes)."""
    return value - (1 << 64) if value >= 1 << 63 else value
