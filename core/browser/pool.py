"""The browser pool: a cap on live browsers, warm-up, recycling, and one fresh context per task.

::

    async with BrowserPool(settings.pool, settings.browser, sessions=store) as pool:
        async with pool.task_context("shop-7") as tc:
            await tc.page.goto(...)          # the shop's saved session is already loaded

A task gets a fresh browser *context* (cookies, storage, cache of its own) in one of the pool's
browsers, loaded with its shop's saved session; when the task ends, whatever happened, the
session is saved back (encrypted) and the context closed. Browsers are the expensive part:

* at most ``max_browsers`` live at once, ``contexts_per_browser`` task contexts in each
  (:attr:`BrowserPool.capacity` is the product); ``warm`` of them start before work arrives;
* a browser is retired after ``tasks_per_browser`` tasks (bounds leaks in long-lived Chromium)
  or after ``idle_retire_s`` without work, while more than ``warm`` are alive;
* a browser that dies (crash, killed, OOM) is noticed through its ``disconnected`` event, a
  renderer crash through the page's ``crash`` event; the task using it gets
  :class:`~core.errors.BrowserCrashed` and the next task gets a new browser;
* every close has a timeout (``close_timeout_s``) and escalates: context, then browser, then the
  Playwright driver, then killing the browser's process tree. :meth:`BrowserPool.close` leaves
  no browser process and no temporary profile folder behind.

**Spare contexts** (``prewarm_contexts=True``). Measured on Chromium 156 (2 cores):
``new_context()`` alone takes ~5 ms but its first page ~150 ms, and a context created with a
storage state that holds local storage ~380 ms (Playwright opens a hidden page per origin). A
storage state can only be passed when a context is created, so a spare context made ahead of
time starts blank. The pool therefore keeps one spare context *with its page* per browser and
loads a session into it when it is handed out: cookies via ``context.add_cookies`` (~4 ms) and
local storage by visiting each origin on the spare page with every request fulfilled locally
and writing the items (~110 ms for one origin). The price: an extra renderer per browser (tens
of MB) that is made in the background while other tasks run, and a session applied that way
lacks nothing Playwright's own loader sets except IndexedDB (neither loader restores
sessionStorage). Off by default. A spare is made with the context options (a shop's profile)
of the browser's last task and handed only to a task with equal options;
:meth:`BrowserPool.prepare_context` makes one on demand (urgent work whose victim was chosen).
A spare also gets :attr:`BrowserPool.context_init_script` (the flow runner's record of opened
windows) before its page is made, so the task that takes it does not add the script itself:
one driver round trip less between the claim and the first step.

**Off the task's path** (#20). When a task ends, its session is read back and saved only when
it changed (an unchanged one costs no encryption and no disk sync), and its context is closed —
both in the background: the attempt ends (and is acknowledged) at once. The shop's next task
loads its session only after that save, and takes the state from memory when it comes right
after it; the closing context keeps its place in the browser until it is closed (the cap holds),
except for a task that takes a ready spare (which makes no new context).

The pieces around the pool live beside it: the protocols a browser library must meet
(:mod:`.base`), Chromium through Playwright and the process-tree kill (:mod:`.playwright`), the
shops' saved sessions (:mod:`.sessions`). What remains here, about 800 lines, is one
thing: :class:`BrowserPool`'s bookkeeping of browsers, contexts and spares, whose methods share
one lock-free state machine and read best together.

Why one module over 600 lines: what is left here is one class's bookkeeping (slots, warm
browsers, spares, retirement, crash handling) whose parts share its locks and counters;
protocols, launching/killing and sessions are in their own modules.
"""


from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any, Self

from ..clock import SYSTEM_CLOCK, Clock
from ..config import BrowserSettings, PoolSettings
from ..errors import BrowserCrashed, Refused, ShopFleetError
from ..profiles import ContextOptions
from .base import BrowserHandle, ContextHandle, Launcher
from .playwright import PlaywrightLauncher
from .sessions import SessionStore

log = logging.getLogger(__name__)

