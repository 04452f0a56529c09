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


def test_the_rule_an_answer_names_is_previewed_in_the_words_it_is_saved_with(
        make_store: StoreFactory) -> None:
    from core.tickets import answer_rule

    store = make_store(name="p.db")
    _, ticket_id = write_unknown_ticket(store)
    book = store.ticket_book()
    t = book.ticket(ticket_id)
    assert answer_rule(t, "done", 600) == (None, "")
    assert answer_rule(t, "cancel", 600) == (None, "")
    act, words = answer_rule(t, "resume", 1800)
    assert act is RuleAction.RETRY_LATER and "after 30 min" in words
    book.answer(ticket_id, "resume", make_rule=act, rule_delay_s=1800)
    assert book.rules()[0].description == words          # the preview is what is saved


def test_an_edited_rule_keeps_its_scope_in_its_words() -> None:
    from core.tickets import Rule, redescribe_rule

    words = describe_rule(RuleAction.RETRY_LATER, 600, SIG)
    rule = Rule(1, SIG.key, RuleAction.RETRY_LATER, 600, "", True, 0.0, None, 0, words)
    assert redescribe_rule(rule, "skip", 0) == describe_rule(RuleAction.SKIP, 0, SIG)
    assert redescribe_rule(rule, "retry_later", 7200) == describe_rule(
        RuleAction.RETRY_LATER, 7200, SIG)
    # A rule saved before rules had words (its description was the bare signature).
    old = Rule(2, SIG.key, RuleAction.SKIP, 0, "", True, 0.0, None, 0, SIG.describe())
    assert redescribe_rule(old, "human", 0) == (
        f"When a failure matches {SIG.describe()}: open a ticket at once, without retrying.")


def test_cli_edits_a_rule(make_store: StoreFactory, tmp_path: Path,
                          capsys: pytest.CaptureFixture[str]) -> None:
    store = make_store(name="r.db")
    rule = store.ticket_book().add_rule(SIG, "retry_later", delay_s=600, note="first")
    db = str(tmp_path / "r.db")
    capsys.readouterr()
    assert main(["rules", "edit", str(rule.id), "--delay-s", "90", "--db", db]) == 0
    out, _ = capsys.readouterr()
    assert "after 90 s" in out
    edited = store.ticket_book().rules()[0]
    assert (edited.action, edited.delay_s, edited.note) == (RuleAction.RETRY_LATER, 90, "first")
    code = main(["rules", "edit", str(rule.id), "--delay-s", "-1", "--db", db])
    _, err = capsys.readouterr()
    assert code == 2 and "delay_s" in err and len(err.strip().splitlines()) == 1
    assert store.ticket_book().rules()[0].delay_s == 90            # nothing written
