"""Queue bands on a deep, mixed queue (#20): every store counts what each task's score says.

The SQLite store counts only the smaller of the two large bands (the other is the rest of the
queued total); this checks, on both stores, that the bands are the counts of the queued tasks'
own scores while tasks age across the thresholds, become hard-aged, are claimed and come back,
with the smaller band changing sides on the way.
"""

from __future__ import annotations

import random

from core.store import TaskState
from core.testing import FakeClock
from tests.contract.conftest import StoreFactory
from tests.helpers import spec

URGENT_AT = 15.0
LOW_BELOW = 4.0


def expected(store: object) -> dict[str, int]:
    rows = store.tasks(state="queued", limit=100_000)  # type: ignore[attr-defined]
    out = {"hard_aged": 0, "urgent": 0, "normal": 0, "low": 0}
    for t in rows:
        if t.hard_aged:
            out["hard_aged"] += 1
        elif t.score >= URGENT_AT:
            out["urgent"] += 1
        elif t.score < LOW_BELOW:
            out["low"] += 1
        else:
            out["normal"] += 1
    return out


def test_bands_follow_the_scores_as_tasks_age(store_factory: StoreFactory,
                                               clock: FakeClock) -> None:
    store = store_factory(priority={"aging_per_min": 0.5, "hard_aging_min": 30},
                          queue={"max_tasks_per_shop": 1000})
    rng = random.Random(7)
    shops = ["pdd-1", "pdd-2", "temu-1", "tiktok-1"]
    # Mostly low work at first (low is the big band), a few urgent, some normal.
    store.submit_many([spec("collect_data", rng.choice(shops),
                            priority=rng.choice((0.0, 1.0, 2.0, 3.0, 3.5)))
                       for _ in range(240)]
                      + [spec("collect_data", rng.choice(shops), priority=p)
                         for p in (5.0, 9.0, 10.0, 16.0, 20.0) * 6])
    seen_sides: set[bool] = set()
    claimed: list[int] = []
    for step in range(12):
        bands = store.queue_bands(urgent_at=URGENT_AT, low_below=LOW_BELOW)
        assert bands == expected(store), f"step {step}"
        assert sum(bands.values()) == store.counts()["queued"]
        seen_sides.add(bands["normal"] < bands["low"])
        clock.advance(4 * 60)             # +2 points each: low tasks move up into normal
        store.apply_thresholds()          # after 30 min some become hard-aged
        if step % 3 == 1:
            claimed += [t.id for t in store.claim_many("w", 20)]
        if step % 3 == 2 and claimed:
            for tid in claimed[:10]:
                if store.task(tid).state is TaskState.RUNNING:
                    store.release(tid, "w")
            claimed = claimed[10:]
        if step == 5:
            store.submit_many([spec("collect_data", rng.choice(shops), priority=0.5)
                               for _ in range(200)])  # a new low wave: low is big again
    assert seen_sides == {True, False}   # the smaller band changed sides on the way
    assert store.queue_bands(urgent_at=URGENT_AT, low_below=LOW_BELOW)["hard_aged"] > 0
