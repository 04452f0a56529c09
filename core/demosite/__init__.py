"""The demo seller site: three local stand-ins for real platforms, for demos and tests.

One standard-library HTTP server on 127.0.0.1 serves ``pdd.shopfleet.test``,
``temu.shopfleet.test`` and ``tiktok.shopfleet.test`` (told apart by the Host header; Chromium
gets there with :func:`host_resolver_rules`). Each platform has three shops (``pdd-1``...) with
login, customer messages, product upload, campaign sign-up and paged statistics. Every write is
recorded, and fault switches make a platform slow, failing, rate-limited, redesigned, crashing
or CAPTCHA-guarded. Another process drives it through ``/_control/``::

    GET  /_control/records?kind=reply&shop=pdd-1     the writes, oldest first (JSON list)
    GET  /_control/logins, /_control/requests, /_control/shops, /_control/faults
    POST /_control/faults  {"fault": "rate_limit", "platform": "pdd", "retry_after": 3}
    POST /_control/faults/clear   (or DELETE /_control/faults)
    POST /_control/reset
"""

from __future__ import annotations

from pathlib import Path

from ._catalog import (
    CATEGORIES,
    PLATFORM_HOSTS,
    SHOPS_PER_PLATFORM,
    STATS_MAX_PAGE,
    DemoShop,
    stats_rows,
)
from ._cli import main, register_cli
from ._pages import demo_login_steps
from ._site import DemoSite
from ._state import FAULTS, host_resolver_rules


def assets_dir() -> Path:
    """The shipped demo assets folder (``product.png`` for the upload flow)."""
    from ..paths import resources_dir

    return resources_dir() / "demo_site" / "assets"


__all__ = [
    "CATEGORIES",
    "FAULTS",
    "PLATFORM_HOSTS",
    "SHOPS_PER_PLATFORM",
    "STATS_MAX_PAGE",
    "DemoShop",
    "DemoSite",
    "assets_dir",
    "demo_login_steps",
    "host_resolver_rules",
    "main",
    "register_cli",
    "stats_rows",
]
