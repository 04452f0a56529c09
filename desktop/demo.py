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

from .i18n import QT_TR_NOOP, tr
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
    p.add_argument("--size", default="", help=argparse.SUPPRESS)  # WxH of the screenshots
    p.add_argument("--dark", action="store_true", help=argparse.SUPPRESS)  # a dark palette
    return p.parse_args(list(argv) if argv is not None else None)


FAULTS = {"layout_changed": QT_TR_NOOP("a changed page layout"),
          "captcha": QT_TR_NOOP("a CAPTCHA"), "crash": QT_TR_NOOP("crashing pages"),
          "error_5xx": QT_TR_NOOP("server errors"), "rate_limit": QT_TR_NOOP("rate limiting")}
"""The practice site's faults, as the status bar names them."""


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
            from . import names

            window.status_message(tr("Demo: the practice site now shows %1 on %2",
                                     tr(FAULTS[fault]), names.platform(platform)))
        batch = demo_specs(site, 3, seed=100 + round_)
        specs = [s.model_copy(update={"key": f"stream-{round_}-{i}"})
                 for i, s in enumerate(batch)]
        if round_ % 4 == 2:  # an urgent customer reply: high score, may preempt (issue 6)
            urgent = next((s for s in specs if s.type == "reply_customer"), None)
            if urgent is not None:
                specs.append(urgent.model_copy(update={"key": f"urgent-{round_}",
                                                       "priority": 20.0}))
        spec_list: list[TaskSpec] = specs
        window.runner.command(tr("Demo tasks"), lambda e, sl=spec_list: e.submit(sl))


async def take_screenshots(window: Any, folder: Path, run_for: float, *,
                           size: str = "") -> None:
    """Let the demo work, then save the main views, a ticket dialog and the settings."""
    from PySide6.QtWidgets import QApplication

    folder.mkdir(parents=True, exist_ok=True)
    if size:
        w, h = (int(x) for x in size.lower().split("x"))
        window.showNormal()
        window.resize(w, h)
    await asyncio.sleep(run_for)

    async def shot(view: str, name: str, wait: float = 1.5) -> None:
        window.show_tab(view)
        await asyncio.sleep(wait)
        window.grab().save(str(folder / name))

    await shot("pending", "main_window.png")
    await shot("in_flight", "in_flight.png")
    window.show_tab("tickets")
    await asyncio.sleep(1.5)
    model = window.models["tickets"]
    # On a slow machine the first ticket may come late: give it up to another run_for (a
    # minute at least), and its dialog (a reader round trip behind the live views) as long.
    patience_s = max(run_for, 60.0)
    for _ in range(int(patience_s * 2)):
        if model.rowCount():
            break
        await asyncio.sleep(0.5)
    window.grab().save(str(folder / "tickets.png"))
    if model.rowCount():
        window.panels["tickets"].select_ids(model.ids[:2])
        window.answer_selected()
        for _ in range(int(patience_s * 10)):
            await asyncio.sleep(0.1)
            dlg = window.dialog
            if dlg is not None and dlg.objectName() == "ticket-dialog" and dlg.isVisible():
                await asyncio.sleep(0.5)
                dlg.grab().save(str(folder / "ticket_dialog.png"))
                dlg.reject()
                break
    await shot("dashboard", "dashboard.png", 2.5)
    await shot("gates", "gates.png")
    await shot("kb", "kb.png")
    # Every other view of the side list, one file each (view-<key>.png), to look at them all.
    for key in window.nav.keys:
        await shot(key, f"view-{key}.png", 1.0)
    window.open_settings()
    await asyncio.sleep(1.0)
    if window.dialog is not None:
        window.dialog.grab().save(str(folder / "settings.png"))
        window.dialog.reject()
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
    if args.dark:
        from PySide6.QtCore import Qt

        from .palette import dark_palette

        app.setStyle("Fusion")
        app.styleHints().setColorScheme(Qt.ColorScheme.Dark)
        app.setPalette(dark_palette())
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
                window.ctx.extra["home"] = folder  # takeovers use the demo's sessions
                window.runner.command(tr("Demo tasks"),
                                      lambda e: e.submit(demo_specs(site, args.tasks)))
                jobs.append(asyncio.ensure_future(stream(window, site)))
                if args.screenshots:
                    jobs.append(asyncio.ensure_future(
                        take_screenshots(window, Path(args.screenshots), args.run_for,
                                         size=args.size)))

            code = loop.run_until_complete(run_console(
                # The demo's settings stay in its own folder: never the operator's file.
                settings, store, host, config_path=folder / "shopfleet.toml",
                title_suffix=tr(" — demo"),
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
