"""The demo site's shared state: the fault switches, the records and sessions, the responses."""

from __future__ import annotations

import json
import threading
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from ..clock import Clock
from ..errors import InvalidInput
from ._catalog import (
    PLATFORM_HOSTS,
)

FAULTS: tuple[str, ...] = ("slow", "error_5xx", "rate_limit", "layout_changed", "crash",
                           "captcha", "network_down")
"""The fault switches :meth:`DemoSite.set_fault` knows."""

# Modifiers change how a page is served; at most one terminal fault replaces the page.
_MODIFIERS = frozenset({"slow", "layout_changed"})
_OPTIONS: dict[str, dict[str, Any]] = {
    "slow": {"delay_ms": 2000},
    "error_5xx": {"status": 503, "retry_after": None, "after_write": False},
    "rate_limit": {"status": 429, "retry_after": 5},
    "layout_changed": {},
    "crash": {"after_write": False},
    "captcha": {},
    "network_down": {},
    # network_down: the connection is dropped without an answer (Chromium reports
    # net::ERR_EMPTY_RESPONSE): the network path failing, switched on and off like the rest.
}
_MAX_BODY = 20 * 1024 * 1024
_REQUEST_LOG = 100_000
_LOCAL_SUFFIXES = (".shopfleet.test", ".localhost")


def host_resolver_rules() -> str:
    """The Chromium ``--host-resolver-rules`` value that sends every demo host to loopback."""
    return "MAP *.shopfleet.test 127.0.0.1"


@dataclass
class _Fault:
    name: str
    platform: str | None
    options: dict[str, Any]
    remaining: int | None

    def describe(self) -> dict[str, Any]:
        return {"fault": self.name, "platform": self.platform, "times_left": self.remaining,
                **self.options}


def _check_fault(fault: str, platform: str | None, options: dict[str, Any]) -> _Fault:
    if fault not in _OPTIONS:
        raise InvalidInput("fault", f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    if platform is not None and platform not in PLATFORM_HOSTS:
        raise InvalidInput("platform",
                           f"unknown platform {platform!r}; one of {', '.join(PLATFORM_HOSTS)}")
    opts = dict(options)
    times = opts.pop("times", None)
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 1):
        raise InvalidInput("times", "must be a whole number of at least 1")
    allowed = _OPTIONS[fault]
    unknown = set(opts) - set(allowed)
    if unknown:
        known = ", ".join(["times", *allowed]) or "times"
        raise InvalidInput(sorted(unknown)[0], f"not an option of {fault!r} (options: {known})")
    merged = {**allowed, **opts}
    for key in ("delay_ms", "retry_after", "status"):
        value = merged.get(key)
        if key in merged and value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise InvalidInput(key, "must be a whole number of at least 0")
    if fault == "error_5xx" and not 500 <= merged["status"] <= 599:
        raise InvalidInput("status", "error_5xx needs a status from 500 to 599")
    if fault == "rate_limit" and merged["status"] not in (429, 503):
        raise InvalidInput("status", "rate_limit answers 429 or 503")
    if "after_write" in merged and not isinstance(merged["after_write"], bool):
        raise InvalidInput("after_write", "must be true or false")
    return _Fault(fault, platform, merged, times)


@dataclass
class _Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    wrote: bool = False
    """The request changed something (a record was written)."""


def _html(text: str, status: int = 200) -> _Response:
    return _Response(status, text.encode())


def _redirect(location: str, status: int = 303) -> _Response:
    return _Response(status, b"", headers=[("Location", location)])


def _json(data: object, status: int = 200) -> _Response:
    return _Response(status, json.dumps(data).encode(), "application/json")


class _State:
    """Everything the handlers share, behind one lock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.started_at = clock.now()
        self.port = 0
        self.records: list[dict[str, Any]] = []
        self.logins: list[dict[str, Any]] = []
        self.requests: deque[dict[str, Any]] = deque(maxlen=_REQUEST_LOG)
        self.sessions: dict[str, str] = {}
        self.faults: dict[tuple[str, str | None], _Fault] = {}
        self.seq = 0
        self.stop = threading.Event()

    def record(self, kind: str, platform: str, shop: str, **data: Any) -> dict[str, Any]:
        with self.lock:
            self.seq += 1
            rec = {"kind": kind, "shop": shop, "platform": platform, **data,
                   "at": self.clock.now(), "seq": self.seq}
            self.records.append(rec)
            return dict(rec)

    def select(self, *, kind: str | None = None, shop: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(r) for r in self.records
                    if (kind is None or r["kind"] == kind) and (shop is None or r["shop"] == shop)]

    def take_faults(self, platform: str, *, after_write: bool) -> tuple[list[_Fault],
                                                                         _Fault | None]:
        """The faults this request meets; each one met uses up one of its ``times``."""
        modifiers: list[_Fault] = []
        terminal: _Fault | None = None
        with self.lock:
            for key, f in list(self.faults.items()):
                if f.platform not in (None, platform):
                    continue
                if bool(f.options.get("after_write", False)) != after_write:
                    continue
                if f.name in _MODIFIERS:
                    modifiers.append(f)
                elif terminal is None:
                    terminal = f
                else:
                    continue
                if f.remaining is not None:
                    f.remaining -= 1
                    if f.remaining <= 0:
                        del self.faults[key]
        return modifiers, terminal


def _install_fault(st: _State, fault: _Fault) -> None:
    with st.lock:
        st.faults.pop((fault.name, fault.platform), None)  # re-setting moves it to the end
        st.faults[(fault.name, fault.platform)] = fault


def _reset(st: _State) -> None:
    with st.lock:
        st.records.clear()
        st.logins.clear()
        st.requests.clear()
        st.sessions.clear()
        st.faults.clear()
