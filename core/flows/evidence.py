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
"""

from __future__ import annotations

import asyncio
import html
import json
import re
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


def _secret_forms(secrets: Sequence[str]) -> list[str]:
    forms: set[str] = set()
    for s in secrets:
        if not s:
            continue
        forms.update({s, html.escape(s, quote=True), html.escape(s, quote=False), quote(s, safe=""),
                      quote_plus(s)})
    # Longest first so a secret that contains another is replaced whole.
    return sorted(forms, key=len, reverse=True)


def redact_text(text: str, secrets: Sequence[str]) -> str:
    """Replace every occurrence of each secret (also HTML- and URL-escaped) by ``[redacted]``."""
    for form in _secret_forms(secrets):
        text = text.replace(form, REDACTED)
    return text


def redact_html(page_html: str, secrets: Sequence[str] = ()) -> str:
    """The page's HTML with secret input values and the given secrets redacted."""

    def scrub(m: re.Match[str]) -> str:
        tag = m.group(0)
        if not _is_secret_input(tag):
            return tag
        return _VALUE_ATTR.sub(lambda v: f'{v.group(1)}"{REDACTED}"', tag)

    return redact_text(_INPUT_TAG.sub(scrub, page_html), secrets)


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


async def capture_evidence(page: Any, evidence_dir: Path, *, steps: Sequence[Mapping[str, Any]],
                           console: Sequence[str], secrets: Sequence[str],
                           failure: Mapping[str, Any], page_usable: bool,
                           timeout_s: float = 10.0) -> dict[str, str]:
    """Write the evidence files; return ``{"screenshot": path, "dom": …, "console": …,
    "steps": …}`` for the files written, plus ``"notes"`` saying what is missing and why.

    Never raises (except on cancellation); each browser call is bounded by ``timeout_s``.
    """
    evidence: dict[str, str] = {}
    notes: dict[str, str] = {}
    budget = max(0.5, timeout_s)

    async def save(key: str, name: str, data: bytes) -> None:
        try:
            path = evidence_dir / name
            await asyncio.to_thread(_write, path, data)
            evidence[key] = str(path)
        except OSError as exc:
            notes[name] = f"could not write: {exc.strerror or exc}"

    if page_usable:
        try:
            async with asyncio.timeout(budget):
                png = await page.screenshot(timeout=budget * 1000)
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


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text.splitlines()[0][:300]
