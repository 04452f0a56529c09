"""Each platform's request and answer, as each one documents it.

* **DingTalk** custom robot: POST JSON ``{"msgtype": "markdown", "markdown": {"title", "text"}}``;
  with a secret ("加签"), ``sign = urlencode(base64(HMAC-SHA256(key=secret,
  msg=timestamp + "\\n" + secret)))`` with ``timestamp`` in milliseconds, appended to the URL
  as ``&timestamp=…&sign=…``. It answers HTTP 200 with ``{"errcode": 0, "errmsg": "ok"}``;
  any other errcode is a failure (130101: sending too fast, retried; 310000: bad signature or
  keyword, permanent).
* **Feishu** custom bot: POST ``{"msg_type": "text", "content": {"text"}}``; with a secret,
  ``timestamp`` (seconds, as text) and ``sign = base64(HMAC-SHA256(key=timestamp + "\\n" +
  secret, msg=b""))`` go into the body. It answers 200 with ``{"code": 0, "msg": "success"}``
  (older bots: ``{"StatusCode": 0}``); 11232 (frequency limited) is retried, 19021 (bad sign),
  9499 (bad request) are permanent.
* **WeCom** group robot: POST ``{"msgtype": "markdown", "markdown": {"content"}}`` (at most
  4096 bytes); no signing (the URL's ``key`` is the secret). Answers 200 with
  ``{"errcode": 0}``; 45009 (over the rate limit) is retried. A ticket's screenshot (target
  ``screenshots = true``) follows the markdown as its own message ``{"msgtype": "image",
  "image": {"base64", "md5"}}``: the PNG's base64 and the hex MD5 of its bytes, at most 2 MB
  before encoding (:data:`~core.notify.targets.SCREENSHOT_MAX_BYTES`).
* **Slack** incoming webhook: POST ``{"text": …, "blocks": [section mrkdwn]}``; answers 200
  with the body ``ok``; 4xx with a reason (``invalid_payload``, ``no_service``); 429 with
  ``Retry-After``.
* **webhook** (generic): POST a JSON envelope ``{"id", "source": "shopfleet", "title", "text",
  "lang", "counts", "events": [{"id", "kind", "at", …}]}`` with ``X-ShopFleet-Message-Id``
  (with ``screenshots = true`` also ``"screenshots": [{"event", "png_base64", "md5"}]``, inside
  the signed body);
  with a secret, ``X-ShopFleet-Timestamp`` (seconds) and ``X-ShopFleet-Signature: sha256=`` hex
  HMAC-SHA256 of ``timestamp + "." + body``. Any 2xx is success.

DingTalk, Feishu and Slack webhooks cannot carry a screenshot (an image must be hosted at a
public URL or uploaded with an app's token): :func:`~core.notify.targets.parse_target`
refuses ``screenshots`` there, naming the field and why.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote_plus

from core.notify.messages import Message
from core.notify.targets import Target

WECOM_MAX_BYTES = 4096
DINGTALK_MAX_BYTES = 20000
FEISHU_MAX_BYTES = 20000
SLACK_MAX_CHARS = 3000  # a section block's text limit

# errcodes that mean "not now" rather than "never"
RETRYABLE_CODES: dict[str, frozenset[int]] = {
    "dingtalk": frozenset({130101, -1}),
    "feishu": frozenset({11232}),
    "wecom": frozenset({45009, -1}),
}


@dataclass(frozen=True, slots=True)
class Screenshot:
    """A ticket's masked screenshot, read for sending (``event``: the alert it belongs to)."""

    event: str
    png: bytes = field(repr=False)

    @property
    def md5(self) -> str:
        return hashlib.md5(self.png, usedforsecurity=False).hexdigest()

    @property
    def base64(self) -> str:
        return base64.b64encode(self.png).decode("ascii")


@dataclass(frozen=True, slots=True)
class Request:
    """An HTTP POST ready to send."""

    url: str
    body: bytes
    headers: dict[str, str]


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """DingTalk's ``sign`` query value (already URL-encoded)."""
    to_sign = f"{timestamp_ms}\n{secret}".encode()
    digest = hmac.new(secret.encode(), to_sign, hashlib.sha256).digest()
    return quote_plus(base64.b64encode(digest))


def feishu_sign(secret: str, timestamp_s: int) -> str:
    """Feishu's ``sign`` body value."""
    key = f"{timestamp_s}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode()


def webhook_signature(secret: str, timestamp_s: int, body: bytes) -> str:
    """The generic webhook's ``X-ShopFleet-Signature`` value."""
    mac = hmac.new(secret.encode(), str(timestamp_s).encode() + b"." + body, hashlib.sha256)
    return "sha256=" + mac.hexdigest()


def _cut(text: str, max_bytes: int) -> str:
    raw = text.encode()
    if len(raw) <= max_bytes:
        return text
    return raw[: max_bytes - 3].decode(errors="ignore") + "…"


def _json(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False).encode()


