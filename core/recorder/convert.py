"""Turn what the recorder saw into a ShopFleet flow: placeholders, login, writes, verify.

The input is a :class:`Recording`: the events in the order they reached Python — Playwright's
recorded actions (their locators come from Playwright's own generator), the navigations the
person typed, the POST requests the page sent, what changed on the page after a write and the
elements picked with the toolbar. :func:`flow_from_recording` needs no browser; it lists the
asset folders (call it off the event loop).

Rules, in the order they apply:

* **Navigations** the person typed become ``navigate`` steps with ``{shop.base_url}`` in place of
  the shop's base URL; a number in the path becomes ``{params.<segment>_id}`` (``messages/42`` →
  ``message_id``) and every query value ``{params.<key>}``. The first one is the start URL.
* **Credentials** are recognised by value: a field filled with the shop's user name is
  ``{shop.username}``, with its password ``{shop.password}``. A password field filled with
  anything else becomes a parameter whose value is dropped. Credential values are never kept.
* **Typed values**, selects and uploads become ``{params.NAME}``, NAME from the field's
  accessible name (``Reply`` → ``reply``) or what the person chose (``param_names``).
  Upload paths become asset-folder-relative parameters.
* **Writes**: a click or Enter that was followed by a POST is ``write: true`` (and so not
  interruptible), with ``verify`` suggested from an element whose text changed after it
  (preferring one that shows a value typed for the write).
* **Login**: the fills leading to a password, the password and the step that submitted them
  get ``if_visible`` (the submit button, or the password field for Enter), so the flow runs
  with and without a saved session. The login's POST is not a write.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Literal
from urllib.parse import parse_qsl, urlsplit

from ..errors import SpecError
from ..flows.models import Flow, parse_flow

PickMode = Literal["extract", "extract_all", "assert_text"]

_FAKEPATH = re.compile(r"^[A-Za-z]:\\fakepath\\")
_NAME_IN_SELECTOR = re.compile(r'name="((?:[^"\\]|\\.)*)"')
_LABEL_SELECTOR = re.compile(r'^internal:label="((?:[^"\\]|\\.)*)"')
_SUBMITTING = frozenset({"click", "press"})
_TEXT_ROLES = ("textbox", "searchbox", "combobox", "spinbutton")


@dataclass(frozen=True)
class Action:
    """One action from Playwright's recorder (``click``, ``fill``, ``press``, ``select``…)."""

    name: str
    selector: str = ""
    text: str = field(default="", repr=False)
    """What was typed: may be a password until converted; never shown in a repr."""
    key: str = ""
    modifiers: int = 0
    options: tuple[str, ...] = field(default=(), repr=False)
    click_count: int = 1
    page: int = 0


@dataclass(frozen=True)
class Navigation:
    """A page the person opened (typed, not reached through a link or a form)."""

    url: str
    page: int = 0


@dataclass(frozen=True)
class Post:
    """A POST request the page sent (a form or a fetch)."""

    url: str
    navigation: bool
    page: int = 0


@dataclass(frozen=True)
class Loaded:
    """The page's main frame showed a new document."""

    page: int = 0


@dataclass(frozen=True)
class Changed:
    """Elements whose text changed after a click or Enter: ``(locator, text)`` pairs."""

    elements: tuple[tuple[str, str], ...] = field(repr=False)
    page: int = 0


@dataclass(frozen=True)
class Pick:
    """An element pointed at with the toolbar."""

    mode: PickMode
    locator: str
    unique: bool
    text: str = field(default="", repr=False)
    name: str = ""
    """The name the person typed in the toolbar, or ``""``."""
    hint: str = ""
    """A name suggested by the page (column header, label, id)."""
    page: int = 0


Event = Action | Navigation | Post | Loaded | Changed | Pick


@dataclass
class Recording:
    """The recorder's events in arrival order."""

    events: list[Event] = field(default_factory=list)


