"""When a PostgreSQL transaction may run again, and how a lost COMMIT is resolved (ADR 0047).

A transaction is re-run, a bounded number of times with a short jittered back-off, only
when the server guarantees it left no trace: it reported a serialization failure (40001)
or a deadlock (40P01), or the connection broke before COMMIT was sent. A connection
that breaks while COMMIT is on the wire leaves the outcome unknown to the client, so
it is never simply re-run (that could write twice): the server is asked, on a fresh
connection, what became of the transaction's id (`pg_xact_status`), and the answer
decides: committed is success, aborted may run again, anything else is reported.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any

TRIES = 5
FIRST_DELAY = 0.01  # seconds before the second try; doubled each try, jittered ±50 %
MAX_DELAY = 0.4
MIN_SERVER_VERSION = 130000  # pg_current_xact_id() and pg_xact_status(xid8)
RESOLVE_FOR = 5.0  # seconds to wait for a transaction the server still shows in progress

# SQLSTATEs after which the server has rolled the whole transaction back.
RETRYABLE = {
    "40001": "a serialization failure (SQLSTATE 40001)",
    "40P01": "a deadlock (SQLSTATE 40P01)",
}
LOST = "a lost connection"


@dataclass
class Attempt:
    """What one run of a transaction got as far as: its transaction id once known, and
    whether COMMIT had been sent (`committing`, with the result the commit would return)."""

    xid: str | None = None
    committing: bool = False
    result: Any = None
    lost: bool = False


def delay(tries_done: int) -> float:
    """The pause before try `tries_done + 1`: jittered so retrying writers spread out."""
    base = min(MAX_DELAY, FIRST_DELAY * 2.0 ** (tries_done - 1))
    return base * random.uniform(0.5, 1.5)


def retry_cause(exc: BaseException, attempt: Attempt) -> str | None:
    """Why the transaction may safely run again, or None when it may not (as it stands:
    a broken COMMIT is resolved by `commit_status` first)."""
    state = getattr(exc, "sqlstate", None)
    if state in RETRYABLE:
        return RETRYABLE[state]
    if attempt.lost and not attempt.committing:
        return LOST
    return None


def commit_status(conn: Any, xid: str, *, wait: float = RESOLVE_FOR) -> str | None:
    """'committed' or 'aborted' for transaction `xid`, asked over `conn` (autocommit);
    None when the server cannot say within `wait` seconds (still in progress, or an id
    it no longer knows, as after a crash that lost the commit's log record)."""
    deadline = time.monotonic() + wait
    while True:
        row = conn.execute("SELECT pg_xact_status(%s::xid8)", (xid,)).fetchone()
        status = row[0] if row else None
        if status in ("committed", "aborted"):
            return str(status)
        if status != "in progress" or time.monotonic() >= deadline:
            return None
        time.sleep(0.02)
