"""Importing a list of shops from a CSV or XLSX file, with an error per row and field.

The file's first row names the columns: ``name``, ``platform``, ``base_url`` (required),
``username``, ``password``, ``allowed_origins`` and ``tags`` (optional; origins and tags
separated by spaces, commas or semicolons; tags as :func:`core.selectors.normalize_tag`
allows, #18), and the shop's profile (#17, optional): ``proxy``
(``http://user:password@host:port``; the password is stored encrypted), ``locale``,
``timezone``, ``user_agent``, ``viewport`` (``1366x768``), ``geolocation`` (``31.23,121.47``)
and ``headers`` (``Name: value; Name: value``), checked as ``shop add`` checks them.
Column names are matched without case and surrounding spaces; an unknown column is refused
(a typo such as ``pasword`` would otherwise drop every password).

:func:`read_shop_list` writes nothing: it returns the valid rows and the errors, each naming
its line and field, so the operator sees them all before deciding. :func:`import_shops` adds
the rows it is given (the valid ones, once confirmed). The console and ``shopfleet shop
import`` share both.

Every cell is hostile input: lengths are bounded, control characters refused, URLs must be
http(s) with a host, the file is read up to :data:`MAX_BYTES` and :data:`MAX_ROWS`.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .errors import InvalidInput
from .origins import normalise_origins
from .profiles import (
    PROFILE_COLUMNS,
    ProfileChange,
    ProfileInput,
    ShopProfile,
    parse_profile_fields,
    profile_input_from_row,
)
from .selectors import normalize_tags

if TYPE_CHECKING:
    from .store.base import Store

COLUMNS = ("name", "platform", "base_url", "username", "password", "allowed_origins", "tags",
           *PROFILE_COLUMNS)
"""The columns a shop list may have, in the order a template shows them."""
REQUIRED = ("name", "platform", "base_url")
MAX_BYTES = 20_000_000
MAX_ROWS = 10_000
MAX_LEN = {"name": 200, "platform": 64, "base_url": 2000, "username": 200, "password": 500,
           "allowed_origins": 4000, "tags": 2000, "proxy": 2000, "locale": 64, "timezone": 64,
           "user_agent": 512, "viewport": 32, "geolocation": 64, "headers": 4000}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class ShopImportRow:
    """A valid row: a shop to add. ``line`` is the file's line (the header is line 1)."""

    line: int
    name: str
    platform: str
    base_url: str
    username: str = ""
    password: str = field(default="", repr=False)
    allowed_origins: tuple[str, ...] = ()
    tags: tuple[str, ...] = ()
    profile: ProfileChange | None = None
    """#17: its profile (checked; the proxy's password apart, never in ``repr``)."""

    @property
    def has_password(self) -> bool:
        return bool(self.password)


@dataclass(frozen=True)
class RowError:
    """Why a row (or, with ``line`` 1, the header) cannot be imported."""

    line: int
    field: str
    reason: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.field}: {self.reason}"


@dataclass(frozen=True)
class ShopImport:
    """What a shop list holds: the rows that can be added and the errors of the others."""

    rows: list[ShopImportRow]
    errors: list[RowError]

    @property
    def without_password(self) -> list[str]:
        """Valid rows that bring no password (flagged in the console, not refused)."""
        return [r.name for r in self.rows if not r.has_password]


def read_shop_list(path: str | Path, *, existing: Collection[str] = ()) -> ShopImport:
    """Read and check a shop list (``.csv`` or ``.xlsx``); nothing is written.

    Args:
        path: the file.
        existing: names of shops already registered (a row naming one is an error).

    Raises:
        InvalidInput: the file cannot be read at all (``file``), or is not CSV/XLSX.
    """
    p = Path(path)
    suffix = p.suffix.lower()
    try:
        size = p.stat().st_size
    except OSError as exc:
        raise InvalidInput("file", f"cannot read {p}: {exc.strerror or exc}") from None
    if size > MAX_BYTES:
        raise InvalidInput("file", f"{p.name} is {size:,} bytes (at most {MAX_BYTES:,})")
    if suffix == ".csv":
        table = _csv_rows(p)
    elif suffix == ".xlsx":
        table = _xlsx_rows(p)
    else:
        raise InvalidInput("file", f"{p.name}: a shop list is a .csv or .xlsx file")
    return check_shop_table(table, existing=existing)


