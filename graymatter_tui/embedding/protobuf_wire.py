"""Protocol Buffers' wire format, the little of it an ONNX file needs: reading a message's
fields in order and writing them back. No `onnx` or `protobuf` package is needed at run
time; a field this module does not understand is kept as the bytes it was."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

VARINT, FIXED64, BYTES, FIXED32 = 0, 1, 2, 5


class WireError(ValueError):
    """The bytes are not a well-formed message."""


@dataclass(frozen=True)
class Field:
    number: int
    wire: int
    value: int | memoryview  # an int for a varint; the payload bytes otherwise
    raw: memoryview  # the whole field as it was written: tag, length and payload

    @property
    def data(self) -> memoryview:
        if isinstance(self.value, int):
            raise WireError(f"field {self.number} is a number, not bytes")
        return self.value

    @property
    def text(self) -> str:
        return bytes(self.data).decode("utf-8", "replace")


def varint(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)


def field(number: int, payload: bytes | str | int) -> bytes:
    """One field: a varint for an int, length-delimited bytes otherwise."""
    if isinstance(payload, int):
        return varint(number << 3) + varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return varint(number << 3 | BYTES) + varint(len(data)) + data


def _read_varint(data: memoryview, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if at >= len(data) or shift > 63:
            raise WireError("a number runs past the end of the message")
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def fields(message: bytes | memoryview) -> Iterator[Field]:
    """The message's fields in the order written (payloads are views, not copies)."""
    data = memoryview(message)
    at = 0
    while at < len(data):
        start = at
        tag, at = _read_varint(data, at)
        number, wire = tag >> 3, tag & 7
        value: int | memoryview
        if wire == VARINT:
            value, at = _read_varint(data, at)
        elif wire == BYTES:
            size, at = _read_varint(data, at)
            if at + size > len(data):
                raise WireError(f"field {number} runs past the end of the message")
            value, at = data[at : at + size], at + size
        elif wire in (FIXED64, FIXED32):
            size = 8 if wire == FIXED64 else 4
            if at + size > len(data):
                raise WireError(f"field {number} runs past the end of the message")
            value, at = int.from_bytes(data[at : at + size], "little"), at + size
        else:
            raise WireError(f"field {number} has wire type {wire}, which ONNX never writes")
        if number == 0:
            raise WireError("a field numbered 0")
        yield Field(number, wire, value, data[start:at])


def packed_or_repeated(found: list[Field]) -> list[int]:
    """The integers of a repeated int field, written packed or one field each."""
    values: list[int] = []
    for each in found:
        if isinstance(each.value, int):
            values.append(each.value)
            continue
        at = 0
        while at < len(each.value):
            number, at = _read_varint(each.value, at)
            values.append(number)
    return values