def image_requests(target: Target, msg: Message, shots: Sequence[Screenshot]
                   ) -> list[Request]:
    """The extra requests that carry ``shots`` after ``msg`` (WeCom: one image message each;
    the webhook carries them inside its envelope, other kinds take none)."""
    if target.kind != "wecom":
        return []
    return [Request(target.url,
                    _json({"msgtype": "image", "image": {"base64": s.base64, "md5": s.md5}}),
                    {"Content-Type": "application/json; charset=utf-8",
                     "User-Agent": "ShopFleet-notify/1",
                     "X-ShopFleet-Message-Id": f"{msg.id}:{i + 1}"})
            for i, s in enumerate(shots)]


def build_request(target: Target, msg: Message, *, now: float,
                  shots: Sequence[Screenshot] = ()) -> Request:
    """The request that delivers ``msg`` to ``target`` at time ``now`` (signed if needed);
    the webhook's envelope carries ``shots`` (see :func:`image_requests` for WeCom)."""
    headers = {"Content-Type": "application/json; charset=utf-8",
               "User-Agent": "ShopFleet-notify/1", "X-ShopFleet-Message-Id": msg.id}
    url = target.url
    if target.kind == "dingtalk":
        body = _json({"msgtype": "markdown",
                      "markdown": {"title": msg.title[:100],
                                   "text": _cut(msg.markdown, DINGTALK_MAX_BYTES)}})
        if target.secret:
            ts = int(now * 1000)
            sep = "&" if "?" in url else "?"
            url = f"{url}{sep}timestamp={ts}&sign={dingtalk_sign(target.secret, ts)}"
        return Request(url, body, headers)
    if target.kind == "feishu":
        payload: dict[str, Any] = {"msg_type": "text",
                                   "content": {"text": _cut(msg.text, FEISHU_MAX_BYTES)}}
        if target.secret:
            ts = int(now)
            payload = {"timestamp": str(ts), "sign": feishu_sign(target.secret, ts), **payload}
        return Request(url, _json(payload), headers)
    if target.kind == "wecom":
        body = _json({"msgtype": "markdown",
                      "markdown": {"content": _cut(msg.markdown, WECOM_MAX_BYTES)}})
        return Request(url, body, headers)
    if target.kind == "slack":
        text = msg.text[:SLACK_MAX_CHARS]
        body = _json({"text": text,
                      "blocks": [{"type": "section",
                                  "text": {"type": "mrkdwn", "text": text}}]})
        return Request(url, body, headers)
    if target.kind == "webhook":
        envelope: dict[str, Any] = {
            "id": msg.id, "source": "shopfleet", "title": msg.title, "text": msg.text,
            "lang": msg.lang, "counts": dict(msg.counts),
            "events": [e.as_json() for e in msg.events]}
        if shots:
            envelope["screenshots"] = [{"event": s.event, "png_base64": s.base64, "md5": s.md5}
                                       for s in shots]
        body = _json(envelope)
        if target.secret:
            ts = int(now)
            headers["X-ShopFleet-Timestamp"] = str(ts)
            headers["X-ShopFleet-Signature"] = webhook_signature(target.secret, ts, body)
        return Request(url, body, headers)
    raise ValueError(f"unknown kind {target.kind!r}")


@dataclass(frozen=True, slots=True)
class Verdict:
    """How an answer reads: delivered, or failed (retryable or not) and why."""

    ok: bool
    retryable: bool = False
    reason: str = ""
    retry_after_s: float | None = None


def judge(kind: str, status: int, body: bytes, retry_after: str | None = None) -> Verdict:
    """Read a platform's answer: 200 alone is not success for DingTalk, Feishu and WeCom."""
    after = _retry_after(retry_after)
    if status == 429 or status == 408 or status >= 500:
        return Verdict(False, True, f"HTTP {status}", after)
    if not 200 <= status < 300:
        return Verdict(False, False, f"HTTP {status} {_snippet(body)}".strip())
    if kind in ("dingtalk", "wecom", "feishu"):
        try:
            answer = json.loads(body or b"{}")
        except ValueError:
            return Verdict(False, False, f"not JSON: {_snippet(body)}")
        if not isinstance(answer, dict):
            return Verdict(False, False, f"unexpected answer: {_snippet(body)}")
        if kind == "feishu":
            code = answer.get("code", answer.get("StatusCode", 0))
            text = answer.get("msg", answer.get("StatusMessage", ""))
        else:
            code = answer.get("errcode", -2)
            text = answer.get("errmsg", "")
        if code == 0:
            return Verdict(True)
        retry = isinstance(code, int) and code in RETRYABLE_CODES[kind]
        return Verdict(False, retry, f"{kind} error {code}: {_snippet(str(text).encode())}")
    if kind == "slack" and body.strip() not in (b"ok", b""):
        return Verdict(False, False, f"slack answered {_snippet(body)}")
    return Verdict(True)


def _snippet(body: bytes) -> str:
    return " ".join(body[:200].decode(errors="replace").split())


def _retry_after(value: str | None) -> float | None:
    if value is None:
        return None
    try:
        return max(0.0, min(3600.0, float(value)))
    except ValueError:
        return None
