"""The demo site's server: one ThreadingHTTPServer, three platforms told apart by Host header."""

from __future__ import annotations

import contextlib
import itertools
import json
import socket
import threading
from dataclasses import asdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, urlsplit

from ..clock import SYSTEM_CLOCK, Clock
from ..errors import InvalidInput
from . import _pages as pages
from ._catalog import (
    PLATFORM_HOSTS,
    DemoShop,
    shop_names,
)
from ._routes import _fault_response, _index_lines, _route, _shop_in, _shops
from ._state import (
    _LOCAL_SUFFIXES,
    _MAX_BODY,
    _check_fault,
    _html,
    _install_fault,
    _json,
    _reset,
    _Response,
    _State,
)

_CONNECTIONS = itertools.count(1)


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
        if terminal is not None and terminal.name == "network_down":
            with st.lock:
                st.requests.append({"at": st.clock.now(), "method": method,
                                    "platform": platform, "host": host, "path": target,
                                    "status": 0, "fault": "network_down", **seen})
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)
            return
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
