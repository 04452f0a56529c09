"""The demo site's server: one ThreadingHTTPServer, three platforms told apart by Host header."""

from __future__ import annotations

import hashlib
import itertools
import json
import secrets
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import InvalidInput
from . import _pages as pages
from ._catalog import (
    CATEGORIES,
    MAX_ITEM_ID,
    PLATFORM_HOSTS,
    DemoShop,
    all_shop_names,
    campaign,
    demo_password,
    message,
    shop_names,
    stats_rows,
)
from ._forms import FormData, parse_form

FAULTS: tuple[str, ...] = ("slow", "error_5xx", "rate_limit", "layout_changed", "crash",
                           "captcha")
"""The fault switches :meth:`DemoSite.set_fault` knows."""

# Modifiers change how a page is served; at most one terminal fault replaces the page.
_MODIFIERS = frozenset({"slow", "layout_changed"})
_OPTIONS: dict[str, dict[str, Any]] = {
    "slow": {"delay_ms": 2000},
    "error_5xx": {"status": 503, "retry_after": None, "after_write": False},
    "rate_limit": {"status": 429, "retry_after": 5},
    "layout_changed": {},
    "crash": {"after_write": False},
    "captcha": {},
}
_MAX_BODY = 20 * 1024 * 1024
_REQUEST_LOG = 100_000
_LOCAL_SUFFIXES = (".shopfleet.test", ".localhost")
_CONNECTIONS = itertools.count(1)


def host_resolver_rules() -> str:
    """The Chromium ``--host-resolver-rules`` value that sends every demo host to loopback."""
    return "MAP *.shopfleet.test 127.0.0.1"


@dataclass
class _Fault:
    name: str
    platform: str | None
    options: dict[str, Any]
    remaining: int | None

    def describe(self) -> dict[str, Any]:
        return {"fault": self.name, "platform": self.platform, "times_left": self.remaining,
                **self.options}


def _check_fault(fault: str, platform: str | None, options: dict[str, Any]) -> _Fault:
    if fault not in _OPTIONS:
        raise InvalidInput("fault", f"unknown fault {fault!r}; one of {', '.join(FAULTS)}")
    if platform is not None and platform not in PLATFORM_HOSTS:
        raise InvalidInput("platform",
                           f"unknown platform {platform!r}; one of {', '.join(PLATFORM_HOSTS)}")
    opts = dict(options)
    times = opts.pop("times", None)
    if times is not None and (not isinstance(times, int) or isinstance(times, bool) or times < 1):
        raise InvalidInput("times", "must be a whole number of at least 1")
    allowed = _OPTIONS[fault]
    unknown = set(opts) - set(allowed)
    if unknown:
        known = ", ".join(["times", *allowed]) or "times"
        raise InvalidInput(sorted(unknown)[0], f"not an option of {fault!r} (options: {known})")
    merged = {**allowed, **opts}
    for key in ("delay_ms", "retry_after", "status"):
        value = merged.get(key)
        if key in merged and value is not None and (
                not isinstance(value, int) or isinstance(value, bool) or value < 0):
            raise InvalidInput(key, "must be a whole number of at least 0")
    if fault == "error_5xx" and not 500 <= merged["status"] <= 599:
        raise InvalidInput("status", "error_5xx needs a status from 500 to 599")
    if fault == "rate_limit" and merged["status"] not in (429, 503):
        raise InvalidInput("status", "rate_limit answers 429 or 503")
    if "after_write" in merged and not isinstance(merged["after_write"], bool):
        raise InvalidInput("after_write", "must be true or false")
    return _Fault(fault, platform, merged, times)


@dataclass
class _Response:
    status: int = 200
    body: bytes = b""
    content_type: str = "text/html; charset=utf-8"
    headers: list[tuple[str, str]] = field(default_factory=list)
    wrote: bool = False
    """The request changed something (a record was written)."""


def _html(text: str, status: int = 200) -> _Response:
    return _Response(status, text.encode())


def _redirect(location: str, status: int = 303) -> _Response:
    return _Response(status, b"", headers=[("Location", location)])


def _json(data: object, status: int = 200) -> _Response:
    return _Response(status, json.dumps(data).encode(), "application/json")


