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
    # -displayfd: Xvfb picks a free display itself and writes its number once it is ready
    # (a fixed number could be another suite's, and nothing waited for the server to start).
    read, write = os.pipe()
    proc = subprocess.Popen(["Xvfb", "-displayfd", str(write), "-screen", "0", "1280x900x24",
                             "-nolisten", "tcp"], pass_fds=(write,),
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.close(write)
    try:
        with os.fdopen(read, "rb") as answer:
            num = answer.readline().decode().strip()
        assert num.isdigit(), f"Xvfb did not start (exit {proc.poll()})"
        monkeypatch.setenv("DISPLAY", f":{num}")
        yield f":{num}"
    finally:
        proc.terminate()
        proc.wait(10)


def test_a_captcha_ticket_is_solved_by_a_takeover_and_the_reply_is_sent_once(
        tmp_path: Path, display: str) -> None:
    with DemoSite() as site:
        settings = demo_settings(Settings()).with_changes(
            pool={"max_browsers": 1, "warm": 1, "step_timeout_s": 30},
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


def test_a_shop_takeover_from_the_command_line_opens_its_browser_where_it_stopped(
        tmp_path: Path, display: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    """``shopfleet takeover --shop pdd-1``: a headed browser with the shop's saved session
    and profile, at the page where its latest stopped task stopped, the shop held while it is
    open; the person's change to the session is saved when the browser closes, and the shop
    is given back."""
    import json

    from core.browser.sessions import SessionStore
    from core.cli import main
    from core.demosite import host_resolver_rules
    from core.paths import data_dir
    from core.tickets import Signature

    monkeypatch.setenv("SHOPFLEET_HOME", str(tmp_path / "home"))
    home = data_dir()
    with DemoSite() as site:
        settings = demo_settings(Settings())
        cfg = tmp_path / "c.toml"
        cfg.write_text(f'[browser]\nhost_resolver_rules = "{host_resolver_rules()}"\n')
        db = tmp_path / "t.db"
        store = open_store(settings, db)
        vault = Vault.open(home)
        register_demo_shops(store, site, vault)
        shop = store.shop("pdd-1")
        store.set_shop_profile("pdd-1", ShopProfile(
            locale="zh-CN", timezone="Asia/Shanghai", user_agent="ShopFleetTest/ShopTakeover"),
            proxy_password_enc=None)
        origin = shop.base_url.split("/shop/")[0]
        asyncio.run(SessionStore(home / "sessions", vault).save("pdd-1", {
            "cookies": [{"name": "robot_was_here", "value": "1", "domain": origin.split("//")[1],
                         "path": "/", "expires": -1, "httpOnly": False, "secure": False,
                         "sameSite": "Lax"}], "origins": []}))
        # The shop's latest stopped task: a ticket whose evidence says where it stopped.
        stopped = f"{shop.base_url}/messages/3"
        steps = tmp_path / "steps.json"
        steps.write_text(json.dumps({"failure": {"url": stopped}}))
        tid = store.submit(TaskSpec.model_validate(
            {"type": "collect_data", "shop": "pdd-1", "flow": "collect_data",
             "params": {"page": 1}}))
        assert store.claim("w") is not None
        store.open_ticket(tid, "w", signature=Signature("pdd", "collect_data", "s", "captcha",
                                                        "captcha"),
                          step=1, error="captcha", evidence={"steps": str(steps)},
                          kind="failure", reason="ticket")
        seen: list[Any] = []

        import core.takeover as takeover_mod
        real = takeover_mod.take_over_shop

        async def person(page: Any) -> None:
            hold = await asyncio.to_thread(store.shop_hold, "pdd-1")   # the shop's lease
            assert hold is not None and "command line" in hold.what
            seen.append((page.url, await page.evaluate(
                "[navigator.language, Intl.DateTimeFormat().resolvedOptions().timeZone,"
                " navigator.userAgent, document.cookie]")))
            await page.evaluate("document.cookie = 'person_was_here=1; path=/'")
            await page.close()

        async def with_hands(*a: Any, **k: Any) -> Any:
            return await real(*a, **k, on_page=person)

        monkeypatch.setattr(takeover_mod, "take_over_shop", with_hands)
        capsys.readouterr()
        code = main(["takeover", "--shop", "pdd-1", "--db", str(db), "--config", str(cfg),
                     "--max-s", "120"])
        out, err = capsys.readouterr()
        assert code == 0, err
        assert f"browser of pdd-1 closed (person) at {stopped}" in out
        assert store.shop_hold("pdd-1") is None                       # given back
        saved = asyncio.run(SessionStore(home / "sessions", vault).load("pdd-1"))
        store.close()
    # where it stopped (the demo site sends a logged-out visitor to its login page first)
    assert seen and seen[0][0] in (stopped, f"{shop.base_url}/login?next="
                                            "%2Fshop%2Fpdd-1%2Fmessages%2F3")
    lang, tz, ua, cookies = seen[0][1]
    assert (lang, tz, ua) == ("zh-CN", "Asia/Shanghai", "ShopFleetTest/ShopTakeover")
    assert "robot_was_here=1" in cookies                              # its session
    assert saved is not None
    assert {c["name"] for c in saved["cookies"]} >= {"robot_was_here", "person_was_here"}
