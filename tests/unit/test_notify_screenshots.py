"""#19: a ticket's masked screenshot in alerts, opt-in per target (``screenshots = true``), only
where the platform's webhook takes an image: WeCom (``msgtype=image``, base64 + MD5, at most
2 MB) and our own webhook envelope. DingTalk, Feishu and Slack webhooks cannot (a hosted URL
or an app-uploaded key is needed) and refuse the option naming the field. Checked against a
real HTTP receiver on loopback (pytest-httpserver); the file is read on the dispatcher's
thread, from the ticket's evidence, through a real SQLite outbox."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import os
import struct
import threading
import zlib
from pathlib import Path
from typing import Any

import pytest
from pytest_httpserver import HTTPServer

from core.cli import main
from core.errors import SpecError
from core.events import EventBus, TicketOpened
from core.notify import Dispatcher, MemoryOutbox, NotifyEvent, delivery, parse_target, route
from core.notify.host import Notifier
from core.notify.outbox import MAX_SCREENSHOTS
from core.notify.targets import SCREENSHOT_MAX_BYTES
from core.store import SqliteStore
from core.testing import FakeClock
from core.tickets import Signature
from tests.conftest import add_demo_shops
from tests.helpers import spec
from tests.unit.test_notify import OK, SECRET, T0, Clock, Receiver


def png(width: int = 4, height: int = 3, *, pad: int = 0) -> bytes:
    """A real PNG (RGB, one colour); ``pad`` adds an ancillary chunk to make it bigger."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    raw = b"".join(b"\x00" + b"\xc0\x30\x30" * width for _ in range(height))
    body = chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
    if pad:
        body += chunk(b"tEXt", b"Comment\x00" + b"x" * pad)
    return (b"\x89PNG\r\n\x1a\n" + body + chunk(b"IDAT", zlib.compress(raw))
            + chunk(b"IEND", b""))


def shot(tmp_path: Path, name: str = "screenshot.png", data: bytes | None = None) -> Path:
    folder = tmp_path / "evidence" / name.replace(".png", "")
    folder.mkdir(parents=True, exist_ok=True)
    p = folder / name
    p.write_bytes(png() if data is None else data)
    return p


def ticket_with(i: int, path: Path | str, shop: str = "pdd-1") -> NotifyEvent:
    return NotifyEvent(id=f"ticket:{i}", kind="ticket", at=T0, shop=shop, platform="pdd",
                       headline="PageChanged: no #submit", detail={"ticket": i},
                       screenshot=str(path))


def target(httpserver: HTTPServer, kind: str, **extra: Any) -> Any:
    return parse_target({"name": f"ops-{kind}", "kind": kind, "batch_window_s": 0,
                         "url": httpserver.url_for("/hook"), "rate_per_min": 600, **extra})


def deliver(httpserver: HTTPServer, kind: str, events: list[NotifyEvent],
            **extra: Any) -> tuple[Receiver, MemoryOutbox]:
    rec = Receiver(httpserver, OK[kind])
    clock = Clock()
    t = target(httpserver, kind, **extra)
    box = MemoryOutbox()
    d = Dispatcher(box, [t], now=clock, rand=lambda: 0.5)
    for e in events:
        route(box, [t], e, shop=None, now=clock())
    assert d.run_once() == 1
    return rec, box


# -- which kinds may ----------------------------------------------------------------------

@pytest.mark.parametrize(("kind", "why"), [
    ("dingtalk", "public URL"), ("feishu", "image_key"), ("slack", "image_url")])
def test_kinds_whose_webhook_cannot_take_an_image_refuse_the_option(kind: str,
                                                                    why: str) -> None:
    with pytest.raises(SpecError) as err:
        parse_target({"name": "x", "kind": kind, "url": "https://hook.test/x",
                      "screenshots": True})
    assert err.value.field == "notify.screenshots"
    assert err.value.reason.startswith(f"{kind} cannot carry screenshots") and why in str(
        err.value)
    assert parse_target({"name": "x", "kind": kind, "url": "https://hook.test/x",
                         "screenshots": False}).screenshots is False


def test_the_option_is_a_boolean_and_off_by_default() -> None:
    base = {"name": "x", "kind": "wecom", "url": "https://hook.test/x"}
    assert parse_target(base).screenshots is False
    assert parse_target({**base, "screenshots": True}).screenshots is True
    for bad in ("yes", 1, None):
        with pytest.raises(SpecError) as err:
            parse_target({**base, "screenshots": bad})
        assert err.value.field == "notify.screenshots"


# -- WeCom: the markdown, then one image message per screenshot -------------------------------

