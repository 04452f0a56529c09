"""The recorder: make a flow by doing the work once in the shop's browser.

Built on Playwright's own recorder (the engine of ``playwright codegen``), driven through its
programmatic API, so every locator is one Playwright's selector generator chose. See
:mod:`.session` for the live part and :mod:`.convert` for how a recording becomes a flow.
"""

from __future__ import annotations

from ._page_script import TEXTS as TOOLBAR_TEXTS
from .convert import (
    Action,
    Changed,
    Loaded,
    Navigation,
    Pick,
    Post,
    RecordedFlow,
    Recording,
    ShopLogin,
    escape_braces,
    flow_from_recording,
    write_flow_file,
)
from .session import Recorder, open_recorder, record_flow

__all__ = [
    "TOOLBAR_TEXTS", "Action", "Changed", "Loaded", "Navigation", "Pick", "Post",
    "RecordedFlow", "Recorder", "Recording", "ShopLogin", "escape_braces",
    "flow_from_recording", "open_recorder", "record_flow", "write_flow_file",
]
