"""The pool's task path kept short (#20): sessions saved only when they changed, saved and
closed in the background (the shop's next task still sees the save), spare contexts only for
equal context options. Fake browser, no real time measured."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.browser.fake import FakeContext, FakeLauncher
from core.browser.pool import BrowserPool
from core.browser.sessions import SessionStore
from core.config import BrowserSettings, PoolSettings
from core.vault import Vault

BROWSER = BrowserSettings()


def settings(**kw: Any) -> PoolSettings:
    base: dict[str, Any] = {"max_browsers": 1, "warm": 0, "close_timeout_s": 5.0}
    base.update(kw)
    return PoolSettings(**base)


def cookie(name: str, value: str) -> dict[str, Any]:
    return {"name": name, "value": value, "domain": "seller.example", "path": "/",
            "expires": -1, "httpOnly": False, "secure": False, "sameSite": "Lax"}


class CountingSessions(SessionStore):
    """Counts the writes that reach the disk; ``gate`` (when set) holds every save until
    it is opened, so a test can keep a save in flight."""

    def __init__(self, directory: Path, vault: Vault) -> None:
        super().__init__(directory, vault)
        self.writes: list[str] = []
        self.gate: asyncio.Event | None = None

    async def save(self, shop: str, state: dict[str, Any]) -> None:
        if self.gate is not None:
            await self.gate.wait()
        await super().save(shop, state)

    def _save(self, shop: str, state: dict[str, Any]) -> None:
        self.writes.append(shop)
        super()._save(shop, state)


def sessions(tmp_path: Path) -> CountingSessions:
    return CountingSessions(tmp_path / "sessions", Vault.open(tmp_path, use_keyring=False))


async def settle(pool: BrowserPool, launcher: FakeLauncher) -> None:
    """Until the pool's background work (saves, closes, spares) is done."""
    for _ in range(1000):
        busy = [t for t in pool._background if not t.done()]
        if not busy:
            return
        await asyncio.wait(busy, timeout=5)
    raise AssertionError("the pool's background work never finished")


def test_a_session_is_written_only_when_it_changed(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    launcher = FakeLauncher()

    async def main() -> list[str]:
        async with BrowserPool(settings(), BROWSER, launcher=launcher, sessions=store) as pool:
            async with pool.task_context("shop-a") as tc:          # logs in: written
                await tc.context.add_cookies([cookie("sid", "v1")])
            async with pool.task_context("shop-a"):                # reads only: not written
                pass
            async with pool.task_context("shop-a"):
                pass
            await settle(pool, launcher)
            assert store.writes == ["shop-a"]
            async with pool.task_context("shop-a") as tc:          # the site renewed it
                await tc.context.add_cookies([cookie("sid", "v2")])
            async with pool.task_context("shop-a") as tc:
                values = [c["value"] for c in tc.context.cookies]
        return values

    assert run(main()) == ["v2"]
    assert store.writes == ["shop-a", "shop-a"]


def test_an_unchanged_session_loaded_into_a_spare_is_not_rewritten(tmp_path: Path) -> None:
    store = sessions(tmp_path)
    run(store.save("shop-a", {"cookies": [cookie("sid", "abc"), cookie("lang", "zh")],
                              "origins": []}))
    store.writes.clear()
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(warm=1), BROWSER, launcher=launcher, sessions=store,
                               prewarm_contexts=True) as pool:
            await settle(pool, launcher)
            made = launcher.contexts_made
            async with pool.task_context("shop-a") as tc:
                assert launcher.contexts_made == made      # the spare, session applied to it
                assert not tc.context.created_with_state
            await settle(pool, launcher)

    run(main())
    assert store.writes == []


def test_the_task_ends_before_its_context_is_closed_and_the_next_task_of_the_shop_sees_the_save(
        tmp_path: Path) -> None:
    store = sessions(tmp_path)
    launcher = FakeLauncher()

    async def main() -> tuple[bool, list[str]]:
        async with BrowserPool(settings(contexts_per_browser=2), BROWSER, launcher=launcher,
                               sessions=store) as pool:
            store.gate = asyncio.Event()                   # the save stays in flight
            async with pool.task_context("shop-a") as tc:
                first: FakeContext = tc.context
                await tc.context.add_cookies([cookie("sid", "fresh")])
            still_open = not first.closed                  # the task is over, its context not
            nxt = asyncio.create_task(cookies_of_next_task(pool, "shop-a"))
            for _ in range(50):
                await asyncio.sleep(0)
            assert not nxt.done()                          # it waits for the shop's save
            store.gate.set()
            return still_open, await nxt

    still_open, seen = run(main())
    assert still_open
    assert seen == ["fresh"]


async def cookies_of_next_task(pool: BrowserPool, shop: str) -> list[str]:
    async with pool.task_context(shop) as tc:
        return [c["value"] for c in tc.context.cookies]


def test_a_spare_context_is_never_handed_to_a_task_with_other_options(tmp_path: Path) -> None:
    launcher = FakeLauncher()
    profiles = ["plain", None, "proxy-a", "proxy-a", None, "proxy-b", "proxy-a", None] * 3
    seen: list[tuple[Any, Any]] = []
    from_spare = 0

    async def task(pool: BrowserPool, i: int, options: Any) -> None:
        nonlocal from_spare
        made = launcher.contexts_made
        async with pool.task_context(f"shop-{i % 4}", options) as tc:
            seen.append((options, tc.context.options))
            if launcher.contexts_made == made:
                from_spare += 1
            for _ in range(3):
                await asyncio.sleep(0)

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=2, warm=2), BROWSER, launcher=launcher,
                               sessions=sessions(tmp_path), contexts_per_browser=2,
                               prewarm_contexts=True) as pool:
            # One after the other (a spare is ready for the same options), then at once.
            for i, options in enumerate(profiles):
                await task(pool, i, options)
            await asyncio.gather(*(task(pool, i, o) for i, o in enumerate(profiles)))

    run(main())
    assert len(seen) == 2 * len(profiles)
    assert all(want == got for want, got in seen), [p for p in seen if p[0] != p[1]]
    assert from_spare > 0                                  # spares were used where they fit
    assert launcher.live_contexts == 0


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_prepare_context_makes_a_spare_for_the_next_task_even_without_prewarm(
        tmp_path: Path) -> None:
    launcher = FakeLauncher()

    async def main() -> None:
        async with BrowserPool(settings(max_browsers=1, warm=1), BROWSER, launcher=launcher,
                               sessions=sessions(tmp_path)) as pool:
            assert not pool.prewarm_contexts
            await settle(pool, launcher)
            assert pool.stats().contexts_alive == 0         # off: nothing made ahead
            pool.prepare_context()                          # urgent work is coming
            await settle(pool, launcher)
            assert pool.stats().contexts_alive == 1
            made = launcher.contexts_made
            async with pool.task_context("shop-a"):
                assert launcher.contexts_made == made       # it got the prepared one
            await settle(pool, launcher)
            assert pool.stats().contexts_alive == 0         # and no spare is kept after

    run(main())
    assert launcher.live_contexts == 0