def test_wecom_gets_the_image_as_base64_with_its_md5(httpserver: HTTPServer,
                                                     tmp_path: Path) -> None:
    p = shot(tmp_path)
    rec, box = deliver(httpserver, "wecom", [ticket_with(7, p)], screenshots=True)
    assert len(rec.bodies) == 2 and box.sent
    assert rec.json(0)["msgtype"] == "markdown"
    image = rec.json(1)
    assert image["msgtype"] == "image" and set(image["image"]) == {"base64", "md5"}
    sent = base64.b64decode(image["image"]["base64"], validate=True)
    assert sent == p.read_bytes()                                 # the file, unchanged
    assert image["image"]["md5"] == hashlib.md5(sent).hexdigest()  # WeCom checks this
    assert rec.requests[1].headers["X-ShopFleet-Message-Id"] == f"{box.sent[0]}:1"
    assert str(p) not in rec.bodies[0].decode()                   # no local path in the text


def test_without_opting_in_no_image_goes(httpserver: HTTPServer, tmp_path: Path) -> None:
    rec, box = deliver(httpserver, "wecom", [ticket_with(7, shot(tmp_path))])
    assert len(rec.bodies) == 1 and rec.json(0)["msgtype"] == "markdown" and box.sent


def test_a_storm_sends_at_most_three_pictures(httpserver: HTTPServer, tmp_path: Path) -> None:
    events = [ticket_with(i, shot(tmp_path, f"s{i}.png", png(i + 1, 1)), shop=f"pdd-{i}")
              for i in range(6)]
    rec, box = deliver(httpserver, "wecom", events, screenshots=True)
    assert [rec.json(i)["msgtype"] for i in range(len(rec.bodies))] == [
        "markdown", *["image"] * MAX_SCREENSHOTS]
    assert box.sent and box.health()[0].pending == 0


@pytest.mark.parametrize("case", ["too_big", "not_png", "symlink", "missing", "relative"])
def test_what_is_not_a_sendable_screenshot_is_left_out_and_the_text_still_goes(
        httpserver: HTTPServer, tmp_path: Path, case: str) -> None:
    cap = SCREENSHOT_MAX_BYTES["wecom"]
    secret = tmp_path / "secret.png"
    secret.write_bytes(png())
    path: Path | str
    if case == "too_big":
        path = shot(tmp_path, data=png(pad=cap))               # a real PNG, over 2 MB
        assert os.path.getsize(path) > cap
    elif case == "not_png":
        path = shot(tmp_path, data=b"customer list\n")
    elif case == "symlink":
        path = tmp_path / "evidence" / "link.png"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.symlink_to(secret)
    elif case == "missing":
        path = tmp_path / "gone.png"
    else:
        path = "evidence/screenshot.png"
    rec, box = deliver(httpserver, "wecom", [ticket_with(1, path)], screenshots=True)
    assert [rec.json(i)["msgtype"] for i in range(len(rec.bodies))] == ["markdown"]
    assert box.sent


def test_a_screenshot_at_the_cap_goes(httpserver: HTTPServer, tmp_path: Path) -> None:
    cap = SCREENSHOT_MAX_BYTES["wecom"]
    data = png(pad=cap - len(png()) - 12 - len(b"Comment\x00"))  # tEXt: 12 + keyword
    assert len(data) == cap
    rec, _ = deliver(httpserver, "wecom", [ticket_with(1, shot(tmp_path, data=data))],
                     screenshots=True)
    assert base64.b64decode(rec.json(1)["image"]["base64"]) == data


def test_a_failed_image_retries_the_batch(httpserver: HTTPServer, tmp_path: Path) -> None:
    rec = Receiver(httpserver, OK["wecom"])
    rec.script = [OK["wecom"], (200, {"errcode": 45009, "errmsg": "api freq out of limit"})]
    clock = Clock()
    t = target(httpserver, "wecom", screenshots=True)
    box = MemoryOutbox()
    d = Dispatcher(box, [t], now=clock, rand=lambda: 0.5)
    route(box, [t], ticket_with(3, shot(tmp_path)), shop=None, now=clock())
    d.run_once()
    assert box.sent == [] and box.health()[0].pending == 1 and "45009" in (
        box.health()[0].last_error)
    clock.t += 3600
    assert d.run_once() == 1
    assert box.sent and [rec.json(i)["msgtype"] for i in range(4)] == [
        "markdown", "image", "markdown", "image"]
    assert rec.json(0) == rec.json(2)                       # the same message, same id


# -- the generic webhook: inside the signed envelope -----------------------------------------

