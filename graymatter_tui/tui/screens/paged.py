"""Reading a long list from the store a page at a time (keyset paging on the last id), so
a million ids or texts are never held as one list of strings on the way in."""

from __future__ import annotations

from collections.abc import Callable, Iterator

READ_PAGE = 65_536

IdPage = list[str]
TextPage = tuple[list[str], list[str]]


def id_pages(read: Callable[[int, str | None], IdPage]) -> Iterator[IdPage]:
    """Pages of `read(limit, before)` (newest first) until a short page."""
    before = None
    while True:
        page = read(READ_PAGE, before)
        if page:
            yield page
        if len(page) < READ_PAGE:
            return
        before = page[-1]


def text_pages(
    read: Callable[[int, str | None], TextPage], after_each: Callable[[], None]
) -> Iterator[TextPage]:
    """Pages of (ids, texts); `after_each` runs once each page is read (to let go of the
    store pages it touched)."""
    before = None
    while True:
        ids, texts = read(READ_PAGE, before)
        after_each()
        if ids:
            yield ids, texts
        if len(ids) < READ_PAGE:
            return
        before = ids[-1]