@dataclass(frozen=True)
class ShopLogin:
    """What identifies the shop in a recording: its base URL and the credentials typed."""

    base_url: str
    username: str = field(default="", repr=False)
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class RecordedFlow:
    """A recorded flow, the parameter values seen while recording, and notes for the person.

    ``params`` never holds a credential: it is what to pass as ``--param`` to replay the
    recording as it was done.
    """

    flow: Flow
    params: dict[str, str]
    notes: tuple[str, ...] = ()

    def document(self) -> dict[str, Any]:
        """The flow as the JSON object of a flow file."""
        return self.flow.model_dump(mode="json", exclude_defaults=True, by_alias=True)

    def to_json(self) -> str:
        """The flow file's text: one step a line, like the shipped flows."""
        doc = self.document()
        steps = [{k: s[k] for k in sorted(s, key=_KEY_ORDER.index)} for s in doc.pop("steps")]
        head = json.dumps(doc, ensure_ascii=False, indent=2)[:-2]
        lines = ",\n".join("    " + json.dumps(s, ensure_ascii=False) for s in steps)
        return f'{head},\n  "steps": [\n{lines}\n  ]\n}}\n'


_KEY_ORDER = ["name", "action", "url", "locator", "text", "value", "path", "key", "into",
              "attribute", "all", "state", "if_visible", "write", "interruptible", "verify",
              "timeout_s"]


def write_flow_file(recorded: RecordedFlow, folder: Path, *,
                    taken: Sequence[str] = ()) -> Path:
    """Save a recorded flow as ``folder/NAME.json``; never over an existing file or name.

    Blocking file I/O: call it off the event loop.

    Args:
        recorded: the flow.
        folder: the user's flow folder (``[flows] dirs``); created when missing.
        taken: flow names already defined (the registry's, shipped ones included).

    Raises:
        SpecError: the name is taken (``name``) or the file exists or cannot be written.
    """
    name = recorded.flow.name
    if name in taken:
        raise SpecError("name", f"a flow named {name!r} exists already (choose another name)")
    if not re.fullmatch(r"[A-Za-z0-9_\-]{1,100}", name):
        raise SpecError("name", "must be letters, digits, _ and -, at most 100 (it is the "
                        "file's name)")
    path = folder / f"{name}.json"
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with path.open("x", encoding="utf-8") as fh:
            fh.write(recorded.to_json())
    except FileExistsError:
        raise SpecError("name", f"{path} exists already (choose another name)") from None
    except OSError as exc:
        raise SpecError(str(path), f"cannot write: {exc.strerror or exc}") from None
    return path


def escape_braces(text: str) -> str:
    """A literal for a flow field: ``{`` and ``}`` doubled so they are not placeholders."""
    return text.replace("{", "{{").replace("}", "}}")


def slug(text: str) -> str:
    """A parameter or result name from free text: ``User name`` → ``user_name``."""
    s = re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_")[:48]
    return "p_" + s if s[:1].isdigit() else s


def field_name(selector: str) -> str:
    """The accessible name in a Playwright selector (``…[name="Reply"i]`` → ``Reply``)."""
    m = _NAME_IN_SELECTOR.search(selector) or _LABEL_SELECTOR.search(selector)
    if m:
        return m.group(1).replace('\\"', '"')
    m = re.search(r"#([A-Za-z][\w-]*)", selector)
    return m.group(1) if m else ""


def _is_password_field(selector: str) -> bool:
    return bool(re.search(r"password|passwd|密码", field_name(selector), re.I))


def _keys(key: str, modifiers: int) -> str:
    names = [n for bit, n in ((1, "Alt"), (2, "Control"), (4, "Meta"), (8, "Shift"))
             if modifiers & bit]
    return "+".join([*names, key])


