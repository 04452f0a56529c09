"""Child process for the crash test: submits, claims and acks in a loop until killed.

It prints a line only after the store acknowledged the change (so after the commit):
``S <id>…`` submitted, ``C <id>`` claimed, ``A <id>`` acked, ``F <id>`` failed (requeued).
"""

from __future__ import annotations

import random
import sys

from core.config import Settings
from core.specs import TaskSpec
from core.store import SqliteStore, new_owner_id


def main(db: str, seed: int) -> None:
    rng = random.Random(seed)
    store = SqliteStore(db, settings=Settings().with_changes(queue={"max_tasks_per_shop": 4}))
    store.recover_expired()
    owner = new_owner_id()
    if not store.shops():
        for i in range(4):
            store.add_shop(f"s{i}", platform="pdd", base_url=f"http://s{i}.test/")
    out = sys.stdout
    while True:
        r = rng.random()
        if r < 0.4:
            specs = [TaskSpec(type="collect_data", shop=f"s{rng.randrange(4)}", flow="f",
                              params={"n": rng.randrange(1000)})
                     for _ in range(rng.randint(1, 20))]
            ids = store.submit_many(specs)
            out.write("S " + " ".join(map(str, ids)) + "\n")
        else:
            t = store.claim(owner)
            if t is None:
                continue
            out.write(f"C {t.id}\n")
            out.flush()
            if rng.random() < 0.8:
                store.ack(t.id, owner, results={"ok": True})
                out.write(f"A {t.id}\n")
            else:
                store.fail(t.id, owner, error_class="site_failed", message="x")
                out.write(f"F {t.id}\n")
        out.flush()


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]))
