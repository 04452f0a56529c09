"""Placeholders in flows: ``{params.x}`` and ``{shop.x}``, checked at submission.

Any string field of a step (url, text, value, locator, path, key, if_visible, verify) and the
flow's ``start_url`` may hold placeholders. ``{{`` and ``}}`` stand for literal braces; any other
brace is an error, so a typo is caught when the task is submitted rather than typed into a shop.
Substitution is one pass: a parameter's value is inserted as it is, never expanded again.

``{shop.password}`` may only appear in a ``type_text`` step's ``text``: a password must go into
a field, never into a URL, a locator or a file path where it could leave the machine or a log.

``upload_file`` paths must resolve inside an asset folder (:func:`check_upload_path`).

URL fields (a ``navigate`` step's ``url``, the flow's ``start_url``) are filled with
:func:`resolve_url`: a ``{params.x}`` (or ``{shop.name}``…, all but ``{shop.base_url}``) is
percent-encoded as one path segment or one query value, so ``../``, ``?`` and ``#`` in a value
cannot change the page; a whole path segment of ``.`` or ``..`` is refused. When an
:class:`~core.origins.OriginPolicy` is given, :func:`check_flow` also resolves every URL field
and refuses one that is not a page of the shop's allowed origins.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..errors import SpecError
from ..origins import OriginPolicy
from ..paths import resources_dir
from .models import Flow, NavigateStep, Step, UploadFileStep, step_label

CREDENTIAL_FIELDS: frozenset[str] = frozenset({"username", "password"})
"""``{shop.x}`` fields that are credentials: typed only on the shop's login origin."""

SHOP_FIELDS: frozenset[str] = frozenset({"name", "platform", "base_url", "username", "password"})
"""The shop's fields a flow may use as ``{shop.x}``."""

NAMESPACES = ("params", "shop")

# Fields that are names or enums, never text sent anywhere: no placeholders there.
_NOT_TEMPLATED = frozenset({"action", "name", "into", "state", "write", "interruptible", "all",
                            "timeout_s"})

_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_\-]*\Z")


@dataclass(frozen=True)
class Placeholder:
    """One ``{namespace.key}`` occurrence."""

    namespace: str
    key: str

    def __str__(self) -> str:
        return "{" + f"{self.namespace}.{self.key}" + "}"


_Part = str | Placeholder


def parse_template(value: str) -> list[_Part]:
    """Split a string into literal text and placeholders.

    Raises:
        ValueError: a lone brace, an empty or malformed placeholder, an unknown namespace.
    """
    parts: list[_Part] = []
    buf: list[str] = []
    i, n = 0, len(value)
    while i < n:
        ch = value[i]
        if ch == "{":
            if value.startswith("{{", i):
                buf.append("{")
                i += 2
                continue
            end = value.find("}", i + 1)
            if end < 0:
                raise ValueError(f"unclosed '{{' at position {i} (write {{{{ for a literal brace)")
            inner = value[i + 1:end]
            ns, dot, key = inner.partition(".")
            if not dot or not _KEY.match(key) or "{" in inner:
                raise ValueError(
                    f"{{{inner}}} is not a placeholder: write {{params.NAME}} or {{shop.FIELD}}"
                    " ({{ and }} for literal braces)")
            if ns not in NAMESPACES:
                raise ValueError(
                    f"{{{inner}}}: unknown namespace {ns!r} (use params or shop)")
            if buf:
                parts.append("".join(buf))
                buf = []
            parts.append(Placeholder(ns, key))
            i = end + 1
        elif ch == "}":
            if value.startswith("}}", i):
                buf.append("}")
                i += 2
                continue
            raise ValueError(f"lone '}}' at position {i} (write }}}} for a literal brace)")
        else:
            buf.append(ch)
            i += 1
    if buf:
        parts.append("".join(buf))
    return parts


def _text(v: Any) -> str:
    return v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)


def resolve(value: str, params: Mapping[str, Any], shop: Mapping[str, Any]) -> str:
    """Substitute placeholders in one string.

    Args:
        value: the template.
        params: the task's parameters (non-strings are inserted as JSON: ``5``, ``true``).
        shop: the shop's fields (``name``, ``platform``, ``base_url``, ``username``,
            ``password``); a :class:`~core.flows.records.ShopInfo` gives them via
            ``placeholder_values()``.

    Raises:
        SpecError: a malformed template or a value that is not given.
    """
    try:
        parts = parse_template(value)
    except ValueError as exc:
        raise SpecError("placeholder", str(exc)) from None
    out: list[str] = []
    for part in parts:
        if isinstance(part, str):
            out.append(part)
            continue
        source = params if part.namespace == "params" else shop
        if part.key not in source or source[part.key] is None:
            raise SpecError("placeholder", f"{part} is not given")
        out.append(_text(source[part.key]))
    return "".join(out)


