"""The flow workbench: record, point at, and run one flow on a shop's own browser, now.

What ``shopfleet record``, ``shopfleet run-flow`` and the console's flow editor run. Each call
opens ONE browser through the same :class:`~core.browser.pool.BrowserPool` the engine uses, so
the shop's context is the one its tasks get: its saved session (saved back afterwards) and its
profile (#17: proxy, locale, time zone, user agent, … — :func:`core.profiles.context_options_for`,
the function the engine's contexts are made with). No queue, no engine: a person is watching.

* :func:`open_shop_browser` — the shop's context (headed by default), its page, and what the
  shop's login is (from the vault; never printed).
* :func:`run_flow_once` — run a flow step by step, reporting each step; the first failing
  step raises :class:`~core.errors.TaskError` with its evidence (screenshot, DOM, logs).
* :func:`pick_locator` — open a page and return Playwright's own locator for the element the
  person points at with the recorder's toolbar.
* :func:`record_shop_flow` — the recorder (:func:`core.recorder.record_flow`) on that context.
* :func:`rename_params` — the person's names for the recorder's suggested parameters.

All of them are coroutines for a loop that may block on nothing else (the CLI's
``asyncio.run``, a console worker thread): store and vault reads run in threads anyway.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from .config import Settings
from .errors import InvalidInput, SpecError
from .flows.models import Flow
from .flows.placeholders import _KEY, _NOT_TEMPLATED, Placeholder, parse_template
from .recorder import RecordedFlow, ShopLogin, record_flow
from .recorder.convert import escape_braces
from .store.base import Store

DEMO_RULE = "MAP *.shopfleet.test 127.0.0.1"
"""Host rule for the demo site's shops (``*.shopfleet.test`` is the local demo server)."""


@dataclass
class ShopBrowser:
    """The shop's open browser context (see :func:`open_shop_browser`)."""

    context: Any
    """The Playwright ``BrowserContext``."""
    page: Any
    """The page the pool opened in it."""
    shop: Any
    """The shop as a flow run knows it (:class:`core.flows.ShopInfo`, password included)."""
    evidence_dir: Path

    @property
    def login(self) -> ShopLogin:
        """The shop's base URL and credentials, for the recorder to recognise them."""
        return ShopLogin(self.shop.base_url, self.shop.username, self.shop.password)


def one_browser_settings(settings: Settings, shop_domain: str, *, headed: bool) -> Settings:
    """Settings for one person-watched browser: one browser, none warm, headed or not, and
    the demo host rule for a demo shop."""
    if shop_domain.endswith(".shopfleet.test") and not settings.browser.host_resolver_rules:
        settings = settings.with_changes(browser={"host_resolver_rules": DEMO_RULE})
    settings = settings.with_changes(browser={"headless": not headed})
    return settings.with_changes(pool={"max_browsers": 1, "warm": 0})


@dataclass(frozen=True)
class _Shop:
    home: Path
    vault: Any
    record: Any
    info: Any
    options: Any
    """The shop's :class:`core.profiles.ContextOptions` (its profile, proxy password in it)."""


async def _load_shop(store: Store, settings: Settings, shop_name: str,
                     home: Path | None) -> _Shop:
    from .paths import data_dir
    from .profile_store import load_context_options
    from .secrets import decrypt_password, open_vault_for
    from .validation import shop_info

    folder: Path = home if home is not None else await asyncio.to_thread(data_dir)
    vault = await asyncio.to_thread(open_vault_for, store, folder)
    rec = await asyncio.to_thread(store.shop, shop_name)
    token = await asyncio.to_thread(store.shop_password_enc, shop_name)
    # The shop's profile as every task of it gets it (read with the shop, so a change made on
    # any machine of a fleet applies here too).
    options = await asyncio.to_thread(load_context_options, store, shop_name, settings, vault)
    return _Shop(folder, vault, rec, shop_info(settings, rec, decrypt_password(token, vault=vault)),
                 options)


@contextlib.asynccontextmanager
async def open_shop_browser(settings: Settings, store: Store, shop_name: str, *,
                            headed: bool = True, home: Path | None = None,
                            purpose: str = "workbench") -> AsyncIterator[ShopBrowser]:
    """The shop's own browser context with its saved session; saved back when the block ends.

    Args:
        settings: the configuration (browser, pool timeouts, platforms).
        store: where the shop is registered.
        shop_name: the shop.
        headed: show the window (a person watches or acts).
        home: the data folder (default: :func:`core.paths.data_dir`).
        purpose: names the evidence folder (``evidence/<purpose>/<time>``).

    Raises:
        InvalidInput: no such shop (field ``shop``); VaultKeyError: the vault cannot read it.
    """
    shop = await _load_shop(store, settings, shop_name, home)
    async with _open(settings, shop, headed=headed, purpose=purpose) as sb:
        yield sb


