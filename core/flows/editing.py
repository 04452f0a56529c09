"""Editing flows: validate a flow document as it is typed, list flows, save one safely.

What the console's flow editor and ``shopfleet record`` use. Everything here is blocking
(it reads and writes files): call it off any event loop.

* :func:`validate_flow_dict` checks a flow document (the JSON object of a flow file) and
  returns every problem it finds, each naming its field (``steps[2].locator``) — the flow
  model's own validation, then the placeholders' syntax and shop fields.
* :func:`flow_catalog` lists the flows the registry sees, each with where it lives and
  whether it is shipped (``resources/flows`` or a plugin) or the user's.
* :func:`save_flow_file` writes a document into the user's flow folder, replacing the user's
  own file of that name, never a shipped flow unless the person said so.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..errors import SpecError, field_path
from ..paths import data_dir_path, resources_dir
from .models import ACTIONS, Flow, _reason
from .placeholders import _NOT_TEMPLATED, SHOP_FIELDS, check_flow, parse_template
from .registry import FlowRegistry

STEP_ACTIONS: tuple[str, ...] = ACTIONS
"""Every step action a flow may use, in the order the editor offers them."""

_STEP_OF = re.compile(r"^steps\[(\d+)\]")
_FILE_NAME = re.compile(r"[A-Za-z0-9_\-]{1,100}")


@dataclass(frozen=True)
class FlowProblem:
    """One thing wrong with a flow document: the field (``steps[2].locator``) and why."""

    field: str
    reason: str

    @property
    def step(self) -> int | None:
        """The index of the step the field belongs to, or None for a flow-level field."""
        m = _STEP_OF.match(self.field)
        return int(m.group(1)) if m else None

    def __str__(self) -> str:
        return f"{self.field}: {self.reason}"


class _AnyParams(dict[str, Any]):
    """Every parameter counts as given: an editor checks a flow, not a task."""

    def __contains__(self, key: object) -> bool:
        return True


def validate_flow_dict(doc: Any) -> list[FlowProblem]:
    """Every problem of a flow document, each naming its field; empty when it is valid.

    Checks the flow model (actions, fields, lengths: all the model's errors, not just the
    first), then each templated field's placeholders (syntax, shop fields, where
    ``{shop.password}`` may go). Parameters are not checked: any ``{params.x}`` is allowed.
    """
    if not isinstance(doc, Mapping):
        return [FlowProblem("(flow)", "must be a JSON object")]
    try:
        flow = Flow.model_validate(doc)
    except ValidationError as exc:
        out: list[FlowProblem] = []
        for err in exc.errors():
            extra, reason = _reason(err)
            loc = [*err["loc"], extra] if extra else list(err["loc"])
            problem = FlowProblem(field_path("", loc, tags=ACTIONS, whole="(flow)"), reason)
            if problem not in out:
                out.append(problem)
        # The placeholders' syntax too, so a typo shows while another field is still empty.
        named = {p.field for p in out}
        out.extend(p for p in _template_problems(doc) if p.field not in named)
        return out
    try:
        check_flow(flow, params=_AnyParams(), shop_fields=SHOP_FIELDS)
    except SpecError as exc:
        return [FlowProblem(_plain_field(exc.field), exc.reason)]
    return []


def _template_problems(doc: Mapping[str, Any]) -> list[FlowProblem]:
    out: list[FlowProblem] = []
    fields: list[tuple[str, Any]] = [("start_url", doc.get("start_url"))]
    steps = doc.get("steps")
    for i, step in enumerate(steps if isinstance(steps, list) else []):
        if not isinstance(step, Mapping):
            continue
        for key, value in step.items():
            if key in _NOT_TEMPLATED:
                continue
            if key == "verify" and isinstance(value, Mapping):
                fields.extend((f"steps[{i}].verify.{k}", v) for k, v in value.items())
            else:
                fields.append((f"steps[{i}].{key}", value))
    for field, value in fields:
        if isinstance(value, str):
            try:
                parse_template(value)
            except ValueError as exc:
                out.append(FlowProblem(field, str(exc)))
    return out


def _plain_field(field: str) -> str:
    # check_flow says ``steps[1] (type_text).text``; the editor's fields are ``steps[1].text``.
    return re.sub(r"^(steps\[\d+\]) \([a-z_]+\)", r"\1", field)


def flow_file_text(doc: Mapping[str, Any]) -> str:
    """A valid flow document as a flow file's text (one step a line, like the shipped ones).

    Raises:
        SpecError: the document is not a valid flow (the first problem's field).
    """
    problems = validate_flow_dict(doc)
    if problems:
        raise SpecError(problems[0].field, problems[0].reason)
    from ..recorder.convert import RecordedFlow  # the recorder's writer formats flow files

    return RecordedFlow(Flow.model_validate(doc), {}).to_json()


@dataclass(frozen=True)
class FlowEntry:
    """A flow the registry sees."""

    name: str
    source: str
    """Its file's path, or ``plugin shopfleet.flows:NAME``."""
    shipped: bool
    """Shipped with ShopFleet (``resources/flows``) or by a plugin, not the user's own."""


def user_flows_dir(configured: Sequence[str | Path] = ()) -> Path:
    """The user's flow folder: the first of ``[flows] dirs``, else ``<data folder>/flows``.

    The second one is only read when it is listed in ``[flows] dirs``; :func:`flow_catalog`
    and :func:`save_flow_file` (and so the console and ``shopfleet record``) use it anyway.
    """
    if configured:
        return Path(configured[0]).expanduser()
    return data_dir_path() / "flows"


def _dirs(configured: Sequence[str | Path]) -> list[Path]:
    # The user's own folder may not exist yet (saving creates it); the others must.
    own = user_flows_dir(configured)
    dirs = [p for p in (Path(d).expanduser() for d in configured) if p != own]
    if own.is_dir():
        dirs.insert(0, own)
    return dirs


def flow_catalog(configured: Sequence[str | Path] = ()) -> list[FlowEntry]:
    """Every flow, sorted by name (the registry's, plus the user's own folder).

    Raises:
        SpecError: a bad flow file or folder (as :meth:`FlowRegistry.load`).
    """
    reg = FlowRegistry.load(_dirs(configured))
    shipped_dir = (resources_dir() / "flows").resolve()
    out = []
    for name in reg.names():
        src = reg.source(name)
        shipped = src.startswith("plugin ") or Path(src).resolve().parent == shipped_dir
        out.append(FlowEntry(name, src, shipped))
    return out


def read_flow_document(entry: FlowEntry) -> dict[str, Any]:
    """A flow file's JSON object, to edit.

    Raises:
        SpecError: a plugin's flow (no file), or the file cannot be read.
    """
    if entry.source.startswith("plugin "):
        raise SpecError("flow", f"{entry.name!r} comes from a plugin and has no file to edit")
    try:
        doc = json.loads(Path(entry.source).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise SpecError(entry.source, f"cannot read: {exc}") from None
    if not isinstance(doc, dict):
        raise SpecError(entry.source, "must be a JSON object")
    return doc


def save_flow_file(doc: Mapping[str, Any], *, configured: Sequence[str | Path] = (),
                   over_shipped: bool = False) -> Path:
    """Save a flow document; returns the file written.

    Where: the user's own file of that name when there is one (replaced), else a new
    ``NAME.json`` in :func:`user_flows_dir`. A name a shipped flow has is refused (field
    ``name``) unless ``over_shipped`` — the person was asked and said yes — and then the shipped
    file itself is replaced (a plugin's flow never: it has no file). The file is replaced
    atomically (a temporary file renamed over it).

    Raises:
        SpecError: an invalid flow (its first problem's field), a shipped name, a bad file name.
    """
    text = flow_file_text(doc)
    name = str(doc["name"])
    if not _FILE_NAME.fullmatch(name):
        raise SpecError("name", "must be letters, digits, _ and -, at most 100 (it is the "
                        "file's name)")
    entry = next((e for e in flow_catalog(configured) if e.name == name), None)
    if entry is not None and entry.shipped:
        if entry.source.startswith("plugin ") or not over_shipped:
            raise SpecError("name", f"{name!r} is a flow shipped with ShopFleet "
                            f"({entry.source}); save it under another name")
        path = Path(entry.source)
    elif entry is not None:
        path = Path(entry.source)
    else:
        path = user_flows_dir(configured) / f"{name}.json"
    _write_atomic(path, text)
    return path


def _write_atomic(path: Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}-", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(text)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except OSError as exc:
        raise SpecError(str(path), f"cannot write: {exc.strerror or exc}") from None

