"""#18: every command that acts on one or several shops takes ``--shops SELECTOR`` — tickets,
answer (in bulk), quarantine, release (in bulk), search, run-flow — on a real SQLite file. A
bad or empty selector is one line naming ``--shops``, exit 2, nothing written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from core.cli import main
from core.store import SqliteStore, TaskState
from core.testing import FakeClock
from core.tickets import Signature
from tests.conftest import add_demo_shops
from tests.helpers import spec


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _ticket(store: SqliteStore, shop: str, error: str, *, kind: str = "failure") -> int:
    t = store.submit(spec("reply_customer", shop, params={"message_id": 1, "reply": "hi"}))
    assert store.claim("w") is not None
    sig = Signature(shop.split("-")[0], "reply_customer", "send", "page_changed", error)
    return store.open_ticket(t, "w", signature=sig, step=2, error=error, evidence=None,
                             kind=kind, reason="ticket")


def _quarantine(store: SqliteStore, shop: str) -> int:
    t = store.submit(spec("collect_data", shop))
    assert store.claim("w") is not None
    assert store.record_crash(t, "w", error_class="browser_crashed", message="boom",
                              quarantine=True, evidence=None) == "quarantined"
    return t


@pytest.fixture
def db(tmp_path: Path) -> str:
    """Four shops (pdd-1, pdd-2 tagged north; temu-1; tiktok-1), one open ticket each on
    pdd-1 (找不到确认退款按钮), pdd-2 and temu-1, one quarantined task on pdd-2 and temu-1."""
    path = tmp_path / "sel.db"
    with SqliteStore(path, clock=FakeClock()) as store:
        add_demo_shops(store)
        for shop in ("pdd-1", "pdd-2"):
            store.retag_shop(shop, add=["north"])
        _ticket(store, "pdd-1", "找不到确认退款按钮")
        _ticket(store, "pdd-2", "timeout on 确认退款")
        _ticket(store, "temu-1", "确认退款 button gone")
        _quarantine(store, "pdd-2")
        _quarantine(store, "temu-1")
    return str(path)


def _snapshot(db: str) -> tuple[list[tuple[int, str, str | None]], list[tuple[int, str]]]:
    with SqliteStore(db, clock=FakeClock()) as store:
        tickets = [(t.id, t.state.value, t.action)
                   for t in store.ticket_book().tickets(state=None)]
        tasks = [(t.id, t.state.value) for t in store.tasks(limit=100)]
    return tickets, tasks


def test_tickets_lists_the_tickets_of_the_picked_shops(db: str,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    code, out, err = run(capsys, "tickets", "--shops", "tag:north", "--json", "--db", db)
    assert code == 0, err
    assert [t["shop"] for t in json.loads(out)] == ["pdd-1", "pdd-2"]
    code, out, _ = run(capsys, "tickets", "--shops=-platform:pdd", "--json", "--db", db)
    assert [t["shop"] for t in json.loads(out)] == ["temu-1"]
    # A selector that starts with its NOT is a value, not an option, also after a space.
    code, out, err = run(capsys, "tickets", "--shops", "-platform:pdd", "--json", "--db", db)
    assert code == 0, err
    assert [t["shop"] for t in json.loads(out)] == ["temu-1"]
    code, out, _ = run(capsys, "tickets", "--shops", "*", "--limit", "2", "--json", "--db", db)
    assert [t["id"] for t in json.loads(out)] == [1, 2]     # by id, like the store, cut


def test_answer_in_bulk_answers_every_open_ticket_of_the_picked_shops(
        db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "answer", "--shops", "platform:pdd", "--action", "cancel",
                         "--note", "campaign over", "--db", db)
    assert code == 0, err
    assert out.splitlines() == [
        "ticket 1 (pdd-1) answered cancel: task 1 is cancelled",
        "ticket 2 (pdd-2) answered cancel: task 2 is cancelled"]
    tickets, _ = _snapshot(db)
    assert [(i, a) for i, _, a in tickets] == [(1, "cancel"), (2, "cancel"), (3, None)]
    code, out, _ = run(capsys, "answer", "--shops", "platform:pdd", "--action", "cancel",
                       "--db", db)
    assert code == 0 and out == "no open tickets for these shops\n"


def test_a_bulk_answer_that_would_resend_an_unknown_write_answers_none(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "w.db"
    with SqliteStore(path, clock=FakeClock()) as store:
        add_demo_shops(store)
        _ticket(store, "pdd-1", "plain failure")
        _ticket(store, "pdd-2", "the reply was cut off", kind="write_unknown")
    before = _snapshot(str(path))
    code, out, err = run(capsys, "answer", "--shops", "pdd-*", "--action", "retry",
                         "--db", str(path))
    assert code == 2 and out == ""
    assert err.startswith("shopfleet: error: confirm_resend: ticket 2 (pdd-2)")
    assert "no ticket was answered" in err
    assert _snapshot(str(path)) == before
    code, _, err = run(capsys, "answer", "--shops", "pdd-*", "--action", "retry",
                       "--confirm-resend", "--db", str(path))
    assert code == 0, err
    assert [a for _, _, a in _snapshot(str(path))[0]] == ["retry", "retry"]


def test_quarantine_and_release_by_selector(db: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "quarantine", "--shops", "temu-*", "--json", "--db", db)
    assert code == 0 and [t["shop"] for t in json.loads(out)] == ["temu-1"]
    code, out, _ = run(capsys, "release", "--shops", "tag:north", "--db", db)
    assert code == 0 and out == "task 4 released from quarantine (queued again)\n"
    _, tasks = _snapshot(db)
    assert dict(tasks)[4] == TaskState.QUEUED.value
    assert dict(tasks)[5] == TaskState.QUARANTINED.value     # temu-1 was not picked


def test_search_keeps_the_rows_of_the_picked_shops(db: str,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "search", "确认退款", "--json", "--db", db)
    assert code == 0
    assert sorted(r["shop"] for r in json.loads(out)["tickets"]) == ["pdd-1", "pdd-2", "temu-1"]
    for words in ("确认退款", "退款"):          # the trigram index and the LIKE path alike
        code, out, _ = run(capsys, "search", words, "--shops", "tag:north", "--json",
                           "--db", db)
        found = json.loads(out)
        assert code == 0 and set(found) == {"results", "tickets"}      # kb has no shops
        assert sorted(r["shop"] for r in found["tickets"]) == ["pdd-1", "pdd-2"], words


@pytest.mark.parametrize(("argv", "field"), [
    (["tickets", "--shops", "tag:"], "--shops"),
    (["tickets", "--shops", "nosuch-*"], "--shops"),
    (["tickets", "--shops", "pdd-*", "--shop", "pdd-1"], "--shops"),
    (["answer", "--shops", "", "--action", "cancel"], "--shops"),
    (["answer", "1", "--shops", "pdd-*", "--action", "cancel"], "--shops"),
    (["answer", "--action", "cancel"], "ID"),
    (["answer", "--shops", "pdd-*", "--action", "skip", "--rule", "skip"], "--rule"),
    (["quarantine", "--shops", "foo:x"], "--shops"),
    (["release", "--shops", "nosuch"], "--shops"),
    (["release", "4", "--shops", "pdd-*"], "ID"),
    (["search", "退款", "--shops", "nosuch"], "--shops"),
    (["search", "退款", "--in", "kb", "--shops", "pdd-*"], "--shops"),
    (["run-flow", "collect_data", "--shops", "nosuch-*"], "--shops"),
    (["run-flow", "collect_data", "--shops", "pdd-*", "--shop", "pdd-1"], "--shop"),
    (["run-flow", "collect_data"], "--shop"),
])
def test_bad_selectors_are_one_line_exit_2_and_nothing_is_written(
        db: str, capsys: pytest.CaptureFixture[str], argv: list[str], field: str) -> None:
    before = _snapshot(db)
    code, out, err = run(capsys, *argv, "--db", db)
    assert code == 2, (out, err)
    assert out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith(f"shopfleet: error: {field}: "), lines[0]
    assert _snapshot(db) == before


def test_shop_tag_and_untag_by_selector(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "shop", "tag", "--shops", "platform:pdd", "promo", "Summer",
                         "--db", db)
    assert code == 0, err
    assert out.splitlines() == ["shop pdd-1 tags: north promo summer",
                                "shop pdd-2 tags: north promo summer"]
    code, out, _ = run(capsys, "shop", "untag", "--shops", "tag:promo", "north", "--json",
                       "--db", db)
    assert code == 0 and [s["tags"] for s in json.loads(out)] == [["promo", "summer"]] * 2
    code, out, _ = run(capsys, "shop", "tag", "temu-1", "x1", "--db", db)    # by name still
    assert code == 0 and out == "shop temu-1 tags: x1\n"
    before = _snapshot(db)
    for argv, field in ((["shop", "tag", "--shops", "platform:pdd", "ok", "bad!"], "TAG"),
                        (["shop", "tag", "--shops", "nosuch", "ok"], "--shops")):
        code, out, err = run(capsys, *argv, "--db", db)
        assert code == 2 and out == "" and err.startswith(f"shopfleet: error: {field}"), err
    with SqliteStore(db, clock=FakeClock()) as store:
        assert store.shop("pdd-1").tags == ("promo", "summer")   # nothing written
    assert _snapshot(db) == before


def test_negations_as_values_keeps_short_options_options() -> None:
    from core.cli import negations_as_values

    assert negations_as_values(["tasks", "--shops", "-tag:test", "--json"]) == \
        ["tasks", "--shops=-tag:test", "--json"]
    assert negations_as_values(["results", "--shops", "-o", "x.csv"]) == \
        ["results", "--shops", "-o", "x.csv"]              # "-o" is an option: argparse says so
    assert negations_as_values(["tasks", "--shops", "--json"]) == ["tasks", "--shops", "--json"]
    assert negations_as_values(["tasks", "--shops"]) == ["tasks", "--shops"]
