"""Running blocking calls off the event loop: every store read the TUI makes (`off_thread`)
and the writes quitting must wait for, but not forever (`in_daemon_thread`).

The UI thread never waits on the store: a read runs in a thread worker and what it found is
applied back on the UI thread. A newer read of the same group supersedes one in flight (its
result is dropped, never drawn over the newer one's)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

from textual.dom import DOMNode
from textual.worker import Worker, get_current_worker

from graymatter_tui.core.errors import GraymatterError

T = TypeVar("T")


def off_thread(
    node: DOMNode,
    job: Callable[[], T],
    then: Callable[[T], None],
    failed: Callable[[GraymatterError], None],
    *,
    group: str,
    exclusive: bool = True,
) -> Worker[None]:
    """Run `job` (a store read: no widget may be touched there) in a thread worker of
    `node`, then `then(result)` on the UI thread, or `failed(error)` when it raised a
    GraymatterError. With `exclusive`, a later call in the same group supersedes this one.
    Any other exception is a bug, raised on the UI thread as a handler's would be."""
    app = node.app

    def work() -> None:
        worker = get_current_worker()
        if worker.is_cancelled:  # superseded before it began: read nothing
            return
        found: list[T] = []
        error: GraymatterError | None = None
        bug: Exception | None = None
        try:
            found.append(job())
        except GraymatterError as exc:
            error = exc
        except Exception as exc:
            bug = exc

        def apply() -> None:
            # On the UI thread, where supersession happens: a newer read has cancelled this.
            if worker.is_cancelled or app._exit or not node.is_attached:
                return  # superseded, or the app is closing: nothing to draw on
            try:
                if bug is not None:
                    raise bug
                if error is not None:
                    failed(error)
                else:
                    then(found[0])
            except Exception as exc:
                app._handle_exception(exc)  # what Textual does with a handler's exception

        if worker.is_cancelled:
            return
        try:
            app.call_from_thread(apply)
        except RuntimeError:  # the app closed meanwhile: nothing to draw on
            return

    return node.run_worker(
        work, thread=True, group=group, exclusive=exclusive, exit_on_error=False, name=group
    )


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
