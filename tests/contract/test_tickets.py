"""Tickets, the knowledge base and rules, through ``store.ticket_book()``."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput, LeaseLost, Refused
from core.store import TaskState
from core.store.base import Store, TicketStore
from core.testing import FakeClock
from core.tickets import RuleAction, Signature, TicketState, normalise_error
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

ERROR = "locator #submit-btn matched nothing after 3 tries"


def sig_for(step_name: str = "submit", error_class: str = "page_changed",
            error: str = ERROR, platform: str = "pdd",
            task_type: str = "upload_product") -> Signature:
    return Signature(platform, task_type, step_name, error_class, normalise_error(error))


def to_ticket(store: Store, *, shop: str = "pdd-1", type_: str = "upload_product",
              checkpoint: dict[str, Any] | None = None, step: int | None = 2,
              error: str = ERROR, evidence: dict[str, str] | None = None,
              signature: Signature | None = None, kind: str = "failure",
              reason: str = "") -> tuple[int, int]:
    """Submit a task, run it to a failure and open its ticket: (task id, ticket id)."""
    tid = store.submit(spec(type_, shop))
    c = store.claim("w")
    assert c is not None and c.id == tid
    if checkpoint is not None:
        store.save_checkpoint(tid, "w", checkpoint)
    platform = store.shop(shop).platform
    sig = signature or sig_for(platform=platform, task_type=type_, error=error)
    ticket = store.open_ticket(tid, "w", signature=sig, step=step, error=error,
                               evidence=evidence, kind=kind, reason=reason)
    return tid, ticket


def test_open_ticket_moves_the_task_to_a_person(store_factory: StoreFactory,
                                                clock: FakeClock) -> None:
    store = store_factory()
    book = store.ticket_book()
    assert isinstance(book, TicketStore)
    tid, k = to_ticket(store, evidence={"screenshot": "/e/7.png"})
    rec = store.task(tid)
    assert rec.state is TaskState.WAITING_HUMAN and rec.lease_owner is None
    assert rec.error_class == "page_changed" and rec.last_error == ERROR
    assert rec.evidence == {"screenshot": "/e/7.png"}
    assert f"#{k}" in rec.state_reason
    t = book.ticket(k)
    assert (t.id, t.task_id, t.state, t.kind) == (k, tid, TicketState.OPEN, "failure")
    assert (t.shop, t.platform, t.domain, t.task_type) == (
        "pdd-1", "pdd", "pdd.shopfleet.test", "upload_product")
    assert (t.step, t.step_name, t.error_class, t.error) == (2, "submit", "page_changed", ERROR)
    assert t.signature == sig_for().key
    assert t.evidence == {"screenshot": "/e/7.png"}
    assert t.opened_at == clock.now() and t.answered_at is None and t.closed_at is None
    assert t.action is None and t.note == ""
    assert book.open_count() == 1
    assert [x.id for x in book.tickets()] == [k]
    assert store.claim("w2") is None
    with pytest.raises(LeaseLost):
        store.ack(tid, "w")
    path = [(e.from_state, e.to_state) for e in store.events(tid)]
    assert path[-1] == ("running", "waiting_human")


def test_open_ticket_with_a_reason_and_kind(store_factory: StoreFactory) -> None:
    store = store_factory()
    tid, k = to_ticket(store, kind="write_unknown", reason="the write was cut off",
                       evidence=None)
    assert store.task(tid).state_reason == "the write was cut off"
    t = store.ticket_book().ticket(k)
    assert t.kind == "write_unknown" and t.evidence == {}


def test_open_ticket_needs_the_lease(store_factory: StoreFactory) -> None:
    store = store_factory()
    tid = store.submit(spec())
    with pytest.raises(LeaseLost):
        store.open_ticket(tid, "w", signature=sig_for(), step=None, error="x", evidence=None)
    store.claim("w")
    with pytest.raises(LeaseLost):
        store.open_ticket(tid, "other", signature=sig_for(), step=None, error="x",
                          evidence=None)
    assert store.ticket_book().tickets(state=None) == []
    assert store.task(tid).state is TaskState.RUNNING


CP = {"next_step": 2, "results": {"rows": [1]}, "writes_done": [0], "write_in_flight": 2}


@pytest.mark.parametrize(("action", "checkpoint"), [
    ("retry", {"next_step": 0, "results": {}, "writes_done": [0], "write_in_flight": None}),
    ("resume", {**CP, "write_in_flight": None}),
    ("skip", {"next_step": 3, "results": {"rows": [1]}, "writes_done": [0, 2],
              "write_in_flight": None}),
])
def test_an_answer_sends_the_task_back_with_its_checkpoint(
        store_factory: StoreFactory, clock: FakeClock, action: str,
        checkpoint: dict[str, Any]) -> None:
    store = store_factory(rescue={"reentry_bonus": 10}, priority={"aging_per_min": 0},
                          queue={"max_attempts": 1})
    tid, k = to_ticket(store, checkpoint=CP, step=2)
    routine = store.submit(spec("reply_customer", "pdd-2"))       # 10 points
    clock.advance(30)
    book = store.ticket_book()
    t = book.answer(k, action, note="checked by hand")
    assert t.state is TicketState.ANSWERED and t.action == action
    assert t.note == "checked by hand" and t.answered_at == clock.now() and t.closed_at is None
    rec = store.task(tid)
    assert rec.state is TaskState.QUEUED and rec.attempts == 0
    assert rec.checkpoint == checkpoint
    assert rec.score == pytest.approx(5 + 10)          # re-entry: ahead of routine work
    assert f"answered {action}" in rec.state_reason
    assert book.open_count() == 0
    c = store.claim("w")
    assert c is not None and c.id == tid and c.checkpoint == checkpoint
    assert store.task(routine).state is TaskState.QUEUED
    # It finishes: its answered ticket closes with it.
    clock.advance(5)
    store.ack(tid, "w")
    t = book.ticket(k)
    assert t.state is TicketState.CLOSED and t.closed_at == clock.now()


def test_resume_keeps_a_checkpoint_with_nothing_in_flight(store_factory: StoreFactory) -> None:
    store = store_factory()
    cp = {"next_step": 4, "results": {"a": 1}, "writes_done": [1, 3], "write_in_flight": None}
    tid, k = to_ticket(store, checkpoint=cp, step=4)
    store.ticket_book().answer(k, "resume")
    assert store.task(tid).checkpoint == cp


def test_skip_without_a_write_in_flight_does_not_mark_a_write(
        store_factory: StoreFactory) -> None:
    store = store_factory()
    cp = {"next_step": 1, "results": {}, "writes_done": [0], "write_in_flight": None}
    tid, k = to_ticket(store, checkpoint=cp, step=1)
    store.ticket_book().answer(k, "skip")
    assert store.task(tid).checkpoint == {"next_step": 2, "results": {}, "writes_done": [0],
                                          "write_in_flight": None}


@pytest.mark.parametrize(("action", "task_state", "ticket_state"), [
    ("done", TaskState.DONE, TicketState.CLOSED),
    ("cancel", TaskState.CANCELLED, TicketState.CANCELLED),
])
def test_an_answer_that_ends_the_task(store_factory: StoreFactory, clock: FakeClock,
                                      action: str, task_state: TaskState,
                                      ticket_state: TicketState) -> None:
    store = store_factory()
    tid, k = to_ticket(store, checkpoint=CP)
    clock.advance(60)
    t = store.ticket_book().answer(k, action, note="by hand")
    assert t.state is ticket_state and t.action == action and t.closed_at == clock.now()
    rec = store.task(tid)
    assert rec.state is task_state and rec.finished_at == clock.now()
    assert store.claim("w") is None
    assert store.counts()[task_state.value] == 1


def test_answers_go_to_the_knowledge_base(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    _, k1 = to_ticket(store, shop="pdd-1", error="locator #submit-btn matched nothing (1)")
    _, k2 = to_ticket(store, shop="pdd-2", error="locator #submit-btn matched nothing (22)")
    _, k3 = to_ticket(store, shop="temu-1")
    book.answer(k1, "skip", note="banner moved")
    book.answer(k2, "retry", note="site was slow")
    book.answer(k3, "cancel")
    key = book.ticket(k1).signature
    assert book.ticket(k2).signature == key               # numbers do not change it
    assert book.ticket(k3).signature != key               # another platform does
    earlier = book.earlier_answers(key)
    assert [(a.ticket_id, a.action, a.note) for a in earlier] == [
        (k2, "retry", "site was slow"), (k1, "skip", "banner moved")]
    a = earlier[0]
    assert (a.signature, a.platform, a.task_type, a.step_name, a.error_class) == (
        key, "pdd", "upload_product", "submit", "page_changed")
    assert a.error_norm == normalise_error("locator #submit-btn matched nothing (22)")
    assert [a.ticket_id for a in book.earlier_answers(key, limit=1)] == [k2]
    assert [a.ticket_id for a in book.knowledge_base()] == [k3, k2, k1]
    assert book.earlier_answers("0000000000000000") == []


def test_answer_validation(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    tid, k = to_ticket(store)
    with pytest.raises(InvalidInput) as err:
        book.answer(k, "explode")
    assert err.value.field == "action"
    with pytest.raises(InvalidInput) as err:
        book.answer(k, "retry", make_rule="explode")
    assert err.value.field == "rule"
    with pytest.raises(InvalidInput) as err:
        book.answer(k + 1000, "retry")
    assert err.value.field == "ticket"
    with pytest.raises(InvalidInput):
        book.ticket(k + 1000)
    assert book.ticket(k).state is TicketState.OPEN    # nothing changed by the refusals
    assert book.knowledge_base() == [] and book.rules() == []
    book.answer(k, "resume")
    with pytest.raises(Refused, match="not open"):
        book.answer(k, "retry")
    assert [a.action for a in book.knowledge_base()] == ["resume"]
    assert store.task(tid).state is TaskState.QUEUED


def test_tickets_filter_by_state_shop_platform_type_and_age(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    book = store.ticket_book()
    _, k1 = to_ticket(store, shop="pdd-1", type_="collect_data")
    clock.advance(3600)
    _, k2 = to_ticket(store, shop="temu-1", type_="reply_customer")
    _, k3 = to_ticket(store, shop="pdd-2", type_="reply_customer")
    book.answer(k3, "retry")
    assert [t.id for t in book.tickets()] == [k1, k2]
    assert [t.id for t in book.tickets(state="answered")] == [k3]
    assert [t.id for t in book.tickets(state=None)] == [k1, k2, k3]
    assert [t.id for t in book.tickets(shop="temu-1")] == [k2]
    assert [t.id for t in book.tickets(platform="pdd", state=None)] == [k1, k3]
    assert [t.id for t in book.tickets(task_type="reply_customer", state=None)] == [k2, k3]
    assert [t.id for t in book.tickets(older_than_s=1800)] == [k1]
    clock.advance(1800)
    assert [t.id for t in book.tickets(older_than_s=1800)] == [k1, k2]
    assert [t.id for t in book.tickets(limit=1)] == [k1]
    assert [t.id for t in book.tickets(limit=1, newest_first=True)] == [k2]
    assert [t.id for t in book.tickets(state=None, newest_first=True)] == [k3, k2, k1]
    assert [t.id for t in book.tickets(platform="pdd", state=None, newest_first=True)] == [k3, k1]
    assert book.ticket(k1).age_s(clock.now()) == pytest.approx(5400)


def test_an_answer_can_make_a_rule(store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    book = store.ticket_book()
    _, k = to_ticket(store)
    assert book.matching_rule(sig_for()) is None
    book.answer(k, "skip", note="the banner moved; skipping is fine", make_rule="skip",
                rule_delay_s=0)
    rules = book.rules()
    assert len(rules) == 1
    r = rules[0]
    assert r.action is RuleAction.SKIP and r.enabled and r.hits == 0
    assert r.note == "the banner moved; skipping is fine" and r.created_at == clock.now()
    assert r.signature == sig_for().key
    assert r.from_answer == book.knowledge_base()[0].id
    assert "page_changed" in r.description
    m = book.matching_rule(sig_for(error="locator #submit-btn matched nothing after 7 tries"))
    assert m is not None and m.id == r.id
    assert book.matching_rule(sig_for(step_name="login")) is None
    assert book.set_rule_enabled(r.id, False).enabled is False
    assert book.matching_rule(sig_for()) is None
    assert book.set_rule_enabled(r.id, True).enabled is True
    assert book.matching_rule(sig_for()) is not None
    book.delete_rule(r.id)
    assert book.rules() == [] and book.matching_rule(sig_for()) is None
    with pytest.raises(InvalidInput):
        book.delete_rule(r.id)
    with pytest.raises(InvalidInput):
        book.set_rule_enabled(r.id, True)


def test_the_newest_enabled_rule_matches(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    old = book.add_rule(sig_for(), "human", note="first")
    new = book.add_rule(sig_for(), RuleAction.RETRY_LATER, delay_s=90, note="second")
    assert (new.action, new.delay_s, new.note, new.from_answer) == (
        RuleAction.RETRY_LATER, 90, "second", None)
    assert [r.id for r in book.rules()] == [old.id, new.id]
    m = book.matching_rule(sig_for())
    assert m is not None and m.id == new.id
    book.set_rule_enabled(new.id, False)
    m = book.matching_rule(sig_for())
    assert m is not None and m.id == old.id


def failing(store: Store, shop: str = "pdd-1",
            checkpoint: dict[str, Any] | None = None) -> int:
    tid = store.submit(spec("upload_product", shop))
    c = store.claim("w")
    assert c is not None and c.id == tid
    if checkpoint is not None:
        store.save_checkpoint(tid, "w", checkpoint)
    return tid


def apply(store: Store, tid: int, rule: Any, step: int | None = 2) -> str:
    return store.apply_rule(tid, "w", rule, signature=sig_for(), error_class="page_changed",
                            error=ERROR, step=step, step_name="submit",
                            evidence={"screenshot": "/e/r.png"})


def test_a_skip_rule_resolves_a_failure_without_a_ticket(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    rule = book.add_rule(sig_for(), "skip")
    cp = {"next_step": 2, "results": {"x": 1}, "writes_done": [1], "write_in_flight": None}
    tid = failing(store, checkpoint=cp)
    assert apply(store, tid, rule) == "queued"
    rec = store.task(tid)
    assert rec.state is TaskState.QUEUED and rec.lease_owner is None
    assert rec.checkpoint == {"next_step": 3, "results": {"x": 1}, "writes_done": [1],
                              "write_in_flight": None}
    assert rec.error_class == "page_changed"
    assert book.tickets(state=None) == []
    assert [r.hits for r in book.rules()] == [1]
    reasons = [e.reason for e in store.events(tid)]
    assert any(r.startswith(f"rule #{rule.id} (skip) resolved page_changed") for r in reasons)
    c = store.claim("w")
    assert c is not None and c.id == tid and c.checkpoint == rec.checkpoint


def test_a_retry_later_rule_holds_the_task_for_its_delay(
        store_factory: StoreFactory, clock: FakeClock) -> None:
    store = store_factory()
    book = store.ticket_book()
    rule = book.add_rule(sig_for(), "retry_later", delay_s=600)
    tid = failing(store)
    assert apply(store, tid, rule) == "queued"
    assert store.task(tid).not_before == pytest.approx(clock.now() + 600, abs=1e-3)
    assert store.claim("w") is None
    clock.advance(600)
    c = store.claim("w")
    assert c is not None and c.id == tid
    assert apply(store, tid, rule) == "queued"
    assert [r.hits for r in book.rules()] == [2]
    assert book.tickets(state=None) == []


def test_a_human_rule_opens_a_ticket(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    rule = book.add_rule(sig_for(), "human")
    tid = failing(store)
    assert apply(store, tid, rule) == "waiting_human"
    rec = store.task(tid)
    assert rec.state is TaskState.WAITING_HUMAN
    assert rec.state_reason.startswith(f"rule #{rule.id} (human)")
    tickets = book.tickets()
    assert [(t.task_id, t.error_class, t.step) for t in tickets] == [(tid, "page_changed", 2)]
    assert tickets[0].evidence == {"screenshot": "/e/r.png"}
    assert [r.hits for r in book.rules()] == [1]


def test_apply_rule_needs_the_lease(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    rule = book.add_rule(sig_for(), "skip")
    tid = failing(store)
    with pytest.raises(LeaseLost):
        store.apply_rule(tid, "other", rule, signature=sig_for(), error_class="page_changed",
                         error=ERROR, step=2, step_name="submit", evidence=None)
    assert store.task(tid).state is TaskState.RUNNING


def test_cancelling_a_task_cancels_its_open_ticket(store_factory: StoreFactory,
                                                    clock: FakeClock) -> None:
    store = store_factory()
    book = store.ticket_book()
    tid, k = to_ticket(store)
    assert book.open_count() == 1
    clock.advance(5)
    assert store.cancel(tid) is TaskState.WAITING_HUMAN
    t = book.ticket(k)
    assert t.state is TicketState.CANCELLED and t.closed_at == clock.now()
    assert book.open_count() == 0 and book.tickets() == []
    assert [x.id for x in book.tickets(state="cancelled")] == [k]
    with pytest.raises(Refused):
        book.answer(k, "retry")


def test_a_rule_is_edited_in_place_keeping_its_scope(store_factory: StoreFactory) -> None:
    """#15: a rule can be edited — what it does, its delay, its note — and its words follow;
    the failures it answers (its signature) stay the same."""
    store = store_factory()
    book = store.ticket_book()
    _, k = to_ticket(store)
    book.answer(k, "resume", note="wait it out", make_rule="retry_later", rule_delay_s=600)
    (r,) = book.rules()
    assert r.description.endswith(": retry the task from its failed step after 10 min, "
                                  "without a ticket.")
    scope = r.description[:r.description.index("): ") + 1]
    e = book.edit_rule(r.id, action="skip", delay_s=0, note="skipping is fine")
    assert (e.id, e.signature, e.action, e.note) == (r.id, r.signature, RuleAction.SKIP,
                                                     "skipping is fine")
    assert e.description == scope + ": skip the failed step and go on with the next one, " \
        "without a ticket."
    assert book.rules() == [e]                               # stored, not only returned
    m = book.matching_rule(sig_for())
    assert m is not None and m.action is RuleAction.SKIP
    e2 = book.edit_rule(r.id, action=RuleAction.RETRY_LATER, delay_s=90, note="")
    assert (e2.delay_s, e2.hits, e2.enabled) == (90, r.hits, r.enabled)
    assert e2.description == scope + ": retry the task from its failed step after 90 s, " \
        "without a ticket."
    # Hostile or unknown input: one field named, nothing changed.
    for kw, field in (({"action": "explode", "delay_s": 1}, "action"),
                      ({"action": "retry_later", "delay_s": float("nan")}, "delay_s"),
                      ({"action": "retry_later", "delay_s": -5}, "delay_s"),
                      ({"action": "retry_later", "delay_s": 0}, "delay_s"),
                      ({"action": "skip", "delay_s": 0, "note": "x" * 5000}, "note")):
        with pytest.raises(InvalidInput) as err:
            book.edit_rule(r.id, **{"note": "", **kw})  # type: ignore[arg-type]
        assert err.value.field == field
    assert book.rules() == [e2]
    with pytest.raises(InvalidInput) as err:
        book.edit_rule(r.id + 100, action="skip", delay_s=0, note="")
    assert err.value.field == "rule"


def test_a_rule_made_without_an_answer_says_what_it_does(store_factory: StoreFactory) -> None:
    store = store_factory()
    book = store.ticket_book()
    r = book.add_rule(sig_for(), "human")
    assert r.description.startswith("When a upload_product task of platform pdd fails at "
                                    "step 'submit' with page_changed")
    assert r.description.endswith(": open a ticket at once, without retrying.")
