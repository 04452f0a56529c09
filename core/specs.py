"""Task specs: what a user submits, validated with errors that name the field.

A spec is a JSON object::

    {"key": "reply-8812", "type": "reply_customer", "shop": "pdd-1",
     "priority": 12, "deadline": "2026-11-29T15:00:00+08:00",
     "flow": "reply_customer", "params": {"message_id": "8812", "reply": "Shipped today"}}

A batch is a JSON array or JSON Lines. Parsing a batch is all-or-nothing: the first bad task
rejects the whole batch, with its index in the field name (``tasks[3].deadline``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from .errors import SpecError, field_path

MAX_TASK_BYTES_DEFAULT = 256 * 1024
MAX_DEPTH = 32
MAX_DELAY_S = 366 * 86400.0
"""How far ahead a task may be delayed (``not_before``, ``delay_s``): a year and a day."""
"""How deeply a task's values may nest (objects in arrays in objects …)."""


class TaskSpec(BaseModel):
    """One task as submitted."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=False, allow_inf_nan=False)

    key: str | None = Field(None, min_length=1, max_length=200)
    """Idempotency key: submitting the same key again returns the same task."""
    type: str = Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_.\-]+$")
    shop: str = Field(min_length=1, max_length=200)
    priority: float | None = Field(None, ge=-1000, le=1000)
    """Base priority; default from ``[priority.types]``."""
    urgency: float | None = Field(None, ge=-1000, le=1000)
    """Fixed urgency points; default: the platform's urgency estimator, from the deadline."""
    deadline: datetime | None = None
    params: dict[str, Any] = Field(default_factory=dict)
    flow: str | None = Field(None, min_length=1, max_length=200)
    steps: list[dict[str, Any]] | None = None
    max_attempts: int | None = Field(None, ge=1, le=100)
    not_before: datetime | None = None
    """Do not start before this moment (ISO-8601 with a zone): the task waits as
    ``scheduled`` and joins the queue then, its aging counted from then."""
    delay_s: float | None = Field(None, ge=0, le=MAX_DELAY_S)
    """The same as ``not_before``, relative to the submission: wait this many seconds."""

    @field_validator("deadline", "not_before", mode="before")
    @classmethod
    def _deadline_is_iso_with_zone(cls, v: Any) -> Any:
        if v is None:
            return v
        if not isinstance(v, str):
            raise ValueError("must be an ISO-8601 string with a time zone")
        try:
            dt = datetime.fromisoformat(v)
        except ValueError:
            raise ValueError(f"{v!r} is not an ISO-8601 date-time") from None
        if dt.tzinfo is None or dt.utcoffset() is None:
            raise ValueError(f"{v!r} has no time zone (add e.g. +08:00 or Z)")
        return dt

    @model_validator(mode="after")
    def _flow_or_steps(self) -> TaskSpec:
        if self.flow is None and not self.steps:
            raise ValueError("give a flow name ('flow') or inline steps ('steps')")
        if self.flow is not None and self.steps:
            raise ValueError("give either 'flow' or 'steps', not both")
        if self.not_before is not None and self.delay_s is not None:
            raise ValueError("give either 'not_before' or 'delay_s', not both")
        return self

    def start_at(self, now: float) -> float:
        """When the task may join the queue: ``now`` unless it carries ``not_before`` or
        ``delay_s``.

        Raises:
            SpecError: ``not_before`` is more than :data:`MAX_DELAY_S` ahead of ``now``.
        """
        if self.delay_s is not None:
            return now + float(self.delay_s)
        if self.not_before is None:
            return now
        at = self.not_before.timestamp()
        if at - now > MAX_DELAY_S:
            raise SpecError("not_before", f"{self.not_before.isoformat()} is more than "
                            f"{MAX_DELAY_S // 86400:.0f} days ahead")
        return at

    @property
    def deadline_ts(self) -> float | None:
        return self.deadline.timestamp() if self.deadline else None

    def payload(self) -> dict[str, Any]:
        """What the store keeps of the spec to run it: flow or steps, and params."""
        out: dict[str, Any] = {"params": self.params}
        if self.flow is not None:
            out["flow"] = self.flow
        if self.steps:
            out["steps"] = self.steps
        return out


