"""``shopfleet demo``: the main job on an embedded default, for a newcomer's first minute.

Today it shows the durable priority queue at work on a fresh SQLite file: demo shops on three
platforms, a mixed stream of tasks with deadlines, and the order a worker would take them in.
(Browser work, the engine and the console join as their parts land.)
"""

from __future__ import annotations

import argparse
import random
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING

from .specs import TaskSpec
from .store import SqliteStore, new_owner_id

if TYPE_CHECKING:
    from .cli import Cli

DEMO_SHOPS = [(f"{p}-{i}", p) for p in ("pdd", "temu", "tiktok") for i in (1, 2, 3)]
DEMO_HOSTS = {"pdd": "pdd.shopfleet.test", "temu": "temu.shopfleet.test",
              "tiktok": "tiktok.shopfleet.test"}


def demo_specs(n: int, *, seed: int = 7) -> list[TaskSpec]:
    rng = random.Random(seed)
    now = datetime.now(UTC)
    out = []
    for i in range(n):
        shop, _ = rng.choice(DEMO_SHOPS)
        kind = rng.choices(["collect_data", "upload_product", "campaign_signup",
                            "reply_customer"], weights=[5, 2, 1, 2])[0]
        deadline = None
        if kind == "reply_customer":
            deadline = (now + timedelta(minutes=rng.choice([10, 45, 180, 600]))).isoformat()
        out.append(TaskSpec.model_validate({
            "key": f"demo-{i}", "type": kind, "shop": shop, "flow": kind,
            "deadline": deadline, "params": {"page": i % 20 + 1}}))
    return out


def cmd_demo(args: argparse.Namespace, cli: Cli) -> int:
    folder = Path(tempfile.mkdtemp(prefix="shopfleet-demo-"))
    db = Path(args.db) if getattr(args, "db", None) else folder / "demo.db"
    print("ShopFleet demo (headless): the durable priority queue on a fresh SQLite file.")
    print("The browser pool, engine and console join this demo as they land.\n")
    store = SqliteStore(db, settings=cli.settings)
    try:
        for name, platform in DEMO_SHOPS:
            if name not in {s.name for s in store.shops()}:
                store.add_shop(name, platform=platform,
                               base_url=f"http://{DEMO_HOSTS[platform]}/shop/{name}",
                               username=name)
        ids = store.submit_many(demo_specs(40))
        st = store.status()
        print(f"database {db}\nsubmitted {len(ids)} tasks for {len(DEMO_SHOPS)} shops; "
              f"{st.queued} queued, scores {st.bottom_score:.2f} .. {st.top_score:.2f}\n")
        print("a worker with one browser per shop takes them in this order:")
        owner = new_owner_id()
        n = 0
        while (task := store.claim(owner)) is not None:
            n += 1
            print(f"  {n:>2}. #{task.id:<3} {task.type:<16} {task.shop:<9} "
                  f"score {task.score:6.2f}")
            store.ack(task.id, owner, results={"demo": True})
            time.sleep(0.02)
        st = store.status()
        print(f"\ndone: {st.counts['done']} tasks; queue empty: {st.queued == 0}")
        print("inspect it: shopfleet tasks --db " + str(db) + " --state done --limit 5")
    finally:
        store.close()
    return 0
