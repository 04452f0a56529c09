"""Random sequences of operations against a model (hypothesis, fake clock, both stores).

After every operation: no task is lost (each one is where the model says, with its attempts,
owner and score), counts equal tasks per state, no shop runs two tasks; every claim returns
the best eligible task.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from core.errors import LeaseLost
from core.store import ClaimedTask, TaskState
from core.store.base import Store
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

SHOPS = ["s1", "s2"]
OWNERS = ["w1", "w2"]
AGING_PER_MIN = 0.5
HARD_MIN = 30.0
BONUS = 0.75
MAX_ATTEMPTS = 2
LEASE_S = 300.0
BACKOFF_S = 5.0
BACKOFF_MAX_S = 40.0
TOLERANCE = 0.002   # keys are exact to 0.001 point (core.priority)


@dataclass
class Task:
    id: int
    shop: str
    base: float
    urgency: float
    created: float
    bump: float = 0.0
    attempts: int = 0
    state: TaskState = TaskState.QUEUED
    not_before: float = 0.0
    owner: str | None = None
    lease_until: float = 0.0
    marked_hard: bool = False

    def score(self, now: float) -> float:
        return (self.base + self.urgency + BONUS * self.attempts + self.bump
                + AGING_PER_MIN / 60 * (now - self.created))

    def hard(self, now: float) -> bool:
        return now - self.created >= HARD_MIN * 60


class Harness:
    """The store under test and a model of what it should hold."""

    def __init__(self, store: Store, clock: FakeClock) -> None:
        self.store = store
        self.clock = clock
        for shop in SHOPS:
            store.add_shop(shop, platform="generic", base_url=f"http://{shop}.test/")
        self.tasks: dict[int, Task] = {}

    def in_state(self, *states: TaskState) -> list[Task]:
        return sorted((t for t in self.tasks.values() if t.state in states), key=lambda t: t.id)

    def one_of(self, i: int, *states: TaskState) -> Task | None:
        found = self.in_state(*states)
        return found[i % len(found)] if found else None

    def eligible(self) -> list[Task]:
        now = self.clock.now()
        busy = {t.shop for t in self.in_state(TaskState.RUNNING)}
        return [t for t in self.in_state(TaskState.QUEUED, TaskState.SUSPENDED)
                if t.shop not in busy and t.not_before <= now]

    def check_claim(self, c: ClaimedTask | None, owner: str) -> None:
        now = self.clock.now()
        eligible = self.eligible()
        if not eligible:
            assert c is None, f"claimed #{c.id if c else None} with nothing eligible"
            return
        assert c is not None, f"nothing claimed, eligible: {[t.id for t in eligible]}"
        ids = [t.id for t in eligible]
        assert c.id in ids, f"claimed #{c.id}, not eligible ({ids})"
        got = self.tasks[c.id]
        best_band = max(t.hard(now) for t in eligible)
        top = max(t.score(now) for t in eligible if t.hard(now) == best_band)
        assert got.hard(now) == best_band, f"#{c.id} is not in the hard-aged band"
        assert got.score(now) >= top - TOLERANCE, (
            f"#{c.id} scores {got.score(now):.3f}, the best eligible {top:.3f}")
        assert abs(c.score - got.score(now)) < TOLERANCE
        assert c.resumed == (got.state is TaskState.SUSPENDED)
        assert c.preemptible == (not got.hard(now))
        got.state, got.owner = TaskState.RUNNING, owner
        got.attempts += 1
        got.lease_until = now + LEASE_S
        assert c.attempts == got.attempts and c.lease_owner == owner

    # -- operations -------------------------------------------------------------------------

    def submit(self, shop: str, base: float, urgency: float) -> None:
        now = self.clock.now()
        tid = self.store.submit(spec("x", shop, priority=base, urgency=urgency))
        assert tid not in self.tasks
        self.tasks[tid] = Task(tid, shop, base, urgency, now, not_before=now)

    def advance(self, seconds: int) -> None:
        self.clock.advance(seconds)

    def mark_hard(self) -> int:
        """A claim or the thresholds mark waiting tasks hard-aged; returns how many."""
        now = self.clock.now()
        new = [t for t in self.in_state(TaskState.QUEUED, TaskState.SUSPENDED)
               if t.hard(now) and not t.marked_hard]
        for t in new:
            t.marked_hard = True
        return len(new)

    def claim(self, owner: str) -> None:
        c = self.store.claim(owner)
        self.mark_hard()                 # before the claim: the claimed one too
        self.check_claim(c, owner)

    def thresholds(self) -> None:
        hard, _ = self.store.apply_thresholds()
        assert hard == self.mark_hard()
        now = self.clock.now()
        for t in self.in_state(TaskState.QUEUED, TaskState.SUSPENDED):
            rec = self.store.task(t.id)
            assert rec.hard_aged == t.hard(now) and rec.preemptible == (not t.hard(now))

    def recover(self) -> None:
        now = self.clock.now()
        expired = [t for t in self.in_state(TaskState.RUNNING) if t.lease_until < now]
        assert sorted(self.store.recover_expired()) == [t.id for t in expired]
        for t in expired:
            t.owner = None
            if t.attempts >= MAX_ATTEMPTS:
                t.state = TaskState.WAITING_HUMAN     # lost too often: a ticket
            else:
                t.state, t.not_before = TaskState.QUEUED, now

    def claim_many(self, owner: str, limit: int) -> None:
        got = self.store.claim_many(owner, limit)
        self.mark_hard()                 # before the claims: the claimed ones too
        assert len(got) <= limit
        for c in got:
            self.check_claim(c, owner)
        if len(got) < limit:
            assert self.eligible() == [], "a round stopped with eligible work left"

    def ack(self, i: int) -> None:
        t = self.one_of(i, TaskState.RUNNING)
        if t is not None:
            self.store.ack(t.id, t.owner or "")
            t.state, t.owner = TaskState.DONE, None

    def intruder(self, i: int) -> None:
        t = self.one_of(i, TaskState.RUNNING)
        if t is not None:
            with pytest.raises(LeaseLost):
                self.store.ack(t.id, "intruder")
            with pytest.raises(LeaseLost):
                self.store.fail(t.id, "intruder", error_class="x", message="x")

    def fail(self, i: int, retry: bool) -> None:
        t = self.one_of(i, TaskState.RUNNING)
        if t is None:
            return
        state = self.store.fail(t.id, t.owner or "", error_class="site_failed",
                                message="HTTP 503", retry=retry)
        if not retry or t.attempts >= MAX_ATTEMPTS:
            t.state = TaskState.FAILED
        else:
            t.state = TaskState.QUEUED
            t.not_before = self.clock.now() + min(BACKOFF_S * 2 ** (t.attempts - 1),
                                                  BACKOFF_MAX_S)
        t.owner = None
        assert state is t.state

    def release(self, i: int, suspend: bool) -> None:
        t = self.one_of(i, TaskState.RUNNING)
        if t is None:
            return
        self.store.release(t.id, t.owner or "", reason="stop", checkpoint={"next_step": 1},
                           suspend=suspend)
        t.state = TaskState.SUSPENDED if suspend else TaskState.QUEUED
        t.attempts -= 1                  # a released attempt does not count
        t.owner = None

    def bump(self, i: int, delta: float) -> None:
        t = self.one_of(i, TaskState.QUEUED, TaskState.SUSPENDED)
        if t is not None:
            new = self.store.bump(t.id, by=delta)
            t.bump += delta
            assert abs(new - t.score(self.clock.now())) < TOLERANCE

    def cancel(self, i: int) -> None:
        t = self.one_of(i, TaskState.QUEUED, TaskState.RUNNING, TaskState.SUSPENDED)
        if t is not None:
            assert self.store.cancel(t.id) is t.state
            t.state, t.owner = TaskState.CANCELLED, None

    # -- invariants -------------------------------------------------------------------------

    def check(self) -> None:
        now = self.clock.now()
        for t in self.tasks.values():
            rec = self.store.task(t.id)
            assert rec.state is t.state, f"#{t.id} is {rec.state}, expected {t.state}"
            assert rec.lease_owner == t.owner and rec.attempts == t.attempts
            if t.state in (TaskState.QUEUED, TaskState.SUSPENDED):
                assert abs(rec.score - t.score(now)) < TOLERANCE, (
                    f"#{t.id} scores {rec.score:.3f}, expected {t.score(now):.3f}")
                assert rec.not_before == pytest.approx(t.not_before, abs=1e-3), f"#{t.id}"
            if t.state is TaskState.RUNNING:
                assert rec.lease_until == pytest.approx(t.lease_until, abs=1e-3)
        want = {s.value: 0 for s in TaskState}
        want.update({s.value: n for s, n in Counter(t.state for t in self.tasks.values()).items()})
        assert self.store.counts() == want
        for state in (TaskState.QUEUED, TaskState.RUNNING, TaskState.SUSPENDED):
            listed = self.store.tasks(state=state.value, limit=1000)
            assert sorted(r.id for r in listed) == [t.id for t in self.in_state(state)]
        per_shop = Counter(r.shop for r in self.store.tasks(state="running", limit=1000))
        assert all(n == 1 for n in per_shop.values()), f"a shop runs two tasks: {per_shop}"
        assert self.store.status().busy_shops == dict(per_shop)


pick = st.integers(0, 1000)
ARGS: dict[str, st.SearchStrategy[tuple[Any, ...]]] = {
    "submit": st.tuples(st.sampled_from(SHOPS),
                        st.floats(-20, 40, allow_nan=False).map(lambda x: round(x, 2)),
                        st.floats(0, 10, allow_nan=False).map(lambda x: round(x, 2))),
    "claim": st.tuples(st.sampled_from(OWNERS)),
    "claim_many": st.tuples(st.sampled_from(OWNERS), st.integers(1, 4)),
    "advance": st.tuples(st.integers(1, 900)),
    "ack": st.tuples(pick),
    "fail": st.tuples(pick, st.booleans()),
    "release": st.tuples(pick, st.booleans()),
    "bump": st.tuples(pick, st.floats(-30, 30, allow_nan=False).map(lambda x: round(x, 2))),
    "cancel": st.tuples(pick),
    "intruder": st.tuples(pick),
    "thresholds": st.tuples(),
    "recover": st.tuples(),
}
# Names drawn uniformly from this list (a name listed twice comes twice as often).
WEIGHTED = ["submit", "submit", "claim", "claim", "claim_many", "advance", "advance", "ack",
            "fail", "fail", "release", "bump", "cancel", "intruder", "thresholds", "recover"]
operation = st.sampled_from(WEIGHTED).flatmap(
    lambda name: ARGS[name].map(lambda args: (name, *args)))


# A new store per example on purpose: the fixture only opens them.
@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(ops=st.lists(operation, min_size=20, max_size=60))
def test_random_operations_keep_the_queue_consistent(store_factory: StoreFactory,
                                                     ops: list[tuple[Any, ...]]) -> None:
    clock = FakeClock()
    store = store_factory(
        shops=False, clock=clock,
        priority={"aging_per_min": AGING_PER_MIN, "hard_aging_min": HARD_MIN,
                  "retry_bonus": BONUS},
        queue={"max_attempts": MAX_ATTEMPTS, "retry_backoff_s": BACKOFF_S,
               "retry_backoff_max_s": BACKOFF_MAX_S, "max_tasks_per_shop": 1,
               "lease_s": LEASE_S})
    try:
        h = Harness(store, clock)
        for name, *args in ops:
            getattr(h, name)(*args)
            h.check()
    finally:
        store_factory.close(store)  # type: ignore[attr-defined]
