"""Sending one request, reading the answer, and when to try again.

:func:`send` is blocking (stdlib ``urllib.request``, a timeout on connect and read) and runs
only on the dispatcher's own thread, never on an event loop. Failures are classified:

* **retryable** — connection refused or reset, DNS failure, a timeout, HTTP 5xx, 408, 429, or a
  platform's "too fast / busy" errcode;
* **permanent** — any other 4xx, or an errcode that says the request itself is wrong (a bad
  signature, a keyword missing, a removed robot): retrying would only repeat it.

:func:`backoff_s` is the wait before attempt ``n + 1``: exponential from ``base_s`` with
"full jitter" on the upper half (``d/2 + random() * d/2``), capped at ``cap_s``; a server's
``Retry-After`` is honoured when longer.
"""

from __future__ import annotations

import os
import random
import stat
import urllib.error
import urllib.request
from collections.abc import Callable

from core.notify.platforms import Request, Verdict, judge

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

DEFAULT_TIMEOUT_S = 10.0
MAX_ATTEMPTS = 12
BASE_S = 5.0
CAP_S = 1800.0


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # a webhook that redirects elsewhere would move a signed request to another host
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def send(kind: str, req: Request, *, timeout_s: float = DEFAULT_TIMEOUT_S) -> Verdict:
    """POST ``req`` and judge the answer the way platform ``kind`` answers."""
    http_req = urllib.request.Request(req.url, data=req.body, headers=req.headers,
                                      method="POST")
    try:
        with _OPENER.open(http_req, timeout=timeout_s) as resp:
            body = resp.read(65536)
            return judge(kind, resp.status, body, resp.headers.get("Retry-After"))
    except urllib.error.HTTPError as exc:
        try:
            body = exc.read(65536)
        except OSError:
            body = b""
        return judge(kind, exc.code, body, exc.headers.get("Retry-After") if exc.headers
                     else None)
    except TimeoutError:
        return Verdict(False, True, "timed out")
    except urllib.error.URLError as exc:
        return Verdict(False, True, f"cannot connect: {exc.reason}")
    except (ConnectionError, OSError) as exc:
        return Verdict(False, True, f"connection failed: {exc}")


def read_screenshot(path: str, *, max_bytes: int) -> tuple[bytes | None, str]:
    """A ticket's screenshot for a message: ``(png, "")``, or ``(None, why not)``.

    Blocking (the dispatcher's thread, never an event loop). Only what the runner's evidence
    writer makes is sent: a regular file (not followed through a symlink) that is a PNG, at
    most ``max_bytes`` (the platform's cap). The path comes from the store, which on a fleet
    others can write: a path to anything that is not a screenshot sends nothing.
    """
    if not path or not os.path.isabs(path) or not path.lower().endswith(".png"):
        return None, "not a screenshot path"
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
                     | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        return None, f"cannot read it: {exc.strerror or exc}"
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return None, "not a regular file"
        if st.st_size > max_bytes:
            return None, f"{st.st_size:,} bytes, over the platform's {max_bytes:,}"
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(max_bytes + 1)
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        return None, f"over the platform's {max_bytes:,} bytes"
    if not data.startswith(PNG_MAGIC):
        return None, "not a PNG image"
    return data, ""


def backoff_s(attempt: int, *, base_s: float = BASE_S, cap_s: float = CAP_S,
              rand: Callable[[], float] = random.random,
              retry_after_s: float | None = None) -> float:
    """Seconds to wait after failed attempt number ``attempt`` (1 for the first)."""
    ceiling = min(cap_s, base_s * 2.0 ** max(0, attempt - 1))
    delay = ceiling / 2 + float(rand()) * ceiling / 2
    if retry_after_s is not None:
        delay = max(delay, retry_after_s)
    return delay
