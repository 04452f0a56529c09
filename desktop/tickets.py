"""What the console needs from tickets, quarantine, the knowledge base and preemption.

Issues 5 and 6 build these in core. The console is written against :class:`TicketSource`, a
small protocol; :class:`BasicTicketSource` implements it with what core offers today (a task
waiting for a person stands for its ticket; cancel and retry work; answering, releasing and
preempting say that they arrive with those issues). The lead plugs the real engine commands in
by passing another implementation to the window.

Reads (``tickets``, ``ticket``, ``kb_answers``, ``kb_entries``, ``rules``) block: the console
calls them on a worker thread. Commands are coroutine functions run on the engine's loop (they
get the engine) and return a :class:`core.Changes`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from core import Changes, Engine, Refused, SqliteStore, TaskRecord, TaskSpec

from ._core import TaskFilter, task_page
from .i18n import tr

TicketAction = Literal["retry", "resume", "skip", "done", "cancel"]
ACTIONS: tuple[TicketAction, ...] = ("retry", "resume", "skip", "done", "cancel")


@dataclass(frozen=True)
class TicketView:
    """An exception ticket as the console shows it."""

    id: int
    task_id: int
    shop: str
    platform: str
    type: str
    state: str
    """open, answered, closed or cancelled."""
    opened_at: float
    step: int | None
    step_name: str
    error_class: str
    error: str
    signature: str
    evidence: dict[str, str] = field(default_factory=dict)
    """Paths: ``screenshot``, ``dom``, ``console``, ``steps`` (the step log, JSON)."""
    sla_s: float | None = None
    """How long the ticket may stay open before it is late (None: no SLA)."""


@dataclass(frozen=True)
class KbAnswer:
    """An earlier answer stored under a failure signature."""

    signature: str
    action: str
    note: str
    answered_at: float
    ticket_id: int | None = None
    by_rule: bool = False


@dataclass(frozen=True)
class RuleView:
    """A rule promoted from an answer: resolves matching failures without a ticket."""

    id: int
    signature: str
    action: str
    enabled: bool
    hits: int
    created_at: float
    note: str = ""


class TicketSource(Protocol):
    """Tickets, quarantine, knowledge base and preemption, as the console uses them."""

    def tickets(self, *, state: str = "open", shop: str = "", platform: str = "",
                type: str = "", limit: int = 500) -> list[TicketView]:
        """Tickets, oldest first (blocking)."""
        ...

    def ticket(self, ticket_id: int) -> TicketView:
        """One ticket (blocking). Raises ``InvalidInput`` for an unknown id."""
        ...

    def kb_answers(self, signature: str, *, limit: int = 20) -> list[KbAnswer]:
        """Earlier answers for a signature, newest first (blocking)."""
        ...

    def kb_entries(self, *, limit: int = 500) -> list[KbAnswer]:
        """The knowledge base, newest first (blocking)."""
        ...

    def rules(self) -> list[RuleView]:
        """Every rule (blocking)."""
        ...

    async def answer(self, engine: Engine, ticket_id: int, action: TicketAction, *,
                     note: str, make_rule: bool) -> Changes:
        """Answer a ticket (engine loop)."""
        ...

    async def release(self, engine: Engine, task_id: int) -> Changes:
        """Requeue a quarantined task (engine loop)."""
        ...

    async def preempt(self, engine: Engine, task_id: int) -> Changes:
        """Suspend a running task at its next safe step (engine loop); ``Refused`` inside a
        non-interruptible step."""
        ...

    async def retry(self, engine: Engine, task_id: int) -> Changes:
        """Run a failed or cancelled task again (engine loop)."""
        ...

    async def set_rule_enabled(self, engine: Engine, rule_id: int, enabled: bool) -> Changes:
        """Enable or disable a rule (engine loop)."""
        ...

    async def delete_rule(self, engine: Engine, rule_id: int) -> Changes:
        """Delete a rule (engine loop)."""
        ...


def signature_of(rec: TaskRecord | object) -> str:
    platform = getattr(rec, "platform", "")
    type_ = getattr(rec, "type", "")
    cp = getattr(rec, "checkpoint", None) or {}
    step = cp.get("next_step", "") if isinstance(cp, dict) else ""
    return f"{platform}/{type_}/{step}/{getattr(rec, 'error_class', '') or ''}"


class BasicTicketSource:
    """:class:`TicketSource` on today's core: a task waiting for a person is its ticket.

    Ticket ids are task ids. Cancel and retry work; answering other than cancel, releasing,
    preempting and rules are refused with a message until issues 5 and 6 land.
    """

    def __init__(self, store: SqliteStore) -> None:
        self.store = store

    def _view(self, rec: TaskRecord) -> TicketView:
        cp = rec.checkpoint or {}
        step = cp.get("next_step") if isinstance(cp, dict) else None
        return TicketView(
            id=rec.id, task_id=rec.id, shop=rec.shop, platform=rec.platform, type=rec.type,
            state="open" if rec.state.value == "waiting_human" else "closed",
            opened_at=rec.updated_at, step=step if isinstance(step, int) else None,
            step_name="", error_class=rec.error_class or "", error=rec.last_error or "",
            signature=signature_of(rec), evidence=dict(rec.evidence or {}))

    def tickets(self, *, state: str = "open", shop: str = "", platform: str = "",
                type: str = "", limit: int = 500) -> list[TicketView]:
        page = task_page(self.store, "waiting_human", sort="id", limit=limit,
                         flt=TaskFilter(shop=shop, platform=platform, type=type))
        return [self._view(self.store.task(r.id)) for r in page.rows]

    def ticket(self, ticket_id: int) -> TicketView:
        return self._view(self.store.task(ticket_id))

    def kb_answers(self, signature: str, *, limit: int = 20) -> list[KbAnswer]:
        return []

    def kb_entries(self, *, limit: int = 500) -> list[KbAnswer]:
        return []

    def rules(self) -> list[RuleView]:
        return []

    async def answer(self, engine: Engine, ticket_id: int, action: TicketAction, *,
                     note: str, make_rule: bool) -> Changes:
        if action == "cancel":
            return await engine.cancel(ticket_id)
        raise Refused(tr("answering tickets with '%1' arrives with the ticket engine "
                         "(issue 5)", action))

    async def release(self, engine: Engine, task_id: int) -> Changes:
        raise Refused(tr("releasing from quarantine arrives with issue 5"))

    async def preempt(self, engine: Engine, task_id: int) -> Changes:
        return await engine.preempt(task_id, reason="by operator (console)")

    async def retry(self, engine: Engine, task_id: int) -> Changes:
        rec = await _to_thread(self.store.task, task_id)
        if not rec.state.is_final:
            raise Refused(tr("task %1 is %2; only finished tasks can be retried",
                             task_id, rec.state.value))
        data: dict[str, object] = {"type": rec.type, "shop": rec.shop, "params": rec.params,
                                   "max_attempts": rec.max_attempts}
        if rec.flow is not None:
            data["flow"] = rec.flow
        else:
            data["steps"] = rec.steps
        ids = await engine.submit([TaskSpec.model_validate(data)])
        return Changes(tasks=True, detail={"retried_as": ids[0]})

    async def set_rule_enabled(self, engine: Engine, rule_id: int, enabled: bool) -> Changes:
        raise Refused(tr("rules arrive with issue 5"))

    async def delete_rule(self, engine: Engine, rule_id: int) -> Changes:
        raise Refused(tr("rules arrive with issue 5"))


async def _to_thread[T](fn: object, *args: object) -> T:
    import asyncio

    return await asyncio.to_thread(fn, *args)  # type: ignore[arg-type]


def ticket_ids(rows: Sequence[TicketView]) -> list[int]:
    return [t.id for t in rows]


RULE_FOR_ANSWER = {"retry": "retry_later", "resume": "retry_later", "skip": "skip",
                   "done": "human", "cancel": "human"}
"""The rule an answer becomes when the operator ticks "make this a rule"."""


class EngineTicketSource(BasicTicketSource):
    """:class:`TicketSource` on the engine's ticket book (issue 5): real tickets, knowledge
    base, rules, quarantine release and preemption by hand."""

    def __init__(self, store: SqliteStore, book: object) -> None:
        super().__init__(store)
        self.book: Any = book

    def _from(self, t: Any) -> TicketView:
        return TicketView(
            id=t.id, task_id=t.task_id, shop=t.shop, platform=t.platform, type=t.task_type,
            state=str(getattr(t.state, "value", t.state)), opened_at=t.opened_at, step=t.step,
            step_name=t.step_name, error_class=t.error_class, error=t.error,
            signature=t.signature, evidence=dict(t.evidence or {}))

    def tickets(self, *, state: str = "open", shop: str = "", platform: str = "",
                type: str = "", limit: int = 500) -> list[TicketView]:
        rows = self.book.tickets(state=state or None, shop=shop or None,
                                 platform=platform or None, task_type=type or None,
                                 limit=limit)
        return [self._from(t) for t in rows]

    def ticket(self, ticket_id: int) -> TicketView:
        return self._from(self.book.ticket(ticket_id))

    @staticmethod
    def _kb(a: Any) -> KbAnswer:
        sig = f"{a.platform} / {a.task_type} / {a.step_name or 'start'} / {a.error_class}"
        return KbAnswer(signature=sig, action=a.action, note=a.note, answered_at=a.at,
                        ticket_id=a.ticket_id)

    def kb_answers(self, signature: str, *, limit: int = 20) -> list[KbAnswer]:
        return [self._kb(a) for a in self.book.earlier_answers(signature, limit=limit)]

    def kb_entries(self, *, limit: int = 500) -> list[KbAnswer]:
        return [self._kb(a) for a in self.book.knowledge_base(limit=limit)]

    def rules(self) -> list[RuleView]:
        return [RuleView(id=r.id, signature=r.description or r.signature,
                         action=str(getattr(r.action, "value", r.action)), enabled=r.enabled,
                         hits=r.hits, created_at=r.created_at, note=r.note)
                for r in self.book.rules()]

    async def answer(self, engine: Engine, ticket_id: int, action: TicketAction, *,
                     note: str, make_rule: bool) -> Changes:
        result: Changes = await engine.answer_ticket(  # type: ignore[attr-defined]
            ticket_id, action, note=note,
            make_rule=RULE_FOR_ANSWER[action] if make_rule else None)
        return result

    async def release(self, engine: Engine, task_id: int) -> Changes:
        result: Changes = await engine.release_quarantined(task_id)  # type: ignore[attr-defined]
        return result

    async def set_rule_enabled(self, engine: Engine, rule_id: int, enabled: bool) -> Changes:
        result: Changes = await engine.set_rule_enabled(  # type: ignore[attr-defined]
            rule_id, enabled)
        return result

    async def delete_rule(self, engine: Engine, rule_id: int) -> Changes:
        result: Changes = await engine.delete_rule(rule_id)  # type: ignore[attr-defined]
        return result


def ticket_source_for(store: SqliteStore, engine: object | None) -> TicketSource:
    """The engine's ticket book when it has one, else :class:`BasicTicketSource`."""
    book = getattr(engine, "tickets", None) if engine is not None else None
    if book is not None and hasattr(book, "earlier_answers"):
        return EngineTicketSource(store, book)
    return BasicTicketSource(store)
