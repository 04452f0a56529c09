"""#19: the notification outbox on every store behaves like core.notify's MemoryOutbox: one row
per (target, event), batches claimed atomically with a stable id, a claim held as a lease
(a second dispatcher does not send it meanwhile), retries, give-ups and health."""

from __future__ import annotations

import threading

from core.notify import MemoryOutbox, NotifyEvent, Pending, message_id
from core.notify.outbox import Outbox
from tests.contract.conftest import StoreFactory

T0 = 1_767_225_600.0


def ev(i: int, shop: str = "pdd-1") -> NotifyEvent:
    return NotifyEvent(id=f"ticket:{i}", kind="ticket", at=T0 + i, headline=f"找不到按钮 {i}",
                       shop=shop, platform="pdd", detail={"ticket": i})


def test_enqueue_is_once_per_target_and_event(store_factory: StoreFactory) -> None:
    box: Outbox = store_factory().outbox()
    assert box.enqueue("ops", ev(1), now=T0) is True
    assert box.enqueue("ops", ev(1), now=T0 + 5) is False       # the same event again
    assert box.enqueue("boss", ev(1), now=T0 + 1) is True       # another target
    assert box.enqueue("ops", ev(2), now=T0 + 2) is True
    assert box.pending(now=T0 + 3) == {"ops": Pending(T0, None), "boss": Pending(T0 + 1, None)}


def test_a_batch_is_claimed_oldest_first_with_the_message_id_and_sent_once(
        store_factory: StoreFactory) -> None:
    box: Outbox = store_factory().outbox()
    for i in (3, 1, 2):
        box.enqueue("ops", ev(i), now=T0 + i)
    b = box.due_batch("ops", now=T0 + 10, limit=2)
    assert b is not None
    assert [e.id for e in b.events] == ["ticket:1", "ticket:2"] and b.attempts == 0
    assert b.id == message_id(b.events) and b.target == "ops"
    assert b.events[0] == ev(1)                                  # the event survives intact
    # claimed: held as a lease; a second dispatcher gets nothing meanwhile
    assert box.due_batch("ops", now=T0 + 11, limit=2) is None
    box.mark_sent(b.id, now=T0 + 12)
    box.mark_sent(b.id, now=T0 + 13)                             # a repeat does nothing
    nxt = box.due_batch("ops", now=T0 + 14, limit=2)
    assert nxt is not None and [e.id for e in nxt.events] == ["ticket:3"]
    box.mark_sent(nxt.id, now=T0 + 15)
    assert box.due_batch("ops", now=T0 + 16, limit=2) is None
    assert box.pending(now=T0 + 16) == {}
    [h] = box.health()
    assert (h.target, h.pending, h.failing_since, h.given_up, h.last_sent_at) == (
        "ops", 0, None, 0, T0 + 15)
    assert box.enqueue("ops", ev(1), now=T0 + 20) is False       # sent: still a duplicate


def test_a_dispatcher_that_dies_after_sending_leaves_the_same_batch_for_later(
        store_factory: StoreFactory) -> None:
    box = store_factory().outbox()
    box.enqueue("ops", ev(1), now=T0)
    first = box.due_batch("ops", now=T0 + 10, limit=50)
    assert first is not None
    # no mark: the process died. Before the lease ends nobody resends; after it, the same id.
    assert box.due_batch("ops", now=T0 + 10 + box.claim_s - 1, limit=50) is None
    again = box.due_batch("ops", now=T0 + 10 + box.claim_s, limit=50)
    assert again is not None and again.id == first.id and again.events == first.events


def test_failures_retry_at_next_at_then_give_up_and_health_says_so(
        store_factory: StoreFactory) -> None:
    box: Outbox = store_factory().outbox()
    box.enqueue("ops", ev(1), now=T0)
    box.enqueue("ops", ev(2), now=T0)
    b = box.due_batch("ops", now=T0 + 10, limit=10)
    assert b is not None
    box.mark_failed(b.id, now=T0 + 11, error="HTTP 500", next_at=T0 + 40)
    box.enqueue("ops", ev(3), now=T0 + 12)
    assert box.pending(now=T0 + 12)["ops"] == Pending(T0 + 12, T0 + 40)
    assert box.due_batch("ops", now=T0 + 39, limit=10) is None   # not yet, and not ev 3 first
    again = box.due_batch("ops", now=T0 + 40, limit=10)
    assert again is not None and again.id == b.id and again.attempts == 1
    [h] = box.health()
    assert (h.pending, h.failing_since, h.last_error, h.given_up) == (3, T0 + 11, "HTTP 500", 0)
    box.mark_failed(b.id, now=T0 + 41, error="HTTP 400 bad token", next_at=None)
    [h] = box.health()
    assert (h.pending, h.failing_since, h.last_error, h.given_up) == (
        1, T0 + 11, "HTTP 400 bad token", 2)
    last = box.due_batch("ops", now=T0 + 42, limit=10)
    assert last is not None and [e.id for e in last.events] == ["ticket:3"]
    box.mark_sent(last.id, now=T0 + 43)
    [h] = box.health()
    assert (h.pending, h.failing_since, h.last_error, h.given_up, h.last_sent_at) == (
        0, None, "", 2, T0 + 43)


def test_two_dispatchers_claiming_at_once_never_share_an_event(
        store_factory: StoreFactory) -> None:
    store = store_factory()
    box = store.outbox()
    for i in range(60):
        box.enqueue("ops", ev(i), now=T0)
    got: list[list[str]] = [[], []]
    start = threading.Barrier(2)

    def drain(slot: int) -> None:
        mine = store.outbox()       # its own outbox object, as a second process would have
        start.wait()
        for _ in range(40):
            b = mine.due_batch("ops", now=T0 + 10, limit=7)
            if b is not None:
                got[slot] += [e.id for e in b.events]
                mine.mark_sent(b.id, now=T0 + 10)

    threads = [threading.Thread(target=drain, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(got[0] + got[1]) == sorted(f"ticket:{i}" for i in range(60))


def test_memory_outbox_is_the_reference_for_the_same_script() -> None:
    # the behaviour above, on the in-memory reference (what the stores mirror)
    box = MemoryOutbox()
    box.enqueue("ops", ev(1), now=T0)
    b = box.due_batch("ops", now=T0 + 10, limit=2)
    assert b is not None and b.id == message_id(b.events)


def test_sent_events_are_remembered_for_keep_days_then_pruned(
        store_factory: StoreFactory) -> None:
    box = store_factory().outbox()
    box.enqueue("ops", ev(1), now=T0)
    b = box.due_batch("ops", now=T0, limit=10)
    assert b is not None
    box.mark_sent(b.id, now=T0)
    day = 86400.0
    assert box.enqueue("ops", ev(1), now=T0 + 6 * day) is False   # still a duplicate
    box.enqueue("ops", ev(2), now=T0 + 8 * day)
    b2 = box.due_batch("ops", now=T0 + 8 * day, limit=10)
    assert b2 is not None
    box.mark_sent(b2.id, now=T0 + 8 * day)                         # prunes what is 7+ days old
    assert box.enqueue("ops", ev(1), now=T0 + 8 * day) is True
    assert box.enqueue("ops", ev(2), now=T0 + 8 * day) is False
