"""``shopfleet run-flow FLOW --shop NAME --param k=v … [--headed]``: run one flow now.

The tool an operator uses to write and debug a flow: no queue, one browser, every step printed
as it goes, the extracted results at the end, and on failure the error and where its evidence
(screenshot, redacted DOM, console log, step log) was saved — exit code 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from ..errors import InvalidInput, SpecError, TaskError
from .context import Cli

DEMO_RULE = "MAP *.shopfleet.test 127.0.0.1"


def parse_params(pairs: list[str]) -> dict[str, Any]:
    """``k=v`` pairs; a value that parses as JSON (numbers, true, lists) is taken as such."""
    out: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InvalidInput("--param", f"{pair!r} is not KEY=VALUE")
        try:
            out[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            out[key.strip()] = value
    return out


def cmd_run_flow(args: argparse.Namespace, cli: Cli) -> int:
    from ..flows import FlowRegistry
    from ..flows.registry import read_flow_file

    settings = cli.settings
    path = Path(args.flow)
    if path.suffix == ".json" and path.exists():
        flow = read_flow_file(path)
    else:
        flow = FlowRegistry.load([Path(d) for d in settings.flows.dirs]).get(args.flow)
    params = parse_params(args.param or [])
    shop = cli.store.shop(args.shop)
    if shop.domain.endswith(".shopfleet.test") and not settings.browser.host_resolver_rules:
        settings = settings.with_changes(browser={"host_resolver_rules": DEMO_RULE})
    if args.headed:
        settings = settings.with_changes(browser={"headless": False})
    settings = settings.with_changes(pool={"max_browsers": 1, "warm": 0})
    return asyncio.run(_run(cli, settings, flow, params, args.shop))


async def _run(cli: Cli, settings: Any, flow: Any, params: dict[str, Any], shop_name: str) -> int:
    from ..browser import BrowserPool, SessionStore
    from ..engine.gates import RateGates
    from ..flows import Checkpoint, StepEvent, check_flow, default_asset_dirs, run_flow
    from ..paths import data_dir
    from ..profile_store import load_context_options
    from ..secrets import decrypt_password, open_vault_for
    from ..store import domain_of
    from ..validation import shop_info

    home = data_dir()
    store = cli.store
    vault = await asyncio.to_thread(open_vault_for, store, home)
    rec = await asyncio.to_thread(store.shop, shop_name)
    token = await asyncio.to_thread(store.shop_password_enc, shop_name)
    shop = shop_info(settings, rec, decrypt_password(token, vault=vault))
    # The shop's profile (proxy, locale, time zone, …) as every task of it gets it.
    options = await asyncio.to_thread(load_context_options, store, shop_name, settings, vault)
    assets = default_asset_dirs(settings.assets.dirs)
    try:
        check_flow(flow, params=params, shop_fields=shop.fields(), asset_dirs=assets,
                   shop=shop.placeholder_values(), origins=shop.policy())
    except SpecError as exc:
        raise SpecError(exc.field, exc.reason) from None
    gates = RateGates(settings.gates)
    evidence = home / "evidence" / "run-flow" / time.strftime("%Y%m%d-%H%M%S")
    out = sys.stdout
    out.write(f"running flow {flow.name!r} ({len(flow.steps)} steps) for shop {rec.name}\n")

    def on_step(ev: StepEvent) -> None:
        if ev.index is None:
            if ev.status == "failed":
                out.write(f"  start page: failed: {ev.error}\n")
            return
        label = ev.name or ev.action
        if ev.status == "started":
            return
        extra = f" ({ev.duration_ms} ms)" if ev.duration_ms else ""
        err = f": {ev.error}" if ev.error else ""
        out.write(f"  {ev.index + 1:>2}. {label:<32} {ev.status}{extra}{err}\n")
        out.flush()

    async def save(cp: Checkpoint) -> None:
        return None  # a one-off run keeps no checkpoint

    async def gate(url: str) -> None:
        try:
            await gates.acquire(domain_of(url))
        except InvalidInput:
            await gates.global_bucket.acquire()

    pool = BrowserPool(settings.pool, settings.browser,
                       sessions=SessionStore(home / "sessions", vault))
    async with pool:
        try:
            async with pool.task_context(rec.name, options) as tc:
                result = await run_flow(
                    tc.page, flow, params=params, shop=shop, checkpoint=None,
                    save_checkpoint=save, evidence_dir=evidence,
                    step_timeout_s=settings.pool.step_timeout_s, before_network=gate,
                    on_step=on_step, asset_dirs=assets,
                    route_foreign_documents=settings.security.route_foreign_documents)
        except TaskError as exc:
            out.write(f"FAILED ({exc.error_class}): {exc}\n")
            for name, p in sorted(exc.evidence.items()):
                out.write(f"  evidence {name}: {p}\n")
            return 1
    out.write("done; results:\n")
    out.write(json.dumps(result.results, ensure_ascii=False, indent=2) + "\n")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("run-flow", parents=[common],
                       help="run one flow now, step by step (to write and debug flows)")
    p.add_argument("flow", help="a registered flow's name, or a path to a flow .json file")
    p.add_argument("--shop", required=True)
    p.add_argument("--param", action="append", metavar="KEY=VALUE",
                   help="a flow parameter (repeat for more)")
    p.add_argument("--headed", action="store_true", help="show the browser window")
    p.set_defaults(handler=cmd_run_flow, readonly=True)
