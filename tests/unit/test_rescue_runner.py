"""The first two levels of the rescue chain, through the real executor and step runner.

``BrowserExecutor`` runs each task's flow with ``run_flow`` (core/flows/runner.py) on a page
from a ``BrowserPool``; here the pool launches fake browsers whose pages are the runner's
scripted :class:`~core.flows.fakepage.FakePage` over a small in-memory site. Only the site is
fake: the engine, the executor, the runner, the checkpoints and the store are the real ones.

1. **Retry the step in place**: a read step that fails once is run again, in the same attempt,
   without going back to the start.
2. **Reload and resume from the last checkpoint**: a step that still fails after its retries
   makes the executor reload the flow's start and resume from the last checkpoint, in the same
   attempt: completed writes are skipped (never sent twice), the task ends done.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from core.browser.fake import FakeLauncher
from core.browser.pool import BrowserPool
from core.config import Settings
from core.engine import Engine
from core.engine.browser_executor import BrowserExecutor
from core.flows.fakepage import FakeAction, FakeElement, FakeScreen, FakeSite
from core.store import SqliteStore, TaskState
from core.testing import FakeClock
from core.vault import Vault
from tests.conftest import StoreFactory
from tests.helpers import spec

BASE = "http://pdd.shopfleet.test/shop/pdd-1"   # the test shop pdd-1 (tests/conftest.py)
STATS = f"{BASE}/stats"


class FlakyPages(dict[str, FakeScreen]):
    """The site's pages; the first ``fails[url]`` navigations to a URL answer HTTP 503."""

    def __init__(self, pages: dict[str, FakeScreen], fails: dict[str, int]) -> None:
        super().__init__(pages)
        self.fails = fails
        self.site: FakeSite | None = None

    def get(self, url: str, default: Any = None) -> Any:  # type: ignore[override]
        assert self.site is not None
        if self.site.log.count(f"goto {url}") <= self.fails.get(url, 0):
            return FakeScreen(status=503, elements={"h1": FakeElement(text="Busy")})
        return super().get(url, default)


def make_site(*, stats_fails: int) -> FakeSite:
    pages = FlakyPages({
        f"{BASE}/messages/1": FakeScreen(
            elements={"#reply": FakeElement(type="text"), "#send": FakeElement(text="Send")},
            clicks={"#send": FakeAction(write="reply", goto=f"{BASE}/messages/1/sent")}),
        f"{BASE}/messages/1/sent": FakeScreen(elements={".ok": FakeElement(text="Sent")}),
        STATS: FakeScreen(elements={".sku": FakeElement(text="SKU-77")}),
    }, fails={STATS: stats_fails})
    site = FakeSite(pages)
    pages.site = site
    return site


STEPS: list[dict[str, Any]] = [
    {"action": "navigate", "url": "{shop.base_url}/messages/1"},
    {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
    {"name": "send", "action": "click", "locator": "#send", "write": True},
    {"name": "stats", "action": "navigate", "url": "{shop.base_url}/stats"},
    {"action": "extract", "locator": ".sku", "into": "sku"},
]


def run_task(store: SqliteStore, clock: FakeClock, site: FakeSite, tmp_path: Path,
             settings: Settings) -> int:
    tid = store.submit(spec("collect_data", "pdd-1", flow=None, steps=STEPS,
                            params={"reply": "On its way"}, max_attempts=3))
    pool = BrowserPool(settings.pool, settings.browser,
                       launcher=FakeLauncher(page_factory=lambda _ctx: site.new_page()))
    executor = BrowserExecutor(settings, store, pool=pool, home=tmp_path,
                               vault=Vault.open(tmp_path))
    engine = Engine(store, settings, executor=executor, slots=1, clock=clock)

    async def go() -> None:
        async with engine:
            await engine.run_until_idle()

    asyncio.run(go())
    return tid


def settings_for(store: SqliteStore, **rescue: Any) -> Settings:
    return store.settings.with_changes(
        rescue={"step_retry_wait_s": 0, **rescue},
        pool={"max_browsers": 1, "warm": 0},
        gates={"global": {"rate_per_s": 1e6, "burst": 1e6},
               "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})


def test_a_failing_read_step_is_retried_in_place(make_store: StoreFactory, clock: FakeClock,
                                                  tmp_path: Path) -> None:
    store = make_store()
    site = make_site(stats_fails=1)
    # Level 2 off: only the in-place retry can save this attempt.
    tid = run_task(store, clock, site, tmp_path,
                   settings_for(store, step_retries=1, reload_resume=False))
    rec = store.task(tid)
    assert (rec.state, rec.attempts, rec.error_class) == (TaskState.DONE, 1, None)
    assert rec.results == {"sku": "SKU-77"}
    # The stats page was loaded twice in a row, and nothing before it was run again.
    assert site.log == [f"goto {BASE}/messages/1", "fill #reply", "click #send",
                        f"goto {BASE}/messages/1/sent", f"goto {STATS}", f"goto {STATS}"]
    assert len(site.writes) == 1
    assert store.ticket_book().tickets(state=None) == []


def test_without_step_retries_the_same_failure_costs_the_attempt(
        make_store: StoreFactory, clock: FakeClock, tmp_path: Path) -> None:
    """The control for the test above: with no rescue at all, the attempt fails."""
    store = make_store()
    site = make_site(stats_fails=1)
    tid = run_task(store, clock, site, tmp_path,
                   settings_for(store, step_retries=0, reload_resume=False))
    rec = store.task(tid)
    assert rec.state is not TaskState.DONE and rec.attempts == 1
    assert rec.error_class == "site_failed"


def test_after_its_retries_the_task_reloads_and_resumes_from_its_checkpoint(
        make_store: StoreFactory, clock: FakeClock, tmp_path: Path) -> None:
    store = make_store()
    site = make_site(stats_fails=2)   # the step and its one retry fail; the third load works
    tid = run_task(store, clock, site, tmp_path,
                   settings_for(store, step_retries=1, reload_resume=True))
    rec = store.task(tid)
    assert (rec.state, rec.attempts, rec.error_class) == (TaskState.DONE, 1, None)
    assert rec.results == {"sku": "SKU-77"}
    # Resumed, not restarted: the reply was sent once, and after the reload the runner went
    # back to the flow's start (a read) and on to the stats page, skipping the done write.
    assert [w.name for w in site.writes] == ["reply"]
    assert site.log == [
        f"goto {BASE}/messages/1", "fill #reply", "click #send", f"goto {BASE}/messages/1/sent",
        f"goto {STATS}", f"goto {STATS}",              # the step, and its retry in place
        f"goto {BASE}/messages/1",                      # reload: the flow's start page
        f"goto {BASE}/messages/1", "fill #reply",      # read steps replayed, the write skipped
        f"goto {STATS}"]                                # resumed where it failed
    assert rec.checkpoint is not None and 2 in rec.checkpoint.get("writes_done", [])
    assert store.ticket_book().tickets(state=None) == []
