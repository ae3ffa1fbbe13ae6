"""Everything that touches LMDB lives in this package."""

from graymatter_tui.store.import_ops import (
    ON_CONFLICT,
    ImportConflicts,
    ImportIssue,
    ImportResult,
    OnConflict,
)
from graymatter_tui.store.store import (
    SCHEMA_VERSION,
    NewFact,
    ShowResult,
    Store,
)

__all__ = [
    "ON_CONFLICT",
    "SCHEMA_VERSION",
    "ImportConflicts",
    "ImportIssue",
    "ImportResult",
    "NewFact",
    "OnConflict",
    "ShowResult",
    "Store",
]
