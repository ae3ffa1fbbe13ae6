"""An int8 matrix-vector product on onnxruntime's integer kernels, for the vector cache's
first pass (ADR 0071): a query against every row at a quarter of float32's memory
traffic. numpy has no fast integer product (42 ms at 100k x 384, against 7.5 ms for its
float32 one); onnxruntime's MatMulInteger takes 1.5-2 ms.

The graph is one MatMulInteger node. It is written here as the few bytes of ONNX's
protobuf it takes, so no `onnx` package is needed at run time: a ModelProto with an
opset import and a graph of one node, two inputs and one output, every dimension but the
row count fixed (`protobuf_wire`)."""

from __future__ import annotations

import threading
from typing import TYPE_CHECKING

from graymatter_tui.embedding.onnx_import import onnxruntime
from graymatter_tui.embedding.protobuf_wire import field

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

# TensorProto.DataType values.
_UINT8, _INT8, _INT32 = 2, 3, 6
_OPSET = 13  # MatMulInteger is in every opset since 10
_IR_VERSION = 8


def _tensor_info(name: str, element: int, shape: tuple[int | str, ...]) -> bytes:
    """A ValueInfoProto: name, and a tensor type of `element` with `shape` (an int is a
    fixed dimension, a str a named one)."""
    dims = b"".join(field(1, field(1, d) if isinstance(d, int) else field(2, d)) for d in shape)
    tensor = field(1, element) + field(2, dims)
    return field(1, name) + field(2, field(1, tensor))


def graph_bytes(dimension: int) -> bytes:
    """The model: scores[1, N] = MatMulInteger(query uint8[1, D], rows int8[D, N]), the
    int32 dot product of the query with each column of `rows`. No zero-point input: with
    one, onnxruntime takes a path three times slower; the query is shifted by 128 into
    uint8 instead and the shift taken off afterwards (`Int8Product.scores`)."""
    node = field(1, "query") + field(1, "rows") + field(2, "scores") + field(3, "dot")
    node += field(4, "MatMulInteger")
    graph = (
        field(1, node)
        + field(2, "int8_product")
        + field(11, _tensor_info("query", _UINT8, (1, dimension)))
        + field(11, _tensor_info("rows", _INT8, (dimension, "N")))
        + field(12, _tensor_info("scores", _INT32, (1, "N")))
    )
    opset = field(1, "") + field(2, _OPSET)
    head = field(1, _IR_VERSION) + field(2, "graymatter-tui")
    return head + field(7, graph) + field(8, opset)


class Int8Product:
    """`scores(query, rows)`: the int32 dot products of an int8 query with each column of
    an int8 [dimension, N] matrix, exact (no rounding: integers throughout)."""

    def __init__(self, dimension: int, threads: int = 1) -> None:
        ort = onnxruntime()

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        options.log_severity_level = 3
        self.dimension = dimension
        self._session = ort.InferenceSession(
            graph_bytes(dimension), sess_options=options, providers=["CPUExecutionProvider"]
        )

    def scores(
        self,
        query: npt.NDArray[np.int8],
        rows: npt.NDArray[np.int8],
        sums: npt.NDArray[np.int32] | None = None,
    ) -> npt.NDArray[np.int32]:
        """`sums`: each column's sum (`column_sums(rows)`), kept by a caller that asks
        of the same rows again."""
        import numpy as np

        shifted = (query.astype(np.int16) + 128).astype(np.uint8).reshape(1, -1)
        out = self._session.run(["scores"], {"query": shifted, "rows": rows})[0]
        # (q + 128) . x = q . x + 128 * sum(x)
        if sums is None:
            sums = column_sums(rows)
        dots: npt.NDArray[np.int32] = np.asarray(out, dtype=np.int32).reshape(-1)
        dots -= 128 * sums
        return dots


def column_sums(rows: npt.NDArray[np.int8]) -> npt.NDArray[np.int32]:
    import numpy as np

    sums: npt.NDArray[np.int32] = rows.sum(axis=0, dtype=np.int32)
    return sums


_lock = threading.Lock()
_products: dict[int, Int8Product | None] = {}


def product_for(dimension: int) -> Int8Product | None:
    """The process's product for `dimension`, made once; None when onnxruntime cannot
    make it (the caller keeps to float32)."""
    with _lock:
        if dimension not in _products:
            try:
                _products[dimension] = Int8Product(dimension)
            except Exception:  # no onnxruntime, or one that refuses the graph
                _products[dimension] = None
        return _products[dimension]