class _Params:
    """Parameter names handed out once each, with the value seen while recording."""

    def __init__(self, chosen: Mapping[str, str]) -> None:
        self.chosen = dict(chosen)
        self.values: dict[str, str] = {}
        self.secret: set[str] = set()

    def add(self, suggested: str, value: str, *, secret: bool = False) -> str:
        base = self.chosen.get(suggested, suggested) or "value"
        base = slug(base) or "value"
        name, n = base, 2
        while name in self.values or name in self.secret:
            name, n = f"{base}_{n}", n + 1
        if secret:
            self.secret.add(name)
        else:
            self.values[name] = value
        return "{params." + name + "}"

    def placeholder_for(self, text: str) -> str | None:
        """A parameter already holding exactly this value (a reply typed then checked)."""
        for name, value in self.values.items():
            if value and value == text:
                return "{params." + name + "}"
        return None

    def in_locator(self, locator: str) -> str:
        """A picked locator with the recorded values in it replaced by their placeholders
        (``internal:text="Red teapot"i`` → ``internal:text="{params.title}"i``)."""
        out = escape_braces(locator)
        for name, value in sorted(self.values.items(), key=lambda kv: -len(kv[1])):
            if len(value) >= 2 and escape_braces(value) in out:
                out = out.replace(escape_braces(value), "{params." + name + "}")
        return out

    def within(self, text: str) -> str | None:
        for name, value in sorted(self.values.items(), key=lambda kv: -len(kv[1])):
            if len(value) >= 2 and value in text:
                return "{params." + name + "}"
        return None


def _singular(word: str) -> str:
    if word.endswith("ies"):
        return word[:-3] + "y"
    if word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def _url_template(url: str, base_url: str, params: _Params) -> str:
    base = base_url.rstrip("/")
    if not (url == base or url.startswith(base + "/") or url.startswith(base + "?")):
        return escape_braces(url)  # another site: kept literally (the origin policy decides)
    parts = urlsplit(url[len(base):] or "/")
    segments = parts.path.split("/")
    out: list[str] = []
    for i, seg in enumerate(segments):
        if seg.isdigit():
            prev = next((s for s in reversed(segments[:i]) if s and not s.isdigit()), "item")
            out.append(params.add(_singular(slug(prev)) + "_id", seg))
        else:
            out.append(escape_braces(seg))
    path = "/".join(out)
    query = ""
    if parts.query:
        query = "?" + "&".join(
            f"{escape_braces(k)}={params.add(k, v)}" for k, v in parse_qsl(
                parts.query, keep_blank_values=True))
    return "{shop.base_url}" + ("" if path == "/" and not query else path) + query


def _attach_posts(events: Sequence[Event]) -> tuple[dict[int, Post], dict[int, Changed], list[str]]:
    """Which action each POST followed, and what changed after it.

    The recorder keeps what follows a click behind the click (see
    :meth:`~core.recorder.session.Recorder.action_added`), so a POST belongs to the click or
    Enter right before it.
    """
    writes: dict[int, Post] = {}
    changes: dict[int, Changed] = {}
    notes: list[str] = []
    last_write: int | None = None
    for i, ev in enumerate(events):
        if isinstance(ev, Changed):
            if last_write is not None and last_write not in changes:
                changes[last_write] = ev
            continue
        if not isinstance(ev, Post):
            continue
        target: int | None = None
        for j in range(i - 1, -1, -1):
            prev = events[j]
            if isinstance(prev, Action):
                if (prev.name in _SUBMITTING and j not in writes and prev.page == ev.page
                        and (prev.name == "click" or prev.key == "Enter")):
                    target = j
                break
        if target is None:
            notes.append(f"a POST to {urlsplit(ev.url).path} was not matched to a click or Enter; "
                         "mark the step that sent it as a write by hand")
            continue
        writes[target] = ev
        last_write = target
    return writes, changes, notes


