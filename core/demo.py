"""The headless demo (``shopfleet demo`` without a window): the main job on an embedded
default, for a newcomer's first minute. The command is :mod:`core.cli.demo`.

It starts the built-in demo seller site (three platforms, nine shops), opens a fresh SQLite
file in a temporary folder, registers the demo shops with their logins, submits a mixed set of
tasks — customer replies with deadlines, campaign sign-ups, product uploads, data collection —
and runs the engine on real Chromium with a live text summary until the queue is empty. At the
end it prints what the site recorded: every reply, upload and sign-up exactly once.
"""

from __future__ import annotations

import asyncio
import random
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from .build import build_engine, open_store
from .config import Settings
from .demosite import DemoSite, host_resolver_rules
from .secrets import save_password
from .specs import TaskSpec
from .store.base import Store
from .vault import Vault
from .worker import run_worker


def demo_settings(base: Settings) -> Settings:
    """The demo's settings: the demo host names mapped to loopback, a small pool, brisk gates."""
    return base.with_changes(
        browser={"host_resolver_rules": host_resolver_rules()},
        pool={"max_browsers": 2, "warm": 1, "step_timeout_s": 15},
        gates={"global": {"rate_per_s": 30, "burst": 30},
               "default_domain": {"rate_per_s": 10, "burst": 10}},
        queue={"retry_backoff_s": 2, "max_attempts": 2},
        breakers={"failures": 4, "backoff_s": 5},
    )


def register_demo_shops(store: Store, site: DemoSite, vault: Vault) -> None:
    known = {s.name for s in store.shops()}
    for shop in site.shops():
        if shop.name not in known:
            store.add_shop(shop.name, platform=shop.platform, base_url=shop.base_url,
                           username=shop.username)
        save_password(store, shop.name, shop.password, vault=vault)


def demo_specs(site: DemoSite, n: int, *, seed: int = 7) -> list[TaskSpec]:
    """A mixed, realistic batch: mostly data collection, some replies with deadlines, uploads
    and campaign sign-ups, spread over the demo shops."""
    rng = random.Random(seed)
    shops = site.shops()
    now = datetime.now(UTC)
    out: list[TaskSpec] = []
    for i in range(n):
        shop = rng.choice(shops).name
        kind = rng.choices(["collect_data", "reply_customer", "upload_product",
                            "campaign_signup"], weights=[5, 3, 1, 1])[0]
        data: dict[str, Any] = {"key": f"demo-{i}", "type": kind, "shop": shop, "flow": kind}
        if kind == "collect_data":
            data["params"] = {"page": rng.randint(1, 50)}
        elif kind == "reply_customer":
            data["params"] = {"message_id": rng.randint(1, 5),
                              "reply": f"Thanks for your message! (demo reply {i})"}
            data["deadline"] = (now + timedelta(minutes=rng.choice([10, 45, 240]))).isoformat()
        elif kind == "upload_product":
            data["params"] = {"title": f"Demo product {i}", "price": f"{rng.randint(5, 99)}.90",
                              "category": rng.choice(["home", "toys", "beauty"]),
                              "image": "product.png"}
        else:
            data["params"] = {"campaign_id": rng.randint(1, 3)}
        out.append(TaskSpec.model_validate(data))
    return out


async def run_headless_demo(base: Settings, folder: Path, *, n: int) -> int:
    """The demo without a window, its database in ``folder``: 0 when the queue ran empty."""
    settings = demo_settings(base)
    with DemoSite() as site:
        print("ShopFleet demo (headless): the engine runs real Chromium against the built-in "
              "demo seller site.\n")
        print(f"demo site on 127.0.0.1:{site.port} (hosts {host_resolver_rules()})")
        store = await asyncio.to_thread(open_store, settings, folder / "demo.db")
        try:
            vault = await asyncio.to_thread(Vault.open, folder)
            await asyncio.to_thread(register_demo_shops, store, site, vault)
            engine = build_engine(settings, store, home=folder)
            ids = await engine.submit(demo_specs(site, n))
            print(f"database {folder / 'demo.db'}: {len(ids)} tasks for "
                  f"{len(site.shops())} shops, {engine.slots} browser slots")
            # A CAPTCHA on one platform: that task goes to a person (a ticket) while the rest
            # runs; an urgent customer reply arrives a little later and preempts.
            site.set_fault("captcha", platform="tiktok", times=1)
            print("fault switched on: a CAPTCHA on tiktok (its task becomes a ticket)\n")
            urgent = asyncio.create_task(_urgent_later(engine, site, 6.0))
            faults = asyncio.create_task(_fault_stream(site))
            await run_worker(engine, until_idle=True, summary_every_s=3.0,
                             reach_s=settings.breakers.backoff_max_s + 5)
            faults.cancel()
            urgent.cancel()
            counts = store.counts()
            tickets = engine.tickets.tickets()
        finally:
            await asyncio.to_thread(store.close)
        writes: dict[str, int] = {}
        for rec in site.records():
            writes[rec["kind"]] = writes.get(rec["kind"], 0) + 1
        print(f"\nfinished: {counts['done']} done, {counts['waiting_human']} waiting for a "
              f"person, {counts['quarantined']} quarantined, {counts['queued']} still queued")
        print("the site recorded: " + ", ".join(f"{v} {k}" for k, v in sorted(writes.items())))
        for t in tickets:
            print(f"ticket {t.id}: task {t.task_id} on {t.shop}: {t.error_class}: "
                  f"{t.error[:80]}")
        if tickets:
            print(f"(answer with: shopfleet answer ID --action resume --db {folder / 'demo.db'}"
                  " — run the demo with --keep to keep its folder)")
    return 0 if counts["queued"] == 0 and counts["running"] == 0 else 1


DEMO_FAULTS: tuple[tuple[float, str, str, dict[str, Any], str], ...] = (
    (3.0, "rate_limit", "temu", {"status": 429, "retry_after": 2, "times": 3},
     "429 + Retry-After on temu: its gate is held, the tasks wait (no ticket)"),
    (8.0, "error_5xx", "pdd", {"status": 500, "times": 12},
     "a 5xx storm on pdd: its breaker opens, the tasks wait for a probe (no ticket)"),
    (14.0, "layout_changed", "temu", {"times": 1},
     "a changed layout on temu: that task becomes a ticket"),
    (18.0, "crash", "tiktok", {"times": 1},
     "a page that crashes the renderer on tiktok: retried on a fresh browser"),
)
"""The headless demo's fault stream: (after seconds, fault, platform, options, what it shows)."""


async def _fault_stream(site: DemoSite) -> None:
    """Switch on each promised fault in turn, saying what it should show."""
    start = asyncio.get_running_loop().time()
    for at, fault, platform, options, what in DEMO_FAULTS:
        await asyncio.sleep(max(0.0, at - (asyncio.get_running_loop().time() - start)))
        await asyncio.to_thread(site.set_fault, fault, platform=platform, **options)
        print(f"fault switched on: {what}")


async def _urgent_later(engine: Any, site: DemoSite, after_s: float) -> None:
    """An urgent customer reply for a busy shop: it preempts a lower-scored task."""
    await asyncio.sleep(after_s)
    busy = [t.shop for t, _ in engine.running_tasks()]
    shop = busy[0] if busy else site.shops()[0].name
    spec = TaskSpec.model_validate({
        "key": "demo-urgent", "type": "reply_customer", "shop": shop,
        "flow": "reply_customer", "priority": 20,
        "params": {"message_id": 1, "reply": "Urgent: your refund is on its way."}})
    print(f"an urgent customer reply arrives for {shop} (priority 20)")
    await engine.submit([spec])
