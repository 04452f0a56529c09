"""The executor that does the real work: a task's flow, run by the flow runner in a fresh
browser context from the pool, with its shop's session and credentials."""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable
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
from ..flows import (
    Checkpoint,
    FlowRegistry,
    ShopInfo,
    StepEvent,
    default_asset_dirs,
    run_flow,
)
from ..flows.evidence import redact_text
from ..flows.guards import WINDOW_RECORD_JS
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

PhaseTimer = Callable[[int, str, float], None]
"""Told ``(task id, phase, seconds)`` for each phase of a task (see
:attr:`BrowserExecutor.phase_timer`)."""


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
        # Contexts made ahead carry the runner's record of opened windows already.
        self.pool.context_init_script = WINDOW_RECORD_JS
        self.registry = registry or FlowRegistry.load([Path(d) for d in settings.flows.dirs])
        self.asset_dirs = default_asset_dirs(settings.assets.dirs)
        self.evidence_root = self.home / "evidence"
        self.phase_timer: PhaseTimer | None = None
        """None (the default: nothing is timed), or told ``(task id, phase, seconds)`` for
        each phase of a task — ``shop`` (the wait for the shop's record and password, read
        while the pool prepares the context), the pool's
        (:data:`core.browser.pool.PhaseTimer`), ``gate`` per gated step, ``step:<action>``
        per step, ``checkpoint`` per checkpoint written (``checkpoint_skipped`` when not
        needed), ``flow`` for the whole run: the benchmark's per-phase breakdown."""

    @property
    def capacity(self) -> int:
        return self.pool.capacity

    async def start(self) -> None:
        await self.pool.start()

    async def close(self) -> None:
        await self.pool.close()

    def prepare_context(self) -> None:
        """A context is about to be wanted at once (urgent work preempts): have one ready."""
        self.pool.prepare_context()

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
        timer = self.phase_timer
        clock = time.perf_counter
        # The shop's profile decides which context the pool hands out (a spare only for equal
        # options), so the shop is read before the context is asked for.
        t_shop = clock()
        shop, options = await asyncio.to_thread(self._shop_info, task.shop)
        if timer is not None:
            timer(task.id, "shop", clock() - t_shop)
        checkpoint = Checkpoint.from_dict(task.checkpoint) if task.checkpoint else None
        evidence_dir = self.evidence_root / str(task.id) / f"attempt-{task.attempts}"
        steps = len(flow.steps)
        written: dict[str, Any] = {"writes_done": (task.checkpoint or {}).get("writes_done")
                                   or []}

        async def save(cp: Checkpoint) -> None:
            data = cp.to_dict()
            if ((cp.next_step >= steps or ctl.yield_requested) and cp.write_in_flight is None
                    and list(cp.writes_done) == list(written["writes_done"])):
                # Read progress that a durable write follows anyway: the flow's last
                # checkpoint (the ack records the results) or a yield's (the release writes
                # ctl.last_checkpoint in its own commit). No write finished since the last
                # checkpoint written, so a crash before that commit costs replaying read
                # steps, never a repeated write.
                ctl.last_checkpoint = data
                if timer is not None:
                    timer(task.id, "checkpoint_skipped", 0.0)
                return
            t = clock()
            await ctl.checkpoint(data)
            written["writes_done"] = list(cp.writes_done)
            if timer is not None:
                timer(task.id, "checkpoint", clock() - t)

        async def gate(url: str) -> None:
            try:
                domain = domain_of(url)
            except Exception:  # about:blank and the like still pass the global gate
                domain = task.domain
            t = clock()
            await ctl.gate(domain)
            if timer is not None:
                timer(task.id, "gate", clock() - t)

        def on_step(ev: StepEvent) -> None:
            if ev.index is not None and ev.status == "started":
                ctl.progress(ev.index + 1, steps, ev.name or ev.action)
            elif timer is not None and ev.status in ("done", "replayed", "skipped"):
                name = "start_url" if ev.index is None else ev.action
                timer(task.id, f"step:{name}", ev.duration_ms / 1000)

        def pool_phase(phase: str, seconds: float) -> None:
            assert timer is not None
            timer(task.id, phase, seconds)

        try:
            return await self._execute(task, ctl, flow, shop, options, checkpoint, evidence_dir,
                                       steps, save, gate, on_step,
                                       pool_phase if timer is not None else None)
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
                       on_step: Any, pool_timer: Any) -> Outcome:
        timer = self.phase_timer
        reloaded = False
        rescue = self.settings.rescue
        async with self.pool.task_context(task.shop, options, timer=pool_timer) as tc:
            t_flow = time.perf_counter()
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
                        route_foreign_documents=self.settings.security.route_foreign_documents,
                        window_record_installed=tc.init_script == WINDOW_RECORD_JS)
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
            if timer is not None:
                timer(task.id, "flow", time.perf_counter() - t_flow)
        cp: dict[str, Any] | None = result.checkpoint.to_dict() if result.checkpoint else None
        return Outcome(result.status, dict(result.results), cp)
