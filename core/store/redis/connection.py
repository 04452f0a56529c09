"""The Redis store's connection: its client, its Lua scripts and the keys of priority.

See :mod:`core.store.redis.store` for the store as a whole.
"""


from __future__ import annotations

import json
from typing import Any, NoReturn, Self

import redis
from redis.commands.core import Script

from ...clock import SYSTEM_CLOCK, Clock
from ...config import Settings
from ...errors import (
    BacklogFull,
    InvalidInput,
    LeaseLost,
    Refused,
    StoreUnavailable,
    UnknownTask,
)
from ...priority import KEY_EPOCH, KEY_SCALE, index_key, static_points
from ...urls import public_url
from ..prepare import Validator
from . import sorts
from .keys import BAND_SPAN, Keys, glob_escape
from .lua import PRELUDE, SCRIPTS

HALF_SPAN = BAND_SPAN // 2
STREAM_MAXLEN = 1_000_000
ROOM_POLL_S = 0.05


def _f(v: str | None) -> float | None:
    return float(v) if v is not None else None


def _j(v: str | None) -> Any:
    return json.loads(v) if v else None


def connect_error(exc: BaseException, where: str, *, field: str = "store.url") -> Exception:
    """A ShopFleet error for a Redis that refused us at connection time (never a traceback;
    ``where`` is the URL without its password)."""
    text = str(exc)
    if isinstance(exc, redis.AuthenticationError) or any(
            word in text for word in ("WRONGPASS", "NOAUTH", "invalid password",
                                      "invalid username-password")):
        return InvalidInput(field, f"Redis at {where} refused the password or user name "
                            f"({text.split(',')[0]}): check the URL's password or "
                            "SHOPFLEET_REDIS_PASSWORD")
    if isinstance(exc, redis.ConnectionError | redis.TimeoutError):
        return StoreUnavailable(f"cannot reach Redis at {where}: {text}")
    return StoreUnavailable(f"Redis at {where} answered with an error: {text}")



