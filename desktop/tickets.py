"""The console's reads of tickets, the knowledge base and rules: core's :class:`core.Ticket`,
:class:`core.KbAnswer` and :class:`core.Rule` as the store's ticket book has them.

Every read blocks (the console calls them on a worker thread). The commands on tickets are
engine commands, one call each (:mod:`desktop.operations`).
"""

from __future__ import annotations

from core import Answer, KbAnswer, Rule, StepRow, Store, Ticket, task_detail

ACTIONS: tuple[str, ...] = tuple(a.value for a in Answer)
"""The operator's answers, in the order the ticket dialog offers them."""


class TicketReads:
    """Blocking reads of ``store``'s ticket book; an empty filter means "any"."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.book = store.ticket_book()

    def tickets(self, *, state: str = "open", shop: str = "", platform: str = "",
                type: str = "", limit: int = 500) -> list[Ticket]:
        """Tickets, oldest first."""
        return self.book.tickets(state=state or None, shop=shop or None,
                                 platform=platform or None, task_type=type or None, limit=limit)

    def ticket(self, ticket_id: int) -> Ticket:
        """One ticket; ``InvalidInput`` for an unknown id."""
        return self.book.ticket(ticket_id)

    def kb_answers(self, signature: str, *, limit: int = 20) -> list[KbAnswer]:
        """Earlier answers to the failure ``signature`` (a ticket's), newest first."""
        return self.book.earlier_answers(signature, limit=limit)

    def kb_entries(self, *, limit: int = 500) -> list[KbAnswer]:
        """The knowledge base, newest first."""
        return self.book.knowledge_base(limit=limit)

    def rules(self) -> list[Rule]:
        return self.book.rules()

    def task_steps(self, task_id: int) -> list[StepRow]:
        """The steps of a ticket's task's flow (its write steps with their verify)."""
        return task_detail(self.store, task_id).steps


def rule_signature(rule: Rule) -> str:
    """A rule's failure as the console lists it."""
    return rule.description or rule.signature
