"""Notification targets: where alerts go, which ones, for which shops, when and how often.

A ``[[notify]]`` entry in the configuration (or one ``shopfleet notify add`` writes)::

    [[notify]]
    name = "ops-group"
    kind = "dingtalk"                 # dingtalk | wecom | feishu | slack | webhook
    url = "https://oapi.dingtalk.com/robot/send?access_token=..."
    secret = "SEC..."                 # DingTalk/Feishu signing, webhook HMAC; optional
    events = ["ticket", "breaker_open"]   # default: every event
    shops = "platform:pdd -tag:test"  # optional selector (core.selectors); events that name
                                      # no shop (a breaker, a worker) always pass it
    quiet_hours = "22:00-07:00"       # optional; held, not dropped: sent when they end
    tz = "Asia/Shanghai"              # the quiet hours' time zone (default UTC)
    rate_per_min = 20                 # messages a minute at most (DingTalk's documented cap)
    batch_window_s = 10               # events within this window become one message
    lang = "zh_CN"                    # zh_CN | en
    screenshots = false               # wecom and webhook only: a ticket's (masked) screenshot
                                      # goes along; evidence may hold customer data, so opt in

Every field is checked by :func:`parse_target`; bad input raises
:class:`~core.errors.SpecError` naming the field (``notify.url``) and why.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, time, timedelta
from typing import Any
from urllib.parse import urlsplit
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from core.errors import SpecError
from core.selectors import Selector, ShopLike, parse_selector

KINDS: tuple[str, ...] = ("dingtalk", "wecom", "feishu", "slack", "webhook")
EVENTS: tuple[str, ...] = ("ticket", "quarantine", "breaker_open", "worker_lost",
                           "schedule_failed", "digest")
LANGS: tuple[str, ...] = ("zh_CN", "en")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_HHMM = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")
_KEYS = {"name", "kind", "url", "secret", "events", "shops", "quiet_hours", "tz",
         "rate_per_min", "batch_window_s", "lang", "screenshots"}

SCREENSHOT_MAX_BYTES: dict[str, int] = {
    "wecom": 2 * 1024 * 1024,    # WeCom group robot, msgtype image: at most 2 MB before base64
    "webhook": 2 * 1024 * 1024,  # our own envelope: the same cap, so one setting fits both
}
"""Kinds that can carry a ticket's screenshot, and the most bytes of PNG each takes."""

NO_SCREENSHOTS: dict[str, str] = {
    "dingtalk": "a DingTalk custom robot shows images only from a public URL (markdown or "
                "link picUrl); it cannot take the image itself, and ShopFleet hosts nothing",
    "feishu": "a Feishu custom bot sends an image only by an image_key, which needs an app's "
              "token to upload; a webhook bot has none",
    "slack": "a Slack incoming webhook shows images only from a public image_url or a file "
             "uploaded with a bot token; a webhook has neither",
}
"""Why the other kinds refuse ``screenshots`` (their documented webhook APIs)."""


@dataclass(frozen=True, slots=True)
class QuietHours:
    """A daily span in a time zone when messages are held (it may cross midnight)."""

    start: time
    end: time
    tz: str = "UTC"

    def active(self, now: float) -> bool:
        """Whether ``now`` (epoch seconds) falls inside the span."""
        t = datetime.fromtimestamp(now, ZoneInfo(self.tz)).time()
        if self.start <= self.end:
            return self.start <= t < self.end
        return t >= self.start or t < self.end

    def ends_after(self, now: float) -> float:
        """The epoch time the current span ends (``now`` when not inside one)."""
        if not self.active(now):
            return now
        zone = ZoneInfo(self.tz)
        local = datetime.fromtimestamp(now, zone)
        end = datetime.combine(local.date(), self.end, tzinfo=zone)
        if end <= local:
            end = datetime.combine(local.date() + timedelta(days=1), self.end, tzinfo=zone)
        return end.timestamp()


@dataclass(frozen=True, slots=True)
class Target:
    """A validated notification target."""

    name: str
    kind: str
    url: str
    secret: str = ""
    events: frozenset[str] = frozenset(EVENTS)
    shops: Selector | None = None
    quiet: QuietHours | None = None
    rate_per_min: int = 20
    batch_window_s: float = 10.0
    lang: str = "zh_CN"
    screenshots: bool = False
    """Send a ticket's masked screenshot along (#19; only kinds in SCREENSHOT_MAX_BYTES)."""

    def wants(self, kind: str, shop: ShopLike | None) -> bool:
        """Whether an event of ``kind`` about ``shop`` (``None``: no shop) goes here."""
        if kind not in self.events:
            return False
        return shop is None or self.shops is None or self.shops.matches(shop)

    def __repr__(self) -> str:  # never print the secret (or the URL's token)
        return f"Target(name={self.name!r}, kind={self.kind!r})"


def _fail(prefix: str, name: str, reason: str) -> SpecError:
    return SpecError(f"{prefix}.{name}", reason)


