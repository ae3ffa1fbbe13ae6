"""The app knows when a person's keys pause: its embedder loads the model then (its
import holds the interpreter's lock, which a key's frame would wait for)."""

from __future__ import annotations

import time

from graymatter_tui.backends.lmdb import LmdbStore
from graymatter_tui.tui.app import QUIET_INPUT_SECONDS
from tests.tui.helpers import make_app, running


async def test_a_key_or_a_click_is_noted_and_the_keys_pause_after_a_moment(
    demo_store: LmdbStore,
) -> None:
    app = make_app(demo_store)
    async with running(app) as pilot:
        assert app.last_input_at == 0.0 and app._no_recent_input()  # nothing typed yet
        before = time.monotonic()
        await pilot.press("2")
        pressed = app.last_input_at
        assert pressed >= before
        await pilot.pause(QUIET_INPUT_SECONDS + 0.05)
        assert app._no_recent_input()
        await pilot.click("#topbar")
        assert app.last_input_at > pressed