PhaseTimer = Callable[[str, float], None]
"""Told ``(phase, seconds)`` for each phase of a task's context: ``session_load``,
``acquire``, ``context``, ``page``, ``session_apply`` on the task's path; ``session_read``,
``session_save`` and ``close`` after it, in the background (benchmarks' per-phase breakdown)."""


def _canonical(state: dict[str, Any] | None) -> str:
    """A storage state as one comparable string: the same cookies and local storage give the
    same string whatever order the browser lists them in."""
    if not state:
        return "{}"
    cookies = sorted((c for c in state.get("cookies") or []),
                     key=lambda c: (str(c.get("domain")), str(c.get("path")),
                                    str(c.get("name"))))
    origins = sorted(
        ({"origin": o.get("origin"),
          "localStorage": sorted(o.get("localStorage") or [],
                                 key=lambda i: str(i.get("name")))}
         for o in state.get("origins") or [] if o.get("localStorage")),
        key=lambda o: str(o["origin"]))
    return json.dumps({"cookies": cookies, "origins": origins}, sort_keys=True,
                      separators=(",", ":"), default=str)


_HANDOFF_S = 10.0
"""How long after a task's session was read back its state is handed to the shop's next task
from memory; after that the next task reads the file."""

_LAUNCH_WAIT_S = 30.0
"""How long close() lets a browser that is starting finish starting (Playwright's own launch
timeout is 30 s), so that it can be closed and its profile removed."""


@dataclass(frozen=True)
class PoolStats:
    """A snapshot of the pool.

    Attributes:
        browsers_alive: browsers running now (including ones draining before retirement).
        contexts_alive: contexts open now for running tasks, and spares (a finished task's
            context being closed in the background is no longer counted).
        launched: browsers started since the pool opened.
        retired: browsers closed on purpose (task count, idle, wedged).
        crashed: browsers that went away on their own.
        tasks_served: task contexts handed out and finished, whatever their outcome.
    """

    browsers_alive: int
    contexts_alive: int
    launched: int
    retired: int
    crashed: int
    tasks_served: int


@dataclass(eq=False)
class _Browser:
    id: int
    handle: BrowserHandle
    last_used: float
    open: int = 0
    tasks: int = 0
    retiring: bool = False
    closing: bool = False
    dead: bool = False
    task_contexts: set[TaskContext] = field(default_factory=set)
    spare: _Spare | None = None
    spare_task: asyncio.Task[None] | None = None
    spare_options: ContextOptions | None = None
    """What the next spare is made with: the options of the last task opened here."""
    finishing: int = 0
    """Of ``open``: finished tasks' contexts being saved and closed in the background."""

    @property
    def usable(self) -> bool:
        return not (self.retiring or self.closing or self.dead)


@dataclass(eq=False)
class _Spare:
    """A context made ahead of a task, its page, and the options it was made with: it is
    handed only to a task whose options are equal."""

    handle: ContextHandle
    page: Any
    options: ContextOptions | None
    init_script: str | None = None
    """The :attr:`BrowserPool.context_init_script` the context runs (added when it was made)."""


@dataclass(eq=False)
class _Handoff:
    """A finished task's session on its way to the file, and then to the shop's next task."""

    saved: asyncio.Future[dict[str, Any] | None]
    """Resolved once saved (or found unchanged) with the state read back, None when not."""
    done_at: float | None = None

    def resolve(self, state: dict[str, Any] | None) -> None:
        if not self.saved.done():
            self.done_at = asyncio.get_running_loop().time()
            self.saved.set_result(state)


class TaskContext:
    """What a task holds inside :meth:`BrowserPool.task_context`.

    Attributes:
        shop: the shop this context belongs to.
        page: a fresh page in the fresh context.
        context: the library's context object (Playwright ``BrowserContext``).
        browser_id: which pool browser it runs in (for logs and events).
    """

    def __init__(self, shop: str, handle: ContextHandle, page: Any, browser_id: int,
                 options: ContextOptions | None = None) -> None:
        self.shop = shop
        self.options = options
        """What the context was made with (None: the browser's defaults)."""
        self.page = page
        self.context = handle.native
        self.browser_id = browser_id
        self._handle = handle
        self.crash_reason: str | None = None
        self.loaded = "{}"
        """The session it was given (canonical form): saved back only when it changed."""
        self.timer: PhaseTimer | None = None
        self.finished = False
        """The task is over; its session is being saved and the context closed."""
        self.init_script: str | None = None
        """A script every document of the context already runs (the pool's
        :attr:`~BrowserPool.context_init_script`, added when a spare was made ahead); None
        when the context was made for the task."""

    def _mark_crashed(self, reason: str) -> None:
        if self.crash_reason is None:
            self.crash_reason = reason


