"""Results out: one row per collected record, streamed to CSV, JSON Lines or XLSX.

**The record model.** A finished task's results are a dict of result names (``extract … into``)
to values. :func:`records_of` turns them into rows by this rule:

* a *list* value (``extract … all``) is a column of values, one per record; several lists in
  one task are read side by side (``names[i]`` and ``prices[i]`` are record ``i``), so a flow
  that extracts ``.order .id`` and ``.order .price`` with ``all`` gives one row per order;
  a shorter list leaves its cells empty in the extra rows;
* a list whose items are dicts spreads each item's keys into ``name.key`` columns
  (``{"orders": [{"id": 1}]}`` gives a column ``orders.id``);
* a *scalar* value (a single ``extract``, a screenshot path) is the same on every record of
  the task;
* the number of records is the longest list; a task with scalars only, or whose lists are all
  empty, gives one record; a task with no results gives none.

Values that are not text, numbers or booleans (a dict, a list inside a list) are written as
JSON in their cell. A result named like a fixed column (``shop``) is written as
``result.shop`` so it never overwrites what the row says about the task.

**Columns and streaming.** Every row starts with the fixed columns :data:`FIXED_COLUMNS`,
then the result fields. CSV and XLSX need their header before the first row, and the fields
are not known upfront, so :func:`export` takes a *factory* of rows (a callable returning a
fresh iterator — a store runs its query again): without ``fields`` it makes a first pass that
only collects field names (constant memory: the set of names, capped at :data:`MAX_FIELDS`),
then a second pass that writes. With ``fields`` (the CLI's ``--field``) it makes one pass and
writes only those fields. JSON Lines needs no header and always takes one pass.

**Hostile cells.** A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage
return is prefixed with ``'`` (the OWASP rule against formula injection) in CSV *and* XLSX: the
XLSX cell is written as text and would not run, but an operator who saves it as CSV from Excel
would hand the formula on. Plain numbers (``-12.50``, ``+3``) are left alone: they cannot call
anything. CSV is UTF-8 with a BOM so Excel and WPS open Chinese correctly.

**XLSX** goes through XlsxWriter in ``constant_memory`` mode: it flushes every row to a temp
file as it is written and is pure Python with no dependencies. Measured against openpyxl's
``write_only`` mode on the same rows (``bench/export.py``, 100,000 records, 3 runs): 12,500 vs
8,100 records/s and 2.4 vs 16.7 MiB RSS growth. openpyxl reads the files back in the tests.
Strings are written with ``write_string`` (never ``write``, which would turn ``=…`` into a
formula and ``http…`` into a link). A sheet holds at most 1,048,575 records; more go on to
``name (2)``.
"""

from __future__ import annotations

import csv
import json
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import IO, Any, Literal

from core.errors import SpecError

FIXED_COLUMNS: tuple[str, ...] = ("task_id", "shop", "platform", "type", "flow", "finished_at")
MAX_FIELDS = 1000
XLSX_MAX_ROWS = 1_048_576  # Excel's limit, header row included
XLSX_MAX_CELL = 32_767  # Excel's limit on the characters of one cell
Format = Literal["csv", "jsonl", "xlsx"]
SplitBy = Literal["type", "shop"]
FORMATS: tuple[str, ...] = ("csv", "jsonl", "xlsx")

_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_SHEET_BAD = re.compile(r"[\[\]:*?/\\]")
_XML_BAD = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


@dataclass(frozen=True, slots=True)
class TaskResults:
    """One finished task's results and what a row says about the task."""

    task_id: int
    shop: str
    platform: str
    type: str
    flow: str
    finished_at: float | None
    results: Mapping[str, Any] | None


def _scalar_cell(value: Any) -> Any:
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def records_of(results: Mapping[str, Any] | None) -> Iterator[dict[str, Any]]:
    """The records of one task's results (the rule is in the module docstring)."""
    if not results:
        return
    scalars: dict[str, Any] = {}
    lists: dict[str, list[Any]] = {}
    for name, value in results.items():
        if isinstance(value, list | tuple):
            lists[str(name)] = list(value)
        else:
            scalars[str(name)] = _scalar_cell(value)
    count = max((len(v) for v in lists.values()), default=0)
    for i in range(max(count, 1)):
        record = dict(scalars)
        for name, items in lists.items():
            if i >= len(items):
                continue
            item = items[i]
            if isinstance(item, Mapping):
                for key, sub in item.items():
                    record[f"{name}.{key}"] = _scalar_cell(sub)
            else:
                record[name] = _scalar_cell(item)
        yield record


