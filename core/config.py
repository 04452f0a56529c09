"""One typed settings object, loaded from TOML and validated when constructed.

Every number that shapes behaviour (priorities, limits, rates) lives here, never in code.
Errors name the key (``queue.max_backlog: must be greater than 0``). Example::

    [queue]
    max_backlog = 100000

    [priority.types]
    reply_customer = 10

    [gates.domains."seller.example"]
    rate_per_s = 2.0
    burst = 4
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from .errors import ConfigError, InvalidInput


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StoreSettings(_Section):
    """Where the queue lives and how hard it holds on to a write."""

    path: str = ""
    """SQLite file; empty means ``shopfleet.db`` in the user's data directory."""
    url: str = ""
    """Alternative store URL (``redis://host:port/db``) for workers on several machines sharing
    one queue; empty means the SQLite file. A password goes in the URL
    (``redis://:secret@host:6379/0``) or in ``SHOPFLEET_REDIS_PASSWORD``."""
    redis_prefix: str = Field("shopfleet", pattern=r"^[A-Za-z0-9_.-]{1,64}$")
    """Prefix of every Redis key (two fleets can share one Redis with two prefixes)."""
    synchronous: Literal["FULL", "NORMAL"] = "FULL"
    """FULL: an acknowledged change survives a power cut. NORMAL: survives a crash only."""
    group_commit_max: int = Field(256, ge=1, le=100_000)
    """Most operations the writer thread commits in one transaction."""
    busy_timeout_s: float = Field(10.0, gt=0)


LEASE_HEARTBEATS = 3
"""A lease lasts at least this many heartbeats (``lease_s`` ≥ 3 × ``heartbeat_s``)."""


class QueueSettings(_Section):
    max_backlog: int = Field(100_000, gt=0)
    """Routine submissions are refused when this many tasks wait: queued, scheduled for later
    or suspended (``shopfleet status``'s backlog line)."""
    urgent_reserve: float = Field(0.10, ge=0, le=1)
    """Extra room (share of max_backlog) kept for tasks at or above the preemption threshold."""
    max_tasks_per_shop: int = Field(1, ge=1)
    """Tasks of one shop that may run at once (a shop's account is driven by one task)."""
    lease_s: float = Field(120.0, gt=0)
    """A claimed task's lease; a worker that stops renewing it loses the task to recovery."""
    recover_every_s: float = Field(15.0, gt=0)
    heartbeat_s: float = Field(5.0, gt=0)
    """How often a worker tells the store it is alive (the console's Workers table)."""
    worker_lost_after_s: float = Field(30.0, gt=0)
    schedule_tick_s: float = Field(5.0, ge=0.5, le=300)
    """How often an engine looks for due schedule firings (#18): a firing starts at most this
    late, plus its jitter. Below 0.5 s it only costs reads; above 5 minutes an "every 15m"
    schedule would drift visibly."""
    """A worker silent this long is marked lost and its running tasks are requeued at once
    (without waiting for their leases to run out)."""
    max_attempts: int = Field(3, ge=1)
    retry_backoff_s: float = Field(10.0, ge=0)
    """First retry waits this long; each further one twice as long (up to retry_backoff_max_s)."""
    retry_backoff_max_s: float = Field(600.0, ge=0)
    max_task_bytes: int = Field(256 * 1024, gt=0)
    """A task spec larger than this (as JSON) is rejected."""

    # --- #15 cross-field checks: the fields that must agree, named in the refusal
    @model_validator(mode="after")
    def _timings_agree(self) -> QueueSettings:
        if self.heartbeat_s >= self.worker_lost_after_s:
            raise ValueError(f"heartbeat_s ({self.heartbeat_s:g}) must be less than "
                             f"worker_lost_after_s ({self.worker_lost_after_s:g}): a worker "
                             "would be marked lost between two heartbeats")
        if self.lease_s < LEASE_HEARTBEATS * self.heartbeat_s:
            raise ValueError(f"lease_s ({self.lease_s:g}) must be at least {LEASE_HEARTBEATS} "
                             f"× heartbeat_s ({self.heartbeat_s:g}): a lease would run out "
                             "before it is renewed")
        if self.retry_backoff_max_s < self.retry_backoff_s:
            raise ValueError(f"retry_backoff_max_s ({self.retry_backoff_max_s:g}) must be at "
                             f"least retry_backoff_s ({self.retry_backoff_s:g})")
        return self


