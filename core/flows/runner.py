"""The step runner: plays a flow in a page, with checkpoints, preemption points and evidence.

:func:`run_flow` runs the steps in order. Around each step:

* **Checkpoints.** Before a write step acts, a checkpoint with ``write_in_flight=i`` is saved
  (and awaited, so it is durable before the click). After every step a checkpoint with
  ``next_step=i+1`` and the results so far is saved; a finished write moves from in flight to
  ``writes_done`` in that same save.
* **Resume.** Given a checkpoint, the runner opens the flow's ``start_url``, replays the
  completed *read* steps to rebuild the page (``extract``, ``assert_text`` and ``screenshot``
  are not replayed: they do not change the page), never replays a write step, and goes on at
  ``next_step``. A write that was in flight has an unknown outcome: when the step declares
  ``verify`` and it holds, the write counts as done; when ``verify`` does not hold, the step is
  run again; without ``verify`` the run stops with :class:`NeedsHuman`.
* **Preemption.** ``should_yield()`` is asked at each step boundary (also before the first);
  when it says yes and the next step is interruptible, the run stops and returns
  ``RunResult(status="yielded")`` with a checkpoint that has been saved.
* **Rate gate.** ``before_network(url)`` is awaited before each step that makes the page talk
  to the site: ``navigate`` (with the target URL; also the opening of ``start_url``),
  ``click``, ``upload_file`` and ``press_key`` of Enter (with the page's current URL).
  ``type_text``, ``select_option``, ``wait_element``, ``extract``, ``assert_text`` and
  ``screenshot`` stay in the page and are not gated. Time spent in the gate or saving a
  checkpoint does not count against the step's timeout.
* **Failures** raise :mod:`core.errors` types with ``.step`` (``None`` while opening
  ``start_url``) and ``.evidence`` (file paths, see :mod:`core.flows.evidence`):

  - the page crashed or the browser went away → :class:`BrowserCrashed`;
  - the main frame shows a document served with 429, or 503 with ``Retry-After`` →
    :class:`RateLimited`; any other 5xx → :class:`SiteFailed`; a network error on navigate →
    :class:`SiteFailed`;
  - the page shows a human marker (CAPTCHA, login error) → :class:`NeedsHuman` (checked after
    every gated step and after a failing step);
  - a locator matched nothing in time, or an assertion failed → :class:`PageChanged`;
  - a navigation timed out, an element did not disappear, or a step wedged past its timeout
    → :class:`StepTimeout`.

* **Trust boundary.** Every URL is resolved with percent-encoded values and checked against
  the shop's :class:`~core.origins.OriginPolicy` before it is loaded; before and after every
  step the main frame and every frame must show a page of an allowed origin (``about:blank``
  only as a transient), a frame navigation or a popup to a foreign origin is noted as it
  happens, and popups are closed. A foreign page stops the run with :class:`OriginBlocked`.
  ``{shop.username}``/``{shop.password}`` are typed only on the shop's login origin (checked
  on the frame of the element the locator resolved to, right before the fill), the password
  only into an ``<input type=password>``; otherwise :class:`CredentialBlocked` and nothing is
  typed. Results, step errors and evidence are redacted in every encoding of the password,
  and screenshots mask password inputs and every field a credential went into.

The runner uses a deliberately small part of Playwright's async ``Page`` (``goto``, ``url``,
``locator(...)`` with ``first``/``nth``/``filter`` and ``click``/``fill``/``select_option``/
``set_input_files``/``wait_for``/``inner_text``/``get_attribute``/``all_inner_texts``/
``is_visible``/``count``/``press``, ``keyboard.press``, ``wait_for_load_state``,
``screenshot``, ``content``, ``on``, ``remove_listener``, ``main_frame``) so
:mod:`core.flows.fakepage` can stand in for it.

Python flows registered by plugins are :class:`Flow` objects too, so they run here with the
same checkpoints, resume rules and evidence.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from email.utils import parsedate_to_datetime
from functools import partial
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..errors import (
    Blocked,
    BrowserCrashed,
    CredentialBlocked,
    NeedsHuman,
    OriginBlocked,
    PageChanged,
    RateLimited,
    SiteFailed,
    SpecError,
    StepTimeout,
    TaskError,
    WriteOutcomeUnknown,
)
from ..origins import OriginPolicy, is_transient, origin_of
from .evidence import capture_evidence, mask_locators, redact_text, redact_value, write_evidence
from .models import (
    AssertTextStep,
    ClickStep,
    ExtractStep,
    Flow,
    NavigateStep,
    PressKeyStep,
    ScreenshotStep,
    SelectOptionStep,
    Step,
    TypeTextStep,
    UploadFileStep,
    Verify,
    WaitElementStep,
    step_label,
)
from .placeholders import (
    check_flow,
    check_upload_path,
    default_asset_dirs,
    resolve,
    resolve_url,
    step_fields,
    uses_credentials,
)

DEFAULT_HUMAN_MARKERS: tuple[str, ...] = ("#captcha", "[data-captcha]", ".login-error")
"""Locators whose visibility means a person must take over."""

DEFAULT_RETRY_AFTER_S = 60.0
"""How long to hold a domain after a 429 that gave no ``Retry-After``."""

EVIDENCE_TIMEOUT_S = 10.0
MAX_CONSOLE_LINES = 2000

_CLOSED_MARKERS = (
    "Target crashed",
    "Target page, context or browser has been closed",
    "Target closed",
    "Browser has been closed",
    "Browser closed",
    "Page crashed",
    "Connection closed",
)
_NO_REPLAY = (ExtractStep, AssertTextStep, ScreenshotStep)


@dataclass(frozen=True)
class ShopInfo:
    """What a flow may know about its shop. The password never appears in ``repr``."""

    name: str
    platform: str
    base_url: str
    username: str = ""
    password: str = field(default="", repr=False)
    allowed_origins: tuple[str, ...] = ()
    """Origins its tasks may load besides ``base_url``'s (the shop's and its platform's)."""
    login_url: str = ""
    """Where credentials are typed, when not on the shop's own origin."""

    def policy(self) -> OriginPolicy:
        """The origins this shop's tasks may load."""
        return OriginPolicy.for_shop(self.base_url, self.allowed_origins,
                                     self.login_url or None)

    def placeholder_values(self) -> dict[str, str]:
        """The values of ``{shop.x}`` placeholders."""
        return {"name": self.name, "platform": self.platform, "base_url": self.base_url,
                "username": self.username, "password": self.password}

    def fields(self) -> frozenset[str]:
        """The fields that have a value (what ``check_flow``'s ``shop_fields`` wants)."""
        return frozenset(k for k, v in self.placeholder_values().items() if v)


