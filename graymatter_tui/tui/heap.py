"""The app's start-up objects kept out of the cycle collector's full passes.

A full (generation 2) collection walks every object the process holds: with Textual's
widgets, styles and modules in memory that is 60–130 ms on the event loop, at random
moments (a tab switch, a key), which is the longest stall a person sees (ADR 0068).
`gc.freeze()` moves what exists once the app has mounted into a permanent generation that
those passes skip; what the app allocates later is still collected as before. Unfrozen when
the app ends, so a process that runs several apps (the tests) collects what each left.
"""

from __future__ import annotations

import gc


class StartupHeap:
    def __init__(self) -> None:
        self.frozen = False

    def freeze(self) -> None:
        if not self.frozen:
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
