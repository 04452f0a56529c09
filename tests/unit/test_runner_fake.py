"""The step runner against the scripted fake page: order, checkpoints, resume, yield, failures."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from core.errors import (
    BrowserCrashed,
    NeedsHuman,
    NetworkDown,
    PageChanged,
    RateLimited,
    SiteFailed,
    SpecError,
    StepTimeout,
    TaskError,
)
from core.flows import Checkpoint, Flow, RunResult, ShopInfo, StepEvent, parse_flow, run_flow
from core.flows.fakepage import (
    FakeAction,
    FakeElement,
    FakePage,
    FakeScreen,
    FakeSite,
    FakeWrite,
)

BASE = "https://seller.test"
SECRET = "hunter2-Secret"
SHOP = ShopInfo(name="pdd-1", platform="pdd", base_url=BASE, username="alice", password=SECRET)
PARAMS = {"message_id": "8812", "reply": "Shipped today"}


def thread_text(site: FakeSite) -> str:
    return " | ".join(str(w.fields.get("#reply", "")) for w in site.writes)


def make_site() -> FakeSite:
    logged_out: Callable[[FakeSite], bool] = lambda s: not s.flags.get("logged_in")  # noqa: E731
    return FakeSite({
        f"{BASE}/messages": FakeScreen(
            elements={
                "#login-form": FakeElement(visible=logged_out),
                "#user": FakeElement(type="text", visible=logged_out),
                "#pass": FakeElement(type="password", visible=logged_out),
                "#login-btn": FakeElement(text="Log in", visible=logged_out),
                ".msg-link-8812": FakeElement(text="Order 8812"),
                ".msg-title": [FakeElement(text="Order 8812"), FakeElement(text="Order 9001")],
            },
            clicks={
                "#login-btn": FakeAction(set_flags={"logged_in": True}),
                ".msg-link-8812": FakeAction(goto=f"{BASE}/messages/8812"),
            },
            console=["messages page loaded"],
        ),
        f"{BASE}/messages/8812": FakeScreen(
            elements={"#reply": FakeElement(type="text"),
                      "#submit-btn": FakeElement(text="Send"),
                      ".thread": FakeElement(text=thread_text),
                      # The conversation shows that a reply went out (what a resumed run sees).
                      ".success-msg": FakeElement(text="Reply sent",
                                                  visible=lambda s: bool(s.writes))},
            clicks={"#submit-btn": FakeAction(write="reply", goto=f"{BASE}/messages/8812/sent")},
            keys={"#reply:Enter": FakeAction(write="reply-by-enter")},
        ),
        f"{BASE}/messages/8812/sent": FakeScreen(
            elements={".success-msg": FakeElement(text="Reply sent")}),
    })


REPLY_FLOW = parse_flow({
    "name": "reply_customer",
    "start_url": "{shop.base_url}/messages",
    "steps": [
        {"action": "type_text", "locator": "#user", "text": "{shop.username}",
         "if_visible": "#login-form", "name": "user"},
        {"action": "type_text", "locator": "#pass", "text": "{shop.password}",
         "if_visible": "#login-form"},
        {"action": "click", "locator": "#login-btn", "if_visible": "#login-form"},
        {"action": "click", "locator": ".msg-link-{params.message_id}"},
        {"action": "type_text", "locator": "#reply", "text": "{params.reply}"},
        {"action": "click", "locator": "#submit-btn", "write": True,
         "verify": {"locator": ".thread", "text": "{params.reply}"}},
        {"action": "wait_element", "locator": ".success-msg"},
        {"action": "extract", "locator": ".success-msg", "into": "status"},
    ],
})
SEND = 5  # index of the write step


class Harness:
    """Runs flows on a fresh fake page and keeps what the runner reported."""

    def __init__(self, tmp_path: Path, site: FakeSite | None = None) -> None:
        self.site = site or make_site()
        self.page: FakePage = self.site.new_page()
        self.evidence_dir = tmp_path / "evidence"
        self.saved: list[Checkpoint] = []
        self.saved_at: list[tuple[Checkpoint, int, list[str]]] = []
        self.network: list[str] = []
        self.events: list[StepEvent] = []

    async def save(self, cp: Checkpoint) -> None:
        # Round-trip through JSON: what the store would keep.
        cp = Checkpoint.from_dict(json.loads(json.dumps(cp.to_dict())))
        self.saved.append(cp)
        self.saved_at.append((cp, len(self.site.writes), list(self.site.log)))

    async def gate(self, url: str) -> None:
        self.network.append(url)

    def run(self, flow: Flow = REPLY_FLOW, *, checkpoint: Checkpoint | None = None,
            params: dict[str, Any] | None = None, should_yield: Callable[[], bool] | None = None,
            new_page: bool = False, **kw: Any) -> RunResult:
        if new_page:
            self.page = self.site.new_page()
        return asyncio.run(run_flow(
            self.page, flow, params=PARAMS if params is None else params, shop=SHOP,
            checkpoint=checkpoint, save_checkpoint=self.save, evidence_dir=self.evidence_dir,
            step_timeout_s=5.0, before_network=self.gate, on_step=self.events.append,
            should_yield=should_yield, **kw))

    def fail(self, flow: Flow = REPLY_FLOW, **kw: Any) -> TaskError:
        with pytest.raises(TaskError) as info:
            self.run(flow, **kw)
        return info.value


@pytest.fixture
def h(tmp_path: Path) -> Harness:
    return Harness(tmp_path)


def flow_of(*steps: dict[str, Any], start_url: str = f"{BASE}/messages") -> Flow:
    return parse_flow({"name": "t", "start_url": start_url, "steps": list(steps)})


# -- a normal run ------------------------------------------------------------------------------


def test_runs_steps_in_order_with_placeholders_and_logs_in_when_needed(h: Harness) -> None:
    result = h.run()
    assert result.status == "done"
    assert result.results == {"status": "Reply sent"}
    assert h.site.log == [
        f"goto {BASE}/messages", "fill #user", "fill #pass", "click #login-btn",
        "click .msg-link-8812", f"goto {BASE}/messages/8812", "fill #reply",
        "click #submit-btn", f"goto {BASE}/messages/8812/sent",
    ]
    assert h.site.writes == [FakeWrite("reply", f"{BASE}/messages/8812",
                                       {"#reply": "Shipped today"})]
    assert [e.status for e in result.steps if e.index is not None] == ["done"] * 8


def test_login_steps_are_skipped_when_already_logged_in(h: Harness) -> None:
    h.site.flags["logged_in"] = True
    result = h.run()
    assert "fill #pass" not in h.site.log and "click #login-btn" not in h.site.log
    assert [e.status for e in result.steps if e.index in (0, 1, 2)] == ["skipped"] * 3
    assert len(h.site.writes) == 1


def test_rate_gate_is_asked_before_each_step_that_reaches_the_site(h: Harness) -> None:
    h.run()
    # start_url, the login click, the message click, the send click; typing is not gated.
    assert h.network == [f"{BASE}/messages", f"{BASE}/messages", f"{BASE}/messages",
                         f"{BASE}/messages/8812"]


def test_press_enter_is_gated_and_can_be_a_write(h: Harness) -> None:
    flow = flow_of({"action": "navigate", "url": f"{BASE}/messages/8812"},
                   {"action": "type_text", "locator": "#reply", "text": "hi"},
                   {"action": "press_key", "locator": "#reply", "key": "Tab"},
                   {"action": "press_key", "locator": "#reply", "key": "Enter", "write": True})
    h.run(flow)
    assert h.network == [f"{BASE}/messages/8812", f"{BASE}/messages/8812"]
    assert [w.name for w in h.site.writes] == ["reply-by-enter"]
    assert any(cp.write_in_flight == 3 for cp in h.saved)


def test_step_events_report_start_and_end(h: Harness) -> None:
    h.run()
    starts = [e.index for e in h.events if e.status == "started"]
    assert starts == [None, 0, 1, 2, 3, 4, 5, 6, 7]
    assert h.events[-1].status == "done" and h.events[-1].action == "extract"


# -- checkpoints -------------------------------------------------------------------------------


def test_write_checkpoint_is_saved_before_the_click_and_confirmed_after(h: Harness) -> None:
    h.run()
    in_flight = [(cp, writes, log) for cp, writes, log in h.saved_at
                 if cp.write_in_flight == SEND]
    assert len(in_flight) == 1
    cp, writes_then, log_then = in_flight[0]
    assert writes_then == 0 and "click #submit-btn" not in log_then
    assert (cp.next_step, cp.writes_done) == (SEND, [])
    after = h.saved[h.saved.index(cp) + 1]
    assert (after.next_step, after.writes_done, after.write_in_flight) == (SEND + 1, [SEND], None)
    assert h.saved[-1] == Checkpoint(next_step=8, results={"status": "Reply sent"},
                                     writes_done=[SEND])


def test_every_step_saves_its_progress_with_results(h: Harness) -> None:
    h.run()
    assert [cp.next_step for cp in h.saved if cp.write_in_flight is None] == list(range(1, 9))


def test_checkpoint_round_trips_and_rejects_garbage() -> None:
    cp = Checkpoint(next_step=3, results={"a": [1, "x"]}, writes_done=[1], write_in_flight=None)
    assert Checkpoint.from_dict(json.loads(json.dumps(cp.to_dict()))) == cp
    with pytest.raises(SpecError, match=r"checkpoint\.next_step"):
        Checkpoint.from_dict({"next_step": -1})


# -- resume ------------------------------------------------------------------------------------


def test_resume_replays_reads_skips_done_write_and_continues(h: Harness) -> None:
    h.run()
    after_write = next(cp for cp in h.saved if cp.next_step == SEND + 1)
    h.site.log.clear()
    h.site.flags.clear()  # the session expired: the replay must log in again
    result = h.run(checkpoint=after_write, new_page=True)
    assert result.status == "done" and result.results == {"status": "Reply sent"}
    assert len(h.site.writes) == 1  # not sent twice
    assert "click #submit-btn" not in h.site.log
    assert h.site.log[:6] == [f"goto {BASE}/messages", "fill #user", "fill #pass",
                              "click #login-btn", "click .msg-link-8812",
                              f"goto {BASE}/messages/8812"]
    replayed = [e.index for e in result.steps if e.status == "replayed"]
    assert replayed == [0, 1, 2, 3, 4]


def test_resume_replays_only_from_the_last_navigation(h: Harness) -> None:
    """A navigation throws page state away: steps before the last one are not replayed."""
    flow = flow_of({"action": "navigate", "url": f"{BASE}/messages"},
                   {"action": "extract", "locator": ".msg-link-8812", "into": "first"},
                   {"action": "navigate", "url": f"{BASE}/messages/8812"},
                   {"action": "type_text", "locator": "#reply", "text": "hi"},
                   {"action": "extract", "locator": "#reply", "attribute": "value",
                    "into": "typed"})
    h.site.flags["logged_in"] = True
    result = h.run(flow, checkpoint=Checkpoint(next_step=4, results={"first": "x"}),
                   new_page=True)
    assert result.status == "done"
    assert f"goto {BASE}/messages" not in h.site.log          # step 0 was not replayed
    assert h.site.log[:2] == [f"goto {BASE}/messages/8812", "fill #reply"]
    assert [e.index for e in result.steps if e.status == "replayed"] == [2, 3]
    assert result.results["first"] == "x"                       # extracted results survive


def test_resume_of_an_unverifiable_interrupted_write_needs_a_human(h: Harness) -> None:
    flow = flow_of({"action": "navigate", "url": f"{BASE}/messages/8812"},
                   {"action": "click", "locator": "#submit-btn", "write": True})
    err = h.fail(flow, checkpoint=Checkpoint(next_step=1, write_in_flight=1))
    assert isinstance(err, NeedsHuman) and err.step == 1
    assert "outcome is unknown" in str(err)
    assert h.site.writes == []
    assert Path(err.evidence["screenshot"]).exists()


def test_resume_of_an_interrupted_write_that_verify_proves_done(h: Harness) -> None:
    h.site.writes.append(FakeWrite("reply", f"{BASE}/messages/8812", {"#reply": "Shipped today"}))
    result = h.run(checkpoint=Checkpoint(next_step=SEND, write_in_flight=SEND), new_page=True)
    assert result.status == "done"
    assert len(h.site.writes) == 1
    assert any(e.status == "verified" and e.index == SEND for e in result.steps)
    assert result.checkpoint.writes_done == [SEND]


def test_resume_of_an_interrupted_write_that_verify_says_did_not_happen(h: Harness) -> None:
    result = h.run(checkpoint=Checkpoint(next_step=SEND, write_in_flight=SEND), new_page=True)
    assert result.status == "done"
    assert [w.fields["#reply"] for w in h.site.writes] == ["Shipped today"]


def test_checkpoint_that_does_not_fit_the_flow_is_refused(h: Harness) -> None:
    with pytest.raises(SpecError, match="not a write step"):
        h.run(checkpoint=Checkpoint(next_step=4, writes_done=[3]))


# -- preemption --------------------------------------------------------------------------------


def test_yields_at_a_step_boundary_and_resumes_without_double_writes(h: Harness) -> None:
    # Preemption is requested once steps 0-3 are done: step 3 (open the message) is the
    # site's fifth and sixth action.
    result = h.run(should_yield=lambda: len(h.site.log) >= 5)
    assert result.status == "yielded"
    assert result.checkpoint.next_step == 4
    assert h.saved[-1] == result.checkpoint
    assert h.site.writes == []
    done = h.run(checkpoint=result.checkpoint, new_page=True)
    assert done.status == "done" and len(h.site.writes) == 1


def test_does_not_yield_before_a_non_interruptible_step(h: Harness) -> None:
    h.site.flags["logged_in"] = True

    def should_yield() -> bool:
        # Ask to yield from the moment step 4 (typing the reply) is done.
        return any(cp.next_step == SEND for cp in h.saved)

    result = h.run(should_yield=should_yield)
    assert result.status == "yielded"
    # The send click (not interruptible) still ran; the run stopped right after it.
    assert len(h.site.writes) == 1
    assert result.checkpoint.next_step == SEND + 1
    assert result.checkpoint.writes_done == [SEND]


def test_yield_before_anything_ran_returns_a_saved_checkpoint(h: Harness) -> None:
    result = h.run(should_yield=lambda: True)
    assert result.status == "yielded" and result.checkpoint == Checkpoint()
    assert h.site.log == [] and h.saved == [Checkpoint()]


# -- failures ----------------------------------------------------------------------------------


def test_missing_locator_is_page_changed_with_evidence(h: Harness) -> None:
    del h.site.pages[f"{BASE}/messages/8812"].elements["#reply"]
    err = h.fail()
    assert isinstance(err, PageChanged) and err.step == 4
    assert "'#reply'" in str(err)
    steps = json.loads(Path(err.evidence["steps"]).read_text())
    assert steps["failure"]["error_class"] == "page_changed"
    assert [s["status"] for s in steps["steps"]][-1] == "failed"
    assert Path(err.evidence["screenshot"]).read_bytes().startswith(b"\x89PNG")
    # The write never started: the last checkpoint has nothing in flight.
    assert h.saved[-1].write_in_flight is None


def test_missing_write_button_does_not_leave_the_write_in_flight(h: Harness) -> None:
    del h.site.pages[f"{BASE}/messages/8812"].elements["#submit-btn"]
    err = h.fail()
    assert isinstance(err, PageChanged) and err.step == SEND
    assert all(cp.write_in_flight is None for cp in h.saved)


def test_server_error_is_site_failed(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages/8812"].status = 502
    err = h.fail()
    assert type(err) is SiteFailed and err.step == 3 and "502" in str(err)


@pytest.mark.parametrize(("status", "headers", "wait"), [
    (503, {"Retry-After": "30"}, 30.0),
    (429, {}, 60.0),
    (429, {"retry-after": "5"}, 5.0),
])
def test_rate_limit_answers_are_rate_limited(h: Harness, status: int, headers: dict[str, str],
                                             wait: float) -> None:
    screen = h.site.pages[f"{BASE}/messages"]
    screen.status, screen.headers = status, headers
    err = h.fail()
    assert isinstance(err, RateLimited)
    assert (err.retry_after_s, err.domain, err.step) == (wait, "seller.test", None)


def test_write_answered_with_5xx_stays_in_flight(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages/8812/sent"].status = 500
    err = h.fail()
    assert type(err) is SiteFailed and err.step == SEND
    assert h.saved[-1].write_in_flight == SEND


def test_captcha_is_needs_human(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages/8812"].elements["#captcha"] = FakeElement(text="Slide")
    err = h.fail()
    assert isinstance(err, NeedsHuman) and err.step == 3
    assert "'#captcha'" in str(err)


def test_hidden_marker_does_not_count_and_markers_are_configurable(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages"].elements[".login-error"] = FakeElement(visible=False)
    h.site.pages[f"{BASE}/messages"].elements[".banned"] = FakeElement()
    assert h.run(human_markers=(".login-error",)).status == "done"
    err = h.fail(human_markers=(".banned",))
    assert isinstance(err, NeedsHuman) and err.step is None


def test_crash_is_browser_crashed_and_evidence_says_why_no_screenshot(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages/8812"].clicks["#submit-btn"] = FakeAction(crash=True)
    err = h.fail()
    assert isinstance(err, BrowserCrashed) and err.step == SEND
    assert "screenshot" not in err.evidence
    assert "crashed" in err.evidence["notes"]
    steps = json.loads(Path(err.evidence["steps"]).read_text())
    assert "screenshot.png" in steps["not_captured"]


def test_navigation_timeout_is_step_timeout(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages"].load_timeout = True
    assert isinstance(h.fail(), StepTimeout)


def test_network_error_is_network_down(h: Harness) -> None:
    """#15: a network-path failure is not the site's answer: NetworkDown (a SiteFailed)."""
    h.site.pages[f"{BASE}/messages"].net_error = "net::ERR_CONNECTION_REFUSED"
    err = h.fail()
    assert type(err) is NetworkDown and "ERR_CONNECTION_REFUSED" in str(err)
    assert isinstance(err, SiteFailed)


