"""The trust boundary's logic with the fake page: origins before and after steps, frames,
popups, where credentials may be typed, masks, redaction, evidence files, the rescue verdict."""

from __future__ import annotations

import asyncio
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from core.clock import SYSTEM_CLOCK
from core.config import RescueSettings
from core.engine.rescue import RescueBudget, Verdict, decide
from core.errors import CredentialBlocked, OriginBlocked, TaskError
from core.flows import Checkpoint, ShopInfo, parse_flow, run_flow
from core.flows.evidence import redact_text, redact_value, write_evidence
from core.flows.fakepage import FakeAction, FakeElement, FakeScreen, FakeSite
from core.origins import OriginPolicy, origin_of
from tests.security.helpers import SECRET, all_encodings, files_leaking, leaks

BASE = "https://shop.test"
LOGIN = FakeScreen(elements={
    "#user": FakeElement(), "#pass": FakeElement(type="password"),
    "#q": FakeElement(type="text"), "#ce": FakeElement(attrs={"tag": "div"}),
    "#go": FakeElement(text="Go")},
    clicks={"#go": FakeAction(goto="https://evil.test/x")})


def shop(**kw: Any) -> ShopInfo:
    return ShopInfo(name="s", platform="pdd", base_url=BASE, username="alice",
                    password=SECRET, **kw)


def run(site: FakeSite, steps: list[dict[str, Any]], tmp_path: Path, *,
        start: str = BASE + "/login", info: ShopInfo | None = None) -> Any:
    flow = parse_flow({"name": "t", "start_url": start, "steps": steps})

    async def save(cp: Checkpoint) -> None:
        return None

    async def go() -> Any:
        try:
            return await run_flow(site.new_page(), flow, params={}, shop=info or shop(),
                                  checkpoint=None, save_checkpoint=save,
                                  evidence_dir=tmp_path / "ev", step_timeout_s=5)
        except TaskError as exc:
            return exc

    return asyncio.run(go())


def site(**extra: FakeScreen) -> FakeSite:
    return FakeSite({BASE + "/login": LOGIN, "https://evil.test/x": FakeScreen(), **extra})


def test_a_click_that_lands_on_a_foreign_origin_stops_before_the_next_step(
        tmp_path: Path) -> None:
    s = site()
    out = run(s, [{"action": "click", "locator": "#go"},
                  {"action": "type_text", "locator": "#q", "text": "x"}], tmp_path)
    assert isinstance(out, OriginBlocked) and out.step == 0
    assert "https://evil.test:443" in str(out)
    assert "fill #q" not in s.log
    assert out.evidence["screenshot"]


def test_a_foreign_frame_stops_the_task(tmp_path: Path) -> None:
    s = site(**{BASE + "/f": FakeScreen(frames=["about:blank", "data:text/html,x"])})
    out = run(s, [{"action": "navigate", "url": BASE + "/f"},
                  {"action": "type_text", "locator": "#q", "text": "x"}], tmp_path)
    assert isinstance(out, OriginBlocked) and "a frame went to data: page" in str(out)
    s = site(**{BASE + "/f": FakeScreen(frames=["about:blank", BASE + "/inner"],
                                        elements={"#q": FakeElement(type="text")})})
    out = run(s, [{"action": "navigate", "url": BASE + "/f"},
                  {"action": "type_text", "locator": "#q", "text": "x"}], tmp_path)
    assert out.status == "done"


def test_a_navigate_to_a_foreign_origin_never_reaches_the_page(tmp_path: Path) -> None:
    s = site()
    out = run(s, [{"action": "navigate", "url": "https://evil.test/x"}], tmp_path)
    assert isinstance(out, OriginBlocked) and out.step == 0
    assert "goto https://evil.test/x" not in s.log


