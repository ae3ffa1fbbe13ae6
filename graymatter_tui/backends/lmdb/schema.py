"""Opening LMDB files and the store's schema: the tables, the meta rows a new store
starts with, and the checks that refuse a file this program must not touch."""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from pathlib import Path

import lmdb

from graymatter_tui import __version__
from graymatter_tui.backends.lmdb.files import DATA_FILE
from graymatter_tui.backends.lmdb.tx import Dbs, Tx
from graymatter_tui.core import clock
from graymatter_tui.core.errors import StoreError
from graymatter_tui.core.progress import Report
from graymatter_tui.core.tokens import DEFAULT_LANGUAGE
from graymatter_tui.storage.lifespan_ops import fill
from graymatter_tui.storage.reindex_ops import reindex
from graymatter_tui.storage.transaction import STEM_LANGUAGE

SCHEMA_VERSION = 6
ENGINE = "lmdb-0.9"
TABLES = tuple(Dbs.__dataclass_fields__)
# Tables each schema version added. A store of an older schema gets them (and its new
# version number) in one write transaction the first time it is opened writable.
ADDED_IN = {
    2: ("checkpoints", "aliases"),
    3: ("activity", "proposals"),
    5: ("vectors", "embed_queue", "probes"),
    6: ("lifespans",),
}


def _stem_index(tx: Tx, language: str, progress: Report | None) -> None:
    """Schema 4: the recall index holds stems in the store's language (ADR 0030)."""
    tx.set_analyzer(language)
    reindex(tx, progress)


def _date_endings(tx: Tx, language: str, progress: Report | None) -> None:
    """Schema 6: when each tombstone (and each pruned fact) stopped being live, derived
    from the journal and the activity feed (`lifespan_ops.fill`)."""
    fill(tx, progress)


# Steps that rewrite rows, run after the tables are created, in the same transaction.
STEPS: dict[int, Callable[[Tx, str, Report | None], None]] = {4: _stem_index, 6: _date_endings}
# A migration that fills the map grows it and runs again, up to this many times.
_MIGRATION_ATTEMPTS = 12


def lmdb_open(
    directory: Path, map_size: int, *, read_only: bool, lock: bool, sync: bool = True
) -> lmdb.Environment:
    return lmdb.open(
        str(directory),
        map_size=map_size,
        max_dbs=len(TABLES) + 2,
        mode=0o600,
        lib_version=0,
        max_spare_txns=0,
        sync=sync,
        metasync=sync,
        writemap=False,
        readonly=read_only,
        lock=lock,
    )


def lmdb_message(exc: lmdb.Error) -> str:
    """What an LMDB error means for the user, in a few words."""
    text = str(exc)
    if isinstance(exc, lmdb.DiskError) or "Input/output" in text or "No space" in text:
        return "the disk is full or failed while writing; nothing was written"
    if isinstance(exc, lmdb.ReadonlyError):
        return "the store is read-only"
    if isinstance(exc, lmdb.CorruptedError | lmdb.PanicError | lmdb.InvalidError):
        return f"the store is corrupt ({text})"
    return text


def open_tables(
    env: lmdb.Environment,
    directory: Path,
    now: datetime,
    read_only: bool = False,
    *,
    language: str = DEFAULT_LANGUAGE,
    progress: Report | None = None,
) -> Dbs | None:
    """The store's tables, creating a new store in an empty file (unless `read_only`:
    then None). Refuses a foreign LMDB file, a damaged one, or a newer schema. A new or
    upgraded store stems in `language`; `progress` hears of an upgrade's re-index."""
    try:
        with env.begin() as txn:
            try:
                meta = env.open_db(b"meta", txn=txn, create=False)
            except lmdb.NotFoundError:
                meta = None
            entries = txn.stat()["entries"]
            schema = txn.get(b"schema_version", db=meta) if meta is not None else None
    except lmdb.Error as exc:
        raise StoreError(f"cannot read store at {directory}: {lmdb_message(exc)}") from None
    if meta is None:
        if entries:
            raise StoreError(
                f"{directory / DATA_FILE} is an LMDB database but not a graymatter-tui store; "
                "not touching it"
            )
        return None if read_only else initialise(env, now, language)
    if schema is None:
        raise StoreError(f"store at {directory} has no schema version; it is damaged")
    try:
        version = int(bytes(schema))
    except ValueError:
        raise StoreError(f"store at {directory} has a corrupt schema version") from None
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"store at {directory} was written by a newer graymatter-tui (schema {version}; "
            f"this program reads up to {SCHEMA_VERSION}); upgrade graymatter-tui to open it"
        )
    if version < SCHEMA_VERSION and not read_only:
        migrate(env, directory, version, now, language=language, progress=progress)
        version = SCHEMA_VERSION
    present = [name for name in TABLES if not _added_after(name, version)]
    try:
        return Dbs(**{name: env.open_db(name.encode(), create=False) for name in present})
    except lmdb.Error as exc:
        raise StoreError(f"store at {directory} is missing a table ({exc})") from None