def field_column(name: str) -> str:
    """The column a result field is written in (``result.shop`` for a field named ``shop``)."""
    return f"result.{name}" if name in FIXED_COLUMNS else name


_field_name = field_column


def record_text(record: Mapping[str, Any]) -> str:
    """A record's values as one line of text (what search indexes)."""
    return " ".join(str(v) for v in record.values() if v is not None and v != "")


@dataclass(frozen=True, slots=True)
class ResultFilter:
    """Which records an export (or the console's Results view) takes; empty means all.

    ``shops`` are shop names, already picked by a selector; ``since``/``until`` are epoch
    seconds on the task's finish time (``until`` exclusive).
    """

    types: tuple[str, ...] = ()
    shops: tuple[str, ...] | None = None
    since: float | None = None
    until: float | None = None
    flow: str | None = None

    def keeps(self, t: TaskResults) -> bool:
        """Whether a task's records pass (stores that cannot filter in a query use it)."""
        return ((not self.types or t.type in self.types)
                and (self.shops is None or t.shop in self.shops)
                and (self.since is None or (t.finished_at or 0) >= self.since)
                and (self.until is None or (t.finished_at or 0) < self.until)
                and (self.flow is None or t.flow == self.flow))


def parse_moment(text: str, *, field: str, end: bool = False) -> float:
    """``--since``/``--until``: a date (``2026-12-01``, local time; as ``end`` the whole day is
    included) or a date and time (``2026-12-01T08:30``, local unless it carries an offset).

    Raises:
        SpecError: naming ``field``.
    """
    text = (text or "").strip()
    try:
        if len(text) == 10:
            day = datetime.strptime(text, "%Y-%m-%d")
            if end:
                day += timedelta(days=1)
            return day.astimezone().timestamp()
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise SpecError(field, f"{text!r} is not a date (YYYY-MM-DD) or a date and time "
                               "(YYYY-MM-DDTHH:MM)") from None
    if moment.tzinfo is None:
        moment = moment.astimezone()
    return moment.timestamp()


def make_filter(shops: Sequence[Any], *, types: Sequence[str] = (),
                shop_selector: str | None = None, since: str | None = None,
                until: str | None = None, flow: str | None = None) -> ResultFilter:
    """A :class:`ResultFilter` from what an operator typed (the CLI's options, the console's
    boxes); ``shops``: the store's shop records, for the selector.

    Raises:
        InvalidInput: naming the field (``--shops``, ``--since``, ``--until``, ``--flow``,
            ``--type``) and why.
    """
    from .errors import InvalidInput
    from .selectors import ShopRef, select_shops

    picked: tuple[str, ...] | None = None
    if shop_selector is not None:
        # ShopRef: the store's shop records carry no tags until #18's stage 2 adds them
        refs = [ShopRef(s.name, s.platform) for s in shops]
        picked = tuple(s.name for s in select_shops(shop_selector, refs, field="--shops"))
    start = parse_moment(since, field="--since") if since else None
    end = parse_moment(until, field="--until", end=True) if until else None
    if start is not None and end is not None and end <= start:
        raise InvalidInput("--until", "must be later than --since")
    if flow is not None and not flow.strip():
        raise InvalidInput("--flow", "must not be empty")
    if any(not t.strip() for t in types):
        raise InvalidInput("--type", "must not be empty")
    return ResultFilter(types=tuple(types), shops=picked, since=start, until=end, flow=flow)


def flow_of(spec: Mapping[str, Any] | None) -> str:
    """The flow column of a task: its flow's name, or empty for inline steps."""
    flow = (spec or {}).get("flow")
    return flow if isinstance(flow, str) else ""


def iso_time(ts: float | None) -> str:
    """A finish time as the export writes it (ISO 8601, UTC, to the second)."""
    if ts is None:
        return ""
    return datetime.fromtimestamp(ts, UTC).isoformat(timespec="seconds")