class PrioritySettings(_Section):
    types: dict[str, float] = Field(
        default_factory=lambda: {
            "reply_customer": 10.0,
            "campaign_signup": 9.0,
            "upload_product": 5.0,
            "collect_data": 3.0,
        }
    )
    """Base priority per task type."""
    aging_per_min: float = Field(0.2, ge=0, le=1000)
    """Points a queued task gains per minute of waiting."""
    hard_aging_min: float = Field(30.0, gt=0)
    """A task waiting longer jumps ahead of everything else and can no longer be preempted."""
    retry_bonus: float = Field(0.5, ge=0)
    """Points added per previous attempt."""
    preempt_threshold: float = Field(15.0)
    """Tasks scoring at least this may preempt and may use the backlog's urgent reserve."""
    urgency_refresh_s: float = Field(60.0, gt=0)
    """Longest time between two urgency re-estimates of a task with a deadline."""


class BrowserSettings(_Section):
    executable_path: str = ""
    """A Chromium/Chrome executable to use; empty means discover one."""
    channel: str = ""
    """A Playwright channel ("chrome", "msedge") to prefer; empty means try them in order."""
    headless: bool = True
    extra_args: list[str] = Field(default_factory=list)
    host_resolver_rules: str = ""
    """Chromium --host-resolver-rules (the demo maps its platform host names to loopback)."""


class PoolSettings(_Section):
    max_browsers: int = Field(2, ge=1, le=64)
    warm: int = Field(1, ge=0, le=64)
    tasks_per_browser: int = Field(50, ge=1)
    """A browser is retired after this many tasks (keeps leaks bounded)."""
    idle_retire_s: float = Field(300.0, gt=0)
    close_timeout_s: float = Field(5.0, gt=0)
    step_timeout_s: float = Field(30.0, gt=0)
    contexts_per_browser: int = Field(1, ge=1, le=16)
    """Task contexts one browser serves at once (slots = max_browsers × this)."""
    prewarm_contexts: bool = False
    """Prepare the next task's context while the current one runs (hides ~0.15 s per task)."""

    @model_validator(mode="after")
    def _warm_within_cap(self) -> PoolSettings:
        if self.warm > self.max_browsers:
            raise ValueError(f"warm ({self.warm}) cannot exceed max_browsers ({self.max_browsers})")
        return self


class DirsSettings(_Section):
    dirs: list[str] = Field(default_factory=list)


class GateSpec(_Section):
    rate_per_s: float = Field(gt=0)
    burst: float = Field(ge=1)


class GateSettings(_Section):
    global_: GateSpec = Field(default=GateSpec(rate_per_s=20.0, burst=20), alias="global")
    default_domain: GateSpec = GateSpec(rate_per_s=2.0, burst=5)
    domains: dict[str, GateSpec] = Field(default_factory=dict)

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)


class BreakerSettings(_Section):
    failures: int = Field(5, ge=1)
    """Classified site failures within window_s that open a domain's breaker."""
    window_s: float = Field(60.0, gt=0)
    backoff_s: float = Field(30.0, gt=0)
    backoff_max_s: float = Field(600.0, gt=0)


class RescueSettings(_Section):
    """The rescue chain: retry the step, reload and resume, then a person (a ticket)."""

    step_retries: int = Field(1, ge=0, le=10)
    """In-place retries of a failed read step (not for writes, CAPTCHAs or crashes)."""
    step_retry_wait_s: float = Field(1.0, ge=0)
    reload_resume: bool = True
    """After step retries, reload the flow's start page and resume from the last checkpoint."""
    attempt_budget_s: float = Field(300.0, gt=0)
    """In-attempt rescue stops once an attempt has run this long."""
    share: float = Field(0.3, gt=0, le=1)
    """Most rescue work as a share of all attempts in the window; beyond it, escalate."""
    window_s: float = Field(600.0, gt=0)
    min_attempts_for_share: int = Field(20, ge=1)
    """The share is enforced only once the window holds this many attempts."""
    quarantine_after: int = Field(2, ge=1)
    """Crashes of its browser or context after which a task is a poison pill."""
    reentry_bonus: float = Field(10.0, ge=0)
    """Points a task gets when an operator's answer sends it back (ahead of routine work)."""
    ticket_sla_min: float = Field(30.0, gt=0)
    """Tickets older than this are shown as over their SLA."""


