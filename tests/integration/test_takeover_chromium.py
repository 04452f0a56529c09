"""Take over (#15) on real Chromium, headed under Xvfb: a CAPTCHA makes ONE ticket; a person's
takeover (driven by the test through the headed browser's page) solves it; the task ends done
with its write recorded once on the site. The person's browser is the shop's own: its profile
(#17: locale, time zone, user agent) is the page's."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import DemoSite, Settings, TaskSpec, build_engine, demo_settings, open_store
from core.demo import register_demo_shops
from core.profiles import ShopProfile
from core.store import TaskState
from core.takeover import take_over
from core.vault import Vault
from tests.helpers import missing_tool, run_with, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture
def display(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    if shutil.which("Xvfb") is None:
        missing_tool("Xvfb is not installed")
    num = 90 + os.getpid() % 50
    proc = subprocess.Popen(["Xvfb", f":{num}", "-screen", "0", "1280x900x24", "-nolisten",
                             "tcp"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    monkeypatch.setenv("DISPLAY", f":{num}")
    try:
        yield f":{num}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_captcha_ticket_is_solved_by_a_takeover_and_the_reply_is_sent_once(
        tmp_path: Path, display: str) -> None:
    with DemoSite() as site:
        settings = demo_settings(Settings()).with_changes(
            pool={"max_browsers": 1, "warm": 1, "step_timeout_s": 8},
            rescue={"step_retry_wait_s": 0.2})
        store = open_store(settings, tmp_path / "t.db")
        register_demo_shops(store, site, Vault.open(tmp_path))
        store.set_shop_profile("pdd-1", ShopProfile(
            locale="en-US", timezone="America/Chicago", user_agent="ShopFleetTest/Takeover"),
            proxy_password_enc=None)
        site.set_fault("captcha", platform="pdd", times=2)  # robot, then person
        tid = store.submit(TaskSpec.model_validate(
            {"type": "reply_customer", "shop": "pdd-1", "flow": "reply_customer",
             "params": {"message_id": 3, "reply": "Taken over, sent once"}}))
        engine = build_engine(settings, store, home=tmp_path)
        seen_pages: list[str] = []
        seen_profile: list[Any] = []

        async def person(page: Any) -> None:
            seen_pages.append(page.url)
            hold = await asyncio.to_thread(store.shop_hold, "pdd-1")   # the shop's lease
            assert hold is not None and "ticket #" in hold.what
            assert not (await asyncio.to_thread(store.shop, "pdd-1")).paused
            seen_profile.append(await page.evaluate(
                "[navigator.language, Intl.DateTimeFormat().resolvedOptions().timeZone,"
                " navigator.userAgent]"))
            assert await page.locator("#captcha").count() == 1   # where the robot stopped
            await page.reload()                                  # "solves" it: served once
            assert await page.locator("#captcha").count() == 0
            await page.close()

        async def scenario() -> None:
            await wait_until(lambda: store.task(tid).state is TaskState.WAITING_HUMAN, 120)
            tickets = engine.tickets.tickets()
            assert len(tickets) == 1 and tickets[0].task_id == tid
            result = await take_over(store, settings, tickets[0].id, home=tmp_path,
                                     on_page=person, max_s=120)
            assert result.closed_by == "person"
            assert result.shop == "pdd-1" and result.ticket is not None
            assert store.shop_hold("pdd-1") is None              # given back after
            await engine.answer_ticket(tickets[0].id, "resume", note="captcha solved")
            await wait_until(lambda: store.task(tid).state is TaskState.DONE, 120)

        run_with(engine, scenario)
        replies = [r["text"] for r in site.records(kind="reply", shop="pdd-1")]
        store.close()
    assert replies == ["Taken over, sent once"]
    assert seen_pages and "/shop/pdd-1/" in seen_pages[0]
    assert seen_profile == [["en-US", "America/Chicago", "ShopFleetTest/Takeover"]]
