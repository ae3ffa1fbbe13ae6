"""A pane mounted just after the first frame, as Textual's `Lazy` mounts it, but not once
the app has begun to close: `Lazy` mounts from a callback after the next refresh, and a
quit in that moment (a `q` typed as the app starts) had it mount into a tab already torn
down, which raised MountError and printed a traceback on the way out."""

from __future__ import annotations

from textual.lazy import Lazy
from textual.widget import Widget


class LazyPane(Lazy):
    async def mount_composed_widgets(self, widgets: list[Widget]) -> None:
        parent = self.parent
        if not isinstance(parent, Widget):
            return

        async def mount() -> None:
            # What Widget.mount refuses, asked first: the tab is being torn down.
            if parent._closing or parent._pruning or not parent.is_attached:
                return
            await parent.mount(self._replace_widget, after=self)
            await self.remove()

        self.call_after_refresh(mount)
