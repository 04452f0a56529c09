"""Rescue chain, tickets, quarantine and rules on real Chromium against the demo site."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from core import DemoSite, Settings, TaskSpec, build_engine, demo_settings, open_store
from core.demo import register_demo_shops
from core.demosite import demo_login_steps
from core.store import SqliteStore, TaskState
from core.vault import Vault
from tests.helpers import collect, run_with, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


@pytest.fixture
def env(site: DemoSite, tmp_path: Path) -> Iterator[tuple[SqliteStore, Settings, Path]]:
    site.reset()
    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 2, "warm": 1, "step_timeout_s": 20},
        rescue={"step_retry_wait_s": 0.2},
        queue={"retry_backoff_s": 0.2, "max_attempts": 3},
        security={"inline_credentials": True})  # a test logs in with inline steps
    store = open_store(settings, tmp_path / "r.db")
    register_demo_shops(store, site, Vault.open(tmp_path))
    yield store, settings, tmp_path
    store.close()


def reply(shop: str, message: int, text: str) -> TaskSpec:
    return TaskSpec.model_validate({"type": "reply_customer", "shop": shop,
                                    "flow": "reply_customer",
                                    "params": {"message_id": message, "reply": text}})





def state(store: SqliteStore, tid: int) -> TaskState:
    return store.task(tid).state


def test_changed_layout_becomes_a_ticket_and_resume_completes_with_one_write(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("layout_changed", platform="pdd")
    tid = store.submit(reply("pdd-1", 2, "Your parcel left today"))
    engine = build_engine(settings, store, home=home)

    async def scenario() -> None:
        await wait_until(lambda: state(store, tid) is TaskState.WAITING_HUMAN)
        ticket = engine.tickets.tickets()[0]
        assert ticket.task_id == tid and ticket.error_class == "page_changed"
        shot, dom = Path(ticket.evidence["screenshot"]), Path(ticket.evidence["dom"])
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 1000
        assert "v2-" in dom.read_text(encoding="utf-8")      # the changed page was captured
        site.clear_faults()                                   # the layout is restored
        await engine.answer_ticket(ticket.id, "resume", note="layout fixed upstream")
        await wait_until(lambda: state(store, tid) is TaskState.DONE)

    run_with(engine, scenario)
    replies = site.records(kind="reply", shop="pdd-1")
    assert [r["text"] for r in replies] == ["Your parcel left today"]   # exactly once
    assert engine.tickets.ticket(1).state.value == "closed"
    assert engine.tickets.earlier_answers(engine.tickets.ticket(1).signature)[0].action == \
        "resume"


def test_captcha_goes_straight_to_a_ticket_and_evidence_has_no_password(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("captcha", platform="temu")
    tid = store.submit(reply("temu-1", 1, "hello"))
    engine = build_engine(settings, store, home=home)
    password = next(s.password for s in site.shops() if s.name == "temu-1")

    async def scenario() -> None:
        await wait_until(lambda: state(store, tid) is TaskState.WAITING_HUMAN)

    run_with(engine, scenario)
    rec = store.task(tid)
    assert rec.attempts == 1 and rec.error_class == "needs_human"
    ticket = engine.tickets.tickets()[0]
    assert ticket.error_class == "needs_human"
    files = [p for p in (home / "evidence").rglob("*") if p.is_file()]
    assert files
    for f in files:
        assert password.encode() not in f.read_bytes(), f"the password leaked into {f}"


def test_login_page_evidence_never_holds_the_typed_password(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    """A failure right after the password was typed: the DOM is captured with the field
    filled in, and the value must be redacted."""
    store, settings, home = env
    steps = [
        {"action": "navigate", "url": "{shop.base_url}/messages/1"},
        *demo_login_steps(when_asked=False)[:2],  # typed, not submitted
        {"action": "click", "locator": "#no-such-button", "timeout_s": 1},
    ]
    tid = store.submit(TaskSpec.model_validate({"type": "collect_data", "shop": "tiktok-2",
                                                "steps": steps}))
    engine = build_engine(settings, store, home=home)
    password = next(s.password for s in site.shops() if s.name == "tiktok-2")

    async def scenario() -> None:
        await wait_until(lambda: state(store, tid) is TaskState.WAITING_HUMAN)

    run_with(engine, scenario)
    dom = Path(engine.tickets.tickets()[0].evidence["dom"]).read_text(encoding="utf-8")
    assert 'id="password"' in dom and password not in dom
    for f in (home / "evidence").rglob("*"):
        if f.is_file():
            assert password.encode() not in f.read_bytes()


def test_renderer_crash_page_is_quarantined_after_two_crashes_others_complete(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("crash", platform="tiktok")
    poison = store.submit(collect("tiktok-1", 5))
    others = store.submit_many([collect(s, i) for i, s in enumerate(
        ["pdd-1", "pdd-2", "temu-1", "temu-2", "pdd-3"], start=1)])
    engine = build_engine(settings, store, home=home)

    async def scenario() -> None:
        await wait_until(lambda: state(store, poison) is TaskState.QUARANTINED)
        await wait_until(lambda: all(state(store, t) is TaskState.DONE for t in others))

    run_with(engine, scenario)
    rec = store.task(poison)
    assert rec.error_class == "browser_crashed" and rec.attempts == 2
    assert [t.id for t in engine.tickets.quarantined()] == [poison]


def test_a_rule_made_from_an_answer_resolves_the_next_failure_and_says_so(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    store, settings, home = env
    site.set_fault("captcha", platform="pdd")
    first = store.submit(collect("pdd-1", 1))
    engine = build_engine(settings, store, home=home)

    async def scenario() -> None:
        await wait_until(lambda: state(store, first) is TaskState.WAITING_HUMAN)
        ticket = engine.tickets.tickets()[0]
        await engine.answer_ticket(ticket.id, "resume", note="captcha storms pass; wait",
                                   make_rule="retry_later", rule_delay_s=2)
        second = store.submit(collect("pdd-2", 2))
        await wait_until(lambda: "rule #1" in store.task(second).state_reason)
        assert len(engine.tickets.tickets(state=None)) == 1      # no new ticket
        site.clear_faults()
        await wait_until(lambda: state(store, second) is TaskState.DONE)
        await wait_until(lambda: state(store, first) is TaskState.DONE)
        reasons = [e.reason for e in store.events(second)]
        assert any(r.startswith("rule #1 (retry_later) resolved needs_human") for r in reasons)

    run_with(engine, scenario)
    assert engine.tickets.rules()[0].hits >= 1


def _attempt_history(store: SqliteStore, tid: int) -> list[str]:
    return [e.to_state for e in store.events(tid)]


def test_a_503_on_a_read_step_is_retried_in_place(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    """Rescue level 1 on the real browser: the step is run again in the same attempt."""
    store, settings, home = env
    site.set_fault("error_5xx", platform="pdd", status=503, times=1)
    tid = store.submit(collect("pdd-2", 7))
    engine = build_engine(settings.with_changes(rescue={"reload_resume": False}), store,
                          home=home)

    async def scenario() -> None:
        await wait_until(lambda: state(store, tid) in (TaskState.DONE, TaskState.FAILED,
                                                       TaskState.WAITING_HUMAN), 120)

    run_with(engine, scenario)
    rec = store.task(tid)
    assert (rec.state, rec.attempts, rec.error_class) == (TaskState.DONE, 1, None)
    assert _attempt_history(store, tid) == ["queued", "running", "done"]
    first, second = site.requests(platform="pdd")[:2]
    # The same page twice in a row: a 503, then served (a page, or the login's redirect).
    assert first["status"] == 503 and second["status"] in (200, 302)
    assert first["path"] == second["path"]
    assert (rec.results or {}).get("skus")


def test_a_write_answered_with_503_reloads_resumes_and_is_verified_not_resent(
        site: DemoSite, env: tuple[SqliteStore, Settings, Path]) -> None:
    """Rescue level 2 on the real browser: the reply goes through but its answer is a 503;
    the executor reloads the flow's start and resumes from the checkpoint, where the step's
    ``verify`` proves the reply landed: done in the same attempt, sent once."""
    store, settings, home = env
    site.set_fault("error_5xx", platform="temu", status=503, after_write=True, times=1)
    tid = store.submit(reply("temu-2", 4, "Level two, once"))
    engine = build_engine(settings, store, home=home)

    async def scenario() -> None:
        await wait_until(lambda: state(store, tid) in (TaskState.DONE, TaskState.FAILED,
                                                       TaskState.WAITING_HUMAN), 120)

    run_with(engine, scenario)
    rec = store.task(tid)
    assert (rec.state, rec.attempts, rec.error_class) == (TaskState.DONE, 1, None)
    assert _attempt_history(store, tid) == ["queued", "running", "done"]
    assert [r["text"] for r in site.records(kind="reply")] == ["Level two, once"]
    assert any(r["status"] == 503 for r in site.requests(platform="temu"))
    assert 5 in ((rec.checkpoint or {}).get("writes_done") or [])