def test_the_password_only_into_a_password_input(tmp_path: Path) -> None:
    for sel in ("#q", "#ce"):
        s = site()
        out = run(s, [{"action": "type_text", "locator": sel, "text": "{shop.password}"}],
                  tmp_path)
        assert isinstance(out, CredentialBlocked), out
        assert f"fill {sel}" not in s.log
    s = site()
    out = run(s, [{"action": "type_text", "locator": "#user", "text": "{shop.username}"},
                  {"action": "type_text", "locator": "#pass", "text": "{shop.password}"},
                  {"action": "screenshot", "into": "shot"}], tmp_path)
    assert out.status == "done"
    # The screenshot masked every password input and both fields a credential went into.
    assert s.masks == [["input[type=password i]", "#user", "#pass"]]


def test_credentials_only_on_the_login_origin(tmp_path: Path) -> None:
    s = site()
    info = shop(login_url="https://login.shop.test/")
    out = run(s, [{"action": "type_text", "locator": "#pass", "text": "{shop.password}"}],
              tmp_path, info=info)
    assert isinstance(out, CredentialBlocked)
    assert "login origin https://login.shop.test:443" in str(out)
    assert "fill #pass" not in s.log


def test_results_and_errors_never_hold_the_password(tmp_path: Path) -> None:
    forms = " ".join(all_encodings())
    s = site(**{BASE + "/p": FakeScreen(elements={"#p": FakeElement(text=f"a {forms} b")},
                                        console=[f"log {forms}"])})
    out = run(s, [{"action": "navigate", "url": BASE + "/p"},
                  {"action": "extract", "locator": "#p", "into": "t"},
                  {"action": "assert_text", "locator": "#p", "text": "absent"}], tmp_path)
    assert isinstance(out, TaskError)
    assert not leaks(str(out))
    assert files_leaking(tmp_path / "ev") == []


def test_redaction_catches_every_encoding_in_either_case() -> None:
    for form in all_encodings():
        for text in (form, form.lower(), form.upper()):
            assert not leaks(redact_text(f"<{text}>", [SECRET])), form
    nested = {"a": [SECRET, {"b": SECRET.replace("~", "%7E")}], "n": 5}
    assert not leaks(repr(redact_value(nested, [SECRET])))
    assert redact_value(nested, [SECRET])["n"] == 5


def test_evidence_files_are_private_and_never_follow_a_symlink(tmp_path: Path) -> None:
    ev = tmp_path / "ev"
    p = write_evidence(ev, "screenshots/a.png", b"x")
    assert stat.S_IMODE(os.stat(p).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(ev).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(ev / "screenshots").st_mode) == 0o700
    deep = tmp_path / "home" / "evidence" / "7" / "attempt-1"
    write_evidence(deep, "dom.html", b"x")
    for d in (deep, deep.parent, deep.parent.parent):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
    target = tmp_path / "target"
    target.write_text("keep")
    os.symlink(target, ev / "dom.html")
    with pytest.raises(OSError):
        write_evidence(ev, "dom.html", b"evil")
    assert target.read_text() == "keep"
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, ev / "sub")
    with pytest.raises(OSError):
        write_evidence(ev, "sub/x.png", b"evil")
    for bad in ("../x", "a/../../x", "/etc/x", "", "a//b"):
        with pytest.raises(OSError):
            write_evidence(ev, bad, b"evil")
    assert list(outside.iterdir()) == []
    assert not (tmp_path / "x").exists()


def test_origins() -> None:
    assert origin_of("HTTPS://Shop.Test/x?y") == "https://shop.test:443"
    assert origin_of("http://[::1]:81/") == "http://[::1]:81"
    for bad in ("data:text/html,x", "file:///etc", "javascript:x", "about:blank", "blob:x",
                "http://", "http://x:99999/"):
        assert origin_of(bad) is None
    pol = OriginPolicy.for_shop("https://shop.test/s/1", ["http://cdn.test:8080"])
    assert pol.allows("https://shop.test:443/a") and pol.allows("http://cdn.test:8080/")
    assert not pol.allows("http://shop.test/a") and not pol.allows("https://shop.test.evil/")
    assert not pol.allows("https://shop.test@evil.test/")
    assert pol.allows("blob:https://shop.test/0f1e") and not pol.allows("blob:null/0f1e")
    assert not pol.allows("blob:https://evil.test/0f1e")