def _clean(events: Sequence[Event]) -> list[Event]:
    """Drop the recorder's noise: the click Enter synthesises on a form's submit button, a
    click into a text field right before filling it, the recorder's own page events."""
    out: list[Event] = []
    for i, ev in enumerate(events):
        if isinstance(ev, Action):
            if ev.name in ("openPage", "closePage", "navigate"):
                continue  # navigations come from the network (typed ones only)
            if ev.name == "click" and ev.click_count == 0:
                continue
            if ev.name == "click" and ev.selector.startswith(
                    tuple(f"internal:role={r}" for r in _TEXT_ROLES)):
                nxt = next((e for e in events[i + 1:] if isinstance(e, Action)), None)
                if nxt is not None and nxt.name == "fill" and nxt.selector == ev.selector:
                    continue
        out.append(ev)
    return out


def flow_from_recording(recording: Recording, *, name: str, shop: ShopLogin,
                        description: str = "", param_names: Mapping[str, str] | None = None,
                        asset_dirs: Sequence[Path] = ()) -> RecordedFlow:
    """Build the flow.

    Args:
        recording: the recorder's events.
        name: the flow's name.
        shop: the shop's base URL and the credentials the person typed (to recognise them).
        description: the flow's description.
        param_names: the person's names for suggested parameters (``{"user_name": "buyer"}``).
        asset_dirs: asset folders; an uploaded file's name found in one becomes its path there.

    Raises:
        SpecError: nothing usable was recorded, or the result is not a valid flow (field named).
    """
    events = _clean(recording.events)
    writes, changes, notes = _attach_posts(events)
    params = _Params(param_names or {})
    steps: list[dict[str, Any]] = []
    login: list[int] = []          # indices into steps
    pending_fills: list[int] = []  # fills since the last submitting step, on one page
    login_open = False
    write_params: list[str] = []
    start_url: str | None = None
    uploads = {n: rel for d in asset_dirs for n, rel in _files(d)}

    for i, ev in enumerate(events):
        if isinstance(ev, Navigation):
            url = _url_template(ev.url, shop.base_url, params)
            start_url = start_url or url
            steps.append({"name": "open the page", "action": "navigate", "url": url})
            pending_fills = []
            continue
        if isinstance(ev, Pick):
            steps.append(_pick_step(ev, params, notes))
            continue
        if not isinstance(ev, Action):
            continue
        loc = escape_braces(ev.selector)
        label = field_name(ev.selector)
        if "nth=" in ev.selector:
            notes.append(f"{ev.selector!r}: Playwright found nothing unique and chose by position; "
                         "check it (a test id on the element fixes it)")
        if ev.name == "fill" and _FAKEPATH.match(ev.text):
            file_name = _FAKEPATH.sub("", ev.text)
            found = uploads.get(file_name)
            value = str(found) if found is not None else file_name
            if found is None:
                notes.append(f"upload {file_name!r}: put the file in an asset folder; the "
                             "parameter is its path there")
            steps.append({"name": label or "upload", "action": "upload_file", "locator": loc,
                          "path": params.add(slug(label) or "file", value)})
            write_params.append(steps[-1]["path"])
            continue
        if ev.name == "fill":
            if shop.password and ev.text == shop.password:
                text = "{shop.password}"
                login_open = True
                login.extend([*pending_fills, len(steps)])
                pending_fills = []
            elif shop.username and ev.text == shop.username:
                text = "{shop.username}"
            elif _is_password_field(ev.selector):
                text = params.add(slug(label) or "password", "", secret=True)
                notes.append(f"the field {label!r} looks like a password and did not match the "
                             "shop's: its value was not kept; pass it as a parameter")
            else:
                text = params.add(slug(label) or "text", ev.text)
                write_params.append(text)
            pending_fills.append(len(steps))
            steps.append({"name": label or "type", "action": "type_text", "locator": loc,
                          "text": text})
            continue
        if ev.name == "select":
            value = params.add(slug(label) or "option", ev.options[0] if ev.options else "")
            if len(ev.options) > 1:
                notes.append(f"{label!r}: several options were selected; only the first is kept")
            steps.append({"name": label or "select", "action": "select_option", "locator": loc,
                          "value": value})
            write_params.append(value)
            continue
        step: dict[str, Any]
        if ev.name in ("click", "check", "uncheck"):
            step = {"name": label or ev.name, "action": "click", "locator": loc}
        elif ev.name == "press":
            step = {"name": f"press {ev.key}", "action": "press_key", "locator": loc,
                    "key": _keys(ev.key, ev.modifiers)}
        elif ev.name in ("assertText", "assertValue") and ev.text:
            # Playwright's own overlay toolbar has assertion tools too.
            step = _pick_step(Pick("assert_text", ev.selector, True, ev.text), params, notes)
        elif ev.name == "assertVisible":
            step = {"name": label or "visible", "action": "wait_element", "locator": loc}
        else:
            notes.append(f"a {ev.name!r} action is not supported by flows yet and was left out")
            continue
        if i in writes and login_open:
            # The login's own POST: the submit closes the login section, it is no write.
            if_visible = loc if ev.name == "click" else steps[login[-1]]["locator"]
            for k in login:
                steps[k]["if_visible"] = if_visible
                steps[k]["name"] = "log in: " + steps[k]["name"]
            step["if_visible"] = if_visible
            step["name"] = "log in"
            login_open = False
            login = []
        elif i in writes:
            step["write"] = True
            step["interruptible"] = False
            verify = _verify(changes.get(i), params, write_params)
            if verify is not None:
                step["verify"] = verify
            else:
                notes.append(f"step {len(steps)} ({step['name']}) writes but nothing on the page "
                             "changed that proves it: add a verify by hand")
            write_params = []
        pending_fills = []
        steps.append(step)

    if not steps:
        raise SpecError("steps", "nothing was recorded")
    if start_url is None:
        raise SpecError("steps", "the recording opened no page of the shop (start from the "
                        "address bar so the flow knows where it starts)")
    doc: dict[str, Any] = {"name": name, "start_url": start_url, "steps": steps}
    if description:
        doc["description"] = description
    flow = parse_flow(doc, source=name)
    return RecordedFlow(flow, dict(params.values), tuple(notes))


