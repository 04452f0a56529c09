"""What the parts of ``bench/engine.py`` share: the store and queue they run on, and the
event-loop lag sampler (split out of ``bench/engine.py``, which had grown past 600 lines)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from core.config import Settings
from core.store import SqliteStore

BENCH = "engine"
SHOPS = 1024
DOMAINS = 16
TASK_TYPE = "collect_data"
BASE_PRIORITY = 3.0
SPEC_JSON = '{"params":{},"flow":"collect_data"}'
UNLIMITED = {"rate_per_s": 1e9, "burst": 1e9}
LAG_TICK_S = 0.010


def open_store(path: Path, mode: str) -> SqliteStore:
    settings = Settings().with_changes(store={"synchronous": mode},
                                       gates={"global": UNLIMITED, "default_domain": UNLIMITED})
    return SqliteStore(path, settings=settings)


def add_shops(store: SqliteStore) -> list[int]:
    return [store.add_shop(f"s{i}", platform="pdd",
                           base_url=f"https://d{i % DOMAINS}.example/shop/s{i}").id
            for i in range(SHOPS)]


def rows(shop_ids: list[int], n: int) -> Iterator[dict[str, Any]]:
    for i in range(n):
        yield {"type": TASK_TYPE, "shop_id": shop_ids[i % SHOPS], "base": BASE_PRIORITY,
               "spec": SPEC_JSON}


class LagSampler:
    """Sleeps ``LAG_TICK_S`` again and again; records how late each wake-up is, in seconds."""

    def __init__(self) -> None:
        self.lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        while True:
            t0 = time.perf_counter()
            await asyncio.sleep(LAG_TICK_S)
            self.lags.append(max(0.0, time.perf_counter() - t0 - LAG_TICK_S))

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="lag-sampler")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task


async def idle_lag(seconds: float) -> list[float]:
    sampler = LagSampler()
    sampler.start()
    await asyncio.sleep(seconds)
    await sampler.stop()
    return sampler.lags
