"""Small helpers shared by tests."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, NoReturn

from core.specs import TaskSpec

if TYPE_CHECKING:
    from core.engine import Engine
    from core.events import Event
    from core.store import SqliteStore
    from core.testing import FakeClock, FakeExecutor


def spec(type_: str = "collect_data", shop: str = "pdd-1", **kw: Any) -> TaskSpec:
    """A valid task spec with defaults."""
    data: dict[str, Any] = {"type": type_, "shop": shop, "flow": kw.pop("flow", type_)}
    data.update(kw)
    return TaskSpec.model_validate(data)


def collect(shop: str, page: int) -> TaskSpec:
    """A ``collect_data`` task on the demo site."""
    return TaskSpec.model_validate({"type": "collect_data", "shop": shop, "flow": "collect_data",
                                    "params": {"page": page}})


def iso(ts: float) -> str:
    """A Unix time as the ISO text a task spec's ``not_before`` / ``deadline`` takes (UTC)."""
    return datetime.fromtimestamp(ts, UTC).isoformat()


async def wait_until(cond: Callable[[], bool], timeout_s: float = 90, poll_s: float = 0.05
                     ) -> None:
    """Poll ``cond`` until it holds; fail the test after ``timeout_s``."""
    end = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("condition not reached in time")
        await asyncio.sleep(poll_s)


def run_with(engine: Engine, scenario: Callable[[], Awaitable[Any]]) -> None:
    """Run ``engine`` in the background while ``scenario`` runs; stop it gracefully after."""
    async def go() -> None:
        async with engine:
            runner = asyncio.create_task(engine.run())
            try:
                await scenario()
            finally:
                await engine.stop()
                await runner

    asyncio.run(go())


def missing_tool(reason: str) -> NoReturn:
    """Skip a test whose tool is missing on a developer's machine — but fail in CI, where
    `make setup` installs every tool, so a broken install never passes as a skip."""
    import os

    import pytest

    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"{reason} — CI installs it through `make setup`; the install is broken")
    pytest.skip(reason)


def assert_one_task_per_shop(spans: list[tuple[Any, str, float, float]]) -> None:
    """``(task, shop, start, end)`` executions: no two of one shop overlap (a start before the
    previous one's end), whichever engine, worker or process ran them."""
    by_shop: dict[str, list[tuple[Any, str, float, float]]] = {}
    for s in spans:
        by_shop.setdefault(s[1], []).append(s)
    for shop, runs in by_shop.items():
        runs.sort(key=lambda s: (s[2], s[3]))
        for a, b in itertools.pairwise(runs):
            assert b[2] >= a[3], f"shop {shop} ran {a[0]} and {b[0]} at once: {a} {b}"


async def advance_and_settle(clock: Any, seconds: float, timeout_s: float = 60) -> None:
    """Advance a FakeClock and wait until every coroutine it woke is asleep on it again: each
    background job whose time came has run one full round (an ordering, not a duration)."""
    before = clock.sleepers
    clock.advance(seconds)
    await wait_until(lambda: clock.sleepers >= before, timeout_s, poll_s=0.005)


def make_engine(store: SqliteStore, clock: FakeClock, *, slots: int = 4,
                executor: FakeExecutor | None = None
                ) -> tuple[Engine, FakeExecutor, list[Event]]:
    """An engine on ``store`` with a fake executor and the fake clock, and the events it
    publishes (appended as they come)."""
    from core.engine import Engine
    from core.testing import FakeExecutor

    ex = executor or FakeExecutor()
    # Gates wide open: on a fake clock a waiting gate would wait for a test to advance time.
    settings = store.settings.with_changes(gates={
        "global": {"rate_per_s": 1e6, "burst": 1e6},
        "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})
    engine = Engine(store, settings, executor=ex, slots=slots, clock=clock)
    seen: list[Event] = []
    engine.bus.subscribe(seen.append)
    return engine, ex, seen
