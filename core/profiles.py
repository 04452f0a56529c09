"""A shop's network identity: its proxy, locale, time zone, user agent, viewport, geolocation
and extra headers, applied to every browser context the shop runs in.

:class:`ShopProfile` is what the store keeps for a shop (no secrets: the proxy's password is
encrypted with the vault and stored beside it, like the shop's own password).
:func:`parse_profile_fields` turns operator input (CLI, console, shop list) into a profile,
naming the field that is wrong. :func:`context_options_for` merges a shop's profile with its
platform's defaults (``[platforms.NAME]``) and the built-in ones (locale ``zh-CN``, the
system's time zone, the browser's own user agent) into :class:`ContextOptions`, the one
thing the pool, ``run-flow``, the self-test, ``shop check`` and the takeover browser hand to
Playwright's ``new_context``.

Chromium and proxies: Playwright takes a proxy per context; since Playwright 1.46
(microsoft/playwright#31724) Chromium no longer needs a browser-wide placeholder proxy at
launch for that, and such a placeholder would send every context *without* a proxy of its own
to it. So browsers are launched without one, and contexts with and without a proxy share a
browser. Chromium never sends loopback addresses through a proxy unless the bypass list says
``<-loopback>``: a shop with a proxy gets that, so *all* its traffic takes its path
(Playwright 1.65 adds it for Chromium itself; saying it here keeps the promise ours).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from .errors import InvalidInput

# Only ``errors`` is imported: the configuration and the store's records import this module.
# Settings (``core.config.Settings``) and shops (``core.store.ShopRecord``) come in as Any.
Settings = Any
ShopRecord = Any


DEFAULT_LOCALE = "zh-CN"
"""The locale of a shop with none of its own and none from its platform."""

PROXY_SCHEMES = ("http", "https", "socks5")

# BCP 47, the parts browsers use: language, optional script, optional region, optional
# variants (``zh-CN``, ``zh-Hant-TW``, ``en-US``, ``es-419``, ``de-CH-1996``).
_LOCALE = re.compile(
    r"^[A-Za-z]{2,3}(?:-[A-Za-z]{4})?(?:-(?:[A-Za-z]{2}|[0-9]{3}))?(?:-(?:[A-Za-z0-9]{5,8}|[0-9][A-Za-z0-9]{3}))*$")
_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_VIEWPORT = re.compile(r"^\s*(\d{1,5})\s*[xX×]\s*(\d{1,5})\s*$")
# Headers the browser owns, or that the profile sets from other fields.
_RESERVED_HEADERS = {
    "host", "content-length", "connection", "transfer-encoding", "cookie", "proxy-authorization",
    "authorization", "upgrade", "te", "trailer", "keep-alive", "user-agent", "accept-language",
}
_MAX_UA = 512
_MAX_HEADER_VALUE = 1024
_MAX_HEADERS = 20


@dataclass(frozen=True)
class ShopProfile:
    """A shop's own settings; empty fields fall back to its platform's, then the built-ins.

    Attributes:
        proxy: ``scheme://[user@]host:port`` (http, https or socks5), no password; empty for
            a direct connection.
        locale: BCP 47 (``zh-CN``); also ``navigator.language`` and ``Accept-Language``.
        timezone: an IANA name (``Asia/Shanghai``).
        user_agent: the ``User-Agent`` the shop's browser sends.
        viewport: (width, height) in CSS pixels.
        geolocation: (latitude, longitude), granted to the shop's pages.
        headers: extra request headers, (name, value) pairs.
    """

    proxy: str = ""
    locale: str = ""
    timezone: str = ""
    user_agent: str = ""
    viewport: tuple[int, int] | None = None
    geolocation: tuple[float, float] | None = None
    headers: tuple[tuple[str, str], ...] = ()

    @property
    def is_empty(self) -> bool:
        return self == ShopProfile()

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (what the store keeps and ``shops --json`` shows)."""
        return {
            "proxy": self.proxy, "locale": self.locale, "timezone": self.timezone,
            "user_agent": self.user_agent,
            "viewport": list(self.viewport) if self.viewport else None,
            "geolocation": list(self.geolocation) if self.geolocation else None,
            "headers": {k: v for k, v in self.headers},
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | None) -> ShopProfile:
        """The profile a store kept (``''``/``'{}'``/None: the empty profile)."""
        data = json.loads(text) if text else {}
        if not data:
            return cls()
        vp = data.get("viewport")
        geo = data.get("geolocation")
        return cls(proxy=data.get("proxy") or "", locale=data.get("locale") or "",
                   timezone=data.get("timezone") or "", user_agent=data.get("user_agent") or "",
                   viewport=(int(vp[0]), int(vp[1])) if vp else None,
                   geolocation=(float(geo[0]), float(geo[1])) if geo else None,
                   headers=tuple((str(k), str(v)) for k, v in (data.get("headers") or {}).items()))