WRITE_BY_URL = flow_of(
    {"action": "navigate", "url": f"{BASE}/messages/8812"},
    {"action": "navigate", "url": f"{BASE}/messages/8812/sent", "write": True, "name": "send"},
    {"action": "wait_element", "locator": ".success-msg"})


def test_a_write_whose_request_never_left_is_not_left_in_flight(h: Harness) -> None:
    """#15: a write step cut off by a DNS failure (or a refused connection, no network): the
    request never left, so the write did not happen — the checkpoint says "run step 1 again",
    not "in flight" (which the next attempt would have to settle as a write of unknown
    outcome: a ticket without ``verify``). Once the name resolves, the step runs."""
    sent = h.site.pages[f"{BASE}/messages/8812/sent"]
    sent.net_error = "net::ERR_NAME_NOT_RESOLVED"
    err = h.fail(WRITE_BY_URL)
    assert type(err) is NetworkDown and err.step == 1
    assert any(cp.write_in_flight == 1 for cp in h.saved)       # durable before it went
    last = h.saved[-1]
    assert (last.next_step, last.write_in_flight, last.writes_done) == (1, None, [])
    sent.net_error = None
    result = h.run(WRITE_BY_URL, checkpoint=last, new_page=True)
    assert result.status == "done" and result.checkpoint.writes_done == [1]
    assert h.site.log.count(f"goto {BASE}/messages/8812/sent") == 2


