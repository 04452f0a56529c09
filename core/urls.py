"""Store URLs: the one place that hides their secrets and adds the Redis password.

Every store URL ShopFleet prints (``status``, ``migrate``, the worker banner, logs, the console's
status bar) goes through :func:`public_url`. It drops the password in every form it can take —
``redis://:pw@host``, ``redis://user:pw@host``, ``?password=pw`` (and ``pass``, ``auth``,
``token``, ``secret`` …) — and never echoes a URL of a scheme it does not know: only its scheme.

``SHOPFLEET_REDIS_PASSWORD`` is read in one place, :func:`with_env_password`.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

KNOWN_SCHEMES = ("redis", "rediss", "unix")
SECRET_QUERY_KEYS = frozenset({"password", "passwd", "pass", "pwd", "auth", "token", "secret",
                               "access_token", "api_key", "apikey", "key", "credentials"})
"""Query parameters whose value is a secret (compared lowercase)."""
REDIS_PASSWORD_ENV = "SHOPFLEET_REDIS_PASSWORD"


def public_url(url: str) -> str:
    """``url`` as it may be printed: no password anywhere in it.

    ``sqlite:PATH`` and file paths come back as they are; Redis URLs without the password
    of their user part and without secret query values; anything else only as
    ``scheme://…`` (an unknown scheme may keep a secret where we would not look).
    """
    if not url:
        return url
    if url.startswith("sqlite:"):
        return url
    if "://" not in url:  # a file path (also C:\…); one with an "@" may hide a secret
        return url if "@" not in url else "(hidden URL)"
    try:
        parts = urlsplit(url)
        scheme = parts.scheme.lower()
        if scheme not in KNOWN_SCHEMES:
            return f"{scheme}://…" if scheme.isascii() and scheme.isalnum() else "(hidden URL)"
        host = parts.hostname or ""
        if ":" in host:  # an IPv6 address
            host = f"[{host}]"
        if parts.port is not None:
            host = f"{host}:{parts.port}"
        user = parts.username or ""
        netloc = f"{quote(user, safe='')}@{host}" if user else host
        query = urlencode([(k, "***" if k.lower() in SECRET_QUERY_KEYS else v)
                           for k, v in parse_qsl(parts.query, keep_blank_values=True)],
                          safe="*")
        # by hand: urlunsplit drops the "//" of unix:///path when there is no host
        return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")
    except ValueError:  # a port out of range, an unbalanced bracket: say nothing of it
        return "(hidden URL)"


def with_env_password(url: str) -> str:
    """``url`` with ``SHOPFLEET_REDIS_PASSWORD`` put in, when the URL has no password of its
    own (neither ``:pw@`` nor ``?password=``); the URL unchanged otherwise. Never print it."""
    password = os.environ.get(REDIS_PASSWORD_ENV)
    if not password:
        return url
    parts = urlsplit(url)
    if parts.password is not None or any(
            k.lower() == "password" for k, _ in parse_qsl(parts.query)):
        return url
    if parts.hostname:
        user = quote(parts.username, safe="") if parts.username else ""
        host = parts.netloc.rpartition("@")[2]
        netloc = f"{user}:{quote(password, safe='')}@{host}"
        return urlunsplit(parts._replace(netloc=netloc))
    # unix:///path/redis.sock: the password goes in the query
    sep = "&" if parts.query else ""
    return urlunsplit(parts._replace(query=f"{parts.query}{sep}"
                                     f"{urlencode({'password': password})}"))
