"""The step runner: plays a flow in a page, with checkpoints, preemption points and evidence.

:func:`run_flow` runs the steps in order. Around each step:

* **Checkpoints.** Before a write step acts, a checkpoint with ``write_in_flight=i`` is saved
  (and awaited, so it is durable before the click). After every step a checkpoint with
  ``next_step=i+1`` and the results so far is saved; a finished write moves from in flight to
  ``writes_done`` in that same save. A write ``navigate`` whose request provably never left
  (the name did not resolve, the connection was refused, no network — and nothing answered,
  no redirect: :meth:`~core.flows.failures.FailureClassifier.unsent`) did not happen: its
  in-flight mark is taken back (durably) before the failure is raised, so the next attempt
  runs the step again instead of handing a write of unknown outcome to a person.
* **Resume.** Given a checkpoint, the runner opens the flow's ``start_url``, replays the
  completed *read* steps to rebuild the page (``extract``, ``assert_text`` and ``screenshot``
  are not replayed: they do not change the page), never replays a write step, and goes on at
  ``next_step``. A write that was in flight has an unknown outcome: when the step declares
  ``verify`` and it holds, the write counts as done; when ``verify`` does not hold, the step is
  run again; without ``verify`` the run stops with :class:`NeedsHuman`.
* **Preemption.** ``should_yield()`` is asked at each step boundary (also before the first);
  when it says yes and the next step is interruptible, the run stops and returns
  ``RunResult(status="yielded")`` with a checkpoint that has been saved.
* **Rate gate.** ``before_network(url)`` is awaited before each step that makes the page talk
  to the site: ``navigate`` (with the target URL; also the opening of ``start_url``),
  ``click``, ``upload_file`` and ``press_key`` of Enter (with the page's current URL).
  ``type_text``, ``select_option``, ``wait_element``, ``extract``, ``assert_text`` and
  ``screenshot`` stay in the page and are not gated. Time spent in the gate or saving a
  checkpoint does not count against the step's timeout.
* **Failures** raise :mod:`core.errors` types with ``.step`` (``None`` while opening
  ``start_url``) and ``.evidence`` (file paths, see :mod:`core.flows.evidence`):

  - the page crashed or the browser went away → :class:`BrowserCrashed`;
  - the main frame shows a document served with 429, or 503 with ``Retry-After`` →
    :class:`RateLimited`; any other 5xx → :class:`SiteFailed`; a network error on navigate →
    :class:`SiteFailed`;
  - the page shows a human marker (CAPTCHA, login error) → :class:`NeedsHuman` (checked after
    every gated step, in the same ``evaluate`` as the window record, and after a failing
    step);
  - a locator matched nothing in time, or an assertion failed → :class:`PageChanged`;
  - a navigation timed out, an element did not disappear, or a step wedged past its timeout
    → :class:`StepTimeout`.

* **Trust boundary.** Every URL is resolved with percent-encoded values and checked against
  the shop's :class:`~core.origins.OriginPolicy` before it is loaded; before and after every
  step the main frame and every frame must show a page of an allowed origin (``about:blank``
  only as a transient), a frame navigation or a popup to a foreign origin is noted as it
  happens, and popups are closed. Windows a step opened are known before the next step
  starts (a page-side record read after every step; the runner waits for their ``popup``
  events, see :mod:`.guards`). A step costs its own driver calls plus one ``evaluate`` for
  these checks (``tests/unit/test_runner_calls.py`` pins it). A foreign page stops the run
  with :class:`OriginBlocked`.
  ``{shop.username}``/``{shop.password}`` are typed only on the shop's login origin (checked
  on the frame of the element the locator resolved to, right before the fill), the password
  only into an ``<input type=password>``; otherwise :class:`CredentialBlocked` and nothing is
  typed. Results, step errors and evidence are redacted in every encoding of the password,
  and screenshots mask password inputs and every field a credential went into.

The runner uses a deliberately small part of Playwright's async ``Page`` (``goto``, ``url``,
``locator(...)`` with ``first``/``nth``/``filter`` and ``click``/``fill``/``select_option``/
``set_input_files``/``wait_for``/``inner_text``/``get_attribute``/``all_inner_texts``/
``is_visible``/``count``/``press``, ``keyboard.press``, ``wait_for_load_state``,
``screenshot``, ``content``, ``on``, ``remove_listener``, ``main_frame``, ``evaluate``,
``add_init_script``) so
:mod:`core.flows.fakepage` can stand in for it.

Python flows registered by plugins are :class:`Flow` objects too, so they run here with the
same checkpoints, resume rules and evidence.

This module holds the loop (order, checkpoints, resume, preemption points); the layers under
it are :mod:`.run_state` (state, listeners, checkpoint saves), :mod:`.guards` (the trust
boundary), :mod:`.failures` (classification and evidence) and :mod:`.actions` (what each action
does to the page). The records a run takes and gives back are in :mod:`.records`.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import (
    CredentialBlocked,
    PageChanged,
    RateLimited,
    SiteFailed,
    SpecError,
    WriteOutcomeUnknown,
)
from .actions import PageActions, gated
from .models import (
    AssertTextStep,
    ClickStep,
    ExtractStep,
    Flow,
    NavigateStep,
    PressKeyStep,
    ScreenshotStep,
    Step,
    Verify,
    WaitElementStep,
    step_label,
)
from .placeholders import check_flow, default_asset_dirs, step_fields, uses_credentials
from .records import Checkpoint, RunResult, ShopInfo, StepEvent, StepStatus
from .run_state import Fail

DEFAULT_HUMAN_MARKERS: tuple[str, ...] = ("#captcha", "[data-captcha]", ".login-error")
"""Locators whose visibility means a person must take over."""


_NO_REPLAY = (ExtractStep, AssertTextStep, ScreenshotStep)


_YIELD_POLL_S = 0.05
"""How often an interruptible wait asks whether to yield."""


class _Yielded(Exception):
    """An interruptible wait was stopped for a yield; the step runs again on resume."""

    def __init__(self, step: int) -> None:
        super().__init__(step)
        self.step = step


async def run_flow(
    page: Any,
    flow: Flow,
    *,
    params: Mapping[str, Any],
    shop: ShopInfo,
    checkpoint: Checkpoint | None,
    save_checkpoint: Callable[[Checkpoint], Awaitable[None]],
    evidence_dir: Path,
    step_timeout_s: float,
    before_network: Callable[[str], Awaitable[None]] | None = None,
    on_step: Callable[[StepEvent], None] | None = None,
    should_yield: Callable[[], bool] | None = None,
    human_markers: Sequence[str] = DEFAULT_HUMAN_MARKERS,
    asset_dirs: Sequence[Path] | None = None,
    step_retries: int = 0,
    step_retry_wait_s: float = 1.0,
    allow_credentials: bool = True,
    route_foreign_documents: bool = False,
    window_record_installed: bool = False,
) -> RunResult:
    """Run a flow in a page (see the module docstring for the rules).

    Args:
        page: a Playwright async ``Page`` (or :class:`~core.flows.fakepage.FakePage`).
        flow: the flow to run.
        params: the task's parameters for ``{params.x}``.
        shop: the shop, for ``{shop.x}``; its password is redacted from all evidence.
        checkpoint: where a previous attempt stopped, or ``None`` for a fresh start.
        save_checkpoint: stores a checkpoint durably; awaited before a write step acts.
        evidence_dir: where failure evidence (and ``screenshot`` step images) go.
        step_timeout_s: timeout of a step that sets no ``timeout_s``.
        before_network: the rate gate, awaited with a URL before gated steps.
        on_step: told about each step as it starts and ends (must not block).
        should_yield: asked at step boundaries whether to stop for preemption.
        human_markers: locators that mean a person must take over.
        asset_dirs: folders ``upload_file`` may read from (default: the demo site's assets;
            pass :func:`~core.flows.placeholders.default_asset_dirs` of ``[assets] dirs``).
        step_retries: the rescue chain's first level — in-place retries of a failed *read*
            step (site failure, timeout, missing locator) after ``step_retry_wait_s``. Write
            steps, CAPTCHAs, rate limits and crashes are never retried here.
        allow_credentials: False for inline steps (unless ``[security] inline_credentials``):
            a flow using ``{shop.username}``/``{shop.password}`` is refused.
        route_foreign_documents: also abort page and frame requests to foreign origins in the
            browser, before they are sent (``[security] route_foreign_documents``).
        window_record_installed: the page's context already runs
            :data:`~core.flows.guards.WINDOW_RECORD_JS` in every document (the pool added it
            to a context made ahead): the run does not add it to the page again.

    Returns:
        ``RunResult`` with status ``done`` or ``yielded``.

    Raises:
        TaskError: a subclass saying how the attempt failed, with ``step`` and ``evidence``.
        SpecError: the flow's placeholders or an upload path do not check out.
    """
    # URLs are checked step by step (OriginBlocked, with evidence), not here: a task that
    # got past submission (written straight into a shared store) still ends as a ticket.
    if not allow_credentials:
        # A task that got past submission (written straight into a shared store): refused
        # as a boundary violation (a ticket), not as a bug to retry.
        for i, st in enumerate(flow.steps):
            for path, _fname, value in step_fields(i, st):
                if uses_credentials(value):
                    raise CredentialBlocked(
                        f"{path}: inline steps may not use the shop's credentials ([security] "
                        "inline_credentials is off); nothing was run", step=i)
    check_flow(flow, params=params, shop_fields=shop.fields())
    run = _Run(page, flow, params=params, shop=shop, save_checkpoint=save_checkpoint,
               evidence_dir=evidence_dir, step_timeout_s=step_timeout_s,
               before_network=before_network, on_step=on_step, should_yield=should_yield,
               human_markers=tuple(human_markers),
               asset_dirs=list(asset_dirs) if asset_dirs is not None else default_asset_dirs())
    run.step_retries = step_retries
    run.step_retry_wait_s = step_retry_wait_s
    run.attach()
    try:
        await run.watch_windows(installed=window_record_installed)
        if route_foreign_documents:
            await run.route_foreign()
        return await run.execute(checkpoint)
    except BaseException:
        await run.flush_quietly()  # the last good checkpoint is kept for the rescue chain
        raise
    finally:
        run.detach()
        await run.unroute()


class _Run(PageActions):
    """The loop: steps in order, checkpoints, resume and preemption points."""

    async def execute(self, checkpoint: Checkpoint | None) -> RunResult:
        steps = self.flow.steps
        cp = checkpoint or Checkpoint()
        self.validate_checkpoint(cp)
        self.results = dict(cp.results)
        self.writes_done = list(cp.writes_done)
        self.in_flight = cp.write_in_flight
        if checkpoint is not None:
            self.saved = checkpoint
        resuming = checkpoint is not None and (cp.next_step > 0 or cp.write_in_flight is not None)
        if cp.next_step >= len(steps) and cp.write_in_flight is None:
            return RunResult("done", dict(self.results), cp, tuple(self.log))
        if self.wants_yield(steps[cp.next_step]):
            return await self.yielded(cp.next_step)

        first = steps[0]
        replay_from = self.replay_start(cp.next_step) if resuming else 0
        if (resuming and replay_from == 0) or not (
                isinstance(first, NavigateStep) and first.if_visible is None):
            await self.timed_step(None, None, self.open_start)
        if resuming:
            for j in range(cp.next_step):
                if j < replay_from:
                    self.emit(j, steps[j], "skipped")  # before the last navigation: no state
                    continue
                if self.should_yield is not None and self.should_yield():
                    # Preempted again while rebuilding the page: stop with the checkpoint as
                    # it was (no completed step is lost).
                    return RunResult("yielded", dict(self.results), cp, tuple(self.log))
                await self.replay(j, steps[j])
        for i in range(cp.next_step, len(steps)):
            step = steps[i]
            if self.wants_yield(step):
                return await self.yielded(i)
            if i in self.writes_done:
                self.emit(i, step, "skipped")
                await self.save(self.checkpoint(i + 1))
                continue
            if i == self.in_flight:
                await self.settle_in_flight(i, step)
                if i in self.writes_done:
                    continue
            try:
                await self.run_step(i, step)
            except _Yielded as y:
                return await self.yielded(y.step)
        await self.flush()
        final = self.saved if self.saved is not None else self.checkpoint(len(steps))
        return RunResult("done", dict(self.results), final, tuple(self.log))

    async def run_step(self, i: int, step: Step) -> None:
        """A step, retried in place on a passing failure (read steps only)."""
        tries = 0
        while True:
            try:
                await self.interruptible(i, step)
                return
            except (SiteFailed, PageChanged) as err:
                if (isinstance(err, RateLimited) or step.write or self.in_flight == i
                        or self.crashed or tries >= self.step_retries):
                    raise
                tries += 1
                self.retried += 1
                await asyncio.sleep(self.step_retry_wait_s)

    async def interruptible(self, i: int, step: Step) -> None:
        """Run a step; an interruptible wait (navigation, ``wait_element``) stops at once
        when a yield is requested, leaving the step to be run again on resume."""
        body = partial(self.timed_step, i, step, partial(self.step_body, i, step, False))
        if (self.should_yield is None or not step.interruptible or step.write
                or not isinstance(step, NavigateStep | WaitElementStep)):
            await body()
            return
        task = asyncio.ensure_future(body())
        while True:
            done, _ = await asyncio.wait([task], timeout=_YIELD_POLL_S)
            if done:
                task.result()
                return
            if self.should_yield():
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
                raise _Yielded(i)

    def replay_start(self, next_step: int) -> int:
        """Where a resume starts replaying: the last unconditional ``navigate`` before
        ``next_step``. A navigation throws the page's state away, so the read steps before it
        need not run again (the login lives in the shop's saved session); with no such
        navigation, everything from the start page is replayed."""
        for j in range(next_step - 1, -1, -1):
            st = self.flow.steps[j]
            if isinstance(st, NavigateStep) and st.if_visible is None:
                return j
        return 0

    def validate_checkpoint(self, cp: Checkpoint) -> None:
        n = len(self.flow.steps)
        if cp.next_step > n:
            raise SpecError("checkpoint.next_step",
                            f"{cp.next_step} is past the flow's last step ({n} steps)")
        for w in [*cp.writes_done, *([cp.write_in_flight] if cp.write_in_flight is not None
                                     else [])]:
            if not 0 <= w < n or not self.flow.steps[w].write:
                raise SpecError("checkpoint", f"step {w} is not a write step of flow "
                                f"{self.flow.name!r}")
        if cp.write_in_flight is not None and cp.write_in_flight != cp.next_step:
            raise SpecError("checkpoint.write_in_flight",
                            "must be next_step (a write in flight is the step in progress)")

    async def yielded(self, next_step: int) -> RunResult:
        cp = self.checkpoint(next_step)
        if self.saved != cp:
            await self.save(cp)
        await self.flush()
        return RunResult("yielded", dict(self.results), cp, tuple(self.log))

    async def replay(self, j: int, step: Step) -> None:
        if step.write or isinstance(step, _NO_REPLAY):
            self.emit(j, step, "skipped")
            return
        await self.timed_step(j, step, partial(self.step_body, j, step, True), replay=True)

    async def settle_in_flight(self, i: int, step: Step) -> None:
        """Decide what became of a write that was in flight when the last attempt stopped."""
        verify = step.verify
        if verify is None:
            err = WriteOutcomeUnknown(
                f"{step_label(i, step)}: the write was interrupted and its outcome is unknown; "
                "the step declares no verify, so a person must check the site", step=i)
            await self.fail(i, step, err, 0)
            raise err
        done = False

        async def check() -> bool:
            nonlocal done
            done = await self.verified(verify)
            return False

        await self.timed_step(i, step, check, quiet=True)
        if done:
            self.writes_done.append(i)
            self.in_flight = None
            self.emit(i, step, "verified")
            await self.save(self.checkpoint(i + 1))
        else:
            # Verified as not done: running the write again is what verify is for.
            self.in_flight = None

    async def verified(self, verify: Verify) -> bool:
        loc = self.page.locator(self.r(verify.locator))
        if verify.text is not None:
            loc = loc.filter(has_text=self.r(verify.text))
        return bool(await loc.first.is_visible())

    async def timed_step(self, i: int | None, step: Step | None,
                         body: Callable[[], Awaitable[bool]], *, replay: bool = False,
                         quiet: bool = False) -> None:
        """Run one step's body under its timeout; classify and document a failure.

        ``body`` returns True when the step was skipped (``if_visible``).
        """
        loop = asyncio.get_running_loop()
        t0 = loop.time()
        budget = (step.timeout_s if step is not None and step.timeout_s else self.step_timeout_s)
        self.deadline = t0 + budget
        # Playwright enforces the timeout itself; this backstop catches a wedged browser.
        self.grace_s = min(5.0, max(1.0, budget * 0.5))
        if not quiet:
            self.emit(i, step, "started")
        try:
            async with asyncio.timeout(self.deadline + self.grace_s) as timer:
                self.timer = timer
                skipped = await body()
        except Exception as exc:
            self.timer = None  # the timeout block is over; nothing may reschedule it now
            err = await self.classify(i, step, exc, budget)
            if err is None:
                raise
            await self.fail(i, step, err, int((loop.time() - t0) * 1000))
            raise err from (None if isinstance(exc, Fail) else exc)
        finally:
            self.timer = None
        if quiet:
            return
        status: StepStatus = "skipped" if skipped else ("replayed" if replay else "done")
        self.emit(i, step, status, int((loop.time() - t0) * 1000))
        if i is not None and not replay:
            await self.save(self.checkpoint(i + 1), durable=False)

    async def open_start(self) -> bool:
        await self.goto(self.url(self.flow.start_url, None))
        await self.check_windows(None, self.human_markers)
        self.check_origins(None)
        self.raise_for_document(None)
        await self.raise_for_human(None)
        return False

    async def step_body(self, i: int, step: Step, replay: bool) -> bool:
        self.check_origins(i)
        if step.if_visible is not None and not await self.page.locator(
                self.r(step.if_visible)).first.is_visible():
            return True
        requests, responses = self.requests_seen, self.responses_seen
        self.nav_failure = None
        await self.perform(i, step, replay=replay)
        if isinstance(step, ClickStep | PressKeyStep) and gated(step):
            await self.settle_page(i, step)
            await self.raise_for_failed_navigation(i, step, requests, responses)
        # One round trip: the window record, and the human markers when they are checked.
        await self.check_windows(i, self.human_markers if gated(step) else ())
        self.check_origins(i)
        if gated(step):
            self.raise_for_document(i)
            await self.raise_for_human(i)
        if step.write and self.in_flight == i:
            # Confirmed only now: a 5xx page or a CAPTCHA after the click leaves it unknown.
            self.writes_done.append(i)
            self.in_flight = None
        return False