def _verify(changed: Changed | None, params: _Params,
            write_params: Sequence[str]) -> dict[str, str] | None:
    if changed is None or not changed.elements:
        return None
    values = {p: params.values.get(p[len("{params."):-1], "") for p in write_params}
    for locator, text in changed.elements:
        for placeholder, value in values.items():
            if value and value in text:
                return {"locator": params.in_locator(locator), "text": placeholder}
    locator, text = changed.elements[0]
    return {"locator": params.in_locator(locator), "text": escape_braces(text[:200])}


def _pick_step(pick: Pick, params: _Params, notes: list[str]) -> dict[str, Any]:
    loc = params.in_locator(pick.locator)
    if pick.mode == "assert_text":
        # The text shown, or the parameter typed earlier when the page shows it back.
        text = (params.placeholder_for(pick.text) or params.within(pick.text)
                or escape_braces(pick.text[:500]))
        if not pick.unique:
            notes.append(f"the checked element {pick.locator!r} is not unique on the page")
        return {"name": pick.name or "check the text", "action": "assert_text", "locator": loc,
                "text": text}
    every = pick.mode == "extract_all"
    base = slug(pick.name) or slug(pick.hint) or "value"
    if every and not pick.name and not base.endswith("s"):
        base += "s"
    if not pick.unique and not every:
        notes.append(f"the extracted element {pick.locator!r} is not unique on the page")
    step: dict[str, Any] = {"name": pick.name or pick.hint or "extract", "action": "extract",
                            "locator": loc, "into": base[:64]}
    if every:
        step["all"] = True
    return step


def _files(folder: Path) -> list[tuple[str, PurePosixPath]]:
    """(file name, path relative to the folder) for the files in an asset folder."""
    try:
        return [(p.name, PurePosixPath(p.relative_to(folder).as_posix()))
                for p in sorted(folder.rglob("*")) if p.is_file()]
    except OSError:
        return []
