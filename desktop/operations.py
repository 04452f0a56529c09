"""The operator's operations: each is one call into core on the engine's loop, returning the
:class:`core.Changes` that tell the views what to redraw (Anki's ``aqt.operations`` habit).

The window binds them to its actions and runs them through :class:`desktop.actions.ActionRunner`;
it decides nothing itself (which task may be retried, what an answer's rule is: core does).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal

from core import Answer, Changes, Engine, TaskSpec

Operation = Callable[[Engine, Any], Awaitable[Changes]]
"""An operation on one selected item (a task id, a shop name, a domain…)."""


async def bump(engine: Engine, task_id: int, *, to: float | None = None,
               by: float | None = None) -> Changes:
    return await engine.bump(task_id, to=to, by=by)


async def cancel(engine: Engine, task_id: int) -> Changes:
    return await engine.cancel(task_id)


async def retry(engine: Engine, task_id: int) -> Changes:
    """Run a finished task again (core refuses one that has not finished)."""
    return await engine.retry(task_id)


async def preempt(engine: Engine, task_id: int) -> Changes:
    """Suspend a running task at its next safe step (refused inside a non-interruptible one)."""
    return await engine.preempt(task_id, reason="by operator (console)")


async def release(engine: Engine, task_id: int) -> Changes:
    """Requeue a quarantined task."""
    return await engine.release_quarantined(task_id)


async def pause_shop(engine: Engine, name: str, paused: bool) -> Changes:
    return await engine.pause_shop(name, paused)


async def pause_domain(engine: Engine, domain: str, paused: bool) -> Changes:
    return await engine.pause_domain(domain, paused)


async def set_breaker(engine: Engine, name: str, state: Literal["open", "closed"]) -> Changes:
    return await engine.set_breaker(name, state)


async def set_gate_rate(engine: Engine, name: str, rate_per_s: float, burst: float) -> Changes:
    return await engine.set_gate_rate(name, rate_per_s=rate_per_s, burst=burst)


async def submit(engine: Engine, specs: Sequence[TaskSpec]) -> list[int]:
    return await engine.submit(specs)


async def answer_ticket(engine: Engine, ticket_id: int, action: str, *, note: str,
                        make_rule: bool, rule_delay_s: float = 600.0,
                        confirm_resend: bool = False) -> Changes:
    """Answer a ticket; with ``make_rule`` the answer also becomes its rule (core's
    :meth:`core.Answer.as_rule`, retrying after ``rule_delay_s``). ``confirm_resend``: the
    operator confirmed sending a write of unknown outcome again (core refuses it otherwise)."""
    rule = Answer(action).as_rule() if make_rule else None
    return await engine.answer_ticket(ticket_id, action, note=note, make_rule=rule,
                                      rule_delay_s=rule_delay_s, confirm_resend=confirm_resend)


async def set_rule_enabled(engine: Engine, rule_id: int, enabled: bool) -> Changes:
    return await engine.set_rule_enabled(rule_id, enabled)


async def delete_rule(engine: Engine, rule_id: int) -> Changes:
    return await engine.delete_rule(rule_id)


async def edit_rule(engine: Engine, rule_id: int, *, action: str, delay_s: float,
                    note: str) -> Changes:
    """Change what a rule does and its note (its scope stays)."""
    return await engine.edit_rule(rule_id, action=action, delay_s=delay_s, note=note)


def merged(changes: Sequence[Changes]) -> Changes:
    """What several operations changed together."""
    return Changes(tasks=any(c.tasks for c in changes), shops=any(c.shops for c in changes),
                   gates=any(c.gates for c in changes),
                   breakers=any(c.breakers for c in changes),
                   browsers=any(c.browsers for c in changes),
                   tickets=any(c.tickets for c in changes))
