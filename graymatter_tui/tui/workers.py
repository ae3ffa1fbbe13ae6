"""Running a blocking call off the event loop when the app cannot wait for it forever."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable


async def in_daemon_thread(fn: Callable[[], object], timeout: float) -> str:
    """Run `fn` in a daemon thread and wait at most `timeout` seconds; "" when it
    finished, else what went wrong. A daemon thread, unlike the loop's executor, does
    not hold the process open at exit if the call is still blocked (on a lock another
    process holds)."""
    loop = asyncio.get_running_loop()
    finished = asyncio.Event()
    failure: list[str] = []

    def run() -> None:
        try:
            fn()
        except Exception as exc:
            failure.append(str(exc) or type(exc).__name__)
        finally:
            loop.call_soon_threadsafe(finished.set)

    threading.Thread(target=run, name="closing-write", daemon=True).start()
    try:
        await asyncio.wait_for(finished.wait(), timeout)
    except TimeoutError:
        return f"still waiting after {timeout:g} s"
    return failure[0] if failure else ""