def check_values(obj: Any, *, where: str = "") -> None:
    """Refuse what no task needs and what breaks later: nesting deeper than
    :data:`MAX_DEPTH`, NaN and infinities (``tasks --json`` must stay JSON), lone surrogates
    (not storable as UTF-8) and NUL characters (they cut paths and C strings short).
    Iterative, so a hostile depth cannot blow the stack."""
    # (value, its path, its depth, the path of its field two levels down: what a message
    # about nesting names, instead of a path thousands of "[0]" long)
    stack: list[tuple[Any, str, int, str]] = [(obj, where, 0, where)]
    while stack:
        value, path, depth, field = stack.pop()
        if depth <= 2:
            field = path
        if isinstance(value, dict | list):
            if depth >= MAX_DEPTH:
                raise SpecError(field or "(task)", f"nests deeper than {MAX_DEPTH} levels")
            if isinstance(value, dict):
                for k, v in value.items():
                    key = str(k)
                    _check_text(key, f"{path}.{key}" if path else key, what="a key")
                    stack.append((v, f"{path}.{key}" if path else key, depth + 1, field))
            else:
                for i, v in enumerate(value):
                    stack.append((v, f"{path}[{i}]", depth + 1, field))
        elif isinstance(value, _NotJson):
            raise SpecError(path or "(task)", f"{value.name} is not a JSON number (NaN and "
                            "Infinity are not allowed in a task)")
        elif isinstance(value, float):
            if value != value or value in (float("inf"), float("-inf")):
                raise SpecError(path or "(task)", f"{value!r} is not a finite number (NaN and "
                                "Infinity are not allowed in a task)")
        elif isinstance(value, str):
            _check_text(value, path or "(task)")


def _check_text(text: str, path: str, *, what: str = "text") -> None:
    if "\x00" in text:
        raise SpecError(path, f"{what} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise SpecError(path, f"{what} holds a lone surrogate (\\u{ord(text[exc.start]):04x}) "
                        "that is not a character") from None


def validate_spec(obj: Any, *, where: str = "", max_bytes: int = MAX_TASK_BYTES_DEFAULT,
                  raw_size: int | None = None) -> TaskSpec:
    """Validate one parsed task object. ``where`` prefixes field names (``tasks[3]``)."""
    if not isinstance(obj, dict):
        raise SpecError(where or "(task)", "must be a JSON object")
    check_values(obj, where=where)
    size = raw_size if raw_size is not None else len(
        json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode())
    if size > max_bytes:
        raise SpecError(where or "(task)",
                        f"is {size} bytes, more than the limit of {max_bytes} bytes per task")
    try:
        return TaskSpec.model_validate(obj)
    except ValidationError as exc:
        err = exc.errors()[0]
        loc = tuple(err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "extra_forbidden":
            msg = "unknown field"
        raise SpecError(field_path(where, loc), msg) from None


class _NotJson:
    """What ``NaN``, ``Infinity`` and ``-Infinity`` parse to (json.loads would make floats of
    them): :func:`check_values` refuses it, naming the field."""

    def __init__(self, name: str) -> None:
        self.name = name


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_NotJson)


def parse_specs(text: str, *, max_bytes: int = MAX_TASK_BYTES_DEFAULT,
                shops: Sequence[str] | None = None) -> list[TaskSpec]:
    """Parse a JSON object, a JSON array or JSON Lines into specs; all or nothing.

    With ``shops`` (#18, ``submit --shops SELECTOR``) every task is a template without
    ``shop``, submitted once per shop (in that order); a template's ``key`` becomes
    ``KEY:SHOP`` so each copy keeps an idempotency key of its own."""
    stripped = text.strip()
    if not stripped:
        raise SpecError("(input)", "is empty: expected a task object, an array or JSON Lines")
    items: list[tuple[Any, str]]
    try:
        doc = _loads(stripped)
    except RecursionError:
        raise SpecError("(input)", f"nests too deeply (at most {MAX_DEPTH} levels)") from None
    except json.JSONDecodeError as whole_err:
        # Not one document: try JSON Lines.
        items = []
        lines = stripped.splitlines()
        for n, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                items.append((_loads(line), f"line {n}"))
            except RecursionError:
                raise SpecError(f"line {n}", f"nests too deeply (at most {MAX_DEPTH} "
                                "levels)") from None
            except json.JSONDecodeError as exc:
                if n == 1 and (len(lines) == 1 or not line.lstrip().startswith("{")):
                    raise SpecError("(input)", f"not JSON: {whole_err.msg} at line "
                                    f"{whole_err.lineno} column {whole_err.colno}") from None
                raise SpecError(f"line {n}", f"not JSON: {exc.msg} at column {exc.colno}") from None
    else:
        if isinstance(doc, list):
            items = [(o, f"tasks[{i}]") for i, o in enumerate(doc)]
        else:
            items = [(doc, "")]
    if not items:
        raise SpecError("(input)", "holds no tasks")
    if shops is None:
        return [validate_spec(obj, where=where, max_bytes=max_bytes) for obj, where in items]
    out: list[TaskSpec] = []
    for obj, where in items:
        if isinstance(obj, dict) and "shop" in obj:
            raise SpecError(f"{where}.shop" if where else "shop",
                            "a task submitted with --shops has no shop: --shops picks them")
        for name in shops:
            one = {**obj, "shop": name} if isinstance(obj, dict) else obj
            if isinstance(one, dict) and isinstance(one.get("key"), str):
                one["key"] = f"{one['key']}:{name}"
            out.append(validate_spec(one, where=where, max_bytes=max_bytes))
    return out