def parse_quiet_hours(text: Any, tz: Any = "UTC", *, field: str = "notify.quiet_hours"
                      ) -> QuietHours:
    """Parse ``"22:00-07:00"`` in time zone ``tz``."""
    if not isinstance(text, str):
        raise SpecError(field, "must be text like 22:00-07:00")
    parts = text.strip().split("-")
    if len(parts) != 2:
        raise SpecError(field, f"{text!r} is not HH:MM-HH:MM")
    times = []
    for p in parts:
        m = _HHMM.fullmatch(p.strip())
        if not m:
            raise SpecError(field, f"{p.strip()!r} is not a time HH:MM (00:00 to 23:59)")
        times.append(time(int(m.group(1)), int(m.group(2))))
    if times[0] == times[1]:
        raise SpecError(field, "start and end are the same time")
    tz_field = field.rsplit(".", 1)[0] + ".tz"
    if not isinstance(tz, str) or not tz:
        raise SpecError(tz_field, "must be a time zone name like Asia/Shanghai")
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError):
        raise SpecError(tz_field, f"unknown time zone {tz!r}") from None
    return QuietHours(times[0], times[1], tz)


def parse_target(raw: Mapping[str, Any], *, prefix: str = "notify") -> Target:
    """Validate one ``[[notify]]`` entry.

    Raises:
        SpecError: naming the field (``notify.kind``, ``notify.url`` …) and the reason.
    """
    if not isinstance(raw, Mapping):
        raise SpecError(prefix, "must be a table of settings")
    unknown = sorted(str(k) for k in raw if k not in _KEYS)
    if unknown:
        raise _fail(prefix, unknown[0], f"unknown setting; known: {', '.join(sorted(_KEYS))}")
    name = raw.get("name")
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise _fail(prefix, "name", "1 to 64 letters, digits, '_', '-' or '.', starting with a "
                                    "letter or digit")
    kind = raw.get("kind")
    if kind not in KINDS:
        raise _fail(prefix, "kind", f"unknown kind {kind!r}; one of {', '.join(KINDS)}")
    url = raw.get("url")
    if not isinstance(url, str) or len(url) > 2048 or any(c.isspace() for c in url):
        raise _fail(prefix, "url", "must be an http(s) URL without spaces")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 -- raises on a bad port
    except ValueError as exc:
        raise _fail(prefix, "url", f"not a URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _fail(prefix, "url", f"{parts.scheme or 'no'} scheme; only http(s) URLs with a "
                                   "host are allowed")
    if parts.username or parts.password:
        raise _fail(prefix, "url", "must not carry a user name or password")
    secret = raw.get("secret", "")
    if not isinstance(secret, str) or len(secret) > 512 or any(ord(c) < 32 for c in secret):
        raise _fail(prefix, "secret", "must be text of at most 512 printable characters")
    events_raw = raw.get("events", list(EVENTS))
    if isinstance(events_raw, str) or not isinstance(events_raw, Sequence) or not events_raw:
        raise _fail(prefix, "events", f"must be a non-empty list of: {', '.join(EVENTS)}")
    for ev in events_raw:
        if ev not in EVENTS:
            raise _fail(prefix, "events", f"unknown event {ev!r}; one of {', '.join(EVENTS)}")
    shops = None
    if raw.get("shops") is not None:
        shops = parse_selector(raw["shops"], field=f"{prefix}.shops")
    quiet = None
    if raw.get("quiet_hours") is not None:
        quiet = parse_quiet_hours(raw["quiet_hours"], raw.get("tz", "UTC"),
                                  field=f"{prefix}.quiet_hours")
    elif "tz" in raw:
        parse_quiet_hours("00:00-00:01", raw["tz"], field=f"{prefix}.quiet_hours")
    rate = raw.get("rate_per_min", 20)
    if isinstance(rate, bool) or not isinstance(rate, int) or not 1 <= rate <= 600:
        raise _fail(prefix, "rate_per_min", "must be a whole number from 1 to 600")
    window = raw.get("batch_window_s", 10)
    if isinstance(window, bool) or not isinstance(window, int | float) or not (
            0 <= window <= 3600):
        raise _fail(prefix, "batch_window_s", "must be a number of seconds from 0 to 3600")
    lang = raw.get("lang", "zh_CN")
    if lang not in LANGS:
        raise _fail(prefix, "lang", f"unknown language {lang!r}; one of {', '.join(LANGS)}")
    screenshots = raw.get("screenshots", False)
    if not isinstance(screenshots, bool):
        raise _fail(prefix, "screenshots", "must be true or false")
    if screenshots and kind not in SCREENSHOT_MAX_BYTES:
        raise _fail(prefix, "screenshots", f"{kind} cannot carry screenshots: "
                    f"{NO_SCREENSHOTS[kind]} (screenshots work with: "
                    f"{', '.join(SCREENSHOT_MAX_BYTES)})")
    return Target(name=name, kind=kind, url=url, secret=secret,
                  events=frozenset(events_raw), shops=shops, quiet=quiet,
                  rate_per_min=rate, batch_window_s=float(window), lang=lang,
                  screenshots=screenshots)


def parse_targets(raws: Sequence[Mapping[str, Any]]) -> list[Target]:
    """Validate every ``[[notify]]`` entry; names must be unique."""
    out: list[Target] = []
    seen: set[str] = set()
    for i, raw in enumerate(raws):
        t = parse_target(raw, prefix=f"notify[{i}]")
        if t.name in seen:
            raise SpecError(f"notify[{i}].name", f"{t.name!r} is used twice")
        seen.add(t.name)
        out.append(t)
    return out
