"""The proxy.py plugin :class:`core.testing.proxy_server.LoopbackProxy` loads (imported in the
proxy's own process only: ``proxy.py`` is a dev dependency)."""

from __future__ import annotations

from typing import Any

from proxy.http.proxy import HttpProxyBasePlugin


class DemoHostsResolver(HttpProxyBasePlugin):
    """``*.shopfleet.test`` and ``*.localhost`` resolve to 127.0.0.1, as Chromium's
    ``--host-resolver-rules`` make them for a browser that goes direct."""

    def resolve_dns(self, host: str, port: int) -> tuple[str | None, Any]:
        name = host.lower().rstrip(".")
        if name.endswith((".shopfleet.test", ".localhost")) or name == "localhost":
            return "127.0.0.1", None
        return None, None
