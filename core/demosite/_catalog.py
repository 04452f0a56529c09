"""The demo site's fixed content: platforms, shops, messages, campaigns and stats.

Everything here is a pure function of its arguments, so a test can compute what a page shows
(or what a collect flow should extract) without asking the server.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

PLATFORM_HOSTS: dict[str, str] = {
    "pdd": "pdd.shopfleet.test",
    "temu": "temu.shopfleet.test",
    "tiktok": "tiktok.shopfleet.test",
}
"""Each demo platform's host name. All of them resolve to the one local server."""

HOST_SUFFIX = ".shopfleet.test"
SHOPS_PER_PLATFORM = 3
STATS_ROWS_PER_PAGE = 20
STATS_MAX_PAGE = 500
MAX_ITEM_ID = 99_999
CATEGORIES: tuple[str, ...] = ("home", "toys", "clothing", "electronics", "beauty")

PLATFORM_TITLES: dict[str, str] = {
    "pdd": "Pinduoduo Seller Center (demo)",
    "temu": "TEMU Seller Central (demo)",
    "tiktok": "TikTok Shop Seller Center (demo)",
}
PLATFORM_COLOURS: dict[str, str] = {"pdd": "#e02e24", "temu": "#fb7701", "tiktok": "#161823"}


@dataclass(frozen=True, slots=True)
class DemoShop:
    """One seller account on the demo site.

    Attributes:
        name: the shop's name, also its path segment (``pdd-1``).
        platform: ``pdd``, ``temu`` or ``tiktok``.
        base_url: where the shop's pages live (``http://pdd.shopfleet.test:PORT/shop/pdd-1``).
        username: the demo login name.
        password: the demo password (public on purpose: this is a demo).
    """

    name: str
    platform: str
    base_url: str
    username: str
    password: str


def shop_names(platform: str) -> list[str]:
    """The shops of one platform, in order."""
    return [f"{platform}-{i}" for i in range(1, SHOPS_PER_PLATFORM + 1)]


def all_shop_names() -> list[tuple[str, str]]:
    """``(platform, shop)`` for every demo shop."""
    return [(p, s) for p in PLATFORM_HOSTS for s in shop_names(p)]


def demo_password(shop: str) -> str:
    return f"demo-pass-{shop}"


def _digest(*parts: object) -> bytes:
    return hashlib.sha256(":".join(str(p) for p in parts).encode()).digest()


def stats_rows(shop: str, page: int) -> list[tuple[str, int, int]]:
    """The rows ``(sku, views, orders)`` that ``/shop/<shop>/stats?page=N`` shows.

    Pages run from 1 to 500 with 20 rows each; any other page is empty.
    """
    if page < 1 or page > STATS_MAX_PAGE:
        return []
    rows: list[tuple[str, int, int]] = []
    for i in range(STATS_ROWS_PER_PAGE):
        d = _digest("stats", shop, page, i)
        views = int.from_bytes(d[:4], "big") % 10_000
        orders = int.from_bytes(d[4:8], "big") % (views // 20 + 1)
        sku = f"{shop.upper()}-{(page - 1) * STATS_ROWS_PER_PAGE + i + 1:05d}"
        rows.append((sku, views, orders))
    return rows


_CUSTOMERS = ("Li Wei", "Zhang Min", "Wang Fang", "Chen Jie", "Liu Yang", "Maria Lopez",
              "John Smith", "Aisha Khan", "Yuki Tanaka", "Olga Petrova")
_QUESTIONS = (
    "When will my order ship?",
    "The parcel arrived damaged, can I get a refund?",
    "Do you have this in a larger size?",
    "Can you change the delivery address?",
    "Is this item in stock again soon?",
    "The colour is different from the picture.",
    "Can I get an invoice for my order?",
)


@dataclass(frozen=True, slots=True)
class Message:
    """A customer message shown on ``/messages/<id>``."""

    id: int
    customer: str
    text: str
    order_no: str


def message(shop: str, message_id: int) -> Message:
    """The customer message with that id (every id from 1 to 99999 exists)."""
    d = _digest("msg", shop, message_id)
    return Message(
        id=message_id,
        customer=_CUSTOMERS[d[0] % len(_CUSTOMERS)],
        text=_QUESTIONS[d[1] % len(_QUESTIONS)],
        order_no=f"{int.from_bytes(d[2:8], 'big') % 10**12:012d}",
    )


_CAMPAIGNS = ("Double 11 Mega Sale", "Flash Deals Week", "New Arrivals Boost", "Free Shipping Days",
              "Clearance Festival", "Back to School")


@dataclass(frozen=True, slots=True)
class Campaign:
    """A platform campaign shown on ``/campaigns/<id>``."""

    id: int
    title: str
    discount_pct: int
    deadline_h: int
    """Hours after the site started at which sign-up closes."""


def campaign(platform: str, campaign_id: int) -> Campaign:
    """The campaign with that id (every id from 1 to 99999 exists)."""
    d = _digest("campaign", platform, campaign_id)
    return Campaign(
        id=campaign_id,
        title=_CAMPAIGNS[d[0] % len(_CAMPAIGNS)],
        discount_pct=5 + d[1] % 30,
        deadline_h=1 + (campaign_id * 7) % 72,
    )
