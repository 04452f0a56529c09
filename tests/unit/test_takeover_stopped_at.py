"""Where a person's takeover opens the shop's browser (#15): the page where the task stopped,
only when it is a page the shop's tasks may load; else the shop's address."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

from core.config import Settings
from core.takeover import shop_origins, stopped_at

SHOP = SimpleNamespace(platform="pdd", base_url="https://pdd-1.shopfleet.test/shop/pdd-1",
                       allowed_origins=("https://pay.shopfleet.test",))


def ticket_stopped_at(tmp_path: Path, url: str) -> SimpleNamespace:
    steps = tmp_path / "steps.json"
    steps.write_text(json.dumps({"failure": {"url": url}}), encoding="utf-8")
    return SimpleNamespace(evidence={"steps": str(steps)})


def test_the_page_where_the_task_stopped_when_the_shop_may_load_it(tmp_path: Path) -> None:
    origins = shop_origins(Settings(), SHOP)
    for url in ("https://pdd-1.shopfleet.test/orders/8812?tab=reply",
                "https://pay.shopfleet.test/checkout"):
        assert stopped_at(ticket_stopped_at(tmp_path, url), SHOP.base_url, origins) == url


def test_a_foreign_or_odd_page_opens_the_shops_address_instead(tmp_path: Path) -> None:
    """A task stopped because its page went to a foreign origin recorded that page: the
    shop's browser, with its session, never opens a person's takeover there."""
    origins = shop_origins(Settings(), SHOP)
    for url in ("https://pdd-1.shopfleet.test.evil.example/login",
                "http://pdd-1.shopfleet.test/orders",          # another scheme: another origin
                "javascript:alert(1)", "file:///etc/passwd", ""):
        assert stopped_at(ticket_stopped_at(tmp_path, url), SHOP.base_url, origins) == \
            SHOP.base_url, url
    missing = SimpleNamespace(evidence={"steps": str(tmp_path / "gone.json")})
    assert stopped_at(missing, SHOP.base_url, origins) == SHOP.base_url
