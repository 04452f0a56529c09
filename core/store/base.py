"""The store interface: what the engine, the command line and the console ask of a store.

Two stores implement it with one behaviour contract (``tests/contract``): :class:`SqliteStore`
(one desktop, one file) and :class:`RedisStore` (several machines sharing one Redis). Every
method here is *blocking* (a database round trip): async code calls it through
:class:`core.store.AsyncStore`, which runs it off the event loop.

Times come from the store's injected clock, never from the database server, so fake-clock
tests drive both stores alike. With several machines, their clocks must agree (NTP) to within
a small part of a lease.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from ..clock import Clock
from ..config import Settings
from ..specs import TaskSpec
from .records import (
    ClaimedTask,
    QueueStatus,
    ScheduleRecord,
    ShopHold,
    ShopRecord,
    TaskEvent,
    TaskRecord,
    TaskState,
)

if TYPE_CHECKING:
    from ..export import ResultFilter
    from ..notify.messages import CountsSnapshot
    from ..notify.outbox import Outbox
    from ..profiles import ShopProfile
    from ..tickets import KbAnswer, Rule, RuleAction, Signature, Ticket
    from .pages import Cursor, Order, ShopRow, TaskFilter, TaskPage, TaskRow

FAST_PATH_ROWS = 256
"""Best queued tasks a claim looks at before it asks each shop for its best one instead (both
stores: SQLite's ``_pick``, Redis's claim script)."""
PROMOTE_BATCH = 1000
"""Scheduled tasks whose time came that one claim round moves into the queue at most, oldest
first (both stores; the rest follow next round). Keeps a round's cost bounded when a big batch
of delayed tasks comes due at once."""


@dataclass(frozen=True)
class WorkerInfo:
    """A worker (an engine with its pool) as the console shows it."""

    owner: str
    host: str
    pid: int
    slots: int
    running: int
    started_at: float
    heartbeat_at: float
    state: str
    """``alive``, ``stopped`` (said goodbye) or ``lost`` (stopped heartbeating)."""
    detail: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {"owner": self.owner, "host": self.host, "pid": self.pid, "slots": self.slots,
                "running": self.running, "started_at": self.started_at,
                "heartbeat_at": self.heartbeat_at, "state": self.state, "detail": self.detail}


def worker_info(rec: dict[str, Any]) -> WorkerInfo:
    """A :class:`WorkerInfo` from its stored JSON (unknown keys go to ``detail``)."""
    known = {"owner", "host", "pid", "slots", "running", "started_at", "heartbeat_at", "state"}
    return WorkerInfo(
        owner=str(rec.get("owner", "")), host=str(rec.get("host", "")),
        pid=int(rec.get("pid", 0) or 0), slots=int(rec.get("slots", 0) or 0),
        running=int(rec.get("running", 0) or 0),
        started_at=float(rec.get("started_at", 0.0) or 0.0),
        heartbeat_at=float(rec.get("heartbeat_at", 0.0) or 0.0),
        state=str(rec.get("state", "alive")),
        detail={k: v for k, v in rec.items() if k not in known})


@runtime_checkable
class TicketStore(Protocol):
    """Tickets, the knowledge base of answers and the rules made from them."""

    def answer(self, ticket_id: int, action: Any, *, note: str = "",
               make_rule: Any = None, rule_delay_s: float = 600.0) -> Ticket: ...
    def matching_rule(self, signature: Signature) -> Rule | None: ...
    def rules(self) -> list[Rule]: ...
    def set_rule_enabled(self, rule_id: int, enabled: bool) -> Rule: ...
    def delete_rule(self, rule_id: int) -> None: ...
    def edit_rule(self, rule_id: int, *, action: RuleAction | str, delay_s: float,
                  note: str) -> Rule: ...
    def add_rule(self, signature: Signature, action: RuleAction | str, *,
                 delay_s: float = 600.0, note: str = "") -> Rule: ...
    def ticket(self, ticket_id: int) -> Ticket: ...
    def tickets(self, *, state: str | None = "open", shop: str | None = None,
                platform: str | None = None, task_type: str | None = None,
                older_than_s: float | None = None, limit: int = 100,
                newest_first: bool = False) -> list[Ticket]: ...
    def open_count(self) -> int: ...
    def earlier_answers(self, signature_key: str, *, limit: int = 10) -> list[KbAnswer]: ...
    def knowledge_base(self, *, limit: int = 200) -> list[KbAnswer]: ...
    def quarantined(self, *, limit: int = 100) -> list[Any]: ...
    def release(self, task_id: int) -> None: ...


class OpWriter(Protocol):
    """A store's own writer thread taking a task's life-cycle writes as ops (SQLite): async
    callers hand it the op straight away and the write joins the writer's group commit.

    Each ``*_op`` returns a callable that the writer runs with its connection.
    """

    def submit_op(self, op: Callable[[Any], Any]) -> Future[Any]: ...
    def claim_op(self, owner: str, *, exclude_domains: Iterable[str] = (),
                 lease_s: float | None = None) -> Callable[[Any], ClaimedTask | None]: ...
    def claim_many_op(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                      probe_domains: Iterable[str] = (), exclude_shops: Iterable[str] = (),
                      probe_shops: Iterable[str] = ()
                      ) -> Callable[[Any], list[ClaimedTask]]: ...
    def ack_op(self, task_id: int, owner: str, *, results: dict[str, Any] | None = None
               ) -> Callable[[Any], None]: ...
    def ack_and_claim_op(self, task_id: int, owner: str, *,
                         results: dict[str, Any] | None = None,
                         exclude_domains: Iterable[str] = (),
                         exclude_shops: Iterable[str] = (), lease_s: float | None = None
                         ) -> Callable[[Any], ClaimedTask | None]: ...
    def fail_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                retry: bool = True, retry_after_s: float | None = None,
                evidence: dict[str, str] | None = None) -> Callable[[Any], TaskState]: ...
    def checkpoint_op(self, task_id: int, owner: str, checkpoint: dict[str, Any]
                      ) -> Callable[[Any], None]: ...
    def release_op(self, task_id: int, owner: str, *, reason: str = "released",
                   checkpoint: dict[str, Any] | None = None, suspend: bool = False
                   ) -> Callable[[Any], None]: ...
    def renew_leases_op(self, owner: str, task_ids: Sequence[int]
                        ) -> Callable[[Any], list[int]]: ...
    def record_crash_op(self, task_id: int, owner: str, *, error_class: str, message: str,
                        quarantine: bool, evidence: dict[str, str] | None
                        ) -> Callable[[Any], str]: ...
    def room_freed(self) -> None:
        """Wake submitters waiting for room in the backlog (this process)."""


TicketBook = TicketStore
"""The ticket store as the facade names it (``core.TicketBook``)."""


@runtime_checkable
class Store(Protocol):
    """The queue, shops, tickets, metrics and worker registry (blocking calls)."""

    settings: Settings
    clock: Clock
    url: str
    """Where it is: ``sqlite:PATH`` or ``redis://…`` (no password)."""

    @property
    def shared_url(self) -> str | None:
        """Where other machines reach this same store, password included (never print it),
        for the gates and breakers a fleet shares; ``None`` when it is this machine's own."""
    @property
    def transient_errors(self) -> tuple[type[BaseException], ...]:
        """Errors meaning "the store cannot be reached right now" (async callers wait)."""

    def durability_warning(self) -> str | None:
        """What a crash of the store's server could lose, or ``None``."""
    def op_writer(self) -> OpWriter | None:
        """The store's writer thread for ops, or ``None`` (then async callers run each call
        in a thread and batch acks with :meth:`ack_many`)."""

    def close(self) -> None: ...

    # shops and pauses
    def add_shop(self, name: str, *, platform: str, base_url: str,
                 username: str = "") -> ShopRecord: ...
    def update_shop(self, name: str, *, username: str | None = None,
                    password_enc: bytes | None = None) -> ShopRecord: ...
    def shop_password_enc(self, name: str) -> bytes | None: ...
    def set_shop_origins(self, name: str, origins: Sequence[str]) -> ShopRecord: ...
    # --- #17 shop profiles
    def set_shop_profile(self, name: str, profile: ShopProfile, *,
                         proxy_password_enc: bytes | None) -> ShopRecord: ...
    def shop_proxy_password_enc(self, name: str) -> bytes | None: ...
    def shops(self) -> list[ShopRecord]: ...
    def shop(self, name: str) -> ShopRecord: ...
    def set_shop_paused(self, name: str, paused: bool) -> ShopRecord: ...
    def hold_shop(self, name: str, owner: str, *, lease_s: float, what: str = "") -> ShopHold:
        """Take or renew a lease on a shop: no task of it is claimed until it runs out
        (#15 takeover). Refused while another owner's hold is live."""
    def release_shop_hold(self, name: str, owner: str) -> None: ...
    def shop_hold(self, name: str) -> ShopHold | None: ...
    def set_domain_paused(self, domain: str, paused: bool, *, reason: str = "") -> None: ...
    def paused_domains(self) -> list[str]: ...

    # submitting
    def submit(self, spec: TaskSpec) -> int: ...
    def submit_many(self, specs: Sequence[TaskSpec]) -> list[int]: ...
    def wait_for_room(self, timeout: float) -> bool: ...

    # the worker's life cycle of a task
    def claim(self, owner: str, *, exclude_domains: Iterable[str] = (),
              lease_s: float | None = None) -> ClaimedTask | None: ...
    def claim_many(self, owner: str, limit: int, *, exclude_domains: Iterable[str] = (),
                   probe_domains: Iterable[str] = (), exclude_shops: Iterable[str] = (),
                   probe_shops: Iterable[str] = ()) -> list[ClaimedTask]: ...
    def ack(self, task_id: int, owner: str, *, results: dict[str, Any] | None = None) -> None:
        """Done; also closes the task's answered tickets."""
    def ack_many(self, items: Sequence[tuple[int, str, dict[str, Any] | None]]
                 ) -> list[BaseException | None]:
        """Several :meth:`ack` (one round trip where the store has them); per item ``None``
        or the error that item raised."""
    def ack_and_claim(self, task_id: int, owner: str, *,
                      results: dict[str, Any] | None = None,
                      exclude_domains: Iterable[str] = (),
                      exclude_shops: Iterable[str] = (), lease_s: float | None = None
                      ) -> ClaimedTask | None:
        """:meth:`ack`, then :meth:`claim_many` of one task for the same owner (its freed
        slot) with the same exclusions (domains of open breakers, shops by name): the same
        rows as the two calls, in one atomic step (SQLite: one transaction and one disk sync;
        Redis: one script). If the ack raises, nothing is claimed; if the claim half fails,
        the ack is kept, the error logged, and ``None`` returned. A network store (Redis)
        answers the same call repeated by the same owner after a lost reply with what the
        first claimed (still held by it), never with :class:`LeaseLost` or a second claim."""
    def fail(self, task_id: int, owner: str, *, error_class: str, message: str,
             retry: bool = True, retry_after_s: float | None = None,
             evidence: dict[str, str] | None = None) -> TaskState: ...
    def release(self, task_id: int, owner: str, *, reason: str = "released",
                checkpoint: dict[str, Any] | None = None, suspend: bool = False,
                delay_s: float = 0.0) -> None:
        """Give the task back without spending the attempt; ``delay_s`` > 0 keeps it from
        being claimed again for that long (a held gate, an open breaker, a network outage)."""
    def save_checkpoint(self, task_id: int, owner: str, checkpoint: dict[str, Any]) -> None: ...
    def renew_lease(self, task_id: int, owner: str, *, lease_s: float | None = None
                    ) -> float: ...
    def renew_leases(self, owner: str, task_ids: Sequence[int]) -> list[int]:
        """Renew these leases; returns the ids no longer held by ``owner``."""
    def recover_expired(self) -> list[int]: ...
    def record_crash(self, task_id: int, owner: str, *, error_class: str, message: str,
                     quarantine: bool, evidence: dict[str, str] | None) -> str:
        """Count a browser crash; quarantine (poison pill) or requeue. Returns the state."""
    def crashes(self, task_id: int) -> int: ...
    def open_ticket(self, task_id: int, owner: str, *, signature: Signature,
                    step: int | None, error: str, evidence: dict[str, str] | None,
                    kind: str = "failure", reason: str = "") -> int:
        """Move a running task to ``waiting_human`` and open its ticket (one transaction)."""
    def apply_rule(self, task_id: int, owner: str, rule: Rule, *, signature: Signature,
                   error_class: str, error: str, step: int | None, step_name: str,
                   evidence: dict[str, str] | None) -> str:
        """Resolve a failure by a rule (counts a hit, logs which rule). Returns the state."""

    # operator commands
    def bump(self, task_id: int, *, to: float | None = None, by: float | None = None
             ) -> float: ...
    def cancel(self, task_id: int, *, reason: str = "cancelled by operator") -> TaskState: ...
    def request_preempt(self, task_id: int, reason: str) -> None: ...
    def preempt_requests(self, task_ids: Sequence[int]) -> dict[int, str]: ...
    def urgent_waiting(self, threshold: float, *, limit: int = 8
                       ) -> list[tuple[int, int, float]]: ...
    def log_event(self, task_id: int, reason: str) -> None: ...
    def apply_thresholds(self) -> tuple[int, int]: ...

    # reading
    def task(self, task_id: int) -> TaskRecord: ...
    def tasks(self, *, state: str | None = None, shop: str | None = None, limit: int = 50,
              offset: int = 0) -> list[TaskRecord]: ...
    def events(self, task_id: int) -> list[TaskEvent]: ...
    def counts(self) -> dict[str, int]: ...
    def next_due(self) -> float | None:
        """The earliest ``not_before`` among waiting (queued or suspended) tasks, None when
        none waits: when held-back work becomes claimable (``worker --until-idle``)."""
    def status(self) -> QueueStatus: ...
    def queue_bands(self, *, urgent_at: float, low_below: float) -> dict[str, int]: ...

    # the console's pages (row types and order in core.store.pages; core.queries checks the
    # arguments)
    def task_page(self, states: tuple[str, ...], *, sort: str, descending: bool, order: Order,
                  flt: TaskFilter, after: Cursor | None, limit: int) -> TaskPage:
        """One page of tasks in these states, in ``order``, after the cursor ``after``."""
    def count_filtered(self, states: tuple[str, ...], flt: TaskFilter, cap: int
                       ) -> tuple[int, bool]:
        """Tasks in these states matching ``flt`` counted up to ``cap + 1``: (n, exact)."""
    def task_rows(self, ids: Sequence[int]) -> dict[int, TaskRow]:
        """Fresh row snapshots of these tasks (missing ids left out)."""
    def shop_rows(self) -> list[ShopRow]:
        """Every shop with its queued, running and waiting-for-a-person counts."""

    # metrics, settings kept in the store, workers
    def record_minute(self, minute: int, data: dict[str, Any], *, keep_days: float = 14.0,
                      snapshot: dict[str, Any] | None = None) -> None: ...
    def metrics_history(self, *, since_minute: int = 0, limit: int = 1440
                        ) -> list[tuple[int, dict[str, Any]]]: ...
    def set_meta(self, name: str, value: str) -> None: ...
    def meta(self, name: str) -> str | None: ...
    def heartbeat(self, owner: str, info: dict[str, Any]) -> None:
        """A worker says it is alive (``info``: host, pid, slots, running, started_at)."""
    def worker_gone(self, owner: str) -> None:
        """A worker stopped cleanly."""
    def workers(self) -> list[WorkerInfo]: ...
    def recover_lost_workers(self, lost_after_s: float, *, alive: str | None = None
                             ) -> list[int]:
        """Mark workers silent for ``lost_after_s`` lost and requeue their tasks now;
        ``alive`` (the worker asking) is never among them."""

    def ticket_book(self) -> TicketStore: ...

    # --- #18 shop tags and schedules (core.store.sqlite.groups, core.store.redis.groups)
    def retag_shop(self, name: str, *, add: Iterable[str] = (), remove: Iterable[str] = ()
                   ) -> ShopRecord:
        """Add and remove a shop's tags in one transaction."""
    def add_schedule(self, name: str, definition: dict[str, Any], *, mark: float
                     ) -> ScheduleRecord: ...
    def schedules(self) -> list[ScheduleRecord]: ...
    def schedule_record(self, name: str) -> ScheduleRecord: ...
    def set_schedule_state(self, name: str, *, paused: bool, last_error: str | None = None,
                           mark: float | None = None) -> ScheduleRecord: ...
    def delete_schedule(self, name: str) -> None: ...
    def fire_schedule(self, name: str, *, expected_mark: float, mark: float,
                      specs: Sequence[TaskSpec]) -> list[int] | None:
        """Submit a firing's tasks and move the mark from ``expected_mark`` in one
        transaction; ``None`` (nothing written) when the mark had moved already."""
    # --- #19 results and search
    def iter_results(self, flt: ResultFilter, *, limit: int | None = None
                     ) -> Iterator[dict[str, Any]]:
        """Export rows (one per collected record) passing ``flt``, streamed (blocking: call it
        off any event loop; the iterator holds a read cursor until exhausted or closed)."""
    def outbox(self) -> Outbox:
        """The store's durable notification outbox (:mod:`core.notify.outbox`)."""
    def counts_snapshot(self, day_start: float, day_end: float) -> CountsSnapshot:
        """The daily digest's counts for tasks finished and tickets opened in [start, end)."""
    def search(self, place: str, text: str, *, limit: int = 100,
               shops: Sequence[str] | None = None) -> list[dict[str, Any]]:
        """Rows of ``results``, ``tickets`` or ``kb`` holding every word of ``text`` (only
        those of ``shops`` when given; ``kb`` answers belong to no shop: SpecError).

        Raises:
            Refused: the store has no text search (Redis), said plainly.
        """