@dataclass(frozen=True)
class ProxyAddress:
    """A proxy URL taken apart: ``server`` has no credentials; ``password`` is the secret."""

    server: str
    username: str = ""
    password: str = field(default="", repr=False)

    @property
    def url(self) -> str:
        """The URL without the password (``http://user@host:port``), fit to store and show."""
        if not self.username:
            return self.server
        scheme, rest = self.server.split("://", 1)
        return f"{scheme}://{quote(self.username, safe='')}@{rest}"


# --------------------------------------------------------------------------- validation


def parse_proxy(url: str, *, field: str = "proxy") -> ProxyAddress:
    """``scheme://[user[:password]@]host[:port]`` taken apart, or :class:`InvalidInput`.

    The reasons never repeat the URL: it may hold a password.
    """
    text = (url or "").strip()
    if not text:
        raise InvalidInput(field, "is empty")
    if any(ord(c) < 0x21 or c == "\x7f" for c in text):
        raise InvalidInput(field, "must not contain spaces or control characters")
    try:
        parts = urlsplit(text)
        port = parts.port
        host = parts.hostname
    except ValueError as exc:
        raise InvalidInput(field, f"is not a proxy URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in PROXY_SCHEMES:
        raise InvalidInput(field, "must start with http://, https:// or socks5://")
    if not host:
        raise InvalidInput(field, "names no host")
    if parts.path not in ("", "/") or parts.query or parts.fragment:
        raise InvalidInput(field, "must be scheme://[user:password@]host:port, nothing after it")
    username = unquote(parts.username or "")
    password = unquote(parts.password or "")
    if scheme == "socks5" and (username or password):
        # Chromium cannot authenticate to a SOCKS5 proxy: the shop would silently go direct
        # or fail every page.
        raise InvalidInput(field, "socks5 proxies with a user name or password are not "
                           "supported by Chromium; use an http(s) proxy or an open socks5 one")
    if password and not username:
        raise InvalidInput(field, "has a password but no user name")
    hostport = f"[{host}]" if ":" in host else host
    if port is not None:
        hostport += f":{port}"
    return ProxyAddress(server=f"{scheme}://{hostport}", username=username, password=password)


def check_locale(value: str, *, field: str = "locale") -> str:
    v = value.strip()
    if not _LOCALE.match(v):
        raise InvalidInput(field, f"{value[:40]!r} is not a locale such as zh-CN or en-US")
    return v


def check_timezone(value: str, *, field: str = "timezone") -> str:
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    v = value.strip()
    # ZoneInfo reads files named by the key: refuse anything path-like before it looks.
    if (not v or len(v) > 64 or v.startswith(("/", ".")) or ".." in v or "\\" in v
            or not re.match(r"^[A-Za-z0-9_+\-/]+$", v)):
        raise InvalidInput(field, f"{value[:40]!r} is not a time zone such as Asia/Shanghai")
    try:
        ZoneInfo(v)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(field, f"unknown time zone {v!r} (an IANA name such as "
                           "Asia/Shanghai)") from None
    return v


def check_user_agent(value: str, *, field: str = "user_agent") -> str:
    v = value.strip()
    if not v:
        raise InvalidInput(field, "is empty")
    if len(v) > _MAX_UA:
        raise InvalidInput(field, f"is longer than {_MAX_UA} characters")
    if any(ord(c) < 0x20 or ord(c) == 0x7f or ord(c) > 0x7e for c in v):
        raise InvalidInput(field, "must be printable ASCII (no control characters)")
    return v


def parse_viewport(value: str, *, field: str = "viewport") -> tuple[int, int]:
    m = _VIEWPORT.match(value or "")
    if not m:
        raise InvalidInput(field, f"{(value or '')[:40]!r} is not WIDTHxHEIGHT (e.g. 1366x768)")
    w, h = int(m.group(1)), int(m.group(2))
    if not (200 <= w <= 7680 and 200 <= h <= 4320):
        raise InvalidInput(field, "width and height must be between 200 and 7680×4320 pixels")
    return w, h


def parse_geolocation(value: str, *, field: str = "geolocation") -> tuple[float, float]:
    try:
        lat_s, lon_s = (value or "").split(",")
        lat, lon = float(lat_s), float(lon_s)
    except ValueError:
        raise InvalidInput(field, "is not LATITUDE,LONGITUDE (e.g. 31.23,121.47)") from None
    if not (math.isfinite(lat) and math.isfinite(lon)) or not (-90 <= lat <= 90) \
            or not (-180 <= lon <= 180):
        raise InvalidInput(field, "latitude must be within ±90 and longitude within ±180")
    return lat, lon


def parse_header(value: str, *, field: str = "header") -> tuple[str, str]:
    name, sep, val = (value or "").partition(":")
    name, val = name.strip(), val.strip()
    if not sep or not name:
        raise InvalidInput(field, "is not NAME:VALUE")
    if not _TOKEN.match(name) or len(name) > 64:
        raise InvalidInput(field, f"{name[:40]!r} is not a header name")
    if name.lower() in _RESERVED_HEADERS:
        why = ("follows the locale" if name.lower() == "accept-language"
               else "is the user agent setting" if name.lower() == "user-agent"
               else "is the browser's own")
        raise InvalidInput(field, f"{name} {why}; it cannot be set as an extra header")
    if len(val) > _MAX_HEADER_VALUE or any((ord(c) < 0x20 and c != "\t") or ord(c) == 0x7f
                                           for c in val):
        raise InvalidInput(field, f"the value of {name} has control characters or is too long")
    return name, val


def check_headers(pairs: Any, *, field: str = "header") -> tuple[tuple[str, str], ...]:
    out: dict[str, tuple[str, str]] = {}
    for i, (k, v) in enumerate(pairs):
        name, val = parse_header(f"{k}:{v}", field=f"{field}[{i}]")
        out[name.lower()] = (name, val)
    if len(out) > _MAX_HEADERS:
        raise InvalidInput(field, f"at most {_MAX_HEADERS} extra headers")
    return tuple(out.values())


@dataclass(frozen=True)
class ProfileInput:
    """Operator input for a profile (CLI options, a dialog, a shop-list row): ``None`` leaves
    a field as it is, ``""`` clears it."""

    proxy: str | None = None
    locale: str | None = None
    timezone: str | None = None
    user_agent: str | None = None
    viewport: str | None = None
    geolocation: str | None = None
    headers: list[str] | None = None

    def __repr__(self) -> str:  # the proxy URL may carry a password
        return "ProfileInput(…)"


@dataclass(frozen=True)
class ProfileChange:
    """A validated change: the new profile and, when the proxy changed, its new password
    (``""``: none). ``proxy_changed`` False keeps the stored password."""

    profile: ShopProfile
    proxy_changed: bool
    proxy_password: str = field(default="", repr=False)


def parse_profile_fields(current: ShopProfile, given: ProfileInput, *,
                         prefix: str = "--") -> ProfileChange:
    """Apply operator input to ``current``; every bad value is :class:`InvalidInput` naming
    the field (``--timezone: unknown time zone 'Mars/Base'``). Nothing is written here."""
    def name(f: str) -> str:
        return f"{prefix}{f.replace('_', '-')}" if prefix == "--" else f"{prefix}{f}"

    p = current
    proxy_changed = False
    password = ""
    if given.proxy is not None:
        proxy_changed = True
        if given.proxy.strip():
            addr = parse_proxy(given.proxy, field=name("proxy"))
            p = replace(p, proxy=addr.url)
            password = addr.password
        else:
            p = replace(p, proxy="")
    if given.locale is not None:
        p = replace(p, locale=check_locale(given.locale, field=name("locale"))
                    if given.locale.strip() else "")
    if given.timezone is not None:
        p = replace(p, timezone=check_timezone(given.timezone, field=name("timezone"))
                    if given.timezone.strip() else "")
    if given.user_agent is not None:
        p = replace(p, user_agent=check_user_agent(given.user_agent, field=name("user_agent"))
                    if given.user_agent.strip() else "")
    if given.viewport is not None:
        p = replace(p, viewport=parse_viewport(given.viewport, field=name("viewport"))
                    if given.viewport.strip() else None)
    if given.geolocation is not None:
        p = replace(p, geolocation=parse_geolocation(given.geolocation,
                                                      field=name("geolocation"))
                    if given.geolocation.strip() else None)
    if given.headers is not None:
        pairs = [parse_header(h, field=name("header")) for h in given.headers if h.strip()]
        p = replace(p, headers=check_headers(pairs, field=name("header")))
    return ProfileChange(profile=p, proxy_changed=proxy_changed, proxy_password=password)


def profile_input_from_form(*, shown_proxy: str, proxy: str, proxy_password: str,
                            locale: str, timezone: str, user_agent: str, viewport: str,
                            geolocation: str, headers: list[str],
                            had_password: bool = False) -> ProfileInput:
    """The console's shop dialog as :class:`ProfileInput` (every field replaced; ``""``
    clears it). The dialog shows the stored proxy without its password (``shown_proxy``) and
    asks for the password apart: the proxy left as shown with no password typed keeps the
    stored one; a password typed goes with the proxy (it needs a user name in it). A changed
    proxy never takes the stored password along (it could be another server's): with a user
    name and ``had_password``, the password must be typed again. Check the result with
    :func:`parse_profile_fields` (``prefix=""`` names the dialog's fields).

    Raises:
        InvalidInput: ``proxy_password`` without a proxy user name, a changed proxy whose
            password was not typed again, or a bad proxy URL.
    """
    text = proxy.strip()
    url: str | None = text
    if text and proxy_password:
        addr = parse_proxy(text, field="proxy")
        if not addr.username:
            raise InvalidInput("proxy_password", "needs a user name in the proxy address "
                               "(http://user@host:port)")
        scheme, rest = addr.server.split("://", 1)
        url = (f"{scheme}://{quote(addr.username, safe='')}:"
               f"{quote(proxy_password, safe='')}@{rest}")
    elif text == shown_proxy.strip():
        url = None  # unchanged: its stored password stays
    elif text and had_password:
        addr = parse_proxy(text, field="proxy")
        if addr.username and not addr.password:
            raise InvalidInput("proxy_password", "type the proxy's password again: the proxy "
                               "changed, and its stored password is not sent to another one")
    return ProfileInput(proxy=url, locale=locale, timezone=timezone, user_agent=user_agent,
                        viewport=viewport, geolocation=geolocation,
                        headers=[h for h in headers if h.strip()])


# --------------------------------------------------------------------------- context options


@dataclass(frozen=True)
class ContextOptions:
    """What a shop's browser context is made with. Equal options make interchangeable
    contexts (the pool's spare contexts are matched on this); the proxy password is kept out
    of ``repr``."""

    locale: str = DEFAULT_LOCALE
    timezone_id: str = ""
    user_agent: str = ""
    viewport: tuple[int, int] | None = None
    geolocation: tuple[float, float] | None = None
    headers: tuple[tuple[str, str], ...] = ()
    proxy_server: str = ""
    proxy_username: str = ""
    proxy_password: str = field(default="", repr=False)

    @property
    def has_proxy(self) -> bool:
        return bool(self.proxy_server)

    @property
    def accept_language(self) -> str:
        return accept_language(self.locale)

    def playwright_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for Playwright's ``Browser.new_context``."""
        kw: dict[str, Any] = {"locale": self.locale,
                              "extra_http_headers": {**dict(self.headers),
                                                     "Accept-Language": self.accept_language}}
        if self.timezone_id:
            kw["timezone_id"] = self.timezone_id
        if self.user_agent:
            kw["user_agent"] = self.user_agent
        if self.viewport:
            kw["viewport"] = {"width": self.viewport[0], "height": self.viewport[1]}
        if self.geolocation:
            kw["geolocation"] = {"latitude": self.geolocation[0],
                                 "longitude": self.geolocation[1]}
            kw["permissions"] = ["geolocation"]
        if self.proxy_server:
            proxy: dict[str, str] = {"server": self.proxy_server, "bypass": "<-loopback>"}
            if self.proxy_username:
                proxy["username"] = self.proxy_username
                proxy["password"] = self.proxy_password
            kw["proxy"] = proxy
        return kw

    def describe(self) -> dict[str, Any]:
        """What an operator may see (no password)."""
        return {"proxy": ProxyAddress(self.proxy_server, self.proxy_username).url
                if self.proxy_server else "",
                "locale": self.locale, "accept_language": self.accept_language,
                "timezone": self.timezone_id or "(system)",
                "user_agent": self.user_agent or "(browser's own)",
                "viewport": "x".join(map(str, self.viewport)) if self.viewport else "(default)",
                "geolocation": ",".join(map(str, self.geolocation)) if self.geolocation else "",
                "headers": dict(self.headers)}


def accept_language(locale: str) -> str:
    """``zh-CN`` → ``zh-CN,zh;q=0.9``; ``en`` → ``en``."""
    lang = locale.split("-", 1)[0]
    return locale if lang == locale else f"{locale},{lang};q=0.9"


def effective_profile(shop_profile: ShopProfile, platform: str,
                      settings: Settings | None) -> ShopProfile:
    """The shop's profile with its platform's defaults (``[platforms.NAME]``) filled in."""
    plat = settings.platforms.get(platform) if settings is not None else None
    if plat is None:
        return shop_profile
    p = shop_profile
    return replace(
        p, locale=p.locale or plat.locale, timezone=p.timezone or plat.timezone,
        user_agent=p.user_agent or plat.user_agent,
        viewport=p.viewport or (parse_viewport(plat.viewport) if plat.viewport else None),
        geolocation=p.geolocation or (parse_geolocation(plat.geolocation)
                                      if plat.geolocation else None),
        headers=tuple({k.lower(): (k, v) for k, v in
                       (*plat.headers.items(), *p.headers)}.values()))


def context_options_for(shop: ShopRecord, settings: Settings | None, *,
                        proxy_password: str = "") -> ContextOptions:
    """The options every context of ``shop`` is made with (tasks, spares, ``run-flow``,
    ``shop check``, the self-test and the takeover browser all use this one function).

    ``proxy_password`` is the decrypted proxy password (see :func:`load_context_options`).
    """
    p = effective_profile(shop.profile, shop.platform, settings)
    addr = parse_proxy(p.proxy) if p.proxy else None
    return ContextOptions(
        locale=p.locale or DEFAULT_LOCALE, timezone_id=p.timezone, user_agent=p.user_agent,
        viewport=p.viewport, geolocation=p.geolocation, headers=p.headers,
        proxy_server=addr.server if addr else "",
        proxy_username=addr.username if addr else "",
        proxy_password=proxy_password if addr and addr.username else "")


def default_context_options(settings: Settings | None = None) -> ContextOptions:
    """The options of a shop with no profile and no platform defaults (spare contexts)."""
    return ContextOptions()



def shop_json(shop: ShopRecord) -> dict[str, Any]:
    """A shop as ``shops --json`` and the console show it (no password of any kind)."""
    d = {k: v for k, v in shop.__dict__.items() if k != "profile"}
    d["allowed_origins"] = list(shop.allowed_origins)
    d["profile"] = shop.profile.to_dict()
    return d



@dataclass(frozen=True)
class ExitWarning:
    """Shops of one platform that a platform could tie together by their network path."""

    platform: str
    shops: tuple[str, ...]
    kind: str
    """``proxy`` or ``exit`` (they share one: ``address``), or ``direct`` (no proxy while
    other shops of the platform use one)."""
    address: str = ""

    def __str__(self) -> str:
        if self.kind == "direct":
            return (f"{self.platform}: no proxy while other shops of the platform use one: "
                    f"{', '.join(self.shops)}")
        return f"{self.platform}: shops {', '.join(self.shops)} share {self.kind} {self.address}"


def check_exits(shops: Any, exits: dict[str, str] | None = None) -> list[ExitWarning]:
    """Shops of one platform that would look related to the platform: two sharing a proxy
    (or, with ``exits`` measured by ``shop check``, one exit address), and shops going direct
    while others of their platform use a proxy.

    Args:
        shops: :class:`ShopRecord` s.
        exits: shop name → exit address seen by the echo page (overrides the configured
            proxy as what is compared).
    """
    exits = exits or {}
    by_platform: dict[str, list[Any]] = {}
    for s in shops:
        by_platform.setdefault(s.platform, []).append(s)
    out: list[ExitWarning] = []
    for platform, group in sorted(by_platform.items()):
        seen: dict[tuple[str, str], list[str]] = {}
        direct: list[str] = []
        for s in sorted(group, key=lambda x: x.name):
            if s.name in exits:
                key = ("exit", exits[s.name])
            elif s.profile.proxy:
                key = ("proxy", parse_proxy(s.profile.proxy).server)
            else:
                direct.append(s.name)
                continue
            seen.setdefault(key, []).append(s.name)
        for (kind, address), names in sorted(seen.items(), key=lambda kv: f"{kv[0][0]} {kv[0][1]}"):
            if len(names) > 1:
                out.append(ExitWarning(platform, tuple(names), kind, address))
        if direct and seen:
            out.append(ExitWarning(platform, tuple(direct), "direct"))
    return out


def exit_warnings(shops: Any, exits: dict[str, str] | None = None) -> list[str]:
    """:func:`check_exits` as lines (``shopfleet shops``, ``shop check``)."""
    return [str(w) for w in check_exits(shops, exits)]


PROFILE_COLUMNS = ("proxy", "locale", "timezone", "user_agent", "viewport", "geolocation",
                   "headers")
"""The profile columns of a shop-list row (a CSV/XLSX import or the console's shop dialog)."""


def profile_input_from_row(row: dict[str, Any]) -> ProfileInput:
    """A shop-list row's profile columns as :class:`ProfileInput` (a missing column leaves the
    field as it is, an empty cell clears it; ``headers`` is ``K:V; K:V``). Check it with
    :func:`parse_profile_fields` (``prefix="row 3: "`` names the row)."""
    def cell(name: str) -> str | None:
        v = row.get(name)
        return None if v is None else str(v)

    headers = cell("headers")
    return ProfileInput(
        proxy=cell("proxy"), locale=cell("locale"), timezone=cell("timezone"),
        user_agent=cell("user_agent"), viewport=cell("viewport"),
        geolocation=cell("geolocation"),
        headers=None if headers is None else [h for h in headers.split(";") if h.strip()])
