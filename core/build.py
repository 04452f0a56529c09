"""The composition root: assemble the parts from settings — a store with the submission
checks, an executor, the gates and breakers (this process's, or a fleet's in Redis), an
engine. Used by the worker, the demo, the desktop and the benchmarks alike; the engine itself
chooses none of its parts."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .clock import SYSTEM_CLOCK, Clock
from .config import Settings
from .engine.breakers import Breakers
from .engine.control import Executor, NoopExecutor
from .engine.engine import Engine
from .engine.gates import RateGates
from .errors import EnvironmentProblem, InvalidInput
from .events import EventBus
from .paths import default_db_path
from .store import SqliteStore, new_owner_id
from .store.base import Store
from .urls import public_url, with_env_password
from .validation import submission_validator

if TYPE_CHECKING:
    from .engine.redis_breakers import RedisBreakers
    from .engine.redis_gates import RedisRateGates
    from .notify.host import Notifier


def open_store(settings: Settings, db: str | Path | None = None, *,
               clock: Clock = SYSTEM_CLOCK, validate: bool = True,
               url: str | None = None, readonly: bool = False,
               field: str = "database") -> Store:
    """The configured store: Redis when ``url`` (or ``[store] url``) is ``redis://…``, else
    the SQLite file at ``db`` (or the configured / default path). Submissions are checked
    against the flows unless ``validate`` is false. ``readonly``: an SQLite file must exist
    and is never created, migrated or written (``field`` names the option in errors)."""
    validator = submission_validator(settings) if validate else None
    target = url if url is not None else settings.store.url
    if target:
        return store_from_url(target, settings, clock=clock, validator=validator,
                              readonly=readonly)
    path = Path(db) if db else (Path(settings.store.path) if settings.store.path
                                else default_db_path())
    return SqliteStore(path, settings=settings, clock=clock, validator=validator,
                       readonly=readonly, field=field)


def store_from_url(url: str, settings: Settings, *, clock: Clock = SYSTEM_CLOCK,
                   validator: Any = None, readonly: bool = False) -> Store:
    """``sqlite:PATH`` or ``redis://[:password@]host[:port][/db]``."""
    if url.startswith("sqlite:"):
        return SqliteStore(Path(url.removeprefix("sqlite:")).expanduser(), settings=settings,
                           clock=clock, validator=validator, readonly=readonly,
                           field="store.url")
    if url.startswith(("redis://", "rediss://", "unix://")):
        url = with_env_password(url)
        try:
            from .store.redis.store import RedisStore
        except ImportError as exc:  # the optional extra is not installed
            raise EnvironmentProblem(
                f"the Redis store needs the 'redis' package ({exc}); install "
                "shopfleet[redis]") from None
        redis_store: Store = RedisStore(url, settings=settings, clock=clock,
                                        validator=validator,
                                        prefix=settings.store.redis_prefix)
        return redis_store
    raise InvalidInput("store.url", f"{public_url(url)!r} is not a store URL: use sqlite:PATH or "
                       "redis://host:port/db")


def build_engine(settings: Settings, store: Store, *,
                 executor: Executor | str = "browser", clock: Clock = SYSTEM_CLOCK,
                 bus: EventBus | None = None, slots: int | None = None,
                 home: Path | None = None, owner: str | None = None) -> Engine:
    """An engine over ``store``; ``executor`` is an executor or ``"browser"`` / ``"noop"``."""
    if executor == "browser":
        from .engine.browser_executor import BrowserExecutor

        ex: Executor = BrowserExecutor(settings, store, home=home)
    elif executor == "noop":
        ex = NoopExecutor(clock=clock)
    elif isinstance(executor, str):
        raise ValueError(f"unknown executor {executor!r}")
    else:
        ex = executor
    owner = owner or new_owner_id()
    gates, breakers = gates_and_breakers(settings, store, clock=clock, owner=owner)
    return Engine(store, settings, executor=ex, clock=clock, bus=bus, slots=slots, owner=owner,
                  gates=gates, breakers=breakers)


def gates_and_breakers(settings: Settings, store: Store, *, clock: Clock, owner: str
                       ) -> tuple[RateGates | RedisRateGates, Breakers | RedisBreakers]:
    """The rate gates and circuit breakers for an engine over ``store``: on a store shared
    through Redis (it has a :attr:`~core.store.base.Store.shared_url`) the fleet's, kept in
    that Redis so the rates and the breakers' states hold across all workers; otherwise this
    process's own."""
    url = store.shared_url
    if not url:
        return (RateGates(settings.gates, clock=clock),
                Breakers(settings.breakers, clock=clock))
    from .engine.redis_breakers import RedisBreakers
    from .engine.redis_gates import RedisRateGates

    prefix = settings.store.redis_prefix
    return (RedisRateGates(settings.gates, url=url, prefix=prefix, clock=clock),
            RedisBreakers(settings.breakers, url=url, prefix=prefix, clock=clock,
                          worker_id=owner))


# --- #19 notifications
def open_notifier(settings: Settings, store: Store, *, vault: Any = None) -> Notifier:
    """The notifier for an engine on ``store``: ``[[notify]]`` targets and the store's own
    (their secrets decrypted with the vault key that matches the store), the daily digest.

    Attach it to the engine's bus, :meth:`~core.notify.host.Notifier.start` it, and
    :meth:`~core.notify.host.Notifier.stop` it before the store closes. With no target it
    starts nothing.
    """
    from .notify.host import Notifier, all_targets, stored_raw

    if vault is None and any(r.get("secret_enc") for r in stored_raw(store)):
        from .secrets import open_vault_for

        vault = open_vault_for(store)
    targets = all_targets(settings.notify, store, vault)
    return Notifier(store, targets, digest_at=settings.digest.at, digest_tz=settings.digest.tz)
