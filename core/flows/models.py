"""The flow format: a named list of steps, validated with errors that name the field.

A flow is data. Each step is one of a closed set of actions (``navigate``, ``click``, …) with
the fields DESIGN.md pins; unknown actions and unknown fields are refused, and nothing in a flow
is ever evaluated as code. Validation errors become :class:`~core.errors.SpecError` whose field
reads like ``steps[2].locator`` and whose reason like ``field required``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from ..errors import SpecError, field_path

Locator = Annotated[str, Field(min_length=1, max_length=2000)]
"""A Playwright selector (CSS, ``text=…``, ``role=…``), as written by the flow's author."""


class Verify(BaseModel):
    """How to prove that a write step happened (checked when its outcome is unknown).

    The write counts as done when ``locator`` is visible and, if ``text`` is given, its text
    contains ``text``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    locator: Locator
    text: str | None = None


class _Step(BaseModel):
    """Fields every step may carry."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field("", max_length=200)
    """The operator's own words for the step; shown in the console and evidence."""
    write: bool = False
    """The step changes something on the site; once done it is never replayed."""
    interruptible: bool = True
    """May the task be preempted right before this step. Default: true, false for write steps."""
    if_visible: Locator | None = None
    """Run the step only when this locator is visible right now (e.g. log in when logged out)."""
    timeout_s: float | None = Field(None, gt=0, le=3600)
    """This step's timeout; default: the pool's ``step_timeout_s``."""
    verify: Verify | None = None
    """For write steps: how to tell whether an interrupted write happened."""

    @model_validator(mode="before")
    @classmethod
    def _writes_default_uninterruptible(cls, data: Any) -> Any:
        if isinstance(data, Mapping) and "interruptible" not in data and data.get("write") is True:
            return {**data, "interruptible": False}
        return data

    @model_validator(mode="after")
    def _verify_only_on_writes(self) -> _Step:
        if self.verify is not None and not self.write:
            raise ValueError("verify is only for write steps (add \"write\": true)")
        return self

    @property
    def label(self) -> str:
        """The action, plus the name when there is one."""
        action: str = getattr(self, "action", "step")
        return f"{action} '{self.name}'" if self.name else action


class NavigateStep(_Step):
    """Open a URL in the page."""

    action: Literal["navigate"]
    url: str = Field(min_length=1, max_length=4000)


class ClickStep(_Step):
    """Click the element the locator names."""

    action: Literal["click"]
    locator: Locator


class TypeTextStep(_Step):
    """Fill a text field (replacing what is in it)."""

    action: Literal["type_text"]
    locator: Locator
    text: str = Field(max_length=100_000)


class SelectOptionStep(_Step):
    """Choose an option of a ``<select>`` by its value or label."""

    action: Literal["select_option"]
    locator: Locator
    value: str


class UploadFileStep(_Step):
    """Put a file into an ``<input type=file>``; the file must be inside an asset folder."""

    action: Literal["upload_file"]
    locator: Locator
    path: str = Field(min_length=1, max_length=4000, pattern=r"^[^\x00-\x1f\x7f]*$")


class WaitElementStep(_Step):
    """Wait until an element is visible, hidden or attached."""

    action: Literal["wait_element"]
    locator: Locator
    state: Literal["visible", "hidden", "attached"] = "visible"


