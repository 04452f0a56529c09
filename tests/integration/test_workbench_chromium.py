"""The workbench on real Chromium: point at an element in the shop's live page and get
Playwright's own locator for it (the flow editor's "pick again")."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from core import Settings, SpecError, demo_settings, open_store, pick_locator
from core.demosite import DemoSite
from tests.integration.test_recorder_chromium import _log_in, _toolbar_pick
from tests.integration.test_run_flow_cli import setup_shop

pytestmark = [pytest.mark.slow, pytest.mark.browser]


def test_pick_locator_returns_playwrights_locator_for_the_element_pointed_at(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    db = tmp_path / "w.db"
    with DemoSite() as site:
        setup_shop(str(db), site, monkeypatch)
        settings = demo_settings(Settings())
        store = open_store(settings, db)
        try:
            async def person(page: Any) -> None:
                await _log_in(page, "temu-2")
                await page.wait_for_url("**/messages/42")
                await _toolbar_pick(page, "extract",
                                    page.get_by_role("button", name="Send reply"))

            locator = asyncio.run(pick_locator(
                settings, store, "temu-2", "{shop.base_url}/messages/42", headed=False,
                on_page=person))
            assert locator == 'internal:role=button[name="Send reply"i]'
            assert site.records(kind="reply") == []          # pointing is not clicking

            with pytest.raises(SpecError) as exc:            # only the shop's own pages
                asyncio.run(pick_locator(settings, store, "temu-2", "http://example.org/",
                                         headed=False))
            assert exc.value.field == "url"
        finally:
            store.close()