class RedisConnection:
    """A Redis store's client and registered scripts (opened with :class:`RedisStore`'s
    arguments)."""

    def __init__(self, url: str, *, settings: Settings | None = None,
                 clock: Clock = SYSTEM_CLOCK, validator: Validator | None = None,
                 prefix: str = "shopfleet") -> None:
        self.settings = settings or Settings()
        self.clock = clock
        self.validator = validator
        self.url = public_url(url)
        self.connect_url = url
        self.transient_errors: tuple[type[BaseException], ...] = (
            redis.ConnectionError, redis.TimeoutError)
        """Errors that mean "Redis cannot be reached right now" (async callers retry)."""
        """The URL with its password, for the shared gates and breakers (never print it)."""
        self.prefix = prefix
        self.keys = Keys(prefix)
        self._q = self.settings.queue
        self._p = self.settings.priority
        self._aging_per_s = self._p.aging_per_min / 60.0
        # typed Any: redis-py's return types are unions of every reply shape
        self._r: Any = redis.Redis.from_url(url, decode_responses=True)
        self._scripts: dict[str, Script] = {
            name: self._r.register_script(PRELUDE + body) for name, body in SCRIPTS.items()}
        self._shop_names: dict[int, tuple[str, str, str]] = {}
        self._closed = False
        try:
            self._init()
        except redis.RedisError as exc:
            self._r.close()
            raise connect_error(exc, self.url) from None

    # -- plumbing ------------------------------------------------------------------------

    def _run(self, name: str, *args: Any, now: float | None = None) -> Any:
        """Run one of the store's Lua scripts (:mod:`core.store.redis.lua`) at ``now`` (this
        package's ticket book runs its own through it too)."""
        t = self.clock.now() if now is None else now
        argv = [self.prefix, repr(float(t)), repr(self._aging_per_s),
                repr(float(self._p.retry_bonus)), *args]
        try:
            return self._scripts[name](keys=[], args=argv)
        except redis.ResponseError as exc:
            self._raise(str(exc))

    @staticmethod
    def _raise(message: str) -> NoReturn:
        at = message.find("SF:")
        if at < 0:
            raise redis.ResponseError(message)
        kind, _, text = message[at + 3:].partition(":")
        text = text.split(" script: ")[0]
        if kind == "lost":
            raise LeaseLost(text)
        if kind == "unknown":
            raise UnknownTask(int(text))
        if kind == "refused":
            raise Refused(text)
        if kind == "invalid":
            field, _, reason = text.partition("|")
            raise InvalidInput(field, reason)
        if kind == "backlog":
            queued, limit, urgent = text.split("|")
            raise BacklogFull(int(queued), int(limit), urgent=urgent == "1")
        raise redis.ResponseError(message)

    @property
    def client(self) -> Any:
        """The ``redis.Redis`` client (strings decoded): for this package's page reads and
        ticket book, which read the key layout in :mod:`core.store.redis.keys`."""
        return self._r

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._r.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _init(self) -> None:
        """Rewrite queued keys if the aging rate changed since they were computed."""
        current = repr(self._p.aging_per_min)
        old = self._r.hget(self.keys.meta, "aging_per_min")
        if old != current:
            if old is not None:
                self._run("rekey")
            self._r.hset(self.keys.meta, "aging_per_min", current)
        version = self._r.hget(self.keys.meta, sorts.META)
        if version != sorts.VERSION:
            self._index_sorts(anew=version is not None)

    def _index_sorts(self, *, anew: bool) -> None:
        """Build the sort indexes (:mod:`core.store.redis.sorts`) of a store written before
        they existed, or (``anew``) with another version of them, dropped first: every task,
        500 a script (each atomic; the scripts keep an indexed task in step meanwhile, so
        workers may run)."""
        if anew:
            stale = list(self._r.scan_iter(match=f"{glob_escape(self.prefix)}:sort:*",
                                           count=1000))
            for i in range(0, len(stale), 500):
                self._r.delete(*stale[i:i + 500])
        low = "-inf"
        while True:
            ids = self._r.zrangebyscore(self.keys.tasks, low, "+inf", start=0, num=500)
            if not ids:
                break
            self._run("sort_rebuild", *ids)
            low = f"({ids[-1]}"
        self._r.hset(self.keys.meta, sorts.META, sorts.VERSION)

    def durability_warning(self) -> str | None:
        """What a Redis crash would lose, when its persistence is weaker than SQLite's FULL
        (None when it keeps an append-only file synced on every write, or when the server
        does not let us ask: managed services hide CONFIG)."""
        try:
            aof = self._r.config_get("appendonly").get("appendonly")
            sync = self._r.config_get("appendfsync").get("appendfsync")
        except redis.RedisError:
            return None
        if aof != "yes":
            return (f"Redis at {self.url} keeps no append-only file (appendonly {aof}): if "
                    "Redis itself crashes, changes since its last snapshot are lost. Run it "
                    "with 'appendonly yes' and 'appendfsync always' (or 'everysec': up to a "
                    "second lost).")
        if sync != "always":
            return (f"Redis at {self.url} syncs its append-only file {sync}: a power cut can "
                    "lose up to a second of acknowledged changes ('appendfsync always' "
                    "loses none).")
        return None

    def _key(self, base: float, urgency: float, attempts: int, bump: float,
             created: float) -> int:
        return index_key(static_points(base=base, urgency=urgency, attempts=attempts,
                                       bump=bump, retry_bonus=self._p.retry_bonus),
                         created, self._aging_per_s)

    def _shift(self, now: float) -> int:
        return round((now - KEY_EPOCH) * self._aging_per_s * KEY_SCALE)

    def _hard_cutoff(self, now: float) -> str:
        return repr(now - self._p.hard_aging_min * 60.0)
