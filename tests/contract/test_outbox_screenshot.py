"""#19: a ticket alert's screenshot path survives the outbox on every store (the dispatcher
reads the file when it sends, maybe after a restart), and never enters what a webhook sees."""

from __future__ import annotations

from dataclasses import replace

from core.notify import NotifyEvent
from tests.contract.conftest import StoreFactory

T0 = 1_767_225_600.0


def test_the_screenshot_path_is_kept_with_the_event(store_factory: StoreFactory) -> None:
    box = store_factory().outbox()
    plain = NotifyEvent(id="ticket:1", kind="ticket", at=T0, headline="找不到按钮",
                        shop="pdd-1", platform="pdd", detail={"ticket": 1})
    with_shot = replace(plain, id="ticket:2", screenshot="/data/evidence/7/screenshot.png")
    box.enqueue("ops", plain, now=T0)
    box.enqueue("ops", with_shot, now=T0 + 1)
    batch = box.due_batch("ops", now=T0 + 10, limit=10)
    assert batch is not None
    assert list(batch.events) == [plain, with_shot]          # intact, path included
    assert "screenshot" not in with_shot.as_json()           # the webhook's event record
