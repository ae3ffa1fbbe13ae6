"""The database's schema as versioned SQL steps, each run in one transaction under an
advisory lock, so two processes opening a new database at once both succeed.

`graymatter_meta` marks a database as ours (`application`) and holds its schema version.
A database with tables but no such mark belongs to another application and is refused;
a newer version is refused, as the LMDB store refuses a newer schema. Identifiers,
agent names and index terms use the "C" collation: their order is byte order, the order
of LMDB's keys, so both backends list and page in the same order (ADR 0041).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from graymatter_tui.backends.postgres.tx import PgTx
from graymatter_tui.core import clock
from graymatter_tui.core.errors import StoreError
from graymatter_tui.storage.lifespan_ops import fill

APPLICATION = "graymatter-tui"
# pg_advisory_xact_lock key: "graymatter" folded into a bigint, held by schema changes.
SCHEMA_LOCK = 0x6772_6179_6D61_7474

_STEP_1 = """
CREATE TABLE graymatter_meta (
    key   text COLLATE "C" PRIMARY KEY,
    value text NOT NULL
);
CREATE TABLE counters (
    name  text COLLATE "C" PRIMARY KEY,
    value bigint NOT NULL
);
CREATE TABLE facts (
    id            text COLLATE "C" PRIMARY KEY,
    agent_id      text COLLATE "C" NOT NULL,
    text          text NOT NULL,
    -- the exact text when it holds a NUL, which a text column cannot (else NULL)
    text_raw      bytea,
    created_at    text NOT NULL,
    accessed_at   text NOT NULL,
    access_count  bigint NOT NULL DEFAULT 0,
    superseded_by text COLLATE "C" NOT NULL DEFAULT '',
    pinned        boolean NOT NULL DEFAULT false,
    pinned_at     text,
    cycle_id      text COLLATE "C" NOT NULL DEFAULT '',
    confidence    text,
    kind          text,
    source        text
);
-- A fact's weight, apart from its row as LMDB keeps it apart (vitals): decay rewrites
-- every weight, and a narrow row with half of each page free is updated in place (HOT).
CREATE TABLE weights (
    fact_id text COLLATE "C" PRIMARY KEY,
    weight  double precision NOT NULL
) WITH (fillfactor = 50);
CREATE INDEX facts_by_agent ON facts (agent_id, id);
CREATE INDEX facts_live ON facts (agent_id, id) WHERE superseded_by = '';
CREATE INDEX facts_tombstones ON facts (agent_id, id) WHERE superseded_by <> '';
-- per agent: live facts, tombstones, live pinned facts and the sum of live weights,
-- kept by every write (as LMDB keeps them) so listing agents reads one row each
CREATE TABLE agent_counts (
    agent_id   text COLLATE "C" PRIMARY KEY,
    live       bigint NOT NULL,
    tombstones bigint NOT NULL,
    pinned     bigint NOT NULL,
    weight_sum double precision NOT NULL
);
CREATE TABLE receipts (
    summary_id text COLLATE "C" PRIMARY KEY,
    consumed   text[] NOT NULL
);
CREATE TABLE journal (
    cycle_id text COLLATE "C" PRIMARY KEY,
    agent_id text COLLATE "C" NOT NULL,
    record   json NOT NULL
);
CREATE TABLE activity (
    seq   bigint PRIMARY KEY,
    entry json NOT NULL
);
CREATE TABLE postings (
    agent_id text COLLATE "C" NOT NULL,
    term     text COLLATE "C" NOT NULL,
    fact_id  text COLLATE "C" NOT NULL,
    count    integer NOT NULL,
    length   integer NOT NULL,
    PRIMARY KEY (agent_id, term, fact_id)
);
CREATE TABLE terms (
    agent_id text COLLATE "C" NOT NULL,
    term     text COLLATE "C" NOT NULL,
    df       integer NOT NULL,
    PRIMARY KEY (agent_id, term)
);
-- creating the store is its first write, as on LMDB
INSERT INTO counters (name, value) VALUES ('generation', 1), ('activity_seq', 0);
"""

# Checkpoints, aliases, the review queue and the knowledge graph. The graph keeps the
# LMDB backend's byte keys (`agent \0 …`), whose order its operations rely on.
_STEP_2 = """
CREATE TABLE checkpoints (
    agent_id text COLLATE "C" NOT NULL,
    id       text COLLATE "C" NOT NULL,
    record   json NOT NULL,
    PRIMARY KEY (agent_id, id)
);
CREATE TABLE aliases (
    agent_id text COLLATE "C" NOT NULL,
    term     text COLLATE "C" NOT NULL,
    record   json NOT NULL,
    PRIMARY KEY (agent_id, term)
);
CREATE TABLE proposals (
    id     text COLLATE "C" PRIMARY KEY,
    record json NOT NULL
);
CREATE TABLE graph_nodes (
    agent_id text COLLATE "C" NOT NULL,
    key      bytea PRIMARY KEY,
    value    bytea NOT NULL
);
CREATE INDEX graph_nodes_by_agent ON graph_nodes (agent_id, key);
CREATE TABLE graph_edges (
    agent_id text COLLATE "C" NOT NULL,
    key      bytea PRIMARY KEY,
    value    bytea NOT NULL
);
CREATE INDEX graph_edges_by_agent ON graph_edges (agent_id, key);
-- a fact whose text was extracted into the graph (key: agent name, a NUL byte, fact id)
CREATE TABLE extracted (
    key       bytea PRIMARY KEY,
    signature bytea NOT NULL
);
"""

# Probe queries each agent's cycles are checked against (the LMDB store's schema 5).
_STEP_3 = """
CREATE TABLE probes (
    agent_id text COLLATE "C" NOT NULL,
    id       text COLLATE "C" NOT NULL,
    record   json NOT NULL,
    PRIMARY KEY (agent_id, id)
);
"""

# Embedding vectors (ADR 0058): the LMDB store's `vectors` rows, key for key and byte for
# byte (`storage/vector_layout.py`: per-agent float32 blocks of 128 rows, their ids, each
# fact's slots, the free list, the block stamps). bytea compares as unsigned bytes, so
# key order is LMDB's, and a prefix is a key range. A block (128 rows of 4-byte floats)
# does not compress: kept out of line as it is, never compressed (STORAGE EXTERNAL).
# The queue of live facts waiting for a vector is (agent, fact id) in LMDB's key order.
_STEP_4 = """
CREATE TABLE vectors (
    key   bytea PRIMARY KEY,
    value bytea NOT NULL
);
ALTER TABLE vectors ALTER COLUMN value SET STORAGE EXTERNAL;
CREATE TABLE embed_queue (
    agent_id text COLLATE "C" NOT NULL,
    fact_id  text COLLATE "C" NOT NULL,
    PRIMARY KEY (agent_id, fact_id)
);
"""


# When each fact stopped being live (the LMDB store's schema 6): one row per fact that
# ever did, its endings as JSON (`lifespan_ops`). Filled from the journal by
# `_date_endings` when an existing database is upgraded.
_STEP_5 = """
CREATE TABLE lifespans (
    agent_id text COLLATE "C" NOT NULL,
    fact_id  text COLLATE "C" NOT NULL,
    record   json NOT NULL,
    PRIMARY KEY (agent_id, fact_id)
);
"""


def _date_endings(conn: Any, created_at: str) -> None:
    """Step 5's rows for the facts that stopped being live before it, derived from the
    journal and the activity feed, in the step's transaction."""
    fill(PgTx(conn, clock.parse_time(created_at), write=True))


