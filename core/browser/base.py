"""What the pool needs from a browser library: three small protocols.

:class:`Launcher` starts browsers, :class:`BrowserHandle` is one browser process,
:class:`ContextHandle` one browser context. The Playwright implementation is in
:mod:`.playwright`, the scripted fake for unit tests in :mod:`.fake`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ..profiles import ContextOptions

class ContextHandle(Protocol):
    """One browser context, as the pool needs it."""

    @property
    def native(self) -> Any:
        """The library's own context object (Playwright's ``BrowserContext``), for flows."""
        ...

    async def new_page(self) -> Any:
        """A new page (Playwright ``Page``-like: ``goto``, ``close``, ``on``...)."""
        ...

    async def storage_state(self) -> dict[str, Any]:
        """Cookies and local storage, in Playwright's storage-state shape."""
        ...

    async def apply_storage_state(self, state: dict[str, Any], page: Any) -> None:
        """Load a saved session into this already made context, using ``page`` if needed."""
        ...

    async def close(self) -> None: ...


class BrowserHandle(Protocol):
    """One browser process."""

    @property
    def pid(self) -> int | None:
        """The browser's main process id, when known."""
        ...

    def is_connected(self) -> bool: ...

    def on_disconnect(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` (once, on the event loop) when the browser goes away."""
        ...

    async def new_context(self, storage_state: dict[str, Any] | None,
                          options: ContextOptions | None = None) -> ContextHandle:
        """A fresh context with ``storage_state``, made with ``options`` (a shop's profile:
        proxy, locale, time zone, …; None: the browser's defaults)."""
        ...

    async def close(self) -> None:
        """Close politely (may hang: the pool times it out)."""
        ...

    async def kill(self) -> None:
        """Last resort: kill the process tree and remove its temporary profile. Idempotent."""
        ...


class Launcher(Protocol):
    """Starts browsers. ``start`` once before any ``launch``; ``stop`` (or ``kill``) at the end."""

    async def start(self) -> None: ...

    async def launch(self) -> BrowserHandle: ...

    async def stop(self) -> None:
        """Stop the driver (takes any browser still alive down with it; may hang)."""
        ...

    async def kill(self) -> None:
        """Last resort after a ``stop`` that hung: kill the driver and every browser."""
        ...
