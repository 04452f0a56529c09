"""`shopfleet record`: the command on real Chromium, the browser driven by a scripted person
(the stage-1 recorder test's reply job), then the saved flow replayed with ``run-flow``."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path
from typing import Any

import pytest

from core.cli import main
from core.demosite import DemoSite
from tests.integration.test_recorder_chromium import _log_in
from tests.integration.test_run_flow_cli import setup_shop

pytestmark = [pytest.mark.slow, pytest.mark.browser]

SHOP = "temu-2"


def _scripted(monkeypatch: pytest.MonkeyPatch, base: str) -> list[str]:
    """Replace the person at the keyboard: when the recorder opens its page, act on it."""
    import core.workbench as wb

    real = wb.record_flow
    seen: list[str] = []

    async def person_records(context: Any, **kw: Any) -> Any:
        async with context.expect_page() as opened:
            recording = asyncio.ensure_future(real(context, **kw))
        page = await opened.value
        await page.wait_for_load_state()
        await _log_in(page, SHOP)
        await page.wait_for_url("**/messages/42")
        await page.get_by_label("Reply").fill("Your parcel ships tomorrow.")
        await page.get_by_role("button", name="Send reply").click()
        await page.locator(".success-msg").wait_for()
        seen.append(page.url)
        await page.locator("#__shopfleet_recorder button[data-sf-finish]").click()
        return await recording

    monkeypatch.setattr(wb, "record_flow", person_records)
    return seen


def test_record_saves_a_flow_that_replays(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    flows = tmp_path / "my-flows"
    flows.mkdir()
    config = tmp_path / "shopfleet.toml"
    config.write_text(f'[flows]\ndirs = ["{flows}"]\n', encoding="utf-8")
    with DemoSite() as site:
        setup_shop(db, site, monkeypatch)
        base = next(s.base_url for s in site.shops() if s.name == SHOP)
        seen = _scripted(monkeypatch, base)
        capsys.readouterr()
        code = main(["record", "my_reply", "--shop", SHOP, "--headless",
                     "--start", "{shop.base_url}/messages/42",
                     "--param-name", "reply=answer", "--param-name", "message_id=msg",
                     "--db", db, "--config", str(config)])
        out, err = capsys.readouterr()
        assert code == 0, (out, err)
        assert len(seen) == 1 and seen[0].startswith(base), seen
        path = flows / "my_reply.json"
        assert f"saved {path}" in out
        text = path.read_text(encoding="utf-8")
        password = next(s.password for s in site.shops() if s.name == SHOP)
        assert password not in text and password not in out and password not in err
        assert "{shop.password}" in text and "{params.answer}" in text
        assert "{params.msg}" in text and "{params.reply}" not in text
        doc = json.loads(text)
        assert doc["name"] == "my_reply"
        assert "--param answer='Your parcel ships tomorrow.'" in out and "--param msg=42" in out
        assert len(site.records(kind="reply", shop=SHOP)) == 1   # the person's own reply

        # Recording again under the same name is refused before a window opens.
        code = main(["record", "my_reply", "--shop", SHOP, "--headless", "--db", db,
                     "--config", str(config)])
        assert code == 2 and "name: a flow named 'my_reply' exists" in capsys.readouterr().err
        code = main(["record", "reply_customer", "--shop", SHOP, "--db", db,
                     "--config", str(config)])             # a shipped flow's name
        assert code == 2 and "exists already" in capsys.readouterr().err
        assert len(seen) == 1

        # The saved flow is in the registry and replays: a second reply, once.
        code = main(["run-flow", "my_reply", "--shop", SHOP, "--param", "msg=42",
                     "--param", "answer=Second answer", "--db", db, "--config", str(config)])
        out = capsys.readouterr().out
        assert code == 0, out
        replies = site.records(kind="reply", shop=SHOP)
        assert len(replies) == 2 and "Second answer" in json.dumps(replies)


@pytest.mark.parametrize(("argv", "field"), [
    (["record", "bad name", "--shop", SHOP], "name"),
    (["record", "x", "--shop", SHOP, "--lang", "fr"], "--lang"),
    (["record", "x", "--shop", SHOP, "--param-name", "nope"], "--param-name"),
    (["record", "x", "--shop", "no-such-shop"], "--shop"),
])
def test_record_refuses_bad_input_with_the_field(
        argv: list[str], field: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "r.db")
    assert main(["shop", "add", SHOP, "--platform", "temu", "--base-url",
                 "http://temu-2.shopfleet.test:1", "--username", "u", "--db", db]) == 0
    monkeypatch.setattr("sys.stdin", io.StringIO(""))
    capsys.readouterr()
    assert main([*argv, "--db", db]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"shopfleet: error: {field}: ") and err.count("\n") == 1, err
    assert not (tmp_path / "home").exists() or not any((tmp_path / "home").rglob("*.json"))
