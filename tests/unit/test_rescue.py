"""Rescue chain, quarantine, tickets, knowledge base and rules — fake executor, fake clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from core.engine import Engine
from core.errors import InvalidInput, Refused
from core.events import Event, TicketOpened
from core.store import SqliteStore, TaskState
from core.testing import FakeClock, FakeExecutor
from core.tickets import Answer, TicketState
from tests.conftest import StoreFactory
from tests.helpers import spec


def task(shop: str = "pdd-1", **params: Any) -> Any:
    return spec("collect_data", shop, params=params)


class Flaky(FakeExecutor):
    """Fails each task the first ``fails`` times with its params' fake, then succeeds."""

    def __init__(self, fails: int = 1) -> None:
        super().__init__()
        self.fails = fails

    async def execute(self, t: Any, ctl: Any) -> Any:
        if self.started.count(t.id) >= self.fails:
            t = type(t)(**{**t.__dict__, "params": {**t.params, "fake": "ok"}})
        return await super().execute(t, ctl)


def engine_for(store: SqliteStore, clock: FakeClock, ex: FakeExecutor | None = None,
               ) -> tuple[Engine, FakeExecutor, list[Event]]:
    ex = ex or FakeExecutor()
    settings = store.settings.with_changes(gates={
        "global": {"rate_per_s": 1e6, "burst": 1e6},
        "default_domain": {"rate_per_s": 1e6, "burst": 1e6}})
    e = Engine(store, settings, executor=ex, slots=4, clock=clock)
    seen: list[Event] = []
    e.bus.subscribe(seen.append)
    return e, ex, seen


def run(engine: Engine, *steps: Any) -> None:
    async def go() -> None:
        async with engine:
            await engine.run_until_idle()
            for step in steps:
                r = step()
                if asyncio.iscoroutine(r):
                    await r
                await engine.run_until_idle()
    asyncio.run(go())


