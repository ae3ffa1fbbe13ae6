"""The palette's Export writes by the same rules as `export --out` (graymatter_tui/output_file.py):
one set of modes, write through or refuse, never replace a node, and a failed write says so."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.exchange import transfer as exchange
from tests.tui.helpers import export_via_palette

pytestmark = pytest.mark.usefixtures("clean_graymatter_env")


def succeeded(notes: list[tuple[str, str]], target: Path) -> None:
    assert ("information", f"exported to {target}") in notes, notes
    assert not [n for n in notes if n[0] == "error"], notes


def failed(notes: list[tuple[str, str]], *needles: str) -> str:
    errors = [message for severity, message in notes if severity == "error"]
    assert len(errors) == 1, notes
    for needle in needles:
        assert needle in errors[0], errors[0]
    assert not any(message.startswith("exported") for _, message in notes), notes
    return errors[0]


async def test_a_new_file_gets_the_same_mode_as_from_the_cli(
    demo_store: LmdbStore, tmp_path: Path
) -> None:
    target = tmp_path / "new.jsonl"
    old_umask = os.umask(0o022)
    try:
        notes = await export_via_palette(demo_store, target)
    finally:
        os.umask(old_umask)
    succeeded(notes, target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert target.read_bytes() == exchange.export_bytes(demo_store)


async def test_an_existing_file_keeps_its_mode(demo_store: LmdbStore, tmp_path: Path) -> None:
    target = tmp_path / "old.jsonl"
    target.write_bytes(b"old\n")
    target.chmod(0o640)
    succeeded(await export_via_palette(demo_store, target), target)
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert target.read_bytes() == exchange.export_bytes(demo_store)


async def test_a_fifo_without_a_reader_is_refused_not_waited_on(
    demo_store: LmdbStore, tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    failed(await export_via_palette(demo_store, fifo), "no reader")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


async def test_a_full_device_is_an_error_and_stays_a_device(
    demo_store: LmdbStore, tmp_path: Path
) -> None:
    full = tmp_path / "full"
    try:
        os.mknod(full, stat.S_IFCHR | 0o666, os.makedev(1, 7))
    except PermissionError:
        pytest.skip("mknod is not permitted here (needed for a private device node)")
    failed(await export_via_palette(demo_store, full), "No space left on device")
    assert stat.S_ISCHR(os.lstat(full).st_mode)
    assert os.lstat(full).st_rdev == os.makedev(1, 7)


async def test_the_stores_own_file_is_refused(demo_store: LmdbStore) -> None:
    data = demo_store.path / "data.mdb"
    before = data.read_bytes()
    failed(await export_via_palette(demo_store, data), "store's own files")
    assert data.read_bytes() == before
