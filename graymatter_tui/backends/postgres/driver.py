"""psycopg, imported only when a PostgreSQL store is opened: LMDB users install nothing
more, and get a clear message if they name a PostgreSQL URL without the extra."""

from __future__ import annotations

from types import ModuleType

from graymatter_tui.core.errors import StoreError

INSTALL_HINT = (
    "the PostgreSQL backend needs psycopg: install graymatter-tui[postgres] "
    "(pip install 'graymatter-tui[postgres]')"
)


def psycopg_modules() -> tuple[ModuleType, ModuleType]:
    """(psycopg, psycopg_pool); StoreError naming the extra when either is missing."""
    try:
        import psycopg
        import psycopg_pool
    except ImportError:
        raise StoreError(INSTALL_HINT) from None
    return psycopg, psycopg_pool
