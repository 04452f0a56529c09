"""Evidence of a failed run, for the person who answers the ticket.

Files written into the attempt's evidence folder:

* ``screenshot.png`` — the page as it was (missing when the page had crashed);
* ``dom.html`` — the page's HTML with every password field's value, every value of an input
  whose name, id or autocomplete looks secret (password, token, secret, otp, card, cvv/cvc)
  and every occurrence of the shop's password replaced by ``[redacted]``;
* ``console.log`` — the browser console messages seen during the run (secrets redacted);
* ``steps.json`` — each step run (index, action, name, status, duration_ms, error), the failure,
  and what could not be captured and why.

Capture is bounded in time and never raises: a crashed page cannot be screenshotted, and that
is written down instead of hiding the error that ended the run.

Screenshots mask every ``<input type=password>`` and every field a credential was typed into.
Files are written 0600 into folders made 0700, never through a symlink: the evidence folder
and every folder under it must be real folders, and files are opened with ``O_NOFOLLOW``.

:func:`secret_forms` lists a secret in every encoding it may take on its way into a page, a
URL or a JSON text; :func:`redact_text` and :func:`redact_value` remove all of them.
"""

from __future__ import annotations

import asyncio
import functools
import html
import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import quote, quote_plus

REDACTED = "[redacted]"

_SECRET_NAME = re.compile(r"pass|pwd|token|secret|otp|card|cvv|cvc|one-time-code", re.I)
_INPUT_TAG = re.compile(r"<input\b(?:\"[^\"]*\"|'[^']*'|[^'\">])*>", re.I)
_VALUE_ATTR = re.compile(r"(\svalue\s*=\s*)(\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+)", re.I)