class _State:
    """Everything the handlers share, behind one lock."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock
        self.lock = threading.Lock()
        self.started_at = clock.now()
        self.port = 0
        self.records: list[dict[str, Any]] = []
        self.logins: list[dict[str, Any]] = []
        self.requests: deque[dict[str, Any]] = deque(maxlen=_REQUEST_LOG)
        self.sessions: dict[str, str] = {}
        self.faults: dict[tuple[str, str | None], _Fault] = {}
        self.seq = 0
        self.stop = threading.Event()

    def record(self, kind: str, platform: str, shop: str, **data: Any) -> dict[str, Any]:
        with self.lock:
            self.seq += 1
            rec = {"kind": kind, "shop": shop, "platform": platform, **data,
                   "at": self.clock.now(), "seq": self.seq}
            self.records.append(rec)
            return dict(rec)

    def select(self, *, kind: str | None = None, shop: str | None = None) -> list[dict[str, Any]]:
        with self.lock:
            return [dict(r) for r in self.records
                    if (kind is None or r["kind"] == kind) and (shop is None or r["shop"] == shop)]

    def take_faults(self, platform: str, *, after_write: bool) -> tuple[list[_Fault],
                                                                         _Fault | None]:
        """The faults this request meets; each one met uses up one of its ``times``."""
        modifiers: list[_Fault] = []
        terminal: _Fault | None = None
        with self.lock:
            for key, f in list(self.faults.items()):
                if f.platform not in (None, platform):
                    continue
                if bool(f.options.get("after_write", False)) != after_write:
                    continue
                if f.name in _MODIFIERS:
                    modifiers.append(f)
                elif terminal is None:
                    terminal = f
                else:
                    continue
                if f.remaining is not None:
                    f.remaining -= 1
                    if f.remaining <= 0:
                        del self.faults[key]
        return modifiers, terminal


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    state: _State


def _host_platform(host: str) -> str | None:
    name = host.rsplit(":", 1)[0].strip().lower().rstrip(".") if host else ""
    for suffix in _LOCAL_SUFFIXES:
        if name.endswith(suffix):
            label = name[: -len(suffix)]
            return label if label in PLATFORM_HOSTS else None
    return None


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    server_version = "ShopFleetDemo/1.0"

    def log_message(self, format: str, *args: Any) -> None:
        pass  # quiet: the request log is in the state

    def setup(self) -> None:
        super().setup()
        # One handler serves one connection (keep-alive): the request log's ``conn`` tells
        # connections apart even when the OS gives a later one the same client port.
        self.conn_id = next(_CONNECTIONS)

    def do_GET(self) -> None:
        self._handle("GET")

    def do_POST(self) -> None:
        self._handle("POST")

    def do_DELETE(self) -> None:
        self._handle("DELETE")

    # --- plumbing -------------------------------------------------------------------------
    def _handle(self, method: str) -> None:
        st = self.server.state
        length = int(self.headers.get("Content-Length") or 0)
        if length > _MAX_BODY:
            self.close_connection = True
            self._send(_html(pages.error_page("", 413, "Payload Too Large", retry_after_s=None),
                             413))
            return
        body = self.rfile.read(length) if length > 0 else b""
        target = self.path
        host = self.headers.get("Host", "")
        if target.startswith(("http://", "https://")):  # absolute-form, as a proxy client sends
            parts = urlsplit(target)
            host = parts.netloc
            target = parts.path + (f"?{parts.query}" if parts.query else "")
        url = urlsplit(target)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        path = url.path
        if path.startswith("/_control/"):
            try:
                resp = self._control(method, path, query, body)
            except InvalidInput as exc:
                resp = _json({"error": str(exc), "field": exc.field}, 400)
            self._send(resp)
            return
        platform = _host_platform(host)
        seen = {"client": f"{self.client_address[0]}:{self.client_address[1]}",
                "conn": self.conn_id,
                "via": self.headers.get("Via", ""),
                "accept_language": self.headers.get("Accept-Language", ""),
                "user_agent": self.headers.get("User-Agent", "")}
        if path in ("/echo", "/echo.json"):
            # What a site sees of its visitor (#17 shop profiles: ``shopfleet shop check``).
            echo = {"client": seen["client"], "address": self.client_address[0],
                    "host": host, "headers": {k: v for k, v in self.headers.items()}}
            resp = (_json(echo) if path == "/echo.json"
                    else _html(pages.echo_page(echo)))
            with st.lock:
                st.requests.append({"at": st.clock.now(), "method": method,
                                    "platform": platform, "host": host, "path": target,
                                    "status": resp.status, "fault": "", **seen})
            self._send(resp)
            return
        if path == "/favicon.ico":
            self._send(_Response(204))
            return
        if platform is None:
            if path == "/":
                self._send(_html(pages.index_page(_index_lines(st.port))))
            else:
                self._send(_html(pages.not_found_page("", path), 404))
            return
        fault_name = ""
        modifiers, terminal = st.take_faults(platform, after_write=False)
        if any(f.name == "slow" for f in modifiers):
            delay = max(f.options["delay_ms"] for f in modifiers if f.name == "slow")
            st.stop.wait(delay / 1000)
            fault_name = "slow"
        shop = _shop_in(path)
        if terminal is not None:
            resp = _fault_response(terminal, platform, shop)
            fault_name = terminal.name
        else:
            resp = _route(st, self.headers.get("Cookie", ""), method, platform, path, target,
                          query, self.headers.get("Content-Type", ""), body)
            if resp.wrote:
                _, late = st.take_faults(platform, after_write=True)
                if late is not None:
                    resp = _fault_response(late, platform, shop)
                    fault_name = late.name + "_after_write"
        if any(f.name == "layout_changed" for f in modifiers) and resp.content_type.startswith(
                "text/html"):
            resp.body = pages.change_layout(resp.body.decode()).encode()
            fault_name = fault_name or "layout_changed"
        with st.lock:
            st.requests.append({"at": st.clock.now(), "method": method, "platform": platform,
                                "host": host, "path": target, "status": resp.status,
                                "fault": fault_name, **seen})
        self._send(resp)

    def _send(self, resp: _Response) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        self.send_header("Cache-Control", "no-store")
        for name, value in resp.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(resp.body)

    def _control(self, method: str, path: str, query: dict[str, str], body: bytes) -> _Response:
        st = self.server.state
        name = path.removeprefix("/_control/").strip("/")
        if method == "GET" and name == "records":
            return _json(st.select(kind=query.get("kind"), shop=query.get("shop")))
        if method == "GET" and name == "requests":
            with st.lock:
                reqs = [dict(r) for r in st.requests
                        if query.get("platform") in (None, r["platform"])]
            return _json(reqs)
        if method == "GET" and name == "logins":
            with st.lock:
                logins = [dict(r) for r in st.logins if query.get("shop") in (None, r["shop"])]
            return _json(logins)
        if method == "GET" and name == "shops":
            return _json([asdict(s) for s in _shops(st.port)])
        if method == "GET" and name == "faults":
            with st.lock:
                return _json([f.describe() for f in st.faults.values()])
        if (method == "POST" and name == "faults/clear") or (method == "DELETE"
                                                             and name == "faults"):
            with st.lock:
                st.faults.clear()
            return _json({"ok": True})
        if method == "POST" and name == "faults":
            try:
                data = json.loads(body or b"{}")
            except ValueError:
                raise InvalidInput("body", "not JSON") from None
            if not isinstance(data, dict) or not isinstance(data.get("fault"), str):
                raise InvalidInput("fault", 'send {"fault": NAME, "platform": ..., options...}')
            fault = data.pop("fault")
            platform = data.pop("platform", None)
            _install_fault(st, _check_fault(fault, platform, data))
            return _json({"ok": True})
        if method == "POST" and name == "reset":
            _reset(st)
            return _json({"ok": True})
        return _json({"error": f"no control endpoint {method} {path}"}, 404)


def _install_fault(st: _State, fault: _Fault) -> None:
    with st.lock:
        st.faults.pop((fault.name, fault.platform), None)  # re-setting moves it to the end
        st.faults[(fault.name, fault.platform)] = fault


def _reset(st: _State) -> None:
    with st.lock:
        st.records.clear()
        st.logins.clear()
        st.requests.clear()
        st.sessions.clear()
        st.faults.clear()


def _shops(port: int) -> list[DemoShop]:
    return [DemoShop(name=s, platform=p, base_url=f"http://{PLATFORM_HOSTS[p]}:{port}/shop/{s}",
                     username=s, password=demo_password(s)) for p, s in all_shop_names()]


def _index_lines(port: int) -> list[str]:
    lines = [f"{p}: http://{h}:{port}/  (or http://{p}.localhost:{port}/)"
             for p, h in PLATFORM_HOSTS.items()]
    lines += [f"shop {s.name}: {s.base_url}  user {s.username} / password {s.password}"
              for s in _shops(port)]
    return lines


def _shop_in(path: str) -> str | None:
    parts = path.split("/")
    return parts[2] if len(parts) > 2 and parts[1] == "shop" and parts[2] else None


def _fault_response(f: _Fault, platform: str, shop: str | None) -> _Response:
    if f.name == "captcha":
        return _html(pages.captcha_page(platform, shop))
    if f.name == "crash":
        return _html(pages.crash_page(platform, shop))
    status = int(f.options["status"])
    retry_after = f.options.get("retry_after")
    reason = HTTPStatus(status).phrase if status in HTTPStatus._value2member_map_ else "Error"
    resp = _html(pages.error_page(platform, status, reason, retry_after_s=retry_after), status)
    if retry_after is not None:
        resp.headers.append(("Retry-After", str(retry_after)))
    return resp


def _item_id(raw: str) -> int | None:
    if not raw.isdigit():
        return None
    value = int(raw)
    return value if 1 <= value <= MAX_ITEM_ID else None


def _route(st: _State, cookie_header: str, method: str, platform: str, path: str, target: str,
           query: dict[str, str], content_type: str, body: bytes) -> _Response:
    parts = [p for p in path.split("/") if p]
    if not parts:
        return _html(pages.platform_home(platform, shop_names(platform)))
    if parts[0] != "shop" or len(parts) < 2 or parts[1] not in shop_names(platform):
        return _html(pages.not_found_page(platform, path), 404)
    shop, rest = parts[1], parts[2:]
    if not rest:
        return _redirect(f"/shop/{shop}/messages", 302)
    if rest == ["login"]:
        return _login(st, method, platform, shop, query, content_type, body)
    logged_in = _session_shop(st, cookie_header, shop)
    if rest == ["logout"]:
        headers = [("Set-Cookie", f"{_cookie_name(shop)}=; Path=/shop/{shop}; Max-Age=0")]
        return _Response(303, headers=[("Location", f"/shop/{shop}/login"), *headers])
    if not logged_in:
        # POSTs too: a write from a lost session is sent to log in and never recorded.
        return _redirect(pages.login_redirect(shop, target if method == "GET" else path), 302)
    form = parse_form(content_type, body) if method == "POST" else FormData()
    handler = _ROUTES.get((method, rest[0], len(rest)))
    if handler is None:
        return _html(pages.not_found_page(platform, path), 404)
    return handler(st, platform, shop, rest, query, form)


def _cookie_name(shop: str) -> str:
    return f"sf_session_{shop}"


def _session_shop(st: _State, cookie_header: str, shop: str) -> bool:
    jar: SimpleCookie = SimpleCookie()
    try:
        jar.load(cookie_header)
    except CookieError:
        return False
    morsel = jar.get(_cookie_name(shop))
    if morsel is None:
        return False
    with st.lock:
        return st.sessions.get(morsel.value) == shop


def _login(st: _State, method: str, platform: str, shop: str, query: dict[str, str],
           content_type: str, body: bytes) -> _Response:
    form = parse_form(content_type, body) if method == "POST" else FormData()
    next_path = form.get("next") or query.get("next", "")
    if not next_path.startswith(f"/shop/{shop}/") or next_path.startswith(f"/shop/{shop}/login"):
        next_path = f"/shop/{shop}/messages"  # no open redirects, no loops
    if method != "POST":
        return _html(pages.login_page(platform, shop, next_path, error=False))
    ok = form.get("username") == shop and secrets.compare_digest(
        form.get("password").encode(), demo_password(shop).encode())
    with st.lock:
        st.logins.append({"shop": shop, "platform": platform, "ok": ok, "at": st.clock.now()})
        token = secrets.token_urlsafe(24)
        if ok:
            st.sessions[token] = shop
    if not ok:
        return _html(pages.login_page(platform, shop, next_path, error=True))
    cookie = f"{_cookie_name(shop)}={token}; Path=/shop/{shop}; HttpOnly; SameSite=Lax"
    return _Response(303, headers=[("Location", next_path), ("Set-Cookie", cookie)])


_Route = Callable[[_State, str, str, list[str], dict[str, str], FormData], _Response]


def _messages(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
              form: FormData) -> _Response:
    return _html(pages.messages_page(platform, shop, [message(shop, i) for i in range(1, 11)]))


def _sent_replies(st: _State, shop: str, message_id: int) -> list[str]:
    return [r["text"] for r in st.select(kind="reply", shop=shop)
            if r["message_id"] == message_id]


def _message(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
             form: FormData) -> _Response:
    mid = _item_id(rest[1])
    if mid is None:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    msg = message(shop, mid)
    return _html(pages.message_page(platform, shop, msg, _sent_replies(st, shop, mid),
                                    success=query.get("sent") == "1", error=None))


def _reply(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
           form: FormData) -> _Response:
    mid = _item_id(rest[1])
    if mid is None:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    text = form.get("reply").strip()
    if not text:
        return _html(pages.message_page(platform, shop, message(shop, mid),
                                        _sent_replies(st, shop, mid), success=False,
                                        error="Write a reply before sending."))
    st.record("reply", platform, shop, message_id=mid, text=text)
    # Post/redirect/get: reloading the result page never sends the reply again.
    resp = _redirect(f"/shop/{shop}/messages/{mid}?sent=1")
    resp.wrote = True
    return resp


def _recent_uploads(st: _State, shop: str) -> list[str]:
    return [r["title"] for r in st.select(kind="upload", shop=shop)][-10:]


def _product_form(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
                  form: FormData) -> _Response:
    if rest[1:] != ["new"]:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    success = None
    if "uploaded" in query:
        success = query["uploaded"]
    return _html(pages.product_page(platform, shop, _recent_uploads(st, shop), success=success,
                                    error=None))


def _upload(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
            form: FormData) -> _Response:
    if rest[1:] != ["new"]:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    title = form.get("title").strip()
    price = form.get("price").strip()
    category = form.get("category")
    image = form.files.get("image")
    error = None
    try:
        price_ok = float(price) > 0
    except ValueError:
        price_ok = False
    if not title:
        error = "Enter a title."
    elif not price_ok:
        error = "Enter a price greater than 0."
    elif category not in CATEGORIES:
        error = "Choose a category."
    elif image is None or not image[1]:
        error = "Choose an image."
    if error is not None or image is None:
        return _html(pages.product_page(platform, shop, _recent_uploads(st, shop), success=None,
                                        error=error))
    name, content = image
    st.record("upload", platform, shop, title=title, price=price, category=category,
              image_name=name, image_bytes=len(content),
              image_sha256=hashlib.sha256(content).hexdigest())
    resp = _redirect(f"/shop/{shop}/products/new?uploaded={quote(title, safe='')}")
    resp.wrote = True
    return resp


def _campaigns(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
               form: FormData) -> _Response:
    return _html(pages.campaigns_page(platform, shop, [campaign(platform, i) for i in range(1, 6)]))


def _campaign_view(st: _State, platform: str, shop: str, cid: int, *, success: bool,
                   error: str | None) -> _Response:
    c = campaign(platform, cid)
    signed = any(r["campaign_id"] == cid for r in st.select(kind="campaign_signup", shop=shop))
    deadline = st.started_at + c.deadline_h * 3600
    return _html(pages.campaign_page(platform, shop, c, deadline, signed_up=signed,
                                     success=success, error=error))


def _campaign(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
              form: FormData) -> _Response:
    cid = _item_id(rest[1])
    if cid is None:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    return _campaign_view(st, platform, shop, cid, success=query.get("signed") == "1",
                          error=None)


def _signup(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
            form: FormData) -> _Response:
    cid = _item_id(rest[1])
    if cid is None:
        return _html(pages.not_found_page(platform, "/".join(rest)), 404)
    if form.get("agree") != "yes":
        return _campaign_view(st, platform, shop, cid, success=False,
                              error="Tick \u201cI agree\u201d to sign up.")
    c = campaign(platform, cid)
    st.record("campaign_signup", platform, shop, campaign_id=cid, title=c.title,
              deadline=st.started_at + c.deadline_h * 3600)
    resp = _redirect(f"/shop/{shop}/campaigns/{cid}?signed=1")
    resp.wrote = True
    return resp


def _stats(st: _State, platform: str, shop: str, rest: list[str], query: dict[str, str],
           form: FormData) -> _Response:
    raw = query.get("page", "1")
    page = int(raw) if raw.isdigit() else 1
    return _html(pages.stats_page(platform, shop, page, stats_rows(shop, page)))


_ROUTES: dict[tuple[str, str, int], _Route] = {
    ("GET", "messages", 1): _messages,
    ("GET", "messages", 2): _message,
    ("POST", "messages", 2): _reply,
    ("GET", "products", 2): _product_form,
    ("POST", "products", 2): _upload,
    ("GET", "campaigns", 1): _campaigns,
    ("GET", "campaigns", 2): _campaign,
    ("POST", "campaigns", 2): _signup,
    ("GET", "stats", 1): _stats,
}


class DemoSite:
    """The local stand-in for the seller platforms, served from a background thread.

    Example::

        with DemoSite() as site:
            shop = site.shops()[0]
            ...  # drive shop.base_url with Chromium using host_resolver_rules()
            assert site.records(kind="reply", shop=shop.name)

    Args:
        port: TCP port to listen on; 0 picks a free one (read :attr:`port` after ``start``).
        host: the address to bind; keep it on loopback.
        clock: stamps records (``at``) and sets campaign deadlines.
    """

    def __init__(self, *, port: int = 0, host: str = "127.0.0.1",
                 clock: Clock | None = None) -> None:
        self._bind = (host, port)
        self._state = _State(clock or SYSTEM_CLOCK)
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None
        self.port = port

    def start(self) -> DemoSite:
        """Bind and serve in a daemon thread. Returns itself."""
        if self._server is not None:
            return self
        server = _Server(self._bind, _Handler)
        server.state = self._state
        self.port = int(server.server_address[1])
        self._state.port = self.port
        self._state.stop.clear()
        self._server = server
        self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"demo-site:{self.port}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and free the port. Safe to call twice."""
        server, self._server = self._server, None
        if server is None:
            return
        self._state.stop.set()  # wakes requests sleeping in the "slow" fault
        server.shutdown()
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> DemoSite:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    @property
    def control_url(self) -> str:
        """Base URL of the control API (``GET records``, ``POST faults``, ``POST reset``)."""
        return f"http://127.0.0.1:{self.port}/_control"

    def base_url(self, platform: str, shop: str) -> str:
        """Where a shop's pages live, e.g. ``http://pdd.shopfleet.test:PORT/shop/pdd-1``."""
        if platform not in PLATFORM_HOSTS or shop not in shop_names(platform):
            raise InvalidInput("shop", f"no demo shop {shop!r} on platform {platform!r}")
        return f"http://{PLATFORM_HOSTS[platform]}:{self.port}/shop/{shop}"

    def shops(self) -> list[DemoShop]:
        """Every demo shop with its URL and demo credentials."""
        return _shops(self.port)

    def records(self, *, kind: str | None = None, shop: str | None = None) -> list[dict[str, Any]]:
        """Every write the site accepted, oldest first (``reply``, ``upload``,
        ``campaign_signup``); each has ``kind``, ``shop``, ``platform``, ``at`` and ``seq``."""
        return self._state.select(kind=kind, shop=shop)

    def logins(self, *, shop: str | None = None) -> list[dict[str, Any]]:
        """Every login attempt (``shop``, ``platform``, ``ok``, ``at``), oldest first."""
        with self._state.lock:
            return [dict(r) for r in self._state.logins if shop in (None, r["shop"])]

    def requests(self, *, platform: str | None = None) -> list[dict[str, Any]]:
        """Platform page requests served (``at``, ``method``, ``path``, ``status``, ``fault``;
        ``client`` address, ``conn`` (a number per connection), ``via``, ``accept_language``,
        ``user_agent``; echo page requests too)."""
        with self._state.lock:
            return [dict(r) for r in self._state.requests if platform in (None, r["platform"])]

    def set_fault(self, fault: str, *, platform: str | None = None, **options: Any) -> None:
        """Switch a fault on for one platform (or all), replacing the same fault there.

        Faults and their options (all take ``times=N`` to wear off after N page hits):
        ``slow`` (``delay_ms``=2000), ``error_5xx`` (``status``=503, ``retry_after``=None,
        ``after_write``=False), ``rate_limit`` (``status``=429, ``retry_after``=5),
        ``layout_changed``, ``crash`` (``after_write``=False), ``captcha``.
        ``after_write=True`` lets the write through and records it, then fails the response.

        Raises:
            InvalidInput: unknown fault, platform or option.
        """
        _install_fault(self._state, _check_fault(fault, platform, options))

    def faults(self) -> list[dict[str, Any]]:
        """The faults switched on, with the hits they have left (``times_left``)."""
        with self._state.lock:
            return [f.describe() for f in self._state.faults.values()]

    def clear_faults(self) -> None:
        """Switch every fault off."""
        with self._state.lock:
            self._state.faults.clear()

    def reset(self) -> None:
        """Forget records, logins, the request log, sessions and faults."""
        _reset(self._state)