def resolve_url(value: str, params: Mapping[str, Any], shop: Mapping[str, Any]) -> str:
    """Substitute placeholders in a URL, percent-encoding every value but ``{shop.base_url}``.

    A value before any literal ``?`` is one path segment (``/`` is encoded too); after it, one
    query value; after ``#``, part of the fragment.

    Raises:
        SpecError: a malformed template, a value that is not given, or a value that makes a
            whole path segment ``.`` or ``..``.
    """
    try:
        parts = parse_template(value)
    except ValueError as exc:
        raise SpecError("placeholder", str(exc)) from None
    out: list[str] = []
    where = "path"
    for k, part in enumerate(parts):
        if isinstance(part, str):
            out.append(part)
            if "#" in part:
                where = "fragment"
            elif "?" in part and where == "path":
                where = "query"
            continue
        source = params if part.namespace == "params" else shop
        if part.key not in source or source[part.key] is None:
            raise SpecError("placeholder", f"{part} is not given")
        text = _text(source[part.key])
        if part.namespace == "shop" and part.key == "base_url":
            out.append(text)
            continue
        if where == "path" and text in (".", ".."):
            before = "".join(out)
            after = parts[k + 1] if k + 1 < len(parts) else ""
            if (before.endswith("/") or not before) and (
                    not isinstance(after, str) or after[:1] in ("", "/", "?", "#")):
                raise SpecError("placeholder", f"{part} is {text!r}, which would change the "
                                "page's path")
        out.append(quote(text, safe=""))
    return "".join(out)


def url_fields(flow: Flow) -> Iterator[tuple[str, str]]:
    """(field path, template) of every URL a flow loads: ``start_url`` and navigate URLs."""
    # Steps first: an inline flow's start_url is its first navigate's URL, named as the step.
    for i, step in enumerate(flow.steps):
        if isinstance(step, NavigateStep):
            yield f"{step_label(i, step)}.url", step.url
    yield "start_url", flow.start_url


def uses_credentials(value: str) -> frozenset[str]:
    """The credential fields (``username``, ``password``) a template uses."""
    try:
        parts = parse_template(value)
    except ValueError:
        return frozenset()
    return frozenset(p.key for p in parts if isinstance(p, Placeholder)
                     and p.namespace == "shop" and p.key in CREDENTIAL_FIELDS)


def _templated_fields(obj: Any, prefix: str) -> Iterator[tuple[str, str, str]]:
    """(field path, field name, value) of every string a placeholder may live in."""
    for fname in type(obj).model_fields:
        if fname in _NOT_TEMPLATED:
            continue
        v = getattr(obj, fname)
        if isinstance(v, str):
            yield f"{prefix}.{fname}", fname, v
        elif v is not None and hasattr(type(v), "model_fields"):
            yield from _templated_fields(v, f"{prefix}.{fname}")


def step_fields(index: int, step: Step) -> Iterator[tuple[str, str, str]]:
    """The templated string fields of one step, with ``steps[1] (type_text).text`` paths."""
    yield from _templated_fields(step, step_label(index, step))


