"""The recorder on real Chromium: a scripted person does each shipped flow's job once on the
demo site; the recorded flow, run by the engine on a fresh shop session, writes what the
shipped flow writes, once, with placeholders for what was typed and no password in the file.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from core.demosite import DemoSite, assets_dir, host_resolver_rules, stats_rows
from core.recorder import RecordedFlow, ShopLogin, record_flow

pytestmark = [pytest.mark.slow, pytest.mark.browser, pytest.mark.timeout(900)]

CHROMIUM_ARGS = ["--no-sandbox", "--disable-background-networking", "--disable-component-update",
                 "--disable-sync", "--disable-gpu", "--no-first-run"]
RECORD_SHOP = "temu-1"
Person = Callable[[Any, str], Awaitable[None]]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


async def _toolbar_pick(page: Any, mode: str, target: Any, name: str = "") -> None:
    bar = page.locator("#__shopfleet_recorder")
    if name:
        await bar.get_by_role("textbox").fill(name)
    await bar.locator(f"button[data-sf-mode={mode}]").click()
    await target.click()


async def _log_in(page: Any, shop: str) -> None:
    await page.get_by_label("User name").fill(shop)
    await page.get_by_label("Password").fill(f"demo-pass-{shop}")
    await page.get_by_role("button", name="Log in").click()


async def reply_person(page: Any, base: str) -> None:
    await page.goto(f"{base}/messages/42")
    await _log_in(page, RECORD_SHOP)
    await page.wait_for_url("**/messages/42")
    await page.get_by_label("Reply").fill("Your parcel ships tomorrow.")
    await page.get_by_role("button", name="Send reply").click()
    await page.locator(".success-msg").wait_for()
    await _toolbar_pick(page, "assert_text", page.locator("#sent-replies li").last)


async def signup_person(page: Any, base: str) -> None:
    await page.goto(f"{base}/campaigns/3")
    await page.get_by_label("User name").fill(RECORD_SHOP)
    await page.get_by_label("Password").fill(f"demo-pass-{RECORD_SHOP}")
    await page.get_by_label("Password").press("Enter")   # log in with Enter this time
    await page.wait_for_url("**/campaigns/3")
    await page.get_by_label("I agree to the campaign terms").check()
    await page.get_by_role("button", name="Confirm sign-up").click()
    await page.locator(".success-msg").wait_for()


async def upload_person(page: Any, base: str) -> None:
    await page.goto(f"{base}/products/new")
    await _log_in(page, RECORD_SHOP)
    await page.wait_for_url("**/products/new")
    await page.get_by_label("Title").fill("Red teapot")
    await page.get_by_label("Price").fill("19.90")
    await page.get_by_label("Category").select_option("home")
    await page.get_by_label("Image").set_input_files(assets_dir() / "product.png")
    await page.get_by_role("button", name="Upload product").click()
    await page.locator(".success-msg").wait_for()


async def collect_person(page: Any, base: str) -> None:
    await page.goto(f"{base}/stats?page=150")
    await _log_in(page, RECORD_SHOP)
    await page.wait_for_url("**/stats?page=150")
    # This recording's toolbar speaks Chinese.
    bar = page.locator("#__shopfleet_recorder")
    assert await bar.locator("button[data-sf-mode=extract_all]").inner_text() == "提取所有同类"
    cells = page.locator("#stats tbody tr").first
    await _toolbar_pick(page, "extract_all", cells.locator("td.sku"))
    await _toolbar_pick(page, "extract_all", cells.locator("td.views"))
    await _toolbar_pick(page, "extract_all", cells.locator("td.orders"), name="orders")


JOBS: dict[str, tuple[Person, dict[str, str]]] = {
    "reply_customer": (reply_person, {"message_id": "42", "reply": "Your parcel ships tomorrow."}),
    "campaign_signup": (signup_person, {"campaign_id": "3"}),
    "upload_product": (upload_person, {"title": "Red teapot", "price": "19.90",
                                       "category": "home", "image": "product.png"}),
    "collect_data": (collect_person, {"page": "150"}),
}


async def _record_all(site: DemoSite) -> dict[str, RecordedFlow]:
    from playwright.async_api import async_playwright

    base = site.base_url("temu", RECORD_SHOP)
    shop = ShopLogin(base, RECORD_SHOP, f"demo-pass-{RECORD_SHOP}")
    out: dict[str, RecordedFlow] = {}
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(
            executable_path="/usr/bin/chromium",
            args=[*CHROMIUM_ARGS, f"--host-resolver-rules={host_resolver_rules()}"])
        try:
            for job, (person, _params) in JOBS.items():
                # A fresh context each: the person logs in every time, like a new recording.
                context = await browser.new_context()
                async with context.expect_page() as opened:
                    recording = asyncio.ensure_future(record_flow(
                        context, name=f"rec_{job}", shop=shop, asset_dirs=[assets_dir()],
                        lang="zh" if job == "collect_data" else "en"))
                page = await opened.value
                await page.wait_for_load_state()
                await person(page, base)
                await page.locator("#__shopfleet_recorder button[data-sf-finish]").click()
                out[job] = await recording
                await context.close()
        finally:
            await browser.close()
    return out


@pytest.fixture(scope="module")
def recorded(site: DemoSite) -> dict[str, RecordedFlow]:
    site.reset()
    flows = asyncio.run(_record_all(site))
    return flows


def test_recorded_flows_use_placeholders_and_keep_no_password(
        recorded: dict[str, RecordedFlow], site: DemoSite) -> None:
    for job, rec in recorded.items():
        text = rec.to_json()
        assert f"demo-pass-{RECORD_SHOP}" not in text, job
        assert f"demo-pass-{RECORD_SHOP}" not in json.dumps(rec.params), job
        assert "{shop.password}" in text and "{shop.username}" in text, job
        assert RECORD_SHOP not in text, job          # the shop's own address is {shop.base_url}
        assert rec.flow.start_url.startswith("{shop.base_url}/"), job
        assert rec.params == JOBS[job][1], (job, rec.params)
        # Every login step is conditional; exactly the job's own submit is a write.
        steps = rec.flow.steps
        login = [s for s in steps if s.name.startswith("log in")]
        assert len(login) == 3 and all(s.if_visible for s in login), (job, text, rec.notes)
        writes = [s for s in steps if s.write]
        assert len(writes) == (0 if job == "collect_data" else 1), (job, text)
        assert all(not s.interruptible and s.verify is not None for s in writes), (job, text)
        # Locators are Playwright's own choice: by role or label, not by CSS id.
        for s in steps:
            loc = getattr(s, "locator", None)
            if loc is not None and s.action != "extract":
                assert loc.startswith("internal:"), (job, s)
    reply = recorded["reply_customer"].flow
    assert [s.action for s in reply.steps] == [
        "navigate", "type_text", "type_text", "click", "type_text", "click", "assert_text"]
    assert reply.steps[5].verify is not None and reply.steps[5].verify.text == "{params.reply}"
    assert reply.steps[6].text == "{params.reply}"
    upload = recorded["upload_product"].flow
    assert [s.action for s in upload.steps][4:] == [
        "type_text", "type_text", "select_option", "upload_file", "click"]
    collect = recorded["collect_data"].flow
    assert [(s.action, getattr(s, "into", None), getattr(s, "all", None))
            for s in collect.steps[4:]] == [
        ("extract", "skus", True), ("extract", "views", True), ("extract", "orders", True)]
    # The person did each job once while recording.
    assert sorted(r["kind"] for r in site.records(shop=RECORD_SHOP)) == [
        "campaign_signup", "reply", "upload"]


def test_recorded_flows_run_by_the_engine_write_what_the_shipped_flows_write(
        recorded: dict[str, RecordedFlow], site: DemoSite, tmp_path: Path) -> None:
    from core import Settings, TaskSpec, build_engine, demo_settings, open_store
    from core.demo import register_demo_shops
    from core.store import TaskState
    from core.vault import Vault
    from tests.helpers import run_with, wait_until

    flows_dir = tmp_path / "flows"
    flows_dir.mkdir()
    for rec in recorded.values():
        (flows_dir / f"{rec.flow.name}.json").write_text(rec.to_json(), encoding="utf-8")
    site.reset()
    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 2, "warm": 2, "step_timeout_s": 20, "close_timeout_s": 30},
        flows={"dirs": [str(flows_dir)]})
    store = open_store(settings, tmp_path / "rec.db")
    register_demo_shops(store, site, Vault.open(tmp_path))
    # Recorded flows on temu-2 (fresh session: not logged in), shipped ones on temu-3.
    ids: dict[tuple[str, str], str] = {}
    for job, (_person, params) in JOBS.items():
        for kind, flow, shop in (("recorded", f"rec_{job}", "temu-2"),
                                 ("shipped", job, "temu-3")):
            ids[(kind, job)] = store.submit(TaskSpec.model_validate(
                {"type": job, "shop": shop, "flow": flow, "params": params}))
    engine = build_engine(settings, store, home=tmp_path)

    async def scenario() -> None:
        await wait_until(lambda: all(store.task(t).state in (
            TaskState.DONE, TaskState.FAILED) for t in ids.values()), 300)

    try:
        run_with(engine, scenario)
        tasks = {key: store.task(t) for key, t in ids.items()}
    finally:
        store.close()
    assert {k: (t.state, t.last_error) for k, t in tasks.items()} == {
        k: (TaskState.DONE, None) for k in ids}

    def writes(shop: str) -> list[tuple[Any, ...]]:
        keep = ("kind", "message_id", "text", "campaign_id", "title", "price", "category",
                "image_sha256")
        return sorted(tuple(r.get(k) for k in keep) for r in site.records(shop=shop))

    # Each write once, the same for both; the image is the asset the parameter names.
    assert writes("temu-2") == writes("temu-3")
    assert len(writes("temu-2")) == 3
    upload = next(r for r in site.records(shop="temu-2") if r["kind"] == "upload")
    image = (assets_dir() / "product.png").read_bytes()
    assert upload["image_sha256"] == hashlib.sha256(image).hexdigest()
    rows = stats_rows("temu-2", 150)
    results = tasks[("recorded", "collect_data")].results or {}
    assert {k: results.get(k) for k in ("skus", "views", "orders")} == {
        "skus": [r[0] for r in rows], "views": [str(r[1]) for r in rows],
        "orders": [str(r[2]) for r in rows]}
    # The recorded flows logged in once on the fresh session and reused it afterwards.
    assert [r["ok"] for r in site.logins(shop="temu-2")] == [True]