def _added_after(table: str, version: int) -> bool:
    return any(table in names for added, names in ADDED_IN.items() if added > version)


def migrate(
    env: lmdb.Environment,
    directory: Path,
    version: int,
    now: datetime,
    *,
    language: str = DEFAULT_LANGUAGE,
    progress: Report | None = None,
) -> None:
    """Bring a store of an older schema up to this one in one write transaction: create
    the tables added since, run each version's step (schema 4 re-indexes every live fact,
    ADR 0030), and record the new version. Another process may be doing the same at the
    same moment; whoever commits second finds nothing to do. A map too small for the
    step is grown and the whole transaction run again (nothing is committed until then)."""
    try:
        for _ in range(_MIGRATION_ATTEMPTS):
            try:
                _migrate_once(env, now, language, progress)
                return
            except lmdb.MapFullError:
                env.set_mapsize(int(env.info()["map_size"]) * 2)
        raise StoreError(
            f"cannot upgrade the store at {directory} from schema {version}: the map could "
            "not be grown enough; nothing was changed"
        )
    except lmdb.Error as exc:
        raise StoreError(
            f"cannot upgrade the store at {directory} from schema {version}: "
            f"{lmdb_message(exc)}; nothing was changed"
        ) from None


def _migrate_once(
    env: lmdb.Environment, now: datetime, language: str, progress: Report | None
) -> None:
    with env.begin(write=True) as txn:
        meta = env.open_db(b"meta", txn=txn, create=False)
        current = int(bytes(txn.get(b"schema_version", db=meta) or b"0"))
        if current >= SCHEMA_VERSION:
            return
        for added in range(current + 1, SCHEMA_VERSION + 1):
            for name in ADDED_IN.get(added, ()):
                env.open_db(name.encode(), txn=txn, create=True)
        steps = [STEPS[v] for v in range(current + 1, SCHEMA_VERSION + 1) if v in STEPS]
        if steps:
            handles = {name: env.open_db(name.encode(), txn=txn, create=False) for name in TABLES}
            tx = Tx(txn, Dbs(**handles), now, write=True)
            for step in steps:
                step(tx, language, progress)
        txn.put(b"schema_version", str(SCHEMA_VERSION).encode(), db=meta)
        stamp = f"{clock.format_time(now)} by graymatter-tui {__version__}"
        txn.put(f"migrated_from_{current}".encode(), stamp.encode(), db=meta)


def initialise(env: lmdb.Environment, now: datetime, language: str = DEFAULT_LANGUAGE) -> Dbs:
    """Create the tables and the meta rows of a new store."""
    try:
        with env.begin(write=True) as txn:
            handles = {name: env.open_db(name.encode(), txn=txn) for name in TABLES}
            meta = handles["meta"]
            if txn.get(b"schema_version", db=meta) is not None:
                # Another process created the store between our look and this write
                # transaction; its meta (and any writes since) must stand.
                return Dbs(**handles)
            txn.put(b"schema_version", str(SCHEMA_VERSION).encode(), db=meta)
            txn.put(b"engine", ENGINE.encode(), db=meta)
            txn.put(b"engine_version", ".".join(map(str, lmdb.version())).encode(), db=meta)
            txn.put(b"created_by", f"graymatter-tui {__version__}".encode(), db=meta)
            txn.put(b"created_at", clock.format_time(now).encode(), db=meta)
            txn.put(b"generation", b"1", db=meta)
            txn.put(STEM_LANGUAGE.encode(), language.encode(), db=meta)
    except lmdb.Error as exc:
        raise StoreError(f"cannot create store: {lmdb_message(exc)}") from None
    return Dbs(**handles)
