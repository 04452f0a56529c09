"""Alerts out (core.notify): targets, messages, each platform's format and signing against a
real HTTP receiver on loopback, retries with back-off on a fake clock, batching, the outbox."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import socket
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from pytest_httpserver import HTTPServer
from werkzeug import Request as WRequest
from werkzeug import Response

from core.errors import SpecError
from core.notify import (
    CountsSnapshot,
    Dispatcher,
    MemoryOutbox,
    NotifyEvent,
    ShopCounts,
    Target,
    backoff_s,
    build_request,
    coalesce,
    delivery,
    digest_event,
    judge,
    notify_test_message,
    parse_target,
    parse_targets,
    route,
)
from core.selectors import ShopRef

SECRET = "SEC0123456789abcdef密"
T0 = 1_767_225_600.0  # 2026-01-01T00:00:00Z


class Clock:
    def __init__(self, t: float = T0) -> None:
        self.t = t

    def __call__(self) -> float:
        return self.t


def ticket(i: int, shop: str = "pdd-1", headline: str = "SiteFailed: HTTP 502 at step 2") -> (
        NotifyEvent):
    return NotifyEvent(id=f"ticket:{i}", kind="ticket", at=T0, shop=shop, platform="pdd",
                       headline=headline, detail={"ticket": i})


class Receiver:
    """Records each request; answers from a script of (status, body) then ``default``."""

    def __init__(self, server: HTTPServer, default: tuple[int, Any]) -> None:
        self.requests: list[WRequest] = []
        self.bodies: list[bytes] = []
        self.script: list[tuple[int, Any]] = []
        self.default = default
        self.got = threading.Event()
        server.expect_request("/hook", method="POST").respond_with_handler(self.handle)

    def handle(self, request: WRequest) -> Response:
        self.requests.append(request)
        self.bodies.append(request.get_data())
        status, body = self.script.pop(0) if self.script else self.default
        self.got.set()
        if isinstance(body, dict):
            return Response(json.dumps(body), status=status, content_type="application/json")
        return Response(body, status=status)

    def json(self, i: int = -1) -> Any:
        return json.loads(self.bodies[i])


OK = {"dingtalk": (200, {"errcode": 0, "errmsg": "ok"}),
      "wecom": (200, {"errcode": 0, "errmsg": "ok"}),
      "feishu": (200, {"code": 0, "msg": "success", "data": {}}),
      "slack": (200, "ok"),
      "webhook": (204, "")}


def target(httpserver: HTTPServer, kind: str, **extra: Any) -> Target:
    url = httpserver.url_for("/hook") + ("?access_token=tok" if kind == "dingtalk" else "")
    return parse_target({"name": f"ops-{kind}", "kind": kind, "url": url,
                         "batch_window_s": 0, **extra})


def dispatcher(t: Target, clock: Clock, **kw: Any) -> tuple[Dispatcher, MemoryOutbox]:
    box = MemoryOutbox()
    return Dispatcher(box, [t], now=clock, rand=lambda: 0.5, **kw), box


# -- targets -----------------------------------------------------------------------------

@pytest.mark.parametrize(("raw", "field"), [
    ({"kind": "telegram"}, "notify.kind"),
    ({"url": "ftp://example.com/x"}, "notify.url"),
    ({"url": "file:///etc/passwd"}, "notify.url"),
    ({"url": "https://user:pw@example.com/"}, "notify.url"),
    ({"url": "https://example.com:99999/"}, "notify.url"),
    ({"url": "not a url"}, "notify.url"),
    ({"events": ["ticket", "explosion"]}, "notify.events"),
    ({"events": "ticket"}, "notify.events"),
    ({"events": []}, "notify.events"),
    ({"shops": "foo:bar"}, "notify.shops"),
    ({"quiet_hours": "22:00-25:00"}, "notify.quiet_hours"),
    ({"quiet_hours": "22:00"}, "notify.quiet_hours"),
    ({"quiet_hours": "22:00-07:00", "tz": "Mars/Olympus"}, "notify.tz"),
    ({"rate_per_min": 0}, "notify.rate_per_min"),
    ({"rate_per_min": True}, "notify.rate_per_min"),
    ({"batch_window_s": -1}, "notify.batch_window_s"),
    ({"lang": "fr"}, "notify.lang"),
    ({"secret": "a\nb"}, "notify.secret"),
    ({"colour": "red"}, "notify.colour"),
    ({"name": "../x"}, "notify.name"),
])
def test_bad_target_names_the_field(raw: dict[str, Any], field: str) -> None:
    base = {"name": "ops", "kind": "dingtalk", "url": "https://oapi.dingtalk.com/robot/send"}
    with pytest.raises(SpecError) as err:
        parse_target({**base, **raw})
    assert err.value.field == field


def test_target_names_are_unique_and_secret_never_printed() -> None:
    raw = {"name": "ops", "kind": "slack", "url": "https://hooks.slack.com/x", "secret": "s3"}
    with pytest.raises(SpecError) as err:
        parse_targets([raw, raw])
    assert err.value.field == "notify[1].name"
    assert "s3" not in repr(parse_target(raw))


def test_quiet_hours_cross_midnight_in_their_time_zone() -> None:
    t = parse_target({"name": "q", "kind": "slack", "url": "https://h/x",
                      "quiet_hours": "22:00-07:00", "tz": "Asia/Shanghai"})
    assert t.quiet is not None
    at = lambda h, m=0: datetime(2026, 1, 1, h, m, tzinfo=UTC).timestamp()  # noqa: E731
    assert t.quiet.active(at(14))  # 22:00 Shanghai
    assert t.quiet.active(at(22, 59))  # 06:59
    assert not t.quiet.active(at(23))  # 07:00
    assert not t.quiet.active(at(4))  # 12:00
    assert t.quiet.ends_after(at(15)) == at(23)


def test_route_follows_events_and_shop_selector() -> None:
    box = MemoryOutbox()
    a = parse_target({"name": "a", "kind": "slack", "url": "https://h/a",
                      "events": ["ticket"], "shops": "platform:pdd"})
    b = parse_target({"name": "b", "kind": "slack", "url": "https://h/b",
                      "events": ["breaker_open"]})
    pdd, temu = ShopRef("pdd-1", "pdd"), ShopRef("temu-1", "temu")
    assert route(box, [a, b], ticket(1), shop=pdd, now=T0) == ["a"]
    assert route(box, [a, b], ticket(2, "temu-1"), shop=temu, now=T0) == []
    brk = NotifyEvent(id="breaker:x", kind="breaker_open", at=T0, detail={"domain": "x.test"})
    assert route(box, [a, b], brk, shop=None, now=T0) == ["b"]
    assert route(box, [a, b], ticket(1), shop=pdd, now=T0) == []  # same event: no duplicate


# -- messages --------------------------------------------------------------------------

def test_messages_speak_the_operators_language() -> None:
    zh = coalesce([ticket(7)], "zh_CN")
    en = coalesce([ticket(7)], "en")
    assert "工单 #7 · pdd-1：SiteFailed: HTTP 502 at step 2" in zh.text
    assert "Ticket #7 · pdd-1: SiteFailed: HTTP 502 at step 2" in en.text
    assert zh.id == en.id == coalesce([ticket(7)], "en").id


def test_a_storm_is_one_message_with_counts() -> None:
    events = [ticket(i, f"pdd-{i % 50:02d}") for i in range(200)]
    events.append(NotifyEvent(id="b:1", kind="breaker_open", at=T0, headline="5xx storm",
                              detail={"domain": "pdd.test"}))
    msg = coalesce(events, "en")
    assert msg.counts == {"ticket": 200, "breaker_open": 1}
    assert msg.title == "ShopFleet: 201 alerts from 50 shops"
    assert "50 shops · tickets: SiteFailed: HTTP 502 at step 2 (pdd-00, pdd-01, pdd-02 …)" in (
        msg.text)
    assert "Breaker open on pdd.test: 5xx storm" in msg.text
    assert msg.text.count("\n") < 10
    assert msg.id == coalesce(list(reversed(events)), "zh_CN").id


def test_hostile_headlines_stay_one_short_line() -> None:
    ev = ticket(1, headline="line1\n\n## injected\n" + "x" * 5000)
    line = coalesce([ev], "en").text.splitlines()[0]
    assert "\n" not in line and len(line) <= 300


def test_digest_counts_shops_tickets_and_top_signatures() -> None:
    snap = CountsSnapshot(day_start=T0, queued=4, tickets_open=3,
                          shops=[ShopCounts("pdd-1", 10, 0, 0), ShopCounts("temu-1", 2, 5, 3)],
                          signatures=[("pdd|reply|click|PageChanged", 2),
                                      ("temu|collect|goto|SiteFailed", 5)])
    ev = digest_event(snap, "en")
    assert ev.id == "digest:2026-01-01"
    lines = coalesce([ev], "en").text.splitlines()
    assert lines[:5] == ["ShopFleet daily digest 2026-01-01",
                         "Tasks: 12 done, 5 failed, 4 queued · tickets open: 3",
                         "temu-1: 2 done, 5 failed, 3 tickets",
                         "pdd-1: 10 done, 0 failed, 0 tickets", "Top failures:"]
    assert lines[5:7] == ["5× temu|collect|goto|SiteFailed", "2× pdd|reply|click|PageChanged"]
    assert "每日汇总" in coalesce([digest_event(snap, "zh_CN")], "zh_CN").text


# -- each platform, against a real receiver ------------------------------------------------

def _send_one(httpserver: HTTPServer, kind: str, **extra: Any) -> tuple[Receiver, MemoryOutbox]:
    rec = Receiver(httpserver, OK[kind])
    clock = Clock()
    d, box = dispatcher(target(httpserver, kind, **extra), clock)
    route(box, list(d.targets.values()), ticket(42), shop=None, now=clock())
    assert d.run_once() == 1
    assert box.sent and box.health()[0].pending == 0
    return rec, box


def test_dingtalk_markdown_signed_as_dingtalk_verifies(httpserver: HTTPServer) -> None:
    rec, _ = _send_one(httpserver, "dingtalk", secret=SECRET, lang="en")
    body = rec.json()
    assert body["msgtype"] == "markdown"
    assert body["markdown"]["title"].startswith("ShopFleet: Ticket #42")
    assert "SiteFailed: HTTP 502" in body["markdown"]["text"]
    q = parse_qs(urlsplit(rec.requests[0].url).query)
    assert q["access_token"] == ["tok"]
    ts = q["timestamp"][0]
    assert int(ts) == int(T0 * 1000)  # milliseconds
    expect = base64.b64encode(hmac.new(SECRET.encode(), f"{ts}\n{SECRET}".encode(),
                                       hashlib.sha256).digest()).decode()
    assert q["sign"] == [expect]  # parse_qs undoes the urlencode, as DingTalk's server does


def test_feishu_text_signed_in_the_body(httpserver: HTTPServer) -> None:
    rec, _ = _send_one(httpserver, "feishu", secret=SECRET, lang="zh_CN")
    body = rec.json()
    assert body["msg_type"] == "text" and "工单 #42" in body["content"]["text"]
    ts = body["timestamp"]
    assert ts == str(int(T0))  # seconds
    key = f"{ts}\n{SECRET}".encode()
    assert body["sign"] == base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def test_wecom_markdown(httpserver: HTTPServer) -> None:
    rec, _ = _send_one(httpserver, "wecom")
    body = rec.json()
    assert body["msgtype"] == "markdown"
    assert "Ticket" in body["markdown"]["content"] or "工单" in body["markdown"]["content"]
    assert len(body["markdown"]["content"].encode()) <= 4096


def test_slack_text_and_blocks(httpserver: HTTPServer) -> None:
    rec, _ = _send_one(httpserver, "slack", lang="en")
    body = rec.json()
    assert body["text"].startswith("Ticket #42")
    assert body["blocks"][0]["text"] == {"type": "mrkdwn", "text": body["text"]}


def test_webhook_envelope_with_ids_and_hmac(httpserver: HTTPServer) -> None:
    rec, box = _send_one(httpserver, "webhook", secret=SECRET)
    req, raw = rec.requests[0], rec.bodies[0]
    body = json.loads(raw)
    assert body["id"] == box.sent[0] == req.headers["X-ShopFleet-Message-Id"]
    assert [e["id"] for e in body["events"]] == ["ticket:42"]
    ts = req.headers["X-ShopFleet-Timestamp"]
    mac = hmac.new(SECRET.encode(), ts.encode() + b"." + raw, hashlib.sha256).hexdigest()
    assert req.headers["X-ShopFleet-Signature"] == f"sha256={mac}"


# -- failures, retries, back-off ----------------------------------------------------------

@pytest.mark.parametrize(("kind", "answer", "retryable"), [
    ("dingtalk", {"errcode": 310000, "errmsg": "sign not match"}, False),
    ("dingtalk", {"errcode": 130101, "errmsg": "send too fast"}, True),
    ("wecom", {"errcode": 93000, "errmsg": "invalid webhook url"}, False),
    ("wecom", {"errcode": 45009, "errmsg": "api freq out of limit"}, True),
    ("feishu", {"code": 19021, "msg": "sign match fail or timestamp is not within one hour"},
     False),
    ("feishu", {"code": 11232, "msg": "frequency limited"}, True),
])
def test_errcode_in_a_200_is_a_failure(httpserver: HTTPServer, kind: str,
                                        answer: dict[str, Any], retryable: bool) -> None:
    rec = Receiver(httpserver, (200, answer))
    clock = Clock()
    d, box = dispatcher(target(httpserver, kind), clock)
    route(box, list(d.targets.values()), ticket(1), shop=None, now=clock())
    d.run_once()
    assert box.sent == []
    health = box.health()[0]
    assert str(answer.get("errcode", answer.get("code"))) in health.last_error
    assert health.failing_since == T0
    assert (health.pending == 1) is retryable
    assert (health.given_up == 1) is not retryable
    clock.t += 3600
    d.run_once()
    assert len(rec.requests) == (2 if retryable else 1)


def test_500_is_retried_after_backoff_with_the_same_id(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["webhook"])
    rec.script = [(500, "boom"), (503, "busy")]
    clock = Clock()
    d, box = dispatcher(target(httpserver, "webhook"), clock)
    route(box, list(d.targets.values()), ticket(1), shop=None, now=clock())
    d.run_once()
    assert len(rec.requests) == 1 and box.health()[0].last_error == "HTTP 500"
    d.run_once()  # not due yet: back-off
    assert len(rec.requests) == 1
    first = backoff_s(1, rand=lambda: 0.5)
    clock.t += first - 0.01
    d.run_once()
    assert len(rec.requests) == 1
    clock.t += 0.01
    d.run_once()
    assert len(rec.requests) == 2
    clock.t += backoff_s(2, rand=lambda: 0.5)
    d.run_once()
    assert len(rec.requests) == 3
    ids = {r.headers["X-ShopFleet-Message-Id"] for r in rec.requests}
    assert len(ids) == 1 and box.sent == list(ids)
    assert box.health()[0].failing_since is None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture
def own_server() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=_free_port())
    yield server
    if server.is_running():
        server.stop()


def test_a_receiver_that_is_down_is_retried(own_server: HTTPServer) -> None:
    rec = Receiver(own_server, OK["slack"])
    clock = Clock()
    d, box = dispatcher(target(own_server, "slack"), clock)
    route(box, list(d.targets.values()), ticket(1), shop=None, now=clock())
    d.run_once()  # nobody listens yet: connection refused
    health = box.health()[0]
    assert health.pending == 1 and "cannot connect" in health.last_error
    own_server.start()
    clock.t += 3600
    d.run_once()
    assert len(rec.requests) == 1 and len(box.sent) == 1


def test_a_receiver_that_never_answers_times_out_as_retryable() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(1)  # accepts the connection, never answers
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/hook"
        t = parse_target({"name": "slow", "kind": "webhook", "url": url})
        msg = coalesce([ticket(1)], "en")
        verdict = delivery.send("webhook", build_request(t, msg, now=T0), timeout_s=0.2)
    assert (verdict.ok, verdict.retryable) == (False, True)
    assert "timed out" in verdict.reason


def test_a_redirect_is_not_followed(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hook").respond_with_data(
        "", status=302, headers={"Location": "http://127.0.0.1:1/elsewhere"})
    t = target(httpserver, "webhook", secret=SECRET)
    verdict = delivery.send("webhook", build_request(t, coalesce([ticket(1)], "en"), now=T0))
    assert (verdict.ok, verdict.retryable) == (False, False)
    assert verdict.reason.startswith("HTTP 302")


def test_retries_stop_after_max_attempts(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, (502, "bad gateway"))
    clock = Clock()
    d, box = dispatcher(target(httpserver, "webhook", rate_per_min=600), clock)
    route(box, list(d.targets.values()), ticket(1), shop=None, now=clock())
    for _ in range(delivery.MAX_ATTEMPTS + 3):
        d.run_once()
        clock.t += delivery.CAP_S
    assert len(rec.requests) == delivery.MAX_ATTEMPTS
    assert box.health()[0].given_up == 1 and box.health()[0].pending == 0


def test_backoff_grows_with_jitter_and_a_cap() -> None:
    assert backoff_s(1, rand=lambda: 0.0) == 2.5
    assert backoff_s(1, rand=lambda: 1.0) == 5.0
    assert backoff_s(4, rand=lambda: 1.0) == 40.0
    assert backoff_s(30, rand=lambda: 1.0) == delivery.CAP_S
    assert backoff_s(1, rand=lambda: 0.0, retry_after_s=120) == 120


@pytest.mark.parametrize(("kind", "status", "body", "ok", "retry"), [
    ("slack", 200, b"ok", True, False),
    ("slack", 400, b"invalid_payload", False, False),
    ("slack", 429, b"", False, True),
    ("webhook", 404, b"", False, False),
    ("webhook", 408, b"", False, True),
    ("dingtalk", 200, b"<html>", False, False),
    ("feishu", 200, b'{"StatusCode": 0}', True, False),
])
def test_judge(kind: str, status: int, body: bytes, ok: bool, retry: bool) -> None:
    v = judge(kind, status, body)
    assert (v.ok, v.retryable) == (ok, retry)


# -- batching, rate limit, quiet hours ----------------------------------------------------

def test_a_storm_of_200_events_is_one_message(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["dingtalk"])
    clock = Clock()
    d, box = dispatcher(target(httpserver, "dingtalk", batch_window_s=10, lang="en"), clock)
    targets = list(d.targets.values())
    for i in range(200):
        route(box, targets, ticket(i, f"pdd-{i % 50:02d}"), shop=None, now=clock())
        clock.t += 0.04  # 200 events over 8 s: inside the window
        d.run_once()
    assert rec.requests == []  # the window is still open
    clock.t = T0 + 10  # the first event's window closes
    d.run_once()
    assert len(rec.requests) == 1
    text = rec.json()["markdown"]["text"]
    assert "200 tickets" in text and "50 shops" in text
    assert box.health()[0].pending == 0


def test_rate_limit_holds_messages_until_the_minute_passes(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["wecom"])
    clock = Clock()
    d, box = dispatcher(target(httpserver, "wecom", rate_per_min=2), clock)
    targets = list(d.targets.values())
    for i in range(3):
        route(box, targets, ticket(i), shop=None, now=clock())
        d.run_once()
        clock.t += 1
    assert len(rec.requests) == 2 and box.health()[0].pending == 1
    clock.t += 60
    d.run_once()
    assert len(rec.requests) == 3


def test_quiet_hours_hold_then_send_one_message(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["slack"])
    night = datetime(2026, 1, 1, 23, 0, tzinfo=UTC).timestamp()
    clock = Clock(night)
    d, box = dispatcher(target(httpserver, "slack", quiet_hours="22:00-07:00", lang="en"), clock)
    for i in range(5):
        route(box, list(d.targets.values()), ticket(i, f"s{i}"), shop=None, now=clock())
    d.run_once()
    assert rec.requests == []
    clock.t = datetime(2026, 1, 2, 7, 0, tzinfo=UTC).timestamp()
    d.run_once()
    assert len(rec.requests) == 1 and "5 alerts" in rec.json()["text"]


# -- at-least-once ------------------------------------------------------------------------

class CrashAfterSend(MemoryOutbox):
    """The process dies between the send and mark_sent."""

    crash = True

    def mark_sent(self, batch_id: str, *, now: float) -> None:
        if self.crash:
            raise SystemExit("killed")
        super().mark_sent(batch_id, now=now)


def test_a_crash_between_send_and_mark_resends_the_same_message_id(
        httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["webhook"])
    clock = Clock()
    t = target(httpserver, "webhook")
    box = CrashAfterSend()
    route(box, [t], ticket(1), shop=None, now=clock())
    with pytest.raises(SystemExit):
        Dispatcher(box, [t], now=clock).run_once()
    route(box, [t], ticket(2), shop=None, now=clock())  # a new event meanwhile
    box.crash = False
    d2 = Dispatcher(box, [t], now=clock)  # "the restarted process"
    d2.run_once()
    d2.run_once()
    ids = [r.headers["X-ShopFleet-Message-Id"] for r in rec.requests]
    assert ids[0] == ids[1] != ids[2]  # the claimed batch again, same id; then the new event
    assert [[e["id"] for e in json.loads(b)["events"]] for b in rec.bodies] == [
        ["ticket:1"], ["ticket:1"], ["ticket:2"]]


# -- the background thread ----------------------------------------------------------------

def test_dispatcher_thread_sends_without_the_caller_waiting(httpserver: HTTPServer) -> None:
    rec = Receiver(httpserver, OK["feishu"])
    t = target(httpserver, "feishu")
    box = MemoryOutbox()
    d = Dispatcher(box, [t], poll_s=30)  # only a wake() makes it look before 30 s
    d.start()
    try:
        route(box, [t], ticket(1), shop=None, now=0.0)
        d.wake()
        assert rec.got.wait(30), "the dispatcher never sent"
    finally:
        d.stop()
    assert len(rec.requests) == 1


def test_test_message_names_the_target() -> None:
    msg = notify_test_message("ops", "zh_CN", at=T0)
    assert "ShopFleet 测试消息（ops）" in msg.text          # full-width punctuation in Chinese
