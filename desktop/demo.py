"""``shopfleet demo``: the console on a fresh database with the demo seller site and a mixed
stream of demo tasks — including faults that raise tickets, an urgent task, a poison page and a
failing site that trips its breaker — so a newcomer sees every feature within a minute.

``--screenshots DIR --run-for S`` lets it work for S seconds, saves the main window, the
dashboard and a ticket dialog into DIR, and closes (used by the Xvfb test).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import shutil
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from core import (
    DemoSite,
    Settings,
    Vault,
    demo_settings,
    demo_specs,
    open_store,
    register_demo_shops,
)

from .launch import engine_host, make_app, run_console

log = logging.getLogger(__name__)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="shopfleet demo",
                                description="The console on the demo seller site.")
    p.add_argument("--tasks", type=int, default=30, help="tasks in the first batch")
    p.add_argument("--keep", action="store_true", help="keep the demo folder")
    p.add_argument("--lang", choices=["system", "en", "zh_CN"], default=None)
    p.add_argument("--screenshots", default=None, help=argparse.SUPPRESS)
    p.add_argument("--run-for", type=float, default=40.0, help=argparse.SUPPRESS)
    return p.parse_args(list(argv) if argv is not None else None)


async def stream(window: Any, site: DemoSite, *, every_s: float = 4.0) -> None:
    """Keep work arriving: a few mixed tasks every few seconds, an urgent reply now and then,
    and faults switched on at moments a newcomer can follow."""
    from core import TaskSpec

    round_ = 0
    faults = {
        1: ("layout_changed", "temu", {"times": 4}),    # page changed → tickets
        2: ("captcha", "tiktok", {"times": 2}),         # a person is needed → tickets
        3: ("crash", "pdd", {"times": 6}),              # a poison page → quarantine
        5: ("error_5xx", "tiktok", {"times": 10}),      # a failing site → its breaker opens
        7: ("rate_limit", "temu", {"times": 3, "retry_after": 3}),  # 429 → the gate holds
    }
    while True:
        await asyncio.sleep(every_s)
        round_ += 1
        if round_ in faults:
            fault, platform, opts = faults[round_]
            await asyncio.to_thread(site.set_fault, fault, platform=platform, **opts)
            window.status_message(f"demo: {fault} switched on for {platform}")
        batch = demo_specs(site, 3, seed=100 + round_)
        specs = [s.model_copy(update={"key": f"stream-{round_}-{i}"})
                 for i, s in enumerate(batch)]
        if round_ % 4 == 2:  # an urgent customer reply: high score, may preempt (issue 6)
            urgent = next((s for s in specs if s.type == "reply_customer"), None)
            if urgent is not None:
                specs.append(urgent.model_copy(update={"key": f"urgent-{round_}",
                                                       "priority": 20.0}))
        spec_list: list[TaskSpec] = specs
        window.runner.command("demo stream", lambda e, sl=spec_list: e.submit(sl))


async def take_screenshots(window: Any, folder: Path, run_for: float) -> None:
    """Let the demo work, then save the main window, the dashboard and a ticket dialog."""
    from PySide6.QtWidgets import QApplication

    folder.mkdir(parents=True, exist_ok=True)
    await asyncio.sleep(run_for)
    window.show_tab("pending")
    await asyncio.sleep(1.5)
    window.grab().save(str(folder / "main_window.png"))
    window.show_tab("tickets")
    await asyncio.sleep(1.5)
    model = window.models["tickets"]
    # On a slow machine the first ticket may come late: give it up to another run_for.
    for _ in range(int(run_for * 2)):
        if model.rowCount():
            break
        await asyncio.sleep(0.5)
    window.grab().save(str(folder / "tickets.png"))
    if model.rowCount():
        window.panels["tickets"].select_ids([model.ids[0]])
        window.answer_selected()
        for _ in range(50):
            await asyncio.sleep(0.1)
            dlg = window.dialog
            if dlg is not None and dlg.objectName() == "ticket-dialog" and dlg.isVisible():
                await asyncio.sleep(0.5)
                dlg.grab().save(str(folder / "ticket_dialog.png"))
                dlg.reject()
                break
    window.show_tab("dashboard")
    await asyncio.sleep(2.5)
    window.grab().save(str(folder / "dashboard.png"))
    window.show_tab("gates")
    await asyncio.sleep(1.5)
    window.grab().save(str(folder / "gates.png"))
    QApplication.processEvents()
    window.close()


def run_demo(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``shopfleet demo``: the console over the demo site."""
    import qasync

    from .i18n import install_language, saved_language

    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s: %(message)s")
    folder = Path(tempfile.mkdtemp(prefix="shopfleet-demo-"))
    app = make_app()
    install_language(args.lang or saved_language())
    loop = qasync.QEventLoop(app)
    asyncio.set_event_loop(loop)
    try:
        with DemoSite() as site:
            settings = demo_settings(Settings())
            store = open_store(settings, folder / "demo.db")
            register_demo_shops(store, site, Vault.open(folder))
            host = engine_host(settings, store, executor="browser", home=folder)
            jobs: list[asyncio.Task[Any]] = []

            def started(window: Any) -> None:
                window.runner.command("demo tasks",
                                      lambda e: e.submit(demo_specs(site, args.tasks)))
                jobs.append(asyncio.ensure_future(stream(window, site)))
                if args.screenshots:
                    jobs.append(asyncio.ensure_future(
                        take_screenshots(window, Path(args.screenshots), args.run_for)))

            code = loop.run_until_complete(run_console(
                settings, store, host, config_path=None, title_suffix=" — demo",
                on_window=started))
            for j in jobs:
                j.cancel()
            return code
    finally:
        loop.close()
        if args.keep:
            print(f"kept the demo folder: {folder}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(run_demo())
