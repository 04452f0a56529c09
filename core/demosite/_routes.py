"""The demo site's pages by path: login, messages, uploads, campaigns, stats."""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import CookieError, SimpleCookie
from urllib.parse import quote

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
from ._state import (
    _Fault,
    _html,
    _redirect,
    _Response,
    _State,
)


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
