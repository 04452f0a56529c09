"""Helpers for the trust-boundary tests: every encoding of a secret, and where to look.

The encodings are written out here on their own (not taken from ``core.flows.evidence``), so
a form the redaction forgets makes these tests fail.
"""

from __future__ import annotations

import html
import http.server
import json
import re
import threading
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

SECRET = "p~ss\"w'<&> /x+Z9"
"""A password with every character some encoding changes."""


def _pct_all(s: str) -> str:
    return "".join(f"%{b:02X}" for b in s.encode())


def _pct_non_alnum(s: str) -> str:
    return "".join(c if c.isascii() and c.isalnum() else _pct_all(c) for c in s)


def all_encodings(secret: str = SECRET) -> list[str]:
    """The secret raw, HTML-escaped (named, decimal and hex references), URL-encoded
    (quote, quote_plus, every non-alphanumeric byte, every byte), JSON-escaped and as
    ``\\uXXXX``; hex digits are matched in either case by :func:`leaks`."""
    named = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#x27;"}
    forms = {
        secret,
        html.escape(secret), html.escape(secret, quote=False),
        html.escape(secret).replace("&#x27;", "&#39;"),
        "".join(named.get(c, c) for c in secret).replace("&#x27;", "&apos;"),
        "".join(f"&#{ord(c)};" if c in named else c for c in secret),
        "".join(f"&#x{ord(c):x};" if c in named else c for c in secret),
        "".join(f"&#{ord(c)};" for c in secret),
        "".join(f"&#x{ord(c):x};" for c in secret),
        quote(secret), quote(secret, safe=""), quote_plus(secret), quote_plus(secret, safe=""),
        _pct_non_alnum(secret), _pct_non_alnum(secret).replace("%20", "+"), _pct_all(secret),
        json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
        "".join(f"\\u{ord(c):04x}" for c in secret),
    }
    return sorted(forms, key=len, reverse=True)


def leaks(text: str | bytes, secret: str = SECRET) -> bool:
    """Does the text hold the secret in any of :func:`all_encodings` (hex in either case)?"""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    pattern = "|".join(re.escape(f) for f in all_encodings(secret))
    return re.search(pattern, text, re.IGNORECASE) is not None


def files_leaking(folder: Path, secret: str = SECRET) -> list[Path]:
    """Every file under ``folder`` whose bytes hold the secret in any encoding."""
    return [p for p in folder.rglob("*") if p.is_file() and leaks(p.read_bytes(), secret)]


class Listener:
    """An HTTP server on 127.0.0.1 that records every request (path, headers, body)."""

    def __init__(self, pages: dict[str, tuple[int, dict[str, str], str]]) -> None:
        self.seen: list[str] = []
        self.pages = pages
        outer = self

        class H(http.server.BaseHTTPRequestHandler):
            def _any(self) -> None:
                n = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(n).decode("utf-8", "replace") if n else ""
                outer.seen.append(f"{self.command} {self.path}\n{self.headers}\n{body}")
                path = self.path.split("?")[0]
                status, headers, html = outer.pages.get(path, (200, {}, "<p>ok</p>"))
                data = html.replace("ATTACKER", outer.attacker).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                for k, v in headers.items():
                    self.send_header(k, v.replace("ATTACKER", outer.attacker))
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _any

            def log_message(self, *a: Any) -> None:
                pass

        self.attacker = ""
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
