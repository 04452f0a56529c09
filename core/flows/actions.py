"""The page actions of the step runner: what ``navigate``, ``click``, ``type_text``... do."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from playwright.async_api import Error as PlaywrightError
from playwright.async_api import TimeoutError as PlaywrightTimeoutError

from ..errors import NetworkDown, PageChanged, SiteFailed, StepTimeout, TaskError, is_network_error
from .evidence import mask_locators, redact_value, write_evidence
from .failures import FailureClassifier
from .models import (
    AssertTextStep,
    ClickStep,
    ExtractStep,
    NavigateStep,
    PressKeyStep,
    ScreenshotStep,
    SelectOptionStep,
    Step,
    TypeTextStep,
    UploadFileStep,
    WaitElementStep,
    step_label,
)
from .placeholders import check_upload_path, uses_credentials
from .run_state import Fail


def gated(step: Step) -> bool:
    """True for a step that makes the page talk to the site (it passes the rate gate)."""
    if isinstance(step, NavigateStep | ClickStep | UploadFileStep):
        return True
    return isinstance(step, PressKeyStep) and step.key.split("+")[-1] == "Enter"


class PageActions(FailureClassifier):
    """What each step's action does to the page."""

    async def goto(self, url: str, *, gate: bool = True) -> None:
        if gate:
            await self.gate(url)
        response = await self.page.goto(url, timeout=self.ms(), wait_until="load")
        if response is not None:
            self._note_document(response.status, dict(response.headers), response.url)

    async def perform(self, i: int, step: Step, *, replay: bool = False) -> None:
        page = self.page
        upload: Path | None = None
        if isinstance(step, ClickStep) and step.write:
            # Make sure the target is there before declaring the write in flight, so a
            # missing button is a clean PageChanged and not a write of unknown outcome.
            await page.locator(self.r(step.locator)).wait_for(state="visible", timeout=self.ms())
        if isinstance(step, UploadFileStep):
            where = f"{step_label(i, step)}.path"
            upload = await asyncio.to_thread(check_upload_path, self.r(step.path),
                                             self.asset_dirs, field=where)
        target = self.url(step.url, i) if isinstance(step, NavigateStep) else None
        if gated(step):
            await self.gate(target if target is not None else page.url)
        if step.write and not replay:
            self.in_flight = i
            await self.save(self.checkpoint(i))  # durable before the site sees anything
        match step:
            case NavigateStep():
                assert target is not None
                requests, responses = self.requests_seen, self.responses_seen
                try:
                    await self.goto(target, gate=False)
                except PlaywrightError as exc:
                    await self.take_back_unsent_write(i, step, str(exc), requests, responses)
                    raise
            case ClickStep():
                await page.locator(self.r(step.locator)).click(timeout=self.ms())
            case TypeTextStep():
                kinds = uses_credentials(step.text)
                if kinds:
                    await self.fill_credential(i, step, kinds)
                else:
                    await page.locator(self.r(step.locator)).fill(self.r(step.text),
                                                                  timeout=self.ms())
            case SelectOptionStep():
                await page.locator(self.r(step.locator)).select_option(self.r(step.value),
                                                                       timeout=self.ms())
            case UploadFileStep():
                await page.locator(self.r(step.locator)).set_input_files(str(upload),
                                                                         timeout=self.ms())
            case WaitElementStep():
                await page.locator(self.r(step.locator)).first.wait_for(state=step.state,
                                                                        timeout=self.ms())
            case ExtractStep():
                self.results[step.into] = redact_value(await self.extract(step), self.secrets)
            case AssertTextStep():
                await self.assert_text(i, step)
            case ScreenshotStep():
                png = await page.screenshot(timeout=self.ms(),
                                            mask=mask_locators(page, self.typed_into))
                name = f"step-{i:03d}{'-' + step.into if step.into else ''}.png"
                try:
                    path = await asyncio.to_thread(write_evidence, self.evidence_dir,
                                                   f"screenshots/{name}", png)
                except OSError as exc:
                    raise Fail(TaskError(f"{step_label(i, step)}: could not write the "
                                          f"screenshot: {exc.strerror or exc}", step=i)) from None
                if step.into:
                    self.results[step.into] = str(path)
            case PressKeyStep():
                key = self.r(step.key)
                if step.locator is not None:
                    await page.locator(self.r(step.locator)).press(key, timeout=self.ms())
                else:
                    await page.keyboard.press(key)

    async def settle_page(self, i: int, step: Step) -> None:
        """Let a navigation a click started reach its DOM before the page is judged.

        Playwright's click returns once a navigation it caused has committed; the new
        document may not be parsed yet, and a CAPTCHA or a 5xx page must not slip by.
        """
        try:
            await self.page.wait_for_load_state("domcontentloaded", timeout=self.ms())
        except PlaywrightTimeoutError:
            raise Fail(StepTimeout(f"{step_label(i, step)}: the page did not finish loading "
                                    "after the action", step=i)) from None

    async def take_back_unsent_write(self, i: int, step: Step, failure: str,
                                     requests_before: int, responses_before: int) -> None:
        """The write step ``i`` in flight failed with the browser error ``failure``: if its
        request provably never left (:meth:`unsent`: no name, no connection), the write did
        not happen — its in-flight mark is taken back durably, so the next attempt runs the
        step instead of settling a write of unknown outcome (#15). (A write in flight is
        never a replay: replays skip writes.)"""
        if step.write and self.in_flight == i and \
                self.unsent(failure, requests_before, responses_before):
            self.in_flight = None
            await self.save(self.checkpoint(i))

    async def raise_for_failed_navigation(self, i: int, step: Step, requests_before: int,
                                          responses_before: int) -> None:
        """A navigation the action started failed (its form post did not resolve, was refused,
        or the connection dropped): Chromium commits its error page, and no exception says so
        (Playwright's click returns once the navigation failed, before the error page
        commits). A write is not confirmed by that: when the request never left
        (:meth:`unsent`) the write did not happen and runs again on the next attempt;
        otherwise it stays in flight, its outcome unknown (verify or a person settles it).
        ``net::ERR_ABORTED`` is a navigation another one replaced (or a 204 / download): the
        page the browser went on to is judged by the usual checks."""
        failure, self.nav_failure = self.nav_failure, None
        if failure is None or "net::ERR_ABORTED" in failure:
            return
        where = step_label(i, step)
        await self.take_back_unsent_write(i, step, failure, requests_before, responses_before)
        detail = self.redact(failure.splitlines()[0][:200])
        if is_network_error(failure):
            raise Fail(NetworkDown(f"{where}: the network path failed after the action "
                                   f"({detail})", step=i))
        raise Fail(SiteFailed(f"{where}: the page the action opened did not load ({detail})",
                              step=i))

    async def extract(self, step: ExtractStep) -> Any:
        loc = self.page.locator(self.r(step.locator))
        attribute = self.r(step.attribute)
        if step.all:
            if attribute == "text":
                return list(await loc.all_inner_texts())
            count = await loc.count()
            return [await loc.nth(k).get_attribute(attribute, timeout=self.ms())
                    for k in range(count)]
        if attribute == "text":
            return await loc.first.inner_text(timeout=self.ms())
        return await loc.first.get_attribute(attribute, timeout=self.ms())

    async def assert_text(self, i: int, step: AssertTextStep) -> None:
        loc = self.page.locator(self.r(step.locator))
        text = self.r(step.text)
        try:
            await loc.filter(has_text=text).first.wait_for(state="attached", timeout=self.ms())
        except PlaywrightTimeoutError:
            try:
                shown: str | None = await loc.first.inner_text(timeout=1000)
            except PlaywrightError:
                shown = None
            where = step_label(i, step)
            if shown is None:
                raise Fail(PageChanged(f"{where}: nothing matches {step.locator!r}",
                                        step=i)) from None
            raise Fail(PageChanged(
                f"{where}: {step.locator!r} does not contain {text!r} (it shows "
                f"{shown.strip()[:200]!r})", step=i)) from None
