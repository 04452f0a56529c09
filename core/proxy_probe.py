"""Is the shop's proxy to blame? (#17) Chromium's errors that name the proxy, and a probe
of the proxy itself — what the engine uses to tell a dead proxy (the shop's own trouble) from
the site's, and what ``shop check`` reports."""

from __future__ import annotations

from urllib.parse import urlsplit

from .profiles import ContextOptions

PROXY_ERROR_CODES = ("ERR_PROXY_", "ERR_TUNNEL_", "ERR_SOCKS_", "ERR_NO_SUPPORTED_PROXIES",
                     "ERR_MANDATORY_PROXY_CONFIGURATION_FAILED")
"""Chromium's net errors that name the proxy itself (refused, auth, tunnel, SOCKS)."""


def names_the_proxy(message: str) -> bool:
    """Does a browser error say that the proxy (not the site) failed?"""
    return any(code in message for code in PROXY_ERROR_CODES)


async def probe_proxy(options: ContextOptions, target_url: str, *,
                      timeout_s: float = 5.0) -> str | None:
    """Ask the shop's proxy for ``target_url`` once; None when it answers (any HTTP status
    line: the proxy works, whatever the site says), else why not (refused, timed out, closed).

    For a SOCKS5 proxy the greeting is checked instead. Never raises; never blocks the loop.
    """
    import asyncio
    import base64
    import ssl

    if not options.proxy_server:
        return None
    parts = urlsplit(options.proxy_server)
    scheme = parts.scheme
    host = parts.hostname or ""
    port = parts.port or {"http": 80, "https": 443, "socks5": 1080}[scheme]
    writer = None
    try:
        async def talk() -> str | None:
            nonlocal writer
            ctx = ssl.create_default_context() if scheme == "https" else None
            reader, writer = await asyncio.open_connection(host, port, ssl=ctx)
            if scheme == "socks5":
                writer.write(b"\x05\x01\x00")
                await writer.drain()
                reply = await reader.readexactly(2)
                return None if reply[:1] == b"\x05" else "answered, but not as a SOCKS5 proxy"
            target = urlsplit(target_url)
            req = (f"HEAD {target_url} HTTP/1.1\r\nHost: {target.netloc}\r\n"
                   "Connection: close\r\n")
            if options.proxy_username:
                token = base64.b64encode(
                    f"{options.proxy_username}:{options.proxy_password}".encode()).decode()
                req += f"Proxy-Authorization: Basic {token}\r\n"
            writer.write((req + "\r\n").encode("latin-1", "replace"))
            await writer.drain()
            line = await reader.readline()
            if not line.startswith(b"HTTP/"):
                return "closed the connection without an answer"
            status = line.split(b" ", 2)[1:2]
            if status == [b"407"]:
                return "refused the user name or password (407)"
            return None

        return await asyncio.wait_for(talk(), timeout_s)
    except TimeoutError:
        return f"did not answer within {timeout_s:g}s"
    except (OSError, asyncio.IncompleteReadError, ssl.SSLError) as exc:
        return f"{type(exc).__name__}: {exc}"[:200]
    finally:
        if writer is not None:
            writer.close()
