"""Opening the store a person named, whichever backend holds it: the one place that
chooses between LMDB (`store.Store`) and PostgreSQL (`pg.PgStore`). Everything above
works on the `MemoryStore` it returns."""

from __future__ import annotations

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.core.progress import Report
from graymatter_tui.core.store_url import StoreUrl
from graymatter_tui.storage import MemoryStore


def open_location(
    location: StoreUrl,
    *,
    read_only: bool = False,
    progress: Report | None = None,
    stem_language: str | None = None,
) -> MemoryStore:
    """The store at `location`. A writer creates or upgrades it (an upgrade's re-index
    reports to `progress`); `read_only` creates and upgrades nothing."""
    if location.path is not None:
        return LmdbStore.open(
            location.path, read_only=read_only, progress=progress, stem_language=stem_language
        )
    # psycopg is imported only by a PostgreSQL store: the LMDB user installs nothing more.
    from graymatter_tui.backends.postgres import NoStoreYet, PgStore

    try:
        return PgStore.open(location, read_only=read_only, stem_language=stem_language)
    except NoStoreYet:
        # As with a directory holding no store: a reader sees an empty one, nothing made.
        return LmdbStore.empty_view(location.redacted)