@contextlib.asynccontextmanager
async def _open(settings: Settings, shop: _Shop, *, headed: bool,
                purpose: str) -> AsyncIterator[ShopBrowser]:
    from .browser import BrowserPool, SessionStore

    settings = one_browser_settings(settings, shop.record.domain, headed=headed)
    evidence = shop.home / "evidence" / purpose / time.strftime("%Y%m%d-%H%M%S")
    pool = BrowserPool(settings.pool, settings.browser,
                       sessions=SessionStore(shop.home / "sessions", shop.vault))
    async with pool, pool.task_context(shop.record.name, shop.options) as tc:
        yield ShopBrowser(tc.context, tc.page, shop.info, evidence)


async def run_flow_once(settings: Settings, store: Store, flow: Flow | Mapping[str, Any],
                        params: Mapping[str, Any],
                        shop_name: str, *, headed: bool = True,
                        on_step: Callable[[Any], None] | None = None,
                        home: Path | None = None) -> dict[str, Any]:
    """Run one flow now on the shop's browser, step by step; returns the extracted results.

    ``flow`` is a :class:`~core.flows.Flow` or a flow document (the editor's, validated here).
    The flow's placeholders are checked first (a missing parameter is refused before any
    browser opens). ``on_step`` gets each :class:`core.flows.StepEvent` (started, done,
    skipped, failed). No checkpoint is kept: it is a one-off run.

    Raises:
        SpecError: the flow does not fit the parameters or the shop (field named).
        TaskError: the first failing step; its ``evidence`` maps names to files.
    """
    from .engine.gates import RateGates
    from .flows import Checkpoint, check_flow, default_asset_dirs, run_flow
    from .flows.models import parse_flow
    from .store import domain_of

    if not isinstance(flow, Flow):
        flow = parse_flow(flow)
    gates = RateGates(settings.gates)
    assets = default_asset_dirs(settings.assets.dirs)
    shop = await _load_shop(store, settings, shop_name, home)
    info = shop.info
    try:  # before a browser opens: a refused flow must not cost a window
        check_flow(flow, params=params, shop_fields=info.fields(), asset_dirs=assets,
                   shop=info.placeholder_values(), origins=info.policy())
    except SpecError as exc:
        raise SpecError(exc.field, exc.reason) from None

    async def save(cp: Checkpoint) -> None:
        return None  # a one-off run keeps no checkpoint

    async def gate(url: str) -> None:
        try:
            await gates.acquire(domain_of(url))
        except InvalidInput:
            await gates.global_bucket.acquire()

    async with _open(settings, shop, headed=headed, purpose="run-flow") as sb:
        result = await run_flow(
            sb.page, flow, params=dict(params), shop=info, checkpoint=None,
            save_checkpoint=save, evidence_dir=sb.evidence_dir,
            step_timeout_s=settings.pool.step_timeout_s, before_network=gate,
            on_step=on_step, asset_dirs=assets,
            route_foreign_documents=settings.security.route_foreign_documents)
    return dict(result.results)


async def pick_locator(settings: Settings, store: Store, shop_name: str, url: str, *,
                       lang: str = "en", headed: bool = True, home: Path | None = None,
                       on_page: Callable[[Any], Any] | None = None) -> str:
    """Open ``url`` in the shop's browser; return the locator of the element the person picks.

    The page shows the recorder's toolbar: the person presses one of its pick buttons, then
    clicks the element. The locator is Playwright's own choice (``Locator.normalize``, as
    codegen), e.g. ``internal:role=button[name="Send reply"i]``.

    Args:
        url: the page (``{shop.base_url}`` is replaced by the shop's base URL).
        on_page: called with the page once it is open (a scripted person in tests).

    Raises:
        SpecError: ``url`` is not a page of the shop's origins (field ``url``), or the browser
            was closed (Finish pressed) before anything was picked (field ``locator``).
    """
    from .flows.placeholders import resolve_url
    from .recorder import Pick, open_recorder

    async with open_shop_browser(settings, store, shop_name, headed=headed, home=home,
                                 purpose="pick") as sb:
        try:
            target = resolve_url(url, {}, sb.shop.placeholder_values())
        except SpecError as exc:
            raise SpecError("url", exc.reason) from None
        why = sb.shop.policy().why_not(target)
        if why is not None:
            raise SpecError("url", why)
        async with open_recorder(sb.context, lang=lang) as rec:
            page = await sb.context.new_page()
            await page.goto(target)
            if on_page is not None:
                await on_page(page)
            while True:
                picked = asyncio.ensure_future(rec.picked.wait())
                finished = asyncio.ensure_future(rec.finished.wait())
                await asyncio.wait({picked, finished}, return_when=asyncio.FIRST_COMPLETED)
                picked.cancel()
                finished.cancel()
                await rec.settle()
                picks = [e for e in rec.recording().events if isinstance(e, Pick)]
                if picks:
                    return picks[-1].locator
                if rec.finished.is_set():
                    raise SpecError("locator", "nothing was picked before the browser closed")
                rec.picked.clear()


