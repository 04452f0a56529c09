"""Copy and export a table: the rows as the operator sees them (translated headers, display
names, formatted durations), as tab-separated text, CSV (UTF-8 with a BOM, so Excel opens
Chinese text correctly) or XLSX (XlsxWriter). Writing files is blocking: call
:func:`write_table` on a worker thread."""

from __future__ import annotations

import csv
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .models import Column

Table = tuple[list[str], list[list[str]]]
"""(header, rows) of display texts."""


def table_of(columns: Sequence[Column], rows: Sequence[Any], titles: Sequence[str]) -> Table:
    """The display texts of ``rows`` in ``columns`` (``titles``: the translated headers)."""
    out = []
    for r in rows:
        if r is None:
            continue
        out.append([_cell(c, r) for c in columns])
    return list(titles), out


def _cell(c: Column, r: Any) -> str:
    try:
        return str(c.show(r))
    except Exception:  # a row of another shape than the column expects: leave it empty
        return ""


def to_tsv(table: Table, *, header: bool = True) -> str:
    """Tab-separated text (what Ctrl+C puts on the clipboard; pastes into a spreadsheet)."""
    head, rows = table
    lines = ([head] if header else []) + rows
    return "\n".join("\t".join(_clean(v) for v in line) for line in lines)


def _clean(v: str) -> str:
    return v.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def _safe(v: str) -> str:
    """Spreadsheet formula injection: a cell starting with = + - @ is read as text."""
    return "'" + v if v[:1] in ("=", "+", "-", "@") and not _number(v) else v


def _number(v: str) -> bool:
    try:
        float(v.replace(",", ""))
    except ValueError:
        return False
    return True


def write_csv(path: Path, table: Table) -> None:
    head, rows = table
    with open(path, "w", encoding="utf-8-sig", newline="") as f:
        w = csv.writer(f)
        w.writerow(head)
        w.writerows([[_safe(v) for v in r] for r in rows])


def write_xlsx(path: Path, table: Table, *, sheet: str = "ShopFleet") -> None:
    import xlsxwriter  # the desktop extra's spreadsheet writer

    head, rows = table
    book = xlsxwriter.Workbook(str(path), {"strings_to_formulas": False,
                                           "strings_to_urls": False,
                                           "strings_to_numbers": False})
    try:
        ws = book.add_worksheet(sheet[:31])
        bold = book.add_format({"bold": True})
        ws.write_row(0, 0, head, bold)
        for i, r in enumerate(rows, start=1):
            ws.write_row(i, 0, r)
        ws.freeze_panes(1, 0)
        for c, title in enumerate(head):
            width = max([len(title)] + [len(r[c]) for r in rows[:200] if c < len(r)])
            ws.set_column(c, c, min(60, max(8, width + 2)))
    finally:
        book.close()


def write_table(path: Path, table: Table) -> None:
    """Write CSV or XLSX by the file's suffix."""
    if path.suffix.lower() == ".xlsx":
        write_xlsx(path, table)
    else:
        write_csv(path, table)