class _TagAttrs(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.attrs: dict[str, str] = {}

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.attrs = {k.lower(): (v or "") for k, v in attrs}

    handle_startendtag = handle_starttag


def _is_secret_input(tag_text: str) -> bool:
    parser = _TagAttrs()
    parser.feed(tag_text)
    parser.close()
    a = parser.attrs
    if a.get("type", "").lower() == "password":
        return True
    return any(_SECRET_NAME.search(a.get(k, "")) for k in ("name", "id", "autocomplete"))


_HTML_SPECIAL = {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&apos;"}


def _ref(ch: str, kind: str) -> str:
    """One character as an HTML reference of a kind (named, dec, hex, hex4)."""
    n = ord(ch)
    if kind == "named":
        return _HTML_SPECIAL.get(ch, ch)
    return {"dec": f"&#{n};", "hex": f"&#x{n:x};", "hex4": f"&#x{n:04x};"}[kind]


def _pct(ch: str) -> str:
    return "".join(f"%{b:02X}" for b in ch.encode("utf-8", "surrogatepass"))


def _uescape(s: str) -> str:
    out = []
    for ch in s:
        n = ord(ch)
        if n > 0xFFFF:
            n -= 0x10000
            out.append(f"\\u{0xD800 + (n >> 10):04x}\\u{0xDC00 + (n & 0x3FF):04x}")
        else:
            out.append(f"\\u{n:04x}")
    return "".join(out)


def secret_forms(secret: str) -> list[str]:
    """Every encoding of ``secret`` ShopFleet searches for (case of hex digits aside: the
    search ignores case): raw; HTML-escaped (named, decimal and hex references, for the
    special characters or for every character); URL-encoded (``quote`` with and without
    ``/`` safe, ``quote_plus``); JSON string bodies (``ensure_ascii`` on and off); every
    character as ``\\uXXXX``. Longest first."""
    if not secret:
        return []
    forms = {secret, html.escape(secret, quote=True), html.escape(secret, quote=False),
             quote(secret, safe=""), quote(secret), quote_plus(secret), quote_plus(secret, safe=""),
             json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1],
             _uescape(secret), quote(quote(secret, safe=""), safe="")}
    # Percent-encoding of every byte that is not an ASCII letter or digit (``~`` → ``%7E``,
    # which quote() leaves alone), with a space as %20 or +; and of every byte.
    pct = "".join(c if c.isascii() and c.isalnum() else _pct(c) for c in secret)
    forms.update({pct, pct.replace("%20", "+"), "".join(_pct(c) for c in secret)})
    # Only the characters HTML must escape, in each reference form; and every character.
    for kind in ("named", "dec", "hex", "hex4"):
        forms.add("".join(_ref(ch, kind) if ch in _HTML_SPECIAL else ch for ch in secret))
        if kind != "named":
            forms.add("".join(_ref(ch, kind) for ch in secret))
    forms.add(html.escape(secret, quote=True).replace("&#x27;", "&#39;"))
    forms.add(html.escape(secret, quote=True).replace("&quot;", "&#34;").replace("&#x27;",
                                                                                  "&#39;"))
    return sorted((f for f in forms if f), key=len, reverse=True)


def _secret_pattern(secrets: Sequence[str]) -> re.Pattern[str] | None:
    return _pattern_for(tuple(s for s in secrets if s))


@functools.lru_cache(maxsize=64)
def _pattern_for(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    forms: set[str] = set()
    for s in secrets:
        forms.update(secret_forms(s))
    if not forms:
        return None
    ordered = sorted(forms, key=len, reverse=True)
    return re.compile("|".join(re.escape(f) for f in ordered), re.IGNORECASE)


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """Replace every occurrence of each secret, in every form :func:`secret_forms` lists, by
    ``[redacted]``."""
    pattern = _secret_pattern(secrets)
    return text if pattern is None else pattern.sub(REDACTED, text)


def redact_value(value: Any, secrets: Sequence[str]) -> Any:
    """A copy of a JSON-like value (results, checkpoints) with every string redacted."""
    if not any(secrets):
        return value
    if isinstance(value, str):
        return redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {redact_text(str(k), secrets): redact_value(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact_value(v, secrets) for v in value]
    return value


def contains_secret(text: str, secrets: Sequence[str]) -> bool:
    """Does ``text`` hold any of the secrets in any form :func:`secret_forms` lists?"""
    pattern = _secret_pattern(secrets)
    return pattern is not None and pattern.search(text) is not None


def redact_html(page_html: str, secrets: Sequence[str] = ()) -> str:
    """The page's HTML with secret input values and the given secrets redacted."""

    def scrub(m: re.Match[str]) -> str:
        tag = m.group(0)
        if not _is_secret_input(tag):
            return tag
        return _VALUE_ATTR.sub(lambda v: f'{v.group(1)}"{REDACTED}"', tag)

    return redact_text(_INPUT_TAG.sub(scrub, page_html), secrets)


_O_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_O_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_PART = re.compile(r"[A-Za-z0-9_.\-]{1,128}\Z")


def _private_dir(path: Path) -> None:
    # os.makedirs gives intermediate folders the default mode: make each missing one 0700.
    missing: list[Path] = []
    p = path
    while not os.path.lexists(p) and p != p.parent:
        missing.append(p)
        p = p.parent
    for d in reversed(missing):
        try:
            os.mkdir(d, 0o700)
        except FileExistsError:
            pass
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise OSError(f"{path} is a symlink or not a folder; evidence is not written through it")


def write_evidence(folder: Path, name: str, data: bytes) -> Path:
    """Write one evidence file ``folder/name`` (``name`` may hold one sub-folder, as in
    ``screenshots/step-003.png``): folders 0700, the file 0600, never through a symlink, and
    the resolved path must lie inside ``folder``. Blocking: call it off the event loop.

    Raises:
        OSError: a part of the path is a symlink, or the name leads outside ``folder``.
    """
    parts = name.split("/")
    if not parts or any(not _PART.match(p) or p in (".", "..") for p in parts):
        raise OSError(f"{name!r} is not a plain evidence file name")
    _private_dir(folder)
    d = folder
    for p in parts[:-1]:
        d = d / p
        _private_dir(d)
    path = d / parts[-1]
    root = os.path.realpath(folder)
    if os.path.commonpath([root, os.path.realpath(d)]) != root:
        raise OSError(f"{name!r} leads outside the evidence folder")
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | _O_NOFOLLOW | _O_CLOEXEC, 0o600)
    try:
        if hasattr(os, "fchmod"):
            os.fchmod(fd, 0o600)
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)
    return path


async def capture_evidence(page: Any, evidence_dir: Path, *, steps: Sequence[Mapping[str, Any]],
                           console: Sequence[str], secrets: Sequence[str],
                           failure: Mapping[str, Any], page_usable: bool,
                           timeout_s: float = 10.0,
                           mask: Sequence[str] = ()) -> dict[str, str]:
    """Write the evidence files; return ``{"screenshot": path, "dom": …, "console": …,
    "steps": …}`` for the files written, plus ``"notes"`` saying what is missing and why.

    Never raises (except on cancellation); each browser call is bounded by ``timeout_s``.
    ``mask``: locators of fields a credential was typed into (password inputs are always
    masked).
    """
    evidence: dict[str, str] = {}
    notes: dict[str, str] = {}
    budget = max(0.5, timeout_s)

    async def save(key: str, name: str, data: bytes) -> None:
        try:
            path = await asyncio.to_thread(write_evidence, evidence_dir, name, data)
            evidence[key] = str(path)
        except OSError as exc:
            notes[name] = f"could not write: {exc.strerror or exc}"

    if page_usable:
        try:
            async with asyncio.timeout(budget):
                png = await page.screenshot(timeout=budget * 1000,
                                            mask=mask_locators(page, mask))
            await save("screenshot", "screenshot.png", png)
        except Exception as exc:  # evidence must never hide the failure it documents
            notes["screenshot.png"] = f"not captured: {_first_line(exc)}"
        try:
            async with asyncio.timeout(budget):
                dom = await page.content()
            await save("dom", "dom.html", redact_html(dom, secrets).encode("utf-8"))
        except Exception as exc:
            notes["dom.html"] = f"not captured: {_first_line(exc)}"
    else:
        notes["screenshot.png"] = "not captured: the page had crashed or was closed"
        notes["dom.html"] = "not captured: the page had crashed or was closed"

    log = "".join(redact_text(line, secrets).rstrip("\n") + "\n" for line in console)
    await save("console", "console.log", log.encode("utf-8"))
    doc = {"failure": dict(failure), "steps": list(steps), "not_captured": notes}
    text = json.dumps(doc, ensure_ascii=False, indent=1, default=str)
    await save("steps", "steps.json", redact_text(text, secrets).encode("utf-8"))
    if notes:
        evidence["notes"] = "; ".join(f"{k}: {v}" for k, v in notes.items())
    return evidence


PASSWORD_FIELDS = "input[type=password i]"


def mask_locators(page: Any, typed: Sequence[str]) -> list[Any]:
    """Locators a screenshot masks: every password input and every field a credential was
    typed into."""
    return [page.locator(PASSWORD_FIELDS), *(page.locator(sel) for sel in dict.fromkeys(typed))]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