@pytest.mark.parametrize("code", ["ERR_CONNECTION_RESET", "ERR_EMPTY_RESPONSE",
                                  "ERR_CONNECTION_CLOSED", "ERR_CONNECTION_TIMED_OUT"])
def test_a_write_cut_off_after_its_request_may_have_left_stays_in_flight(
        h: Harness, code: str) -> None:
    """A reset or an empty answer can come after the site took the request: the outcome is
    unknown, the write stays in flight (verified or handed to a person, never replayed)."""
    h.site.pages[f"{BASE}/messages/8812/sent"].net_error = f"net::{code}"
    err = h.fail(WRITE_BY_URL)
    assert type(err) is NetworkDown and err.step == 1
    assert h.saved[-1].write_in_flight == 1
    with pytest.raises(NeedsHuman):                  # no verify: a person decides
        h.run(WRITE_BY_URL, checkpoint=h.saved[-1], new_page=True)


def test_wedged_step_times_out(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages/8812"].clicks["#submit-btn"] = FakeAction(hang=True)
    flow = flow_of({"action": "navigate", "url": f"{BASE}/messages/8812"},
                   {"action": "click", "locator": "#submit-btn", "timeout_s": 0.05})
    err = h.fail(flow)
    assert isinstance(err, StepTimeout) and err.step == 1


def test_assert_text_says_what_the_page_shows(h: Harness) -> None:
    flow = flow_of({"action": "navigate", "url": f"{BASE}/messages/8812/sent"},
                   {"action": "assert_text", "locator": ".success-msg", "text": "Refunded"})
    err = h.fail(flow)
    assert isinstance(err, PageChanged) and "it shows 'Reply sent'" in str(err)
    h.run(flow_of({"action": "navigate", "url": f"{BASE}/messages/8812/sent"},
                  {"action": "assert_text", "locator": ".success-msg", "text": "sent"}))


# -- evidence ----------------------------------------------------------------------------------


def test_evidence_dom_has_no_secrets(h: Harness) -> None:
    screen = h.site.pages[f"{BASE}/messages"]
    screen.html = (
        "<html><body><form>"
        f'<input type="password" name="pw" value="{SECRET}">'
        '<input name="api_token" value="tok-998877">'
        "<input name='otp_code' value=\"123456\">"
        '<input name="city" value="Hangzhou">'
        f"<p>Welcome back, your password is {SECRET}</p>"
        "</form></body></html>")
    screen.console = [f"debug: login with {SECRET}"]
    err = h.fail(flow_of({"action": "type_text", "locator": "#pass", "text": "{shop.password}"},
                         {"action": "click", "locator": "#nope"}))
    dom = Path(err.evidence["dom"]).read_text()
    for secret in (SECRET, "tok-998877", "123456"):
        assert secret not in dom
    assert 'value="Hangzhou"' in dom and "[redacted]" in dom
    for name in ("console", "steps"):
        assert SECRET not in Path(err.evidence[name]).read_text()
    assert "[redacted]" in Path(err.evidence["console"]).read_text()


def test_secret_never_appears_in_the_error_message(h: Harness) -> None:
    flow = flow_of({"action": "click", "locator": f"#{SECRET}"})
    # A flow cannot even put the password into a locator...
    with pytest.raises(SpecError):
        h.run(flow_of({"action": "click", "locator": "#{shop.password}"}))
    # ...and a Playwright message that happens to contain it is redacted.
    h.site.pages[f"{BASE}/messages"].elements[f"#{SECRET}"] = FakeElement()
    h.site.pages[f"{BASE}/messages"].clicks[f"#{SECRET}"] = FakeAction(
        error=f"click failed near {SECRET}")
    err = h.fail(flow)
    assert SECRET not in str(err) and "[redacted]" in str(err)


# -- uploads -----------------------------------------------------------------------------------


def test_upload_reads_only_from_asset_folders(h: Harness, tmp_path: Path) -> None:
    assets = tmp_path / "assets"
    assets.mkdir()
    (assets / "p.png").write_bytes(b"png")
    (tmp_path / "private.txt").write_text("x")
    h.site.pages[f"{BASE}/messages"].elements["#file"] = FakeElement(type="file")
    ok = flow_of({"action": "upload_file", "locator": "#file", "path": "{params.f}"})
    h.run(ok, params={"f": "p.png"}, asset_dirs=[assets])
    assert h.page.values["#file"] == str((assets / "p.png").resolve())
    with pytest.raises(SpecError, match="outside the asset folders"):
        h.run(ok, params={"f": "../private.txt"}, asset_dirs=[assets])


def test_extract_all_and_attributes(h: Harness) -> None:
    h.site.pages[f"{BASE}/messages"].elements["a.next"] = FakeElement(attrs={"href": "/p2"})
    flow = flow_of({"action": "extract", "locator": ".msg-title", "into": "titles", "all": True},
                   {"action": "extract", "locator": "a.next", "into": "next",
                    "attribute": "href"},
                   {"action": "screenshot", "into": "shot"})
    result = h.run(flow)
    assert result.results["titles"] == ["Order 8812", "Order 9001"]
    assert result.results["next"] == "/p2"
    assert Path(result.results["shot"]).read_bytes().startswith(b"\x89PNG")
    assert h.saved[-1].results == result.results
