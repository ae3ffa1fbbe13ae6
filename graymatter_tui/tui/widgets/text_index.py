"""Substring search over many fact texts, for filter-as-you-type, held compactly.

The texts are casefolded, encoded as UTF-8 and joined, 1,024 to a block, with the byte
0xFF between them (it never occurs in UTF-8, so a match cannot run from one text into the
next). 1M texts of ~70 characters take ~70 MB, against ~130 MB as a list of strings,
and the ids ~26 MB in an `IdList` (ADR 0019).

A search skips every block that does not contain the needle (`in`, C speed), and finds
which texts of a block do with a few whole-block operations (`_mask`). A UTF-8 needle is
found in UTF-8 text exactly where the string is found in the string (every character's
first byte says how long it is), so the results are those of `needle in
text.casefold()` over every text.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Sequence
from itertools import compress

from graymatter_tui.tui.widgets.id_list import IdList

BLOCK = 1024  # texts per block
SEP = b"\xff"
HIT = b"\xfe"  # like SEP, never in UTF-8
_ONLY_MARKS = bytes(b for b in range(256) if b not in SEP + HIT)
_SEP_TO_NO = bytes.maketrans(SEP, b"\x00")


def _mask(block: bytes, needle: bytes) -> bytes:
    """One byte per text of `block`, 1 where the text contains `needle`, else 0; built by
    whole-buffer operations, so a block of 1,024 texts costs a few C calls, not 1,024
    Python steps: mark each occurrence, keep only marks and separators, then read each
    text's verdict from whether a mark precedes its separator."""
    marks = block.replace(needle, HIT).translate(None, _ONLY_MARKS) + SEP
    return marks.replace(HIT + SEP, b"\x01").translate(_SEP_TO_NO, HIT)


def _encode(text: str) -> bytes:
    # surrogatepass: stored text may hold lone surrogates; they must not stop the index.
    return text.casefold().encode("utf-8", "surrogatepass")


class TextIndex:
    def __init__(self, ids: Sequence[str], texts: Iterable[str]) -> None:
        self.ids = ids if isinstance(ids, IdList) else IdList.of(ids)
        self._blocks: list[bytes] = []
        self._count = 0  # texts in the blocks
        self._every: array[int] = array("i")  # 0, 1, 2, …: a block where all match
        self._pending: list[bytes] = []
        self._add(texts)
        self._flush()
        if self._count != len(self.ids):
            raise ValueError(f"{len(self.ids)} ids for {self._count} texts")

    @classmethod
    def from_pages(cls, pages: Iterable[tuple[Sequence[str], Sequence[str]]]) -> TextIndex:
        """An index built from (ids, texts) pages, so 1M texts are never all held as
        strings at once."""
        index = cls([], [])
        id_pages: list[IdList] = []
        for ids, texts in pages:
            id_pages.append(IdList.joined([ids]))  # packed as it arrives
            index._add(texts)
        index._flush()
        index.ids = IdList.concat(id_pages)
        if index._count != len(index.ids):
            raise ValueError(f"{len(index.ids)} ids for {index._count} texts")
        return index

    def __len__(self) -> int:
        return len(self.ids)

    def _add(self, texts: Iterable[str]) -> None:
        pending = self._pending
        for text in texts:
            pending.append(_encode(text))
            if len(pending) == BLOCK:
                self._flush()

    def _flush(self) -> None:
        pending = self._pending
        if not pending:
            return
        self._every.extend(range(self._count, self._count + len(pending)))
        self._count += len(pending)
        self._blocks.append(SEP.join(pending))
        pending.clear()

    def search(
        self,
        needle: str,
        *,
        limit: int | None = None,
        cancelled: Callable[[], bool] | None = None,
    ) -> array[int]:
        """Positions (ascending, in `ids` order) of texts containing `needle` (already
        casefolded). With `limit`, stops once at least that many are found (a first
        page); `cancelled` is asked between blocks, and a search it stops returns what
        it had found."""
        out: array[int] = array("i")
        if not needle:
            out.extend(range(min(len(self), limit) if limit is not None else len(self)))
            return out
        raw = needle.encode("utf-8", "surrogatepass")
        for number, block in enumerate(self._blocks):
            if raw not in block:
                continue
            if cancelled is not None and cancelled():
                break
            base = number * BLOCK
            mask = _mask(block, raw)
            if b"\x00" in mask:
                out.extend(compress(range(base, base + BLOCK), mask))
            else:  # every text matches (a short, common needle): copy, do not iterate
                out.extend(self._every[base : base + len(mask)])
            if limit is not None and len(out) >= limit:
                break
        return out
