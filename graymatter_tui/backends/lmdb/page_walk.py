"""Find the pages an LMDB 0.9 data file really uses, from its bytes, without mapping it.

LMDB's header records the highest page number it has handed out, and that can exceed what
it ever wrote: a page taken and given back inside one transaction is never written, so the
file can end before the header's last page and still be whole. A file cut short looks the
same from the header alone. What tells them apart is whether any page that a table (or
LMDB's own free list, which the next write reads) refers to lies past the end of the file.

Only the 64-bit layout of the 0.9 format is read; anything that does not parse as it is
reported as damage, never guessed at.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import BinaryIO

NO_PAGE = 0xFFFF_FFFF_FFFF_FFFF  # an empty tree's root

# Page header: page number u64, pad u16, flags u16, then lower/upper u16 pair (a tree
# page) or a page count u32 (the first page of an overflow run).
_HEADER = struct.Struct("<QHHHH")
_OVERFLOW_COUNT = struct.Struct("<I")
HEADER_SIZE = 16
_BRANCH, _LEAF, _OVERFLOW, _LEAF2, _SUBPAGE = 0x01, 0x02, 0x04, 0x20, 0x40
# A node: two u16 halves of the data size (of the child page number on a branch page),
# flags u16 (the page number's top bits on a branch page), key size u16, then key, data.
_NODE = struct.Struct("<HHHH")
_BIG_DATA, _SUB_DATA, _DUP_DATA = 0x01, 0x02, 0x04
# A table's record (MDB_db) holds its root page number at byte 40.
_DB_ROOT = struct.Struct("<40xQ")
_PAGE_NUMBER = struct.Struct("<Q")
# In a meta page: the free list's record at 40, the main table's at 88.
FREE_RECORD_AT = 40
MAIN_RECORD_AT = 88


class Damaged(Exception):
    """A page that does not parse as LMDB 0.9 wrote it."""


def meta_roots(meta_page: bytes) -> tuple[int, int]:
    """The root pages of the free list and of the main table named in a meta page."""
    free = _DB_ROOT.unpack_from(meta_page, FREE_RECORD_AT)[0]
    main = _DB_ROOT.unpack_from(meta_page, MAIN_RECORD_AT)[0]
    return free, main


def first_page_past_end(
    fh: BinaryIO, page_size: int, file_pages: int, roots: tuple[int, ...]
) -> int | None:
    """The first page referred to from `roots` that lies at or past `file_pages`, or None
    when every page the trees use is inside the file. Raises Damaged on a page that is
    not what its parent says it is."""
    walker = _Walker(fh, page_size, file_pages)
    try:
        for root in roots:
            walker.tree(root)
    except _PastEnd as past:
        return past.page
    return None


class _PastEnd(Exception):
    def __init__(self, page: int) -> None:
        super().__init__(page)
        self.page = page


class _Walker:
    def __init__(self, fh: BinaryIO, page_size: int, file_pages: int) -> None:
        self.fh = fh
        self.page_size = page_size
        self.file_pages = file_pages
        self.seen: set[int] = set()

    def read(self, page: int, count: int = 1) -> bytes:
        if page + count > self.file_pages:
            raise _PastEnd(page if page >= self.file_pages else self.file_pages)
        self.fh.seek(page * self.page_size)
        raw = self.fh.read(self.page_size)
        if len(raw) < self.page_size:
            raise _PastEnd(page)
        number = _HEADER.unpack_from(raw)[0]
        if number != page:
            raise Damaged(f"page {page} says it is page {number}")
        return raw

    def tree(self, root: int) -> None:
        stack = [root]
        while stack:
            page = stack.pop()
            if page == NO_PAGE:
                continue  # an empty table
            if page in self.seen:
                raise Damaged(f"page {page} is referred to twice")
            self.seen.add(page)
            raw = self.read(page)
            flags = _HEADER.unpack_from(raw)[2]
            if flags & _BRANCH:
                stack.extend(self._children(raw))
            elif flags & _LEAF2:
                continue  # fixed-size keys only: refers to no page
            elif flags & _LEAF:
                stack.extend(self._leaf_roots(raw))
            else:
                raise Damaged(f"page {page} is neither a branch nor a leaf (flags {flags:#x})")

    def _nodes(self, raw: bytes) -> Iterator[tuple[int, int, int, int, int]]:
        lower = _HEADER.unpack_from(raw)[3]
        if lower < HEADER_SIZE or lower > len(raw):
            raise Damaged("a page's node table runs outside it")
        for slot in range((lower - HEADER_SIZE) // 2):
            offset = struct.unpack_from("<H", raw, HEADER_SIZE + 2 * slot)[0]
            if offset + _NODE.size > len(raw):
                raise Damaged("a node lies outside its page")
            lo, hi, flags, key_size = _NODE.unpack_from(raw, offset)
            yield offset, lo, hi, flags, key_size

    def _children(self, raw: bytes) -> Iterator[int]:
        for _, lo, hi, flags, _key in self._nodes(raw):
            yield lo | hi << 16 | flags << 32

    def _leaf_roots(self, raw: bytes) -> Iterator[int]:
        """Walk a leaf's overflow runs here; yield the roots of tables it names."""
        for offset, _lo, _hi, flags, key_size in self._nodes(raw):
            data_at = offset + _NODE.size + key_size
            if flags & _BIG_DATA:
                self._overflow(_PAGE_NUMBER.unpack_from(self._data(raw, data_at, 8))[0])
            elif flags & _SUB_DATA:
                # A named table (or a sorted-duplicates subtree): its record names a root.
                yield _DB_ROOT.unpack_from(self._data(raw, data_at, _DB_ROOT.size))[0]
            # _DUP_DATA alone is a sub-page kept inside this leaf: it refers to nothing.

    @staticmethod
    def _data(raw: bytes, at: int, size: int) -> bytes:
        if at + size > len(raw):
            raise Damaged("a node's data runs outside its page")
        return raw[at : at + size]

    def _overflow(self, page: int) -> None:
        first = self.read(page)
        flags = _HEADER.unpack_from(first)[2]
        if not flags & _OVERFLOW:
            raise Damaged(f"page {page} should start a run of large values (flags {flags:#x})")
        count = _OVERFLOW_COUNT.unpack_from(first, 12)[0]
        if count < 1:
            raise Damaged(f"page {page} starts a run of {count} pages")
        if page + count > self.file_pages:
            raise _PastEnd(max(page, self.file_pages))