def check_flow(flow: Flow, *, params: Mapping[str, Any], shop_fields: set[str] | frozenset[str],
               asset_dirs: Sequence[Path] | None = None,
               shop: Mapping[str, Any] | None = None,
               origins: OriginPolicy | None = None,
               allow_credentials: bool = True) -> None:
    """Check every placeholder of a flow against what the task and the shop give.

    Called when a task is submitted, so a missing parameter is refused then and not found in
    the middle of a run.

    Args:
        flow: the flow the task names (or its inline steps).
        params: the task's parameters.
        shop_fields: the shop fields that have a value (a subset of :data:`SHOP_FIELDS`).
        asset_dirs: when given, every ``upload_file`` path is also resolved and checked with
            :func:`check_upload_path` (paths using ``{shop.x}`` need ``shop`` for that).
        shop: the shop's values, for resolving upload paths and URLs.
        origins: when given (with ``shop``), every URL field is resolved and must be a page
            of these origins (``steps[0] (navigate).url: origin http://… is not the shop's…``).
        allow_credentials: False for inline steps (unless ``[security] inline_credentials``):
            ``{shop.username}``/``{shop.password}`` are refused.

    Raises:
        SpecError: e.g. ``steps[1] (type_text).text: placeholder {params.reply} is not given by
            the task``.
    """
    fields: list[tuple[str, str, str]] = [("start_url", "start_url", flow.start_url)]
    for i, step in enumerate(flow.steps):
        fields.extend(step_fields(i, step))
    for path, _fname, value in fields:
        try:
            parts = parse_template(value)
        except ValueError as exc:
            raise SpecError(path, str(exc)) from None
        for part in parts:
            if isinstance(part, str):
                continue
            if part.namespace == "params":
                if part.key not in params:
                    raise SpecError(path, f"placeholder {part} is not given by the task")
                continue
            if part.key not in SHOP_FIELDS:
                raise SpecError(path, f"placeholder {part}: shops have no field {part.key!r} "
                                f"(one of: {', '.join(sorted(SHOP_FIELDS))})")
            if part.key == "password" and not path.endswith("(type_text).text"):
                raise SpecError(path, f"placeholder {part} may only be used as the text of a "
                                "type_text step")
            if part.key in CREDENTIAL_FIELDS and not allow_credentials:
                raise SpecError(path, f"placeholder {part}: inline steps may not use the "
                                "shop's credentials (use a registered flow, or set [security] "
                                "inline_credentials = true)")
            if part.key not in shop_fields:
                raise SpecError(path, f"placeholder {part}: the shop has no {part.key}")
    if origins is not None and shop is not None:
        for path, template in url_fields(flow):
            try:
                url = resolve_url(template, params, shop)
            except SpecError as exc:
                raise SpecError(path, exc.reason) from None
            reason = origins.why_not(url)
            if reason is not None:
                raise SpecError(path, reason)
    if asset_dirs is None:
        return
    for i, step in enumerate(flow.steps):
        if not isinstance(step, UploadFileStep):
            continue
        if shop is None and any(isinstance(p, Placeholder) and p.namespace == "shop"
                                for p in parse_template(step.path)):
            continue  # resolved and checked when the task runs
        where = f"{step_label(i, step)}.path"
        try:
            value = resolve(step.path, params, shop or {})
        except SpecError as exc:
            raise SpecError(where, exc.reason) from None
        check_upload_path(value, asset_dirs, field=where)


def default_asset_dirs(configured: Sequence[str | Path] = ()) -> list[Path]:
    """The folders ``upload_file`` may read from: ``[assets] dirs`` plus the demo site's assets."""
    dirs = [Path(d).expanduser() for d in configured]
    dirs.append(resources_dir() / "demo_site" / "assets")
    return dirs


def check_upload_path(path: str | Path, asset_dirs: Sequence[Path], *,
                      field: str = "path") -> Path:
    """Resolve an upload path to a file inside one of the asset folders.

    A relative path is looked up in each folder in order; an absolute one must lie inside one.
    The check is made on the fully resolved path, so ``..`` and symlinks cannot lead outside.
    This touches the file system: call it off the event loop (``asyncio.to_thread``).

    Returns:
        The resolved path of an existing file.

    Raises:
        SpecError: the path is outside every asset folder, or no such file.
    """
    if isinstance(path, str) and any(ord(c) < 32 or ord(c) == 127 for c in path):
        raise SpecError(field, "holds a NUL byte or another control character")
    raw = Path(path).expanduser()
    roots: list[Path] = []
    for d in asset_dirs:
        try:
            roots.append(Path(d).resolve(strict=True))
        except OSError:
            continue  # a configured folder that does not exist holds no files
    if not roots:
        raise SpecError(field, "no asset folder exists (set [assets] dirs in the configuration)")
    candidates = [raw.resolve()] if raw.is_absolute() else [(r / raw).resolve() for r in roots]
    outside = True
    for cand in candidates:
        if not any(cand.is_relative_to(r) for r in roots):
            continue
        outside = False
        if cand.is_file():
            return cand
    folders = ", ".join(str(r) for r in roots)
    if outside:
        raise SpecError(field, f"{str(path)!r} is outside the asset folders ({folders})")
    raise SpecError(field, f"no file {str(path)!r} in the asset folders ({folders})")
