"""Deep integrity check of a store, meant to run in a child process.

Some corrupt LMDB files crash the reading process with SIGBUS or an assertion instead of
raising, so `doctor` runs this walker in a subprocess and reports a crash as corruption:
`python -m graymatter_tui.backends.lmdb.verify DIR` prints one JSON line and exits 0 when every
table and every value decodes.
"""

from __future__ import annotations

import sys

import msgspec

from graymatter_tui.backends.lmdb.store import LmdbStore
from graymatter_tui.backends.lmdb.tx import Tx
from graymatter_tui.core.errors import GraymatterError
from graymatter_tui.storage.codec import decode_fact, decode_proposal, decode_record


def verify(path: str) -> dict[str, object]:
    store = LmdbStore.open(path, read_only=True)
    counts: dict[str, int] = {}

    def walk(tx: Tx) -> None:
        for name, values in tx.raw_tables():
            n = 0
            for value in values:
                if name == "facts":
                    decode_fact(value)
                elif name == "journal":
                    decode_record(value)
                elif name == "proposals":
                    decode_proposal(value)
                n += 1
            counts[name] = n

    store.read(walk)
    store.close()
    return {"ok": True, "tables": counts}


def main() -> None:
    try:
        result = verify(sys.argv[1])
    except (GraymatterError, msgspec.DecodeError, msgspec.ValidationError) as exc:
        print(msgspec.json.encode({"ok": False, "error": str(exc)}).decode())
        sys.exit(1)
    print(msgspec.json.encode(result).decode())


if __name__ == "__main__":
    main()