class BrowserPool:
    """Live browsers under a cap, and one fresh context per task. An async context manager.

    Args:
        pool: the ``[pool]`` settings.
        browser: the ``[browser]`` settings (used by the default Playwright launcher).
        launcher: what starts browsers (default: :class:`PlaywrightLauncher`).
        sessions: where shops' sessions are loaded from and saved to (None: not kept).
        clock: time for idle retirement.
        contexts_per_browser: task contexts one browser may hold at once (default: the
            settings' ``contexts_per_browser`` if present, else 1).
        prewarm_contexts: keep a spare context ready in each browser (see the module doc;
            default: the settings' ``prewarm_contexts`` if present, else off).
        spare_options: the options a new browser's first spare is made with (afterwards:
            those of the last task opened in it); a task gets a spare only when its shop's
            options equal the spare's (a shop with a profile of its own gets a context made
            for it, never one made with another shop's settings).
    """

    def __init__(self, pool: PoolSettings, browser: BrowserSettings, *,
                 launcher: Launcher | None = None, sessions: SessionStore | None = None,
                 clock: Clock = SYSTEM_CLOCK, contexts_per_browser: int | None = None,
                 prewarm_contexts: bool | None = None,
                 spare_options: ContextOptions | None = None) -> None:
        # The settings are the default; a keyword (benchmarks, tests) still wins.
        if contexts_per_browser is None:
            contexts_per_browser = pool.contexts_per_browser
        if prewarm_contexts is None:
            prewarm_contexts = pool.prewarm_contexts
        if contexts_per_browser < 1:
            raise ValueError("contexts_per_browser must be at least 1")
        self._cfg = pool
        self._launcher: Launcher = launcher or PlaywrightLauncher(
            browser, kill_timeout_s=pool.close_timeout_s)
        self._sessions = sessions
        self._clock = clock
        self.contexts_per_browser = contexts_per_browser
        self.prewarm_contexts = prewarm_contexts
        self.spare_options = spare_options
        self.context_init_script: str | None = None
        """A script added to every context made ahead (a spare), before its page, off the
        task's path: the flow runner's record of opened windows (set by the browser
        executor). A task given such a context learns it from ``TaskContext.init_script``."""
        self._browsers: list[_Browser] = []
        self._launching = 0
        self._ids = 0
        self._waiters: deque[asyncio.Future[None]] = deque()
        self._background: set[asyncio.Task[Any]] = set()
        self._janitor: asyncio.Task[None] | None = None
        self._started = False
        self._closing = False
        self._closed = False
        self._launched = 0
        self._retired = 0
        self._crashed = 0
        self._served = 0
        self._spares_alive = 0
        self._session_saves: dict[str, _Handoff] = {}
        """Per shop, the session save in flight: the shop's next task loads after it."""

    # ----------------------------------------------------------------- lifecycle

    @property
    def capacity(self) -> int:
        """How many task contexts may be open at once."""
        return self._cfg.max_browsers * self.contexts_per_browser

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def start(self) -> None:
        """Start the driver and ``warm`` browsers; they are ready when this returns.

        Raises:
            EnvironmentProblem: no browser could be started.
        """
        if self._started:
            return
        self._started = True
        try:
            await self._launcher.start()
            self._launching += self._cfg.warm
            launches = [self._launch() for _ in range(self._cfg.warm)]
            results = await asyncio.gather(*launches, return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException):
                    raise r
        except BaseException:
            await self.close()
            raise
        self._janitor = asyncio.create_task(self._janitor_loop(), name="pool-janitor")
        self._janitor.add_done_callback(self._janitor_done)

    async def close(self) -> None:
        """Close everything; no browser process or temporary profile is left behind.

        Escalates per browser: contexts, then the browser, then the driver, then killing the
        process tree; each step waits at most ``close_timeout_s``.
        """
        if self._closed:
            return
        self._closing = True
        self._wake()
        t = self._cfg.close_timeout_s
        if self._janitor is not None:
            self._janitor.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._janitor
        # Browsers still launching (a warm top-up after a crash) finish launching first: a
        # launch cancelled half-way leaves a browser and its temporary profile nobody knows
        # about. _launch sees _closing and retires what it started.
        launches = [b for b in self._background if not b.done() and b.get_name() == "pool-warm"]
        if launches:
            await asyncio.wait(launches, timeout=max(_LAUNCH_WAIT_S, 2 * t))
        # Finishing task contexts (saving sessions) get their chance first.
        pending = [b for b in self._background if not b.done()]
        if pending:
            _, late = await asyncio.wait(pending, timeout=2 * t)
            for task in late:
                task.cancel()
            if late:
                await asyncio.wait(late)
        browsers = list(self._browsers)
        for b in browsers:
            b.closing = True
        stuck = await asyncio.gather(*(self._close_politely(b) for b in browsers))
        if not await self._timed(self._launcher.stop(), t, "stopping the browser driver"):
            await self._timed(self._launcher.kill(), self._kill_bound(),
                              "killing the browser driver")
        # Kill is idempotent: it also reaps what a polite close left (temp profiles).
        await asyncio.gather(*(self._timed(b.handle.kill(), self._kill_bound(),
                                           f"killing browser {b.id}") for b in browsers))
        for b, was_stuck in zip(browsers, stuck, strict=True):
            if was_stuck:
                log.warning("browser %s did not close within %.1fs and was killed", b.id, t)
            self._forget(b)
        self._closed = True

    # ----------------------------------------------------------------- tasks

    @contextlib.asynccontextmanager
    async def task_context(self, shop: str, options: ContextOptions | None = None, *,
                           timer: PhaseTimer | None = None) -> AsyncIterator[TaskContext]:
        """A fresh context and page for one task of ``shop``, with its saved session, made
        with ``options`` (the shop's profile, see :func:`core.profiles.context_options_for`).

        On exit, whatever happened, the session is saved back (only when it changed) and the
        context closed — both in the background, off the task's path: the shop's next task
        loads its session only after that save, and the context keeps its place in the
        browser until it is closed (the cap holds).

        Args:
            shop: whose session the context gets.
            options: what the context is made with (the shop's profile; None: defaults); a
                spare context is used only when it was made with equal options.
            timer: told ``(phase, seconds)`` of each phase (see :data:`PhaseTimer`).

        Raises:
            BrowserCrashed: the browser or the page's renderer died while the task held it
                (raised from the task's own error, if any).
            Refused: the pool is closing.
            EnvironmentProblem: no browser could be started.
        """
        if not self._started or self._closing:
            raise Refused("the browser pool is not running")
        clock = time.perf_counter
        t0 = clock()
        state = await self._load_session(shop)
        t1 = clock()
        browser = await self._acquire(options)
        t2 = clock()
        if timer is not None:
            timer("session_load", t1 - t0)
            timer("acquire", t2 - t1)
        try:
            tc = await self._open(browser, shop, state, options, timer)
        except BaseException:
            browser.open -= 1
            self._after_release(browser)
            raise
        try:
            yield tc
        except Exception as exc:
            reason = self._crash_reason(browser, tc)
            self._finish_later(browser, tc)
            if reason is not None:
                raise BrowserCrashed(f"{reason} during the task of shop {shop!r}") from exc
            raise
        except BaseException:
            self._finish_later(browser, tc)
            raise
        reason = self._crash_reason(browser, tc)
        self._finish_later(browser, tc)
        if reason is not None:
            # The task's own code returned, but the browser went away under it: what it did
            # cannot be trusted to have reached the site.
            raise BrowserCrashed(f"{reason} during the task of shop {shop!r}")

    async def _load_session(self, shop: str) -> dict[str, Any] | None:
        """The shop's saved session, read after its previous task's save (if in flight).

        Straight after that task (a preempted holder's urgent successor, a busy shop's next
        task), the state it left is taken from memory: no file read, no decryption. Later,
        the file is the truth (a person's takeover may have replaced it)."""
        if self._sessions is None:
            return None
        pending = self._session_saves.get(shop)
        if pending is not None:
            # Never raises: _finish logs its own failures and resolves it.
            state = await asyncio.shield(pending.saved)
            if self._session_saves.get(shop) is pending:
                del self._session_saves[shop]
            if (state is not None and pending.done_at is not None
                    and asyncio.get_running_loop().time() - pending.done_at <= _HANDOFF_S):
                return state
        return await self._sessions.load(shop)

    def stats(self) -> PoolStats:
        """A snapshot of browsers, contexts and counters."""
        alive = [b for b in self._browsers if not b.dead]
        return PoolStats(
            browsers_alive=len(alive),
            contexts_alive=sum(1 for b in alive for tc in b.task_contexts if not tc.finished)
            + self._spares_alive,
            launched=self._launched,
            retired=self._retired,
            crashed=self._crashed,
            tasks_served=self._served,
        )

    # ----------------------------------------------------------------- internals

    def _spawn(self, coro: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(coro, name=name)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
        return task

    def _wake(self) -> None:
        while self._waiters:
            fut = self._waiters.popleft()
            if not fut.done():
                fut.set_result(None)

    def _kill_bound(self) -> float:
        """How long a kill may take: waiting for the process tree to die (``close_timeout_s``),
        then removing its profile folder (as long again), with room for a busy machine."""
        return 3 * self._cfg.close_timeout_s + 1.0

    async def _timed(self, aw: Awaitable[Any], timeout_s: float, what: str) -> bool:
        """Await with a timeout; False (logged) on timeout or error."""
        try:
            await asyncio.wait_for(aw, timeout_s)
            return True
        except TimeoutError:
            log.warning("%s took longer than %.1fs", what, timeout_s)
        except Exception as exc:
            log.debug("%s failed: %s", what, exc)
        return False

    def _crash_reason(self, browser: _Browser, tc: TaskContext) -> str | None:
        if tc.crash_reason is not None:
            return tc.crash_reason
        if browser.dead or not browser.handle.is_connected():
            return "the browser closed unexpectedly (crashed or was killed)"
        return None

    async def _launch(self, *, reserve: bool = False) -> _Browser:
        """Start a browser. The caller has already counted it in ``_launching``, in the same
        step as it checked the cap: counting it here, after an ``await``, would let two
        launches pass one free place."""
        try:
            handle = await self._launcher.launch()
        finally:
            self._launching -= 1
        self._ids += 1
        b = _Browser(self._ids, handle, last_used=self._clock.now(),
                     spare_options=self.spare_options)
        if reserve:
            b.open = 1
            self._count_task(b)
        self._launched += 1
        self._browsers.append(b)
        handle.on_disconnect(lambda: self._on_disconnect(b))
        log.info("browser %s started (pid %s)", b.id, handle.pid)
        if not reserve:
            self._prepare_spare(b)  # a warm browser comes with its first context ready
        if self._closing:
            # Raced with close(): it only knows the browsers it saw; close this one too.
            b.closing = True
            self._spawn(self._retire(b, "the pool is closing", count=False), "pool-retire")
        self._wake()
        return b

    def _count_task(self, b: _Browser) -> None:
        b.tasks += 1
        if b.tasks >= self._cfg.tasks_per_browser:
            b.retiring = True

    def _alive(self) -> list[_Browser]:
        return [b for b in self._browsers if not b.dead]

    async def _acquire(self, options: ContextOptions | None = None) -> _Browser:
        while True:
            if self._closing:
                raise Refused("the browser pool is closing")
            # A finished task's context closing in the background still holds its place,
            # unless a spare made for these options is ready: taking it makes no context.
            usable = [b for b in self._browsers if b.usable and (
                b.open < self.contexts_per_browser
                or (b.open - b.finishing < self.contexts_per_browser
                    and self._spare_fits(b, options)))]
            if usable:
                # Fewest open contexts first (spread the load); then one with a spare ready
                # for these options.
                b = min(usable, key=lambda x: (x.open - x.finishing,
                                               not self._spare_fits(x, options), x.id))
                b.open += 1
                self._count_task(b)
                return b
            if len(self._alive()) + self._launching < self._cfg.max_browsers:
                self._launching += 1
                return await self._launch(reserve=True)
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._waiters.append(fut)
            try:
                await fut
            finally:
                with contextlib.suppress(ValueError):
                    self._waiters.remove(fut)

    @staticmethod
    def _spare_fits(b: _Browser, options: ContextOptions | None) -> bool:
        return b.spare is not None and b.spare.options == options

    async def _open(self, b: _Browser, shop: str, state: dict[str, Any] | None,
                    options: ContextOptions | None, timer: PhaseTimer | None) -> TaskContext:
        timeout = self._cfg.step_timeout_s
        clock = time.perf_counter
        try:
            # A spare made with other options (another shop's profile) is never used: the
            # task would run with the wrong proxy, locale or user agent.
            spare = self._take_spare(b) if self._spare_fits(b, options) else None
            script: str | None = None
            if spare is not None:
                handle, page, script = spare.handle, spare.page, spare.init_script
                t0 = clock()
                try:
                    if state:
                        await asyncio.wait_for(handle.apply_storage_state(state, page), timeout)
                except BaseException:
                    self._spawn(self._close_context(b, handle), "pool-close-spare")
                    raise
                if timer is not None:
                    timer("session_apply", clock() - t0)
            else:
                t0 = clock()
                handle = await asyncio.wait_for(b.handle.new_context(state, options), timeout)
                t1 = clock()
                try:
                    page = await asyncio.wait_for(handle.new_page(), timeout)
                except BaseException:
                    self._spawn(self._close_context(b, handle), "pool-close-context")
                    raise
                if timer is not None:
                    timer("context", t1 - t0)
                    timer("page", clock() - t1)
        except TimeoutError:
            self._retire_soon(b, "wedged: a context took too long to open")
            raise BrowserCrashed(
                f"browser {b.id} did not open a context within {timeout:g}s") from None
        except (ShopFleetError, asyncio.CancelledError):
            raise
        except Exception as exc:
            if b.dead or not b.handle.is_connected():
                raise BrowserCrashed(
                    f"the browser closed unexpectedly while opening a context: {exc}") from exc
            self._retire_soon(b, f"could not open a context: {exc}")
            raise BrowserCrashed(f"browser {b.id} could not open a context: {exc}") from exc
        tc = TaskContext(shop, handle, page, b.id, options)
        tc.init_script = script
        tc.loaded = _canonical(state)
        tc.timer = timer
        page.on("crash", lambda *_: tc._mark_crashed("the page's renderer crashed"))
        b.task_contexts.add(tc)
        # Prepare the next task's context now, while this task runs: made after the release
        # instead, it is never ready when a busy queue hands out the next task at once. It
        # is made with this task's options (the likeliest options of this browser's next).
        b.spare_options = options
        self._prepare_spare(b)
        if b.dead:
            tc._mark_crashed("the browser closed unexpectedly (crashed or was killed)")
        return tc

    def _finish_later(self, b: _Browser, tc: TaskContext) -> None:
        """Save the session and close the context in the background (also when the task is
        cancelled, e.g. preempted): the task's attempt ends without waiting for either."""
        self._served += 1  # the task is over; what follows is the pool's housekeeping
        tc.finished = True
        b.finishing += 1
        saved = _Handoff(asyncio.get_running_loop().create_future())
        if self._sessions is not None:
            # The shop's next task loads its session once this one's is saved (not closed);
            # the entry stays until then (or the shop's next finish replaces it).
            self._session_saves[tc.shop] = saved
        self._spawn(self._finish(b, tc, saved), "pool-finish")
        self._wake()  # a task waiting for a browser with a spare may go now

    async def _finish(self, b: _Browser, tc: TaskContext, saved: _Handoff) -> None:
        t = self._cfg.close_timeout_s
        clock = time.perf_counter
        timer = tc.timer
        handoff: dict[str, Any] | None = None
        try:
            if self._sessions is not None and self._crash_reason(b, tc) is None:
                try:
                    t0 = clock()
                    state = await asyncio.wait_for(tc._handle.storage_state(), t)
                    t1 = clock()
                    if timer is not None:
                        timer("session_read", t1 - t0)
                    # Saved only when it changed: an unchanged session costs no encryption
                    # and no disk sync.
                    if _canonical(state) != tc.loaded:
                        await self._sessions.save(tc.shop, state)
                        if timer is not None:
                            timer("session_save", clock() - t1)
                    handoff = state
                except Exception as exc:
                    log.warning("session of shop %r was not saved: %s", tc.shop, exc)
            saved.resolve(handoff)
            t0 = clock()
            closed = b.dead or await self._timed(
                tc._handle.close(), t, f"closing a context of browser {b.id}")
            if timer is not None:
                timer("close", clock() - t0)
            if not closed and not b.dead and b.handle.is_connected():
                self._retire_soon(b, "wedged: a context did not close")
        finally:
            saved.resolve(None)
            b.task_contexts.discard(tc)
            b.finishing -= 1
            b.open -= 1
            self._after_release(b)

    def _after_release(self, b: _Browser) -> None:
        b.last_used = self._clock.now()
        if b.dead:
            if not b.task_contexts:
                self._forget(b)
        elif b.retiring and b.open == 0 and not (b.closing or b.dead):
            self._retire_soon(b, f"served {b.tasks} tasks")
        else:
            self._prepare_spare(b)
        self._wake()

    def prepare_context(self, options: ContextOptions | None = None) -> None:
        """Have a context ready for a task about to come (an urgent task whose victim was
        just chosen), in the browser it will get: a spare made for ``options`` in the
        background, even with ``prewarm_contexts`` off. Returns at once."""
        if self._closing or not self._started:
            return
        usable = [b for b in self._browsers if b.usable]
        if not usable:
            return
        b = min(usable, key=lambda x: (x.open - x.finishing, x.id))
        if self._spare_fits(b, options) or b.spare_task is not None:
            return
        b.spare_options = options
        self._prepare_spare(b, always=True)

    def _prepare_spare(self, b: _Browser, *, always: bool = False) -> None:
        if not ((self.prewarm_contexts or always) and b.usable and b.spare_task is None):
            return
        if b.spare is not None:
            if b.spare.options == b.spare_options:
                return
            # Made for other options than this browser's tasks now use: replace it.
            stale = self._take_spare(b)
            assert stale is not None
            self._spawn(self._close_context(b, stale.handle), "pool-close-spare")
        b.spare_task = self._spawn(self._make_spare(b), "pool-spare")

    def _take_spare(self, b: _Browser) -> _Spare | None:
        spare, b.spare = b.spare, None
        if spare is not None:
            self._spares_alive -= 1
        return spare

    async def _make_spare(self, b: _Browser) -> None:
        options = b.spare_options
        script = self.context_init_script
        try:
            handle = await asyncio.wait_for(b.handle.new_context(None, options),
                                            self._cfg.step_timeout_s)
            try:
                add = getattr(handle, "add_init_script", None)
                if script is not None and add is not None:
                    try:
                        await asyncio.wait_for(add(script), self._cfg.step_timeout_s)
                    except Exception:
                        script = None  # the runner adds it to the page itself, as without
                else:
                    script = None
                page = await asyncio.wait_for(handle.new_page(), self._cfg.step_timeout_s)
            except BaseException:
                await self._timed(handle.close(), self._cfg.close_timeout_s, "closing a spare")
                raise
        except Exception as exc:
            log.debug("spare context for browser %s not made: %s", b.id, exc)
            return
        finally:
            b.spare_task = None
        if b.usable and b.spare is None:
            b.spare = _Spare(handle, page, options, script)
            self._spares_alive += 1
            self._wake()  # a task waiting for a browser whose last context is closing
        else:
            await self._close_context(b, handle)
        if b.usable and b.spare is not None and b.spare.options != b.spare_options:
            self._prepare_spare(b)  # the browser's tasks changed options meanwhile

    async def _close_context(self, b: _Browser, handle: ContextHandle) -> None:
        if not b.dead:
            await self._timed(handle.close(), self._cfg.close_timeout_s,
                              f"closing a context of browser {b.id}")

    def _on_disconnect(self, b: _Browser) -> None:
        if b.dead:
            return
        b.dead = True
        if b.spare is not None:
            b.spare = None
            self._spares_alive -= 1
        for tc in b.task_contexts:
            tc._mark_crashed("the browser closed unexpectedly (crashed or was killed)")
        if not b.closing:
            self._crashed += 1
            log.warning("browser %s (pid %s) went away unexpectedly", b.id, b.handle.pid)
            # Reap what is left of it (child processes, temp profile), then forget it.
            self._spawn(self._reap(b), "pool-reap")
            self._ensure_warm()
        self._wake()

    async def _reap(self, b: _Browser) -> None:
        await self._timed(b.handle.kill(), self._kill_bound(), f"reaping browser {b.id}")
        if not b.task_contexts:
            self._forget(b)

    def _forget(self, b: _Browser) -> None:
        b.dead = True
        if b.spare is not None:
            b.spare = None
            self._spares_alive -= 1
        with contextlib.suppress(ValueError):
            self._browsers.remove(b)
        self._wake()

    def _retire_soon(self, b: _Browser, why: str) -> None:
        b.retiring = True
        if b.open == 0 and not (b.closing or b.dead):
            b.closing = True
            self._spawn(self._retire(b, why), "pool-retire")

    async def _retire(self, b: _Browser, why: str, *, count: bool = True) -> None:
        log.info("retiring browser %s: %s", b.id, why)
        stuck = await self._close_politely(b)
        if stuck:
            await self._timed(b.handle.kill(), self._kill_bound(), f"killing browser {b.id}")
        if count:
            self._retired += 1
        self._forget(b)
        self._ensure_warm()

    async def _close_politely(self, b: _Browser) -> bool:
        """Close spare, task contexts and the browser; True when something hung or failed."""
        b.closing = True
        t = self._cfg.close_timeout_s
        if b.spare_task is not None:
            b.spare_task.cancel()
        contexts = [tc._handle for tc in b.task_contexts]
        spare = self._take_spare(b)
        if spare is not None:
            contexts.append(spare.handle)
        ok = True
        if not b.dead:
            results = await asyncio.gather(
                *(self._timed(c.close(), t, f"closing a context of browser {b.id}")
                  for c in contexts))
            ok = all(results)
        if not b.dead:
            ok = await self._timed(b.handle.close(), t, f"closing browser {b.id}") and ok
        return not ok

    def _ensure_warm(self) -> None:
        if self._closing:
            return
        ready = sum(1 for b in self._browsers if b.usable) + self._launching
        room = self._cfg.max_browsers - len(self._alive()) - self._launching
        for _ in range(max(0, min(self._cfg.warm - ready, room))):
            self._launching += 1
            self._spawn(self._launch_warm(), "pool-warm")

    async def _launch_warm(self) -> None:
        try:
            await self._launch()
        except Exception as exc:
            log.warning("could not start a warm browser: %s", exc)

    async def _janitor_loop(self) -> None:
        idle_s = self._cfg.idle_retire_s
        while True:
            now = self._clock.now()
            idle = sorted((b for b in self._browsers if b.usable and b.open == 0),
                          key=lambda b: b.last_used)
            excess = sum(1 for b in self._browsers if b.usable) - self._cfg.warm
            next_check = now + idle_s
            for b in idle:
                if excess <= 0:
                    break
                if now - b.last_used >= idle_s:
                    self._retire_soon(b, f"idle for {now - b.last_used:.0f}s")
                    excess -= 1
                else:
                    next_check = min(next_check, b.last_used + idle_s)
            await self._clock.sleep(max(next_check - now, 0.001))

    def _janitor_done(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        exc = task.exception()
        if exc is not None:
            log.error("the browser pool's janitor died; idle browsers will not be retired",
                      exc_info=exc)
