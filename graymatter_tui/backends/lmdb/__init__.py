"""The LMDB backend: an embedded store in one directory (ADRs 0001, 0020)."""

from graymatter_tui.backends.lmdb.store import LmdbStore

__all__ = ["LmdbStore"]