def _csv_rows(p: Path) -> Iterator[list[str]]:
    try:
        text = p.read_bytes().decode("utf-8-sig")  # Excel writes a BOM
    except UnicodeDecodeError as exc:
        raise InvalidInput("file", f"{p.name} is not UTF-8 text (byte {exc.start}); save it "
                           "as 'CSV UTF-8'") from None
    try:
        yield from csv.reader(io.StringIO(text, newline=""))
    except csv.Error as exc:
        raise InvalidInput("file", f"{p.name} is not a readable CSV file: {exc}") from None


def _xlsx_rows(p: Path) -> Iterator[list[str]]:
    import zipfile

    from openpyxl import load_workbook

    try:
        wb = load_workbook(p, read_only=True, data_only=True)
    except (zipfile.BadZipFile, KeyError, ValueError, OSError) as exc:
        raise InvalidInput("file", f"{p.name} is not a readable XLSX file: {exc}") from None
    try:
        ws = wb.worksheets[0]
        for row in ws.iter_rows(values_only=True):
            yield ["" if v is None else str(v) for v in row]
    finally:
        wb.close()


def check_shop_table(table: Iterable[Sequence[Any]], *, existing: Collection[str] = ()
                     ) -> ShopImport:
    """Check rows whose first one is the header (see the module's docstring)."""
    it = iter(table)
    header = next(it, None)
    if header is None:
        raise InvalidInput("file", "is empty (the first row names the columns: "
                           + ", ".join(COLUMNS) + ")")
    names = [str(h).strip().lower().replace(" ", "_") for h in header]
    while names and not names[-1]:
        names.pop()  # trailing empty header cells (spreadsheets)
    errors: list[RowError] = []
    for i, n in enumerate(names):
        if n not in COLUMNS:
            errors.append(RowError(1, n or f"column {i + 1}",
                                   "unknown column (known: " + ", ".join(COLUMNS) + ")"))
        elif names.index(n) != i:
            errors.append(RowError(1, n, "column appears twice"))
    for n in REQUIRED:
        if n not in names:
            errors.append(RowError(1, n, "required column is missing"))
    if errors:
        return ShopImport([], errors)
    seen: dict[str, int] = {}
    taken = set(existing)
    rows: list[ShopImportRow] = []
    count = 0
    for line, raw in enumerate(it, start=2):
        cells = ["" if c is None else str(c) for c in raw]
        if not any(c.strip() for c in cells):
            continue  # blank lines
        count += 1
        if count > MAX_ROWS:
            errors.append(RowError(line, "file", f"more than {MAX_ROWS:,} shops; split it"))
            break
        values = {n: (cells[i] if i < len(cells) else "") for i, n in enumerate(names)}
        extra = [c for c in cells[len(names):] if c.strip()]
        if extra:
            errors.append(RowError(line, "row", f"{len(extra)} value(s) beyond the last column"))
            continue
        row, problems = _check_row(line, values)
        if row is not None:
            if row.name in taken:
                problems.append(RowError(line, "name", f"a shop named {row.name!r} exists "
                                                       "already"))
            elif row.name in seen:
                problems.append(RowError(line, "name", f"{row.name!r} is also on line "
                                                       f"{seen[row.name]}"))
            else:
                seen[row.name] = line
        if problems:
            errors.extend(problems)
        elif row is not None:
            rows.append(row)
    return ShopImport(rows, errors)


