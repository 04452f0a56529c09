"""Child process for the outbox crash test: one dispatcher pass over a SQLite store's outbox at
a given time, sending for real (``python -m tests.integration._notify_child DB URL NOW``)."""

from __future__ import annotations

import sys

from core.notify import Dispatcher, parse_target
from core.store import SqliteStore


def main(db: str, url: str, now: float) -> None:
    with SqliteStore(db) as store:
        target = parse_target({"name": "ops", "kind": "webhook", "url": url,
                               "batch_window_s": 0})
        sent = Dispatcher(store.outbox(), [target], now=lambda: now).run_once()
    print(f"attempted {sent}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], float(sys.argv[3]))
