"""Driver round trips per step: the shipped flows through the runner in real Chromium.

``collect_data`` (logged out: the login steps run; and logged in, as the pool's tasks run it)
and ``reply_customer`` (logged in) against the demo site (its own process), each run in a
fresh context with a fresh page wrapped in :class:`core.flows.fakepage.CountingPage`, which
notes every awaited call of the page, its locators, keyboard and element handles. Per step:
the calls (names, in order) and the step's time (p50 over ``--repeat`` runs, default 5);
per run: calls before the first step and in all. Run with another tree's ``core`` on
``PYTHONPATH`` to compare (that tree needs ``CountingPage`` in its ``fakepage``).

Run: ``python bench/flow_calls.py [--quick] [--repeat N]``; JSON Lines on stdout.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from _common import SiteProcess, arg_parser, emit, emit_machine, note, percentiles, temp_dir
from playwright.async_api import async_playwright

from core.browser.discovery import launch_args, running_as_root
from core.config import Settings
from core.demo import demo_settings
from core.demosite import DemoShop, host_resolver_rules
from core.flows import Checkpoint, FlowRegistry, ShopInfo, StepEvent, run_flow
from core.flows.fakepage import CountingPage

BENCH = "flow_calls"
CHROMIUM = "/usr/bin/chromium"


def settings() -> Settings:
    return demo_settings(Settings()).with_changes(
        browser={"executable_path": CHROMIUM, "host_resolver_rules": host_resolver_rules()})


def info(cfg: Settings, shop: DemoShop) -> ShopInfo:
    plat = cfg.platforms.get(shop.platform)
    return ShopInfo(name=shop.name, platform=shop.platform, base_url=shop.base_url,
                    username=shop.username, password=shop.password,
                    allowed_origins=tuple(plat.allowed_origins) if plat else (),
                    login_url=plat.login_url if plat else "")


async def one_run(context: Any, flow: Any, params: Mapping[str, Any], shop: ShopInfo,
                  evidence: Path) -> tuple[list[str], list[tuple[StepEvent, list[str]]]]:
    page = CountingPage(await context.new_page())
    steps: list[tuple[StepEvent, list[str]]] = []
    before: list[str] = []
    mark = [0, False]

    def on_step(ev: StepEvent) -> None:
        if ev.status == "started":
            if not mark[1]:
                before.extend(page.calls)
                mark[1] = True
            mark[0] = len(page.calls)
        else:
            steps.append((ev, page.calls[int(mark[0]):]))

    async def save(_cp: Checkpoint) -> None:
        return None

    try:
        await run_flow(page, flow, params=params, shop=shop, checkpoint=None,
                       save_checkpoint=save, evidence_dir=evidence, step_timeout_s=30.0,
                       on_step=on_step)
    finally:
        await page.close()
    return before, steps


async def main_async(repeat: int, parent: str | None) -> None:
    emit_machine(BENCH, parent)
    cfg = settings()
    site = SiteProcess()
    reg = FlowRegistry.load()
    try:
        shop = site.shops()[0]
        si = info(cfg, shop)
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(
                executable_path=CHROMIUM, headless=True, chromium_sandbox=False,
                args=launch_args(cfg.browser, as_root=running_as_root()))
            try:
                with temp_dir("shopfleet-bench-calls-", parent) as home:
                    cases = [
                        ("collect_data, logged out", "collect_data", {"page": 1}, False),
                        ("collect_data, logged in", "collect_data", {"page": 2}, True),
                        ("reply_customer, logged in", "reply_customer",
                         {"message_id": 3, "reply": "Thanks, shipped today"}, True),
                    ]
                    # A saved session, as the pool gives every task (the login run's cookies).
                    login_ctx = await browser.new_context()
                    await one_run(login_ctx, reg.get("collect_data"), {"page": 1}, si,
                                  home / "ev-login")
                    session = await login_ctx.storage_state()
                    await login_ctx.close()
                    for label, name, params, logged_in in cases:
                        flow = reg.get(name)
                        per_step: dict[int, list[tuple[StepEvent, list[str]]]] = {}
                        befores: list[int] = []
                        totals: list[int] = []
                        for k in range(repeat):
                            ctx = await browser.new_context(
                                storage_state=session if logged_in else None)
                            try:
                                before, steps = await one_run(
                                    ctx, flow, params, si, home / f"ev-{name}-{k}")
                            finally:
                                await ctx.close()
                            befores.append(len(before))
                            totals.append(len(before) + sum(len(c) for _, c in steps))
                            for ev, calls in steps:
                                if ev.index is not None:
                                    per_step.setdefault(ev.index, []).append((ev, calls))
                        for index, seen in sorted(per_step.items()):
                            ev, calls = seen[-1]
                            ms = percentiles([e.duration_ms for e, _ in seen], [50])[0]
                            emit(BENCH, label, "step_calls", len(calls), "calls", step=index,
                                 action=ev.action, name=ev.name, status=ev.status,
                                 calls=calls, step_ms_p50=ms, runs=len(seen))
                        emit(BENCH, label, "calls_before_first_step",
                             percentiles(befores, [50])[0], "calls")
                        emit(BENCH, label, "calls_per_run", percentiles(totals, [50])[0],
                             "calls", runs=repeat)
                        note(f"{label}: {percentiles(totals, [50])[0]:.0f} calls a run")
            finally:
                await browser.close()
    finally:
        site.close()
    emit_machine(BENCH, parent)


def main() -> None:
    parser = arg_parser(__doc__.splitlines()[0] if __doc__ else "flow calls")
    parser.add_argument("--repeat", type=int, default=None, help="runs per case (default 5)")
    args = parser.parse_args()
    repeat = args.repeat or (2 if args.quick else 5)
    asyncio.run(main_async(repeat, args.dir))


if __name__ == "__main__":
    main()