# Step n makes schema version n. Append only; never edit a released step.
STEPS: tuple[str, ...] = (_STEP_1, _STEP_2, _STEP_3, _STEP_4, _STEP_5)
SCHEMA_VERSION = len(STEPS)
# Steps that also rewrite rows, after their SQL, in the same transaction (a new database
# has nothing to rewrite: they run only on an upgrade).
FILLS: dict[int, Callable[[Any, str], None]] = {5: _date_endings}


def _version(conn: Any) -> int:
    """The database's schema version (0: empty); refuses a database that is not ours."""
    marked = conn.execute("SELECT to_regclass('graymatter_meta') IS NOT NULL").fetchone()[0]
    if not marked:
        tables = conn.execute(
            "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE n.nspname = current_schema() AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
        ).fetchone()[0]
        if tables:
            raise StoreError(
                f"this is a database of another application ({tables} tables, none of them "
                "graymatter-tui's); give graymatter-tui a database of its own"
            )
        return 0
    rows = dict(
        conn.execute(
            "SELECT key, value FROM graymatter_meta WHERE key IN ('application', 'schema_version')"
        ).fetchall()
    )
    if rows.get("application") != APPLICATION:
        raise StoreError(
            "this is a database of another application (its graymatter_meta table does not "
            "name graymatter-tui); give graymatter-tui a database of its own"
        )
    try:
        return int(rows.get("schema_version", ""))
    except ValueError:
        raise StoreError("the database's schema version is unreadable") from None


def inspect(conn: Any) -> int:
    """The schema version of a database opened for reading only, changing nothing:
    refuses another application's database and a newer schema; 0 when it holds no
    store yet."""
    with conn.transaction():
        version = _version(conn)
    if version > SCHEMA_VERSION:
        raise StoreError(
            f"the database has schema version {version}, newer than this "
            f"graymatter-tui knows ({SCHEMA_VERSION}); upgrade graymatter-tui"
        )
    return version


def prepare(conn: Any, *, created_at: str, language: str) -> int:
    """Bring the database to `SCHEMA_VERSION`, one step per transaction; returns the
    version found before. `created_at` and `language` (stemming) mark a new database."""
    found: int | None = None
    while True:
        with conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (SCHEMA_LOCK,))
            version = _version(conn)
            found = version if found is None else found
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"the database has schema version {version}, newer than this "
                    f"graymatter-tui knows ({SCHEMA_VERSION}); upgrade graymatter-tui"
                )
            if version == SCHEMA_VERSION:
                return found
            conn.execute(STEPS[version].encode())
            if found > 0 and version + 1 in FILLS:
                FILLS[version + 1](conn, created_at)
            if version == 0:
                conn.execute(
                    "INSERT INTO graymatter_meta (key, value) VALUES ('application', %s), "
                    "('created_at', %s), ('stem_language', %s)",
                    (APPLICATION, created_at, language),
                )
            conn.execute(
                "INSERT INTO graymatter_meta (key, value) VALUES ('schema_version', %s) "
                "ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                (str(version + 1),),
            )