@dataclass(frozen=True)
class Checkpoint:
    """Where a run stands; saved by the runner, stored with the task.

    Attributes:
        next_step: index of the first step not yet done.
        results: what ``extract`` (and ``screenshot`` with ``into``) steps produced so far.
        writes_done: indices of write steps that completed (never run again).
        write_in_flight: index of a write step that started and has not been confirmed.
    """

    next_step: int = 0
    results: dict[str, Any] = field(default_factory=dict)
    writes_done: list[int] = field(default_factory=list)
    write_in_flight: int | None = None

    def to_dict(self) -> dict[str, Any]:
        """A JSON-serialisable copy."""
        return {"next_step": self.next_step, "results": dict(self.results),
                "writes_done": list(self.writes_done), "write_in_flight": self.write_in_flight}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Read back what :meth:`to_dict` wrote.

        Raises:
            SpecError: the data is not a checkpoint.
        """
        try:
            next_step = data.get("next_step", 0)
            results = data.get("results", {})
            writes = data.get("writes_done", [])
            in_flight = data.get("write_in_flight")
        except AttributeError:
            raise SpecError("checkpoint", "must be an object") from None
        if not isinstance(next_step, int) or isinstance(next_step, bool) or next_step < 0:
            raise SpecError("checkpoint.next_step", "must be a non-negative integer")
        if not isinstance(results, dict):
            raise SpecError("checkpoint.results", "must be an object")
        if not isinstance(writes, list) or not all(
                isinstance(w, int) and not isinstance(w, bool) for w in writes):
            raise SpecError("checkpoint.writes_done", "must be a list of step indices")
        if in_flight is not None and (
                not isinstance(in_flight, int) or isinstance(in_flight, bool)):
            raise SpecError("checkpoint.write_in_flight", "must be a step index or null")
        return cls(next_step=next_step, results=dict(results), writes_done=list(writes),
                   write_in_flight=in_flight)


StepStatus = Literal["started", "done", "skipped", "replayed", "verified", "failed"]


@dataclass(frozen=True)
class StepEvent:
    """One step's progress, reported to ``on_step`` and kept in the run's step log.

    ``index`` is ``None`` for the opening of the flow's ``start_url``. Statuses: ``started``;
    ``done``; ``skipped`` (``if_visible`` did not match, or a completed write on resume);
    ``replayed`` (a read step run again on resume); ``verified`` (an interrupted write found
    done by its ``verify``); ``failed``.
    """

    index: int | None
    action: str
    name: str
    status: StepStatus
    duration_ms: int = 0
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"index": self.index, "action": self.action, "name": self.name,
                "status": self.status, "duration_ms": self.duration_ms, "error": self.error}


@dataclass(frozen=True)
class RunResult:
    """How a run ended without an error.

    Attributes:
        status: ``done`` (every step ran) or ``yielded`` (stopped for preemption).
        results: what ``extract`` steps produced.
        checkpoint: the last checkpoint, already passed to ``save_checkpoint``.
        steps: the step log (terminal statuses only).
    """

    status: Literal["done", "yielded"]
    results: dict[str, Any]
    checkpoint: Checkpoint
    steps: tuple[StepEvent, ...]


_YIELD_POLL_S = 0.05
"""How often an interruptible wait asks whether to yield."""


class _Yielded(Exception):
    """An interruptible wait was stopped for a yield; the step runs again on resume."""

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.step = step


class _Fail(Exception):
    """A failure the runner classified itself (wraps the TaskError to raise)."""

    def __init__(self, error: TaskError) -> None:
        super().__init__(str(error))
        self.error = error


def _retry_after_s(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value.strip()))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError, IndexError):
        return None


def _first_line(exc: BaseException) -> str:
    text = getattr(exc, "message", None) or str(exc) or type(exc).__name__
    return str(text).strip().splitlines()[0][:300] if str(text).strip() else type(exc).__name__


def _is_closed_error(exc: BaseException) -> bool:
    text = str(getattr(exc, "message", "") or exc)
    return any(m in text for m in _CLOSED_MARKERS)


def _gated(step: Step) -> bool:
    if isinstance(step, NavigateStep | ClickStep | UploadFileStep):
        return True
    return isinstance(step, PressKeyStep) and step.key.split("+")[-1] == "Enter"


async def run_flow(
    page: Any,
    flow: Flow,
    *,
    params: Mapping[str, Any],
    shop: ShopInfo,
    checkpoint: Checkpoint | None,
    save_checkpoint: Callable[[Checkpoint], Awaitable[None]],
    evidence_dir: Path,
    step_timeout_s: float,
    before_network: Callable[[str], Awaitable[None]] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    should_yield: Callable[[], bool] | None = None,
    human_markers: Sequence[str] = DEFAULT_HUMAN_MARKERS,
    asset_dirs: Sequence[Path] | None = None,
    step_retries: int = 0,
    step_retry_wait_s: float = 1.0,
    allow_credentials: bool = True,
    route_foreign_documents: bool = False,
) -> RunResult:
    """Run a flow in a page (see the module docstring for the rules).

    Args:
        page: a Playwright async ``Page`` (or :class:`~core.flows.fakepage.FakePage`).
        flow: the flow to run.
        params: the task's parameters for ``{params.x}``.
        shop: the shop, for ``{shop.x}``; its password is redacted from all evidence.
        checkpoint: where a previous attempt stopped, or ``None`` for a fresh start.
        save_checkpoint: stores a checkpoint durably; awaited before a write step acts.
        evidence_dir: where failure evidence (and ``screenshot`` step images) go.
        step_timeout_s: timeout of a step that sets no ``timeout_s``.
        before_network: the rate gate, awaited with a URL before gated steps.
        on_step: told about each step as it starts and ends (must not block).
        should_yield: asked at step boundaries whether to stop for preemption.
        human_markers: locators that mean a person must take over.
        asset_dirs: folders ``upload_file`` may read from (default: the demo site's assets;
            pass :func:`~core.flows.placeholders.default_asset_dirs` of ``[assets] dirs``).
        step_retries: the rescue chain's first level — in-place retries of a failed *read*
            step (site failure, timeout, missing locator) after ``step_retry_wait_s``. Write
            steps, CAPTCHAs, rate limits and crashes are never retried here.
        allow_credentials: False for inline steps (unless ``[security] inline_credentials``):
            a flow using ``{shop.username}``/``{shop.password}`` is refused.
        route_foreign_documents: also abort page and frame requests to foreign origins in the
            browser, before they are sent (``[security] route_foreign_documents``).

    Returns:
        ``RunResult`` with status ``done`` or ``yielded``.

    Raises:
        TaskError: a subclass saying how the attempt failed, with ``step`` and ``evidence``.
        SpecError: the flow's placeholders or an upload path do not check out.
    """
    # URLs are checked step by step (OriginBlocked, with evidence), not here: a task that
    # got past submission (written straight into a shared store) still ends as a ticket.
    if not allow_credentials:
        # A task that got past submission (written straight into a shared store): refused
        # as a boundary violation (a ticket), not as a bug to retry.
        for i, st in enumerate(flow.steps):
            for path, _fname, value in step_fields(i, st):
                if uses_credentials(value):
                    raise CredentialBlocked(
                        f"{path}: inline steps may not use the shop's credentials ([security] "
                        "inline_credentials is off); nothing was run", step=i)
    check_flow(flow, params=params, shop_fields=shop.fields())
    run = _Run(page, flow, params=params, shop=shop, save_checkpoint=save_checkpoint,
               evidence_dir=evidence_dir, step_timeout_s=step_timeout_s,
               before_network=before_network, on_step=on_step, should_yield=should_yield,
               human_markers=tuple(human_markers),
               asset_dirs=list(asset_dirs) if asset_dirs is not None else default_asset_dirs())
    run.step_retries = step_retries
    run.step_retry_wait_s = step_retry_wait_s
    run.attach()
    try:
        if route_foreign_documents:
            await run.route_foreign()
        return await run.execute(checkpoint)
    except BaseException:
        await run.flush_quietly()  # the last good checkpoint is kept for the rescue chain
        raise
    finally:
        run.detach()
        await run.unroute()


class _Run:
    def __init__(self, page: Any, flow: Flow, *, params: Mapping[str, Any], shop: ShopInfo,
                 save_checkpoint: Callable[[Checkpoint], Awaitable[None]], evidence_dir: Path,
                 step_timeout_s: float, before_network: Callable[[str], Awaitable[None]] | None,
                 on_step: Callable[[StepEvent], None] | None,
                 should_yield: Callable[[], bool] | None, human_markers: tuple[str, ...],
                 asset_dirs: list[Path]) -> None:
        self.page = page
        self.flow = flow
        self.params = params
        self.shop_values = shop.placeholder_values()
        self.secrets = [shop.password] if shop.password else []
        self.policy = shop.policy()
        self.violation: str | None = None
        self.typed_into: list[str] = []
        self._closing: set[asyncio.Future[Any]] = set()
        self._route: tuple[Any, Any, Any] | None = None
        self.save_checkpoint = save_checkpoint
        self.evidence_dir = evidence_dir
        self.step_timeout_s = step_timeout_s
        self.before_network = before_network
        self.on_step = on_step
        self.should_yield = should_yield
        self.human_markers = human_markers
        self.asset_dirs = asset_dirs
        self.console: list[str] = []
        self.crashed = False
        self.bad_document: tuple[int, dict[str, str], str] | None = None
        self.log: list[StepEvent] = []
        self.results: dict[str, Any] = {}
        self.writes_done: list[int] = []
        self.in_flight: int | None = None
        self.saved: Checkpoint | None = None
        self.deadline = 0.0
        self.timer: asyncio.Timeout | None = None
        self.grace_s = 0.0
        self.step_retries = 0
        self.step_retry_wait_s = 1.0
        self.retried = 0
        self._pending: asyncio.Future[None] | None = None
        self._listeners: list[tuple[str, Callable[..., None]]] = [
            ("console", self._on_console), ("pageerror", self._on_pageerror),
            ("crash", self._on_crash), ("response", self._on_response),
            ("framenavigated", self._on_framenavigated), ("popup", self._on_popup),
        ]

    # -- page events --------------------------------------------------------------------------

    def attach(self) -> None:
        for event, fn in self._listeners:
            self.page.on(event, fn)

    def detach(self) -> None:
        for event, fn in self._listeners:
            # A closed page may refuse; nothing is left to listen to anyway.
            with contextlib.suppress(Exception):
                self.page.remove_listener(event, fn)

    def _on_console(self, msg: Any) -> None:
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(f"{msg.type}: {msg.text}")

    def _on_pageerror(self, err: Any) -> None:
        if len(self.console) < MAX_CONSOLE_LINES:
            self.console.append(f"pageerror: {err}")

    def _foreign(self, url: str) -> str | None:
        if is_transient(url):
            return None
        return self.policy.why_not(url)

    def _note_violation(self, what: str, url: str, reason: str) -> None:
        if self.violation is None:
            self.violation = f"{what} went to {self._describe(url)}: {reason}"

    def _describe(self, url: str) -> str:
        origin = origin_of(url)
        if origin is not None:
            return origin
        return url.split(":", 1)[0][:20] + ": page" if ":" in url else "a page without a URL"

    def _on_framenavigated(self, frame: Any) -> None:
        try:
            url = str(frame.url)
            main = frame == self.page.main_frame
        except Exception:
            return
        reason = self._foreign(url)
        if reason is not None:
            self._note_violation("the page" if main else "a frame", url, reason)

    def _on_popup(self, popup: Any) -> None:
        # The runner never works in a second window: close it, and note a foreign one.
        try:
            url = str(popup.url)
        except Exception:
            url = ""
        reason = self._foreign(url)
        if reason is not None:
            self._note_violation("a popup window", url, reason)
        with contextlib.suppress(Exception):
            # It may still be on about:blank and navigate before it is closed.
            popup.on("framenavigated", self._on_popup_navigated)
        with contextlib.suppress(Exception):
            closing = asyncio.ensure_future(popup.close())
            self._closing.add(closing)
            closing.add_done_callback(self._closing.discard)

    async def route_foreign(self) -> None:
        """Abort page and frame requests to foreign origins in the browser (the whole
        context: popups too). Only foreign URLs reach Python; the driver matches the rest."""
        context = getattr(self.page, "context", None)
        if context is None or not hasattr(context, "route"):
            return
        pattern = self.policy.foreign_url_pattern()

        async def handler(route: Any) -> None:
            request = route.request
            try:
                navigation = bool(request.is_navigation_request())
            except Exception:
                navigation = True
            if navigation:
                self._note_violation("a page or frame request", str(request.url),
                                     self.policy.why_not(str(request.url)) or "foreign")
                await route.abort("blockedbyclient")
            else:
                await route.continue_()

        await context.route(pattern, handler)
        self._route = (context, pattern, handler)

    async def unroute(self) -> None:
        if self._route is not None:
            context, pattern, handler = self._route
            self._route = None
            with contextlib.suppress(Exception):
                await context.unroute(pattern, handler)

    def _on_popup_navigated(self, frame: Any) -> None:
        with contextlib.suppress(Exception):
            url = str(frame.url)
            reason = self._foreign(url)
            if reason is not None:
                self._note_violation("a popup window", url, reason)

    def check_origins(self, i: int | None) -> None:
        """Stop unless the page and every frame show an allowed origin (or about:blank)."""
        where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
        if self.violation is None:
            frames = getattr(self.page, "frames", None)
            for frame in list(frames or []):
                try:
                    url = str(frame.url)
                    main = frame == self.page.main_frame
                except Exception:
                    continue
                reason = self._foreign(url)
                if reason is not None:
                    self._note_violation("the page" if main else "a frame", url, reason)
                    break
        if self.violation is not None:
            raise _Fail(OriginBlocked(f"{where}: {self.violation}; the task was stopped",
                                      step=i))

    def _on_crash(self, _page: Any) -> None:
        self.crashed = True

    def _on_response(self, response: Any) -> None:
        try:
            request = response.request
            if not (request.is_navigation_request() and request.frame == self.page.main_frame):
                return
            self._note_document(response.status, dict(response.headers), response.url)
        except Exception:  # a response from a frame that is already gone: not ours to judge
            return

    def _note_document(self, status: int, headers: Mapping[str, str], url: str) -> None:
        if status == 429 or status >= 500:
            self.bad_document = (status, {k.lower(): v for k, v in headers.items()}, url)
        else:
            self.bad_document = None

    # -- helpers ------------------------------------------------------------------------------

    def r(self, value: str) -> str:
        return resolve(value, self.params, self.shop_values)

    def redact(self, text: str) -> str:
        return redact_text(text, self.secrets)

    def ms(self) -> float:
        """Milliseconds left of the current step's time."""
        return max(1.0, (self.deadline - asyncio.get_running_loop().time()) * 1000)

    async def untimed(self, aw: Awaitable[None]) -> None:
        """Await something that must not count against the step's timeout (gate, checkpoint)."""
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        if self.timer is not None:
            self.timer.reschedule(None)
        try:
            await aw
        finally:
            self.deadline += loop.time() - t0
            if self.timer is not None:
                self.timer.reschedule(self.deadline + self.grace_s)

    async def gate(self, url: str) -> None:
        if self.before_network is not None:
            await self.untimed(self.before_network(url))

    def checkpoint(self, next_step: int) -> Checkpoint:
        return Checkpoint(next_step=next_step, results=dict(self.results),
                          writes_done=list(self.writes_done), write_in_flight=self.in_flight)

    async def save(self, cp: Checkpoint, *, durable: bool = True) -> None:
        """Record a checkpoint. ``durable``: await the store (before a write step acts, when
        yielding). Otherwise the save runs in the background, in order after the ones before
        it: a checkpoint after a read step only spares replay work, and a crash that loses it
        costs a replayed step, never a repeated write (the write's own in-flight checkpoint
        is always durable first)."""
        self.saved = cp
        prev = self._pending
        if durable:
            self._pending = None
            if prev is not None:
                await self.untimed(prev)
            await self.untimed(self.save_checkpoint(cp))
            return

        async def later() -> None:
            if prev is not None:
                await prev
            await self.save_checkpoint(cp)

        self._pending = asyncio.ensure_future(later())

    async def flush(self) -> None:
        """Wait for background checkpoint saves (their errors, e.g. a lost lease, surface)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            await self.untimed(pending)

    async def flush_quietly(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.shield(pending), 10)

    def emit(self, index: int | None, step: Step | None, status: StepStatus,
             duration_ms: int = 0, error: str | None = None) -> None:
        action = getattr(step, "action", "navigate") if step is not None else "navigate"
        name = step.name if step is not None else "start_url"
        event = StepEvent(index, action, name, status, duration_ms, error)
        if status != "started":
            self.log.append(event)
        if self.on_step is not None:
            self.on_step(event)

    def wants_yield(self, step: Step) -> bool:
        return bool(step.interruptible and self.should_yield is not None and self.should_yield())

    # -- the run ------------------------------------------------------------------------------

    async def execute(self, checkpoint: Checkpoint | None) -> RunResult:
        steps = self.flow.steps
        cp = checkpoint or Checkpoint()
        self.validate_checkpoint(cp)
        self.results = dict(cp.results)
        self.writes_done = list(cp.writes_done)
        self.in_flight = cp.write_in_flight
        if checkpoint is not None:
            self.saved = checkpoint
        resuming = checkpoint is not None and (cp.next_step > 0 or cp.write_in_flight is not None)
        if cp.next_step >= len(steps) and cp.write_in_flight is None:
            return RunResult("done", dict(self.results), cp, tuple(self.log))
        if self.wants_yield(steps[cp.next_step]):
            return await self.yielded(cp.next_step)

        first = steps[0]
        replay_from = self.replay_start(cp.next_step) if resuming else 0
        if (resuming and replay_from == 0) or not (
                isinstance(first, NavigateStep) and first.if_visible is None):
            await self.timed_step(None, None, self.open_start)
        if resuming:
            for j in range(cp.next_step):
                if j < replay_from:
                    self.emit(j, steps[j], "skipped")  # before the last navigation: no state
                    continue
                if self.should_yield is not None and self.should_yield():
                    # Preempted again while rebuilding the page: stop with the checkpoint as
                    # it was (no completed step is lost).
                    return RunResult("yielded", dict(self.results), cp, tuple(self.log))
                await self.replay(j, steps[j])
        for i in range(cp.next_step, len(steps)):
            step = steps[i]
            if self.wants_yield(step):
                return await self.yielded(i)
            if i in self.writes_done:
                self.emit(i, step, "skipped")
                await self.save(self.checkpoint(i + 1))
                continue
            if i == self.in_flight:
                await self.settle_in_flight(i, step)
                if i in self.writes_done:
                    continue
            try:
                await self.run_step(i, step)
            except _Yielded as y:
                return await self.yielded(y.step)
        await self.flush()
        final = self.saved if self.saved is not None else self.checkpoint(len(steps))
        return RunResult("done", dict(self.results), final, tuple(self.log))

    async def run_step(self, i: int, step: Step) -> None:
        """A step, retried in place on a passing failure (read steps only)."""
        tries = 0
        while True:
            try:
                await self.interruptible(i, step)
                return
            except (SiteFailed, PageChanged) as err:
                if (isinstance(err, RateLimited) or step.write or self.in_flight == i
                        or self.crashed or tries >= self.step_retries):
                    raise
                tries += 1
                self.retried += 1
                await asyncio.sleep(self.step_retry_wait_s)

    async def interruptible(self, i: int, step: Step) -> None:
        """Run a step; an interruptible wait (navigation, ``wait_element``) stops at once
        when a yield is requested, leaving the step to be run again on resume."""
        body = partial(self.timed_step, i, step, partial(self.step_body, i, step, False))
        if (self.should_yield is None or not step.interruptible or step.write
                or not isinstance(step, NavigateStep | WaitElementStep)):
            await body()
            return
        task = asyncio.ensure_future(body())
        while True:
            done, _ = await asyncio.wait([task], timeout=_YIELD_POLL_S)
            if done:
                task.result()
                return
            if self.should_yield():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                raise _Yielded(i)

    def replay_start(self, next_step: int) -> int:
        """Where a resume starts replaying: the last unconditional ``navigate`` before
        ``next_step``. A navigation throws the page's state away, so the read steps before it
        need not run again (the login lives in the shop's saved session); with no such
        navigation, everything from the start page is replayed."""
        for j in range(next_step - 1, -1, -1):
            st = self.flow.steps[j]
            if isinstance(st, NavigateStep) and st.if_visible is None:
                return j
        return 0

    def validate_checkpoint(self, cp: Checkpoint) -> None:
        n = len(self.flow.steps)
        if cp.next_step > n:
            raise SpecError("checkpoint.next_step",
                            f"{cp.next_step} is past the flow's last step ({n} steps)")
        for w in [*cp.writes_done, *([cp.write_in_flight] if cp.write_in_flight is not None
                                     else [])]:
            if not 0 <= w < n or not self.flow.steps[w].write:
                raise SpecError("checkpoint", f"step {w} is not a write step of flow "
                                f"{self.flow.name!r}")
        if cp.write_in_flight is not None and cp.write_in_flight != cp.next_step:
            raise SpecError("checkpoint.write_in_flight",
                            "must be next_step (a write in flight is the step in progress)")

    async def yielded(self, next_step: int) -> RunResult:
        cp = self.checkpoint(next_step)
        if self.saved != cp:
            await self.save(cp)
        await self.flush()
        return RunResult("yielded", dict(self.results), cp, tuple(self.log))

    async def replay(self, j: int, step: Step) -> None:
        if step.write or isinstance(step, _NO_REPLAY):
            self.emit(j, step, "skipped")
            return
        await self.timed_step(j, step, partial(self.step_body, j, step, True), replay=True)

    async def settle_in_flight(self, i: int, step: Step) -> None:
        """Decide what became of a write that was in flight when the last attempt stopped."""
        verify = step.verify
        if verify is None:
            err = WriteOutcomeUnknown(
                f"{step_label(i, step)}: the write was interrupted and its outcome is unknown; "
                "the step declares no verify, so a person must check the site", step=i)
            await self.fail(i, step, err, 0)
            raise err
        done = False

        async def check() -> bool:
            nonlocal done
            done = await self.verified(verify)
            return False

        await self.timed_step(i, step, check, quiet=True)
        if done:
            self.writes_done.append(i)
            self.in_flight = None
            self.emit(i, step, "verified")
            await self.save(self.checkpoint(i + 1))
        else:
            # Verified as not done: running the write again is what verify is for.
            self.in_flight = None

    async def verified(self, verify: Verify) -> bool:
        loc = self.page.locator(self.r(verify.locator))
        if verify.text is not None:
            loc = loc.filter(has_text=self.r(verify.text))
        return bool(await loc.first.is_visible())

    async def timed_step(self, i: int | None, step: Step | None,
                         body: Callable[[], Awaitable[bool]], *, replay: bool = False,
                         quiet: bool = False) -> None:
        """Run one step's body under its timeout; classify and document a failure.

        ``body`` returns True when the step was skipped (``if_visible``).
        """
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        budget = (step.timeout_s if step is not None and step.timeout_s else self.step_timeout_s)
        self.deadline = t0 + budget
        # Playwright enforces the timeout itself; this backstop catches a wedged browser.
        self.grace_s = min(5.0, max(1.0, budget * 0.5))
        if not quiet:
            self.emit(i, step, "started")
        try:
            async with asyncio.timeout(self.deadline + self.grace_s) as timer:
                self.timer = timer
                skipped = await body()
        except Exception as exc:
            self.timer = None  # the timeout block is over; nothing may reschedule it now
            err = await self.classify(i, step, exc, budget)
            if err is None:
                raise
            await self.fail(i, step, err, int((loop.time() - t0) * 1000))
            raise err from (None if isinstance(exc, _Fail) else exc)
        finally:
            self.timer = None
        if quiet:
            return
        status: StepStatus = "skipped" if skipped else ("replayed" if replay else "done")
        self.emit(i, step, status, int((loop.time() - t0) * 1000))
        if i is not None and not replay:
            await self.save(self.checkpoint(i + 1), durable=False)

    async def open_start(self) -> bool:
        await self.goto(self.url(self.flow.start_url, None))
        self.check_origins(None)
        self.raise_for_document(None)
        await self.raise_for_human(None)
        return False

    async def step_body(self, i: int, step: Step, replay: bool) -> bool:
        self.check_origins(i)
        if step.if_visible is not None and not await self.page.locator(
                self.r(step.if_visible)).first.is_visible():
            return True
        await self.perform(i, step, replay=replay)
        if isinstance(step, ClickStep | PressKeyStep) and _gated(step):
            await self.settle_page(i, step)
        self.check_origins(i)
        if _gated(step):
            self.raise_for_document(i)
            await self.raise_for_human(i)
        if step.write and self.in_flight == i:
            # Confirmed only now: a 5xx page or a CAPTCHA after the click leaves it unknown.
            self.writes_done.append(i)
            self.in_flight = None
        return False

    async def settle_page(self, i: int, step: Step) -> None:
        """Let a navigation a click started reach its DOM before the page is judged.

        Playwright's click returns once a navigation it caused has committed; the new
        document may not be parsed yet, and a CAPTCHA or a 5xx page must not slip by.
        """
        try:
            await self.page.wait_for_load_state("domcontentloaded", timeout=self.ms())
        except PlaywrightTimeoutError:
            raise _Fail(StepTimeout(f"{step_label(i, step)}: the page did not finish loading "
                                    "after the action", step=i)) from None

    # -- failure classification ---------------------------------------------------------------

    def raise_for_document(self, i: int | None) -> None:
        if self.bad_document is None:
            return
        status, headers, url = self.bad_document
        where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
        domain = urlsplit(url).hostname or ""
        retry_after = _retry_after_s(headers.get("retry-after"))
        if status == 429 or (status == 503 and retry_after is not None):
            wait = retry_after if retry_after is not None else DEFAULT_RETRY_AFTER_S
            raise _Fail(RateLimited(
                f"{where}: {domain} answered {status} (retry after {wait:g}s)",
                retry_after_s=wait, domain=domain, step=i))
        raise _Fail(SiteFailed(f"{where}: {url} answered HTTP {status}", step=i))

    async def human_marker(self) -> str | None:
        for marker in self.human_markers:
            if await self.page.locator(marker).first.is_visible():
                return marker
        return None

    async def raise_for_human(self, i: int | None) -> None:
        marker = await self.human_marker()
        if marker is not None:
            where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
            raise _Fail(NeedsHuman(
                f"{where}: the page shows {marker!r} (CAPTCHA or login problem); a person must "
                "take over", step=i))

    async def classify(self, i: int | None, step: Step | None, exc: Exception,
                       budget: float) -> TaskError | None:
        """The TaskError a failure means, or None for a bug that must propagate as it is."""
        where = step_label(i, step) if i is not None and step is not None else "start_url"
        if not isinstance(exc, PlaywrightError | TimeoutError | _Fail):
            return None
        detail = self.redact(_first_line(exc))
        if self.crashed or (isinstance(exc, PlaywrightError) and _is_closed_error(exc)):
            return BrowserCrashed(f"{where}: the browser page crashed or closed ({detail})",
                                  step=i)
        own = exc.error if isinstance(exc, _Fail) else None
        if isinstance(own, Blocked):
            own.step = i
            return own
        if self.violation is not None:
            try:
                self.check_origins(i)
            except _Fail as f:
                return f.error
        if self.bad_document is not None and not isinstance(own, RateLimited | SiteFailed):
            try:
                self.raise_for_document(i)
            except _Fail as f:
                return f.error
        if not isinstance(own, NeedsHuman | RateLimited | SiteFailed):
            try:
                async with asyncio.timeout(2.0):
                    marker = await self.human_marker()
            except Exception:
                marker = None
            if marker is not None:
                return NeedsHuman(f"{where}: the page shows {marker!r} (CAPTCHA or login "
                                  f"problem); a person must take over", step=i)
        if own is not None:
            own.step = i
            return own
        if isinstance(exc, TimeoutError):  # our backstop: the browser stopped answering
            return StepTimeout(f"{where}: did not finish within {budget:g}s", step=i)
        action = getattr(step, "action", "navigate") if step is not None else "navigate"
        is_timeout = isinstance(exc, PlaywrightTimeoutError)
        if action == "navigate":
            if is_timeout:
                return StepTimeout(f"{where}: the page did not load within {budget:g}s", step=i)
            return SiteFailed(f"{where}: could not load the page ({detail})", step=i)
        if is_timeout and isinstance(step, WaitElementStep) and step.state == "hidden":
            return StepTimeout(f"{where}: {step.locator!r} did not disappear within {budget:g}s",
                               step=i)
        locator = getattr(step, "locator", None)
        if is_timeout:
            return PageChanged(f"{where}: nothing matches {locator!r} (waited {budget:g}s)",
                               step=i)
        return PageChanged(f"{where}: {detail}", step=i)

    async def fail(self, i: int | None, step: Step | None, err: TaskError,
                   duration_ms: int) -> None:
        message = self.redact(str(err))
        err.args = (message,)
        self.emit(i, step, "failed", duration_ms, message)
        failure = {"step": i, "error_class": err.error_class, "error": message,
                   "flow": self.flow.name, "url": self._page_url()}
        err.evidence = await capture_evidence(
            self.page, self.evidence_dir, steps=[e.to_dict() for e in self.log],
            console=self.console, secrets=self.secrets, failure=failure,
            page_usable=not (self.crashed or isinstance(err, BrowserCrashed)),
            timeout_s=EVIDENCE_TIMEOUT_S, mask=self.typed_into)

    def _page_url(self) -> str:
        try:
            return self.redact(str(self.page.url))
        except Exception:
            return ""

    # -- the actions --------------------------------------------------------------------------

    async def goto(self, url: str, *, gate: bool = True) -> None:
        if gate:
            await self.gate(url)
        response = await self.page.goto(url, timeout=self.ms(), wait_until="load")
        if response is not None:
            self._note_document(response.status, dict(response.headers), response.url)

    async def perform(self, i: int, step: Step, *, replay: bool = False) -> None:
        page = self.page
        upload: Path | None = None
        if isinstance(step, ClickStep) and step.write:
            # Make sure the target is there before declaring the write in flight, so a
            # missing button is a clean PageChanged and not a write of unknown outcome.
            await page.locator(self.r(step.locator)).wait_for(state="visible", timeout=self.ms())
        if isinstance(step, UploadFileStep):
            where = f"{step_label(i, step)}.path"
            upload = await asyncio.to_thread(check_upload_path, self.r(step.path),
                                             self.asset_dirs, field=where)
        target = self.url(step.url, i) if isinstance(step, NavigateStep) else None
        if _gated(step):
            await self.gate(target if target is not None else page.url)
        if step.write and not replay:
            self.in_flight = i
            await self.save(self.checkpoint(i))  # durable before the site sees anything
        match step:
            case NavigateStep():
                assert target is not None
                await self.goto(target, gate=False)
            case ClickStep():
                await page.locator(self.r(step.locator)).click(timeout=self.ms())
            case TypeTextStep():
                kinds = uses_credentials(step.text)
                if kinds:
                    await self.fill_credential(i, step, kinds)
                else:
                    await page.locator(self.r(step.locator)).fill(self.r(step.text),
                                                                  timeout=self.ms())
            case SelectOptionStep():
                await page.locator(self.r(step.locator)).select_option(self.r(step.value),
                                                                       timeout=self.ms())
            case UploadFileStep():
                await page.locator(self.r(step.locator)).set_input_files(str(upload),
                                                                         timeout=self.ms())
            case WaitElementStep():
                await page.locator(self.r(step.locator)).first.wait_for(state=step.state,
                                                                        timeout=self.ms())
            case ExtractStep():
                self.results[step.into] = redact_value(await self.extract(step), self.secrets)
            case AssertTextStep():
                await self.assert_text(i, step)
            case ScreenshotStep():
                png = await page.screenshot(timeout=self.ms(),
                                            mask=mask_locators(page, self.typed_into))
                name = f"step-{i:03d}{'-' + step.into if step.into else ''}.png"
                try:
                    path = await asyncio.to_thread(write_evidence, self.evidence_dir,
                                                   f"screenshots/{name}", png)
                except OSError as exc:
                    raise _Fail(TaskError(f"{step_label(i, step)}: could not write the "
                                          f"screenshot: {exc.strerror or exc}", step=i)) from None
                if step.into:
                    self.results[step.into] = str(path)
            case PressKeyStep():
                key = self.r(step.key)
                if step.locator is not None:
                    await page.locator(self.r(step.locator)).press(key, timeout=self.ms())
                else:
                    await page.keyboard.press(key)

    def url(self, template: str, i: int | None) -> str:
        """A URL field resolved (values percent-encoded) and checked against the origins."""
        url = resolve_url(template, self.params, self.shop_values)
        reason = self.policy.why_not(url)
        if reason is not None:
            where = (f"{step_label(i, self.flow.steps[i])}.url" if i is not None
                     else "start_url")
            raise _Fail(OriginBlocked(f"{where}: {reason}; nothing was loaded", step=i))
        return url

    async def fill_credential(self, i: int, step: TypeTextStep, kinds: frozenset[str]) -> None:
        """Type a text holding a shop credential, after checking, on the very element the
        locator resolved to, that its frame is the login origin and (for the password) that
        it is an ``<input type=password>``."""
        where = f"{step_label(i, step)}.text"
        selector = self.r(step.locator)
        handle = await self.page.locator(selector).element_handle(timeout=self.ms())
        try:
            frame = await handle.owner_frame()
            frame_url = str(frame.url) if frame is not None else ""
            info = await handle.evaluate(_FIELD_INFO_JS)
            origin = origin_of(frame_url)
            names = " and ".join(f"{{shop.{k}}}" for k in sorted(kinds))
            if origin is None or origin != self.policy.login:
                raise _Fail(CredentialBlocked(
                    f"{where}: {names} is typed only on the shop's login origin "
                    f"{self.policy.login}, and this field is on {self._describe(frame_url)}; "
                    "nothing was typed", step=i))
            tag, typ = str(info.get("tag", "")), str(info.get("type", ""))
            if "password" in kinds and not (tag == "input" and typ == "password"):
                raise _Fail(CredentialBlocked(
                    f"{where}: {{shop.password}} is typed only into an <input type=password>, "
                    f"and {selector!r} is a <{tag}{' type=' + typ if typ else ''}>; nothing "
                    "was typed", step=i))
            if tag not in ("input", "textarea"):
                raise _Fail(CredentialBlocked(
                    f"{where}: {names} is typed only into an input field, and {selector!r} "
                    f"is a <{tag}>; nothing was typed", step=i))
            self.typed_into.append(selector)
            await handle.fill(self.r(step.text), timeout=self.ms())
        finally:
            with contextlib.suppress(Exception):
                await handle.dispose()

    async def extract(self, step: ExtractStep) -> Any:
        loc = self.page.locator(self.r(step.locator))
        attribute = self.r(step.attribute)
        if step.all:
            if attribute == "text":
                return list(await loc.all_inner_texts())
            count = await loc.count()
            return [await loc.nth(k).get_attribute(attribute, timeout=self.ms())
                    for k in range(count)]
        if attribute == "text":
            return await loc.first.inner_text(timeout=self.ms())
        return await loc.first.get_attribute(attribute, timeout=self.ms())

    async def assert_text(self, i: int, step: AssertTextStep) -> None:
        loc = self.page.locator(self.r(step.locator))
        text = self.r(step.text)
        try:
            await loc.filter(has_text=text).first.wait_for(state="attached", timeout=self.ms())
        except PlaywrightTimeoutError:
            try:
                shown: str | None = await loc.first.inner_text(timeout=1000)
            except PlaywrightError:
                shown = None
            where = step_label(i, step)
            if shown is None:
                raise _Fail(PageChanged(f"{where}: nothing matches {step.locator!r}",
                                        step=i)) from None
            raise _Fail(PageChanged(
                f"{where}: {step.locator!r} does not contain {text!r} (it shows "
                f"{shown.strip()[:200]!r})", step=i)) from None


_FIELD_INFO_JS = """el => ({tag: el.tagName.toLowerCase(),
    type: el.tagName === 'INPUT' ? String(el.type).toLowerCase() : ''})"""
