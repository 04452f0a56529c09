"""The store contract: every test in this folder runs once per store.

``store_factory`` opens a store like ``tests/conftest.py``'s ``make_store`` (demo shops added,
settings sections overridable, the test's :class:`FakeClock` shared), on SQLite (a fresh file)
or on Redis (the session's loopback ``redis-server``, flushed for each test). If the Redis
store cannot be imported, its half of the suite fails: the suite is the contract, a missing
implementation is not a skip.
"""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.config import Settings
from core.store import SqliteStore
from core.store.base import Store
from core.testing import FakeClock
from tests.conftest import add_demo_shops

StoreFactory = Callable[..., Store]


def _redis_store_class() -> Any:
    try:
        module = importlib.import_module("core.store.redis.store")
    except ImportError as exc:
        pytest.fail(f"core.store.redis.store cannot be imported ({exc}): the Redis store does "
                    "not meet the store contract yet")
    return module.RedisStore


@pytest.fixture(params=["sqlite", "redis"])
def store_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store_factory(store_kind: str, request: pytest.FixtureRequest, tmp_path: Path,
                  clock: FakeClock) -> Iterator[StoreFactory]:
    """Open stores of this test's kind.

    ``store_factory(shops=True, clock=<the test's>, validator=None, **sections)``: each call
    opens a new, empty store (its own file, or its own key prefix on Redis); keyword sections
    override settings (``queue={"max_backlog": 10}``). ``store_factory.close(store)`` closes
    one early; the rest close when the test ends.
    """
    if store_kind == "redis":
        redis_url: str = request.getfixturevalue("redis_url")
        redis_cls = _redis_store_class()
    opened: list[Any] = []
    serial = itertools.count(1)

    def make(*, shops: bool = True, clock: FakeClock = clock, validator: Any = None,
             **sections: dict[str, Any]) -> Store:
        settings = Settings().with_changes(**sections) if sections else Settings()
        n = next(serial)
        store: Any
        if store_kind == "sqlite":
            store = SqliteStore(tmp_path / f"contract-{n}.db", settings=settings, clock=clock,
                                validator=validator)
        else:
            store = redis_cls(redis_url, settings=settings, clock=clock, validator=validator,
                              prefix=f"contract{n}")
        opened.append(store)
        if shops:
            add_demo_shops(store)
        return store  # type: ignore[no-any-return]

    def close(store: Any) -> None:
        """Close a store before the test ends (property tests open one per example)."""
        opened.remove(store)
        store.close()

    make.close = close  # type: ignore[attr-defined]
    yield make
    for s in opened:
        s.close()


@pytest.fixture
def store(store_factory: StoreFactory) -> Store:
    """A store with the demo shops and default settings."""
    return store_factory()
