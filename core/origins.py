"""Origins: which pages a shop's tasks may load.

An origin is ``scheme://host:port`` (the default port spelled out), http or https only. A
shop's tasks may load pages of the shop's own origin (from ``base_url``) plus the origins the
operator allows for the shop (``shopfleet shop set NAME --allow-origin URL``) or for its
platform (``[platforms.NAME] allowed_origins``). ``about:blank`` is let through only as the
transient page a new tab or frame starts on; ``data:``, ``file:``, ``javascript:``, ``blob:``
and every other scheme are foreign.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from urllib.parse import urlsplit

from .errors import InvalidInput

_DEFAULT_PORTS = {"http": 80, "https": 443}
TRANSIENT_URLS = frozenset({"about:blank", "about:srcdoc", ""})
"""What a frame or tab shows before its first navigation; not a page of any origin."""
ERROR_PAGE_PREFIX = "chrome-error://"
"""Chromium's own page for a failed load (the failure is the site's, judged as such)."""


def is_transient(url: str) -> bool:
    """A frame state that is no page of any origin: ``about:blank`` before the first load,
    an ``about:srcdoc`` frame (its content is its parent's), Chromium's error page."""
    return url in TRANSIENT_URLS or url.startswith(ERROR_PAGE_PREFIX)


def origin_of(url: str) -> str | None:
    """``scheme://host:port`` of an http(s) URL, or None for anything else (data:, file:,
    javascript:, about:, a URL without a host, a bad port)."""
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        return None
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower().rstrip(".")
    if scheme not in _DEFAULT_PORTS or not host:
        return None
    if ":" in host:
        host = f"[{host}]"
    return f"{scheme}://{host}:{port if port is not None else _DEFAULT_PORTS[scheme]}"


def normalise_origin(url: str, *, field: str = "allowed_origins") -> str:
    """The origin of an operator-given URL (``https://cdn.example.com`` →
    ``https://cdn.example.com:443``).

    Raises:
        InvalidInput: not an http(s) URL with a host (naming ``field``).
    """
    origin = origin_of(url) if isinstance(url, str) else None
    if origin is None:
        raise InvalidInput(field, f"{str(url)[:200]!r} is not an http:// or https:// URL "
                           "with a host")
    return origin


@dataclass(frozen=True)
class OriginPolicy:
    """The origins one shop's tasks may load.

    Attributes:
        own: the shop's origin (from ``base_url``).
        allowed: every origin allowed, the shop's own included.
        login: the origin credentials may be typed on (the shop's own unless configured).
    """

    own: str
    allowed: frozenset[str]
    login: str

    @classmethod
    def for_shop(cls, base_url: str, extra: Iterable[str] = (),
                 login_url: str | None = None) -> OriginPolicy:
        own = normalise_origin(base_url, field="base_url")
        allowed = {own}
        allowed.update(normalise_origin(o) for o in extra)
        login = normalise_origin(login_url, field="login_url") if login_url else own
        allowed.add(login)
        return cls(own=own, allowed=frozenset(allowed), login=login)

    def foreign_url_pattern(self) -> re.Pattern[str]:
        """A regex matching every http(s) URL *not* of an allowed origin (for a network route
        Playwright's driver matches without calling Python for the shop's own requests)."""
        alts = []
        for origin in sorted(self.allowed):
            scheme, rest = origin.split("://", 1)
            host, port = rest.rsplit(":", 1)
            port_re = (f"(?::{port})?" if int(port) == _DEFAULT_PORTS[scheme]
                       else f":{port}")
            alts.append(f"{re.escape(scheme)}://{re.escape(host)}{port_re}")
        return re.compile(rf"^(?!(?:{'|'.join(alts)})(?:[/?#]|$))https?:", re.IGNORECASE)

    def allows(self, url: str) -> bool:
        """Is ``url`` a page of an allowed origin? (``blob:`` URLs by their creator's
        origin.)"""
        if url[:5].lower() == "blob:":
            url = url[5:]
        origin = origin_of(url)
        return origin is not None and origin in self.allowed

    def why_not(self, url: str) -> str | None:
        """None when ``url`` is allowed, else the reason in the operator's words."""
        if self.allows(url):
            return None
        origin = origin_of(url)
        if origin is None:
            scheme = url.split(":", 1)[0][:20].lower() if ":" in url else "(none)"
            return (f"scheme {scheme!r} is not allowed (only http and https pages of the "
                    f"shop's origin {self.own})")
        return (f"origin {origin} is not the shop's origin {self.own} nor one allowed for it "
                "(shopfleet shop set NAME --allow-origin URL)")


def normalise_origins(urls: Iterable[str], *, field: str = "allowed_origins") -> list[str]:
    """Each URL's origin, without duplicates, in the order given.

    Raises:
        InvalidInput: one is not an http(s) URL with a host.
    """
    out: list[str] = []
    for u in urls:
        o = normalise_origin(u, field=field)
        if o not in out:
            out.append(o)
    return out