def rows_of(tasks: Iterable[TaskResults]) -> Iterator[dict[str, Any]]:
    """One row per record of every task: the fixed columns, then the result fields."""
    for t in tasks:
        head = {"task_id": t.task_id, "shop": t.shop, "platform": t.platform, "type": t.type,
                "flow": t.flow, "finished_at": iso_time(t.finished_at)}
        for record in records_of(t.results):
            row = dict(head)
            for name, value in record.items():
                row[_field_name(name)] = value
            yield row


def field_names(rows: Iterable[Mapping[str, Any]], *, limit: int = MAX_FIELDS) -> list[str]:
    """The result fields of ``rows`` in first-seen order (the first pass of an export).

    Raises:
        SpecError: more than ``limit`` distinct fields (``--field`` should pick some).
    """
    seen: dict[str, None] = {}
    for row in rows:
        for name in row:
            if name not in seen and name not in FIXED_COLUMNS:
                seen[name] = None
                if len(seen) > limit:
                    raise SpecError("--field", f"the results hold more than {limit} distinct "
                                               "fields; name the ones to export with --field")
    return list(seen)


def escape_cell(value: Any) -> Any:
    """A cell made safe against formula injection (text only; numbers pass unchanged)."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(
            value):
        return "'" + value
    return value


def sheet_name(text: str, *, taken: Iterable[str] = ()) -> str:
    """An Excel-safe sheet name: no ``[]:*?/\\``, not quoted, at most 31 chars, unique."""
    name = _SHEET_BAD.sub("_", _XML_BAD.sub("", str(text))).strip().strip("'") or "results"
    name = name[:31]
    used = {t.lower() for t in taken}
    if name.lower() == "history":  # reserved by Excel
        name = "history_"
    base, n = name, 2
    while name.lower() in used:
        suffix = f" ({n})"
        name = base[: 31 - len(suffix)] + suffix
        n += 1
    return name


def _columns(fields: Sequence[str]) -> list[str]:
    extra = [f for f in fields if f not in FIXED_COLUMNS]
    return [*FIXED_COLUMNS, *extra]


def write_csv(rows: Iterable[Mapping[str, Any]], out: IO[str], fields: Sequence[str]) -> int:
    """Write ``rows`` as CSV (``out`` opened with ``encoding="utf-8-sig"``, ``newline=""``).

    Returns the number of records written.
    """
    cols = _columns(fields)
    writer = csv.writer(out)
    writer.writerow(cols)
    n = 0
    for row in rows:
        writer.writerow([_csv_text(escape_cell(row.get(c))) for c in cols])
        n += 1
    return n


def _csv_text(value: Any) -> Any:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def write_jsonl(rows: Iterable[Mapping[str, Any]], out: IO[str],
                fields: Sequence[str] | None = None) -> int:
    """Write ``rows`` as JSON Lines: one object a record, values as they are (no escaping)."""
    cols = _columns(fields) if fields is not None else None
    n = 0
    for row in rows:
        obj = {c: row.get(c) for c in cols} if cols is not None else dict(row)
        out.write(json.dumps(obj, ensure_ascii=False, default=str))
        out.write("\n")
        n += 1
    return n


def _xlsx_cell(value: Any) -> Any:
    value = escape_cell(value)
    if isinstance(value, str):
        value = _XML_BAD.sub("\ufffd", value)
        if len(value) > XLSX_MAX_CELL:
            value = value[: XLSX_MAX_CELL - 1] + "…"
    return value


class _Sheet:
    def __init__(self, book: Any, name: str, cols: list[str], taken: list[str]) -> None:
        self.book, self.base, self.cols, self.taken = book, name, cols, taken
        self.ws: Any = None
        self.row = 0
        self.part = 0

    def _open(self) -> None:
        self.part += 1
        title = self.base if self.part == 1 else f"{self.base[:25]} ({self.part})"
        title = sheet_name(title, taken=self.taken)
        self.taken.append(title)
        self.ws = self.book.add_worksheet(title)
        for c, name in enumerate(self.cols):
            self.ws.write_string(0, c, _xlsx_cell(name))
        self.row = 1

    def append(self, row: Mapping[str, Any]) -> None:
        if self.ws is None or self.row >= XLSX_MAX_ROWS:
            self._open()
        ws, r = self.ws, self.row
        for c, name in enumerate(self.cols):
            value = _xlsx_cell(row.get(name))
            if value is None:
                continue
            if isinstance(value, bool):
                ws.write_boolean(r, c, value)
            elif isinstance(value, int | float):
                if value != value or value in (float("inf"), float("-inf")):
                    ws.write_string(r, c, str(value))
                else:
                    ws.write_number(r, c, value)
            else:
                ws.write_string(r, c, str(value))
        self.row += 1


def write_xlsx(rows: Iterable[Mapping[str, Any]], path: str | Path, fields: Sequence[str], *,
               split_by: SplitBy | None = None) -> int:
    """Write ``rows`` to an XLSX file in constant memory; one sheet, or one per type or shop.

    With ``split_by`` the rows should come sorted by that column (a store query orders them):
    XlsxWriter's constant-memory mode writes a sheet's rows in order, and rows of a sheet that
    come back after another sheet started still land in the right sheet (each keeps its own
    temp file), so order only matters for speed, never for correctness.
    """
    import xlsxwriter

    cols = _columns(fields)
    book = xlsxwriter.Workbook(str(path), {"constant_memory": True, "strings_to_numbers": False,
                                           "strings_to_formulas": False,
                                           "strings_to_urls": False})
    taken: list[str] = []
    sheets: dict[str, _Sheet] = {}
    n = 0
    try:
        for row in rows:
            key = str(row.get(split_by) or "") if split_by else "results"
            sheet = sheets.get(key)
            if sheet is None:
                sheet = sheets[key] = _Sheet(book, key or "results", cols, taken)
            sheet.append(row)
            n += 1
        if not sheets:
            _Sheet(book, "results", cols, taken)._open()
    finally:
        book.close()
    return n


def export(rows: Callable[[], Iterable[Mapping[str, Any]]], fmt: str, out: str | Path | IO[str],
           *, fields: Sequence[str] | None = None, split_by: SplitBy | None = None) -> int:
    """Export the rows a factory yields; returns how many records were written.

    Args:
        rows: a callable returning a fresh iterator of rows (see :func:`rows_of`); called
            twice for CSV/XLSX when ``fields`` is not given (names first, then rows).
        fmt: ``csv``, ``jsonl`` or ``xlsx``.
        out: a path (written as ``<name>.part`` and renamed when complete, so a failed
            export leaves no half file), or for csv/jsonl an open text stream.
        fields: the result fields to write, in order (``--field``); default: all of them.
        split_by: xlsx only: one sheet per ``type`` or per ``shop``.

    Raises:
        SpecError: an unknown format or split, a split on a non-xlsx format, too many fields.
    """
    if fmt not in FORMATS:
        raise SpecError("--format", f"unknown format {fmt!r}; one of {', '.join(FORMATS)}")
    if split_by not in (None, "type", "shop"):
        raise SpecError("--sheet-per", f"unknown split {split_by!r}; one of type, shop")
    if split_by is not None and fmt != "xlsx":
        raise SpecError("--sheet-per", "sheets exist only in xlsx")
    if fields is not None:
        fields = [_field_name(f) if f in FIXED_COLUMNS else f for f in fields]
    if fmt == "xlsx" and not isinstance(out, str | Path):
        raise SpecError("-o", "xlsx needs a file name")
    names = list(fields) if fields is not None else (
        field_names(rows()) if fmt != "jsonl" else None)
    if not isinstance(out, str | Path):
        if fmt == "jsonl":
            return write_jsonl(rows(), out, names)
        return write_csv(rows(), out, names or [])
    # a file appears only whole: written beside it, renamed when done
    path = Path(out)
    part = path.with_name(path.name + ".part")
    try:
        if fmt == "xlsx":
            n = write_xlsx(rows(), part, names or [], split_by=split_by)
        else:
            with open(part, "w", encoding="utf-8-sig" if fmt == "csv" else "utf-8",
                      newline="") as fh:
                n = (write_csv(rows(), fh, names or []) if fmt == "csv"
                     else write_jsonl(rows(), fh, names))
        part.replace(path)
    finally:
        part.unlink(missing_ok=True)
    return n


export_results = export
"""The facade's name for :func:`export` (``core.export`` is this module's name)."""
