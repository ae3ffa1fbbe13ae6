"""Everything that touches LMDB lives in this package."""

from graymatter_tui.store.store import (
    SCHEMA_VERSION,
    ImportResult,
    NewFact,
    ShowResult,
    Store,
)

__all__ = ["SCHEMA_VERSION", "ImportResult", "NewFact", "ShowResult", "Store"]
