"""What this user may do with a store's directory and files, said exactly (for `doctor`).

`os.access` answers for the real user, root included: root may use a directory of mode 000,
but its owner may not, so a mode that locks out its own owner is a warning even for root.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from graymatter_tui.backends.lmdb.files import DATA_FILE, LOCK_FILE

Check = tuple[str, str, str]  # (name, "ok" | "warn" | "fail", detail)
_RANK = {"ok": 0, "warn": 1, "fail": 2}


def _who(st: os.stat_result) -> str:
    return f"mode {stat.S_IMODE(st.st_mode):03o}, owner uid {st.st_uid}"


def _read_only_mount(path: Path) -> bool:
    try:
        return bool(os.statvfs(path).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _missing(granted: int, wanted: dict[int, str]) -> str:
    """The words of `wanted` whose permission bit `granted` lacks ("read/write")."""
    return "/".join(word for bit, word in wanted.items() if not granted & bit)


def directory_check(path: Path) -> Check:
    try:
        st = path.stat()
    except FileNotFoundError:
        return ("data_dir", "fail", f"{path} does not exist")
    except OSError as exc:
        return ("data_dir", "fail", f"{path}: {exc.strerror or exc}")
    if not stat.S_ISDIR(st.st_mode):
        return ("data_dir", "fail", f"{path} is not a directory")
    mode, where = stat.S_IMODE(st.st_mode), f"{path} ({_who(st)})"
    me = f"this user (uid {os.geteuid()})"
    if not os.access(path, os.R_OK | os.X_OK):
        needs = ((os.R_OK, "list"), (os.X_OK, "enter"))
        cannot = " or ".join(word for bit, word in needs if not os.access(path, bit))
        return ("data_dir", "fail", f"{where}: {me} cannot {cannot} it, so cannot read the store")
    if _read_only_mount(path):
        return ("data_dir", "warn", f"{where}: on a read-only file system; reading only")
    if not os.access(path, os.W_OK):
        return ("data_dir", "warn", f"{where}: read-only for {me}; reading works, writing not")
    owner = _missing(mode >> 6, {4: "read", 2: "write", 1: "enter"})
    if owner:
        return (
            "data_dir",
            "warn",
            f"{where}: its owner may not {owner} it; only root can use it as it is; use 0700",
        )
    if mode & 0o077:
        return ("data_dir", "warn", f"{where}: others can read it, use 0700")
    return ("data_dir", "ok", f"{path} (mode {mode:03o})")


def _file_check(path: Path) -> tuple[str, str]:
    """(status, detail) of one store file that exists."""
    st = path.stat()
    name, mode = path.name, stat.S_IMODE(st.st_mode)
    where = f"{name} ({_who(st)})"
    if not os.access(path, os.R_OK):
        return "fail", f"{where}: this user (uid {os.geteuid()}) cannot read it"
    if _read_only_mount(path) or not os.access(path, os.W_OK):
        extra = (
            "; readers go without LMDB's reader lock, so a writer meanwhile could make "
            "what they show inconsistent"
            if name == LOCK_FILE
            else ""
        )
        return "warn", f"{where}: read-only for this user{extra}"
    owner = _missing(mode >> 6, {4: "read", 2: "write"})
    if owner:
        return "warn", f"{where}: its owner may not {owner} it; use 0600"
    if mode & 0o077:
        return "warn", f"{where}: others can read it, use 0600"
    return "ok", f"{name} (mode {mode:03o})"


def files_check(directory: Path) -> Check:
    data = directory / DATA_FILE
    if not data.exists():
        return ("files", "fail", f"no {DATA_FILE} in {directory}: there is no store here yet")
    found = [_file_check(data)]
    if (directory / LOCK_FILE).exists():
        found.append(_file_check(directory / LOCK_FILE))
    worst = max((status for status, _ in found), key=_RANK.__getitem__)
    return ("files", worst, "; ".join(detail for _, detail in found))
