"""The PostgreSQL backend (ADR 0041, 0042): the same `MemoryStore` contract over a
database a team shares. psycopg is imported lazily, only when a store is opened, so the
package works without the `postgres` extra."""

from graymatter_tui.backends.postgres.store import NoStoreYet, PgStore

__all__ = ["NoStoreYet", "PgStore"]