class PlatformSettings(_Section):
    """Per-platform trust settings (``[platforms.NAME]``)."""

    allowed_origins: list[str] = Field(default_factory=list)
    """Origins (http/https URLs) every shop of the platform may load besides its own."""
    login_url: str = ""
    """Where the platform's shops log in, when not on the shop's own origin: credentials are
    typed only on this URL's origin."""
    # --- #17 shop profiles: defaults for the platform's shops (a shop's own value wins).
    # No proxy here: two shops of one platform should not share an exit.
    locale: str = ""
    """BCP 47 locale (``zh-CN``); empty: ``zh-CN``."""
    timezone: str = ""
    """IANA time zone (``Asia/Shanghai``); empty: the system's."""
    user_agent: str = ""
    """The User-Agent; empty: the browser's own."""
    viewport: str = ""
    """``WIDTHxHEIGHT``; empty: the browser's default."""
    geolocation: str = ""
    """``LATITUDE,LONGITUDE``; empty: none granted."""
    headers: dict[str, str] = Field(default_factory=dict)
    """Extra request headers for every shop of the platform."""

    @model_validator(mode="after")
    def _origins_are_http(self) -> PlatformSettings:
        from .origins import normalise_origin

        for i, url in enumerate(self.allowed_origins):
            try:
                normalise_origin(url)
            except InvalidInput as exc:
                raise ValueError(f"allowed_origins[{i}]: {exc.reason}") from None
        if self.login_url:
            try:
                normalise_origin(self.login_url)
            except InvalidInput as exc:
                raise ValueError(f"login_url: {exc.reason}") from None
        self._check_profile_defaults()
        return self

    def _check_profile_defaults(self) -> None:
        from . import profiles

        checks = (("locale", profiles.check_locale), ("timezone", profiles.check_timezone),
                  ("user_agent", profiles.check_user_agent),
                  ("viewport", profiles.parse_viewport),
                  ("geolocation", profiles.parse_geolocation))
        for name, check in checks:
            value = getattr(self, name)
            if value:
                try:
                    check(value, field=name)
                except InvalidInput as exc:
                    raise ValueError(f"{name}: {exc.reason}") from None
        try:
            profiles.check_headers(self.headers.items(), field="headers")
        except InvalidInput as exc:
            raise ValueError(f"{exc.field}: {exc.reason}") from None


class SecuritySettings(_Section):
    """The trust boundary's switches (``[security]``)."""

    inline_credentials: bool = False
    """May a task's inline steps use ``{shop.username}``/``{shop.password}``? Off: only
    registered flows (reviewed files) may type a shop's credentials."""
    route_foreign_documents: bool = False
    """Defence in depth: a context route aborts every page or frame request to a foreign
    origin before it leaves the browser (the runner's checks stop the task either way). It
    costs each page load: Playwright's driver then intercepts every request (a foreign one
    also goes through Python); ``bench/origin_route.py`` measures it. Redirects are not
    routed by Playwright, so the runner's checks stay the boundary."""


class ProfileSettings(_Section):
    """Shop profiles (#17). A shop whose proxy fails waits behind its own breaker
    (``proxy:<shop>``), counted and backed off with the ``[breakers]`` numbers."""

    echo_url: str = ""
    """A page that reports what a site sees (the demo site's ``/echo``); ``shop check`` loads
    it through the shop's profile. Empty: ``shop check`` needs ``--echo-url``."""

    @model_validator(mode="after")
    def _echo_is_http(self) -> ProfileSettings:
        from urllib.parse import urlsplit

        parts = urlsplit(self.echo_url)
        if self.echo_url and (parts.scheme not in ("http", "https") or not parts.hostname):
            raise ValueError("echo_url: must be an http:// or https:// URL")
        return self


class PreemptionSettings(_Section):
    """Urgent work takes a browser slot from lower-scored work at a safe step."""

    enabled: bool = True
    storm_limit: int = Field(2, ge=0)
    """Preemptions allowed per slot (a shop's slot) within storm_window_s; then refused."""
    storm_window_s: float = Field(60.0, gt=0)
    grace_s: float = Field(30.0, gt=0)
    """A holder that has not yielded this long after being asked is cancelled the hard way."""
    min_score_gap: float = Field(1.0, ge=0)
    """The urgent task must outscore the holder by this much: two urgent tasks a hair apart
    (aging) must not keep taking each other's slot."""


