"""The memory store. Callers reach it through `Store.open` and type against
`MemoryStore`; everything else in this package is the LMDB backend's inside."""

from graymatter_tui.store.access import directory_check, files_check
from graymatter_tui.store.files import DATA_FILE, LOCK_FILE
from graymatter_tui.store.protocol import KeywordIndex, MemoryStore, VectorBlockSource
from graymatter_tui.store.schema import SCHEMA_VERSION
from graymatter_tui.store.store import Store
from graymatter_tui.store.values import (
    ON_CONFLICT,
    PRUNE_BELOW,
    ApplyOutcome,
    ApplyRequest,
    Checkpoint,
    DecayOutcome,
    EmbedState,
    EntityLike,
    ExtractOutcome,
    GraphDecayOutcome,
    ImportConflicts,
    ImportIssue,
    ImportResult,
    NewFact,
    OnConflict,
    PruneOutcome,
    ReviewDecision,
    Selection,
    ShowResult,
    VectorBlocks,
    WeightChange,
    validate_fact_id,
)

__all__ = [
    "DATA_FILE",
    "LOCK_FILE",
    "ON_CONFLICT",
    "PRUNE_BELOW",
    "SCHEMA_VERSION",
    "ApplyOutcome",
    "ApplyRequest",
    "Checkpoint",
    "DecayOutcome",
    "EmbedState",
    "EntityLike",
    "ExtractOutcome",
    "GraphDecayOutcome",
    "ImportConflicts",
    "ImportIssue",
    "ImportResult",
    "KeywordIndex",
    "MemoryStore",
    "NewFact",
    "OnConflict",
    "PruneOutcome",
    "ReviewDecision",
    "Selection",
    "ShowResult",
    "Store",
    "VectorBlockSource",
    "VectorBlocks",
    "WeightChange",
    "directory_check",
    "files_check",
    "validate_fact_id",
]
