"""Id lists held compactly: every id in one bytes buffer, at a fixed width.

A Python list of 1M ULID strings costs ~85 MB (a 75-byte object and an 8-byte pointer
each); the same ids in one buffer cost 26 MB, and finding one is a C-speed `bytes.find`.
Ids shorter than the widest are padded with NUL (never part of an id); ULIDs all have 26
characters, so a store's list needs no padding.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from typing import overload

PAD = b"\x00"


def _even(ids: Sequence[str]) -> bool:
    return len(set(map(len, ids))) <= 1


def encode_ids(ids: Sequence[str], width: int) -> bytes:
    """`ids` as one buffer of `width`-byte entries (each id encoded as UTF-8, padded)."""
    joined = "".join(ids)
    if len(joined) == width * len(ids) and joined.isascii() and _even(ids):
        return joined.encode("ascii")
    return b"".join(i.encode().ljust(width, PAD) for i in ids)


class _Ids(Sequence[str]):
    """Indexing shared by `IdList` and `Picked`: an int (negative counts from the end) or
    a slice, each id read through `_at`."""

    __slots__ = ()

    def _at(self, index: int) -> str:
        raise NotImplementedError

    @overload
    def __getitem__(self, index: int) -> str: ...

    @overload
    def __getitem__(self, index: slice) -> list[str]: ...

    def __getitem__(self, index: int | slice) -> str | list[str]:
        count = len(self)
        if isinstance(index, slice):
            return [self._at(i) for i in range(*index.indices(count))]
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError("id index out of range")
        return self._at(index)


class IdList(_Ids):
    """An immutable sequence of ids, newest first, in one buffer."""

    __slots__ = ("_count", "_packed", "_width")

    def __init__(self, packed: bytes = b"", width: int = 26) -> None:
        if width <= 0 or len(packed) % width:
            raise ValueError(f"a buffer of {len(packed)} bytes is not a list of {width}-byte ids")
        self._packed = packed
        self._width = width
        self._count = len(packed) // width

    @classmethod
    def of(cls, ids: Iterable[str]) -> IdList:
        listed = list(ids)
        width = max((len(i.encode()) for i in listed), default=26) or 1
        return cls(encode_ids(listed, width), width)

    @classmethod
    def joined(cls, pages: Iterable[Sequence[str]], width: int = 26) -> IdList:
        """One list from pages of ids (a store's, read a page at a time), so a long list
        is never held as one list of strings. Pages of ids that are not all `width`
        ASCII characters (never a store's ULIDs) fall back to `of`."""
        parts: list[bytes] = []
        remaining = iter(pages)
        for page in remaining:
            joined = "".join(page)
            if len(joined) != width * len(page) or not joined.isascii() or not _even(page):
                done = IdList(b"".join(parts), width)
                return cls.of([*done, *page, *(i for rest in remaining for i in rest)])
            parts.append(joined.encode("ascii"))
        return cls(b"".join(parts), width)

    @classmethod
    def concat(cls, lists: Sequence[IdList]) -> IdList:
        """The lists one after the other."""
        widths = {i.width for i in lists}
        if len(widths) == 1:
            return cls(b"".join(i._packed for i in lists), widths.pop())
        return cls.of(i for listed in lists for i in listed)

    @property
    def width(self) -> int:
        return self._width

    def __len__(self) -> int:
        return self._count

    def _at(self, index: int) -> str:
        width = self._width
        raw = self._packed[index * width : (index + 1) * width]
        return raw.rstrip(PAD).decode()

    def __iter__(self) -> Iterator[str]:
        for index in range(self._count):
            yield self._at(index)

    def __contains__(self, value: object) -> bool:
        return isinstance(value, str) and self._find(value) is not None

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        found = self._find(value) if isinstance(value, str) else None
        if found is None or found < start or (stop is not None and found >= stop):
            raise ValueError(f"{value!r} is not in the list")
        return found

    def _find(self, value: str) -> int | None:
        """Position of `value`: a C-speed scan of the buffer; a hit that straddles two
        entries (possible only with padded, unequal ids) is skipped."""
        width = self._width
        raw = value.encode()
        if len(raw) > width or PAD in raw:
            return None
        needle = raw.ljust(width, PAD)
        at = self._packed.find(needle)
        while at != -1:
            if at % width == 0:
                return at // width
            at = self._packed.find(needle, at + 1)
        return None

    def __eq__(self, other: object) -> bool:
        if isinstance(other, IdList):
            if self._width == other._width:  # one padding per width: the buffers say
                return self._packed == other._packed
            return list(self) == list(other)
        if isinstance(other, list):
            return list(self) == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"IdList({len(self)} ids)"


class Picked(_Ids):
    """The ids at some positions of an `IdList` (a filter's matches), in their order:
    one 4-byte position per id, not a new list of strings."""

    __slots__ = ("ids", "positions")

    def __init__(self, ids: IdList, positions: array[int]) -> None:
        self.ids = ids
        self.positions = positions  # ascending

    def __len__(self) -> int:
        return len(self.positions)

    def _at(self, index: int) -> str:
        return self.ids[self.positions[index]]

    def __iter__(self) -> Iterator[str]:
        ids = self.ids
        for position in self.positions:
            yield ids[position]

    def __contains__(self, value: object) -> bool:
        try:
            self.index(value)
        except ValueError:
            return False
        return True

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        position = self.ids.index(value)
        at = bisect_left(self.positions, position)
        if at == len(self.positions) or self.positions[at] != position:
            raise ValueError(f"{value!r} is not in the list")
        if at < start or (stop is not None and at >= stop):
            raise ValueError(f"{value!r} is not in the list")
        return at