class MetricsSettings(_Section):
    """Prometheus exposition of a worker's statistics (for fleets that run Grafana)."""

    port: int = Field(0, ge=0, le=65535)
    """Serve ``/metrics`` on this port; 0 turns it off."""
    host: str = "127.0.0.1"
    """Loopback by default: open it to the network on purpose (``0.0.0.0``), never by
    accident."""
    token: str = ""
    """Bearer token a scraper must send (``Authorization: Bearer …``). Required when ``host``
    is not a loopback address: worker ids, shop domains and queue sizes are not for anyone on
    the network."""

    @model_validator(mode="after")
    def _token_off_loopback(self) -> MetricsSettings:
        if not is_loopback(self.host) and not self.token:
            raise ValueError(f"metrics host {self.host!r} is not a loopback address: set "
                             "[metrics] token (scrapers send it as a bearer token)")
        return self


def is_loopback(host: str) -> bool:
    """True for ``localhost`` and loopback addresses (127.0.0.0/8, ::1); False for
    ``0.0.0.0``, ``::``, other addresses and names."""
    import ipaddress

    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


# --- #19 notifications
class DigestSettings(_Section):
    """The daily digest to the targets that want ``digest`` events."""

    at: str = ""
    """Local time ``HH:MM`` to send it (empty: no digest)."""
    tz: str = "UTC"
    """The time zone of ``at`` (and of the day the digest counts)."""

    @field_validator("at")
    @classmethod
    def _at(cls, v: str) -> str:
        if v and not re.fullmatch(r"([01]\d|2[0-3]):[0-5]\d", v):
            raise ValueError(f"{v!r} is not a time HH:MM (00:00 to 23:59)")
        return v

    @field_validator("tz")
    @classmethod
    def _tz(cls, v: str) -> str:
        try:
            ZoneInfo(v)
        except (ZoneInfoNotFoundError, ValueError):
            raise ValueError(f"unknown time zone {v!r}") from None
        return v


class Settings(_Section):
    """The whole configuration. Construct with :func:`load_settings` or directly in tests."""

    store: StoreSettings = StoreSettings()
    queue: QueueSettings = QueueSettings()
    priority: PrioritySettings = PrioritySettings()
    browser: BrowserSettings = BrowserSettings()
    pool: PoolSettings = PoolSettings()
    flows: DirsSettings = DirsSettings()
    assets: DirsSettings = DirsSettings()
    gates: GateSettings = GateSettings()
    breakers: BreakerSettings = BreakerSettings()
    rescue: RescueSettings = RescueSettings()
    preemption: PreemptionSettings = PreemptionSettings()
    profiles: ProfileSettings = ProfileSettings()
    metrics: MetricsSettings = MetricsSettings()
    platforms: dict[str, PlatformSettings] = Field(default_factory=dict)
    security: SecuritySettings = SecuritySettings()
    # --- #19 notifications: ``[[notify]]`` targets (checked by core.notify.parse_targets)
    notify: list[dict[str, Any]] = Field(default_factory=list)
    digest: DigestSettings = DigestSettings()

    def with_changes(self, **sections: dict[str, Any]) -> Settings:
        """A copy with some keys of some sections replaced, validated again."""
        data = self.model_dump(by_alias=True)
        for name, changes in sections.items():
            data.setdefault(name, {}).update(changes)
        return settings_from_dict(data, source="<override>")


def _loc(err_loc: tuple[Any, ...]) -> str:
    return ".".join("global" if p == "global_" else str(p) for p in err_loc)


def settings_from_dict(data: dict[str, Any], *, source: str = "<config>") -> Settings:
    """Validate a parsed configuration; :class:`ConfigError` names the first bad key."""
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        key = _loc(tuple(first["loc"])) or "(top level)"
        msg = str(first["msg"]).removeprefix("Value error, ")
        if first["type"] == "extra_forbidden":
            msg = "unknown key"
        raise ConfigError(key, f"{msg} (in {source})") from None
    if settings.notify:  # #19: every [[notify]] entry, field by field
        from .errors import SpecError
        from .notify.targets import parse_targets

        try:
            parse_targets(settings.notify)
        except SpecError as exc:
            raise ConfigError(exc.field, f"{exc.reason} (in {source})") from None
    return settings


def load_settings(path: str | Path | None) -> Settings:
    """Read and validate a TOML configuration file; ``None`` gives the defaults."""
    if path is None:
        return Settings()
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError("--config", f"no such file: {p}") from None
    except OSError as exc:
        raise ConfigError("--config", f"cannot read {p}: {exc.strerror}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError("--config", f"{p} is not valid TOML: {exc}") from None
    return settings_from_dict(data, source=str(p))