async def record_shop_flow(settings: Settings, store: Store, shop_name: str, name: str, *,
                           lang: str = "en", start_url: str | None = None,
                           param_names: Mapping[str, str] | None = None, headed: bool = True,
                           home: Path | None = None, description: str = "") -> RecordedFlow:
    """Record a flow on the shop's own browser (its session and profile) until Finish.

    ``start_url`` may use ``{shop.base_url}``; default: the shop's base URL. The shop's
    credentials come from the vault so the recorder writes them as ``{shop.username}`` /
    ``{shop.password}``; they are never in the result.

    Raises:
        SpecError: a bad start URL (field ``--start``) or nothing usable recorded.
    """
    from .flows import default_asset_dirs
    from .flows.placeholders import resolve_url

    assets = default_asset_dirs(settings.assets.dirs)
    async with open_shop_browser(settings, store, shop_name, headed=headed, home=home,
                                 purpose="record") as sb:
        try:
            url = resolve_url(start_url or "{shop.base_url}", {},
                              sb.shop.placeholder_values())
        except SpecError as exc:
            raise SpecError("--start", exc.reason) from None
        why = sb.shop.policy().why_not(url)
        if why is not None:
            raise SpecError("--start", why)
        # The pool's own page stays open behind the recorder's: closing the recorder's
        # window (or Finish) ends the recording either way.
        return await record_flow(sb.context, name=name, shop=sb.login, start_url=url,
                                 lang=lang, description=description,
                                 param_names=param_names, asset_dirs=assets)


def rename_params(recorded: RecordedFlow, names: Mapping[str, str], *,
                  field: str = "--param-name") -> RecordedFlow:
    """The recorded flow with parameters renamed (``{"reply": "answer"}``).

    Raises:
        SpecError: an unknown parameter, a bad new name, or two parameters given one name.
    """
    if not names:
        return recorded
    params = dict(recorded.params)
    used = _params_used(recorded.flow)
    for old, new in names.items():
        if old not in used:
            known = ", ".join(sorted(used)) or "none"
            raise SpecError(field, f"the flow has no parameter {old!r} (it has: {known})")
        if not _KEY.match(new):
            raise SpecError(field, f"{new!r} is not a parameter name (letters, digits, _ and -,"
                            " starting with a letter or _)")
    final = [names.get(p, p) for p in sorted(used)]
    dup = next((n for n in final if final.count(n) > 1), None)
    if dup is not None:
        raise SpecError(field, f"two parameters would be named {dup!r}")
    doc = recorded.document()
    doc = _rename_in(doc, names)
    flow = Flow.model_validate(doc)
    params = {names.get(k, k): v for k, v in params.items()}
    return replace(recorded, flow=flow, params=params)


def _params_used(flow: Flow) -> set[str]:
    out: set[str] = set()

    def walk(obj: Any, key: str = "") -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                if k not in _NOT_TEMPLATED:
                    walk(v, k)
        elif isinstance(obj, list):
            for v in obj:
                walk(v, key)
        elif isinstance(obj, str):
            for part in parse_template(obj):
                if isinstance(part, Placeholder) and part.namespace == "params":
                    out.add(part.key)

    walk(flow.model_dump(mode="json", by_alias=True))
    return out


def _rename_in(obj: Any, names: Mapping[str, str], key: str = "") -> Any:
    if isinstance(obj, dict):
        return {k: (v if k in _NOT_TEMPLATED else _rename_in(v, names, k))
                for k, v in obj.items()}
    if isinstance(obj, list):
        return [_rename_in(v, names, key) for v in obj]
    if isinstance(obj, str):
        out = []
        for part in parse_template(obj):
            if isinstance(part, Placeholder):
                k = names.get(part.key, part.key) if part.namespace == "params" else part.key
                out.append("{" + f"{part.namespace}.{k}" + "}")
            else:
                out.append(escape_braces(part))
        return "".join(out)
    return obj
