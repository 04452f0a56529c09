"""Classification of failures in the step runner (see :mod:`core.flows.runner`, "Failures").

A Playwright error, our own timeout backstop or a failure a layer raised itself becomes the
:class:`~core.errors.TaskError` subclass that tells the engine what to do: a crashed page
:class:`BrowserCrashed`, a 429/503 document :class:`RateLimited`, another 5xx or a network
error :class:`SiteFailed`, a CAPTCHA :class:`NeedsHuman`, a missing element
:class:`PageChanged`, a wedged step :class:`StepTimeout`. Evidence is captured on the way out.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..errors import (
    Blocked,
    BrowserCrashed,
    NeedsHuman,
    NetworkDown,
    PageChanged,
    RateLimited,
    SiteFailed,
    StepTimeout,
    TaskError,
    is_network_error,
    is_unsent_network_error,
)
from .evidence import capture_evidence
from .guards import OriginGuards
from .models import Step, WaitElementStep, step_label
from .run_state import Fail

DEFAULT_RETRY_AFTER_S = 60.0
"""How long to hold a domain after a 429 that gave no ``Retry-After``."""


EVIDENCE_TIMEOUT_S = 10.0


_CLOSED_MARKERS = (
    "Target crashed",
    "Target page, context or browser has been closed",
    "Target closed",
    "Browser has been closed",
    "Browser closed",
    "Page crashed",
    "Connection closed",
)


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


class FailureClassifier(OriginGuards):
    """What a failure means: the :mod:`core.errors` type the engine acts on, with evidence."""

    requests_seen = 0
    """Requests the page started (any frame): a write navigation that failed before any
    response, with no request but its own, never reached the site (:meth:`unsent`)."""
    responses_seen = 0

    nav_failure: str | None = None
    """The browser's error text of the main frame's last failed navigation request
    (``net::ERR_NAME_NOT_RESOLVED``): a click whose form post failed leaves no exception,
    only Chromium's error page (:meth:`raise_for_failed_navigation`)."""

    def listeners(self) -> list[tuple[str, Callable[..., None]]]:
        return [*super().listeners(), ("response", self._on_response),
                ("request", self._on_request), ("requestfailed", self._on_request_failed)]

    def _on_request(self, _request: Any) -> None:
        self.requests_seen += 1

    def _on_request_failed(self, request: Any) -> None:
        try:
            if request.is_navigation_request() and request.frame == self.page.main_frame:
                self.nav_failure = str(request.failure or "net::ERR_FAILED")
        except Exception:  # a request of a frame that is already gone: not the page's
            return

    def unsent(self, failure: str, requests_before: int, responses_before: int) -> bool:
        """Did a navigation that failed with the browser error ``failure`` never send its
        request? Only when the browser says so (:func:`~core.errors.is_unsent_network_error`:
        the name did not resolve, the connection was refused, no network) *and* nothing
        answered meanwhile and no other request started (a redirect whose next host does not
        resolve: the first request did reach the site)."""
        return (is_unsent_network_error(failure)
                and self.responses_seen == responses_before
                and self.requests_seen <= requests_before + 1)

    def _on_response(self, response: Any) -> None:
        self.responses_seen += 1
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

    def raise_for_document(self, i: int | None) -> None:
        if self.bad_document is None:
            return
        status, headers, url = self.bad_document
        where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
        domain = urlsplit(url).hostname or ""
        retry_after = _retry_after_s(headers.get("retry-after"))
        if status == 429 or (status == 503 and retry_after is not None):
            wait = retry_after if retry_after is not None else DEFAULT_RETRY_AFTER_S
            raise Fail(RateLimited(
                f"{where}: {domain} answered {status} (retry after {wait:g}s)",
                retry_after_s=wait, domain=domain, step=i))
        raise Fail(SiteFailed(f"{where}: {url} answered HTTP {status}", step=i))

    async def human_marker(self, seen: Mapping[str, bool] | None = None) -> str | None:
        """The first human marker the page shows. ``seen``: what the after-step read found
        (markers it did not answer are asked one by one, as always)."""
        for marker in self.human_markers:
            shown = seen.get(marker) if seen is not None else None
            if shown is None:
                shown = await self.page.locator(marker).first.is_visible()
            if shown:
                return marker
        return None

    async def raise_for_human(self, i: int | None) -> None:
        # What the step's window read found with the markers (one round trip), else asked.
        seen, self.marker_snapshot = self.marker_snapshot, None
        marker = await self.human_marker(seen)
        if marker is not None:
            where = step_label(i, self.flow.steps[i]) if i is not None else "start_url"
            raise Fail(NeedsHuman(
                f"{where}: the page shows {marker!r} (CAPTCHA or login problem); a person must "
                "take over", step=i))

    async def classify(self, i: int | None, step: Step | None, exc: Exception,
                       budget: float) -> TaskError | None:
        """The TaskError a failure means, or None for a bug that must propagate as it is."""
        where = step_label(i, step) if i is not None and step is not None else "start_url"
        if not isinstance(exc, PlaywrightError | TimeoutError | Fail):
            return None
        detail = self.redact(_first_line(exc))
        if self.crashed or (isinstance(exc, PlaywrightError) and _is_closed_error(exc)):
            return BrowserCrashed(f"{where}: the browser page crashed or closed ({detail})",
                                  step=i)
        own = exc.error if isinstance(exc, Fail) else None
        if isinstance(own, Blocked):
            own.step = i
            return own
        if self.violation is not None:
            try:
                self.check_origins(i)
            except Fail as f:
                return f.error
        if self.bad_document is not None and not isinstance(own, RateLimited | SiteFailed):
            try:
                self.raise_for_document(i)
            except Fail as f:
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
        if isinstance(exc, PlaywrightError) and is_network_error(str(exc)):
            return NetworkDown(f"{where}: the network path failed ({detail})", step=i)
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