def test_webhook_envelope_carries_the_screenshot_inside_the_signature(
        httpserver: HTTPServer, tmp_path: Path) -> None:
    p = shot(tmp_path)
    rec, _ = deliver(httpserver, "webhook", [ticket_with(9, p)], screenshots=True,
                     secret=SECRET)
    assert len(rec.bodies) == 1
    body, req = rec.json(0), rec.requests[0]
    [s] = body["screenshots"]
    assert s["event"] == "ticket:9"
    assert base64.b64decode(s["png_base64"]) == p.read_bytes()
    assert s["md5"] == hashlib.md5(p.read_bytes()).hexdigest()
    assert "screenshot" not in body["events"][0]            # the path stays here
    ts = req.headers["X-ShopFleet-Timestamp"]
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + rec.bodies[0], hashlib.sha256)
    assert req.headers["X-ShopFleet-Signature"] == "sha256=" + mac.hexdigest()


def test_webhook_without_opting_in_has_no_screenshots(httpserver: HTTPServer,
                                                      tmp_path: Path) -> None:
    rec, box = deliver(httpserver, "webhook", [ticket_with(10, shot(tmp_path))])
    assert "screenshots" not in rec.json(0) and box.sent


# -- end to end: a ticket's evidence, the SQLite outbox, the dispatcher's thread ---------------

class Counting(Receiver):
    """A receiver that says when two requests have come."""

    def __init__(self, server: HTTPServer, default: tuple[int, Any]) -> None:
        self.two = threading.Event()
        super().__init__(server, default)

    def handle(self, request: Any) -> Any:
        answer = super().handle(request)
        if len(self.bodies) >= 2:
            self.two.set()
        return answer


def test_a_tickets_evidence_screenshot_reaches_wecom_read_on_the_dispatchers_thread(
        httpserver: HTTPServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = shot(tmp_path)
    with SqliteStore(tmp_path / "n.db", clock=FakeClock(T0)) as store:
        add_demo_shops(store)
        task = store.submit(spec("reply_customer", params={"message_id": 1, "reply": "hi"}))
        assert store.claim("w") is not None
        sig = Signature("pdd", "reply_customer", "send", "page_changed", "no #submit")
        tid = store.open_ticket(task, "w", signature=sig, step=2, error="no #submit",
                                evidence={"screenshot": str(p), "dom": str(p) + ".html"})
        rec = Counting(httpserver, OK["wecom"])
        readers: list[str] = []
        real_read = delivery.read_screenshot

        def spy(path: str, *, max_bytes: int) -> Any:
            readers.append(threading.current_thread().name)
            return real_read(path, max_bytes=max_bytes)

        monkeypatch.setattr("core.notify.delivery.read_screenshot", spy)
        t = target(httpserver, "wecom", screenshots=True)
        n = Notifier(store, [t], now=lambda: T0, watch_s=3600, poll_s=0.05)
        bus = EventBus()
        n.attach(bus)
        n.start()
        try:
            bus.publish(TicketOpened(T0, tid, task, "pdd-1", "page_changed", "no #submit"))
            assert rec.two.wait(60)                    # the markdown, then the image
        finally:
            n.stop()
        assert [rec.json(i)["msgtype"] for i in range(len(rec.bodies))] == ["markdown",
                                                                            "image"]
        assert base64.b64decode(rec.json(1)["image"]["base64"]) == p.read_bytes()
        assert readers == ["shopfleet-notify"]          # the dispatcher's thread, no loop's


# -- the command line --------------------------------------------------------------------------

def test_notify_add_screenshots_is_refused_where_the_platform_cannot(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = str(tmp_path / "c.db")
    assert main(["shop", "add", "pdd-1", "--platform", "pdd", "--base-url",
                 "http://pdd.shopfleet.test/shop/pdd-1", "--db", db]) == 0
    capsys.readouterr()
    code = main(["notify", "add", "ding", "--kind", "dingtalk", "--url",
                 "https://oapi.dingtalk.test/robot/send?access_token=t", "--screenshots",
                 "--db", db])
    out, err = capsys.readouterr()
    assert code == 2 and out == ""
    assert len(err.strip().splitlines()) == 1
    assert err.startswith("shopfleet: error: notify.screenshots: dingtalk cannot carry "
                          "screenshots")
    with SqliteStore(db, readonly=True) as store:
        assert store.meta("notify.targets") is None              # nothing written
    code = main(["notify", "add", "wx", "--kind", "wecom", "--url",
                 "https://qyapi.weixin.test/cgi-bin/webhook/send?key=k", "--screenshots",
                 "--db", db])
    out, _ = capsys.readouterr()
    assert code == 0 and "with screenshots" in out
    main(["notify", "list", "--json", "--db", db])
    [row] = json.loads(capsys.readouterr().out)
    assert row["name"] == "wx" and row["screenshots"] is True
