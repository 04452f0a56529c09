"""The executor that does the real work: a task's flow, run by the flow runner in a fresh
browser context from the pool, with its shop's session and credentials."""

from __future__ import annotations

import asyncio
import logging
import traceback
from pathlib import Path
from typing import Any

from ..browser.pool import BrowserPool
from ..browser.sessions import SessionStore
from ..config import Settings
from ..errors import (
    Blocked,
    BrowserCrashed,
    LeaseLost,
    NeedsHuman,
    ProxyFailed,
    RateLimited,
    SiteFailed,
    StoreUnavailable,
    TaskError,
)
from ..flows import Checkpoint, FlowRegistry, ShopInfo, StepEvent, default_asset_dirs, run_flow
from ..flows.evidence import redact_text
from ..paths import data_dir
from ..profiles import (
    ContextOptions,
    ProxyAddress,
    context_options_for,
    default_context_options,
)
from ..proxy_probe import names_the_proxy, probe_proxy
from ..secrets import decrypt_password, open_vault_for
from ..store import ClaimedTask, domain_of
from ..store.base import Store
from ..validation import shop_info
from ..vault import Vault
from .control import Outcome, TaskControl

log = logging.getLogger(__name__)


class BrowserExecutor:
    """Runs a claimed task's flow on a page from the pool.

    Args:
        settings: the configuration (pool, browser, flows, assets).
        store: where shops (and their encrypted passwords) are read from.
        pool: the browser pool (default: one built from the settings, sessions in the vault).
        registry: the flows (default: loaded from resources/flows and ``[flows] dirs``).
        home: the data folder for evidence, sessions and the vault key.
    """

    def __init__(self, settings: Settings, store: Store, *, pool: BrowserPool | None = None,
                 registry: FlowRegistry | None = None, home: Path | None = None,
                 vault: Vault | None = None) -> None:
        self.settings = settings
        self.store = store
        self.home = home or data_dir()
        # The key must match the store's passwords: a worker with another key (or none)
        # refuses to start instead of failing every task of a shop with a password.
        self.vault = vault or open_vault_for(store, self.home)
        self.pool = pool or BrowserPool(
            settings.pool, settings.browser,
            sessions=SessionStore(self.home / "sessions", self.vault),
            spare_options=default_context_options(settings))
        self.registry = registry or FlowRegistry.load([Path(d) for d in settings.flows.dirs])
        self.asset_dirs = default_asset_dirs(settings.assets.dirs)
        self.evidence_root = self.home / "evidence"

    @property
    def capacity(self) -> int:
        return self.pool.capacity

    async def start(self) -> None:
        await self.pool.start()

    async def close(self) -> None:
        await self.pool.close()

    def resources(self) -> dict[str, int]:
        st = self.pool.stats()
        return {"browsers": st.browsers_alive, "contexts": st.contexts_alive}

    def _shop_info(self, name: str) -> tuple[ShopInfo, ContextOptions]:
        shop = self.store.shop(name)
        password = decrypt_password(self.store.shop_password_enc(name), vault=self.vault)
        # Read with the shop on every task: a profile changed on any machine of a fleet
        # applies to the next task everywhere.
        proxy_pw = ""
        if shop.profile.proxy and shop.has_proxy_password:
            proxy_pw = decrypt_password(self.store.shop_proxy_password_enc(name),
                                        vault=self.vault)
        options = context_options_for(shop, self.settings, proxy_password=proxy_pw)
        return shop_info(self.settings, shop, password), options

    async def execute(self, task: ClaimedTask, ctl: TaskControl) -> Outcome:
        flow = self.registry.flow_for(task.flow, task.steps)
        shop, options = await asyncio.to_thread(self._shop_info, task.shop)
        checkpoint = Checkpoint.from_dict(task.checkpoint) if task.checkpoint else None
        evidence_dir = self.evidence_root / str(task.id) / f"attempt-{task.attempts}"
        steps = len(flow.steps)

        async def save(cp: Checkpoint) -> None:
            await ctl.checkpoint(cp.to_dict())

        async def gate(url: str) -> None:
            try:
                domain = domain_of(url)
            except Exception:  # about:blank and the like still pass the global gate
                domain = task.domain
            await ctl.gate(domain)

        def on_step(ev: StepEvent) -> None:
            if ev.index is not None and ev.status == "started":
                ctl.progress(ev.index + 1, steps, ev.name or ev.action)

        try:
            return await self._execute(task, ctl, flow, shop, options, checkpoint, evidence_dir,
                                       steps, save, gate, on_step)
        except TaskError as exc:
            if not options.has_proxy or isinstance(exc, ProxyFailed | Blocked | NeedsHuman):
                raise
            why = await self._proxy_trouble(exc, options, task.base_url)
            if why is None:
                raise
            server = ProxyAddress(options.proxy_server, options.proxy_username).url
            raise ProxyFailed(f"proxy down: {server} {why}", shop=task.shop,
                              step=exc.step) from None

    async def _proxy_trouble(self, exc: TaskError, options: ContextOptions,
                             base_url: str) -> str | None:
        """Why the shop's proxy is to blame for ``exc``, or None when it is not: the browser
        named the proxy, or the proxy does not answer a request for the shop's site now."""
        if names_the_proxy(str(exc)):
            first = next((w for w in str(exc).split() if names_the_proxy(w)), "")
            return f"failed ({first.strip('():,')})"
        if isinstance(exc, SiteFailed) and not isinstance(exc, RateLimited):
            return await probe_proxy(options, base_url)  # the site answered a 429 itself
        return None

    async def _execute(self, task: ClaimedTask, ctl: TaskControl, flow: Any, shop: ShopInfo,
                       options: ContextOptions, checkpoint: Checkpoint | None,
                       evidence_dir: Path, steps: int, save: Any, gate: Any,
                       on_step: Any) -> Outcome:
        reloaded = False
        rescue = self.settings.rescue
        async with self.pool.task_context(task.shop, options) as tc:
            ctl.browser_id = tc.browser_id
            while True:
                try:
                    result = await run_flow(
                        tc.page, flow, params=task.params, shop=shop, checkpoint=checkpoint,
                        save_checkpoint=save, evidence_dir=evidence_dir,
                        step_timeout_s=self.settings.pool.step_timeout_s,
                        before_network=gate, on_step=on_step, should_yield=ctl.should_yield,
                        asset_dirs=self.asset_dirs, step_retries=rescue.step_retries,
                        step_retry_wait_s=rescue.step_retry_wait_s,
                        allow_credentials=not task.steps
                        or self.settings.security.inline_credentials,
                        route_foreign_documents=self.settings.security.route_foreign_documents)
                    break
                except TaskError as exc:
                    if exc.step is not None and 0 <= exc.step < steps:
                        st = flow.steps[exc.step]
                        exc.step_name = st.name or f"{exc.step}:{st.action}"
                    # Second level of the rescue chain: reload the start page and resume
                    # from the last checkpoint, once per attempt, in the same context.
                    if (isinstance(exc, Blocked | NeedsHuman | BrowserCrashed | RateLimited)
                            or not rescue.reload_resume or reloaded or not ctl.may_rescue()):
                        raise
                    reloaded = True
                    last = ctl.last_checkpoint
                    checkpoint = Checkpoint.from_dict(last) if last else None
                except (LeaseLost, StoreUnavailable):
                    raise
                except Exception as exc:
                    # A bug (or a flow that does not check out at run time): the engine logs
                    # and records what it is told, so say it here with the password redacted
                    # from the message and the traceback.
                    secrets = [p for p in (shop.password, options.proxy_password) if p]
                    log.error("task %s: unexpected error in its flow:\n%s", task.id,
                              redact_text("".join(traceback.format_exception(exc)), secrets))
                    raise TaskError(redact_text(f"internal error: {exc!r}", secrets)) from None
        cp: dict[str, Any] | None = result.checkpoint.to_dict() if result.checkpoint else None
        return Outcome(result.status, dict(result.results), cp)
