"""Tickets, the knowledge base and rules in the SQLite store's database (the SQL side of
:mod:`core.tickets`; :mod:`core.store.redis.tickets` is its Redis twin)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ...clock import Clock
from ...config import Settings
from ...errors import InvalidInput, LeaseLost, Refused
from ...tickets import (
    Answer,
    KbAnswer,
    Rule,
    RuleAction,
    Signature,
    Ticket,
    TicketState,
    answer_checkpoint,
    check_rule_change,
    describe_rule,
    normalise_error,
    parse_answer,
    redescribe_rule,
    rule_checkpoint,
)
from ..records import TaskRecord
from . import sql


class _SqlStore(Protocol):
    """What the ticket book needs of :class:`core.store.sqlite.store.SqliteStore` (a protocol, so
    this module does not import the store that builds it)."""

    settings: Settings
    clock: Clock

    def submit_op(self, op: Callable[[sqlite3.Connection], Any]) -> Any: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[sqlite3.Row]: ...
    def _key(self, base: float, urgency: float, attempts: int, bump: float,
             created: float) -> int: ...
    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]: ...


def _ticket(r: sqlite3.Row) -> Ticket:
    return Ticket(
        id=r["id"], task_id=r["task_id"], state=TicketState(r["state"]), kind=r["kind"],
        opened_at=r["opened_at"], answered_at=r["answered_at"], closed_at=r["closed_at"],
        shop=r["shop"], platform=r["platform"], domain=r["domain"], task_type=r["task_type"],
        step=r["step"], step_name=r["step_name"], error_class=r["error_class"],
        error=r["error"], signature=r["signature"],
        evidence=json.loads(r["evidence"]) if r["evidence"] else {}, action=r["action"],
        note=r["note"])


def _rule(r: Any) -> Rule:
    """A rule from its row (an ``sqlite3.Row`` or a dict of its columns)."""
    return Rule(id=r["id"], signature=r["signature"], action=RuleAction(r["action"]),
                delay_s=r["delay_s"], note=r["note"], enabled=bool(r["enabled"]),
                created_at=r["created_at"], from_answer=r["from_answer"], hits=r["hits"],
                description=r["description"])



class SqliteTicketBook:
    """Tickets, the knowledge base and rules, kept in the store's database.

    Every change is one transaction on the store's writer thread, together with the task's
    state change, so a ticket and its task never disagree.
    """

    def __init__(self, store: _SqlStore) -> None:
        self.store = store
        self._reentry = store.settings.rescue.reentry_bonus

    def _call(self, op: Callable[[sqlite3.Connection], Any]) -> Any:
        return self.store.submit_op(op).result()

    # -- opening ------------------------------------------------------------------------------

    def open_op(self, task_id: int, owner: str, *, signature: Signature, step: int | None,
                error: str, evidence: dict[str, str] | None, kind: str = "failure",
                reason: str = "") -> Callable[[sqlite3.Connection], int]:
        """An op that moves a running task to ``waiting_human`` and opens its ticket."""
        ev = json.dumps(evidence or {}, ensure_ascii=False)

        def op(conn: sqlite3.Connection) -> int:
            now = self.store.clock.now()
            row = conn.execute(
                sql.TASK_SHOP_FOR_TICKET, (task_id, owner)).fetchone()
            if row is None:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            ttype, shop, platform, domain = row
            cur = conn.execute(
                sql.INSERT_TICKET,
                (task_id, kind, now, shop, platform, domain, ttype, step, signature.step_name,
                 signature.error_class, error[:2000], signature.key, ev))
            tid = int(cur.lastrowid or 0)
            conn.execute(
                sql.TASK_TO_PERSON,
                (reason or f"ticket #{tid}: {signature.error_class}", now,
                 signature.error_class, error[:2000], ev, task_id))
            return tid
        return op

    # -- answering ----------------------------------------------------------------------------

    def answer(self, ticket_id: int, action: Answer | str, *, note: str = "",
               make_rule: RuleAction | str | None = None, rule_delay_s: float = 600.0
               ) -> Ticket:
        """Answer an open ticket; the task goes on as the answer says. Returns the ticket."""
        act, rule_act = parse_answer(action, make_rule)

        def op(conn: sqlite3.Connection) -> None:
            now = self.store.clock.now()
            t = conn.execute(sql.TICKET, (ticket_id,)).fetchone()
            if t is None:
                raise InvalidInput("ticket", f"no ticket with id {ticket_id}")
            cols = [d[0] for d in conn.execute(sql.TICKET_COLUMNS).description]
            tk = dict(zip(cols, t, strict=True))
            if tk["state"] != TicketState.OPEN:
                raise Refused(f"ticket {ticket_id} is {tk['state']}, not open")
            task = conn.execute(sql.ANSWERED_TASK,
                                (tk["task_id"],)).fetchone()
            if task is None or task[0] != "waiting_human":
                raise Refused(f"task {tk['task_id']} is not waiting for a person "
                              f"({task[0] if task else 'gone'})")
            self._apply_answer(conn, tk, act, note, now)
            state = {Answer.DONE: TicketState.CLOSED,
                     Answer.CANCEL: TicketState.CANCELLED}.get(act, TicketState.ANSWERED)
            conn.execute(
                sql.ANSWER_TICKET,
                (state.value, act.value, note, now,
                 now if state is not TicketState.ANSWERED else None, ticket_id))
            cur = conn.execute(
                sql.INSERT_KB_ANSWER,
                (tk["signature"], ticket_id, now, tk["platform"], tk["task_type"],
                 tk["step_name"], tk["error_class"], normalise_error(tk["error"]), act.value,
                 note))
            if rule_act is not None:
                sig = Signature(tk["platform"], tk["task_type"], tk["step_name"],
                                tk["error_class"], normalise_error(tk["error"]))
                conn.execute(
                    sql.INSERT_RULE_FROM_ANSWER,
                    (sig.key, rule_act.value, rule_delay_s, note, now, cur.lastrowid,
                     describe_rule(rule_act, float(rule_delay_s), sig)))

        self._call(op)
        return self.ticket(ticket_id)

    def _apply_answer(self, conn: sqlite3.Connection, tk: dict[str, Any], act: Answer,
                      note: str, now: float) -> None:
        task_id = tk["task_id"]
        cp_row = conn.execute(sql.TASK_CHECKPOINT,
                              (task_id,)).fetchone()
        cp: dict[str, Any] = json.loads(cp_row[0]) if cp_row and cp_row[0] else {}
        why = f"ticket #{tk['id']} answered {act.value}" + (f": {note}" if note else "")
        if act is Answer.DONE:
            conn.execute(sql.FINISH_AS_DONE, (why, now, now, task_id))
            return
        if act is Answer.CANCEL:
            conn.execute(sql.FINISH_AS_CANCELLED,
                         (why, now, now, task_id))
            return
        self._requeue(conn, task_id, answer_checkpoint(act, tk["step"], cp), why, now)

    def _requeue(self, conn: sqlite3.Connection, task_id: int, cp: dict[str, Any], why: str,
                 now: float) -> None:
        st = self.store
        row = conn.execute(sql.TASK_BASE_PRIORITY,
                           (task_id,)).fetchone()
        base, urg, bump, created = row
        bump = bump + self._reentry  # re-entry priority: ahead of routine work
        conn.execute(
            sql.REQUEUE_ANSWERED,
            (why, now, bump, st._key(base, urg, 0, bump, created), json.dumps(cp), now,
             task_id))

    def rule_op(self, task_id: int, owner: str, rule: Rule, *, signature: Signature,
                error_class: str, error: str, step: int | None, step_name: str,
                evidence: dict[str, str] | None) -> Callable[[sqlite3.Connection], str]:
        """An op resolving a failure by a rule, logging which rule did it in the task's
        history; returns the task's new state."""
        def op(conn: sqlite3.Connection) -> str:
            now = self.store.clock.now()
            why = (f"rule #{rule.id} ({rule.action.value}) resolved {error_class} at "
                   f"{step_name or 'start'}")
            conn.execute(sql.COUNT_RULE_HIT, (rule.id,))
            if rule.action is RuleAction.HUMAN:
                self.open_op(task_id, owner, signature=signature, step=step, error=error,
                             evidence=evidence, reason=why)(conn)
                return "waiting_human"
            row = conn.execute(sql.HELD_TASK_CHECKPOINT,
                               (task_id, owner)).fetchone()
            if row is None:
                raise LeaseLost(f"task {task_id} is no longer held by {owner}")
            cp, delay = rule_checkpoint(rule, step, json.loads(row[0]) if row[0] else {})
            conn.execute(
                sql.REQUEUE_BY_RULE,
                (why, now + delay, json.dumps(cp), now, error_class, error[:2000], task_id))
            return "queued"
        return op

    # -- rules ---------------------------------------------------------------------------------

    def matching_rule(self, signature: Signature) -> Rule | None:
        rows = self.store._read(sql.MATCHING_RULE, (signature.key,))
        return _rule(rows[0]) if rows else None

    def rules(self) -> list[Rule]:
        return [_rule(r) for r in self.store._read(sql.ALL_RULES)]

    def set_rule_enabled(self, rule_id: int, enabled: bool) -> Rule:
        def op(conn: sqlite3.Connection) -> None:
            if conn.execute(sql.SET_RULE_ENABLED,
                            (int(enabled), rule_id)).rowcount == 0:
                raise InvalidInput("rule", f"no rule with id {rule_id}")
        self._call(op)
        return _rule(self.store._read(sql.RULE, (rule_id,))[0])

    def delete_rule(self, rule_id: int) -> None:
        def op(conn: sqlite3.Connection) -> None:
            if conn.execute(sql.DELETE_RULE, (rule_id,)).rowcount == 0:
                raise InvalidInput("rule", f"no rule with id {rule_id}")
        self._call(op)

    def edit_rule(self, rule_id: int, *, action: RuleAction | str, delay_s: float,
                  note: str) -> Rule:
        """Change what a rule does (action, delay) and its note; its scope stays. Its words
        are rewritten to match (:func:`core.tickets.redescribe_rule`)."""
        act, delay, note = check_rule_change(action, delay_s, note)

        def op(conn: sqlite3.Connection) -> None:
            cur = conn.execute(sql.RULE, (rule_id,))
            row = cur.fetchone()
            if row is None:
                raise InvalidInput("rule", f"no rule with id {rule_id}")
            old = _rule(dict(zip([d[0] for d in cur.description], row, strict=True)))
            conn.execute(sql.EDIT_RULE, (act.value, delay, note,
                                         redescribe_rule(old, act, delay), rule_id))
        self._call(op)
        return _rule(self.store._read(sql.RULE, (rule_id,))[0])

    def add_rule(self, signature: Signature, action: RuleAction | str, *,
                 delay_s: float = 600.0, note: str = "") -> Rule:
        act = RuleAction(action)
        now = self.store.clock.now()

        def op(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                sql.INSERT_RULE,
                (signature.key, act.value, delay_s, note, now,
                 describe_rule(act, float(delay_s), signature)))
            return int(cur.lastrowid or 0)
        rid = self._call(op)
        return _rule(self.store._read(sql.RULE, (rid,))[0])

    # -- reading ------------------------------------------------------------------------------

    def ticket(self, ticket_id: int) -> Ticket:
        rows = self.store._read(sql.TICKET, (ticket_id,))
        if not rows:
            raise InvalidInput("ticket", f"no ticket with id {ticket_id}")
        return _ticket(rows[0])

    def tickets(self, *, state: str | None = "open", shop: str | None = None,
                platform: str | None = None, task_type: str | None = None,
                older_than_s: float | None = None, limit: int = 100,
                newest_first: bool = False) -> list[Ticket]:
        """Tickets, oldest first (``newest_first``: newest first), filtered by state, shop,
        platform, type and age."""
        where: list[str] = []
        params: list[Any] = []
        for col, val in (("state", state), ("shop", shop), ("platform", platform),
                         ("task_type", task_type)):
            if val is not None:
                where.append(f"{col} = ?")
                params.append(val)
        if older_than_s is not None:
            where.append("opened_at <= ?")
            params.append(self.store.clock.now() - older_than_s)
        query = ("SELECT * FROM tickets" + (" WHERE " + " AND ".join(where) if where else "")
                 + (" ORDER BY id DESC" if newest_first else " ORDER BY id") + " LIMIT ?")
        return [_ticket(r) for r in self.store._read(query, (*params, limit))]

    def open_count(self) -> int:
        return int(self.store._read(sql.OPEN_TICKET_COUNT)[0][0])

    def earlier_answers(self, signature_key: str, *, limit: int = 10) -> list[KbAnswer]:
        rows = self.store._read(sql.EARLIER_ANSWERS, (signature_key, limit))
        return [KbAnswer(*tuple(r)) for r in rows]

    def knowledge_base(self, *, limit: int = 200) -> list[KbAnswer]:
        rows = self.store._read(sql.KNOWLEDGE_BASE, (limit,))
        return [KbAnswer(*tuple(r)) for r in rows]

    # -- quarantine -----------------------------------------------------------------------------

    def quarantined(self, *, limit: int = 100) -> list[Any]:
        return self.store.tasks(state="quarantined", limit=limit)

    def release(self, task_id: int) -> None:
        """Give a quarantined task another chance (crash count reset, re-entry priority)."""
        def op(conn: sqlite3.Connection) -> None:
            row = conn.execute(sql.TASK_STATE_AND_CHECKPOINT,
                               (task_id,)).fetchone()
            if row is None:
                raise InvalidInput("task", f"no task with id {task_id}")
            if row[0] != "quarantined":
                raise Refused(f"task {task_id} is {row[0]}, not quarantined")
            cp = json.loads(row[1]) if row[1] else {}
            self._requeue(conn, task_id, cp, "released from quarantine by operator",
                          self.store.clock.now())
        self._call(op)