class ExtractStep(_Step):
    """Read text (or an attribute) of one element, or of all matches, into a result."""

    action: Literal["extract"]
    locator: Locator
    into: str = Field(pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The result's name: letters, digits, ``_`` and ``-``, at most 64."""
    attribute: str = Field("text", min_length=1, max_length=200)
    """``text`` for the visible text, otherwise an HTML attribute name (``href``)."""
    all: bool = False
    """Collect every match as a list instead of the first one."""


class AssertTextStep(_Step):
    """Fail unless the element's text contains ``text``."""

    action: Literal["assert_text"]
    locator: Locator
    text: str = Field(min_length=1)


class ScreenshotStep(_Step):
    """Take a screenshot; with ``into``, its file path becomes a result."""

    action: Literal["screenshot"]
    into: str | None = Field(None, pattern=r"^[A-Za-z0-9_-]{1,64}$")
    """The result's name (and part of the file name): letters, digits, ``_``, ``-``, ≤ 64."""


class PressKeyStep(_Step):
    """Press a key (``Enter``, ``Control+A``), in an element or on the page."""

    action: Literal["press_key"]
    key: str = Field(min_length=1, max_length=100)
    locator: Locator | None = None


Step = Annotated[
    NavigateStep | ClickStep | TypeTextStep | SelectOptionStep | UploadFileStep
    | WaitElementStep | ExtractStep | AssertTextStep | ScreenshotStep | PressKeyStep,
    Field(discriminator="action"),
]
"""One step of a flow; ``action`` says which kind."""

ACTIONS: tuple[str, ...] = (
    "navigate", "click", "type_text", "select_option", "upload_file", "wait_element",
    "extract", "assert_text", "screenshot", "press_key",
)


class Flow(BaseModel):
    """A named list of steps and the page it starts from (where a resumed run resets to)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=200)
    start_url: str = Field(min_length=1, max_length=4000)
    steps: list[Step] = Field(min_length=1, max_length=1000)
    description: str = ""


def step_label(index: int, step: _Step) -> str:
    """``steps[1] (type_text)``: how messages point at a step."""
    return f"steps[{index}] ({getattr(step, 'action', '?')})"


def _reason(err: Mapping[str, Any]) -> tuple[str, str]:
    """(extra field to append to the path, message) for one pydantic error."""
    kind = err["type"]
    if kind == "missing":
        return "", "field required"
    if kind == "extra_forbidden":
        return "", "unknown field"
    if kind == "union_tag_not_found":
        return "action", "field required (one of: " + ", ".join(ACTIONS) + ")"
    if kind == "union_tag_invalid":
        got = (err.get("ctx") or {}).get("tag", "?")
        return "action", f"unknown action {got!r} (one of: " + ", ".join(ACTIONS) + ")"
    if kind == "string_pattern_mismatch":
        last = err["loc"][-1] if err["loc"] else ""
        if last == "into":
            return "", "must be a plain name: letters, digits, _ and -, at most 64"
        if last == "path":
            return "", "holds a NUL byte or another control character"
    msg = str(err["msg"]).removeprefix("Value error, ")
    return "", msg[:1].lower() + msg[1:]


def spec_error_from(exc: ValidationError, *, prefix: str = "") -> SpecError:
    """The first error of a pydantic validation as a :class:`SpecError` naming the field."""
    err = exc.errors()[0]
    extra, reason = _reason(err)
    loc = [*err["loc"], extra] if extra else list(err["loc"])
    return SpecError(field_path(prefix, loc, tags=ACTIONS, whole="(flow)"), reason)


def parse_flow(data: Any, *, source: str = "") -> Flow:
    """Validate a parsed flow document.

    Args:
        data: the JSON object.
        source: where it came from (a file name); prefixes the field in errors.

    Raises:
        SpecError: the field and why, e.g. ``steps[2].locator: field required``.
    """
    prefix = f"{source}: " if source else ""
    if not isinstance(data, Mapping):
        raise SpecError(f"{prefix}(flow)", "must be a JSON object")
    try:
        return Flow.model_validate(data)
    except ValidationError as exc:
        err = spec_error_from(exc)
        raise SpecError(prefix + err.field, err.reason) from None


def inline_flow(steps: Sequence[Any]) -> Flow:
    """Inline task steps as an anonymous flow named ``inline``.

    Its start URL (where a resumed run resets to) is the first ``navigate`` step's URL.

    Raises:
        SpecError: a bad step (``steps[1].text: field required``), or no navigate step.
    """
    if not steps:
        raise SpecError("steps", "must hold at least one step")
    start = next(
        (s["url"] for s in steps
         if isinstance(s, Mapping) and s.get("action") == "navigate"
         and isinstance(s.get("url"), str) and s["url"]),
        None,
    )
    try:
        flow = Flow.model_validate(
            {"name": "inline", "start_url": start or "about:blank", "steps": list(steps)})
    except ValidationError as exc:
        raise spec_error_from(exc) from None
    if start is None:
        raise SpecError(
            "steps", "inline steps need a navigate step (its URL is where a resumed task "
            "starts again)")
    return flow


def flow_json_schema() -> dict[str, Any]:
    """JSON Schema of a flow file (``shopfleet schema flow``)."""
    schema = Flow.model_json_schema()
    schema["title"] = "ShopFleet flow"
    return schema


def task_json_schema(model: type[BaseModel]) -> dict[str, Any]:
    """JSON Schema of a task spec (``shopfleet schema task``), with inline steps spelled out.

    Args:
        model: the task spec model (``core.specs.TaskSpec``).
    """
    schema = model.model_json_schema()
    schema["title"] = "ShopFleet task"
    steps_prop = schema.get("properties", {}).get("steps")
    if isinstance(steps_prop, dict):
        # The task model keeps steps as plain objects (validated later as an inline flow);
        # point the schema at the real step shapes so editors can complete them.
        step_schema = Flow.model_json_schema()
        defs = step_schema.pop("$defs", {})
        schema.setdefault("$defs", {}).update(defs)
        item = step_schema["properties"]["steps"]["items"]
        schema["properties"]["steps"] = {
            "anyOf": [{"type": "array", "items": item, "minItems": 1}, {"type": "null"}],
            "default": None,
            "title": "Steps",
            "description": "Inline steps (an anonymous flow) instead of a flow name.",
        }
    return schema