def test_blocked_tasks_become_tickets_even_when_a_rule_matches() -> None:
    from core.tickets import Rule

    task: Any = type("T", (), {"attempts": 1, "max_attempts": 5})()
    rule: Any = Rule.__new__(Rule)
    for exc in (OriginBlocked("x"), CredentialBlocked("y")):
        d = decide(task, exc, crashes=0, rule=rule, settings=RescueSettings(),
                   budget=RescueBudget(RescueSettings(), SYSTEM_CLOCK))
        assert d.verdict is Verdict.TICKET


def run_watched(s: FakeSite, steps: list[dict[str, Any]], tmp_path: Path,
                on_step: Any) -> Any:
    flow = parse_flow({"name": "t", "start_url": BASE + "/popup", "steps": steps})

    async def save(cp: Checkpoint) -> None:
        return None

    async def go() -> Any:
        try:
            return await run_flow(s.new_page(), flow, params={}, shop=shop(),
                                  checkpoint=None, save_checkpoint=save,
                                  evidence_dir=tmp_path / "ev", step_timeout_s=5,
                                  on_step=on_step)
        except TaskError as exc:
            return exc

    return asyncio.run(go())


def popup_site(url: str, event: str, *, by: str = "script",
               then: str | None = None) -> FakeSite:
    return FakeSite({BASE + "/popup": FakeScreen(
        elements={"#open": FakeElement(text="Open"), "body": FakeElement(text="shop")},
        clicks={"#open": FakeAction(popup=url, popup_event=event, popup_by=by,
                                    popup_then=then)})})


POPUP_STEPS = [{"action": "click", "locator": "#open"},
               {"action": "extract", "locator": "body", "into": "after"}]


@pytest.mark.parametrize("by", ["script", "link"])
def test_a_foreign_popup_whose_event_comes_late_stops_the_task_before_the_next_step(
        by: str, tmp_path: Path) -> None:
    # Playwright's popup event can come after the step that opened the window (and after
    # the run ended) on a busy machine: the page-side record of opened windows says so first.
    s = popup_site("https://evil.test/x", "late", by=by)
    started: list[int | None] = []
    out = run_watched(s, POPUP_STEPS, tmp_path,
                      lambda ev: started.append(ev.index) if ev.status == "started" else None)
    assert isinstance(out, OriginBlocked) and out.step == 0, out
    assert "a popup window went to https://evil.test:443" in str(out)
    assert 1 not in started  # the extract never began
    assert [p.closed for p in s.popups] == [True]


def test_a_blank_window_opened_by_a_link_is_closed_before_the_next_step(
        tmp_path: Path) -> None:
    # Its popup event comes late: the runner waits for it (the record said a window opened).
    s = popup_site("", "late", by="link")
    closed_when_next_began: list[bool] = []

    def on_step(ev: Any) -> None:
        if ev.index == 1 and ev.status == "started":
            closed_when_next_began.append(all(p.closed for p in s.popups))

    out = run_watched(s, POPUP_STEPS, tmp_path, on_step)
    assert not isinstance(out, TaskError), out
    assert out.status == "done" and out.results == {"after": "shop"}
    assert len(s.popups) == 1 and closed_when_next_began == [True]


def test_a_blank_window_the_page_sends_elsewhere_later_never_gets_there(
        tmp_path: Path) -> None:
    s = popup_site("", "late", then="https://evil.test/later")
    out = run_watched(s, POPUP_STEPS, tmp_path, None)
    assert not isinstance(out, TaskError), out
    assert [p.visited for p in s.popups] == [["about:blank"]]


def test_a_window_that_never_shows_up_to_be_checked_stops_the_task(tmp_path: Path) -> None:
    s = popup_site("", "never", by="link")
    started: list[int | None] = []
    steps = [{**POPUP_STEPS[0], "timeout_s": 0.2}, POPUP_STEPS[1]]
    out = run_watched(s, steps, tmp_path,
                      lambda ev: started.append(ev.index) if ev.status == "started" else None)
    assert isinstance(out, OriginBlocked) and out.step == 0, out
    assert "never showed up to be checked" in str(out)
    assert 1 not in started
