"""Helpers for the trust-boundary tests: every encoding of a secret, and where to look."""

from __future__ import annotations

from pathlib import Path

from core.flows.evidence import contains_secret, secret_forms

SECRET = "p~ss\"w'<&> /x+Z9"
"""A password with every character some encoding changes."""


def all_encodings(secret: str = SECRET) -> list[str]:
    """Every form of the secret the tests search for (the redaction helper's own list)."""
    return secret_forms(secret)


def leaks(text: str | bytes, secret: str = SECRET) -> bool:
    """Does the text hold the secret in any encoding (hex digits in either case)?"""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return contains_secret(text, [secret])


def files_leaking(folder: Path, secret: str = SECRET) -> list[Path]:
    """Every file under ``folder`` whose bytes hold the secret in any encoding."""
    return [p for p in folder.rglob("*") if p.is_file() and leaks(p.read_bytes(), secret)]