def _check_row(line: int, values: dict[str, str]) -> tuple[ShopImportRow | None,
                                                              list[RowError]]:
    errs: list[RowError] = []
    clean: dict[str, str] = {}
    for n, v in values.items():
        v = v if n == "password" else v.strip()
        if len(v) > MAX_LEN[n]:
            errs.append(RowError(line, n, f"is {len(v)} characters (at most {MAX_LEN[n]})"))
        elif _CONTROL.search(v):
            errs.append(RowError(line, n, "contains a control character (line break, tab…)"))
        clean[n] = v
    for n in REQUIRED:
        if not clean.get(n) and not any(e.field == n for e in errs):
            errs.append(RowError(line, n, "is empty"))
    url = clean.get("base_url", "")
    if url and not any(e.field == "base_url" for e in errs):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            errs.append(RowError(line, "base_url", f"{url!r} must be an http:// or https:// "
                                                   "address with a host"))
    origins: list[str] = []
    text = clean.get("allowed_origins", "")
    if text and not any(e.field == "allowed_origins" for e in errs):
        try:
            origins = normalise_origins([u for u in re.split(r"[\s,;]+", text) if u],
                                        field="allowed_origins")
        except InvalidInput as exc:
            errs.append(RowError(line, "allowed_origins", exc.reason))
    tags: tuple[str, ...] = ()
    text = clean.get("tags", "")
    if text and not any(e.field == "tags" for e in errs):
        try:
            tags = normalize_tags([t for t in re.split(r"[\s,;]+", text) if t], field="tags")
        except InvalidInput as exc:
            errs.append(RowError(line, "tags", exc.reason))
    profile = _check_profile(line, clean, errs)
    if errs:
        return None, errs
    return ShopImportRow(line=line, name=clean["name"], platform=clean["platform"],
                         base_url=url.rstrip("/"), username=clean.get("username", ""),
                         password=clean.get("password", ""),
                         allowed_origins=tuple(origins), tags=tags, profile=profile), []


def _check_profile(line: int, clean: dict[str, str], errs: list[RowError]
                   ) -> ProfileChange | None:
    """The row's profile cells as ``shop add`` checks them: an error per bad cell, named by
    its column (the reasons never repeat a proxy URL: it may hold a password)."""
    cells = {n: clean[n] for n in PROFILE_COLUMNS
             if clean.get(n) and not any(e.field == n for e in errs)}
    if not cells:
        return None
    given = profile_input_from_row(cells)
    for n in cells:  # each cell alone, so that every bad one is named
        one = ProfileInput(**{n: getattr(given, n)})  # the columns are its field names
        try:
            parse_profile_fields(ShopProfile(), one, prefix="")
        except InvalidInput as exc:
            errs.append(RowError(line, n, exc.reason))
    if errs:
        return None
    return parse_profile_fields(ShopProfile(), given, prefix="")


def import_shops(store: Store, rows: Sequence[ShopImportRow]) -> list[str]:
    """Add these shops (checked rows, see :func:`read_shop_list`), their origins, passwords
    and profiles (passwords, the proxy's too, encrypted with the store's key). Returns the
    names added, in order.

    Raises:
        InvalidInput: a row cannot be added after all (a shop of that name appeared since
            the check); the rows before it stay added, the error names the line.
        VaultKeyError: passwords cannot be encrypted with this store's key (checked before
            any shop is added).
    """
    from .profile_store import save_profile
    from .secrets import open_vault_for, save_password

    secret = any(r.has_password or (r.profile is not None and r.profile.proxy_password)
                 for r in rows)
    vault = open_vault_for(store) if secret else None
    added: list[str] = []
    for r in rows:
        try:
            store.add_shop(r.name, platform=r.platform, base_url=r.base_url,
                           username=r.username)
        except InvalidInput as exc:
            raise InvalidInput(f"line {r.line}: {exc.field}", exc.reason) from None
        if r.allowed_origins:
            store.set_shop_origins(r.name, r.allowed_origins)
        if r.tags:
            store.retag_shop(r.name, add=r.tags)
        if r.has_password:
            save_password(store, r.name, r.password, vault=vault)
        if r.profile is not None:
            save_profile(store, r.name, r.profile, vault=vault)
        added.append(r.name)
    return added


def set_shop_password(store: Store, name: str, password: str) -> None:
    """Set or replace a shop's password (encrypted with the store's key).

    Raises:
        InvalidInput: an unknown shop, or an empty password.
        VaultKeyError: this machine's key is not the store's.
    """
    from .secrets import save_password

    store.shop(name)
    if not password:
        raise InvalidInput("password", "is empty")
    save_password(store, name, password)
