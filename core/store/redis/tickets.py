"""Tickets, the knowledge base and rules on the Redis store (same behaviour as
:class:`core.store.sqlite.tickets.SqliteTicketBook`).

An answer changes the ticket, the task, the knowledge base and perhaps the rules in one Lua
script. The new checkpoint (retry from the start, skip a step) is computed here in Python and
written by the script only if the task's checkpoint is still the one it was computed from
(compare-and-set; on a change it is computed again).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Protocol

from redis.exceptions import WatchError

from ...errors import InvalidInput, Refused
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
)
from ..records import TaskRecord

if TYPE_CHECKING:
    from ...clock import Clock
    from ...config import Settings
    from .keys import Keys


class _RedisStore(Protocol):
    """What the ticket book needs of :class:`core.store.redis.store.RedisStore` (a protocol,
    so this module does not import the store that builds it)."""

    settings: Settings
    clock: Clock
    keys: Keys

    @property
    def client(self) -> Any: ...
    def _run(self, name: str, *args: Any, now: float | None = None) -> Any: ...
    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]: ...

_CAS_TRIES = 100


def _opt_float(v: str | None) -> float | None:
    return float(v) if v is not None else None


def _ticket(h: dict[str, str]) -> Ticket:
    return Ticket(
        id=int(h["id"]), task_id=int(h["task_id"]), state=TicketState(h["state"]),
        kind=h.get("kind", "failure"), opened_at=float(h["opened_at"]),
        answered_at=_opt_float(h.get("answered_at")), closed_at=_opt_float(h.get("closed_at")),
        shop=h.get("shop", ""), platform=h.get("platform", ""), domain=h.get("domain", ""),
        task_type=h.get("task_type", ""),
        step=int(h["step"]) if h.get("step") is not None else None,
        step_name=h.get("step_name", ""), error_class=h.get("error_class", ""),
        error=h.get("error", ""), signature=h.get("signature", ""),
        evidence=json.loads(h["evidence"]) if h.get("evidence") else {},
        action=h.get("action"), note=h.get("note", ""))


def _rule(h: dict[str, str]) -> Rule:
    return Rule(id=int(h["id"]), signature=h["signature"], action=RuleAction(h["action"]),
                delay_s=float(h.get("delay_s", 0.0)), note=h.get("note", ""),
                enabled=h.get("enabled") == "1", created_at=float(h["created_at"]),
                from_answer=int(h["from_answer"]) if h.get("from_answer") else None,
                hits=int(h.get("hits", 0)), description=h.get("description", ""))


def _kb(h: dict[str, str]) -> KbAnswer:
    return KbAnswer(id=int(h["id"]), signature=h["signature"], ticket_id=int(h["ticket_id"]),
                    at=float(h["at"]), platform=h["platform"], task_type=h["task_type"],
                    step_name=h["step_name"], error_class=h["error_class"],
                    error_norm=h["error_norm"], action=h["action"], note=h.get("note", ""))


class RedisTicketBook:
    """Tickets, the knowledge base and rules, kept in the fleet's Redis."""

    def __init__(self, store: _RedisStore) -> None:
        self.store = store
        self.keys = store.keys
        self._r = store.client
        self._reentry = store.settings.rescue.reentry_bonus

    def _hashes(self, key_of: Any, ids: list[str]) -> list[dict[str, str]]:
        if not ids:
            return []
        pipe = self._r.pipeline(transaction=False)
        for i in ids:
            pipe.hgetall(key_of(i))
        return [h for h in pipe.execute() if h]

    # -- answering ----------------------------------------------------------------------------

    def answer(self, ticket_id: int, action: Answer | str, *, note: str = "",
               make_rule: RuleAction | str | None = None, rule_delay_s: float = 600.0
               ) -> Ticket:
        """Answer an open ticket; the task goes on as the answer says. Returns the ticket."""
        act, rule_act = parse_answer(action, make_rule)
        for _ in range(_CAS_TRIES):
            tk = self._r.hgetall(self.keys.ticket(ticket_id))
            if not tk:
                raise InvalidInput("ticket", f"no ticket with id {ticket_id}")
            if tk["state"] != TicketState.OPEN:
                raise Refused(f"ticket {ticket_id} is {tk['state']}, not open")
            old = self._r.hget(self.keys.task(tk["task_id"]), "checkpoint")
            step = int(tk["step"]) if tk.get("step") is not None else None
            cp = answer_checkpoint(act, step, json.loads(old) if old else {})
            why = f"ticket #{ticket_id} answered {act.value}" + (f": {note}" if note else "")
            norm = normalise_error(tk.get("error", ""))
            rule_args: list[Any] = ["", "", "", ""]
            if rule_act is not None:
                sig = Signature(tk["platform"], tk["task_type"], tk.get("step_name", ""),
                                tk["error_class"], norm)
                rule_args = [rule_act.value, repr(float(rule_delay_s)), sig.key,
                             describe_rule(rule_act, float(rule_delay_s), sig)]
            got = self.store._run("answer", ticket_id, act.value, note, old or "",
                                  json.dumps(cp), why, repr(float(self._reentry)), norm,
                                  *rule_args)
            if got != "retry":
                return self.ticket(ticket_id)
        raise Refused(f"ticket {ticket_id}: its task keeps changing; try again")

    # -- rules ---------------------------------------------------------------------------------

    def matching_rule(self, signature: Signature) -> Rule | None:
        ids = self._r.zrevrange(self.keys.rules_sig(signature.key), 0, -1)
        for h in self._hashes(self.keys.rule, ids):
            if h.get("enabled") == "1":
                return _rule(h)
        return None

    def rules(self) -> list[Rule]:
        return [_rule(h) for h in self._hashes(self.keys.rule,
                                                self._r.zrange(self.keys.rules, 0, -1))]

    def _get_rule(self, rule_id: int) -> dict[str, str]:
        h: dict[str, str] = self._r.hgetall(self.keys.rule(rule_id))
        if not h:
            raise InvalidInput("rule", f"no rule with id {rule_id}")
        return h

    def set_rule_enabled(self, rule_id: int, enabled: bool) -> Rule:
        self._get_rule(rule_id)
        self._r.hset(self.keys.rule(rule_id), "enabled", "1" if enabled else "0")
        return _rule(self._get_rule(rule_id))

    def delete_rule(self, rule_id: int) -> None:
        h = self._get_rule(rule_id)
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self.keys.rule(rule_id))
        pipe.zrem(self.keys.rules, str(rule_id))
        pipe.zrem(self.keys.rules_sig(h["signature"]), str(rule_id))
        pipe.execute()

    def edit_rule(self, rule_id: int, *, action: RuleAction | str, delay_s: float,
                  note: str) -> Rule:
        """Change what a rule does (action, delay) and its note; its scope stays. Its words
        are rewritten to match (:func:`core.tickets.redescribe_rule`)."""
        act, delay, note = check_rule_change(action, delay_s, note)
        key = self.keys.rule(rule_id)
        with self._r.pipeline(transaction=True) as pipe:
            for _ in range(_CAS_TRIES):
                try:
                    pipe.watch(key)
                    h = pipe.hgetall(key)
                    if not h:
                        raise InvalidInput("rule", f"no rule with id {rule_id}")
                    words = redescribe_rule(_rule(h), act, delay)
                    pipe.multi()
                    pipe.hset(key, mapping={"action": act.value, "delay_s": repr(delay),
                                            "note": note, "description": words})
                    pipe.execute()
                    break
                except WatchError:
                    continue
            else:
                raise Refused(f"rule {rule_id} keeps changing; try again")
        return _rule(self._get_rule(rule_id))

    def add_rule(self, signature: Signature, action: RuleAction | str, *,
                 delay_s: float = 600.0, note: str = "") -> Rule:
        act = RuleAction(action)
        now = self.store.clock.now()
        rid = int(self._r.hincrby(self.keys.seq, "rule", 1))
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self.keys.rule(rid), mapping={
            "id": str(rid), "signature": signature.key, "action": act.value,
            "delay_s": repr(float(delay_s)), "note": note, "enabled": "1",
            "created_at": repr(now), "hits": "0",
            "description": describe_rule(act, float(delay_s), signature)})
        pipe.zadd(self.keys.rules, {str(rid): rid})
        pipe.zadd(self.keys.rules_sig(signature.key), {str(rid): rid})
        pipe.execute()
        return _rule(self._get_rule(rid))

    # -- reading ------------------------------------------------------------------------------

    def ticket(self, ticket_id: int) -> Ticket:
        h = self._r.hgetall(self.keys.ticket(ticket_id))
        if not h:
            raise InvalidInput("ticket", f"no ticket with id {ticket_id}")
        return _ticket(h)

    def tickets(self, *, state: str | None = "open", shop: str | None = None,
                platform: str | None = None, task_type: str | None = None,
                older_than_s: float | None = None, limit: int = 100,
                newest_first: bool = False) -> list[Ticket]:
        """Tickets, oldest first (``newest_first``: newest first), filtered by state, shop,
        platform, type and age."""
        zk = self.keys.tickets_in(state) if state is not None else self.keys.tickets
        cutoff = (self.store.clock.now() - older_than_s) if older_than_s is not None else None
        out: list[Ticket] = []
        pos, chunk = 0, max(256, limit)
        while len(out) < limit:
            ids = self._r.zrange(zk, pos, pos + chunk - 1, desc=newest_first)
            if not ids:
                break
            for h in self._hashes(self.keys.ticket, ids):
                t = _ticket(h)
                if ((state is not None and t.state != state)
                        or (shop is not None and t.shop != shop)
                        or (platform is not None and t.platform != platform)
                        or (task_type is not None and t.task_type != task_type)
                        or (cutoff is not None and t.opened_at > cutoff)):
                    continue
                out.append(t)
                if len(out) >= limit:
                    break
            pos += chunk
        return out

    def open_count(self) -> int:
        return int(self._r.zcard(self.keys.tickets_in("open")))

    def earlier_answers(self, signature_key: str, *, limit: int = 10) -> list[KbAnswer]:
        ids = self._r.zrevrange(self.keys.kb_sig(signature_key), 0, limit - 1)
        return [_kb(h) for h in self._hashes(self.keys.kb_answer, ids)]

    def knowledge_base(self, *, limit: int = 200) -> list[KbAnswer]:
        ids = self._r.zrevrange(self.keys.kb, 0, limit - 1)
        return [_kb(h) for h in self._hashes(self.keys.kb_answer, ids)]

    # -- quarantine -----------------------------------------------------------------------------

    def quarantined(self, *, limit: int = 100) -> list[TaskRecord]:
        return self.store.tasks(state="quarantined", limit=limit)

    def release(self, task_id: int) -> None:
        """Give a quarantined task another chance (crash count reset, re-entry priority)."""
        for _ in range(_CAS_TRIES):
            old = self._r.hget(self.keys.task(task_id), "checkpoint")
            cp = json.loads(old) if old else {}
            got = self.store._run("unquarantine", task_id, old or "", json.dumps(cp),
                                  repr(float(self._reentry)))
            if got != "retry":
                return
        raise Refused(f"task {task_id}: its checkpoint keeps changing; try again")