def test_a_crashing_task_goes_to_quarantine_after_two_crashes_others_finish(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store(breakers={"failures": 100})
    poison = store.submit(task(fake="crash"))
    fine = store.submit_many([task("pdd-2"), task("temu-1")])
    engine, ex, _ = engine_for(store, clock)
    run(engine)
    assert store.task(poison).state is TaskState.QUARANTINED
    assert ex.started.count(poison) == 2
    assert all(store.task(t).state is TaskState.DONE for t in fine)
    assert [t.id for t in engine.tickets.quarantined()] == [poison]
    # The operator releases it; it runs again (and, still poisonous, comes back).
    engine2, ex2, _ = engine_for(store, clock)
    run(engine2, lambda: engine2.release_quarantined(poison))
    assert ex2.started.count(poison) == 2
    with pytest.raises(Refused):
        engine.tickets.release(fine[0])


@pytest.mark.parametrize(("action", "expect_state", "expect_runs", "ticket_state"), [
    (Answer.RESUME, TaskState.DONE, 2, TicketState.CLOSED),
    (Answer.RETRY, TaskState.DONE, 2, TicketState.CLOSED),
    (Answer.SKIP, TaskState.DONE, 2, TicketState.CLOSED),
    (Answer.DONE, TaskState.DONE, 1, TicketState.CLOSED),
    (Answer.CANCEL, TaskState.CANCELLED, 1, TicketState.CANCELLED),
])
def test_answering_a_ticket(make_store: StoreFactory, clock: FakeClock, action: Answer,
                            expect_state: TaskState, expect_runs: int,
                            ticket_state: TicketState) -> None:
    store = make_store()
    tid = store.submit(task(fake="needs_human", steps=3))
    ex = Flaky(fails=1)
    engine, _, seen = engine_for(store, clock, ex)
    ticket_ids: list[int] = []

    def answer() -> Any:
        tickets = engine.tickets.tickets()
        assert len(tickets) == 1 and tickets[0].task_id == tid
        ticket_ids.append(tickets[0].id)
        return engine.answer_ticket(tickets[0].id, action.value, note="checked by hand")

    run(engine, answer)
    assert store.task(tid).state is expect_state
    assert ex.started.count(tid) == expect_runs
    t = engine.tickets.ticket(ticket_ids[0])
    assert t.state is ticket_state and t.action == action.value
    assert t.note == "checked by hand"
    assert any(isinstance(e, TicketOpened) for e in seen)
    kb = engine.tickets.earlier_answers(t.signature)
    assert [a.action for a in kb] == [action.value]


def test_resumed_task_goes_ahead_of_routine_work(make_store: StoreFactory,
                                                 clock: FakeClock) -> None:
    store = make_store(rescue={"reentry_bonus": 10})
    tid = store.submit(task(fake="needs_human"))
    engine, _, _ = engine_for(store, clock, Flaky(fails=1))
    run(engine)
    before = store.task(tid).score
    ticket = engine.tickets.tickets()[0]
    engine.tickets.answer(ticket.id, "resume")
    assert store.task(tid).score == pytest.approx(before + 10)


def test_answer_validation(make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    store.submit(task(fake="needs_human"))
    engine, _, _ = engine_for(store, clock)
    run(engine)
    t = engine.tickets.tickets()[0]
    with pytest.raises(InvalidInput, match="action"):
        engine.tickets.answer(t.id, "explode")
    with pytest.raises(InvalidInput, match="ticket"):
        engine.tickets.answer(9999, "retry")
    engine.tickets.answer(t.id, "cancel")
    with pytest.raises(Refused, match="not open"):
        engine.tickets.answer(t.id, "retry")


def test_a_rule_from_an_answer_resolves_the_next_matching_failure_without_a_ticket(
        make_store: StoreFactory, clock: FakeClock) -> None:
    store = make_store()
    first = store.submit(task(fake="page_changed"))
    engine, _, _ = engine_for(store, clock, Flaky(fails=1))
    run(engine)
    t = engine.tickets.tickets()[0]
    engine.tickets.answer(t.id, "skip", note="the banner moved; skipping is fine",
                          make_rule="skip")
    second = store.submit(task("pdd-2", fake="page_changed"))
    engine2, _, _ = engine_for(store, clock, Flaky(fails=1))
    run(engine2)
    assert store.task(first).state is TaskState.DONE
    assert store.task(second).state is TaskState.DONE
    assert [tk.task_id for tk in engine2.tickets.tickets(state=None)] == [first]  # no new one
    reasons = [e.reason for e in store.events(second)]
    assert any(r.startswith("rule #1 (skip) resolved page_changed") for r in reasons)
    rules = engine2.tickets.rules()
    # Both tasks failed once more under the new executor; the rule took both.
    assert rules[0].hits == 2 and rules[0].enabled
    engine2.tickets.set_rule_enabled(rules[0].id, False)
    assert not engine2.tickets.rules()[0].enabled
    engine2.tickets.delete_rule(rules[0].id)
    assert engine2.tickets.rules() == []


def test_retry_later_rule_requeues_after_its_delay(make_store: StoreFactory,
                                                   clock: FakeClock) -> None:
    store = make_store()
    a = store.submit(task(fake="needs_human"))
    engine, _, _ = engine_for(store, clock, Flaky(fails=1))
    run(engine)
    engine.tickets.answer(engine.tickets.tickets()[0].id, "resume",
                          make_rule="retry_later", rule_delay_s=600)
    b = store.submit(task("pdd-2", fake="needs_human"))
    engine2, _ex2, _ = engine_for(store, clock, Flaky(fails=1))
    run(engine2)
    assert store.task(b).state is TaskState.QUEUED
    assert store.task(b).not_before == pytest.approx(clock.now() + 600)
    clock.advance(600)
    run(engine2)
    assert store.task(b).state is TaskState.DONE and store.task(a).state is TaskState.DONE


def test_tickets_filter_by_shop_platform_type_and_age(make_store: StoreFactory,
                                                      clock: FakeClock) -> None:
    store = make_store()
    store.submit(task("pdd-1", fake="needs_human"))
    clock.advance(3600)
    store.submit(spec("reply_customer", "temu-1", flow="collect_data",
                      params={"fake": "needs_human"}))
    engine, _, _ = engine_for(store, clock)
    run(engine)
    book = engine.tickets
    assert [t.shop for t in book.tickets(shop="temu-1")] == ["temu-1"]
    assert [t.platform for t in book.tickets(platform="pdd")] == ["pdd"]
    assert [t.task_type for t in book.tickets(task_type="reply_customer")] == ["reply_customer"]
    assert len(book.tickets(older_than_s=1800)) == 0
    clock.advance(1800)
    assert len(book.tickets(older_than_s=1800)) == 2
    assert book.tickets()[0].age_s(clock.now()) == pytest.approx(1800)
    stats = engine.statistics()
    assert stats.failures_hour_by_class == {"needs_human": 2}
