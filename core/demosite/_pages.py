"""HTML of the demo site's pages. Plain strings: no template engine, nothing to ship beside it.

The ids and classes here are the contract the shipped flows rely on (``#reply``,
``#submit-btn``, ``.success-msg``...). :func:`change_layout` renames all of them at once, which is
what the ``layout_changed`` fault serves.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from html import escape
from typing import Any
from urllib.parse import quote

from ._catalog import (
    CATEGORIES,
    PLATFORM_COLOURS,
    PLATFORM_TITLES,
    STATS_MAX_PAGE,
    Campaign,
    Message,
)

_STYLE = """
body { font-family: sans-serif; margin: 0; background: #f5f5f7; color: #222; }
.topbar { background: var(--brand); color: #fff; padding: 10px 20px; }
.topbar a { color: #fff; margin-right: 16px; }
.content { max-width: 860px; margin: 20px auto; background: #fff; padding: 20px 28px;
  border-radius: 6px; }
.field { margin: 10px 0; }
.field label { display: block; font-weight: bold; margin-bottom: 4px; }
.field.check label { display: inline; }
.success-msg { background: #e6f6e6; border: 1px solid #5a5; padding: 8px; }
.login-error, .form-error { background: #fdeaea; border: 1px solid #c55; padding: 8px; }
.captcha-box { border: 2px dashed #c90; padding: 30px; text-align: center; }
table { border-collapse: collapse; }
td, th { border: 1px solid #ccc; padding: 3px 10px; }
.customer-msg { background: #eef; padding: 10px; border-radius: 4px; }
"""


def _page(platform: str, title: str, body: str, *, shop: str | None = None,
          nav: bool = True) -> str:
    links = ""
    if shop is not None and nav:
        base = f"/shop/{shop}"
        links = (
            f'<a class="nav-link" href="{base}/messages">Messages</a>'
            f'<a class="nav-link" href="{base}/products/new">New product</a>'
            f'<a class="nav-link" href="{base}/campaigns">Campaigns</a>'
            f'<a class="nav-link" href="{base}/stats">Stats</a>'
            f'<a class="nav-link" id="logout-link" href="{base}/logout">Log out</a>'
        )
    who = f' &middot; <span class="shop-name">{escape(shop)}</span>' if shop else ""
    return (
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<link rel="icon" href="data:,">'
        f"<title>{escape(title)} - {escape(PLATFORM_TITLES.get(platform, 'ShopFleet demo'))}"
        f"</title><style>:root {{ --brand: {PLATFORM_COLOURS.get(platform, '#444')}; }}"
        f"{_STYLE}</style></head>\n"
        f'<body data-platform="{escape(platform)}">'
        f'<header class="topbar"><strong>{escape(PLATFORM_TITLES.get(platform, "ShopFleet"))}'
        f"</strong>{who}<div>{links}</div></header>\n"
        f'<main class="content">\n<h1>{escape(title)}</h1>\n{body}\n</main></body></html>\n'
    )


def login_page(platform: str, shop: str, next_path: str, *, error: bool) -> str:
    err = (
        '<p class="login-error" role="alert">Wrong user name or password.</p>' if error else ""
    )
    body = (
        f"{err}<form id=\"login-form\" method=\"post\" action=\"/shop/{shop}/login\">"
        f'<input type="hidden" name="next" value="{escape(next_path)}">'
        '<div class="field"><label for="username">User name</label>'
        '<input id="username" name="username" autocomplete="username"></div>'
        '<div class="field"><label for="password">Password</label>'
        '<input id="password" name="password" type="password" '
        'autocomplete="current-password"></div>'
        '<button id="login-btn" type="submit">Log in</button></form>'
    )
    return _page(platform, "Log in", body, shop=shop, nav=False)


def demo_login_steps(*, when_asked: bool = True) -> list[dict[str, Any]]:
    """The flow steps that log in on the demo site's login form (:func:`login_page`).

    Args:
        when_asked: each step runs only while the login button shows (``if_visible``), so a
            shop whose saved session is still good skips them; False types unconditionally
            (the page must be the login form).
    """
    cond: dict[str, Any] = {"if_visible": "#login-btn"} if when_asked else {}
    return [
        {"action": "type_text", "locator": "#username", "text": "{shop.username}", **cond},
        {"action": "type_text", "locator": "#password", "text": "{shop.password}", **cond},
        {"action": "click", "locator": "#login-btn", **cond},
    ]


def messages_page(platform: str, shop: str, messages: Iterable[Message]) -> str:
    items = "".join(
        f'<li class="message-item"><a class="message-link" href="/shop/{shop}/messages/{m.id}">'
        f"#{m.id} {escape(m.customer)}: {escape(m.text)}</a></li>"
        for m in messages
    )
    return _page(platform, "Customer messages", f'<ul id="messages">{items}</ul>', shop=shop)


def message_page(platform: str, shop: str, msg: Message, sent: Sequence[str], *,
                 success: bool, error: str | None) -> str:
    notice = '<p class="success-msg" role="status">Reply sent.</p>' if success else ""
    if error:
        notice += f'<p class="form-error" role="alert">{escape(error)}</p>'
    history = "".join(f'<li class="sent-reply">{escape(t)}</li>' for t in sent)
    body = (
        f"{notice}<p>Order <span class=\"order-no\">{msg.order_no}</span>, from "
        f'<span class="customer">{escape(msg.customer)}</span></p>'
        f'<blockquote class="customer-msg" id="customer-msg">{escape(msg.text)}</blockquote>'
        f'<h2>Your replies</h2><ul id="sent-replies">{history}</ul>'
        f'<form id="reply-form" method="post" action="/shop/{shop}/messages/{msg.id}">'
        '<div class="field"><label for="reply">Reply</label>'
        '<textarea id="reply" name="reply" rows="4" cols="60"></textarea></div>'
        '<button id="submit-btn" type="submit">Send reply</button></form>'
    )
    return _page(platform, f"Message #{msg.id}", body, shop=shop)


def product_page(platform: str, shop: str, recent: Sequence[str], *, success: str | None,
                 error: str | None) -> str:
    notice = ""
    if success is not None:
        notice = f'<p class="success-msg" role="status">Product uploaded: {escape(success)}</p>'
    if error:
        notice += f'<p class="form-error" role="alert">{escape(error)}</p>'
    options = "".join(f'<option value="{c}">{c.title()}</option>' for c in CATEGORIES)
    uploads = "".join(f'<li class="recent-upload">{escape(t)}</li>' for t in recent)
    body = (
        f'{notice}<form id="product-form" method="post" enctype="multipart/form-data" '
        f'action="/shop/{shop}/products/new">'
        '<div class="field"><label for="title">Title</label>'
        '<input id="title" name="title" size="50"></div>'
        '<div class="field"><label for="price">Price</label>'
        '<input id="price" name="price" inputmode="decimal"></div>'
        '<div class="field"><label for="category">Category</label>'
        f'<select id="category" name="category">{options}</select></div>'
        '<div class="field"><label for="image">Image</label>'
        '<input id="image" name="image" type="file" accept="image/*"></div>'
        '<button id="upload-btn" type="submit">Upload product</button></form>'
        f'<h2>Recent uploads</h2><ul id="recent-uploads">{uploads}</ul>'
    )
    return _page(platform, "New product", body, shop=shop)


def campaigns_page(platform: str, shop: str, campaigns: Iterable[Campaign]) -> str:
    items = "".join(
        f'<li class="campaign-item"><a class="campaign-link" '
        f'href="/shop/{shop}/campaigns/{c.id}">{escape(c.title)} (-{c.discount_pct}%)</a></li>'
        for c in campaigns
    )
    return _page(platform, "Campaigns", f'<ul id="campaigns">{items}</ul>', shop=shop)


def campaign_page(platform: str, shop: str, c: Campaign, deadline: float, *, signed_up: bool,
                  success: bool, error: str | None) -> str:
    notice = '<p class="success-msg" role="status">Signed up for the campaign.</p>' if success \
        else ""
    if error:
        notice += f'<p class="form-error" role="alert">{escape(error)}</p>'
    when = datetime.fromtimestamp(deadline, UTC).strftime("%Y-%m-%d %H:%M UTC")
    status = "Signed up" if signed_up else "Not registered"
    body = (
        f'{notice}<p class="campaign-title">{escape(c.title)}: {c.discount_pct}% off</p>'
        f'<p>Sign-up closes <time class="deadline" id="deadline" '
        f'data-deadline="{int(deadline)}">{when}</time></p>'
        f'<p>Status: <span id="signup-status">{status}</span></p>'
        f'<form id="campaign-form" method="post" action="/shop/{shop}/campaigns/{c.id}">'
        '<div class="field check"><input id="agree" name="agree" value="yes" type="checkbox">'
        '<label for="agree">I agree to the campaign terms</label></div>'
        '<button id="confirm-btn" type="submit">Confirm sign-up</button></form>'
    )
    return _page(platform, f"Campaign #{c.id}", body, shop=shop)


def stats_page(platform: str, shop: str, page: int,
               rows: Sequence[tuple[str, int, int]]) -> str:
    trs = "".join(
        f'<tr class="stats-row"><td class="sku">{sku}</td><td class="views">{views}</td>'
        f'<td class="orders">{orders}</td></tr>'
        for sku, views, orders in rows
    )
    empty = '<p class="no-more">No more data.</p>' if not rows else ""
    pager = ""
    if page > 1:
        pager += f'<a class="prev-page" href="/shop/{shop}/stats?page={page - 1}">Previous</a> '
    if page < STATS_MAX_PAGE:
        pager += f'<a class="next-page" href="/shop/{shop}/stats?page={page + 1}">Next</a>'
    body = (
        f'<p>Page <span id="stats-page">{page}</span></p>'
        '<table id="stats"><thead><tr><th>SKU</th><th>Views</th><th>Orders</th></tr></thead>'
        f"<tbody>{trs}</tbody></table>{empty}<p>{pager}</p>"
    )
    return _page(platform, "Shop statistics", body, shop=shop)


def platform_home(platform: str, shops: Iterable[str]) -> str:
    items = "".join(
        f'<li><a class="shop-link" href="/shop/{s}/messages">{escape(s)}</a></li>' for s in shops
    )
    return _page(platform, "Shops", f'<ul id="shops">{items}</ul>', nav=False)


def index_page(lines: Iterable[str]) -> str:
    items = "".join(f"<li>{escape(line)}</li>" for line in lines)
    body = (
        "<p>This server stands in for three seller platforms on their own host names. Start "
        "Chromium with <code>--host-resolver-rules=\"MAP *.shopfleet.test 127.0.0.1\"</code> "
        "or open the <code>*.localhost</code> addresses below.</p>"
        f"<ul>{items}</ul>"
    )
    return _page("", "ShopFleet demo site", body, nav=False)


def captcha_page(platform: str, shop: str | None) -> str:
    body = (
        '<div id="captcha" class="captcha-box" data-captcha="slider">'
        "<p>Please verify that you are human: drag the slider to complete the puzzle.</p>"
        '<div class="captcha-slider" aria-label="slider">&#9654; &#9135;&#9135;&#9135;</div>'
        "</div>"
    )
    return _page(platform, "Security check", body, shop=shop, nav=False)


# V8 aborts the renderer outright ("Fatal JavaScript invalid size error") when String.split
# would build an array over its hard length limit: measured at ~0.25 s on Chromium 156, with
# little memory. Should a future V8 throw instead, the catch falls through to a plain
# out-of-memory loop, which also kills the renderer (~12 s and ~4 GB, measured).
CRASH_SCRIPT = (
    "try { 'x'.repeat(2 ** 28).split(''); } catch (e) {}\n"
    "const hog = []; for (;;) { hog.push(new Array(1e6).fill(1.5)); }\n"
)


def crash_page(platform: str, shop: str | None) -> str:
    body = f'<p id="crash-page">Loading...</p><script>{CRASH_SCRIPT}</script>'
    return _page(platform, "Loading", body, shop=shop, nav=False)


def error_page(platform: str, status: int, reason: str, *, retry_after_s: int | None) -> str:
    extra = f' data-retry-after="{retry_after_s}"' if retry_after_s is not None else ""
    wait = f"<p>Please retry in {retry_after_s} seconds.</p>" if retry_after_s is not None else ""
    body = (
        f'<div id="site-error" data-status="{status}"{extra}>'
        f"<p>{status} {escape(reason)}</p>{wait}</div>"
    )
    return _page(platform, f"{status} {reason}", body, nav=False)


def not_found_page(platform: str, path: str) -> str:
    return _page(platform, "Not found",
                 f'<p class="not-found">No page at {escape(path)}.</p>', nav=False)


def login_redirect(shop: str, path_and_query: str) -> str:
    return f"/shop/{shop}/login?next={quote(path_and_query, safe='')}"


_ATTR = re.compile(r'\b(id|for|class)="([^"]*)"')
_CSS_CLASS = re.compile(r"(?<![\w-])\.([a-z][\w-]*)")
_STYLE_BLOCK = re.compile(r"<style>(.*?)</style>", re.S)
LAYOUT_PREFIX = "v2-"


def change_layout(html: str) -> str:
    """The same page with every id and class renamed, as after a site redesign.

    Form field *names* stay, so the page still works for a person; locators break.
    """

    def attr(m: re.Match[str]) -> str:
        renamed = " ".join(LAYOUT_PREFIX + part for part in m.group(2).split())
        return f'{m.group(1)}="{renamed}"'

    def style(m: re.Match[str]) -> str:
        return "<style>" + _CSS_CLASS.sub(lambda c: "." + LAYOUT_PREFIX + c.group(1),
                                          m.group(1)) + "</style>"

    return _STYLE_BLOCK.sub(style, _ATTR.sub(attr, html))


def echo_page(server_view: dict[str, Any]) -> str:
    """What a site sees of its visitor: the server's view (client address, headers) and the
    page's (``navigator.language``, the Intl time zone, the user agent, the viewport) in
    ``<pre id="echo">`` as JSON once the script ran (``shopfleet shop check`` reads it)."""
    import json

    data = json.dumps(server_view, ensure_ascii=True).replace("<", "\\u003c")
    return (
        "<!doctype html><html><head><meta charset='utf-8'><title>echo</title></head><body>"
        "<h1>What this site sees</h1>"
        f"<script type='application/json' id='server'>{data}</script>"
        "<pre id='echo'>…</pre>"
        "<script>"
        "const server = JSON.parse(document.getElementById('server').textContent);"
        "const echo = {server, navigator_language: navigator.language,"
        " languages: Array.from(navigator.languages || []),"
        " timezone: Intl.DateTimeFormat().resolvedOptions().timeZone,"
        " user_agent: navigator.userAgent,"
        " viewport: [window.innerWidth, window.innerHeight]};"
        "window.shopfleetEcho = echo;"
        "document.getElementById('echo').textContent = JSON.stringify(echo, null, 1);"
        "document.body.dataset.ready = '1';"
        "</script></body></html>")
