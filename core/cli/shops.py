"""Shop commands: ``shops`` and ``shop add|set|set-password|pause|resume|tag|untag``.

#18: ``shops --shops SELECTOR`` lists the shops a selector picks; ``shop pause|resume`` and
``shop tag|untag`` take a NAME or ``--shops SELECTOR`` (see :mod:`core.selectors`)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..errors import InvalidInput
from ..origins import normalise_origins
from ..profiles import ProfileInput, ShopProfile, exit_warnings, parse_profile_fields, shop_json
from ..selectors import normalize_tags, select_shops
from ..store.records import ShopRecord
from . import shop_check
from .context import Cli

_PROFILE_OPTIONS = ("proxy", "locale", "timezone", "user_agent", "viewport", "geolocation",
                    "header")


def _profile_input(args: argparse.Namespace) -> ProfileInput | None:
    """The profile options given on the command line, or None when there are none."""
    given = {k: getattr(args, k) for k in _PROFILE_OPTIONS}
    if all(v is None for v in given.values()):
        return None
    headers = given.pop("header")
    return ProfileInput(headers=headers, **given)


def _add_profile_options(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("profile (#17: the shop's network identity; '' clears a field)")
    g.add_argument("--proxy", metavar="URL",
                   help="http://, https:// or socks5://[user:password@]host:port "
                        "(the password is stored encrypted and never shown)")
    g.add_argument("--locale", metavar="L", help="BCP 47, e.g. zh-CN (default zh-CN)")
    g.add_argument("--timezone", metavar="TZ", help="IANA name, e.g. Asia/Shanghai "
                                                   "(default the system's)")
    g.add_argument("--user-agent", metavar="S", help="default: the browser's own")
    g.add_argument("--viewport", metavar="WxH", help="e.g. 1366x768")
    g.add_argument("--geolocation", metavar="LAT,LON", help="granted to the shop's pages")
    g.add_argument("--header", action="append", metavar="K:V",
                   help="an extra request header (repeatable; replaces the list)")


def picked_shops(cli: Cli, selector: str | None) -> list[ShopRecord]:
    """The shops ``--shops SELECTOR`` picks (all when ``None``); a selector that is bad or
    picks nothing is bad input naming ``--shops``."""
    shops = cli.store.shops()
    if selector is None:
        return shops
    return select_shops(selector, shops, field="--shops")


def cmd_shops(args: argparse.Namespace, cli: Cli) -> int:
    shops = picked_shops(cli, args.shops)
    if cli.json:
        cli.out([shop_json(s) for s in shops])
        return 0
    if not shops:
        print("no shops (add one with 'shopfleet shop add NAME --platform P --base-url URL')")
    for s in shops:
        flags = " paused" if s.paused else ""
        login = f"user {s.username}" if s.username else "no login"
        pw = ", password set" if s.has_password else ""
        tags = f"  tags: {' '.join(s.tags)}" if s.tags else ""
        print(f"{s.name:<16} {s.platform:<8} {s.base_url}  ({login}{pw}){flags}{tags}")
        if not s.profile.is_empty:
            print(f"{'':<16} profile: {_profile_line(s)}")
    for line in exit_warnings(shops):
        print(f"warning: {line}", file=sys.stderr)
    return 0


def _profile_line(s: Any) -> str:
    p = s.profile
    parts = [f"proxy {p.proxy}" if p.proxy else "direct"]
    parts += [v for v in (p.locale, p.timezone) if v]
    if p.viewport:
        parts.append("x".join(map(str, p.viewport)))
    if p.user_agent:
        parts.append("own user agent")
    if p.geolocation:
        parts.append("geolocation")
    if p.headers:
        parts.append(f"{len(p.headers)} header(s)")
    return ", ".join(parts)


def cmd_shop_add(args: argparse.Namespace, cli: Cli) -> int:
    origins = normalise_origins(args.allow_origin or [], field="--allow-origin")
    given = _profile_input(args)
    # Every option is checked before anything is written.
    change = parse_profile_fields(ShopProfile(), given) if given is not None else None
    shop = cli.store.add_shop(args.name, platform=args.platform, base_url=args.base_url,
                              username=args.username or "")
    if origins:
        shop = cli.store.set_shop_origins(args.name, origins)
    if change is not None:
        from ..profile_store import save_profile

        shop = save_profile(cli.store, args.name, change)
    if cli.json:
        cli.out(shop_json(shop))
    else:
        print(f"shop {shop.name} added ({shop.platform}, domain {shop.domain})")
    return 0


def cmd_shop_set(args: argparse.Namespace, cli: Cli) -> int:
    """``shop set NAME [--allow-origin URL…] [--proxy URL] [--locale L] …``: the origins its
    tasks may load besides its own (replaces the list; ``--allow-origin`` with no URL clears
    it) and its profile fields (each given one replaces the field; ``''`` clears it)."""
    given = _profile_input(args)
    if args.allow_origin is None and given is None:
        raise InvalidInput("shop set", "give --allow-origin or a profile option "
                           "(--proxy, --locale, --timezone, --user-agent, --viewport, "
                           "--geolocation, --header)")
    origins = (normalise_origins(args.allow_origin, field="--allow-origin")
               if args.allow_origin is not None else None)
    current = cli.store.shop(args.name)
    change = parse_profile_fields(current.profile, given) if given is not None else None
    shop = current
    if origins is not None:
        shop = cli.store.set_shop_origins(args.name, origins)
    if change is not None:
        from ..profile_store import save_profile

        shop = save_profile(cli.store, args.name, change)
    if cli.json:
        cli.out(shop_json(shop))
    else:
        if origins is not None:
            print(f"shop {shop.name} may load: its own origin"
                  + "".join(f", {o}" for o in shop.allowed_origins))
        if change is not None:
            print(f"shop {shop.name} profile: {_profile_line(shop)}")
    return 0


def cmd_shop_pause(args: argparse.Namespace, cli: Cli) -> int:
    if (args.name is None) == (args.shops is None):
        raise InvalidInput("NAME", "give a shop's name or --shops SELECTOR (not both)")
    names = [args.name] if args.name is not None else [
        s.name for s in picked_shops(cli, args.shops)]
    for name in names:
        shop = cli.store.set_shop_paused(name, args.cmd == "pause")
        print(f"shop {shop.name} {'paused' if shop.paused else 'resumed'}")
    return 0


def cmd_shop_tag(args: argparse.Namespace, cli: Cli) -> int:
    """``shop tag NAME TAG…`` / ``shop untag NAME TAG…``, or ``--shops SELECTOR TAG…`` for
    every picked shop (tags are checked before the store is touched: a bad one names ``TAG``,
    nothing written)."""
    tags = list(args.tags)
    names: list[str]
    if args.shops is not None:
        if args.name is not None:  # argparse gave the first tag to the optional NAME
            tags.insert(0, args.name)
        normalize_tags(tags, field="TAG")
        names = [s.name for s in picked_shops(cli, args.shops)]
    else:
        if args.name is None:
            raise InvalidInput("NAME", "give a shop's name or --shops SELECTOR")
        normalize_tags(tags, field="TAG")
        names = [args.name]
    change = {"add": tags} if args.cmd == "tag" else {"remove": tags}
    shops = [cli.store.retag_shop(name, **change) for name in names]
    if cli.json:
        cli.out(shop_json(shops[0]) if args.shops is None else [shop_json(s) for s in shops])
    else:
        for shop in shops:
            print(f"shop {shop.name} tags: {' '.join(shop.tags) or '(none)'}")
    return 0


def cmd_shop_set_password(args: argparse.Namespace, cli: Cli) -> int:
    from ..secrets import open_vault_for, save_password

    store = cli.store
    store.shop(args.name)
    # The key is checked against the store's before a password is read: on a fleet, a
    # machine without the right key must not encrypt a shared password with another one.
    vault = open_vault_for(store)
    if args.stdin or not sys.stdin.isatty():
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        import getpass

        password = getpass.getpass(f"password for shop {args.name}: ")
    if not password:
        raise InvalidInput("password", "is empty")
    save_password(store, args.name, password, vault=vault)
    print(f"password of shop {args.name} saved (encrypted)")
    return 0


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("shops", parents=[common], help="list shops")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--shops", metavar="SELECTOR",
                   help="only the shops a selector picks (platform:pdd, tag:north, pdd-*)")
    p.set_defaults(handler=cmd_shops, readonly=True)

    shop = sub.add_parser("shop", parents=[common], help="add or change a shop")
    shop_sub = shop.add_subparsers(dest="cmd", metavar="ACTION", required=True)
    p = shop_sub.add_parser("add", parents=[common], help="register a shop")
    p.add_argument("name")
    p.add_argument("--platform", required=True, help="pdd, temu, tiktok, …")
    p.add_argument("--base-url", required=True, help="the shop's seller-centre URL")
    p.add_argument("--username", help="login name (flows use {shop.username})")
    p.add_argument("--allow-origin", action="append", metavar="URL",
                   help="another origin its tasks may load (repeatable; http/https only)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_profile_options(p)
    p.set_defaults(handler=cmd_shop_add)
    p = shop_sub.add_parser("set", parents=[common],
                            help="set the origins a shop's tasks may load besides its own, "
                                 "and its profile (proxy, locale, time zone, …)")
    p.add_argument("name")
    p.add_argument("--allow-origin", nargs="*", metavar="URL",
                   help="the allowed origins (replaces the list; none clears it)")
    p.add_argument("--json", action="store_true", help="print JSON")
    _add_profile_options(p)
    p.set_defaults(handler=cmd_shop_set)
    p = shop_sub.add_parser("set-password", parents=[common],
                            help="store the shop's password, encrypted (prompt or stdin)")
    p.add_argument("name")
    p.add_argument("--stdin", action="store_true", help="read the password from stdin")
    p.set_defaults(handler=cmd_shop_set_password)
    shop_check.register_action(shop_sub, common)  # --- #17 shop profiles: shop check
    for verb in ("pause", "resume"):
        p = shop_sub.add_parser(verb, parents=[common], help=f"{verb} a shop's tasks")
        p.add_argument("name", nargs="?")
        p.add_argument("--shops", metavar="SELECTOR", help="every shop a selector picks")
        p.set_defaults(handler=cmd_shop_pause)
    for verb, what in (("tag", "add tags to a shop"), ("untag", "remove tags from a shop")):
        p = shop_sub.add_parser(verb, parents=[common], help=what,
                                usage=f"shopfleet shop {verb} (NAME | --shops SELECTOR) TAG "
                                      "[TAG ...]")
        p.add_argument("name", nargs="?", metavar="NAME")
        p.add_argument("tags", nargs="+", metavar="TAG")
        p.add_argument("--shops", metavar="SELECTOR",
                       help="every shop a selector picks (instead of NAME)")
        p.add_argument("--json", action="store_true", help="print JSON")
        p.set_defaults(handler=cmd_shop_tag)
