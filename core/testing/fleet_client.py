"""A submitting client for fleet tests and benchmarks:
``python -m core.testing.fleet_client``.

Submits N no-op tasks spread over the given shops to a store URL in batches, as another
machine's script would, and prints one JSON line when done.
"""

from __future__ import annotations

import argparse
import json
import time

from ..build import open_store
from ..config import Settings, load_settings
from ..specs import TaskSpec


def specs_for(n: int, shops: list[str], *, start: int = 0) -> list[TaskSpec]:
    """``n`` collect tasks, round robin over ``shops`` (keys make resubmission harmless)."""
    return [TaskSpec.model_validate({
        "type": "collect_data", "shop": shops[i % len(shops)], "flow": "collect_data",
        "key": f"fleet-{i}", "params": {"page": i}}) for i in range(start, start + n)]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m core.testing.fleet_client")
    p.add_argument("--store", required=True, metavar="URL")
    p.add_argument("--config", metavar="FILE")
    p.add_argument("--tasks", type=int, required=True)
    p.add_argument("--shops", required=True, help="comma-separated shop names")
    p.add_argument("--batch", type=int, default=500)
    args = p.parse_args(argv)
    settings: Settings = load_settings(args.config)
    store = open_store(settings, url=args.store, validate=False)
    shops = args.shops.split(",")
    t0 = time.monotonic()
    done = 0
    try:
        while done < args.tasks:
            n = min(args.batch, args.tasks - done)
            store.submit_many(specs_for(n, shops, start=done))
            done += n
    finally:
        store.close()
    print(json.dumps({"submitted": done, "seconds": round(time.monotonic() - t0, 3)}),
          flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
