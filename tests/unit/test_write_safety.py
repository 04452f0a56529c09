"""Write safety and rules in words (#15): a write of unknown outcome never defaults to an answer
that sends it again, resending needs a confirmation; a rule says what it does before saving;
an answer becomes only the rule it names."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.cli import main
from core.errors import InvalidInput
from core.store import SqliteStore, TaskState
from core.tickets import (
    Answer,
    RuleAction,
    Signature,
    check_write_safety,
    default_answer,
    describe_rule,
)
from tests.conftest import StoreFactory
from tests.helpers import spec

SIG = Signature("pdd", "reply_customer", "send", "write_unknown", "the reply was cut off")


def write_unknown_ticket(store: SqliteStore) -> tuple[int, int]:
    t = store.submit(spec("reply_customer", params={"message_id": 1, "reply": "hi"}))
    c = store.claim("w")
    assert c is not None
    tid = store.open_ticket(t, "w", signature=SIG, step=3, error="the reply was cut off",
                            evidence=None, kind="write_unknown", reason="ticket")
    return t, tid


def test_write_unknown_defaults_to_skip_and_resend_needs_confirmation() -> None:
    assert default_answer("write_unknown") is Answer.SKIP
    assert default_answer("failure") is Answer.RESUME
    for act in (Answer.RESUME, Answer.RETRY):
        with pytest.raises(InvalidInput) as e:
            check_write_safety("write_unknown", act, confirm_resend=False)
        assert e.value.field == "confirm_resend"
        check_write_safety("write_unknown", act, confirm_resend=True)
    check_write_safety("write_unknown", Answer.SKIP, confirm_resend=False)
    check_write_safety("failure", Answer.RESUME, confirm_resend=False)


def test_an_answer_becomes_only_the_rule_it_names() -> None:
    assert Answer.RESUME.as_rule() is RuleAction.RETRY_LATER
    assert Answer.SKIP.as_rule() is RuleAction.SKIP
    assert Answer.CANCEL.as_rule() is None   # was "human": keep opening tickets
    assert Answer.DONE.as_rule() is None


def test_a_rule_in_words_names_action_delay_and_scope() -> None:
    words = describe_rule(RuleAction.RETRY_LATER, 600, SIG)
    for part in ("reply_customer", "pdd", "'send'", "write_unknown", "the reply was cut off",
                 "after 10 min", "without a ticket"):
        assert part in words, (part, words)
    assert "skip the failed step" in describe_rule(RuleAction.SKIP, 0, SIG)
    assert "open a ticket at once" in describe_rule(RuleAction.HUMAN, 0, SIG)


def test_cli_refuses_a_resend_of_an_unknown_write_without_confirmation(
        make_store: StoreFactory, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(name="w.db")
    task_id, ticket_id = write_unknown_ticket(store)
    db = str(tmp_path / "w.db")
    capsys.readouterr()
    code = main(["answer", str(ticket_id), "--action", "resume", "--db", db])
    _, err = capsys.readouterr()
    assert code == 2 and "confirm_resend" in err and len(err.strip().splitlines()) == 1
    assert store.task(task_id).state is TaskState.WAITING_HUMAN      # nothing written
    code = main(["answer", str(ticket_id), "--action", "resume", "--confirm-resend",
                 "--rule", "retry_later", "--rule-delay-s", "90", "--db", db])
    out, _ = capsys.readouterr()
    assert code == 0 and store.task(task_id).state is TaskState.QUEUED
    assert "after 90 s" in out
    rule = store.ticket_book().rules()[0]
    assert rule.description.startswith("When a reply_customer task of platform pdd")
